// The dense layer for AVX-512 (F: sixteen floats a vector, 32 registers), and its kernel of fp16
// weights: this file alone is compiled with -mavx512f -mavx2 -mfma -mf16c (CMakeLists.txt), and
// each kernel is only called where the CPU and the system report AVX-512F (dense_dispatch.cpp).
// Each output is the same chain of multiply-adds in input order as AVX2's, lanes apart, so both
// answer to the bit (tests/test_dense.cpp holds them to it).
#include <immintrin.h>  // before the namespace: its always-inline intrinsics leave no symbol to share

#include <cstddef>
#include <cstdint>

#include "pipeweave/detail/dense.hpp"

namespace pipeweave::detail {
namespace {
#define PIPEWEAVE_DENSE_LANES 16
#define PIPEWEAVE_DENSE_WIDE 1
#define PIPEWEAVE_DENSE_PAIRS 1
// Sixteen fp16 weights from any address, converted to sixteen floats (exact: every fp16 is a float).
// (The zero-masked form of every lane: g++ 12 warns that the plain one's _mm512_undefined_ps is
// used uninitialized.)
#define PIPEWEAVE_LOAD_HALF(pointer) \
  ((Vector)_mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pointer))))
// A bit per lane of sixteen floats, set where the float is not zero (a NaN included: an unordered compare).
#define PIPEWEAVE_NONZERO_LANES(pointer) \
  static_cast<unsigned long long>(_mm512_cmp_ps_mask(_mm512_loadu_ps(pointer), _mm512_setzero_ps(), _CMP_NEQ_UQ))
#include "dense_kernel.inc"
#undef PIPEWEAVE_NONZERO_LANES
#undef PIPEWEAVE_LOAD_HALF
}  // namespace

DenseLayerFn dense_layer_avx512_unchecked() { return &dense_layer_kernel; }
DenseHalfLayerFn dense_layer_half_avx512_unchecked() { return &dense_layer_half_kernel; }

}  // namespace pipeweave::detail
