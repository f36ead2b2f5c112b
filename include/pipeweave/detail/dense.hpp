#pragma once
// The networks' one hot loop, a dense layer, compiled for more than one instruction set and
// chosen once at run time from the CPU's features (src/simd/): a library built for baseline
// x86-64, as a distribution or a wheel must be, still runs the layer at the CPU's vector width.
#include <cstdint>
#include <string_view>
#include <vector>

namespace pipeweave::detail {

// The weights as the kernels read them: panels of kDensePanelRows rows (the last padded with
// zeros), each panel input by input, so that a panel streams through memory in order.
inline constexpr int kDensePanelRows = 64;
// W (`rows` x `inputs`, column-major, as Eigen keeps it) packed into panels.
std::vector<float> pack_dense_weights(const float* weights, int rows, int inputs);

// The networks answer with their weights at half precision (IEEE fp16: 11 significant bits,
// rounded to nearest, ties to even), read as fp16 bits where F16C converts them back (exactly) on
// load, else as floats: a pass streams the weights from L2, and half the bytes made a single pass
// 1.6 times as fast and a batch 1.15 times. Both read the same values, so a kernel batched still
// answers bit for bit as one alone, on either. A network with a weight beyond fp16's range keeps
// its float weights on every path.
// Whether every weight is within fp16's range (|w| <= 65504, and finite).
bool fits_half_precision(const std::vector<float>& weights);
// Rounds each weight in place to the nearest fp16 value; the weights must fit (fits_half_precision).
void round_to_half_precision(std::vector<float>& weights);
// The fp16 bits of weights round_to_half_precision has rounded (each one exactly representable).
std::vector<std::uint16_t> half_precision_bits(const std::vector<float>& rounded);

// The most inputs a layer of the kernels below may have: they list the inputs a block of columns
// reads on the stack (Mlp::kMaxWidth keeps every layer within it).
inline constexpr int kDenseMaxInputs = 1024;

// y = W x + b for `columns` inputs at once, then max(0, .) where `relu` (a NaN stays one).
// `packed` is pack_dense_weights(W) of finite weights; x is `inputs` (at most kDenseMaxInputs) x
// `columns` and y `rows` x `columns`, both column-major and contiguous; b holds `rows`. y must not
// overlap the others. Inputs that are zero are skipped: the same sums, but for the sign of one
// that comes to zero, which no later layer or the sigmoid reads (dense_kernel.inc, nonzero_inputs).
using DenseLayerFn = void (*)(const float* packed, const float* bias, const float* x, float* y, int rows, int inputs,
                              int columns, bool relu);
// The same, the weights given as half_precision_bits of the packed panels: the float kernel's sums
// term for term, so bit for bit its answer on the rounded weights.
using DenseHalfLayerFn = void (*)(const std::uint16_t* packed, const float* bias, const float* x, float* y, int rows,
                                  int inputs, int columns, bool relu);

// The widest kernel this CPU runs (AVX-512 where it has AVX-512F beside AVX2, FMA and F16C; else
// AVX2 with FMA where it has both; else the baseline build's), chosen on first use.
// PIPEWEAVE_SIMD in the environment caps it: "baseline" keeps the baseline, "avx2" goes no
// further than AVX2 (any other value, or none, lets the CPU decide).
DenseLayerFn dense_layer();
// Which kernel dense_layer() chose: "avx512", "avx2_fma" or "baseline".
std::string_view dense_layer_isa();
// The kernel of fp16 weights that goes with dense_layer(): AVX-512's or AVX2's where the CPU also
// has F16C; null with the baseline, which runs the float kernel on the rounded weights instead.
DenseHalfLayerFn dense_layer_half();

// Each kernel by name, for tests that hold them against each other. dense_layer_avx2_fma() is
// null where the CPU lacks AVX2 or FMA, or the build is not for x86-64.
DenseLayerFn dense_layer_baseline();
DenseLayerFn dense_layer_avx2_fma();
// Null where the CPU lacks AVX2, FMA or F16C, or the build is not for x86-64.
DenseHalfLayerFn dense_layer_half_avx2_fma();
// AVX-512's: null where the CPU lacks any of AVX-512F, AVX2, FMA and F16C (or the system does
// not keep the 512-bit registers), or the build is not for x86-64. Each output is the same chain
// of multiply-adds as AVX2's, so the two answer to the bit.
DenseLayerFn dense_layer_avx512();
DenseHalfLayerFn dense_layer_half_avx512();

}  // namespace pipeweave::detail
