// A serving scheduler's question, asked as it would be: "how long will this batch take?"
// Llama-3-8B on one GPU; each candidate batch mixes one chunk of a prefill with decode
// requests. The scheduler grows the decode set while the predicted iteration stays within
// its latency budget, and the program reports what one such estimate costs on the CPU.
//
//   scheduler_cost [GPU name or spec.json] [budget_ms]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pipeweave/pipeweave.hpp"

namespace pw = pipeweave;

namespace {

// Llama-3-8B (config.json).
constexpr std::int64_t kHidden = 4096, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kIntermediate = 14336,
                       kVocab = 128256;
constexpr int kLayers = 32;

// One iteration: a prefill chunk of `chunk` tokens (its sequence has `prefix` tokens cached
// already) and `decodes` requests of one token over `context` tokens each. The batch's tokens
// share the GEMMs; attention sees the ragged batch. Every layer is the same, so one layer is
// asked about and counted kLayers times; then the LM head, for the last token of each sequence.
struct Iteration {
  std::vector<pw::Kernel> layer;
  pw::Kernel lm_head;
};

Iteration iteration(std::int64_t chunk, std::int64_t prefix, std::int64_t decodes, std::int64_t context) {
  const std::int64_t tokens = chunk + decodes;
  pw::Attention attention;
  attention.heads = kHeads, attention.kv_heads = kKvHeads, attention.head_dim = kHeadDim;
  if (chunk > 0) attention.q_lens.push_back(chunk), attention.kv_lens.push_back(prefix + chunk);
  for (std::int64_t i = 0; i < decodes; ++i) attention.q_lens.push_back(1), attention.kv_lens.push_back(context);
  std::vector<pw::Kernel> layer{
      pw::RmsNorm{.tokens = tokens, .hidden = kHidden, .fused_residual = true},
      pw::Gemm{.m = tokens, .n = (kHeads + 2 * kKvHeads) * kHeadDim, .k = kHidden},
      attention,
      pw::Gemm{.m = tokens, .n = kHidden, .k = kHeads * kHeadDim},
      pw::RmsNorm{.tokens = tokens, .hidden = kHidden, .fused_residual = true},
      pw::Gemm{.m = tokens, .n = 2 * kIntermediate, .k = kHidden},
      pw::SiluMul{.tokens = tokens, .dim = kIntermediate},
      pw::Gemm{.m = tokens, .n = kHidden, .k = kIntermediate},
  };
  return {std::move(layer), pw::Gemm{.m = (chunk > 0 ? 1 : 0) + decodes, .n = kVocab, .k = kHidden}};
}

double iteration_us(const pw::Predictor& predictor, const Iteration& batch, const pw::GpuSpec& gpu) {
  double layer = 0;
  for (const pw::Prediction& p : predictor.predict(batch.layer, gpu)) layer += p.latency_us;
  return kLayers * layer + predictor.predict(batch.lm_head, gpu).latency_us;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const pw::GpuSpec gpu = argc > 1 ? pw::resolve_gpu(argv[1]) : pw::default_gpu();
    const double budget_us = (argc > 2 ? std::atof(argv[2]) : 30.0) * 1000;
    if (!(budget_us > 0)) throw pw::InvalidInput("budget_ms must be a positive number of milliseconds");
    const pw::Predictor predictor;  // built once, shared by every request thread
    constexpr std::int64_t kChunk = 512, kPrefix = 1024, kContext = 2048;

    std::printf("Llama-3-8B on %s, budget %.1f ms per iteration (kernel time; launch and framework overhead not included)\n",
                gpu.name.c_str(), budget_us / 1000);
    std::printf("  prefill chunk %lld tokens (after %lld cached) + N decodes over %lld tokens of context\n",
                static_cast<long long>(kChunk), static_cast<long long>(kPrefix), static_cast<long long>(kContext));
    std::printf("  %8s %14s\n", "decodes", "predicted_ms");
    std::int64_t admitted = 0;
    for (std::int64_t decodes = 16; decodes <= 1024; decodes *= 2) {
      const double us = iteration_us(predictor, iteration(kChunk, kPrefix, decodes, kContext), gpu);
      std::printf("  %8lld %14.3f%s\n", static_cast<long long>(decodes), us / 1000, us <= budget_us ? "" : "  over budget");
      if (us > budget_us) break;
      admitted = decodes;
    }
    std::printf("  -> admit %lld decodes beside the chunk\n", static_cast<long long>(admitted));

    // What the question costs: the same estimate asked repeatedly, as a scheduler does every
    // iteration (GEMM configs are chosen once per shape and remembered).
    // The attention of a ragged batch is the costly part: its query tiles are list-scheduled.
    const Iteration batch = iteration(kChunk, kPrefix, 64, kContext);
    constexpr int kRepeats = 200;
    const auto start = std::chrono::steady_clock::now();
    double sink = 0;
    for (int r = 0; r < kRepeats; ++r) sink += iteration_us(predictor, batch, gpu);
    const double elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kRepeats;
    std::printf("one estimate (%zu distinct kernels, 64 decodes): %.1f us of CPU (checksum %.0f)\n", batch.layer.size() + 1,
                elapsed_us, sink / kRepeats);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "scheduler_cost: error: %s\n", error.what());
    return 2;
  }
}
