#pragma once
// A synthetic GPU with round numbers for the demand-model tests (tests/test_demand_*.cpp),
// so that every expected figure can be worked out by hand in the test itself.
//
// At 1000 MHz one clock is 1 ns, so a bandwidth of X GB/s moves exactly X bytes per clock:
//   DRAM 1024 GB/s -> 1024 B/clk for the chip (256 B/clk per SM on 4 SMs)
//   L2   4096 GB/s -> 4096 B/clk for the chip (1024 B/clk per SM on 4 SMs)
//   link  100 GB/s ->  100 B/clk; link latency 1 us -> 1000 clocks per step
// Per SM per clock: tensor fp16/bf16 1024 flops, fp8 2048, tf32 512, int8 2048;
// 128 FP32 lanes, 16 XU ops, 128 shared-memory bytes.
// Occupancy limits: 228 KiB (233472 B) of shared memory, 2048 threads, 32 CTAs, 65536 registers.

#include <string>

#include "pipeweave/gpu_spec.hpp"

namespace pipeweave_test {

// Hopper-like (compute capability 9.0: clusters, warp-specialised 384-thread GEMM CTAs,
// FlashAttention-3) unless cc_major says otherwise.
inline pipeweave::GpuSpec synthetic_gpu(int sm_count = 4, int cc_major = 9) {
  pipeweave::GpuSpec gpu;
  gpu.name = "synthetic-" + std::to_string(sm_count) + "sm-cc" + std::to_string(cc_major) + "0";
  gpu.architecture = cc_major >= 9 ? "hopper" : "ampere";
  gpu.compute_capability_major = cc_major;
  gpu.compute_capability_minor = 0;
  gpu.sm_count = sm_count;
  gpu.sm_clock_mhz = 1000;
  gpu.tensor_flops_per_clk_per_sm.fp16_bf16 = 1024;
  gpu.tensor_flops_per_clk_per_sm.fp8 = 2048;
  gpu.tensor_flops_per_clk_per_sm.tf32 = 512;
  gpu.tensor_flops_per_clk_per_sm.int8 = 2048;
  gpu.fp32_lanes_per_clk_per_sm = 128;
  gpu.xu_ops_per_clk_per_sm = 16;
  gpu.smem_bytes_per_clk_per_sm = 128;
  gpu.dram_bandwidth_gb_s = 1024;
  gpu.l2_bandwidth_gb_s = 4096;
  gpu.l2_bytes = 50.0 * 1024 * 1024;
  gpu.smem_bytes_per_sm = 228.0 * 1024;
  gpu.registers_per_sm = 65536;
  gpu.max_threads_per_sm = 2048;
  gpu.max_ctas_per_sm = 32;
  gpu.memory_gb = 80;
  gpu.link_bandwidth_gb_s = 100;
  gpu.link_latency_us = 1;
  gpu.source = "synthetic test GPU";
  return gpu;
}

// Ampere-like variant (compute capability 8.0): no clusters, 256-thread GEMM CTAs,
// FlashAttention-2, and no fp8 tensor path (rate 0).
inline pipeweave::GpuSpec synthetic_gpu_cc80(int sm_count = 4) {
  pipeweave::GpuSpec gpu = synthetic_gpu(sm_count, 8);
  gpu.tensor_flops_per_clk_per_sm.fp8 = 0;
  return gpu;
}

}  // namespace pipeweave_test
