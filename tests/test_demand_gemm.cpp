// The GEMM demand model (include/pipeweave/ops/gemm.hpp, docs/method.md section 1) against
// figures worked out by hand on the synthetic GPU of demand_test_gpu.hpp:
// 4 SMs (unless stated), 1000 MHz, tensor bf16 1024 flops/clk/SM, fp8 2048, tf32 512,
// int8 2048, 128 FP32 lanes, 16 XU, 128 smem B/clk/SM, DRAM 1024 B/clk (256 per SM),
// L2 4096 B/clk (1024 per SM), 228 KiB smem, 2048 threads, 32 CTAs per SM.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "demand_test_gpu.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/ops/gemm.hpp"
#include "pipeweave/pipes.hpp"
#include "test_support.hpp"

using Catch::Detail::Approx;  // Catch2 v2: Catch::Approx names the vector matcher
using pipeweave::at;
using pipeweave::DType;
using pipeweave::Gemm;
using pipeweave::GemmConfig;
using pipeweave::GemmSchedule;
using pipeweave::Pipe;
using pipeweave_test::error_of;
using Catch::Matchers::Contains;
using pipeweave_test::synthetic_gpu;
using pipeweave_test::synthetic_gpu_cc80;

namespace {

GemmConfig make_config(int tile_m, int tile_n, int tile_k, int split_k = 1, int stages = 2, int cluster_m = 1,
                       int cluster_n = 1) {
  GemmConfig config;
  config.tile_m = tile_m;
  config.tile_n = tile_n;
  config.tile_k = tile_k;
  config.split_k = split_k;
  config.stages = stages;
  config.cluster_m = cluster_m;
  config.cluster_n = cluster_n;
  return config;
}

Gemm make_gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, std::optional<GemmConfig> config) {
  Gemm gemm;
  gemm.m = m;
  gemm.n = n;
  gemm.k = k;
  gemm.dtype = dtype;
  gemm.config = config;
  return gemm;
}

}  // namespace

TEST_CASE("gemm demand: explicit config with tile padding", "[demand][gemm]") {
  const auto gpu = synthetic_gpu(4);
  // m = 200 is not a multiple of tile_m = 128 and k = 1000 not of tile_k = 64:
  // Mp = ceil(200/128)*128 = 256, Np = 256, Kp = ceil(1000/64)*64 = 16*64 = 1024.
  // Tiles T = (256/128)*(256/128) = 4 on 4 SMs: one tile on the busiest SM.
  const Gemm gemm = make_gemm(200, 256, 1000, DType::bf16, make_config(128, 128, 64, 1, 2));
  const auto d = pipeweave::demand(gemm, gpu);

  CHECK(d.ctas == 4);
  CHECK(d.busiest_sm_ctas == 1);
  CHECK_FALSE(d.config_defaulted);

  // tensor, whole GPU: 2*Mp*Np*Kp over (1024 flops/clk/SM * 4 SMs).
  const double tensor_gpu = 2.0 * 256 * 256 * 1024 / (1024.0 * 4);
  // tensor, busiest SM: 2*tm*tn*Kp per tile, 1 tile, over 1024 flops/clk.
  const double tensor_sm = 2.0 * 128 * 128 * 1024 * 1 / 1024.0;
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(tensor_gpu).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(tensor_sm).epsilon(1e-9));

  // fma: the alpha/beta epilogue, 2 lane ops per output element of the (padded) tile.
  const double fma_per_cta = 128.0 * 128 * 2;
  CHECK(at(d.gpu_cycles, Pipe::fma) == Approx(4 * fma_per_cta / (128.0 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx(fma_per_cta / 128.0).epsilon(1e-9));

  // l2 per tile: operands (tm+tn)*Kp*2 bytes, plus the bf16 output tile tm*tn*2 bytes.
  const double l2_per_cta = (128.0 + 128) * 1024 * 2 + 128.0 * 128 * 2;
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(4 * l2_per_cta / 4096.0).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::l2) == Approx(l2_per_cta / 1024.0).epsilon(1e-9));

  // smem per tile: operands staged in and read by the MMA (2x), the output tile written and read (2x).
  const double smem_per_cta = 2 * (128.0 + 128) * 1024 * 2 + 2 * 128.0 * 128 * 2;
  CHECK(at(d.gpu_cycles, Pipe::smem) == Approx(4 * smem_per_cta / (128.0 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::smem) == Approx(smem_per_cta / 128.0).epsilon(1e-9));

  // dram: A, B and C once at their real (unpadded) sizes; the busiest SM gets 1/4 of it
  // against its quarter share of the chip's 1024 B/clk.
  const double dram_bytes = (200.0 * 1000 + 1000.0 * 256) * 2 + 200.0 * 256 * 2;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(dram_bytes / 1024.0).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::dram) == Approx(dram_bytes / 4 * 1 / 256.0).epsilon(1e-9));

  CHECK(at(d.gpu_cycles, Pipe::xu) == 0);
  CHECK(at(d.gpu_cycles, Pipe::link) == 0);

  // Resident CTAs: 384 threads -> floor(2048/384) = 5; 2 stages of (128+128)*64*2 = 32768 B
  // = 65536 B -> floor(233472/65536) = 3; 32 CTAs max. The smallest, 3.
  CHECK(d.resident_ctas_per_sm == 3);

  // The bound: busiest-SM tensor (32768; one tile per SM, so equal to the even spread) is the
  // largest hard limit (smem 8704, whole-GPU dram 990.6).
  CHECK(d.bound_cycles() == Approx(tensor_sm).epsilon(1e-9));
  CHECK(d.bottleneck() == Pipe::tensor);
}

TEST_CASE("gemm demand: wave quantisation puts two tiles on the busiest SM", "[demand][gemm]") {
  // m = 640: 5 tiles of 128x128 on 4 SMs, so ceil(5/4) = 2 tiles land on the busiest SM.
  const Gemm gemm = make_gemm(640, 128, 256, DType::bf16, make_config(128, 128, 64, 1, 2));
  const auto d = pipeweave::demand(gemm, synthetic_gpu(4));
  CHECK(d.ctas == 5);
  CHECK(d.busiest_sm_ctas == 2);
  const double tensor_gpu = 2.0 * 640 * 128 * 256 / (1024.0 * 4);  // 5 tiles' work spread over 4 SMs
  const double tensor_sm = 2.0 * 128 * 128 * 256 * 2 /*tiles on busiest SM*/ / 1024.0;
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(tensor_gpu).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(tensor_sm).epsilon(1e-9));
  // The busiest SM is 2 / (5/4) = 1.6 times the even spread.
  CHECK(at(d.sm_cycles, Pipe::tensor) / at(d.gpu_cycles, Pipe::tensor) == Approx(1.6).epsilon(1e-9));

  // On 5 SMs the same 5 tiles are one wave: one tile each, busiest SM = even spread.
  const auto five = pipeweave::demand(gemm, synthetic_gpu(5));
  CHECK(five.busiest_sm_ctas == 1);
  CHECK(at(five.sm_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 256 / 1024.0).epsilon(1e-9));
  CHECK(at(five.gpu_cycles, Pipe::tensor) == Approx(2.0 * 640 * 128 * 256 / (1024.0 * 5)).epsilon(1e-9));
}

TEST_CASE("gemm demand: split-K cuts K into slices and adds a reduction", "[demand][gemm]") {
  const auto gpu = synthetic_gpu(4);
  // One 128x128 output tile, K = 4096 cut into 4 slices of 1024 (a multiple of tile_k = 64):
  // 4 CTAs, one per SM.
  const Gemm split = make_gemm(128, 128, 4096, DType::bf16, make_config(128, 128, 64, 4, 2));
  const auto d = pipeweave::demand(split, gpu);
  CHECK(d.ctas == 4);
  CHECK(d.busiest_sm_ctas == 1);

  // Totals unchanged by the split: 2*128*128*4096 flops over 4 SMs; the busiest SM does one slice.
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 4096 / (1024.0 * 4)).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 1024 / 1024.0).epsilon(1e-9));

  // Epilogue of a split CTA: 3 lane ops per output (alpha/beta plus the split-K add).
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx(128.0 * 128 * 3 / 128.0).epsilon(1e-9));
  // Each slice writes fp32 partials (4 B per output) instead of the bf16 result.
  const double l2_per_cta = (128.0 + 128) * 1024 * 2 + 128.0 * 128 * 4;
  CHECK(at(d.sm_cycles, Pipe::l2) == Approx(l2_per_cta / 1024.0).epsilon(1e-9));
  // DRAM: A, B, C once, plus the fp32 workspace written and read back by each of the 4 slices.
  const double dram_bytes = (128.0 * 4096 + 4096.0 * 128) * 2 + 128.0 * 128 * 2 + 2 * 128.0 * 128 * 4 * 4;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(dram_bytes / 1024.0).epsilon(1e-9));

  // Without the split the single CTA carries all of K: 4 times the busiest SM's tensor cycles.
  const auto whole = pipeweave::demand(make_gemm(128, 128, 4096, DType::bf16, make_config(128, 128, 64, 1, 2)), gpu);
  CHECK(whole.ctas == 1);
  CHECK(at(whole.sm_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 4096 / 1024.0).epsilon(1e-9));
  CHECK(at(whole.gpu_cycles, Pipe::tensor) == Approx(at(d.gpu_cycles, Pipe::tensor)).epsilon(1e-9));

  // An uneven split pads every slice: K = 1000 in 3 slices is ceil(1000/3) = 334, rounded up
  // to tile_k = 64 -> 384 per slice, so 3*384 = 1152 K of MMA work instead of Kp = 1024.
  const auto uneven = pipeweave::demand(make_gemm(128, 128, 1000, DType::bf16, make_config(128, 128, 64, 3, 2)), gpu);
  CHECK(uneven.ctas == 3);
  CHECK(at(uneven.gpu_cycles, Pipe::tensor) == Approx(3 * 2.0 * 128 * 128 * 384 / (1024.0 * 4)).epsilon(1e-9));
  CHECK(at(uneven.sm_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 384 / 1024.0).epsilon(1e-9));

  // The main loop's length: each split CTA walks its slice in K steps of 64, 1024/64 = 16,
  // the whole-K CTA 4096/64 = 64, the uneven one 384/64 = 6. Stages as configured, one kernel.
  CHECK(d.serial_steps == 16);
  CHECK(whole.serial_steps == 64);
  CHECK(uneven.serial_steps == 6);
  CHECK(d.pipeline_stages == 2);
  CHECK(d.kernels == 1);
}

TEST_CASE("gemm demand: a 2x1 cluster leaves an odd SM idle", "[demand][gemm]") {
  // 10 tiles of 128x128 (m = 1280). On 5 SMs a 2x1 cluster fits only floor(5/2) = 2 whole
  // clusters = 4 usable SMs, so the busiest SM runs ceil(10/4) = 3 tiles instead of ceil(10/5) = 2.
  const auto gpu5 = synthetic_gpu(5);
  const auto clustered = pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 2, 1)), gpu5);
  const auto plain = pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 1, 1)), gpu5);
  CHECK(clustered.ctas == 10);
  CHECK(clustered.busiest_sm_ctas == 3);
  CHECK(plain.busiest_sm_ctas == 2);
  CHECK(at(clustered.sm_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 128 * 3 / 1024.0).epsilon(1e-9));
  CHECK(at(plain.sm_cycles, Pipe::tensor) == Approx(2.0 * 128 * 128 * 128 * 2 / 1024.0).epsilon(1e-9));
  // The whole-GPU figure is still the total over all 5 SMs.
  CHECK(at(clustered.gpu_cycles, Pipe::tensor) == Approx(2.0 * 1280 * 128 * 128 / (1024.0 * 5)).epsilon(1e-9));
  CHECK(at(plain.gpu_cycles, Pipe::tensor) == Approx(at(clustered.gpu_cycles, Pipe::tensor)).epsilon(1e-9));
  // DRAM on the busiest SM: 3 of the 10 tiles' equal shares of (A+B+C) bytes, against the
  // SM's 1024/5 B/clk share.
  const double dram_bytes = (1280.0 * 128 + 128.0 * 128) * 2 + 1280.0 * 128 * 2;
  CHECK(at(clustered.sm_cycles, Pipe::dram) == Approx(3 * dram_bytes / 10 / (1024.0 / 5)).epsilon(1e-9));

  // TMA multicast: in a 2x1 cluster each B tile is loaded once for the 2 CTAs sharing it,
  // so L2 sends each CTA all of its A tile and half of its B tile (K slice 128):
  // (128*1 + 128/2)*128*2 + the 128x128 bf16 output = 49152 + 32768 B; without the cluster
  // (128 + 128)*128*2 + 32768 B. Against the busiest SM's L2 share of 4096/5 B/clk.
  CHECK(at(clustered.sm_cycles, Pipe::l2) ==
        Approx(3 * ((128.0 + 128.0 / 2) * 128 * 2 + 128.0 * 128 * 2) / (4096.0 / 5)).epsilon(1e-9));
  CHECK(at(plain.sm_cycles, Pipe::l2) == Approx(2 * ((128.0 + 128) * 128 * 2 + 128.0 * 128 * 2) / (4096.0 / 5)).epsilon(1e-9));

  // A 1x2 cluster counts the same as 2x1.
  const auto clustered_n =
      pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 1, 2)), gpu5);
  CHECK(clustered_n.busiest_sm_ctas == 3);
  CHECK(clustered.cluster_ctas == 2);
  CHECK(clustered_n.cluster_ctas == 2);
  CHECK(plain.cluster_ctas == 1);

  // On an even SM count the cluster costs nothing: 4 SMs, ceil(10/4) = 3 either way.
  CHECK(pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 2, 1)), synthetic_gpu(4))
            .busiest_sm_ctas == 3);

  // Before Hopper there are no clusters, no swapped MMA orientation and no warpgroup schedules:
  // a config asking for them is refused by name, not quietly run as something else.
  const auto ampere = synthetic_gpu_cc80(5);
  const auto ampere_plain = pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 1, 1)), ampere);
  CHECK(ampere_plain.cluster_ctas == 1);
  CHECK(ampere_plain.busiest_sm_ctas == 2);
  CHECK_THAT(error_of([&] { pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 2, 1)), ampere); }),
             Contains("gemm.cluster_m*cluster_n must be 1x1") && Contains("synthetic-5sm-cc80 is sm_80") && Contains("2x1"));
  GemmConfig swapped = make_config(128, 128, 64, 1, 2, 1, 1);
  swapped.swap_ab = true;
  CHECK_THAT(error_of([&] { pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, swapped), ampere); }),
             Contains("gemm.swap_ab must be 0") && Contains("needs Hopper"));
  GemmConfig cooperative = make_config(128, 128, 64, 1, 2, 1, 1);
  cooperative.schedule = GemmSchedule::cooperative;
  CHECK_THAT(error_of([&] { pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, cooperative), ampere); }),
             Contains("gemm.schedule must be ping_pong") && Contains("cooperative"));
  // Without a cluster no multicast either: full operand tiles from L2, as on Hopper unclustered.
  CHECK(at(ampere_plain.sm_cycles, Pipe::l2) == Approx(at(plain.sm_cycles, Pipe::l2)).epsilon(1e-9));

  // A cluster larger than the chip cannot launch.
  CHECK_THROWS_AS(pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 2, 4)), gpu5),
                  pipeweave::Error);
  CHECK_THROWS_WITH(pipeweave::demand(make_gemm(1280, 128, 128, DType::bf16, make_config(128, 128, 64, 1, 2, 2, 4)), gpu5),
                    Catch::Contains("cluster"));
}

TEST_CASE("gemm default config follows the documented heuristic", "[demand][gemm]") {
  const auto gpu = synthetic_gpu(4);
  const auto ampere = synthetic_gpu_cc80(4);
  using pipeweave::default_config;

  SECTION("tile_k is 128 bytes of K") {
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::bf16, {}), gpu).tile_k == 128 / 2);
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::fp16, {}), gpu).tile_k == 128 / 2);
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::fp8_e4m3, {}), gpu).tile_k == 128 / 1);
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::fp8_e5m2, {}), gpu).tile_k == 128 / 1);
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::int8, {}), gpu).tile_k == 128 / 1);
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::tf32, {}), gpu).tile_k == 128 / 4);
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::fp32, {}), gpu).tile_k == 128 / 4);
  }

  SECTION("tile_m 64 for decode-shaped m, tile_n 256 only for big GEMMs on Hopper") {
    CHECK(default_config(make_gemm(64, 1024, 1024, DType::bf16, {}), gpu).tile_m == 64);
    CHECK(default_config(make_gemm(65, 1024, 1024, DType::bf16, {}), gpu).tile_m == 128);
    CHECK(default_config(make_gemm(1, 1024, 1024, DType::bf16, {}), gpu).tile_m == 64);
    CHECK(default_config(make_gemm(4096, 4096, 1024, DType::bf16, {}), gpu).tile_n == 256);
    CHECK(default_config(make_gemm(4096, 4095, 1024, DType::bf16, {}), gpu).tile_n == 128);
    CHECK(default_config(make_gemm(4095, 4096, 1024, DType::bf16, {}), gpu).tile_n == 128);
    CHECK(default_config(make_gemm(4096, 4096, 1024, DType::bf16, {}), ampere).tile_n == 128);
  }

  SECTION("split-K for a skinny decode GEMM") {
    // m = 16, n = 128: one 64x128 tile; 1*2 <= 4 SMs; K = 4096 is 64 steps of 64 (>= 8).
    // Slices: min(floor(4 SMs / 1 tile) = 4, floor(64 steps / 4) = 16) = 4.
    CHECK(default_config(make_gemm(16, 128, 4096, DType::bf16, {}), gpu).split_k == 4);
    // K = 512 is 8 steps: min(4, floor(8/4) = 2) = 2 slices of 4 steps each.
    CHECK(default_config(make_gemm(16, 128, 512, DType::bf16, {}), gpu).split_k == 2);
    // K = 448 is 7 steps, under 8: no split.
    CHECK(default_config(make_gemm(16, 128, 448, DType::bf16, {}), gpu).split_k == 1);
    // n = 256: 2 tiles, 2*2 <= 4 still: min(floor(4/2) = 2, 16) = 2.
    CHECK(default_config(make_gemm(16, 256, 4096, DType::bf16, {}), gpu).split_k == 2);
    // n = 384: 3 tiles fill more than half of 4 SMs: no split.
    CHECK(default_config(make_gemm(16, 384, 4096, DType::bf16, {}), gpu).split_k == 1);
    // On 64 SMs one tile would want 64 slices, K allows 1024/4 = 256: clamped to 16.
    CHECK(default_config(make_gemm(1, 128, 65536, DType::bf16, {}), synthetic_gpu(64)).split_k == 16);
  }

  SECTION("stages: as many as fit after a 16 KB epilogue, at most 8") {
    // 64x128x64 bf16: (64+128)*64*2 = 24576 B a stage; floor((233472-16384)/24576) = floor(8.83) = 8.
    CHECK(default_config(make_gemm(16, 128, 4096, DType::bf16, {}), gpu).stages == 8);
    // 128x128x64 bf16: 32768 B a stage; floor(217088/32768) = floor(6.63) = 6.
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::bf16, {}), gpu).stages == 6);
    // 128x256x64 bf16: 49152 B a stage; floor(217088/49152) = floor(4.42) = 4.
    CHECK(default_config(make_gemm(4096, 4096, 1024, DType::bf16, {}), gpu).stages == 4);
    // 128x128x32 tf32: (128+128)*32*4 = 32768 B: 6.
    CHECK(default_config(make_gemm(1024, 1024, 1024, DType::tf32, {}), gpu).stages == 6);
  }

  SECTION("cluster 2x1 on Hopper when the tiles cover the SMs") {
    // m = 512, n = 128: 4 tiles of 128x128 >= 4 SMs.
    const auto many = default_config(make_gemm(512, 128, 1024, DType::bf16, {}), gpu);
    CHECK(many.cluster_m == 2);
    CHECK(many.cluster_n == 1);
    CHECK(many.split_k == 1);
    // m = 384: 3 tiles < 4 SMs.
    CHECK(default_config(make_gemm(384, 128, 1024, DType::bf16, {}), gpu).cluster_m == 1);
    CHECK(default_config(make_gemm(512, 128, 1024, DType::bf16, {}), ampere).cluster_m == 1);
  }

  SECTION("demand without a config uses the default and says so") {
    const Gemm skinny = make_gemm(16, 128, 4096, DType::bf16, {});
    const auto d = pipeweave::demand(skinny, gpu);
    CHECK(d.config_defaulted);
    // 1 tile of 64x128, split 4: 4 CTAs, each 2*64*128*1024 flops (K slice 4096/4 = 1024).
    CHECK(d.ctas == 4);
    CHECK(d.busiest_sm_ctas == 1);
    CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(2.0 * 64 * 128 * 1024 / 1024.0).epsilon(1e-9));
    // Resident: 384 threads -> 5; 8 stages * 24576 = 196608 B -> floor(233472/196608) = 1.
    CHECK(d.resident_ctas_per_sm == 1);

    const auto explicit_default = pipeweave::demand(make_gemm(16, 128, 4096, DType::bf16, default_config(skinny, gpu)), gpu);
    CHECK_FALSE(explicit_default.config_defaulted);
    CHECK(explicit_default.gpu_cycles == d.gpu_cycles);
    CHECK(explicit_default.sm_cycles == d.sm_cycles);
    CHECK(explicit_default.ctas == d.ctas);
    CHECK(explicit_default.resident_ctas_per_sm == d.resident_ctas_per_sm);
  }

  SECTION("stages = 0 in a given config means as many as fit") {
    // 128x128x64 bf16 with stages 0 -> 6 stages = 196608 B -> 1 resident CTA;
    // with 2 stages (65536 B) 3 fit.
    CHECK(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(128, 128, 64, 1, 0)), gpu)
              .resident_ctas_per_sm == 1);
    CHECK(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(128, 128, 64, 1, 2)), gpu)
              .resident_ctas_per_sm == 3);
  }
}

TEST_CASE("gemm demand: data types pick their tensor rate", "[demand][gemm]") {
  const auto gpu = synthetic_gpu(4);
  // One 128x128 tile with K = 128: 2*128^3 flops on one SM.
  const double flops = 2.0 * 128 * 128 * 128;

  const auto fp8 = pipeweave::demand(make_gemm(128, 128, 128, DType::fp8_e4m3, make_config(128, 128, 128, 1, 1)), gpu);
  CHECK(at(fp8.sm_cycles, Pipe::tensor) == Approx(flops / 2048.0).epsilon(1e-9));
  // fp8 GEMMs write bf16: l2 = operands (128+128)*128*1 + output 128*128*2.
  CHECK(at(fp8.sm_cycles, Pipe::l2) == Approx(((128.0 + 128) * 128 * 1 + 128.0 * 128 * 2) / 1024.0).epsilon(1e-9));

  const auto int8 = pipeweave::demand(make_gemm(128, 128, 128, DType::int8, make_config(128, 128, 128, 1, 1)), gpu);
  CHECK(at(int8.sm_cycles, Pipe::tensor) == Approx(flops / 2048.0).epsilon(1e-9));
  // int8 writes int32: output 128*128*4.
  CHECK(at(int8.sm_cycles, Pipe::l2) == Approx(((128.0 + 128) * 128 * 1 + 128.0 * 128 * 4) / 1024.0).epsilon(1e-9));

  const auto tf32 = pipeweave::demand(make_gemm(128, 128, 128, DType::tf32, make_config(128, 128, 32, 1, 2)), gpu);
  CHECK(at(tf32.sm_cycles, Pipe::tensor) == Approx(flops / 512.0).epsilon(1e-9));

  // Plain fp32 runs on the FMA pipe: one FFMA lane op per multiply-add, plus the epilogue.
  const auto fp32 = pipeweave::demand(make_gemm(128, 128, 128, DType::fp32, make_config(128, 128, 32, 1, 2)), gpu);
  CHECK(at(fp32.gpu_cycles, Pipe::tensor) == 0);
  CHECK(at(fp32.sm_cycles, Pipe::tensor) == 0);
  const double fp32_lane_ops = 128.0 * 128 * 128 + 128.0 * 128 * 2;
  CHECK(at(fp32.sm_cycles, Pipe::fma) == Approx(fp32_lane_ops / 128.0).epsilon(1e-9));
  CHECK(at(fp32.gpu_cycles, Pipe::fma) == Approx(fp32_lane_ops / (128.0 * 4)).epsilon(1e-9));
  CHECK(fp32.bottleneck() == Pipe::fma);
}

TEST_CASE("gemm demand: fp8 on a GPU without an fp8 tensor path throws", "[demand][gemm]") {
  const auto ampere = synthetic_gpu_cc80(4);  // fp8 rate 0
  const Gemm gemm = make_gemm(256, 256, 256, DType::fp8_e4m3, make_config(128, 128, 128, 1, 2));
  CHECK_THROWS_AS(pipeweave::demand(gemm, ampere), pipeweave::Error);
  CHECK_THROWS_WITH(pipeweave::demand(gemm, ampere), Catch::Contains("fp8"));
  // Through compute_demand as well, and with a defaulted config.
  CHECK_THROWS_WITH(pipeweave::compute_demand(pipeweave::Kernel(make_gemm(256, 256, 256, DType::fp8_e5m2, {})), ampere),
                    Catch::Contains("fp8"));
  // The same GEMM in bf16 runs.
  CHECK_NOTHROW(pipeweave::demand(make_gemm(256, 256, 256, DType::bf16, make_config(128, 128, 64, 1, 2)), ampere));
}

TEST_CASE("gemm demand: a tile too big for shared memory throws", "[demand][gemm]") {
  const auto gpu = synthetic_gpu(4);
  // 256x256x256 bf16: one stage is (256+256)*256*2 = 262144 B > 233472 B.
  CHECK_THROWS_AS(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(256, 256, 256, 1, 1)), gpu),
                  pipeweave::Error);
  CHECK_THROWS_WITH(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(256, 256, 256, 1, 1)), gpu),
                    Catch::Contains("does not fit"));
  // stages = 0 cannot rescue it: at least one stage is always kept.
  CHECK_THROWS_AS(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(256, 256, 256, 1, 0)), gpu),
                  pipeweave::Error);
  // A tile that fits once but not 8 times: 8 * 32768 = 262144 B.
  CHECK_THROWS_AS(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(128, 128, 64, 1, 8)), gpu),
                  pipeweave::Error);
  CHECK_NOTHROW(pipeweave::demand(make_gemm(1024, 1024, 1024, DType::bf16, make_config(128, 128, 64, 1, 7)), gpu));
}

TEST_CASE("gemm demand: CTA threads by architecture limit residency", "[demand][gemm]") {
  // 128x128x32 bf16, 1 stage: 16384 B of shared memory -> floor(233472/16384) = 14 by smem.
  const Gemm gemm = make_gemm(1024, 1024, 1024, DType::bf16, make_config(128, 128, 32, 1, 1));
  // Hopper: 384-thread CTAs -> floor(2048/384) = 5.
  CHECK(pipeweave::demand(gemm, synthetic_gpu(4)).resident_ctas_per_sm == 5);
  // Ampere: 256-thread CTAs -> floor(2048/256) = 8.
  CHECK(pipeweave::demand(gemm, synthetic_gpu_cc80(4)).resident_ctas_per_sm == 8);
}

TEST_CASE("gemm demand: the MMA shape and schedule reach the learned stage, not the bound", "[demand][gemm]") {
  const auto gpu = synthetic_gpu(4);  // compute capability 9.0: warpgroup MMAs
  GemmConfig config = make_config(64, 256, 64, 1, 2);
  const auto plain = pipeweave::demand(make_gemm(256, 512, 1024, DType::bf16, config), gpu);
  // Ping-pong (the default), no swap: each warpgroup owns a whole 64 x 256 tile; two tiles in flight.
  CHECK(plain.warpgroup_mma_m == 64);
  CHECK(plain.warpgroup_mma_n == 256);
  CHECK(plain.tiles_in_flight == 2);
  CHECK(plain.swap_ab == 0);
  CHECK(plain.raster_along_m == 0);

  // Split along the MMA's N side: each warpgroup 64 x 128 of one tile, one tile in flight.
  config.schedule = pipeweave::GemmSchedule::cooperative_split_n;
  config.raster = pipeweave::GemmRaster::along_m;
  const auto split_n = pipeweave::demand(make_gemm(256, 512, 1024, DType::bf16, config), gpu);
  CHECK(split_n.warpgroup_mma_m == 64);
  CHECK(split_n.warpgroup_mma_n == 128);
  CHECK(split_n.tiles_in_flight == 1);
  CHECK(split_n.raster_along_m == 1);

  // swap_ab puts tile_n (256) on the MMA's M side; cooperative halves it: 128 x 64 per warpgroup.
  config.swap_ab = true;
  config.schedule = pipeweave::GemmSchedule::cooperative;
  const auto swapped = pipeweave::demand(make_gemm(256, 512, 1024, DType::bf16, config), gpu);
  CHECK(swapped.warpgroup_mma_m == 128);
  CHECK(swapped.warpgroup_mma_n == 64);
  CHECK(swapped.tiles_in_flight == 1);
  CHECK(swapped.swap_ab == 1);

  // None of it changes the work: same pipes, same bound.
  for (std::size_t i = 0; i < pipeweave::kPipeCount; ++i) {
    CHECK(swapped.gpu_cycles[i] == plain.gpu_cycles[i]);
    CHECK(swapped.sm_cycles[i] == plain.sm_cycles[i]);
  }
  CHECK(swapped.bound_cycles() == plain.bound_cycles());

  // Before Hopper there are no warpgroup MMAs: no MMA shape, one tile at a time.
  const auto ampere = pipeweave::demand(make_gemm(256, 512, 1024, DType::bf16, make_config(64, 256, 64, 1, 2)),
                                        synthetic_gpu_cc80(4));
  CHECK(ampere.warpgroup_mma_m == 0);
  CHECK(ampere.warpgroup_mma_n == 0);
  CHECK(ampere.tiles_in_flight == 1);
}

TEST_CASE("gemm demand: tile fill, wave fill and one wave's operand bytes", "[demand][gemm]") {
  // m = 1100, n = 300 in 128 x 64 tiles: 9 x 5 = 45 CTAs computing 1152 x 320 outputs.
  // Five stages of (128 + 64) x 64 bf16 = 120 KB of shared memory: one CTA per SM, so a
  // full wave on 4 SMs is 4 CTAs and 45 CTAs take 12 waves, the last one 1/4 full.
  GemmConfig along_n = make_config(128, 64, 64, 1, 5);
  const auto gpu = synthetic_gpu(4);
  const auto d = pipeweave::demand(make_gemm(1100, 300, 512, DType::bf16, along_n), gpu);
  REQUIRE(d.resident_ctas_per_sm == 1);
  CHECK(d.tile_fill == Approx(1100.0 * 300 / (1152.0 * 320)).epsilon(1e-12));
  CHECK(d.wave_fill == Approx(45.0 / 48).epsilon(1e-12));
  // Walking along n, the first wave's 4 tiles lie in one row of 5: 1 A tile (128 rows) and
  // 4 B tiles (64 columns each), all of K = 512 in bf16, against 50 MiB of L2.
  CHECK(d.wave_operand_bytes_per_l2 == Approx((128.0 + 4 * 64) * 512 * 2 / (50.0 * 1024 * 1024)).epsilon(1e-12));
  // Walking along m: 4 A tiles of one column of 9, and 1 B tile.
  GemmConfig along_m = along_n;
  along_m.raster = pipeweave::GemmRaster::along_m;
  const auto dm = pipeweave::demand(make_gemm(1100, 300, 512, DType::bf16, along_m), gpu);
  CHECK(dm.wave_operand_bytes_per_l2 == Approx((4 * 128.0 + 64) * 512 * 2 / (50.0 * 1024 * 1024)).epsilon(1e-12));
  // A wave over more than one line of tiles: 128 x 64 tiles of m = 256, n = 128 make a 2 x 2
  // grid; on 4 SMs one wave holds all 4. Along n: 2 lines (A tiles) of 2 (B tiles); with
  // split-K 2 the wave holds 2 tiles' slices, one line of 2 B tiles and 1 A tile.
  const auto grid = pipeweave::demand(make_gemm(256, 128, 512, DType::bf16, along_n), gpu);
  CHECK(grid.wave_operand_bytes_per_l2 == Approx((2 * 128.0 + 2 * 64) * 512 * 2 / (50.0 * 1024 * 1024)).epsilon(1e-12));
  GemmConfig split = along_n;
  split.split_k = 2;
  const auto split_grid = pipeweave::demand(make_gemm(256, 128, 512, DType::bf16, split), gpu);
  CHECK(split_grid.wave_operand_bytes_per_l2 == Approx((128.0 + 2 * 64) * 512 * 2 / (50.0 * 1024 * 1024)).epsilon(1e-12));
  // A GEMM whose tiles fit the matrix exactly and fill whole waves wastes nothing.
  const auto exact = pipeweave::demand(make_gemm(1024, 256, 512, DType::bf16, along_n), gpu);  // 8 x 4 = 32 CTAs
  CHECK(exact.tile_fill == 1);
  CHECK(exact.wave_fill == 1);
}
