// The dense layer for AVX2 with FMA: this file alone is compiled with -mavx2 -mfma (CMakeLists.txt),
// and only called where the CPU reports both (dense_dispatch.cpp).
#include <cstddef>

#include "pipeweave/detail/dense.hpp"

namespace pipeweave::detail {
namespace {
#define PIPEWEAVE_DENSE_LANES 8
#define PIPEWEAVE_DENSE_WIDE 1
#include "dense_kernel.inc"
}  // namespace

DenseLayerFn dense_layer_avx2_fma_unchecked() { return &dense_layer_kernel; }

}  // namespace pipeweave::detail
