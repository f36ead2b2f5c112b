// The built-in GPU catalog: the GPUs pipeweave knows by name.
//
// Two layers. build_datasheets() holds each GPU's data-sheet figures (conventions below).
// The catalog proper gives a spec the meaning gpu_spec.hpp states, what kernels sustain: the
// calibrated spec where the project has calibrated the GPU (data/gpus/*.calibrated.json,
// compiled in), else an estimate from the data sheet (estimated(), rules beside it).
//
// Data-sheet conventions (see gpu_spec.hpp for the field meanings):
//  * sm_clock_mhz is the clock the datasheet's DENSE tensor peak is computed at, so that
//    tensor_flops_per_clk_per_sm.fp16_bf16 * sm_count * sm_clock equals the datasheet's dense
//    fp16/bf16 figure. The comment beside each entry shows that product against the datasheet.
//    (Datasheets often quote "with sparsity" figures; those are halved here.)
//  * Tensor rates are what a serving engine sees: fp16/bf16 inputs with FP32 accumulate. Where a
//    product runs FP32 accumulate at half rate (GeForce RTX 4090, L40, L20), the half rate is used;
//    the FP16-accumulate rate those parts also have is noted in the comment.
//  * l2_bandwidth_gb_s appears on no datasheet: every figure is an estimate (theoretical
//    bytes/clk where the whitepaper gives it, derated toward published microbenchmarks).
//    Calibrate it on the real part.
//  * link_bandwidth_gb_s is per direction per GPU: NVLink where the part has switched NVLink,
//    else PCIe (Gen4 x16: 32, Gen5 x16: 64). Two-GPU NVLink bridges (A40, RTX A6000, H100 PCIe)
//    are ignored because they pair only two GPUs. link_latency_us is an estimate: ~2 us for an
//    NVLink hop, ~5 us for PCIe.
//  * Per-SM occupancy limits (shared memory, threads, CTAs) are from the CUDA C++ Programming
//    Guide's compute-capability table.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/io.hpp"

namespace pipeweave {
namespace detail {
std::span<const std::string_view> embedded_calibrated_gpus();  // data/gpus/*.calibrated.json (generated)
}  // namespace detail
namespace {

// ---- Per-architecture constants ----------------------------------------------------------------

// Dense tensor flops (ops for int8) per SM per clock.
// GA100 (A100): 3rd-gen tensor cores, 1024 dense fp16 FMA/clk/SM. No fp8.
constexpr TensorRates kGa100Tensor{.fp16_bf16 = 2048, .fp8 = 0, .tf32 = 1024, .int8 = 4096};
// GA10x data-center / workstation parts (A10, A40, RTX A6000): full-rate FP32 accumulate. No fp8.
constexpr TensorRates kGa10xTensor{.fp16_bf16 = 1024, .fp8 = 0, .tf32 = 512, .int8 = 2048};
// AD10x with full-rate FP32 accumulate (L4, L40S, RTX 6000 Ada).
constexpr TensorRates kAd10xTensor{.fp16_bf16 = 1024, .fp8 = 2048, .tf32 = 512, .int8 = 2048};
// AD10x parts whose datasheets give FP32-accumulate fp16/bf16/fp8 (and tf32, int8) at half the
// AD102 rate (L40, L20). Their FP16-accumulate fp16 rate is 1024.
constexpr TensorRates kAd10xHalfTensor{.fp16_bf16 = 512, .fp8 = 1024, .tf32 = 256, .int8 = 1024};
// GeForce AD102 (RTX 4090): FP32 accumulate at half rate for fp16/bf16/fp8 and tf32; int8 is full
// rate. With FP16 accumulate fp16 is 1024 and fp8 2048 (Ada whitepaper, appendix table).
constexpr TensorRates kAd102GeForceTensor{.fp16_bf16 = 512, .fp8 = 1024, .tf32 = 256, .int8 = 2048};
// GH100 (H100, H200, H800): 4th-gen tensor cores.
constexpr TensorRates kGh100Tensor{.fp16_bf16 = 4096, .fp8 = 8192, .tf32 = 2048, .int8 = 8192};
// H20: GH100 with the tensor path capped at a quarter of GH100's per-SM rate (148 TF dense bf16
// from 78 SMs cannot be reached otherwise at any plausible clock).
constexpr TensorRates kH20Tensor{.fp16_bf16 = 1024, .fp8 = 2048, .tf32 = 512, .int8 = 2048};
// B200 (sm_100): 5th-gen tensor cores, twice GH100 per SM.
constexpr TensorRates kB200Tensor{.fp16_bf16 = 8192, .fp8 = 16384, .tf32 = 4096, .int8 = 16384};
// GB202 (sm_120, RTX PRO 6000 Blackwell): same per-SM fp16/fp8 rate as AD102 (fp4: 4096).
constexpr TensorRates kGb202Tensor{.fp16_bf16 = 1024, .fp8 = 2048, .tf32 = 512, .int8 = 2048};

constexpr double kXuOpsPerClk = 16;        // 4 SFUs (MUFU) per SM sub-partition, 4 sub-partitions
constexpr double kSmemBytesPerClk = 128;   // 32 banks x 4 bytes
constexpr int kRegistersPerSm = 65536;

constexpr double KiB = 1024.0;
constexpr double MiB = 1024.0 * 1024.0;

// Shared memory per SM (largest carve-out), CUDA programming guide.
constexpr double kSmemSm80 = 164 * KiB;   // 167936
constexpr double kSmemSm86 = 100 * KiB;   // 102400
constexpr double kSmemSm89 = 100 * KiB;   // 102400
constexpr double kSmemSm90 = 228 * KiB;   // 233472
constexpr double kSmemSm100 = 228 * KiB;  // 233472
constexpr double kSmemSm120 = 100 * KiB;  // 102400

constexpr double kPcie4 = 32;  // GB/s per direction, x16
constexpr double kPcie5 = 64;
constexpr double kNvlinkLatencyUs = 2;  // estimate
constexpr double kPcieLatencyUs = 5;    // estimate

std::vector<GpuSpec> build_datasheets() {
  std::vector<GpuSpec> gpus;
  gpus.reserve(17);

  // Entries in catalog order (the order listings and error messages show).

  // 2048*108*1.410 GHz = 311.9 TF dense bf16 (datasheet 312); tf32 156, int8 624 TOPS.
  // FP32: 64 lanes*2*108*1.41 = 19.5 TF (datasheet 19.5).
  gpus.push_back(GpuSpec{
      .name = "A100-SXM4-80GB",
      .aliases = {"NVIDIA A100-SXM4-80GB", "A100", "A100-SXM", "A100-SXM4"},
      .architecture = "ampere",
      .compute_capability_major = 8,
      .compute_capability_minor = 0,
      .sm_count = 108,
      .sm_clock_mhz = 1410,
      .tensor_flops_per_clk_per_sm = kGa100Tensor,
      .fp32_lanes_per_clk_per_sm = 64,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 2039,
      // Whitepaper: 5120 B/clk L2 read bandwidth (2.3x V100) = 7.2 TB/s theoretical at 1.41 GHz;
      // microbenchmarks sustain ~4.5-5 TB/s. Estimate; calibrate.
      .l2_bandwidth_gb_s = 4800,
      .l2_bytes = 40 * MiB,
      .smem_bytes_per_sm = kSmemSm80,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 80,
      .link_bandwidth_gb_s = 300,  // NVLink 3: 600 GB/s bidirectional
      .link_latency_us = kNvlinkLatencyUs,
      .source = "NVIDIA A100 80GB datasheet (SXM: 312 TF dense bf16, 2039 GB/s), GA100 (Ampere) whitepaper; "
                "L2 bandwidth estimated",
  });

  // 1024*84*1.740 GHz = 149.7 TF dense bf16 (datasheet 149.7); tf32 74.8, int8 299.3 TOPS.
  gpus.push_back(GpuSpec{
      .name = "A40",
      .aliases = {"NVIDIA A40"},
      .architecture = "ampere",
      .compute_capability_major = 8,
      .compute_capability_minor = 6,
      .sm_count = 84,
      .sm_clock_mhz = 1740,
      .tensor_flops_per_clk_per_sm = kGa10xTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 696,
      .l2_bandwidth_gb_s = 2000,  // GA102, estimate; calibrate
      .l2_bytes = 6 * MiB,
      .smem_bytes_per_sm = kSmemSm86,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 16,
      .memory_gb = 48,
      .link_bandwidth_gb_s = kPcie4,  // NVLink bridge (112.5 GB/s bidir) pairs only 2 GPUs: PCIe used
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA A40 datasheet (149.7 TF dense bf16, 696 GB/s), GA102 (Ampere) whitepaper; "
                "L2 bandwidth estimated",
  });

  // 4096*132*1.830 GHz = 989.4 TF dense bf16 (datasheet 989.4); fp8 1978.9, tf32 494.7.
  // (The datasheet's 67 TF fp32 assumes the 1.98 GHz max boost.)
  gpus.push_back(GpuSpec{
      .name = "H100-SXM",
      // "NVIDIA H100": the published study's name for this board (its hardware/H100.json: 132 SMs).
      .aliases = {"NVIDIA H100 80GB HBM3", "NVIDIA H100", "H100", "H100-SXM5"},
      .architecture = "hopper",
      .compute_capability_major = 9,
      .compute_capability_minor = 0,
      .sm_count = 132,
      .sm_clock_mhz = 1830,
      .tensor_flops_per_clk_per_sm = kGh100Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 3350,
      // Microbenchmarks report ~5.5-7 TB/s (partitioned L2; far-partition hits are slower).
      // Estimate; calibrate.
      .l2_bandwidth_gb_s = 6000,
      .l2_bytes = 50 * MiB,
      .smem_bytes_per_sm = kSmemSm90,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 80,
      .link_bandwidth_gb_s = 450,  // NVLink 4: 900 GB/s bidirectional
      .link_latency_us = kNvlinkLatencyUs,
      .source = "NVIDIA H100 datasheet (SXM5: 989.4 TF dense bf16, 3.35 TB/s), GH100 (Hopper) whitepaper; "
                "L2 bandwidth estimated",
  });

  // 4096*114*1.620 GHz = 756.4 TF dense bf16 (datasheet 1513 sparse = 756 dense). The PCIe part's
  // tensor peak assumes 1620 MHz; its 51 TF fp32 assumes the 1755 MHz max boost.
  gpus.push_back(GpuSpec{
      .name = "H100-PCIe",
      .aliases = {"NVIDIA H100 PCIe"},
      .architecture = "hopper",
      .compute_capability_major = 9,
      .compute_capability_minor = 0,
      .sm_count = 114,
      .sm_clock_mhz = 1620,
      .tensor_flops_per_clk_per_sm = kGh100Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 2000,
      .l2_bandwidth_gb_s = 5300,  // GH100, H100-SXM figure scaled by clock; estimate; calibrate
      .l2_bytes = 50 * MiB,
      .smem_bytes_per_sm = kSmemSm90,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 80,
      .link_bandwidth_gb_s = kPcie5,  // NVLink bridge pairs only 2 GPUs: PCIe Gen5 used
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA H100 datasheet (PCIe: 756 TF dense bf16, 2 TB/s), GH100 (Hopper) whitepaper; "
                "L2 bandwidth estimated",
  });

  // 1024*78*1.850 GHz = 147.7 TF dense bf16 (datasheet 148; fp8 296, tf32 74, int8 296 dense).
  // The H20's tensor throughput is capped: per-SM rate taken as 1/4 of GH100's at a ~1.85 GHz
  // clock (max boost 1.98 GHz). Uncertain split of rate vs clock; calibrate.
  gpus.push_back(GpuSpec{
      .name = "H20",
      .aliases = {"NVIDIA H20"},
      .architecture = "hopper",
      .compute_capability_major = 9,
      .compute_capability_minor = 0,
      .sm_count = 78,
      .sm_clock_mhz = 1850,
      .tensor_flops_per_clk_per_sm = kH20Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 4000,
      .l2_bandwidth_gb_s = 6000,  // GH100 L2 (60 MB enabled), as H100-SXM; estimate; calibrate
      .l2_bytes = 60 * MiB,
      .smem_bytes_per_sm = kSmemSm90,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 96,
      .link_bandwidth_gb_s = 450,  // NVLink 4: 900 GB/s bidirectional
      .link_latency_us = kNvlinkLatencyUs,
      .source = "NVIDIA H20 product brief (148 TF dense bf16, 296 TF fp8, 4.0 TB/s, 96 GB, 60 MB L2), "
                "GH100 (Hopper) whitepaper; rate/clock split and L2 bandwidth estimated",
  });

  // 4096*132*1.830 GHz = 989.4 TF dense bf16 (datasheet 989); same GH100 as H100-SXM, HBM3e.
  gpus.push_back(GpuSpec{
      .name = "H200-SXM",
      .aliases = {"NVIDIA H200", "H200", "H200-SXM5"},
      .architecture = "hopper",
      .compute_capability_major = 9,
      .compute_capability_minor = 0,
      .sm_count = 132,
      .sm_clock_mhz = 1830,
      .tensor_flops_per_clk_per_sm = kGh100Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 4800,
      .l2_bandwidth_gb_s = 6000,  // GH100, as H100-SXM; estimate; calibrate
      .l2_bytes = 60 * MiB,  // all 6 HBM stacks (and their L2 slices) enabled, unlike H100-SXM's 5
      .smem_bytes_per_sm = kSmemSm90,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 141,
      .link_bandwidth_gb_s = 450,  // NVLink 4: 900 GB/s bidirectional
      .link_latency_us = kNvlinkLatencyUs,
      .source = "NVIDIA H200 datasheet (SXM: 989 TF dense bf16, 4.8 TB/s, 141 GB), GH100 (Hopper) "
                "whitepaper; 60 MB L2 as CUDA reports it; L2 bandwidth estimated",
  });

  // 4096*132*1.830 GHz = 989.4 TF dense bf16 (datasheet 989.4); H100-SXM with reduced NVLink.
  gpus.push_back(GpuSpec{
      .name = "H800",
      .aliases = {"NVIDIA H800", "H800-SXM"},
      .architecture = "hopper",
      .compute_capability_major = 9,
      .compute_capability_minor = 0,
      .sm_count = 132,
      .sm_clock_mhz = 1830,
      .tensor_flops_per_clk_per_sm = kGh100Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 3350,
      .l2_bandwidth_gb_s = 6000,  // GH100, as H100-SXM; estimate; calibrate
      .l2_bytes = 50 * MiB,
      .smem_bytes_per_sm = kSmemSm90,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 80,
      .link_bandwidth_gb_s = 200,  // NVLink 400 GB/s bidirectional
      .link_latency_us = kNvlinkLatencyUs,
      .source = "NVIDIA H800 SXM5 datasheet (989.4 TF dense bf16, 3.35 TB/s, NVLink 400 GB/s), GH100 "
                "(Hopper) whitepaper; L2 bandwidth estimated",
  });

  // 512*92*2.535 GHz = 119.4 TF dense bf16 with FP32 accumulate (datasheet 119.5; fp8 239,
  // tf32 59.8, int8 239 dense; fp32 59.8 TF = 256*92*2.54 GHz).
  gpus.push_back(GpuSpec{
      .name = "L20",
      .aliases = {"NVIDIA L20"},
      .architecture = "ada",
      .compute_capability_major = 8,
      .compute_capability_minor = 9,
      .sm_count = 92,
      .sm_clock_mhz = 2535,
      .tensor_flops_per_clk_per_sm = kAd10xHalfTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 864,
      .l2_bandwidth_gb_s = 4000,  // AD102 with 92 SMs, estimate; calibrate
      .l2_bytes = 96 * MiB,
      .smem_bytes_per_sm = kSmemSm89,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 24,
      .memory_gb = 48,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA L20 datasheet (119.5 TF dense bf16, 59.8 TF fp32, 864 GB/s), Ada (AD102) "
                "whitepaper; L2 bandwidth estimated",
  });

  // 512*142*2.490 GHz = 181.0 TF dense bf16 with FP32 accumulate (datasheet 181.05; fp8 362,
  // tf32 90.5, int8 362 dense). FP16 accumulate: 1024/clk/SM = 362.1 TF.
  gpus.push_back(GpuSpec{
      .name = "L40",
      .aliases = {"NVIDIA L40"},
      .architecture = "ada",
      .compute_capability_major = 8,
      .compute_capability_minor = 9,
      .sm_count = 142,
      .sm_clock_mhz = 2490,
      .tensor_flops_per_clk_per_sm = kAd10xHalfTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 864,
      .l2_bandwidth_gb_s = 5000,  // AD102, estimate; calibrate
      .l2_bytes = 96 * MiB,
      .smem_bytes_per_sm = kSmemSm89,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 24,
      .memory_gb = 48,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA L40 datasheet (181 TF dense bf16 fp32-accumulate, 90.5 TF fp32, 864 GB/s), Ada "
                "(AD102) whitepaper; L2 bandwidth estimated",
  });

  // 1024*142*2.505 GHz = 364.2 TF dense bf16 (datasheet 362.05; its fp8 733, tf32 183 and fp32 91.6
  // imply 2.52 GHz, its bf16 2.49 GHz: 2505 MHz is within 0.6% of all four).
  gpus.push_back(GpuSpec{
      .name = "L40S",
      .aliases = {"NVIDIA L40S"},
      .architecture = "ada",
      .compute_capability_major = 8,
      .compute_capability_minor = 9,
      .sm_count = 142,
      .sm_clock_mhz = 2505,
      .tensor_flops_per_clk_per_sm = kAd10xTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 864,
      .l2_bandwidth_gb_s = 5000,  // AD102, estimate; calibrate
      .l2_bytes = 96 * MiB,
      .smem_bytes_per_sm = kSmemSm89,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 24,
      .memory_gb = 48,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA L40S datasheet (362 TF dense bf16, 733 TF dense fp8, 864 GB/s), Ada (AD102) "
                "whitepaper; L2 bandwidth estimated",
  });

  // 1024*58*2.040 GHz = 121.2 TF dense bf16 (datasheet 242 sparse = 121 dense; fp8 485 sparse).
  gpus.push_back(GpuSpec{
      .name = "L4",
      .aliases = {"NVIDIA L4"},
      .architecture = "ada",
      .compute_capability_major = 8,
      .compute_capability_minor = 9,
      .sm_count = 58,
      .sm_clock_mhz = 2040,
      .tensor_flops_per_clk_per_sm = kAd10xTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 300,
      .l2_bandwidth_gb_s = 2000,  // AD104, estimate; calibrate
      .l2_bytes = 48 * MiB,
      .smem_bytes_per_sm = kSmemSm89,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 24,
      .memory_gb = 24,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA L4 datasheet (242 TF sparse = 121 TF dense bf16, 30.3 TF fp32, 300 GB/s), Ada "
                "(AD104) whitepaper; L2 bandwidth estimated",
  });

  // 1024*142*2.505 GHz = 364.2 TF dense bf16 (datasheet 1457 TF fp8 sparse = 728.5 fp8 dense
  // = 364.2 bf16 dense). FP32: 128*2*142*2.505 = 91.1 TF (datasheet 91.1).
  gpus.push_back(GpuSpec{
      .name = "RTX-6000-Ada",
      .aliases = {"NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"},
      .architecture = "ada",
      .compute_capability_major = 8,
      .compute_capability_minor = 9,
      .sm_count = 142,
      .sm_clock_mhz = 2505,
      .tensor_flops_per_clk_per_sm = kAd10xTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 960,
      .l2_bandwidth_gb_s = 5000,  // AD102, estimate; calibrate
      .l2_bytes = 96 * MiB,
      .smem_bytes_per_sm = kSmemSm89,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 24,
      .memory_gb = 48,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA RTX 6000 Ada datasheet (1457 TF fp8 sparse, 91.1 TF fp32, 960 GB/s), Ada (AD102) "
                "whitepaper; L2 bandwidth estimated",
  });

  // 1024*84*1.800 GHz = 154.8 TF dense bf16 (datasheet 309.7 sparse = 154.8 dense).
  gpus.push_back(GpuSpec{
      .name = "RTX-A6000",
      .aliases = {"NVIDIA RTX A6000", "RTX A6000"},
      .architecture = "ampere",
      .compute_capability_major = 8,
      .compute_capability_minor = 6,
      .sm_count = 84,
      .sm_clock_mhz = 1800,
      .tensor_flops_per_clk_per_sm = kGa10xTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 768,
      .l2_bandwidth_gb_s = 2000,  // GA102, estimate; calibrate
      .l2_bytes = 6 * MiB,
      .smem_bytes_per_sm = kSmemSm86,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 16,
      .memory_gb = 48,
      .link_bandwidth_gb_s = kPcie4,  // NVLink bridge (112.5 GB/s bidir) pairs only 2 GPUs: PCIe used
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA RTX A6000 datasheet (309.7 TF sparse = 154.8 TF dense fp16, 768 GB/s), GA102 "
                "whitepaper; L2 bandwidth estimated",
  });

  // 1024*188*2.600 GHz = 500.5 TF dense bf16 (datasheet 4 PF fp4 sparse = 4096*2*188*2.6 GHz;
  // fp32 125 TF = 256*188*2.6 GHz). The Workstation Edition (600 W) has the same SMs, clocks
  // and memory, so its device name is an alias.
  gpus.push_back(GpuSpec{
      .name = "RTX-PRO-6000-Blackwell-Server",
      .aliases = {"NVIDIA RTX PRO 6000 Blackwell Server Edition",
                  "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"},
      .architecture = "blackwell",
      .compute_capability_major = 12,
      .compute_capability_minor = 0,
      .sm_count = 188,
      .sm_clock_mhz = 2600,
      .tensor_flops_per_clk_per_sm = kGb202Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 1792,
      .l2_bandwidth_gb_s = 7000,  // GB202, estimate; calibrate
      .l2_bytes = 128 * MiB,
      .smem_bytes_per_sm = kSmemSm120,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 32,
      .memory_gb = 96,
      .link_bandwidth_gb_s = kPcie5,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet (4 PF fp4 sparse, 125 TF fp32, "
                "1792 GB/s, 96 GB), Blackwell (GB202) whitepaper; clock derived, L2 bandwidth estimated",
  });

  // 8192*148*1.855 GHz = 2.249 PF dense bf16 (HGX B200 datasheet 2.25 PF dense / 4.5 sparse;
  // fp8 4.5 PF, tf32 1.1 PF, int8 4.5 POPS dense).
  gpus.push_back(GpuSpec{
      .name = "B200",
      .aliases = {"NVIDIA B200"},
      .architecture = "blackwell",
      .compute_capability_major = 10,
      .compute_capability_minor = 0,
      .sm_count = 148,
      .sm_clock_mhz = 1855,
      .tensor_flops_per_clk_per_sm = kB200Tensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 8000,
      .l2_bandwidth_gb_s = 10000,  // two-die L2, estimate; calibrate
      .l2_bytes = 126 * MiB,
      .smem_bytes_per_sm = kSmemSm100,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 2048,
      .max_ctas_per_sm = 32,
      .memory_gb = 180,
      .link_bandwidth_gb_s = 900,  // NVLink 5: 1.8 TB/s bidirectional
      .link_latency_us = kNvlinkLatencyUs,
      .source = "NVIDIA HGX/DGX B200 datasheet (2.25 PF dense bf16, 8 TB/s, 180 GB), Blackwell "
                "whitepaper; L2 bandwidth estimated",
  });

  // 1024*72*1.695 GHz = 125.0 TF dense bf16 (datasheet 125); tf32 62.5, int8 250 TOPS.
  gpus.push_back(GpuSpec{
      .name = "A10",
      .aliases = {"NVIDIA A10"},
      .architecture = "ampere",
      .compute_capability_major = 8,
      .compute_capability_minor = 6,
      .sm_count = 72,
      .sm_clock_mhz = 1695,
      .tensor_flops_per_clk_per_sm = kGa10xTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 600,
      .l2_bandwidth_gb_s = 1700,  // GA102, estimate; calibrate
      .l2_bytes = 6 * MiB,
      .smem_bytes_per_sm = kSmemSm86,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 16,
      .memory_gb = 24,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA A10 datasheet (125 TF dense bf16, 600 GB/s), GA102 (Ampere) whitepaper; "
                "L2 bandwidth estimated",
  });

  // 512*128*2.520 GHz = 165.2 TF dense fp16 with FP32 accumulate, the rate a serving engine sees
  // (Ada whitepaper 165.2; FP16 accumulate: 1024/clk/SM = 330.3 TF; fp8 fp32-acc 330.3;
  // int8 660.6 dense).
  gpus.push_back(GpuSpec{
      .name = "RTX-4090",
      .aliases = {"NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "RTX 4090"},
      .architecture = "ada",
      .compute_capability_major = 8,
      .compute_capability_minor = 9,
      .sm_count = 128,
      .sm_clock_mhz = 2520,
      .tensor_flops_per_clk_per_sm = kAd102GeForceTensor,
      .fp32_lanes_per_clk_per_sm = 128,
      .xu_ops_per_clk_per_sm = kXuOpsPerClk,
      .smem_bytes_per_clk_per_sm = kSmemBytesPerClk,
      .dram_bandwidth_gb_s = 1008,
      .l2_bandwidth_gb_s = 5000,  // AD102, estimate; calibrate
      .l2_bytes = 72 * MiB,
      .smem_bytes_per_sm = kSmemSm89,
      .registers_per_sm = kRegistersPerSm,
      .max_threads_per_sm = 1536,
      .max_ctas_per_sm = 24,
      .memory_gb = 24,
      .link_bandwidth_gb_s = kPcie4,
      .link_latency_us = kPcieLatencyUs,
      .source = "NVIDIA Ada (AD102) whitepaper, RTX 4090 column (165.2 TF dense fp16 fp32-accumulate, "
                "82.6 TF fp32, 1008 GB/s); L2 bandwidth estimated",
  });

  return gpus;
}

// ---- From the data sheet to what kernels sustain -------------------------------------------------

// What the data sheets above do not give, per board: the highest SM clock (nvidia-smi's
// clocks.max.sm; where no board was read, the rated boost clock), the board's power limit, its
// memory and the process its die is made on. Sources: vendor data sheets and product briefs;
// RTX-PRO-6000-Blackwell-Server's clock is the published study's reading of its board
// (hardware/RTX PRO 6000 S.json: 2340 MHz; the data sheet's peaks assume 2600).
enum class Process : std::uint8_t { tsmc_4n, tsmc_n7, samsung_8n };
enum class Memory : std::uint8_t { hbm, gddr };
struct Board {
  std::string_view name;
  double max_clock_mhz, power_limit_w;
  Memory memory;
  Process process;
  double all_reduce_bus_gb_s = 0;  // measured on a host of these GPUs; 0: none (the data sheet's link)
};
constexpr Board kBoards[] = {
    {"A100-SXM4-80GB", 1410, 400, Memory::hbm, Process::tsmc_n7, 212.2},
    {"A40", 1740, 300, Memory::gddr, Process::samsung_8n},
    {"H100-SXM", 1980, 700, Memory::hbm, Process::tsmc_4n},
    {"H100-PCIe", 1755, 350, Memory::hbm, Process::tsmc_4n},
    {"H20", 1980, 400, Memory::hbm, Process::tsmc_4n, 343.6},
    {"H200-SXM", 1980, 700, Memory::hbm, Process::tsmc_4n},
    {"H800", 1980, 700, Memory::hbm, Process::tsmc_4n, 208.2},
    {"L20", 2520, 275, Memory::gddr, Process::tsmc_4n},
    {"L40", 2490, 300, Memory::gddr, Process::tsmc_4n},
    {"L40S", 2520, 350, Memory::gddr, Process::tsmc_4n},
    {"L4", 2040, 72, Memory::gddr, Process::tsmc_4n},
    {"RTX-6000-Ada", 2505, 300, Memory::gddr, Process::tsmc_4n, 11.2},
    {"RTX-A6000", 1800, 300, Memory::gddr, Process::samsung_8n},
    {"RTX-PRO-6000-Blackwell-Server", 2340, 600, Memory::gddr, Process::tsmc_4n, 23.0},
    {"B200", 1965, 1000, Memory::hbm, Process::tsmc_4n},
    {"A10", 1695, 150, Memory::gddr, Process::samsung_8n},
    {"RTX-4090", 2520, 450, Memory::gddr, Process::tsmc_4n},
};

// The link: NCCL all-reduces of 16 MiB and more timed on the published study's hosts reach a bus
// bandwidth (the bytes each GPU's link carries, per direction) of 212 GB/s on A100s, 344 on H20s
// (4 GPUs each; the 4-GPU figure where several counts were timed), 208 on H800s (8), 11.2 on RTX
// 6000 Adas (2: PCIe, no peer-to-peer) and 23 on RTX PRO 6000s (4), against 300, 450, 200, 32 and
// 64 GB/s on their data sheets (data/gpus/published/link_bandwidth.py; the H100's 321 went into its
// calibrated spec, --link-bandwidth). Those boards take the measured figure.
//
// Measured on the calibrated boards (docs/experiments/calibrated-gpus.md and sustained-load.md):
// - H100-SXM (700 W) holds 1649.6 MHz under the dense bf16 tensor microbenchmark, against a
//   1980 MHz maximum: 1.2003x. Its dense bf16 peak at 1980 MHz is 1070.6 TFLOP/s, 0.654 W per
//   TFLOP/s. A board is taken to hold its maximum clock while it has at least
//   kWattsPerTflopToHoldClock = 0.654 x 1.2003^3 = 1.131 W per TFLOP/s of its peak at that clock
//   (4N process), and below that to lose clock as the cube root of the shortfall (power grows
//   about as the cube of the clock near the top of the voltage curve). The H200 (same board
//   power, more memory) predicts 1650 by this rule; it measured 1604.
// - Back-to-back GEMMs (a prefill) lose less than the microbenchmark: 1.156x their isolated
//   time on the H100 where the microbenchmark lost 1.2003x, 1.199x on the H200 where it lost
//   1.234x: the GEMM slowdown is taken as 1 + 0.78 x (microbenchmark's - 1), the H100's ratio,
//   reached from a tensor utilisation of 0.92: the H100 probe's figure against the data-sheet
//   spec, between what the calibrated specs measure it at (0.890 on the H100, 0.945 on the H200).
// - DRAM: a streaming read reached 91.8% (H100, HBM3) and 94.3% (H200, HBM3e) of the nominal
//   bandwidth: HBM boards are given 93%. No GDDR board has been calibrated: 90%, an estimate.
// - L2: the calibrated GH100 boards read 1.24x (H100) the data sheet estimate: other GH100 boards
//   are given that factor; other architectures keep their estimate.
// Other processes spend more energy per flop: a board on TSMC N7 needs 1.4x, on Samsung 8N 2x
// the power per TFLOP/s to hold its clock (estimates, from the processes' published density and
// power scaling; no such board has been calibrated here).
constexpr double kWattsPerTflopToHoldClock = 1.131;
constexpr double kGemmShareOfClockLoss = 0.78;
constexpr double kSustainedUtilization = 0.92;
constexpr double kHbmReadFraction = 0.93;
constexpr double kGddrReadFraction = 0.90;
constexpr double kGh100L2Factor = 1.24;

double process_power_factor(Process process) {
  switch (process) {
    case Process::tsmc_4n: return 1.0;
    case Process::tsmc_n7: return 1.4;
    case Process::samsung_8n: return 2.0;
  }
  return 1.0;
}

std::string format_mhz(double mhz) { return std::to_string(static_cast<int>(std::lround(mhz))); }

GpuSpec estimated(GpuSpec gpu, const Board& board) {
  const double peak_tflops = gpu.tensor_flops_per_clk_per_sm.fp16_bf16 * gpu.sm_count * board.max_clock_mhz * 1e-6;
  const double watts_per_tflop = board.power_limit_w / peak_tflops;
  const double needed = kWattsPerTflopToHoldClock * process_power_factor(board.process);
  const double tensor_loss = std::max(1.0, std::cbrt(needed / watts_per_tflop));
  gpu.max_clock_mhz = board.max_clock_mhz;
  gpu.power_limit_w = board.power_limit_w;
  gpu.sm_clock_mhz = board.max_clock_mhz / tensor_loss;
  estimate_sustained_load(gpu);
  const double read_fraction = board.memory == Memory::hbm ? kHbmReadFraction : kGddrReadFraction;
  gpu.dram_bandwidth_gb_s *= read_fraction;
  const bool gh100 = gpu.architecture == "hopper";
  if (gh100) gpu.l2_bandwidth_gb_s *= kGh100L2Factor;
  if (board.all_reduce_bus_gb_s > 0) gpu.link_bandwidth_gb_s = board.all_reduce_bus_gb_s;
  gpu.source = "estimated from the data sheet (catalog.cpp): SM clock under a dense tensor load " + format_mhz(gpu.sm_clock_mhz) +
               " MHz (" + format_mhz(board.max_clock_mhz) + " MHz maximum, " + format_mhz(board.power_limit_w) +
               " W board power), tensor-bound kernels back to back at an effective " + format_mhz(gpu.sustained_clock_mhz) +
               " MHz, DRAM read " + std::to_string(static_cast<int>(std::lround(100 * read_fraction))) +
               "% of nominal" + (gh100 ? ", L2 bandwidth x1.24 (as calibrated on the H100)" : "") +
               (board.all_reduce_bus_gb_s > 0 ? ", link bandwidth as NCCL all-reduces reached on the published study's hosts" : "") +
               ". Data sheet: " + gpu.source;
  return gpu;
}

const Board* board_of(std::string_view name) {
  for (const Board& board : kBoards)
    if (board.name == name) return &board;
  return nullptr;
}

// The data sheets, each with its board's highest clock and power limit (from kBoards).
std::vector<GpuSpec> datasheets_with_boards() {
  std::vector<GpuSpec> gpus = build_datasheets();
  for (GpuSpec& gpu : gpus) {
    const Board* board = board_of(gpu.name);
    if (!board) throw Error("catalog.cpp: no board facts for " + gpu.name + " (a bug)");
    gpu.max_clock_mhz = board->max_clock_mhz;
    gpu.power_limit_w = board->power_limit_w;
  }
  return gpus;
}

const std::vector<GpuSpec>& datasheet_storage() {
  static const std::vector<GpuSpec> gpus = datasheets_with_boards();  // built once; magic static is thread-safe
  return gpus;
}

std::vector<GpuSpec> build_catalog() {
  std::vector<GpuSpec> calibrated;
  for (std::string_view text : detail::embedded_calibrated_gpus()) calibrated.push_back(gpu_spec_from_json(text));
  std::vector<GpuSpec> gpus;
  for (const GpuSpec& datasheet : datasheet_storage()) {
    const auto found = std::find_if(calibrated.begin(), calibrated.end(), [&](const GpuSpec& c) { return c.name == datasheet.name; });
    if (found != calibrated.end()) {
      // The calibrated spec answers to every name of its board: its file's and the catalog's.
      GpuSpec merged = *found;
      for (const std::string& alias : datasheet.aliases)
        if (std::find(merged.aliases.begin(), merged.aliases.end(), alias) == merged.aliases.end())
          merged.aliases.push_back(alias);
      gpus.push_back(std::move(merged));
      continue;
    }
    gpus.push_back(estimated(datasheet, *board_of(datasheet.name)));
  }
  return gpus;
}

const std::vector<GpuSpec>& catalog_storage() {
  static const std::vector<GpuSpec> gpus = build_catalog();
  return gpus;
}

std::string_view trim(std::string_view text) {
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::span<const GpuSpec> gpu_catalog() { return catalog_storage(); }
std::span<const GpuSpec> gpu_datasheets() { return datasheet_storage(); }

namespace {
const GpuSpec& find_in(std::span<const GpuSpec> gpus, std::string_view name_or_alias) {
  const std::string_view wanted = trim(name_or_alias);
  for (const GpuSpec& gpu : gpus) {
    if (iequals(gpu.name, wanted)) return gpu;
    for (const std::string& alias : gpu.aliases)
      if (iequals(alias, wanted)) return gpu;
  }
  std::string message = "unknown GPU \"";
  message += detail::printable(name_or_alias, 80);
  message += "\"; known: ";
  bool first = true;
  for (const GpuSpec& gpu : gpus) {
    if (!first) message += ", ";
    message += gpu.name;
    first = false;
  }
  throw InvalidInput(message);
}
}  // namespace

const GpuSpec& find_gpu(std::string_view name_or_alias) { return find_in(catalog_storage(), name_or_alias); }
const GpuSpec& find_gpu_datasheet(std::string_view name_or_alias) { return find_in(datasheet_storage(), name_or_alias); }

void estimate_sustained_load(GpuSpec& gpu) {
  detail::require_positive("gpu.max_clock_mhz", gpu.max_clock_mhz);
  detail::require_positive("gpu.sm_clock_mhz", gpu.sm_clock_mhz);
  const double tensor_loss = std::max(1.0, gpu.max_clock_mhz / gpu.sm_clock_mhz);
  gpu.sustained_clock_mhz = gpu.max_clock_mhz / (1 + kGemmShareOfClockLoss * (tensor_loss - 1));
  gpu.sustained_utilization = kSustainedUtilization;
}

const GpuSpec& default_gpu() {
  static const GpuSpec& gpu = find_gpu("H100-SXM");
  return gpu;
}

}  // namespace pipeweave
