#pragma once
// Fused MoE as vLLM's Triton fused_moe runs the expert GEMMs: tokens are sorted by the
// expert they are routed to and each expert's rows padded to BLOCK_M; one launch computes
// gate_up ([rows, hidden] x [hidden, 2*intermediate]) and a second the down projection
// ([rows, intermediate] x [intermediate, hidden]). The SiLU between them and the top-k sum
// after are separate kernels (silu_mul, elementwise). Routing is taken as uniform: each of
// the experts a batch touches gets the same share of the tokens * top_k rows.

#include <cmath>
#include <cstdint>
#include <optional>

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

struct FusedMoeConfig {
  int block_m = 0;
  int block_n = 0;
  int block_k = 0;
  int stages = 0;
  void validate() const {
    detail::require_positive("fused_moe.block_m", block_m);
    detail::require_positive("fused_moe.block_n", block_n);
    detail::require_positive("fused_moe.block_k", block_k);
    detail::require_positive("fused_moe.stages", stages);
  }
  bool operator==(const FusedMoeConfig&) const = default;
};

struct FusedMoe {
  static constexpr OpFamily family = OpFamily::fused_moe;
  std::int64_t tokens = 0;
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;  // per expert, after any tensor-parallel split
  DType dtype = DType::bf16;
  std::optional<FusedMoeConfig> config;

  void validate() const {
    detail::require_positive("fused_moe.tokens", tokens);
    detail::require_positive("fused_moe.experts", experts);
    detail::require_at_most("fused_moe.experts", experts, 65536, "no model has more");
    detail::require_positive("fused_moe.top_k", top_k);
    if (top_k > experts) detail::fail_field("fused_moe.top_k", top_k, "must not exceed fused_moe.experts");
    detail::require_positive("fused_moe.hidden", hidden);
    detail::require_positive("fused_moe.intermediate", intermediate);
    if (config) config->validate();
  }
  bool operator==(const FusedMoe&) const = default;
};

// vLLM's get_default_config: small blocks when tokens are few per expert, else 64x64x32.
inline FusedMoeConfig default_config(const FusedMoe& moe, const GpuSpec&) {
  if (moe.tokens <= moe.experts) return FusedMoeConfig{16, 32, 64, 4};
  return FusedMoeConfig{64, 64, 32, 4};
}

namespace detail {

// One grouped GEMM of the pair: `rows_per_expert` rows for each of `active_experts`.
inline Demand moe_gemm(double active_experts, double rows_per_expert, double n, double k, const FusedMoeConfig& config,
                       DType dtype, const GpuSpec& gpu) {
  const double in_bytes = dtype_bytes(dtype), bm = config.block_m, bn = config.block_n;
  const double k_padded = round_up(k, config.block_k);
  const double ctas = active_experts * ceil_div(rows_per_expert, bm) * ceil_div(n, bn);
  PipeWork per_cta{};
  at(per_cta, Pipe::tensor) = 2 * bm * bn * k_padded;
  at(per_cta, Pipe::fma) = bm * bn;
  const double operand_bytes = (bm + bn) * k_padded * in_bytes;
  at(per_cta, Pipe::l2) = operand_bytes + bm * bn * 2;
  at(per_cta, Pipe::smem) = 2 * operand_bytes;
  // DRAM: each touched expert's weights once, the gathered activations and the outputs once.
  const double rows = active_experts * rows_per_expert;
  const double dram = active_experts * n * k * in_bytes + rows * (k * in_bytes + n * 2);
  at(per_cta, Pipe::dram) = dram / ctas;
  const double smem = config.stages * (bm + bn) * config.block_k * in_bytes;
  const double resident = resident_ctas(gpu, 128, smem, 0, "fused_moe CTA");
  return uniform_grid(per_cta, ctas, resident, gpu, tensor_rate(gpu, dtype));
}

}  // namespace detail

inline Demand demand(const FusedMoe& moe, const GpuSpec& gpu) {
  const FusedMoeConfig config = moe.config ? *moe.config : default_config(moe, gpu);
  const double experts = moe.experts, routed_rows = double(moe.tokens) * moe.top_k;
  // Expected experts touched when each of the routed rows picks uniformly: 1 - (1 - p)^tokens,
  // written so that a small p keeps its digits (1 - 2e-17 is 1 in a double: no expert touched).
  const double active = experts * -std::expm1(double(moe.tokens) * std::log1p(-double(moe.top_k) / experts));
  const double rows_per_expert = routed_rows / active;
  Demand result = detail::moe_gemm(active, rows_per_expert, 2.0 * moe.intermediate, moe.hidden, config, moe.dtype, gpu);
  result += detail::moe_gemm(active, rows_per_expert, moe.hidden, moe.intermediate, config, moe.dtype, gpu);
  result.config_defaulted = !moe.config.has_value();
  return result;
}

}  // namespace pipeweave
