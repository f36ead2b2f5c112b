#pragma once
// SiLU-and-mul as vLLM's act_and_mul_kernel runs it: out[t, i] = silu(x[t, i]) * x[t, dim + i]
// for an input of [tokens, 2*dim]; one CTA of min(dim, 1024) threads per token.

#include <algorithm>
#include <cstdint>

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

struct SiluMul {
  static constexpr OpFamily family = OpFamily::silu_mul;
  std::int64_t tokens = 0;
  std::int64_t dim = 0;  // output width; the input is twice as wide
  DType dtype = DType::bf16;

  void validate() const {
    detail::require_dimension("silu_mul.tokens", tokens);
    detail::require_dimension("silu_mul.dim", dim);
    if (dtype == DType::tf32 || dtype == DType::int8)  // (activations are stored as floats)
      detail::fail_field("silu_mul.dtype", to_string(dtype), "must be fp32, fp16, bf16 or fp8");
  }
  bool operator==(const SiluMul&) const = default;
};

inline Demand demand(const SiluMul& op, const GpuSpec& gpu) {
  const double dim = static_cast<double>(op.dim);
  const double element_bytes = dtype_bytes(op.dtype);
  detail::PipeWork per_cta{};
  at(per_cta, Pipe::fma) = dim * 4;  // negate-scale, add 1, multiply by x, multiply by the gate
  at(per_cta, Pipe::xu) = dim * 2;   // ex2 and rcp per element
  at(per_cta, Pipe::l2) = 3 * dim * element_bytes;
  at(per_cta, Pipe::dram) = 3 * dim * element_bytes;
  const double threads = std::min<double>(static_cast<double>(op.dim), 1024);
  const double resident = detail::resident_ctas(gpu, threads, 0, 0, "silu_mul CTA");
  return detail::uniform_grid(per_cta, static_cast<double>(op.tokens), resident, gpu);
}

}  // namespace pipeweave
