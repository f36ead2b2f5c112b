#pragma once
// Collectives across the GPUs of one tensor-parallel group. The link, not an SM pipe,
// sets their time: a ring moves 2(n-1)/n of an all-reduce's buffer over each GPU's link
// in 2(n-1) latency-bound steps; a one-shot all-reduce (vLLM's custom kernel for small
// messages) reads every peer's buffer in one step, moving (n-1) buffers. The cheaper of
// the two is taken, as the serving engines do by message size. A send_recv hands one buffer
// from a pipeline stage's GPU to the next stage's, once over the link.

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

enum class CollectiveKind : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };

inline constexpr CollectiveKind kCollectiveKinds[] = {CollectiveKind::all_reduce, CollectiveKind::all_gather,
                                                    CollectiveKind::reduce_scatter, CollectiveKind::all_to_all,
                                                    CollectiveKind::send_recv};

constexpr std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::send_recv: return "send_recv";
  }
  return "?";
}

struct Collective {
  static constexpr OpFamily family = OpFamily::collective;
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes = 0;  // each rank's buffer: the all-reduce input, the all-gather output; what send_recv moves
  int ranks = 0;
  DType dtype = DType::bf16;
  static constexpr long long kMostBytes = 1LL << 50;

  void validate() const {
    detail::require_positive("collective.bytes", bytes);
    if (bytes < 1) detail::fail_field("collective.bytes", bytes, "must be at least 1 (a collective moves whole bytes)");
    detail::require_at_most("collective.bytes", bytes, kMostBytes, "a pebibyte, past any GPU's memory");
    if (ranks < 2) detail::fail_field("collective.ranks", ranks, "must be >= 2");
    detail::require_at_most("collective.ranks", ranks, 65536);
    // One buffer from one rank to one other: a send_recv of more ranks would be read as two.
    if (kind == CollectiveKind::send_recv && ranks != 2)
      detail::fail_field("collective.ranks", ranks, "must be 2 for send_recv (one rank sends, one receives)");
  }
  bool operator==(const Collective&) const = default;
};

inline Demand demand(const Collective& op, const GpuSpec& gpu) {
  const double n = op.ranks;
  const double step_cycles = gpu.link_latency_us * 1e-6 * gpu.clock_hz();
  const double link_bytes_per_clk = gpu.bytes_per_clk(gpu.link_bandwidth_gb_s);
  double link_bytes = 0, steps = 0, reduce_elements = 0;
  switch (op.kind) {
    case CollectiveKind::all_reduce: {
      const double ring_bytes = 2 * (n - 1) / n * op.bytes, ring_steps = 2 * (n - 1);
      const double one_shot_bytes = (n - 1) * op.bytes;
      const bool ring = ring_bytes / link_bytes_per_clk + ring_steps * step_cycles <
                        one_shot_bytes / link_bytes_per_clk + step_cycles;
      link_bytes = ring ? ring_bytes : one_shot_bytes;
      steps = ring ? ring_steps : 1;
      reduce_elements = (ring ? (n - 1) / n : (n - 1)) * op.bytes / dtype_bytes(op.dtype);
      break;
    }
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      link_bytes = (n - 1) / n * op.bytes, steps = n - 1;
      if (op.kind == CollectiveKind::reduce_scatter) reduce_elements = link_bytes / dtype_bytes(op.dtype);
      break;
    case CollectiveKind::all_to_all: link_bytes = (n - 1) / n * op.bytes, steps = 1; break;
    case CollectiveKind::send_recv: link_bytes = op.bytes, steps = 1; break;
  }
  // NCCL drives a collective with a few channels, one CTA each; 16 is its usual count on NVLink.
  const double ctas = std::min(16.0, static_cast<double>(gpu.sm_count));
  detail::PipeWork per_cta{};
  at(per_cta, Pipe::fma) = reduce_elements / ctas;
  // Own input, own output, peers' data landing; a send reads its buffer and the receiver writes it.
  const double own_bytes = op.kind == CollectiveKind::send_recv ? 0 : 2 * op.bytes;
  at(per_cta, Pipe::dram) = (own_bytes + link_bytes + (op.kind == CollectiveKind::send_recv ? op.bytes : 0)) / ctas;
  at(per_cta, Pipe::l2) = at(per_cta, Pipe::dram);
  Demand result = detail::uniform_grid(per_cta, ctas, 1, gpu);
  at(result.gpu_cycles, Pipe::link) = link_bytes / link_bytes_per_clk + steps * step_cycles;
  at(result.sm_cycles, Pipe::link) = at(result.gpu_cycles, Pipe::link);
  return result;
}

}  // namespace pipeweave
