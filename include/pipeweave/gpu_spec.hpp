#pragma once
// GpuSpec: everything the demand model needs to know about one GPU, and the built-in
// catalog. Throughputs are per SM per clock where the hardware is built that way (tensor,
// FP32, XU, shared memory), so that a clock scales them all at once; memory-system figures
// are whole-chip bytes per second.
//
// A spec has one meaning, the same for training, for calibrated GPUs and for GPUs known only
// from their data sheet: what kernels on this GPU can sustain. sm_clock_mhz is the clock the
// SMs hold under a dense tensor load (a board at its power limit runs below its boost clock),
// the per-clock rates are the hardware's, dram_bandwidth_gb_s is what a streaming read reaches.
// `pipeweave calibrate` measures them (data/gpus/*.calibrated.json); a catalog GPU that has
// been calibrated is that spec, and every other catalog GPU carries estimates made from its
// data sheet, its power limit and what calibration measured on the calibrated boards (each
// entry's `source` says how; docs/experiments/gpu-specs.md).

#include <algorithm>
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
  double sm_clock_mhz = 0;  // the clock held under a dense tensor load; tensor peaks are at this clock

  // The clock a short kernel run alone reaches (the boost clock light loads get), and the
  // effective clock of tensor-bound kernels run back to back for long enough that the board
  // sits at its power limit (a serving engine's prefill): such kernels take
  // max_clock_mhz / sustained_clock_mhz times as long as alone, in an iteration whose tensor
  // utilisation is at least sustained_utilization (in proportion below it; see
  // pipeweave::SustainedLoad). Measured on calibrated boards, estimated from the power limit
  // for the others. Optional in a spec file: 0 means unknown, and no slowdown.
  double max_clock_mhz = 0;
  double sustained_clock_mhz = 0;
  double sustained_utilization = 0;
  double power_limit_w = 0;  // the board's power limit (0: unknown)

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
  // Its compute/memory balance: dense bf16 tensor flops per DRAM byte, at the spec's clock.
  double tensor_flops_per_dram_byte() const {
    return tensor_flops_per_clk_per_sm.fp16_bf16 * sm_count * clock_hz() / (dram_bandwidth_gb_s * 1e9);
  }
  // Tensor-bound kernels' time under sustained dense load over their time alone (>= 1; 1 when unknown).
  double sustained_slowdown() const {
    return max_clock_mhz > 0 && sustained_clock_mhz > 0 ? std::max(1.0, max_clock_mhz / sustained_clock_mhz) : 1.0;
  }
  // Bytes one clock of the SM clock moves at the given GB/s.
  double bytes_per_clk(double gb_s) const { return gb_s * 1e9 / clock_hz(); }

  bool operator==(const GpuSpec&) const = default;
};

// The built-in catalog: calibrated specs where the project has calibrated the GPU, estimates
// from the data sheet otherwise (see each entry's `source`).
std::span<const GpuSpec> gpu_catalog();
// The data sheets' own figures for the same GPUs (peak rates at the clock the data sheet quotes
// them at, the memory's nominal bandwidth): for comparison, not for prediction.
std::span<const GpuSpec> gpu_datasheets();

// Finds a catalog GPU by canonical name or CUDA device name (case-insensitive).
// Throws pipeweave::Error listing the known names when nothing matches.
const GpuSpec& find_gpu(std::string_view name_or_alias);
// The same GPU's data-sheet figures (gpu_datasheets()), by the names find_gpu takes.
const GpuSpec& find_gpu_datasheet(std::string_view name_or_alias);

// Sets a spec's sustained-load figures (sustained_clock_mhz, sustained_utilization) from how far
// its SM clock under the dense tensor load (sm_clock_mhz) falls below its maximum
// (max_clock_mhz), by the relation measured on the H100 and H200: back-to-back GEMMs lose
// 0.78 of the microbenchmark's clock loss, from a tensor utilisation of 0.92 (between the two
// boards' measured 0.890 and 0.945; catalog.cpp).
// For a spec whose sustained load was not measured; needs max_clock_mhz.
void estimate_sustained_load(GpuSpec& gpu);

// The GPU a default run predicts for: H100-SXM.
const GpuSpec& default_gpu();

// The architecture a compute capability names, as specs and calibration write it: "ampere"
// (8.0-8.7), "ada" (8.9), "hopper" (9.x), "blackwell" (10.x-12.x); "" before 8.0 and from 13.0,
// where no spec's label is checked.
std::string_view architecture_of(int compute_capability_major, int compute_capability_minor);

}  // namespace pipeweave
