#pragma once
// GpuSpec: everything the demand model needs to know about one GPU, and the built-in
// catalog of spec-sheet GPUs. Throughputs are per SM per clock where the hardware is
// built that way (tensor, FP32, XU, shared memory), so that a calibrated clock scales
// them all at once; memory-system figures are whole-chip bytes per second.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipeweave {

// Dense (no sparsity) tensor-core throughput of one SM, in flops (ops for int8) per clock.
// 0 means the architecture has no tensor path for that type (fp8 before Ada).
struct TensorRates {
  double fp16_bf16 = 0;
  double fp8 = 0;
  double tf32 = 0;
  double int8 = 0;
  bool operator==(const TensorRates&) const = default;
};

struct GpuSpec {
  std::string name;                  // canonical catalog name, e.g. "H100-SXM"
  std::vector<std::string> aliases;  // CUDA device names, e.g. "NVIDIA H100 80GB HBM3"
  std::string architecture;          // "ampere", "ada", "hopper", "blackwell"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;

  int sm_count = 0;
  double sm_clock_mhz = 0;  // clock sustained under load (spec sheet: the clock its peaks assume)

  TensorRates tensor_flops_per_clk_per_sm;
  double fp32_lanes_per_clk_per_sm = 0;  // FP32 FADD/FMUL/FFMA lane operations
  double xu_ops_per_clk_per_sm = 0;      // SFU/MUFU: ex2, rsqrt, rcp, sin ...
  double smem_bytes_per_clk_per_sm = 0;

  double dram_bandwidth_gb_s = 0;  // GB/s = 1e9 bytes/s
  double l2_bandwidth_gb_s = 0;    // L2 <-> SM, whole chip
  double l2_bytes = 0;
  double smem_bytes_per_sm = 0;  // largest shared-memory carve-out one SM offers
  int registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int max_ctas_per_sm = 0;
  double memory_gb = 0;

  double link_bandwidth_gb_s = 0;  // per direction, per GPU: NVLink where present, else PCIe
  double link_latency_us = 0;      // one hop of a collective

  std::string source;  // where the figures come from (spec sheet, calibration run)

  // Throws pipeweave::Error naming the first field that is missing or out of range.
  void validate() const;

  double clock_hz() const { return sm_clock_mhz * 1e6; }
  // Bytes one clock of the SM clock moves at the given GB/s.
  double bytes_per_clk(double gb_s) const { return gb_s * 1e9 / clock_hz(); }

  bool operator==(const GpuSpec&) const = default;
};

// The built-in catalog (spec-sheet figures; see each entry's `source`).
std::span<const GpuSpec> gpu_catalog();

// Finds a catalog GPU by canonical name or CUDA device name (case-insensitive).
// Throws pipeweave::Error listing the known names when nothing matches.
const GpuSpec& find_gpu(std::string_view name_or_alias);

// The GPU a default run predicts for: H100-SXM.
const GpuSpec& default_gpu();

}  // namespace pipeweave
