#pragma once
// The analytical stage for any Kernel: dispatches to the op family's own model
// (ops/<family>.hpp), each of which maps the kernel's CTAs onto SMs the way its
// implementation does.

#include <variant>

#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/pipes.hpp"

namespace pipeweave {

// Throws pipeweave::Error only when the kernel cannot run on this GPU at all (a data
// type it has no tensor path for, a tile that does not fit in its shared memory).
inline Demand compute_demand(const Kernel& kernel, const GpuSpec& gpu) {
  return std::visit([&gpu](const auto& op) { return demand(op, gpu); }, kernel.op());
}

}  // namespace pipeweave
