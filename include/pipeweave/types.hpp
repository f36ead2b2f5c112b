#pragma once
// Small vocabulary types shared by every op family: data types and op families,
// with their names as they appear in CLI arguments, CSV files and weights files.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pipeweave {

enum class DType : std::uint8_t { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8 };

inline constexpr std::array<DType, 7> kAllDTypes{DType::fp32,     DType::tf32,     DType::fp16, DType::bf16,
                                                 DType::fp8_e4m3, DType::fp8_e5m2, DType::int8};

constexpr std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
    case DType::int8: return "int8";
  }
  return "?";
}

// Storage size of one element. tf32 is stored as fp32.
constexpr double dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32:
    case DType::tf32: return 4;
    case DType::fp16:
    case DType::bf16: return 2;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::int8: return 1;
  }
  return 0;
}

// Accepts the canonical names and the common spellings ("fp8" means e4m3, as in cuBLASLt GEMMs).
constexpr std::optional<DType> parse_dtype(std::string_view text) {
  for (DType dtype : kAllDTypes)
    if (text == to_string(dtype)) return dtype;
  if (text == "fp8" || text == "e4m3") return DType::fp8_e4m3;
  if (text == "e5m2") return DType::fp8_e5m2;
  if (text == "float16" || text == "half") return DType::fp16;
  if (text == "bfloat16") return DType::bf16;
  if (text == "float32" || text == "float") return DType::fp32;
  return std::nullopt;
}

// One trained model per family; the demand model of each lives in ops/<family>.hpp.
enum class OpFamily : std::uint8_t { gemm, attention, rmsnorm, silu_mul, fused_moe, elementwise, collective };

inline constexpr std::size_t kOpFamilyCount = 7;
inline constexpr std::array<OpFamily, kOpFamilyCount> kAllOpFamilies{
    OpFamily::gemm,     OpFamily::attention,   OpFamily::rmsnorm,   OpFamily::silu_mul,
    OpFamily::fused_moe, OpFamily::elementwise, OpFamily::collective};

constexpr std::string_view to_string(OpFamily family) {
  switch (family) {
    case OpFamily::gemm: return "gemm";
    case OpFamily::attention: return "attention";
    case OpFamily::rmsnorm: return "rmsnorm";
    case OpFamily::silu_mul: return "silu_mul";
    case OpFamily::fused_moe: return "fused_moe";
    case OpFamily::elementwise: return "elementwise";
    case OpFamily::collective: return "collective";
  }
  return "?";
}

constexpr std::optional<OpFamily> parse_op_family(std::string_view text) {
  for (OpFamily family : kAllOpFamilies)
    if (text == to_string(family)) return family;
  return std::nullopt;
}

}  // namespace pipeweave
