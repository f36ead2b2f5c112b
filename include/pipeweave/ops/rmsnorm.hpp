#pragma once
// RMSNorm as vLLM's rms_norm / fused_add_rms_norm kernels run it: one CTA per token,
// min(hidden, 1024) threads when there are fewer than 256 tokens and min(hidden, 256)
// otherwise; a block reduction of the sum of squares, one rsqrt per token, then a second
// pass that scales and writes. With the fused residual add the first pass also adds the
// residual and writes the sum back, and the second pass reads that sum again.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

struct RmsNorm {
  static constexpr OpFamily family = OpFamily::rmsnorm;
  std::int64_t tokens = 0;
  std::int64_t hidden = 0;
  DType dtype = DType::bf16;
  bool fused_residual = false;

  void validate() const {
    detail::require_dimension("rmsnorm.tokens", tokens);
    detail::require_dimension("rmsnorm.hidden", hidden);
    if (dtype == DType::tf32 || dtype == DType::int8)  // (activations are stored as floats)
      detail::fail_field("rmsnorm.dtype", to_string(dtype), "must be fp32, fp16, bf16 or fp8");
  }
  bool operator==(const RmsNorm&) const = default;
};

namespace detail {

// The row kernels of vLLM pick their block size this way (csrc/layernorm_kernels.cu, activation_kernels.cu).
inline double row_kernel_threads(std::int64_t tokens, std::int64_t row_elements) {
  const double max_block = tokens < 256 ? 1024 : 256;
  return std::min<double>(static_cast<double>(row_elements), max_block);
}

}  // namespace detail

inline Demand demand(const RmsNorm& norm, const GpuSpec& gpu) {
  const double row_bytes = static_cast<double>(norm.hidden) * dtype_bytes(norm.dtype);
  const double threads = detail::row_kernel_threads(norm.tokens, norm.hidden);
  detail::PipeWork per_cta{};
  // Lane ops per element: square-accumulate, scale by rsqrt, multiply by weight (+ residual add).
  at(per_cta, Pipe::fma) = norm.hidden * (norm.fused_residual ? 4.0 : 3.0);
  at(per_cta, Pipe::xu) = 1;  // one rsqrt per token
  // L2 traffic per token: plain reads x, reads the weight, writes y; fused reads x and the
  // residual, writes the sum, reads the sum again, reads the weight, writes y.
  at(per_cta, Pipe::l2) = row_bytes * (norm.fused_residual ? 6.0 : 3.0);
  at(per_cta, Pipe::smem) = 2 * 4 * std::ceil(threads / 32);  // one float per warp, written and read in the reduction
  // DRAM: activations once each way; the weight is read from DRAM once and then hits L2.
  const double dram_total = norm.tokens * row_bytes * (norm.fused_residual ? 4.0 : 2.0) + row_bytes;
  at(per_cta, Pipe::dram) = dram_total / static_cast<double>(norm.tokens);
  const double resident = detail::resident_ctas(gpu, threads, 4 * 32, 0, "rmsnorm CTA");
  return detail::uniform_grid(per_cta, static_cast<double>(norm.tokens), resident, gpu);
}

}  // namespace pipeweave
