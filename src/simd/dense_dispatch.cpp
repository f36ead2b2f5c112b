// Chooses the dense layer's kernel once, from what the CPU reports; packs and rounds the weights.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "pipeweave/detail/dense.hpp"

#if PIPEWEAVE_HAVE_AVX2_KERNEL
#include <cpuid.h>  // GCC's and clang's, on x86 (the only builds with the AVX2 kernel)
#endif

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

namespace {
constexpr float kHalfLargest = 65504.0f;        // fp16's largest finite value
constexpr float kHalfSmallestNormal = 0x1p-14f;  // below it fp16 is subnormal: steps of 2^-24
}  // namespace

bool fits_half_precision(const std::vector<float>& weights) {
  for (float w : weights)
    if (!(std::fabs(w) <= kHalfLargest)) return false;  // a NaN fails too
  return true;
}

void round_to_half_precision(std::vector<float>& weights) {
  for (float& w : weights) {
    if (std::fabs(w) < kHalfSmallestNormal) {
      // Whole steps of 2^-24, to nearest, ties to even, whatever rounding mode the host process set
      // (the products by powers of two are exact).
      const float steps = std::fabs(w) * 0x1p24f, below = std::floor(steps), past = steps - below;
      const float nearest = past > 0.5f || (past == 0.5f && std::fmod(below, 2.0f) == 1.0f) ? below + 1 : below;
      w = std::copysign(nearest * 0x1p-24f, w);
      continue;
    }
    // Keep 10 of the float's 23 stored mantissa bits, to nearest, ties to even (a carry moves into
    // the exponent, as it should); no value within the range rounds past 65504.
    std::uint32_t bits = std::bit_cast<std::uint32_t>(w);
    bits += 0x0fffu + ((bits >> 13) & 1u);
    w = std::bit_cast<float>(bits & ~0x1fffu);
  }
}

std::vector<std::uint16_t> half_precision_bits(const std::vector<float>& rounded) {
  std::vector<std::uint16_t> half(rounded.size());
  for (std::size_t i = 0; i < rounded.size(); ++i) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(rounded[i]);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const float magnitude = std::fabs(rounded[i]);
    if (magnitude < kHalfSmallestNormal) {  // subnormal (or zero): the count of 2^-24 steps
      half[i] = static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(magnitude * 0x1p24f));
      continue;
    }
    const std::uint32_t exponent = ((bits >> 23) & 0xffu) - 127u + 15u;
    half[i] = static_cast<std::uint16_t>(sign | (exponent << 10) | ((bits >> 13) & 0x3ffu));
  }
  return half;
}

#if PIPEWEAVE_HAVE_AVX2_KERNEL
DenseLayerFn dense_layer_avx2_fma_unchecked();           // dense_avx2.cpp
DenseHalfLayerFn dense_layer_half_avx2_fma_unchecked();  // dense_avx2.cpp

DenseLayerFn dense_layer_avx2_fma() {
  static const bool supported = [] {
    __builtin_cpu_init();  // clang needs it where the first call may come from a static constructor
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported ? dense_layer_avx2_fma_unchecked() : nullptr;
}
DenseHalfLayerFn dense_layer_half_avx2_fma() {
  static const bool supported = [] {
    // F16C from CPUID itself: clang's __builtin_cpu_supports does not know the name.
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    return dense_layer_avx2_fma() != nullptr && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return supported ? dense_layer_half_avx2_fma_unchecked() : nullptr;
}
DenseLayerFn dense_layer_avx512_unchecked();           // dense_avx512.cpp
DenseHalfLayerFn dense_layer_half_avx512_unchecked();  // dense_avx512.cpp

DenseLayerFn dense_layer_avx512() {
  // (libgcc's and compiler-rt's checks of avx512f include the system's: XGETBV says the OS saves
  // the 512-bit registers)
  static const bool supported = [] {
    __builtin_cpu_init();
    return dense_layer_half_avx2_fma() != nullptr && __builtin_cpu_supports("avx512f");
  }();
  return supported ? dense_layer_avx512_unchecked() : nullptr;
}
DenseHalfLayerFn dense_layer_half_avx512() { return dense_layer_avx512() ? dense_layer_half_avx512_unchecked() : nullptr; }
#else
DenseLayerFn dense_layer_avx2_fma() { return nullptr; }
DenseHalfLayerFn dense_layer_half_avx2_fma() { return nullptr; }
DenseLayerFn dense_layer_avx512() { return nullptr; }
DenseHalfLayerFn dense_layer_half_avx512() { return nullptr; }
#endif

namespace {
struct Choice {
  DenseLayerFn kernel;
  DenseHalfLayerFn half;  // null: `kernel` runs on the rounded float weights
  std::string_view isa;
};

const Choice& choice() {
  static const Choice chosen = [] {
    // PIPEWEAVE_SIMD caps the choice: "baseline", or "avx2" (AVX2 with FMA at most)
    const char* wanted = std::getenv("PIPEWEAVE_SIMD");
    const std::string_view cap = wanted ? wanted : "";
    if (DenseLayerFn avx512 = dense_layer_avx512(); avx512 && cap != "baseline" && cap != "avx2")
      return Choice{avx512, dense_layer_half_avx512(), "avx512"};
    if (DenseLayerFn avx2 = dense_layer_avx2_fma(); avx2 && cap != "baseline")
      return Choice{avx2, dense_layer_half_avx2_fma(), "avx2_fma"};
    return Choice{dense_layer_baseline(), nullptr, "baseline"};
  }();
  return chosen;
}
}  // namespace

DenseLayerFn dense_layer() { return choice().kernel; }
DenseHalfLayerFn dense_layer_half() { return choice().half; }
std::string_view dense_layer_isa() { return choice().isa; }

}  // namespace pipeweave::detail
