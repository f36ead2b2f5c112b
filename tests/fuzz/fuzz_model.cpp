// Model JSON (mlp_from_json). A model that reads answers for its op family: a predictor with it
// must predict a kernel of that family as a positive, finite time, or refuse with an Error.
#include <vector>

#include "fuzz_support.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeweave::Kernel kernels[] = {
      pipeweave::parse_kernel("gemm:m=4096,n=4096,k=4096,dtype=bf16,tile_m=128,tile_n=128,tile_k=64"),
      pipeweave::parse_kernel("attention:batch=4,q_len=1,kv_len=4096,heads=32,kv_heads=8,head_dim=128"),
      pipeweave::parse_kernel("rmsnorm:tokens=4096,hidden=4096"),
      pipeweave::parse_kernel("silu_mul:tokens=4096,dim=14336"),
      pipeweave::parse_kernel("fused_moe:tokens=512,experts=8,top_k=2,hidden=4096,intermediate=14336"),
      pipeweave::parse_kernel("elementwise:bytes=67108864,flops=16777216"),
      pipeweave::parse_kernel("all_reduce:bytes=16777216,ranks=8")};
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const pipeweave::Mlp mlp = pipeweave::mlp_from_json(text);
    const pipeweave::Kernel& kernel = kernels[static_cast<std::size_t>(mlp.family())];
    const pipeweave::Predictor predictor(std::vector<pipeweave::Mlp>{mlp});
    pipeweave_fuzz::require_positive_finite(predictor.predict(kernel, pipeweave::default_gpu()).latency_us, "latency_us");
  });
}
