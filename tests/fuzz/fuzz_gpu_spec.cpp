// GPU spec JSON (gpu_spec_from_json). A spec that reads must read back from its to_json, and on
// it a few kernels of different bottlenecks (a GEMM without a config among them: the configs
// chosen from for this GPU) must predict as positive, finite times (analytical bounds).
#include <string>

#include "fuzz_support.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeweave::Predictor analytical = pipeweave::Predictor::analytical();
  static const pipeweave::Kernel kernels[] = {
      pipeweave::parse_kernel("gemm:m=4096,n=4096,k=4096,dtype=bf16,tile_m=128,tile_n=128,tile_k=64"),
      pipeweave::parse_kernel("gemm:m=77,n=4096,k=4096,dtype=fp8_e4m3"),  // without a config: the candidates for this GPU
      pipeweave::parse_kernel("attention:batch=4,q_len=1,kv_len=4096,heads=32,kv_heads=8,head_dim=128"),
      pipeweave::parse_kernel("rmsnorm:tokens=4096,hidden=4096"),
      pipeweave::parse_kernel("all_reduce:bytes=16777216,ranks=8")};
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const pipeweave::GpuSpec gpu = pipeweave::gpu_spec_from_json(text);
    try {
      (void)pipeweave::gpu_spec_from_json(pipeweave::to_json(gpu));
    } catch (const pipeweave::Error& error) {
      pipeweave_fuzz::finding("to_json wrote what gpu_spec_from_json refuses:", error.what());
    }
    for (const pipeweave::Kernel& kernel : kernels) {
      try {
        pipeweave_fuzz::require_positive_finite(analytical.predict(kernel, gpu).latency_us, "latency_us");
      } catch (const pipeweave::Error&) {
        // a kernel this GPU cannot run (no tensor path for the type, too little shared memory)
      }
    }
  });
}
