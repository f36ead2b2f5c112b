// The dense layer for AVX2 with FMA, and its kernel of fp16 weights (F16C): this file
// alone is compiled with -mavx2 -mfma -mf16c (CMakeLists.txt), and each kernel is only called
// where the CPU reports what it needs (dense_dispatch.cpp).
#include <immintrin.h>  // before the namespace: its always-inline intrinsics leave no symbol to share

#include <cstddef>
#include <cstdint>

#include "pipeweave/detail/dense.hpp"

namespace pipeweave::detail {
namespace {
#define PIPEWEAVE_DENSE_LANES 8
#define PIPEWEAVE_DENSE_WIDE 1
#define PIPEWEAVE_DENSE_PAIRS 0
// Eight fp16 weights from any address, converted to eight floats (exact: every fp16 is a float).
#define PIPEWEAVE_LOAD_HALF(pointer) \
  ((Vector)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pointer))))
// A bit per lane of eight floats, set where the float is not zero (a NaN included: an unordered compare).
#define PIPEWEAVE_NONZERO_LANES(pointer) \
  static_cast<unsigned long long>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(pointer), _mm256_setzero_ps(), _CMP_NEQ_UQ)))
#include "dense_kernel.inc"
#undef PIPEWEAVE_NONZERO_LANES
#undef PIPEWEAVE_LOAD_HALF
}  // namespace

DenseLayerFn dense_layer_avx2_fma_unchecked() { return &dense_layer_kernel; }
DenseHalfLayerFn dense_layer_half_avx2_fma_unchecked() { return &dense_layer_half_kernel; }

}  // namespace pipeweave::detail
