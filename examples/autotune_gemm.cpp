// An autotuner's question: which config of this GEMM is fastest? The library enumerates the
// configs a GEMM library would consider on the GPU, the predictor ranks them, and the
// autotuner measures only the first few (or none). A caller with its own candidates (say, the
// algorithms cuBLASLt's heuristic offers) ranks those the same way. A model file given last
// takes the bundled GEMM model's place: the autotuner's ensemble orders configs better
// (data/models/ranking/gemm_rank3.json.gz; docs/experiments/ranking.md).
//
//   autotune_gemm [m n k [dtype [GPU name or spec.json [model.json]]]]   (default 256 14336 4096 bf16 H100-SXM)
#include <cstdio>
#include <string>
#include <vector>

#include "pipeweave/pipeweave.hpp"

namespace pw = pipeweave;

int main(int argc, char** argv) {
  try {
    if ((argc != 1 && argc < 4) || argc > 7) throw pw::InvalidInput("usage: autotune_gemm [m n k [dtype [gpu [model.json]]]]");
    // Parsed through the kernel text format, so that a bad number gets the library's error.
    const std::string text = argc > 1 ? std::string("gemm:m=") + argv[1] + ",n=" + argv[2] + ",k=" + argv[3] +
                                            ",dtype=" + (argc > 4 ? argv[4] : "bf16")
                                      : "gemm:m=256,n=14336,k=4096,dtype=bf16";
    const pw::Gemm gemm = std::get<pw::Gemm>(pw::parse_kernel(text).op());
    const pw::GpuSpec gpu = argc > 5 ? pw::resolve_gpu(argv[5]) : pw::default_gpu();
    const pw::Predictor predictor = argc > 6 ? pw::Predictor().with({pw::load_mlp(argv[6])}) : pw::Predictor();

    std::vector<pw::Kernel> candidates;
    for (const pw::GemmConfig& config : pw::gemm_candidates(gemm, gpu)) {
      pw::Gemm configured = gemm;
      configured.config = config;
      candidates.push_back(configured);
    }
    const std::vector<pw::RankedCandidate> ranked = predictor.rank(candidates, gpu);
    std::printf("%s on %s: %zu candidate configs; the five predicted fastest, and the slowest:\n", text.c_str(),
                gpu.name.c_str(), ranked.size());
    auto line = [&](std::size_t r) {
      const pw::Prediction& p = ranked[r].prediction;
      std::printf("  %3zu  %9.2f us  (bound %8.2f us, %-6s)  %s\n", r + 1, p.latency_us, p.lower_bound_us,
                  std::string(pw::to_string(p.bottleneck)).c_str(),
                  pw::describe_config(candidates[ranked[r].index], gpu).c_str());
    };
    for (std::size_t r = 0; r < std::min<std::size_t>(5, ranked.size()); ++r) line(r);
    if (ranked.size() > 5) line(ranked.size() - 1);

    // predict() on the GEMM without a config uses the same choice (at m up to 16 and every multiple of
    // 16; between, nearly always: Predictor::best_gemm_config); its latency comes from the
    // network for GEMMs without a config (bundled), which corrects the bias of choosing the
    // least of many predictions: the time to expect from it.
    const pw::Prediction plain = predictor.predict(gemm, gpu);
    const pw::GemmConfig best = predictor.best_gemm_config(gemm, gpu);
    std::printf("predict() without a config: %.2f us, with tile %dx%dx%d, split-K %d, %d stages, cluster %dx%d, %s%s\n",
                plain.latency_us, best.tile_m, best.tile_n, best.tile_k, best.split_k, best.stages, best.cluster_m,
                best.cluster_n, std::string(pw::to_string(best.schedule)).c_str(), best.swap_ab ? ", swap_ab" : "");
    if (plain.source == pw::PredictionSource::analytical_bound)
      std::printf("(no trained GEMM model: ranked by the roofline bound, which favours configs real kernels run slowly)\n");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "autotune_gemm: error: %s\n", error.what());
    return 2;
  }
}
