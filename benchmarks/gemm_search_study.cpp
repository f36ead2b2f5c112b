// How far a GEMM's config search (Predictor::best_gemm_config) could be cut short, with the
// bundled models on the H100-SXM: whether the config the full search picks lies among the
// first K candidates in order of the analytical bound (so that scoring only those would give
// the same answer), what picking the best of the first K would cost in predicted latency, and
// how often the pick changes as m grows for a fixed layer (so whether a pick remembered at two
// neighbouring m could answer for the m between them: how often, with a grid of remembered m,
// that answer would be wrong, and how often the grid would still leave m to a full search).
//
//   build/benchmarks/gemm_search_study [--csv FILE]
//
// Layers: eight (n, k, data type) of Llama-3/Qwen/Mistral-like models; m from 1 to 64 every
// step, then about 6% apart to 8192 (the bound-order study), and every m from 1 to 2048 (the
// neighbours study). --csv writes one row per shape of the bound-order study.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "pipeweave/pipeweave.hpp"

namespace pw = pipeweave;

namespace {

struct Layer {
  std::int64_t n, k;
  pw::DType dtype;
};
const std::vector<Layer> kLayers = {{6144, 4096, pw::DType::bf16},      {4096, 4096, pw::DType::bf16},
                                    {28672, 4096, pw::DType::bf16},     {4096, 14336, pw::DType::bf16},
                                    {7168, 5120, pw::DType::fp8_e4m3},  {5120, 3584, pw::DType::fp8_e4m3},
                                    {1536, 2048, pw::DType::bf16},      {2560, 8192, pw::DType::bf16}};
const std::vector<std::size_t> kFirst = {4, 8, 16, 32, 64};

// The with-config GEMM network's latency (in bound cycles over efficiency) of every candidate,
// and the candidates' indices in order of bound (ties in list order), as the search orders them.
struct Scored {
  std::vector<pw::GemmConfig> candidates;
  std::vector<double> latency;
  std::vector<std::size_t> by_bound;
};
Scored score(const pw::Gemm& shape, const pw::Mlp& mlp, const pw::GpuSpec& gpu) {
  Scored scored;
  scored.candidates = pw::gemm_candidates(shape, gpu);
  const std::vector<pw::GemmConfig>& candidates = scored.candidates;
  std::vector<double> bound(candidates.size());
  pw::Gemm tuned = shape;
  for (const pw::GemmConfig& config : candidates) {
    tuned.config = config;
    const pw::Demand demand = pw::demand(tuned, gpu);
    bound[scored.latency.size()] = demand.bound_cycles();
    scored.latency.push_back(demand.bound_cycles() / mlp.efficiency(pw::features(demand, gpu)));
  }
  scored.by_bound.resize(candidates.size());
  std::iota(scored.by_bound.begin(), scored.by_bound.end(), 0);
  std::stable_sort(scored.by_bound.begin(), scored.by_bound.end(), [&](std::size_t a, std::size_t b) { return bound[a] < bound[b]; });
  return scored;
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  std::FILE* csv = nullptr;
  if (argc == 3 && std::strcmp(argv[1], "--csv") == 0) {
    csv = std::fopen(argv[2], "w");
    if (!csv) return std::fprintf(stderr, "gemm_search_study: cannot write %s\n", argv[2]), 1;
    std::fprintf(csv, "n,k,dtype,m,candidates,winner_rank_by_bound");
    for (std::size_t first : kFirst) std::fprintf(csv, ",regret_first_%zu", first);
    std::fprintf(csv, "\n");
  } else if (argc != 1) {
    return std::fprintf(stderr, "usage: gemm_search_study [--csv FILE]\n"), 2;
  }
  const pw::GpuSpec& gpu = pw::default_gpu();
  const pw::Predictor predictor;
  const pw::Mlp& mlp = *predictor.model(pw::OpFamily::gemm);

  // 1. The full search's pick, by its place in bound order.
  std::vector<double> ranks;
  std::size_t same_as_search = 0;  // shapes where the lowest latency here is best_gemm_config's pick
  std::vector<std::vector<double>> regrets(kFirst.size());
  for (const Layer& layer : kLayers) {
    for (std::int64_t m = 1; m <= 8192; m = m < 64 ? m + 1 : m + 1 + m / 16) {
      const pw::Gemm shape{.m = m, .n = layer.n, .k = layer.k, .dtype = layer.dtype};
      const Scored scored = score(shape, mlp, gpu);
      const auto lowest = std::min_element(scored.latency.begin(), scored.latency.end());
      const double best = *lowest;
      // Scored one by one here, in batches by the search: the same pick but for last-bit ties.
      same_as_search += scored.candidates[static_cast<std::size_t>(lowest - scored.latency.begin())] ==
                        predictor.best_gemm_config(shape, gpu);
      std::size_t rank = 0;
      while (scored.latency[scored.by_bound[rank]] != best) ++rank;
      ranks.push_back(static_cast<double>(rank));
      if (csv)
        std::fprintf(csv, "%lld,%lld,%s,%lld,%zu,%zu", static_cast<long long>(layer.n), static_cast<long long>(layer.k),
                     std::string(pw::to_string(layer.dtype)).c_str(), static_cast<long long>(m), scored.latency.size(), rank);
      for (std::size_t f = 0; f < kFirst.size(); ++f) {
        double first_best = scored.latency[scored.by_bound[0]];
        for (std::size_t j = 0; j < std::min(kFirst[f], scored.by_bound.size()); ++j)
          first_best = std::min(first_best, scored.latency[scored.by_bound[j]]);
        regrets[f].push_back(first_best / best - 1);
        if (csv) std::fprintf(csv, ",%.6f", first_best / best - 1);
      }
      if (csv) std::fprintf(csv, "\n");
    }
  }
  std::printf("bound order, %zu shapes (8 layers, m 1-8192; the lowest latency here is best_gemm_config's pick in %zu): the full search's pick is\n",
              ranks.size(), same_as_search);
  for (std::size_t f = 0; f < kFirst.size(); ++f) {
    const auto within = std::count_if(ranks.begin(), ranks.end(), [&](double r) { return r < static_cast<double>(kFirst[f]); });
    std::printf("  among the first %2zu: %5.1f%% of shapes; the best of those first %2zu is slower by %.1f%% (median), %.1f%% (p90)\n",
                kFirst[f], 100.0 * static_cast<double>(within) / static_cast<double>(ranks.size()), kFirst[f],
                100 * quantile(regrets[f], 0.5), 100 * quantile(regrets[f], 0.9));
  }

  // 2. How often the pick changes from one m to the next, every m from 1 to 2048; and how often
  //    the pick of two grid points either side of m (a grid of every `step` m, 1 and 2048) would
  //    answer for m where the two agree, wrongly, or leave m to a full search where they differ.
  constexpr std::int64_t kMostM = 2048;
  std::vector<std::vector<pw::GemmConfig>> picks;
  std::size_t changes = 0, steps = 0;
  for (const Layer& layer : kLayers) {
    std::vector<pw::GemmConfig>& layer_picks = picks.emplace_back();
    for (std::int64_t m = 1; m <= kMostM; ++m) {
      layer_picks.push_back(predictor.best_gemm_config(pw::Gemm{.m = m, .n = layer.n, .k = layer.k, .dtype = layer.dtype}, gpu));
      if (m > 1) changes += layer_picks[m - 1] == layer_picks[m - 2] ? 0 : 1, ++steps;
    }
  }
  std::printf("neighbours: the pick changes at %zu of %zu steps of m (one in %.0f)\n", changes, steps,
              static_cast<double>(steps) / static_cast<double>(changes));
  for (const std::int64_t step : {8, 16, 32}) {
    std::size_t wrong = 0, searched = 0, asked = 0;
    for (const std::vector<pw::GemmConfig>& layer_picks : picks) {
      auto pick = [&](std::int64_t m) { return layer_picks[static_cast<std::size_t>(m - 1)]; };
      for (std::int64_t m = 1; m <= kMostM; ++m, ++asked) {
        if (m == 1 || m % step == 0 || m == kMostM) continue;  // a grid point: searched in full
        const std::int64_t below = std::max<std::int64_t>(1, m / step * step), above = std::min(kMostM, (m / step + 1) * step);
        if (!(pick(below) == pick(above))) ++searched;
        else if (!(pick(m) == pick(below))) ++wrong;
      }
    }
    std::printf("  grid every %2lld m: %.2f%% of answers differ from the full search; %.1f%% of m searched beyond the grid points\n",
                static_cast<long long>(step), 100.0 * static_cast<double>(wrong) / static_cast<double>(asked),
                100.0 * static_cast<double>(searched) / static_cast<double>(asked));
  }
  if (csv) std::fclose(csv);
  return 0;
}
