#pragma once
// The networks' one hot loop, a dense layer, compiled for more than one instruction set and
// chosen once at run time from the CPU's features (src/simd/): a library built for baseline
// x86-64, as a distribution or a wheel must be, still runs the layer at the CPU's vector width.
#include <string_view>
#include <vector>

namespace pipeweave::detail {

// The weights as the kernels read them: panels of kDensePanelRows rows (the last padded with
// zeros), each panel input by input, so that a panel streams through memory in order.
inline constexpr int kDensePanelRows = 64;
// W (`rows` x `inputs`, column-major, as Eigen keeps it) packed into panels.
std::vector<float> pack_dense_weights(const float* weights, int rows, int inputs);

// y = W x + b for `columns` inputs at once, then max(0, .) where `relu` (a NaN stays one).
// `packed` is pack_dense_weights(W); x is `inputs` x `columns` and y `rows` x `columns`, both
// column-major and contiguous; b holds `rows`. y must not overlap the others.
using DenseLayerFn = void (*)(const float* packed, const float* bias, const float* x, float* y, int rows, int inputs,
                              int columns, bool relu);

// The widest kernel this CPU runs (AVX2 with FMA where it has both, else the baseline build's),
// chosen on first use; PIPEWEAVE_SIMD=baseline in the environment keeps the baseline (any other
// value, or none, lets the CPU decide).
DenseLayerFn dense_layer();
// Which kernel dense_layer() chose: "avx2_fma" or "baseline".
std::string_view dense_layer_isa();

// Each kernel by name, for tests that hold them against each other. dense_layer_avx2_fma() is
// null where the CPU lacks AVX2 or FMA, or the build is not for x86-64.
DenseLayerFn dense_layer_baseline();
DenseLayerFn dense_layer_avx2_fma();

}  // namespace pipeweave::detail
