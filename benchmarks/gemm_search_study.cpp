// How far a GEMM's config search could be cut short, with the bundled models on the H100-SXM,
// and how far the one Predictor::best_gemm_config runs strays from the full search:
//  1. whether the config the full search picks lies among the first K candidates in order of
//     the analytical bound (so that scoring only those would give the same answer), and what
//     picking the best of the first K would cost in predicted latency;
//  2. how often the pick changes as m grows for a fixed layer, and how often the pick of two
//     grid points of m either side, where they agree, would answer wrongly;
//  3. a grid of m searched in full and the m between answered by the best, scored at m, of the
//     grid points' K best configs: how often that differs from the full search, and by how much;
//  4. best_gemm_config itself (part 3's rule, a grid every Predictor::kConfigGridM m, the
//     kConfigShortlist best of both sides) against the full search at every m from 1 to 8,192,
//     on the H100-SXM, H200-SXM and H20.
//
//   build/benchmarks/gemm_search_study [--csv FILE]
//
// Layers: eight (n, k, data type) of Llama-3/Qwen/Mistral-like models; m from 1 to 64 every
// step, then about 6% apart to 8192 (part 1), every m from 1 to 2048 (parts 2 and 3), every m
// from 1 to 8192 (part 4). --csv writes one row per shape of part 1.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
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

// Parts 2 and 3: every m from 1 to kMostM of each layer; the full search's pick per layer and m.
constexpr std::int64_t kMostM = 2048;
using Picks = std::vector<std::vector<pw::GemmConfig>>;

// 1. The full search's pick, by its place in bound order.
void bound_order(const pw::Predictor& predictor, const pw::Mlp& mlp, const pw::GpuSpec& gpu, std::FILE* csv) {
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
                        predictor.full_search_gemm_config(shape, gpu);
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
}

// 2. How often the pick changes from one m to the next, every m from 1 to 2048; and how often
//    the pick of two grid points either side of m (a grid of every `step` m, 1 and 2048) would
//    answer for m where the two agree, wrongly, or leave m to a full search where they differ.
//    Returns the picks, per layer and m.
Picks neighbours(const pw::Predictor& predictor, const pw::GpuSpec& gpu) {
  std::vector<std::vector<pw::GemmConfig>> picks;
  std::size_t changes = 0, steps = 0;
  for (const Layer& layer : kLayers) {
    std::vector<pw::GemmConfig>& layer_picks = picks.emplace_back();
    for (std::int64_t m = 1; m <= kMostM; ++m) {
      layer_picks.push_back(predictor.full_search_gemm_config(pw::Gemm{.m = m, .n = layer.n, .k = layer.k, .dtype = layer.dtype}, gpu));
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
  return picks;
}

// 3. A grid of m searched in full, and every m between two grid points answered by the best,
//    scored at m, of the K best configs of the two grid points either side (or of the nearer
//    alone), as far as they are candidates at m: how often that answer differs from the full
//    search, and by how much predicted latency.
struct Grid {
  const char* name;
  std::int64_t (*next)(std::int64_t);
};

struct GridScore {
  std::size_t asked = 0, differ = 0, no_pick = 0, scored = 0;
  std::vector<double> losses;  // per m off the grid: predicted latency over the full search's, less 1
};

// Each grid point's `keep` best configs, fastest first, for one layer.
std::vector<std::vector<pw::GemmConfig>> grid_shortlists(const Layer& layer, const std::vector<bool>& on_grid, std::size_t keep,
                                                         const pw::Mlp& mlp, const pw::GpuSpec& gpu) {
  std::vector<std::vector<pw::GemmConfig>> best_at(kMostM + 1);
  for (std::int64_t m = 1; m <= kMostM; ++m) {
    if (!on_grid[static_cast<std::size_t>(m)]) continue;
    const Scored scored = score(pw::Gemm{.m = m, .n = layer.n, .k = layer.k, .dtype = layer.dtype}, mlp, gpu);
    std::vector<std::size_t> order(scored.latency.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scored.latency[a] < scored.latency[b]; });
    for (std::size_t j = 0; j < std::min(keep, order.size()); ++j) best_at[static_cast<std::size_t>(m)].push_back(scored.candidates[order[j]]);
  }
  return best_at;
}

double gemm_latency(const pw::Gemm& shape, const pw::GemmConfig& config, const pw::Mlp& mlp, const pw::GpuSpec& gpu) {
  pw::Gemm tuned = shape;
  tuned.config = config;
  const pw::Demand demand = pw::demand(tuned, gpu);
  return demand.bound_cycles() / mlp.efficiency(pw::features(demand, gpu));
}

// One m off the grid: the proposals scored at m, against the full search's pick.
void score_between(GridScore& out, const pw::Gemm& shape, const std::vector<pw::GemmConfig>& proposals, const pw::GemmConfig& full,
                   const pw::Mlp& mlp, const pw::GpuSpec& gpu) {
  const std::vector<pw::GemmConfig> candidates = pw::gemm_candidates(shape, gpu);
  double best = std::numeric_limits<double>::infinity();
  const pw::GemmConfig* answer = nullptr;
  for (const pw::GemmConfig& config : proposals) {
    if (std::find(candidates.begin(), candidates.end(), config) == candidates.end()) continue;
    ++out.scored;
    const double value = gemm_latency(shape, config, mlp, gpu);
    if (value < best) best = value, answer = &config;
  }
  ++out.asked;
  if (!answer) return void(++out.no_pick);
  if (*answer == full) return out.losses.push_back(0);
  ++out.differ;
  out.losses.push_back(best / gemm_latency(shape, full, mlp, gpu) - 1);
}

GridScore score_grid(const Picks& picks, const std::vector<bool>& on_grid, std::size_t keep, bool both_sides, const pw::Mlp& mlp,
                     const pw::GpuSpec& gpu) {
  GridScore out;
  for (std::size_t l = 0; l < kLayers.size(); ++l) {
    const std::vector<std::vector<pw::GemmConfig>> best_at = grid_shortlists(kLayers[l], on_grid, keep, mlp, gpu);
    for (std::int64_t m = 2; m < kMostM; ++m) {
      if (on_grid[static_cast<std::size_t>(m)]) continue;
      std::int64_t below = m, above = m;
      while (!on_grid[static_cast<std::size_t>(below)]) --below;
      while (!on_grid[static_cast<std::size_t>(above)]) ++above;
      const std::int64_t nearer = m - below <= above - m ? below : above;
      std::vector<pw::GemmConfig> proposals;
      for (std::int64_t point : both_sides ? std::vector<std::int64_t>{below, above} : std::vector<std::int64_t>{nearer})
        for (const pw::GemmConfig& config : best_at[static_cast<std::size_t>(point)])
          if (std::find(proposals.begin(), proposals.end(), config) == proposals.end()) proposals.push_back(config);
      score_between(out, pw::Gemm{.m = m, .n = kLayers[l].n, .k = kLayers[l].k, .dtype = kLayers[l].dtype}, proposals,
                    picks[l][static_cast<std::size_t>(m - 1)], mlp, gpu);
    }
  }
  return out;
}

void grid_rules(const Picks& picks, const pw::Mlp& mlp, const pw::GpuSpec& gpu) {
  const std::vector<Grid> grids = {
      {"every 16", [](std::int64_t m) { return m < 16 ? m + 1 : m / 16 * 16 + 16; }},
      {"every 32", [](std::int64_t m) { return m < 32 ? m + 1 : m / 32 * 32 + 32; }},
      {"all to 32, then m/8 rounded to 8", [](std::int64_t m) { return m < 32 ? m + 1 : std::max(m + 8, (m + m / 8) / 8 * 8); }},
      {"all to 32, then m/4 rounded to 8", [](std::int64_t m) { return m < 32 ? m + 1 : std::max(m + 8, (m + m / 4) / 8 * 8); }},
  };
  // Each grid point's `keep` best; both grid points either side of m, or the nearer alone.
  const std::vector<std::pair<std::size_t, bool>> rules = {{1, true}, {4, true}, {8, true}, {16, true}, {8, false}, {32, false}};
  for (const Grid& grid : grids) {
    std::vector<bool> on_grid(kMostM + 1, false);
    std::int64_t points = 0;
    for (std::int64_t m = 1; m <= kMostM; m = grid.next(m)) on_grid[static_cast<std::size_t>(m)] = true, ++points;
    on_grid[kMostM] = true;
    for (const auto& [keep, both_sides] : rules) {
      const GridScore out = score_grid(picks, on_grid, keep, both_sides, mlp, gpu);
      const double asked = static_cast<double>(out.asked);
      std::printf("grid %s (%lld points to %lld), best %2zu of %s: %5.2f%% of other m answered otherwise than the full search, %.2f%% left to it; "
                  "%.1f scored per m; latency lost p99 %.2f%%, max %.2f%%\n",
                  grid.name, static_cast<long long>(points), static_cast<long long>(kMostM), keep, both_sides ? "both" : "the nearer",
                  100.0 * static_cast<double>(out.differ) / asked, 100.0 * static_cast<double>(out.no_pick) / asked,
                  static_cast<double>(out.scored) / asked, 100 * quantile(out.losses, 0.99), 100 * quantile(out.losses, 1.0));
    }
  }
}

// 4. What best_gemm_config answers (a grid of m every Predictor::kConfigGridM searched in
//    full, the m between from the grid points' shortlists) against the full search at every m,
//    on the H100 the study's other parts use and on two other Hopper GPUs the bundled GEMM
//    model covers.
void against_full_search(const pw::Predictor& predictor, const pw::Mlp& mlp) {
  constexpr std::int64_t kCheckedM = 8192;
  for (const char* name : {"H100-SXM", "H200-SXM", "H20"}) {
    const pw::GpuSpec& gpu = pw::find_gpu(name);
    std::size_t checked = 0, differ = 0;
    std::vector<double> losses;  // where the two differ
    for (const Layer& layer : kLayers) {
      for (std::int64_t m = 1; m <= kCheckedM; ++m, ++checked) {
        const pw::Gemm shape{.m = m, .n = layer.n, .k = layer.k, .dtype = layer.dtype};
        const pw::GemmConfig answer = predictor.best_gemm_config(shape, gpu), full = predictor.full_search_gemm_config(shape, gpu);
        if (answer == full) continue;
        ++differ;
        losses.push_back(gemm_latency(shape, answer, mlp, gpu) / gemm_latency(shape, full, mlp, gpu) - 1);
      }
    }
    std::printf("best_gemm_config on the %s, every m 1-%lld of the 8 layers (%zu shapes): %zu answers (%.3f%%) differ from the full search; "
                "predicted latency lost where they differ: median %.2f%%, max %.2f%%\n",
                name, static_cast<long long>(kCheckedM), checked, differ, 100.0 * static_cast<double>(differ) / static_cast<double>(checked),
                differ ? 100 * quantile(losses, 0.5) : 0.0, differ ? 100 * quantile(losses, 1.0) : 0.0);
  }
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

  bound_order(predictor, mlp, gpu, csv);
  const Picks picks = neighbours(predictor, gpu);
  grid_rules(picks, mlp, gpu);
  against_full_search(predictor, mlp);
  if (csv) std::fclose(csv);
  return 0;
}
