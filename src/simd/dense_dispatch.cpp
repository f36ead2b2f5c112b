// Chooses the dense layer's kernel once, from what the CPU reports.
#include <cstdlib>
#include <string_view>
#include <vector>

#include "pipeweave/detail/dense.hpp"

namespace pipeweave::detail {

std::vector<float> pack_dense_weights(const float* weights, int rows, int inputs) {
  const int panels = (rows + kDensePanelRows - 1) / kDensePanelRows;
  std::vector<float> packed(static_cast<std::size_t>(panels) * kDensePanelRows * static_cast<std::size_t>(inputs), 0.0f);
  for (int p = 0; p < panels; ++p)
    for (int j = 0; j < inputs; ++j)
      for (int r = 0; r < kDensePanelRows && p * kDensePanelRows + r < rows; ++r)
        packed[(static_cast<std::size_t>(p) * static_cast<std::size_t>(inputs) + static_cast<std::size_t>(j)) * kDensePanelRows + static_cast<std::size_t>(r)] =
            weights[static_cast<std::size_t>(j) * static_cast<std::size_t>(rows) + static_cast<std::size_t>(p * kDensePanelRows + r)];
  return packed;
}

#if PIPEWEAVE_HAVE_AVX2_KERNEL
DenseLayerFn dense_layer_avx2_fma_unchecked();  // dense_avx2.cpp

DenseLayerFn dense_layer_avx2_fma() {
  static const bool supported = [] {
    __builtin_cpu_init();  // clang needs it where the first call may come from a static constructor
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported ? dense_layer_avx2_fma_unchecked() : nullptr;
}
#else
DenseLayerFn dense_layer_avx2_fma() { return nullptr; }
#endif

namespace {
struct Choice {
  DenseLayerFn kernel;
  std::string_view isa;
};

const Choice& choice() {
  static const Choice chosen = [] {
    const char* wanted = std::getenv("PIPEWEAVE_SIMD");
    const bool baseline_only = wanted && std::string_view(wanted) == "baseline";
    if (DenseLayerFn avx2 = dense_layer_avx2_fma(); avx2 && !baseline_only) return Choice{avx2, "avx2_fma"};
    return Choice{dense_layer_baseline(), "baseline"};
  }();
  return chosen;
}
}  // namespace

DenseLayerFn dense_layer() { return choice().kernel; }
std::string_view dense_layer_isa() { return choice().isa; }

}  // namespace pipeweave::detail
