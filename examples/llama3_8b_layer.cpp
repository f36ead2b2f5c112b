// The main job of the README: predict the kernels of one Llama-3-8B decoder layer for a
// prefill batch and a decode batch, on the default GPU (or the one named on the command line).
//
//   llama3_8b_layer [GPU name or spec.json]
#include <cstdio>
#include <string>
#include <vector>

#include "pipeweave/pipeweave.hpp"

namespace pw = pipeweave;

namespace {

// Llama-3-8B (config.json): hidden 4096, 32 heads of 128, 8 KV heads, MLP 14336.
constexpr std::int64_t kHidden = 4096, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kIntermediate = 14336;
constexpr int kLayers = 32;

struct NamedKernel {
  std::string name;
  pw::Kernel kernel;
};

// One decoder layer as vLLM runs it, for `tokens` new tokens whose attention is `attention`.
std::vector<NamedKernel> decoder_layer(std::int64_t tokens, pw::Attention attention) {
  const std::int64_t qkv = (kHeads + 2 * kKvHeads) * kHeadDim;
  return {
      {"input_layernorm", pw::RmsNorm{.tokens = tokens, .hidden = kHidden, .fused_residual = true}},
      {"qkv_proj", pw::Gemm{.m = tokens, .n = qkv, .k = kHidden}},
      {"attention", std::move(attention)},
      {"o_proj", pw::Gemm{.m = tokens, .n = kHidden, .k = kHeads * kHeadDim}},
      {"post_attention_layernorm", pw::RmsNorm{.tokens = tokens, .hidden = kHidden, .fused_residual = true}},
      {"gate_up_proj", pw::Gemm{.m = tokens, .n = 2 * kIntermediate, .k = kHidden}},
      {"silu_and_mul", pw::SiluMul{.tokens = tokens, .dim = kIntermediate}},
      {"down_proj", pw::Gemm{.m = tokens, .n = kHidden, .k = kIntermediate}},
  };
}

void report(const char* title, const std::vector<NamedKernel>& layer, const pw::Predictor& predictor,
            const pw::GpuSpec& gpu) {
  std::vector<pw::Kernel> kernels;
  for (const NamedKernel& named : layer) kernels.push_back(named.kernel);
  const std::vector<pw::Prediction> predictions = predictor.predict(kernels, gpu);
  std::printf("\n%s\n", title);
  std::printf("  %-26s %11s %11s %-7s %-17s %s\n", "kernel", "latency_us", "bound_us", "limit", "source", "config");
  double total = 0;
  for (std::size_t i = 0; i < layer.size(); ++i) {
    const pw::Prediction& p = predictions[i];
    total += p.latency_us;
    std::printf("  %-26s %11.2f %11.2f %-7s %-17s %s\n", layer[i].name.c_str(), p.latency_us, p.lower_bound_us,
                std::string(pw::to_string(p.bottleneck)).c_str(), std::string(pw::to_string(p.source)).c_str(),
                pw::describe_config(predictor.configured(kernels[i], gpu), gpu).c_str());
  }
  std::printf("  %-26s %11.2f   (x %d layers = %.1f us of kernel time)\n", "layer total", total, kLayers,
              total * kLayers);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const pw::GpuSpec gpu = argc > 1 ? pw::resolve_gpu(argv[1]) : pw::default_gpu();
    const pw::Predictor predictor;  // the bundled models; analytical bound where none is trained yet
    std::printf("Llama-3-8B decoder layer on %s (%d SMs, %.0f MHz, %.0f GB/s)\n", gpu.name.c_str(), gpu.sm_count,
                gpu.sm_clock_mhz, gpu.dram_bandwidth_gb_s);

    constexpr std::int64_t kPrefillSequences = 4, kPrefillLength = 2048;
    report("prefill: 4 sequences x 2048 tokens (8192 tokens)",
           decoder_layer(kPrefillSequences * kPrefillLength,
                         pw::Attention::prefill(kPrefillSequences, kPrefillLength, kHeads, kKvHeads, kHeadDim)),
           predictor, gpu);

    constexpr std::int64_t kDecodeSequences = 64, kContext = 2048;
    report("decode: 64 sequences, 1 new token each over 2048 tokens of context",
           decoder_layer(kDecodeSequences, pw::Attention::decode(kDecodeSequences, kContext, kHeads, kKvHeads, kHeadDim)),
           predictor, gpu);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "llama3_8b_layer: error: %s\n", error.what());
    return 2;
  }
}
