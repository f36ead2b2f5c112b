// The demand models of the row, streaming, MoE and collective kernels
// (include/pipeweave/ops/{rmsnorm,silu_mul,elementwise,collective,fused_moe}.hpp), and the
// general properties of Demand and features() (include/pipeweave/pipes.hpp), against figures
// worked out by hand on the synthetic GPU of demand_test_gpu.hpp: 4 SMs, 1000 MHz,
// tensor bf16 1024 flops/clk/SM, 128 FP32 lanes, 16 XU, 128 smem B/clk/SM,
// DRAM 1024 B/clk (256 per SM), L2 4096 B/clk (1024 per SM), link 100 B/clk, 1000 clk a hop.

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "demand_test_gpu.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/pipes.hpp"

using Catch::Detail::Approx;  // Catch2 v2: Catch::Approx names the vector matcher
using pipeweave::at;
using pipeweave::Collective;
using pipeweave::CollectiveKind;
using pipeweave::DType;
using pipeweave::Pipe;
using pipeweave_test::synthetic_gpu;
using pipeweave_test::synthetic_gpu_cc80;

namespace {

pipeweave::RmsNorm make_rmsnorm(std::int64_t tokens, std::int64_t hidden, bool fused) {
  pipeweave::RmsNorm norm;
  norm.tokens = tokens;
  norm.hidden = hidden;
  norm.dtype = DType::bf16;
  norm.fused_residual = fused;
  return norm;
}

Collective make_collective(CollectiveKind kind, double bytes, int ranks) {
  Collective op;
  op.kind = kind;
  op.bytes = bytes;
  op.ranks = ranks;
  op.dtype = DType::bf16;
  return op;
}

pipeweave::FusedMoe make_moe(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, std::int64_t hidden,
                             std::int64_t intermediate) {
  pipeweave::FusedMoe moe;
  moe.tokens = tokens;
  moe.experts = experts;
  moe.top_k = top_k;
  moe.hidden = hidden;
  moe.intermediate = intermediate;
  moe.dtype = DType::bf16;
  return moe;
}

}  // namespace

TEST_CASE("rmsnorm demand: plain", "[demand][rmsnorm]") {
  // 10 tokens of hidden 4096, bf16: one CTA per token, row = 4096*2 = 8192 B.
  // Busiest SM: ceil(10/4) = 3 CTAs. Fewer than 256 tokens: min(4096, 1024) = 1024 threads.
  const auto gpu = synthetic_gpu(4);
  const auto d = pipeweave::demand(make_rmsnorm(10, 4096, false), gpu);
  CHECK(d.ctas == 10);
  CHECK(d.busiest_sm_ctas == 3);

  // fma: square-accumulate, scale, weight = 3 lane ops per element.
  const double fma_per_cta = 4096.0 * 3;
  CHECK(at(d.gpu_cycles, Pipe::fma) == Approx(10 * fma_per_cta / (128.0 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx(3 * fma_per_cta / 128.0).epsilon(1e-9));
  // xu: one rsqrt per token.
  CHECK(at(d.gpu_cycles, Pipe::xu) == Approx(10.0 / (16 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::xu) == Approx(3.0 / 16).epsilon(1e-9));
  // l2 per token: x read, weight read, y written = 3 rows.
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(10 * 3 * 8192.0 / 4096).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::l2) == Approx(3 * 3 * 8192.0 / 1024).epsilon(1e-9));
  // dram: x in and y out per token, the weight once for the whole kernel.
  const double dram_bytes = 10 * 8192.0 * 2 + 8192.0;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(dram_bytes / 1024).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::dram) == Approx(3 * dram_bytes / 10 / 256).epsilon(1e-9));
  // smem: one float per warp (1024/32 = 32 warps), written and read: 2*4*32 = 256 B a CTA.
  CHECK(at(d.gpu_cycles, Pipe::smem) == Approx(10 * 256.0 / (128 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::smem) == Approx(3 * 256.0 / 128).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::tensor) == 0);
  // Resident: 1024 threads -> floor(2048/1024) = 2.
  CHECK(d.resident_ctas_per_sm == 2);
  // The bound: fma on the busiest SM, 3*12288/128 = 288 cycles, above the other hard limits
  // (whole-GPU dram 168, busiest-SM smem 6, xu 0.1875).
  CHECK(d.bottleneck() == Pipe::fma);
  CHECK(d.bound_cycles() == Approx(288).epsilon(1e-9));
}

TEST_CASE("rmsnorm demand: fused residual add", "[demand][rmsnorm]") {
  const auto gpu = synthetic_gpu(4);
  const auto d = pipeweave::demand(make_rmsnorm(10, 4096, true), gpu);
  CHECK(d.ctas == 10);
  CHECK(d.busiest_sm_ctas == 3);
  // fma: plus the residual add = 4 lane ops per element.
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx(3 * 4096.0 * 4 / 128).epsilon(1e-9));
  // xu unchanged: one rsqrt per token.
  CHECK(at(d.gpu_cycles, Pipe::xu) == Approx(10.0 / (16 * 4)).epsilon(1e-9));
  // l2 per token: x, residual read; sum written, read again; weight read; y written = 6 rows.
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(10 * 6 * 8192.0 / 4096).epsilon(1e-9));
  // dram: x, residual in; sum, y out = 4 rows a token, plus the weight once.
  const double dram_bytes = 10 * 8192.0 * 4 + 8192.0;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(dram_bytes / 1024).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::dram) == Approx(3 * dram_bytes / 10 / 256).epsilon(1e-9));
}

TEST_CASE("rmsnorm demand: many tokens use 256-thread blocks", "[demand][rmsnorm]") {
  // 300 tokens >= 256: min(4096, 256) = 256 threads -> floor(2048/256) = 8 resident CTAs;
  // 8 warps -> 2*4*8 = 64 B of smem a CTA. Busiest SM: ceil(300/4) = 75 CTAs.
  const auto d = pipeweave::demand(make_rmsnorm(300, 4096, false), synthetic_gpu(4));
  CHECK(d.resident_ctas_per_sm == 8);
  CHECK(d.busiest_sm_ctas == 75);
  CHECK(at(d.sm_cycles, Pipe::smem) == Approx(75 * 64.0 / 128).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::xu) == Approx(75.0 / 16).epsilon(1e-9));
  // A row narrower than the block cap: hidden 512 with 10 tokens -> 512 threads -> 4 resident.
  CHECK(pipeweave::demand(make_rmsnorm(10, 512, false), synthetic_gpu(4)).resident_ctas_per_sm == 4);
}

TEST_CASE("silu_mul demand", "[demand][silu_mul]") {
  // 6 tokens, dim 2048 (input [6, 4096]), bf16: one CTA per token, ceil(6/4) = 2 on the busiest SM.
  pipeweave::SiluMul op;
  op.tokens = 6;
  op.dim = 2048;
  const auto d = pipeweave::demand(op, synthetic_gpu(4));
  CHECK(d.ctas == 6);
  CHECK(d.busiest_sm_ctas == 2);
  // fma: 4 lane ops per output element; xu: ex2 and rcp per element.
  CHECK(at(d.gpu_cycles, Pipe::fma) == Approx(6 * 2048.0 * 4 / (128 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx(2 * 2048.0 * 4 / 128).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::xu) == Approx(6 * 2048.0 * 2 / (16 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::xu) == Approx(2 * 2048.0 * 2 / 16).epsilon(1e-9));
  // Bytes: 2*dim read (x and gate), dim written, 2 B each: 3*2048*2 = 12288 B a token.
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(6 * 12288.0 / 1024).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::dram) == Approx(2 * 12288.0 / 256).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(6 * 12288.0 / 4096).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::l2) == Approx(2 * 12288.0 / 1024).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::smem) == 0);
  // min(2048, 1024) = 1024 threads -> 2 resident.
  CHECK(d.resident_ctas_per_sm == 2);
  // The bound: xu on the busiest SM, 512 cycles, above busiest-SM fma 128 and whole-GPU dram 72.
  CHECK(d.bottleneck() == Pipe::xu);
  CHECK(d.bound_cycles() == Approx(512).epsilon(1e-9));
}

TEST_CASE("elementwise demand", "[demand][elementwise]") {
  // 41060 B = 10 whole 4 KiB CTAs + 100 B: ceil(41060/4096) = 11 CTAs, ceil(11/4) = 3 on the busiest SM.
  pipeweave::Elementwise op;
  op.bytes = 10 * 4096.0 + 100;
  op.flops = 1e5;
  op.xu_ops = 1000;
  const auto d = pipeweave::demand(op, synthetic_gpu(4));
  CHECK(d.ctas == 11);
  CHECK(d.busiest_sm_ctas == 3);
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(41060.0 / 1024).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::dram) == Approx(3 * (41060.0 / 11) / 256).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(41060.0 / 4096).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::fma) == Approx(1e5 / (128 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx(3 * (1e5 / 11) / 128).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::xu) == Approx(1000.0 / (16 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::xu) == Approx(3 * (1000.0 / 11) / 16).epsilon(1e-9));
  // 256-thread CTAs: floor(2048/256) = 8 resident.
  CHECK(d.resident_ctas_per_sm == 8);

  // Exactly one CTA's worth of bytes, no compute.
  pipeweave::Elementwise copy;
  copy.bytes = 4096;
  const auto c = pipeweave::demand(copy, synthetic_gpu(4));
  CHECK(c.ctas == 1);
  CHECK(at(c.gpu_cycles, Pipe::fma) == 0);
  CHECK(at(c.sm_cycles, Pipe::dram) == Approx(4096.0 / 256).epsilon(1e-9));
}

TEST_CASE("collective demand: all-reduce picks one-shot for small and ring for large messages",
          "[demand][collective]") {
  // 4 ranks; link 100 B/clk, 1000 clocks a step.
  //   ring:     2*(4-1)/4 = 1.5 buffers in 2*(4-1) = 6 steps: 1.5*B/100 + 6000
  //   one-shot: (4-1) = 3 buffers in 1 step:                   3*B/100 + 1000
  // The ring wins once 1.5*B/100 > 5000, i.e. B > 333333 B.
  const auto gpu = synthetic_gpu(4);

  SECTION("64 KiB: one-shot") {
    const double bytes = 65536;
    const auto d = pipeweave::demand(make_collective(CollectiveKind::all_reduce, bytes, 4), gpu);
    const double one_shot = 3 * bytes / 100 + 1000;  // 2966.08, against the ring's 6983.04
    CHECK(at(d.gpu_cycles, Pipe::link) == Approx(one_shot).epsilon(1e-9));
    CHECK(at(d.sm_cycles, Pipe::link) == Approx(one_shot).epsilon(1e-9));
    // NCCL-style channels: min(16, 4 SMs) = 4 CTAs, one per SM.
    CHECK(d.ctas == 4);
    CHECK(d.busiest_sm_ctas == 1);
    // One-shot reduces the 3 peers' buffers: 3*65536/2 bf16 elements, one add each.
    CHECK(at(d.gpu_cycles, Pipe::fma) == Approx(3 * bytes / 2 / (128 * 4)).epsilon(1e-9));
    CHECK(at(d.sm_cycles, Pipe::fma) == Approx(3 * bytes / 2 / 4 / 128).epsilon(1e-9));
    // DRAM: own input, own output, and the 3 buffers landing from peers.
    CHECK(at(d.gpu_cycles, Pipe::dram) == Approx((2 * bytes + 3 * bytes) / 1024).epsilon(1e-9));
    CHECK(at(d.gpu_cycles, Pipe::l2) == Approx((2 * bytes + 3 * bytes) / 4096).epsilon(1e-9));
    CHECK(d.bottleneck() == Pipe::link);
  }
  SECTION("16 MiB: ring") {
    const double bytes = 16.0 * 1024 * 1024;
    const auto d = pipeweave::demand(make_collective(CollectiveKind::all_reduce, bytes, 4), gpu);
    const double ring = 1.5 * bytes / 100 + 6000;  // 257658.24, against one-shot's 504316.48
    CHECK(at(d.gpu_cycles, Pipe::link) == Approx(ring).epsilon(1e-9));
    // The ring's reduce-scatter half adds (4-1)/4 of the buffer's elements.
    CHECK(at(d.gpu_cycles, Pipe::fma) == Approx(0.75 * bytes / 2 / (128 * 4)).epsilon(1e-9));
    CHECK(at(d.gpu_cycles, Pipe::dram) == Approx((2 * bytes + 1.5 * bytes) / 1024).epsilon(1e-9));
  }
  SECTION("either side of the crossover") {
    // 300000 B: one-shot 9000 + 1000 = 10000 < ring 4500 + 6000 = 10500.
    CHECK(at(pipeweave::demand(make_collective(CollectiveKind::all_reduce, 300000, 4), gpu).gpu_cycles, Pipe::link) ==
          Approx(10000).epsilon(1e-9));
    // 400000 B: ring 6000 + 6000 = 12000 < one-shot 12000 + 1000 = 13000.
    CHECK(at(pipeweave::demand(make_collective(CollectiveKind::all_reduce, 400000, 4), gpu).gpu_cycles, Pipe::link) ==
          Approx(12000).epsilon(1e-9));
  }
}

TEST_CASE("collective demand: gather, scatter and all-to-all", "[demand][collective]") {
  const auto gpu = synthetic_gpu(4);
  const double bytes = 1 << 20;  // 1 MiB
  // All-gather over 8 ranks: 7/8 of the output arrives over the link in 7 steps; no reduction.
  const auto gather = pipeweave::demand(make_collective(CollectiveKind::all_gather, bytes, 8), gpu);
  CHECK(at(gather.gpu_cycles, Pipe::link) == Approx(7.0 / 8 * bytes / 100 + 7 * 1000).epsilon(1e-9));
  CHECK(at(gather.gpu_cycles, Pipe::fma) == 0);
  // Reduce-scatter: the same traffic, and an add per arriving bf16 element.
  const auto scatter = pipeweave::demand(make_collective(CollectiveKind::reduce_scatter, bytes, 8), gpu);
  CHECK(at(scatter.gpu_cycles, Pipe::link) == Approx(7.0 / 8 * bytes / 100 + 7 * 1000).epsilon(1e-9));
  CHECK(at(scatter.gpu_cycles, Pipe::fma) == Approx(7.0 / 8 * bytes / 2 / (128 * 4)).epsilon(1e-9));
  // All-to-all: 7/8 of the buffer leaves in one step.
  const auto a2a = pipeweave::demand(make_collective(CollectiveKind::all_to_all, bytes, 8), gpu);
  CHECK(at(a2a.gpu_cycles, Pipe::link) == Approx(7.0 / 8 * bytes / 100 + 1000).epsilon(1e-9));
  CHECK(at(a2a.sm_cycles, Pipe::link) == at(a2a.gpu_cycles, Pipe::link));
}

TEST_CASE("fused_moe demand: expected active experts and the two grouped GEMMs", "[demand][fused_moe]") {
  const auto gpu = synthetic_gpu(4);
  // 4 tokens, 8 experts, top-2, hidden 256, intermediate 128, bf16.
  // Expected experts touched: 8*(1 - (1 - 2/8)^4) = 8*(1 - 0.31640625) = 5.46875.
  // Routed rows 4*2 = 8: 8/5.46875 = 1.4629 rows an expert, one row block each.
  // tokens (4) <= experts (8): vLLM's default, blocks 16 x 32 x 64, 3 stages, GROUP_SIZE_M 1, 4 warps.
  const auto moe = make_moe(4, 8, 2, 256, 128);
  const auto config = pipeweave::default_config(moe, gpu);
  CHECK(config == pipeweave::FusedMoeConfig{.block_m = 16, .block_n = 32, .block_k = 64, .stages = 3, .group_m = 1, .warps = 4});
  CHECK(pipeweave::default_config(make_moe(9, 8, 2, 256, 128), gpu) ==
        pipeweave::FusedMoeConfig{.block_m = 64, .block_n = 64, .block_k = 32, .stages = 3, .group_m = 8, .warps = 4});
  const double active = 8 * (1 - std::pow(0.75, 4));
  REQUIRE(active == Approx(5.46875).epsilon(1e-12));

  const auto d = pipeweave::demand(moe, gpu);
  CHECK(d.config_defaulted);
  // The grid is sized for the most padded rows: 8 routed rows + 8 experts x 15 = 128, 8 row blocks,
  // x ceil(256/32) = 8 column blocks in each launch (gate_up n = 256, down n = 256): 128 CTAs,
  // of which active * 8 = 43.75 a launch hold rows.
  CHECK(d.ctas == Approx(2 * 8 * 8).epsilon(1e-12));
  // Busiest SM: ceil(43.75/4) = 11 working CTAs of each launch.
  CHECK(d.busiest_sm_ctas == 22);
  // Tensor per CTA: 2*16*32*256 (gate_up) and 2*16*32*128 (down).
  const double gate_up_cta = 2.0 * 16 * 32 * 256, down_cta = 2.0 * 16 * 32 * 128;
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(active * 8 * (gate_up_cta + down_cta) / (1024.0 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(11 * (gate_up_cta + down_cta) / 1024.0).epsilon(1e-9));
  // DRAM: each touched expert's weights once; gate_up reads the 4 tokens' activations, down the 8
  // routed rows; each writes 8 bf16 rows.
  const double dram_gate_up = active * 256 * 256 * 2 + 4 * 256 * 2 + 8 * 256 * 2;
  const double dram_down = active * 256 * 128 * 2 + 8 * 128 * 2 + 8 * 256 * 2;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx((dram_gate_up + dram_down) / 1024).epsilon(1e-9));
  // Resident: 128 threads -> 16; smem 3*(16+32)*64*2 = 18432 B -> 12; registers 16*32/128 + 64 = 68 a
  // thread -> floor(65536 / (68*128)) = 7.
  CHECK(d.resident_ctas_per_sm == 7);
  // The kernel's shape: K steps of each launch (256/64 + 128/64), 3 stages, no warpgroup MMA for
  // a 16-row block; the tile's real share: each launch computes active * 8 tiles of 16 x 32 x K for
  // 8 real rows; the wave: 43.75 CTAs of a launch over 7 x 4 slots, in two waves.
  CHECK(d.serial_steps == 4 + 2);
  CHECK(d.pipeline_stages == 3);
  CHECK(d.warpgroup_mma_m == 0);
  CHECK(d.tile_fill == Approx(8.0 / (active * 16)).epsilon(1e-9));
  CHECK(d.wave_fill == Approx(43.75 / 56).epsilon(1e-9));

  // The two launches add up pipe by pipe.
  auto sum = pipeweave::detail::moe_gemm(active, active, 8, 8, 4, 256, 256, config, DType::bf16, gpu);
  sum += pipeweave::detail::moe_gemm(active, active, 8, 8, 8, 256, 128, config, DType::bf16, gpu);
  for (std::size_t i = 0; i < pipeweave::kPipeCount; ++i) {
    CHECK(d.gpu_cycles[i] == Approx(sum.gpu_cycles[i]).epsilon(1e-9));
    CHECK(d.sm_cycles[i] == Approx(sum.sm_cycles[i]).epsilon(1e-9));
  }
}

TEST_CASE("fused_moe demand: active experts at the extremes", "[demand][fused_moe]") {
  const auto gpu = synthetic_gpu(4);
  // top_k == experts: every expert is touched, (1 - 8/8)^T = 0. 1000 tokens > 8 experts:
  // blocks 64 x 64 x 32. Rows an expert: 1000*8/8 = 1000 -> ceil(1000/64) = 16 row blocks, 128 in all;
  // the grid: ceil((8000 + 8*63) / 64) = 133 row blocks, x 256/64 = 4 column blocks in each launch.
  const auto all = pipeweave::demand(make_moe(1000, 8, 8, 256, 128), gpu);
  CHECK(all.ctas == Approx(2 * 133 * 4).epsilon(1e-12));
  CHECK(all.busiest_sm_ctas == 2 * 128);  // the 512 working CTAs of a launch over 4 SMs
  // One token, top-1 of 8: exactly one expert, 1 row: 8*(1 - 7/8) = 1; fewer routed rows than
  // experts, so the grid holds one row block per row: 1.
  const auto one = pipeweave::demand(make_moe(1, 8, 1, 256, 128), gpu);
  // 1 expert * 1 row block * ceil(256/32) = 8 CTAs in each launch.
  CHECK(one.ctas == Approx(16).epsilon(1e-12));
  // A given config replaces the default.
  auto configured = make_moe(1, 8, 1, 256, 128);
  configured.config = pipeweave::FusedMoeConfig{16, 64, 64, 2};
  const auto c = pipeweave::demand(configured, gpu);
  CHECK_FALSE(c.config_defaulted);
  CHECK(c.ctas == Approx(2 * 4).epsilon(1e-12));  // ceil(256/64) = 4 column blocks in each launch
  // More warps: more threads and fewer registers a thread hold the same tile.
  configured.config = pipeweave::FusedMoeConfig{.block_m = 128, .block_n = 128, .block_k = 64, .stages = 3, .warps = 8};
  CHECK(pipeweave::demand(configured, gpu).resident_ctas_per_sm == 2);  // 256 threads x 128 regs; smem 3*256*64*2 = 96 KiB
  // Many experts, few routed rows: nearly every row touches its own expert. 512 tokens x top-2
  // over 65536 experts: 65536 (1 - (1 - 2/65536)^512) = 1016.1 experts (1 - 2/65536 kept its
  // digits; written as a plain power it read as no expert touched, at 10^17 experts); the grid
  // holds one row block per routed row, 1024.
  const auto many = pipeweave::demand(make_moe(512, 65536, 2, 256, 128), gpu);
  const double active = 65536 * -std::expm1(512 * std::log1p(-2.0 / 65536));
  CHECK(active == Approx(1016.1).margin(0.1));
  CHECK(many.ctas == Approx(2 * 1024 * 8).epsilon(1e-9));  // 256/32 = 8 column blocks each
  CHECK(many.busiest_sm_ctas == 2 * std::ceil(active * 8 / 4));
  CHECK(many.bound_cycles() > 0);
  CHECK_THROWS_WITH(pipeweave::Kernel(make_moe(512, 100000, 2, 256, 128)), Catch::Contains("fused_moe.experts must be at most 65536"));
}

namespace {
// Each expert's chance of being among the top_k drawn one after another without replacement, each
// draw in proportion to the weights of the experts left: every ordered draw enumerated.
std::vector<double> drawn_chances(const std::vector<double>& weights, int top_k) {
  std::vector<double> chance(weights.size(), 0.0);
  std::vector<bool> taken(weights.size(), false);
  const auto draw = [&](const auto& self, int left, double probability, double remaining) -> void {
    if (left == 0) return;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (taken[i]) continue;
      const double p = probability * weights[i] / remaining;
      chance[i] += p;
      taken[i] = true;
      self(self, left - 1, p, remaining - weights[i]);
      taken[i] = false;
    }
  };
  double total = 0;
  for (double w : weights) total += w;
  draw(draw, top_k, 1.0, total);
  return chance;
}
}  // namespace

TEST_CASE("fused_moe demand: skewed chances are those of drawing top_k without replacement", "[demand][fused_moe]") {
  // Against every ordered draw enumerated, small expert counts, skews from mild to steep.
  for (const int experts : {2, 3, 5, 7})
    for (int top_k = 1; top_k <= std::min(experts, 4); ++top_k)
      for (const double zipf : {0.3, 1.2, 4.0}) {
        std::vector<double> weights;
        for (int i = 0; i < experts; ++i) weights.push_back(std::pow(i + 1.0, -zipf));
        const std::vector<double> expected = drawn_chances(weights, top_k);
        const std::vector<double> chance = pipeweave::detail::successive_sampling_chances(experts, top_k, zipf);
        INFO(experts << " experts, top " << top_k << ", zipf " << zipf);
        REQUIRE(chance.size() == expected.size());
        for (std::size_t i = 0; i < chance.size(); ++i) CHECK(chance[i] == Approx(expected[i]).margin(1e-7));
      }
  // Larger layers: the chances add up to top_k, fall with popularity and stay within (0, 1];
  // past 2^16 experts x top_k (Rosen's approximation) too.
  // Many picks (the count of other keys below t turns over quickly: a finer step) and mild skews
  // past 2^17 experts x top_k, where the approximation's bracket must still hold the answer.
  for (const auto& [experts, top_k, zipf] : {std::tuple<int, int, double>{64, 8, 1.2}, {256, 8, 1.2}, {160, 6, 1.2},
                                             {512, 128, 0.01}, {256, 192, 1.0}, {8192, 16, 1.2}, {65536, 2, 4.0},
                                             {65536, 3, 0.1}, {65536, 3, 1e-6}, {131072 / 2 + 1, 4, 0.01}}) {
    const std::vector<double> chance = pipeweave::detail::successive_sampling_chances(experts, top_k, zipf);
    double sum = 0;
    for (double p : chance) sum += p;
    INFO(experts << " experts, top " << top_k << ", zipf " << zipf);
    CHECK(sum == Approx(top_k).epsilon(1e-6));
    // (Falling with popularity and at most 1, but for the rounding of chances within 1e-12 of 1.)
    CHECK(std::adjacent_find(chance.begin(), chance.end(), [](double a, double b) { return b > a + 1e-12; }) == chance.end());
    CHECK(chance.back() > 0);
    CHECK(chance.front() <= 1 + 1e-12);
  }
  // Remembered: the same list for the same routing.
  CHECK(pipeweave::detail::skewed_chances(64, 8, 1.2) == pipeweave::detail::skewed_chances(64, 8, 1.2));
}

TEST_CASE("fused_moe demand: skewed routing touches fewer experts and pads differently", "[demand][fused_moe]") {
  const auto gpu = synthetic_gpu(4);
  // 4 experts, top-1, Zipf exponent 1: popularity 1, 1/2, 1/3, 1/4 (sum 25/12), so a token picks
  // expert i with 12/25 x popularity: 0.48, 0.24, 0.16, 0.12. Two tokens touch expert i with
  // 1 - (1 - p)^2: 0.7296, 0.4224, 0.2944, 0.2256 -> 1.672 experts (uniform: 4 x 0.4375 = 1.75).
  auto skewed = make_moe(2, 4, 1, 256, 128);
  skewed.zipf = 1;
  const std::vector<double> chance = {0.48, 0.24, 0.16, 0.12};
  double active = 0;
  for (double p : chance) active += 1 - (1 - p) * (1 - p);
  REQUIRE(active == Approx(1.672).epsilon(1e-12));
  const pipeweave::FusedMoeConfig config{.block_m = 16, .block_n = 32, .block_k = 64};
  auto load = pipeweave::detail::expert_load(skewed, 16);
  CHECK(load.active == Approx(active).epsilon(1e-12));
  CHECK(load.blocks == Approx(active).epsilon(1e-12));  // each touched expert's rows fit one block
  // The DRAM the two launches read: the touched experts' weights, the same activations and outputs.
  skewed.config = config;
  auto uniform = skewed;
  uniform.zipf = 0;
  const double uniform_active = 4 * (1 - 0.75 * 0.75);
  CHECK(pipeweave::detail::expert_load(uniform, 16).active == Approx(uniform_active).epsilon(1e-12));
  const double weight_bytes = (256.0 * 256 + 256.0 * 128) * 2;
  CHECK(at(pipeweave::demand(uniform, gpu).gpu_cycles, Pipe::dram) - at(pipeweave::demand(skewed, gpu).gpu_cycles, Pipe::dram) ==
        Approx((uniform_active - active) * weight_bytes / 1024).epsilon(1e-9));
  // A steep skew: top-2 of 4 at exponent 4 (popularity 1, 1/16, 1/81, 1/256). The first draw
  // takes expert 0 with 1 / 1.079 = 0.927, so it is among the two with about 0.998, not always.
  auto steep = make_moe(1000, 4, 2, 256, 128);
  steep.zipf = 4;
  const std::vector<double> steep_chance = drawn_chances({1, 1.0 / 16, 1.0 / 81, 1.0 / 256}, 2);
  CHECK(steep_chance[0] == Approx(0.998).margin(5e-4));
  double steep_active = 0, steep_blocks = 0;
  for (double p : steep_chance) {
    const double touched = 1 - std::pow(1 - p, 1000);
    steep_active += touched;
    steep_blocks += touched * std::ceil(1000 * p / touched / 64);
  }
  load = pipeweave::detail::expert_load(steep, 64);
  CHECK(load.active == Approx(steep_active).epsilon(1e-7));
  CHECK(load.blocks == Approx(steep_blocks).epsilon(1e-7));
  // Many experts, most of them picked, steep skew: the chances still add up to top_k, each
  // within [0, 1] (the least popular experts' popularity is far below the sum's rounding).
  auto wide = make_moe(100, 65536, 20000, 256, 128);
  wide.zipf = 4;
  load = pipeweave::detail::expert_load(wide, 16);
  CHECK(load.active < 65536);
  CHECK(load.active >= 20000);  // one token alone touches top_k experts
  // The rows the blocks hold add up to the routed rows (each touched expert's expected rows,
  // rounded up to whole blocks): at least 100 x 20000 / 16 blocks of rows in all.
  CHECK(load.blocks >= 100.0 * 20000 / 16);
  CHECK(load.blocks <= 100.0 * 20000 / 16 + 65536);
  // One token: top_k experts either way.
  auto single = make_moe(1, 64, 6, 256, 128);
  single.zipf = 1.2;
  CHECK(pipeweave::detail::expert_load(single, 16).active == Approx(6).epsilon(1e-12));
  // The exponent is checked.
  for (double bad : {-0.5, 4.5, std::nan("")}) {
    single.zipf = bad;
    CHECK_THROWS_WITH(pipeweave::Kernel(single), Catch::Contains("fused_moe.zipf"));
  }
}

TEST_CASE("fused_moe demand: expert parallelism computes the rank's share and writes zeros for the rest",
          "[demand][fused_moe]") {
  const auto gpu = synthetic_gpu(4);  // DRAM: 1024 bytes a cycle over the chip
  auto whole = make_moe(4096, 8, 2, 256, 128);
  whole.config = pipeweave::FusedMoeConfig{.block_m = 64, .block_n = 32, .block_k = 64};
  auto rank = whole;
  rank.expert_parallel = 4;  // this rank: 2 of the 8 experts
  const auto all = pipeweave::demand(whole, gpu), share = pipeweave::demand(rank, gpu);
  // 4,096 tokens touch every expert: the rank computes a quarter of the blocks.
  CHECK(at(share.gpu_cycles, Pipe::tensor) == Approx(at(all.gpu_cycles, Pipe::tensor) / 4).epsilon(1e-12));
  // The launch is the same grid (every routed row sorted and padded on every rank).
  CHECK(share.ctas == all.ctas);
  // DRAM: its two experts' weights, the tokens that picked one of them (each token's two distinct
  // experts miss both of the rank's with 6/8 x 5/7), its rows' outputs, and zeros written to the
  // other ranks' rows of both outputs (2 x 128 + 256 wide).
  const double rows = 8192, local_rows = 2048, local_tokens = 4096 * (1 - 6.0 / 8 * 5.0 / 7);
  const double gate_up = 2 * 256.0 * 256 * 2 + local_tokens * 256 * 2 + local_rows * 256 * 2;
  const double down = 2 * 256.0 * 128 * 2 + local_rows * 128 * 2 + local_rows * 256 * 2;
  const double zeros = (rows - local_rows) * (2 * 128 + 256) * 2;
  CHECK(at(share.gpu_cycles, Pipe::dram) == Approx((gate_up + down + zeros) / 1024).epsilon(1e-9));
  // One rank is the layer as it was before expert parallelism, to the last bit: figures of the
  // build before it (75a59b1) for three H100 layers, uniform and skewed, defaulted and configured
  // (the skewed layer's since its chances are successive sampling's, 2026-11-28).
  const auto& h100 = pipeweave::find_gpu("H100-SXM");
  pipeweave::FusedMoe before[3] = {
      {.tokens = 512, .experts = 64, .top_k = 6, .hidden = 2048, .intermediate = 1408},
      {.tokens = 37, .experts = 8, .top_k = 2, .hidden = 4096, .intermediate = 3584, .dtype = DType::fp8_e4m3, .zipf = 1.2},
      {.tokens = 4096, .experts = 128, .top_k = 8, .hidden = 2048, .intermediate = 768}};
  before[2].config = pipeweave::FusedMoeConfig{.block_m = 128, .block_n = 128, .block_k = 64, .stages = 4, .group_m = 16, .warps = 8};
  const pipeweave::PipeArray gpu_cycles[3] = {
      {0x1.004a8ccdf4683p+17, 0x1.2ece40b2b97b3p+10, 0, 0x1.2ca19f5b12198p+19, 0x1.e8286583a26e9p+18, 0x1.006fd9d1c99aep+18, 0},
      {0x1.42d61efd6d868p+15, 0x1.5b4be36ddfcc3p+8, 0, 0x1.6fc40af349a78p+17, 0x1.33368cde5a16dp+17, 0x1.43487febe5bfp+16, 0},
      {0x1.1797253dc4cecp+19, 0x1.be3d6cd17d215p+12, 0, 0x1.8b70eadddd3adp+19, 0x1.1246cd28dbdcp+20, 0x1.17bfd6593906p+19, 0}};
  const pipeweave::PipeArray sm_cycles[3] = {
      {0x1.084ce134640b7p+17, 0x1.3844b2b84f47p+10, 0, 0x1.3606ac55eaaa4p+19, 0x1.f769a8afbf82p+18, 0x1.087358a057e7ap+18, 0},
      {0x1.501bb935d1b6cp+15, 0x1.6992e9e2e2882p+8, 0, 0x1.7ee27df6208d8p+17, 0x1.3fd7bab6a07dbp+17, 0x1.5092cde3589b3p+16, 0},
      {0x1.2053de67b2f54p+19, 0x1.cc2f5838090a6p+12, 0, 0x1.97cc7234cc24ap+19, 0x1.1ad9039222baep+20, 0x1.207dd50c02ce3p+19, 0}};
  const double ctas[3] = {0x1.07ap+13, 0x1.b8p+10, 0x1.4f2p+13}, busiest[3] = {0x1.3p+5, 0x1.6p+3, 0x1.cp+5};
  for (int i = 0; i < 3; ++i) {
    INFO("layer " << i);
    const auto d = pipeweave::demand(before[i], h100);
    CHECK(d.gpu_cycles == gpu_cycles[i]);
    CHECK(d.sm_cycles == sm_cycles[i]);
    CHECK(d.ctas == ctas[i]);
    CHECK(d.busiest_sm_ctas == busiest[i]);
  }
  // vLLM's default config counts the rank's experts (its weight tensor): 16 tokens over 64 experts
  // take the small blocks, over the 8 of one rank of 8 the large ones.
  auto few = make_moe(16, 64, 6, 2048, 1408);
  CHECK(pipeweave::default_config(few, gpu).block_m == 16);
  few.expert_parallel = 8;
  CHECK(pipeweave::default_config(few, gpu).block_m == 64);
  // The ranks must split the experts evenly.
  few.expert_parallel = 3;
  CHECK_THROWS_WITH(pipeweave::Kernel(few), Catch::Contains("fused_moe.ep must divide fused_moe.experts (64) into equal shares, got 3"));
  few.expert_parallel = 0;
  CHECK_THROWS_WITH(pipeweave::Kernel(few), Catch::Contains("fused_moe.ep"));
}

TEST_CASE("fused_moe configs: checked knobs and the tuning grid", "[demand][fused_moe]") {
  const auto gpu = synthetic_gpu(4);
  auto moe = make_moe(64, 8, 2, 4096, 1024);
  moe.config = pipeweave::FusedMoeConfig{.block_m = 48, .block_n = 64, .block_k = 64};
  CHECK_THROWS_WITH(pipeweave::Kernel(moe), Catch::Contains("fused_moe.block_m must be a power of two within [16, 256], got 48"));
  moe.config = pipeweave::FusedMoeConfig{.block_m = 64, .block_n = 64, .block_k = 64, .warps = 3};
  CHECK_THROWS_WITH(pipeweave::Kernel(moe), Catch::Contains("fused_moe.warps"));
  moe.config = pipeweave::FusedMoeConfig{.block_m = 64, .block_n = 64, .block_k = 64, .group_m = 0};
  CHECK_THROWS_WITH(pipeweave::Kernel(moe), Catch::Contains("fused_moe.group_m"));
  // vLLM's grid: 5 x 4 x 3 x 4 x 2 x 4 = 1920, less what does not fit in 228 KiB - 8 KiB.
  const auto candidates = pipeweave::fused_moe_candidates(moe, gpu);
  CHECK(candidates.size() > 1000);
  CHECK(candidates.size() < 1920 + 1);
  for (const auto& config : candidates) CHECK(config.stages * (config.block_m + config.block_n) * config.block_k * 2 <= 228 * 1024 - 8192);
  // vLLM's default (BLOCK_SIZE_K 32 and GROUP_SIZE_M 8 lie off the grid) is among them, last, so
  // a ranking can only match or beat it as predicted.
  CHECK(candidates.back() == pipeweave::default_config(moe, gpu));
  CHECK(std::count(candidates.begin(), candidates.end(), pipeweave::default_config(moe, gpu)) == 1);
}

TEST_CASE("demand: bound_cycles is the largest hard limit and bottleneck names it", "[demand]") {
  // pipes.hpp documents which figures are hard limits: tensor, fma, xu and smem on the
  // busiest SM; DRAM and link over the whole GPU; L2 in no bound.
  pipeweave::Demand d;
  for (std::size_t i = 0; i < pipeweave::kPipeCount; ++i) {
    d.gpu_cycles[i] = 10.0 * static_cast<double>(i + 1);  // tensor 10, fma 20, xu 30, dram 40, l2 50, smem 60, link 70
    d.sm_cycles[i] = 5.0 * static_cast<double>(i + 1);    // tensor 5, fma 10, xu 15, dram 20, l2 25, smem 30, link 35
  }
  // Per pipe: tensor sm 5, fma sm 10, xu sm 15, dram gpu 40, l2 none, smem sm 30, link gpu 70.
  CHECK(d.bound_cycles(Pipe::tensor) == 5);
  CHECK(d.bound_cycles(Pipe::fma) == 10);
  CHECK(d.bound_cycles(Pipe::xu) == 15);
  CHECK(d.bound_cycles(Pipe::dram) == 40);
  CHECK(d.bound_cycles(Pipe::l2) == 0);
  CHECK(d.bound_cycles(Pipe::smem) == 30);
  CHECK(d.bound_cycles(Pipe::link) == 70);
  CHECK(d.bound_cycles() == 70);
  CHECK(d.bottleneck() == Pipe::link);

  at(d.sm_cycles, Pipe::xu) = 500;  // a per-SM pipe on the busiest SM: binding
  CHECK(d.bound_cycles() == 500);
  CHECK(d.bottleneck() == Pipe::xu);
  at(d.gpu_cycles, Pipe::l2) = 10000;  // L2 is in no bound
  at(d.sm_cycles, Pipe::l2) = 10000;
  at(d.sm_cycles, Pipe::dram) = 900;    // one SM's DRAM share is no bound
  at(d.gpu_cycles, Pipe::tensor) = 800;  // the whole-GPU spread of an SM-local pipe is no bound
  CHECK(d.bound_cycles() == 500);
  CHECK(d.bottleneck() == Pipe::xu);
  at(d.gpu_cycles, Pipe::dram) = 800;  // chip-wide DRAM over the whole GPU: binding
  CHECK(d.bound_cycles() == 800);
  CHECK(d.bottleneck() == Pipe::dram);
  // Ties go to the first pipe in kAllPipes order.
  at(d.sm_cycles, Pipe::tensor) = 800;
  CHECK(d.bottleneck() == Pipe::tensor);
  // An empty demand is bound by nothing.
  CHECK(pipeweave::Demand{}.bound_cycles() == 0);

  // On real kernels: the bound is the largest of the hard-limit figures, and the bottleneck carries it.
  const auto gpu = synthetic_gpu(4);
  for (const pipeweave::Kernel& kernel :
       {pipeweave::Kernel(make_rmsnorm(10, 4096, true)), pipeweave::Kernel(make_moe(4, 8, 2, 256, 128)),
        pipeweave::Kernel(make_collective(CollectiveKind::all_reduce, 65536, 4)),
        pipeweave::Kernel(pipeweave::Attention::prefill(2, 300, 4, 2, 64))}) {
    const auto demand = pipeweave::compute_demand(kernel, gpu);
    const double largest = std::max({at(demand.sm_cycles, Pipe::tensor), at(demand.sm_cycles, Pipe::fma),
                                     at(demand.sm_cycles, Pipe::xu), at(demand.sm_cycles, Pipe::smem),
                                     at(demand.gpu_cycles, Pipe::dram), at(demand.gpu_cycles, Pipe::link)});
    CHECK(demand.bound_cycles() == largest);
    CHECK(demand.bound_cycles(demand.bottleneck()) == largest);
  }
  // The fused-residual RMSNorm above: busiest-SM dram (3*(10*8192*4 + 8192)/10/256 = 393.6) is
  // above its busiest-SM fma (3*4096*4/128 = 384), but only the latter is a hard limit.
  const auto norm = pipeweave::demand(make_rmsnorm(10, 4096, true), gpu);
  CHECK(at(norm.sm_cycles, Pipe::dram) == Approx(3 * (10 * 8192.0 * 4 + 8192) / 10 / 256).epsilon(1e-9));
  CHECK(norm.bound_cycles() == Approx(3 * 4096.0 * 4 / 128).epsilon(1e-9));
  CHECK(norm.bottleneck() == Pipe::fma);
}

TEST_CASE("demand: sequential kernels add", "[demand]") {
  const auto gpu = synthetic_gpu(4);
  const auto a = pipeweave::demand(make_rmsnorm(10, 4096, false), gpu);  // 10 CTAs, 2 resident
  pipeweave::Elementwise ew;
  ew.bytes = 10 * 4096.0 + 100;  // 11 CTAs, 8 resident
  ew.flops = 1e5;
  auto b = pipeweave::demand(ew, gpu);
  b.config_defaulted = true;
  b.tile_fill = 0.5, b.wave_fill = 0.25, b.wave_operand_bytes_per_l2 = 3;  // as if tiled, to see them combine
  auto sum = a;
  sum += b;
  for (std::size_t i = 0; i < pipeweave::kPipeCount; ++i) {
    CHECK(sum.gpu_cycles[i] == Approx(a.gpu_cycles[i] + b.gpu_cycles[i]).epsilon(1e-9));
    CHECK(sum.sm_cycles[i] == Approx(a.sm_cycles[i] + b.sm_cycles[i]).epsilon(1e-9));
  }
  CHECK(sum.ctas == 10 + 11);
  CHECK(sum.busiest_sm_ctas == 3 + 3);
  CHECK(sum.resident_ctas_per_sm == 8);  // the larger of the two
  CHECK(sum.kernels == 2);                // one launch each
  CHECK(sum.serial_steps == a.serial_steps + b.serial_steps);
  CHECK(sum.config_defaulted);
  // The most wasteful of the two and the larger wave: the worse figures count.
  CHECK(sum.tile_fill == 0.5);
  CHECK(sum.wave_fill == 0.25);
  CHECK(sum.wave_operand_bytes_per_l2 == 3);
  auto other_way = a;
  other_way += pipeweave::demand(ew, gpu);
  CHECK_FALSE(other_way.config_defaulted);
}

TEST_CASE("features: log1p of the demand in kFeatureNames order", "[demand]") {
  using pipeweave::kFeatureCount;
  using pipeweave::kFeatureNames;
  using pipeweave::kPipeCount;
  STATIC_REQUIRE(kFeatureCount == 2 * kPipeCount + 16);
  // The names: each pipe's whole-GPU cycles, then each pipe's busiest-SM cycles, then the mapping.
  for (std::size_t i = 0; i < kPipeCount; ++i) {
    const std::string pipe(pipeweave::to_string(pipeweave::kAllPipes[i]));
    CHECK(std::string(kFeatureNames[i]) == pipe + "_gpu_cycles");
    CHECK(std::string(kFeatureNames[kPipeCount + i]) == pipe + "_sm_cycles");
  }
  CHECK(kFeatureNames[2 * kPipeCount + 0] == "ctas");
  CHECK(kFeatureNames[2 * kPipeCount + 1] == "busiest_sm_ctas");
  CHECK(kFeatureNames[2 * kPipeCount + 2] == "resident_ctas_per_sm");
  CHECK(kFeatureNames[2 * kPipeCount + 3] == "waves");
  CHECK(kFeatureNames[2 * kPipeCount + 4] == "serial_steps");
  CHECK(kFeatureNames[2 * kPipeCount + 5] == "pipeline_stages");
  CHECK(kFeatureNames[2 * kPipeCount + 6] == "cluster_ctas");
  CHECK(kFeatureNames[2 * kPipeCount + 7] == "kernels");
  CHECK(kFeatureNames[2 * kPipeCount + 8] == "warpgroup_mma_m");
  CHECK(kFeatureNames[2 * kPipeCount + 9] == "warpgroup_mma_n");
  CHECK(kFeatureNames[2 * kPipeCount + 10] == "tiles_in_flight");
  CHECK(kFeatureNames[2 * kPipeCount + 11] == "swap_ab");
  CHECK(kFeatureNames[2 * kPipeCount + 12] == "raster_along_m");
  CHECK(kFeatureNames[2 * kPipeCount + 13] == "tile_fill");
  CHECK(kFeatureNames[2 * kPipeCount + 14] == "wave_fill");
  CHECK(kFeatureNames[2 * kPipeCount + 15] == "wave_operand_bytes_per_l2");

  const auto gpu = synthetic_gpu(4);
  for (const pipeweave::Kernel& kernel :
       {pipeweave::Kernel(make_rmsnorm(10, 4096, false)), pipeweave::Kernel(make_moe(4, 8, 2, 256, 128)),
        pipeweave::Kernel(make_collective(CollectiveKind::all_reduce, 65536, 4)),
        pipeweave::Kernel(pipeweave::Attention::decode(3, 1000, 8, 2, 128))}) {
    const auto d = pipeweave::compute_demand(kernel, gpu);
    const auto f = pipeweave::features(d, gpu);
    REQUIRE(f.size() == kFeatureCount);
    for (float value : f) CHECK(std::isfinite(value));
    for (std::size_t i = 0; i < kPipeCount; ++i) {
      CHECK(f[i] == Approx(std::log1p(d.gpu_cycles[i])).epsilon(1e-6));
      CHECK(f[kPipeCount + i] == Approx(std::log1p(d.sm_cycles[i])).epsilon(1e-6));
    }
    CHECK(f[2 * kPipeCount + 0] == Approx(std::log1p(d.ctas)).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 1] == Approx(std::log1p(d.busiest_sm_ctas)).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 2] == Approx(std::log1p(d.resident_ctas_per_sm)).epsilon(1e-6));
    // waves: CTAs over the CTA slots of the whole chip (resident per SM * 4 SMs).
    CHECK(f[2 * kPipeCount + 3] == Approx(std::log1p(d.ctas / (d.resident_ctas_per_sm * 4))).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 4] == Approx(std::log1p(d.serial_steps)).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 5] == Approx(std::log1p(d.pipeline_stages)).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 6] == Approx(std::log1p(d.cluster_ctas)).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 7] == Approx(std::log1p(d.kernels)).epsilon(1e-6));
    // None of these runs Hopper warpgroup MMAs: no MMA shape, one tile at a time.
    CHECK(f[2 * kPipeCount + 8] == 0);
    CHECK(f[2 * kPipeCount + 9] == 0);
    CHECK(f[2 * kPipeCount + 10] == 1);
    CHECK(f[2 * kPipeCount + 11] == 0);
    // Only the GEMM's and the fused MoE's tiles say how full they and their waves are: the
    // others report no waste.
    CHECK(f[2 * kPipeCount + 13] == Approx(d.tile_fill).epsilon(1e-6));
    CHECK(f[2 * kPipeCount + 14] == Approx(d.wave_fill).epsilon(1e-6));
    if (!kernel.get_if<pipeweave::FusedMoe>()) CHECK((d.tile_fill == 1 && d.wave_fill == 1));
    CHECK(f[2 * kPipeCount + 15] == 0);
  }

  // A hand-made demand: 10 CTAs, 2 resident on 4 SMs -> 10/8 waves.
  pipeweave::Demand d;
  at(d.gpu_cycles, Pipe::tensor) = 1000;
  at(d.sm_cycles, Pipe::link) = 3;
  d.ctas = 10;
  d.busiest_sm_ctas = 3;
  d.resident_ctas_per_sm = 2;
  d.tile_fill = 0.75, d.wave_fill = 0.625, d.wave_operand_bytes_per_l2 = 2;
  const auto f = pipeweave::features(d, gpu);
  CHECK(f[2 * kPipeCount + 13] == Approx(0.75));
  CHECK(f[2 * kPipeCount + 14] == Approx(0.625));
  CHECK(f[2 * kPipeCount + 15] == Approx(std::log1p(2.0)).epsilon(1e-6));
  CHECK(f[0] == Approx(std::log1p(1000.0)).epsilon(1e-6));
  CHECK(f[1] == 0);
  CHECK(f[2 * kPipeCount - 1] == Approx(std::log1p(3.0)).epsilon(1e-6));
  CHECK(f[2 * kPipeCount + 3] == Approx(std::log1p(10.0 / 8)).epsilon(1e-6));
}

TEST_CASE("compute_demand dispatches to each family's model", "[demand]") {
  const auto gpu = synthetic_gpu(4);
  const auto norm = make_rmsnorm(10, 4096, false);
  CHECK(pipeweave::compute_demand(norm, gpu).gpu_cycles == pipeweave::demand(norm, gpu).gpu_cycles);
  pipeweave::SiluMul silu;
  silu.tokens = 6;
  silu.dim = 2048;
  CHECK(pipeweave::compute_demand(silu, gpu).sm_cycles == pipeweave::demand(silu, gpu).sm_cycles);
  const auto collective = make_collective(CollectiveKind::all_reduce, 65536, 4);
  CHECK(pipeweave::compute_demand(collective, gpu).gpu_cycles == pipeweave::demand(collective, gpu).gpu_cycles);
  // The Ampere variant validates too (the fp8 rate of 0 means "no fp8 path").
  CHECK_NOTHROW(synthetic_gpu(4).validate());
  CHECK_NOTHROW(synthetic_gpu_cc80(5).validate());
}

TEST_CASE("demand: silu_mul keeps min(dim, 1024) threads at any token count", "[demand]") {
  // vLLM's act_and_mul launches min(d, 1024) threads whatever the token count (unlike the
  // norms, which drop to 256 threads from 256 tokens on): 2048 threads an SM hold 2 such CTAs.
  pipeweave::SiluMul many;
  many.tokens = 300;
  many.dim = 2048;
  CHECK(pipeweave::demand(many, synthetic_gpu(4)).resident_ctas_per_sm == 2);
  pipeweave::SiluMul narrow;
  narrow.tokens = 300;
  narrow.dim = 512;  // 512 threads -> floor(2048 / 512) = 4 resident
  CHECK(pipeweave::demand(narrow, synthetic_gpu(4)).resident_ctas_per_sm == 4);
}

TEST_CASE("demand: rmsnorm's reduction counts whole warps", "[demand]") {
  // hidden 100 -> 100 threads = 4 warps (the last one partial): one float per warp written
  // and read, 2*4*4 = 32 B a CTA; busiest SM ceil(10/4) = 3 CTAs -> 96 B at 128 B/clk.
  pipeweave::RmsNorm norm;
  norm.tokens = 10;
  norm.hidden = 100;
  const auto d = pipeweave::demand(norm, synthetic_gpu(4));
  CHECK(at(d.sm_cycles, Pipe::smem) == Approx(3 * 32.0 / 128).epsilon(1e-9));
}

TEST_CASE("ExactDivisor: the quotient to the last bit, by a power of two's reciprocal or by division", "[demand]") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double subnormal = std::numeric_limits<double>::denorm_min() * 12345;
  for (const double divisor : {1.0, 2.0, 64.0, 128.0, 0.25, std::ldexp(1.0, 1023), std::ldexp(1.0, -1022), 3.0, 176.0, 96.0, 7.5,
                               std::numeric_limits<double>::denorm_min(), 0.0, std::numeric_limits<double>::infinity()}) {
    const pipeweave::detail::ExactDivisor divide(divisor);
    for (const double x : {0.0, 1.0, 127.0, 129.0, 1e300, subnormal, 1e-300, std::numeric_limits<double>::max()})
      CHECK(std::bit_cast<std::uint64_t>(divide(x)) == std::bit_cast<std::uint64_t>(x / divisor));
    for (int i = 0; i < 1000; ++i) {
      const double x = std::ldexp(unit(rng), static_cast<int>(rng() % 200) - 100);
      CHECK(std::bit_cast<std::uint64_t>(divide(x)) == std::bit_cast<std::uint64_t>(x / divisor));
    }
  }
}

TEST_CASE("a CTA that fits no SM names what runs short: threads, shared memory or registers", "[demand][fused_moe]") {
  // A spec's registers_per_sm of 1024 read as a thread and shared-memory misfit whose figures both fit.
  pipeweave::GpuSpec gpu = pipeweave::find_gpu("H100-SXM");
  gpu.registers_per_sm = 1024;
  CHECK_THROWS_WITH(pipeweave::compute_demand(pipeweave::Kernel(make_moe(16, 8, 2, 4096, 4096)), gpu),
                    Catch::Contains("fused_moe CTA does not fit on one SM of H100-SXM") && Catch::Contains("registers") &&
                        Catch::Contains("registers_per_sm 1024"));
}
