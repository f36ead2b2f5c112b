#pragma once
// A generic elementwise or streaming kernel described only by what it moves and computes:
// a grid of 256-thread CTAs, each thread moving one 16-byte vector, so one CTA per 4 KiB.

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

struct Elementwise {
  static constexpr OpFamily family = OpFamily::elementwise;
  double bytes = 0;   // DRAM bytes read plus written
  double flops = 0;   // FP32 lane operations
  double xu_ops = 0;  // special-function operations (exp, rsqrt ...)

  void validate() const {
    detail::require_positive("elementwise.bytes", bytes);
    if (bytes < 1) detail::fail_field("elementwise.bytes", bytes, "must be at least 1 (a kernel moves whole bytes)");
    detail::require_non_negative("elementwise.flops", flops);
    detail::require_non_negative("elementwise.xu_ops", xu_ops);
    // Past these the time is no longer a finite number of microseconds worth answering
    detail::require_at_most("elementwise.bytes", bytes, 1LL << 50, "a pebibyte, past any GPU's memory");
    detail::require_at_most("elementwise.flops", flops, 1LL << 60);
    detail::require_at_most("elementwise.xu_ops", xu_ops, 1LL << 60);
  }
  bool operator==(const Elementwise&) const = default;
};

inline Demand demand(const Elementwise& op, const GpuSpec& gpu) {
  constexpr double kThreads = 256, kBytesPerCta = kThreads * 16;
  const double ctas = detail::ceil_div(op.bytes, kBytesPerCta);
  detail::PipeWork per_cta{};
  at(per_cta, Pipe::dram) = op.bytes / ctas;
  at(per_cta, Pipe::l2) = op.bytes / ctas;
  at(per_cta, Pipe::fma) = op.flops / ctas;
  at(per_cta, Pipe::xu) = op.xu_ops / ctas;
  const double resident = detail::resident_ctas(gpu, kThreads, 0, 0, "elementwise CTA");
  return detail::uniform_grid(per_cta, ctas, resident, gpu);
}

}  // namespace pipeweave
