// The dense layer for the instruction set the library is built for (baseline x86-64: SSE2).
#include <cstddef>

#include "pipeweave/detail/dense.hpp"

namespace pipeweave::detail {
namespace {
#define PIPEWEAVE_DENSE_LANES 4
#define PIPEWEAVE_DENSE_WIDE 0
#define PIPEWEAVE_DENSE_PAIRS 0
#include "dense_kernel.inc"
}  // namespace

DenseLayerFn dense_layer_baseline() { return &dense_layer_kernel; }

}  // namespace pipeweave::detail
