// The attention demand model (include/pipeweave/ops/attention.hpp) against figures worked
// out by hand on the synthetic GPU of demand_test_gpu.hpp: 4 SMs unless stated, 1000 MHz,
// tensor bf16 1024 flops/clk/SM, 128 FP32 lanes, 16 XU, 128 smem B/clk/SM,
// DRAM 1024 B/clk (256 per SM on 4 SMs), L2 4096 B/clk (1024 per SM on 4 SMs).
//
// Per work unit (CTA) of tile_q rows walking kv_rows keys of head_dim hd:
//   tensor = 4*tile_q*kv_rows*hd (QK^T and PV), xu = tile_q*kv_rows (one exp per score),
//   fma = 4*tile_q*kv_rows + tile_q*hd*(kv_rows/tile_kv), smem = 2*(tile_q + 2*kv_rows)*hd*bytes.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "demand_test_gpu.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/ops/attention.hpp"
#include "pipeweave/pipes.hpp"

using Catch::Detail::Approx;  // Catch2 v2: Catch::Approx names the vector matcher
using pipeweave::at;
using pipeweave::Attention;
using pipeweave::AttentionConfig;
using pipeweave::AttentionImpl;
using pipeweave::DType;
using pipeweave::Pipe;
using pipeweave_test::synthetic_gpu;
using pipeweave_test::synthetic_gpu_cc80;

namespace {

AttentionConfig make_config(AttentionImpl impl, int tile_q, int tile_kv, int num_splits = 0) {
  AttentionConfig config;
  config.impl = impl;
  config.tile_q = tile_q;
  config.tile_kv = tile_kv;
  config.num_splits = num_splits;
  return config;
}

}  // namespace

TEST_CASE("attention demand: causal prefill of one 256-token sequence", "[demand][attention]") {
  // One sequence of 256 tokens, 2 heads (no GQA), head_dim 64, bf16, tile 128x128, FA3, 4 SMs.
  Attention attention = Attention::prefill(1, 256, 2, 2, 64);
  attention.config = make_config(AttentionImpl::flash3, 128, 128);
  const auto gpu = synthetic_gpu(4);

  // Query tiles: rows 0..127 and 128..255. Under the causal mask row p sees keys 0..p, so
  // tile 0 (last row 127) sees 128 keys = 1 KV block, tile 1 (last row 255) all 256 = 2 blocks.
  // Units: 2 tiles x 2 heads = 4 CTAs >= 0.8 * 4 SMs, so no KV split.
  REQUIRE(pipeweave::attention_splits(attention, *attention.config, gpu) == 1);
  const auto d = pipeweave::demand(attention, gpu);
  CHECK(d.ctas == 4);
  CHECK_FALSE(d.config_defaulted);

  // Total tensor flops: per head 4*128*64*(128 + 256), over 2 heads.
  const double tensor_total = 2 * 4.0 * 128 * 64 * (128 + 256);
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(tensor_total / (1024.0 * 4)).epsilon(1e-9));
  // FA3 hands the longest units out first: the two tile-1 units go to SM 0 and SM 1, the
  // two tile-0 units to the idle SMs 2 and 3. The busiest SM runs one tile-1 unit.
  CHECK(d.busiest_sm_ctas == 1);
  CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(4.0 * 128 * 256 * 64 / 1024.0).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::xu) == Approx(128.0 * 256 / 16.0).epsilon(1e-9));
  // Online softmax: 4 lane ops per score, plus rescaling the 128x64 accumulator once per KV block (2 blocks).
  CHECK(at(d.sm_cycles, Pipe::fma) == Approx((4.0 * 128 * 256 + 128.0 * 64 * 2) / 128.0).epsilon(1e-9));
  CHECK(at(d.gpu_cycles, Pipe::xu) == Approx(2 * 128.0 * (128 + 256) / (16.0 * 4)).epsilon(1e-9));
  // smem of the tile-1 unit: Q once and K, V of 256 rows, written and read: 2*(128 + 2*256)*64*2 B.
  CHECK(at(d.sm_cycles, Pipe::smem) == Approx(2 * (128.0 + 2 * 256) * 64 * 2 / 128.0).epsilon(1e-9));

  // L2 per unit: Q tile + K and V it sees + the output tile, 2 bytes each.
  const double l2_tile0 = (128.0 + 2 * 128) * 64 * 2 + 128.0 * 64 * 2;  // 65536 B
  const double l2_tile1 = (128.0 + 2 * 256) * 64 * 2 + 128.0 * 64 * 2;  // 98304 B
  const double l2_total = 2 * (l2_tile0 + l2_tile1);
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(l2_total / 4096.0).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::l2) == Approx(l2_tile1 / 1024.0).epsilon(1e-9));
  // DRAM: Q read and O written (256 tokens * 2 heads * 64 * 2 B each), K and V read
  // (256 * 2 kv heads * 64 * 2 B each); each unit's share follows its L2 traffic.
  const double dram_total = 256.0 * 2 * 64 * 2 * 2 + 256.0 * 2 * 64 * 2 * 2;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(dram_total / 1024.0).epsilon(1e-9));
  CHECK(at(d.sm_cycles, Pipe::dram) == Approx(l2_tile1 * dram_total / l2_total / 256.0).epsilon(1e-9));

  // Resident: FA3 384 threads -> 5; smem Q + two stages of K and V = (128 + 4*128)*64*2 = 81920 B
  // -> floor(233472/81920) = 2.
  CHECK(d.resident_ctas_per_sm == 2);
  CHECK(d.bottleneck() == Pipe::tensor);
  // The longest CTA (tile 1) walks 2 KV blocks; FA3 double-buffers K and V; no combine kernel.
  CHECK(d.serial_steps == 2);
  CHECK(d.pipeline_stages == 2);
  CHECK(d.kernels == 1);
}

TEST_CASE("attention demand: FA3 longest-first versus FA2 launch order", "[demand][attention]") {
  // One causal sequence of 512 tokens, 2 heads, head_dim 64, tile 128x128, 4 SMs.
  // Query tiles 0..3 see 1, 2, 3, 4 KV blocks of 128; each has 2 copies (heads): 8 CTAs.
  // Tensor dominates every unit, so a unit of b blocks costs b * (4*128*128*64/1024) cycles.
  Attention attention = Attention::prefill(1, 512, 2, 2, 64);
  const auto gpu = synthetic_gpu(4);
  const double per_block = 4.0 * 128 * 128 * 64 / 1024;

  // FA3, longest first: 4,4 -> SM0, SM1; 3,3 -> SM2, SM3; 2,2 -> the SMs at 3 (SM2, SM3)
  // -> 5; 1,1 -> the SMs at 4 (SM0, SM1) -> 5. Every SM ends with 5 blocks of 2 CTAs.
  attention.config = make_config(AttentionImpl::flash3, 128, 128);
  const auto fa3 = pipeweave::demand(attention, gpu);
  CHECK(fa3.ctas == 8);
  CHECK(fa3.busiest_sm_ctas == 2);
  CHECK(at(fa3.sm_cycles, Pipe::tensor) == Approx(5 * per_block).epsilon(1e-9));
  CHECK(at(fa3.gpu_cycles, Pipe::tensor) == Approx(2 * (1 + 2 + 3 + 4) * per_block / 4).epsilon(1e-9));

  // FA2, in launch order 1,1,2,2,3,3,4,4: 1 -> SM0, SM1; 2 -> SM2, SM3; 3 -> the SMs at 1
  // (SM0, SM1) -> 4; 4 -> the SMs at 2 (SM2, SM3) -> 6. The busiest SM runs 6 blocks.
  attention.config = make_config(AttentionImpl::flash2, 128, 128);
  const auto fa2 = pipeweave::demand(attention, gpu);
  CHECK(fa2.ctas == 8);
  CHECK(fa2.busiest_sm_ctas == 2);
  // FA2's mma.sync reaches 65.2% of a Hopper tensor core's rate: the same work takes 1/0.652 the cycles.
  CHECK(at(fa2.sm_cycles, Pipe::tensor) == Approx(6 * per_block / 0.652).epsilon(1e-9));
  CHECK(at(fa2.gpu_cycles, Pipe::tensor) == Approx(at(fa3.gpu_cycles, Pipe::tensor) / 0.652).epsilon(1e-9));
  // Before Hopper mma.sync is the tensor cores' own path: full rate.
  const auto fa2_ampere = pipeweave::demand(attention, pipeweave_test::synthetic_gpu_cc80(4));
  CHECK(at(fa2_ampere.gpu_cycles, Pipe::tensor) == Approx(at(fa3.gpu_cycles, Pipe::tensor)).epsilon(1e-9));
  // FA2: 128 threads -> 16; smem Q + one stage of K and V = (128 + 2*128)*64*2 = 49152 B -> 4.
  CHECK(fa2.resident_ctas_per_sm == 4);
}

TEST_CASE("attention demand: causal does about half the work of non-causal", "[demand][attention]") {
  const auto gpu = synthetic_gpu(4);
  SECTION("short sequence: 256 tokens, two tiles") {
    // Causal: 1 + 2 KV blocks over the two tiles; non-causal: 2 + 2.
    Attention causal = Attention::prefill(1, 256, 2, 2, 64);
    causal.config = make_config(AttentionImpl::flash3, 128, 128);
    Attention full = causal;
    full.causal = false;
    const auto dc = pipeweave::demand(causal, gpu);
    const auto df = pipeweave::demand(full, gpu);
    CHECK(at(df.gpu_cycles, Pipe::tensor) == Approx(2 * 4.0 * 128 * 64 * (256 + 256) / (1024.0 * 4)).epsilon(1e-9));
    CHECK(at(dc.gpu_cycles, Pipe::tensor) / at(df.gpu_cycles, Pipe::tensor) == Approx(3.0 / 4).epsilon(1e-9));
  }
  SECTION("long sequence: 8192 tokens, 64 tiles") {
    // Causal tile i (0-based) sees i+1 blocks: sum 1..64 = 64*65/2 blocks against 64*64.
    Attention causal = Attention::prefill(1, 8192, 4, 4, 128);
    causal.config = make_config(AttentionImpl::flash3, 128, 128);
    Attention full = causal;
    full.causal = false;
    const auto dc = pipeweave::demand(causal, gpu);
    const auto df = pipeweave::demand(full, gpu);
    CHECK(at(df.gpu_cycles, Pipe::tensor) ==
          Approx(4 /*heads*/ * 64 /*tiles*/ * 4.0 * 128 * 8192 * 128 / (1024.0 * 4)).epsilon(1e-9));
    CHECK(at(dc.gpu_cycles, Pipe::tensor) / at(df.gpu_cycles, Pipe::tensor) ==
          Approx((64.0 * 65 / 2) / (64.0 * 64)).epsilon(1e-9));
    CHECK(at(dc.gpu_cycles, Pipe::tensor) / at(df.gpu_cycles, Pipe::tensor) == Approx(0.5).epsilon(0.02));
  }
}

TEST_CASE("attention demand: ragged batch with a cached prefix", "[demand][attention]") {
  // Two sequences, 2 heads, head_dim 64, tile 128x128, FA3, 4 SMs:
  //  seq 0: 200 new tokens over 712 of KV (512 cached); seq 1: 256 new tokens, no cache.
  Attention attention;
  attention.q_lens = {200, 256};
  attention.kv_lens = {712, 256};
  attention.heads = 2;
  attention.kv_heads = 2;
  attention.head_dim = 64;
  attention.config = make_config(AttentionImpl::flash3, 128, 128);
  const auto gpu = synthetic_gpu(4);
  REQUIRE_NOTHROW(pipeweave::Kernel(attention));
  REQUIRE_FALSE(attention.is_decode());

  // Causal with a prefix: row p sees keys up to 712 - 200 + p.
  //  seq 0 tile 0 (rows 0..127):  712-200+128 = 640 keys -> 5 blocks -> 640 kv rows
  //  seq 0 tile 1 (rows 128..199, 72 real rows): all 712 keys -> ceil(712/128) = 6 blocks -> 768
  //  seq 1 tile 0: 128 keys -> 128; seq 1 tile 1: 256 keys -> 256
  // Each with 2 copies (heads): 8 CTAs; 8 >= 0.8*4, no split.
  const auto d = pipeweave::demand(attention, gpu);
  CHECK(d.ctas == 8);
  const double per_kv_row = 4.0 * 128 * 64;  // tensor flops per key row of a 128-row tile
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(2 * per_kv_row * (640 + 768 + 128 + 256) / (1024.0 * 4)).epsilon(1e-9));
  // Longest first on 4 SMs: 768,768 -> SM0, SM1; 640,640 -> SM2, SM3; 256,256 -> SM2, SM3 (896);
  // 128,128 -> SM0, SM1 (896). Every SM: 2 CTAs, 896 kv rows.
  CHECK(d.busiest_sm_ctas == 2);
  CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(per_kv_row * 896 / 1024.0).epsilon(1e-9));

  // L2: Q rows actually present, K and V up to what is visible, and the output rows.
  const double l2_s0t0 = (128.0 + 2 * 640) * 64 * 2 + 128.0 * 64 * 2;
  const double l2_s0t1 = (72.0 + 2 * 712) * 64 * 2 + 72.0 * 64 * 2;
  const double l2_s1t0 = (128.0 + 2 * 128) * 64 * 2 + 128.0 * 64 * 2;
  const double l2_s1t1 = (128.0 + 2 * 256) * 64 * 2 + 128.0 * 64 * 2;
  CHECK(at(d.gpu_cycles, Pipe::l2) == Approx(2 * (l2_s0t0 + l2_s0t1 + l2_s1t0 + l2_s1t1) / 4096.0).epsilon(1e-9));
  // DRAM: Q in and O out for 200 + 256 tokens, K and V for 712 + 256 tokens, 2 heads, 64 dims, 2 B.
  const double dram_total = (200.0 + 256) * 2 * 64 * 2 * 2 + (712.0 + 256) * 2 * 64 * 2 * 2;
  CHECK(at(d.gpu_cycles, Pipe::dram) == Approx(dram_total / 1024.0).epsilon(1e-9));
}

TEST_CASE("attention demand: FlashAttention's split heuristic", "[demand][attention]") {
  using pipeweave::detail::flash_num_splits;
  // Enough units to fill 80% of the SMs: never split.
  CHECK(flash_num_splits(4, 4, 100) == 1);
  CHECK(flash_num_splits(8, 10, 100) == 1);
  // 2 units on 10 SMs, 32 KV blocks: max 10 splits. Waves 2s/10, efficiency waves/ceil(waves):
  //   s = 1..5: 0.2 0.4 0.6 0.8 1.0; s = 6, 7, 8: 0.6 0.7 0.8; s = 9, 10 are not eligible
  //   (ceil(32/9) = ceil(32/8) = 4, ceil(32/10) = 4). Best 1.0; the first >= 0.85 is s = 5.
  CHECK(flash_num_splits(2, 10, 32) == 5);
  // 1 unit on 4 SMs, 6 KV blocks: max 4 splits; ceil(6/s) = 6, 3, 2, 2, so s = 4 is not
  // eligible. Efficiencies 0.25, 0.5, 0.75: best 0.75, the first >= 0.6375 is s = 3
  // (s = 4, at efficiency 1.0, would have won had it been eligible).
  CHECK(flash_num_splits(1, 4, 6) == 3);
  // Splits never exceed the KV blocks: 1 unit, 4 SMs, 2 blocks -> s = 2 (efficiency 0.5, best).
  CHECK(flash_num_splits(1, 4, 2) == 2);
}

TEST_CASE("attention: FlashAttention-2 splits only decode with grouped query heads", "[demand][attention]") {
  // What both GPUs ran: no prompt and no multi-head decode split (4,758 and 802 rows), grouped
  // decode split in 5,110 of 7,240. Same few units and long KV on 5 SMs in each case.
  const auto gpu = synthetic_gpu_cc80(5);
  const Attention grouped = Attention::decode(1, 4096, 8, 2, 128);
  CHECK(pipeweave::attention_splits(grouped, pipeweave::default_config(grouped, gpu), gpu) == 5);
  const Attention multi_head = Attention::decode(1, 4096, 2, 2, 128);
  CHECK(pipeweave::attention_splits(multi_head, pipeweave::default_config(multi_head, gpu), gpu) == 1);
  // ...so it runs the forward kernel's tiles, as the demand and the description say.
  CHECK(pipeweave::effective_config(multi_head, gpu).tile_q == 128);
  CHECK(pipeweave::demand(multi_head, gpu).ctas == 2);
  const Attention prompt = Attention::prefill(1, 64, 2, 2, 128);
  CHECK(pipeweave::attention_splits(prompt, pipeweave::default_config(prompt, gpu), gpu) == 1);
  // One split named beside its own tiles runs the forward kernel too.
  Attention one_split = grouped;
  one_split.config = AttentionConfig::own_tiles(AttentionImpl::flash2);
  one_split.config->num_splits = 1;
  CHECK(pipeweave::effective_config(one_split, gpu).tile_q == 128);
}

TEST_CASE("attention demand: decode packs GQA heads and splits KV", "[demand][attention]") {
  SECTION("Ampere default config, 5 SMs: 5 splits") {
    // Decode: 1 sequence, 4096 tokens of context, 8 query heads over 2 KV heads, head_dim 128.
    // Default on cc 8.0: FA2, tile_q 64, split-KV tile_kv 128 (head_dim <= 128).
    // GQA packing: the 4 query heads of a group share one 64-row tile: units = 1 seq * 2 kv heads.
    // KV blocks = 4096/128 = 32; FA2 weighs 2 units against twice the 5 SMs: the heuristic
    // case above with 10 -> 5 splits.
    const auto gpu = synthetic_gpu_cc80(5);
    const Attention attention = Attention::decode(1, 4096, 8, 2, 128);
    REQUIRE(attention.is_decode());
    const auto config = pipeweave::default_config(attention, gpu);
    CHECK(config.impl == AttentionImpl::flash2);
    CHECK(config.tile_q == 64);
    CHECK(config.tile_kv == 128);
    CHECK(pipeweave::attention_splits(attention, config, gpu) == 5);

    const auto d = pipeweave::demand(attention, gpu);
    CHECK(d.config_defaulted);
    CHECK(d.ctas == 2 /*kv heads*/ * 5 /*splits*/);
    CHECK(d.busiest_sm_ctas == 2);  // 10 equal CTAs on 5 SMs
    // Each split walks ceil(32/5) = 7 blocks = 896 keys with a (padded) 64-row tile.
    const double tensor_per_cta = 4.0 * 64 * 896 * 128;
    CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(2 * tensor_per_cta / 1024.0).epsilon(1e-9));
    CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(10 * tensor_per_cta / (1024.0 * 5)).epsilon(1e-9));

    // DRAM: Q and O (1 token * 8 heads * 128 * 2 B each), K and V (4096 * 2 kv heads * 128 * 2 B each),
    // plus the fp32 partial outputs written by 5 splits and read back by the combine pass.
    const double base = 1.0 * 8 * 128 * 2 * 2 + 4096.0 * 2 * 128 * 2 * 2;
    const double combine = 2 * 5 * 1.0 * 8 * 128 * 4;
    CHECK(at(d.gpu_cycles, Pipe::dram) == Approx((base + combine) / 1024.0).epsilon(1e-9));
    // L2 per CTA: its 4 packed query rows, 896 keys of K and V, and 4 rows of fp32 partial output;
    // the combine pass reads the partials once more.
    const double l2_per_cta = (4.0 + 2 * 896) * 128 * 2 + 4.0 * 128 * 4;
    CHECK(at(d.gpu_cycles, Pipe::l2) == Approx((10 * l2_per_cta + combine / 2) / 4096.0).epsilon(1e-9));
    // Each split walks 7 KV blocks; FA2 keeps one stage; the combine is a second kernel.
    CHECK(d.serial_steps == 7);
    CHECK(d.pipeline_stages == 1);
    CHECK(d.kernels == 2);
  }

  SECTION("2 SMs, 6 KV blocks: an ineligible split count is skipped") {
    // 8 query heads over 1 KV head, head_dim 128, 768 tokens = 6 blocks of 128: 1 unit against
    // FA2's 2 x 2 SMs -> 3 splits (the heuristic case with 4), each walking ceil(6/3) = 2
    // blocks = 256 keys; 3 CTAs on 2 SMs.
    const auto gpu = synthetic_gpu_cc80(2);
    const Attention attention = Attention::decode(1, 768, 8, 1, 128);
    const auto d = pipeweave::demand(attention, gpu);
    CHECK(d.ctas == 3);
    CHECK(d.busiest_sm_ctas == 2);
    CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(2 * 4.0 * 64 * 256 * 128 / 1024.0).epsilon(1e-9));
  }

  SECTION("a given num_splits overrides the heuristic") {
    const auto gpu = synthetic_gpu_cc80(10);
    Attention attention = Attention::decode(1, 4096, 8, 2, 128);
    attention.config = make_config(AttentionImpl::flash2, 64, 128, 2);
    const auto d = pipeweave::demand(attention, gpu);
    CHECK(d.ctas == 2 * 2);
    // 32 blocks / 2 splits = 16 blocks = 2048 keys per CTA.
    CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(4.0 * 64 * 2048 * 128 / 1024.0).epsilon(1e-9));
  }

  SECTION("without GQA every query head is its own unit; unsplit, FA2 runs its forward kernel") {
    // 8 heads over 8 KV heads: 8 units >= 0.8 * (2 x 5 SMs) -> no split. FA2 then runs its plain
    // forward kernel, 128 x 64 tiles: 8 CTAs of 1 real row padded to 128, 2 on the busiest SM.
    const auto gpu = synthetic_gpu_cc80(5);
    const Attention mha = Attention::decode(1, 4096, 8, 8, 128);
    const auto d = pipeweave::demand(mha, gpu);
    CHECK(d.ctas == 8);
    CHECK(d.busiest_sm_ctas == 2);
    CHECK(at(d.sm_cycles, Pipe::tensor) == Approx(2 * 4.0 * 128 * 4096 * 128 / 1024.0).epsilon(1e-9));
    CHECK(d.serial_steps == 4096 / 64);  // KV blocks of the forward kernel's 64
    CHECK(d.kernels == 1);
    // DRAM without splits: Q, O, and K, V for all 8 KV heads.
    CHECK(at(d.gpu_cycles, Pipe::dram) ==
          Approx((1.0 * 8 * 128 * 2 * 2 + 4096.0 * 8 * 128 * 2 * 2) / 1024.0).epsilon(1e-9));
  }

  SECTION("the causal flag changes nothing for one query token") {
    const auto gpu = synthetic_gpu_cc80(10);
    Attention causal = Attention::decode(2, 1000, 8, 2, 128);
    Attention full = causal;
    full.causal = false;
    const auto dc = pipeweave::demand(causal, gpu);
    const auto df = pipeweave::demand(full, gpu);
    CHECK(dc.gpu_cycles == df.gpu_cycles);
    CHECK(dc.sm_cycles == df.sm_cycles);
  }
}

TEST_CASE("attention default config by architecture and head size", "[demand][attention]") {
  const auto hopper = synthetic_gpu(4);
  auto ampere = synthetic_gpu_cc80(4);
  ampere.smem_bytes_per_sm = 164.0 * 1024;  // the A100's
  const Attention prefill64 = Attention::prefill(1, 1024, 8, 8, 64);
  const Attention prefill128 = Attention::prefill(1, 1024, 8, 8, 128);
  const Attention prefill256 = Attention::prefill(1, 1024, 8, 8, 256);
  const Attention decode64 = Attention::decode(4, 1024, 8, 8, 64);

  CHECK(pipeweave::default_config(prefill128, hopper).impl == AttentionImpl::flash3);
  CHECK(pipeweave::default_config(prefill128, hopper).tile_q == 128);
  // FlashAttention-3's tile_size_fwd_sm90: causal prefills take the narrower KV tile.
  CHECK(pipeweave::default_config(prefill64, hopper).tile_q == 192);
  CHECK(pipeweave::default_config(prefill64, hopper).tile_kv == 128);
  CHECK(pipeweave::default_config(prefill128, hopper).tile_kv == 128);
  CHECK(pipeweave::default_config(prefill256, hopper).tile_kv == 80);
  Attention full128 = prefill128;
  full128.causal = false;
  CHECK(pipeweave::default_config(full128, hopper).tile_kv == 176);
  // Decode packs its query heads into the same tiles; a cache paged in pages that do not hold
  // whole KV tiles is read without TMA, with the narrower tile.
  CHECK(pipeweave::default_config(decode64, hopper).tile_q == 192);
  CHECK(pipeweave::default_config(decode64, hopper).tile_kv == 192);
  Attention paged64 = decode64;
  paged64.page_size = 1;
  CHECK(pipeweave::default_config(paged64, hopper).tile_kv == 128);
  paged64.page_size = 384;  // two whole KV tiles a page, but decode's rows fill no tile: still no TMA
  CHECK(pipeweave::default_config(paged64, hopper).tile_kv == 128);
  Attention paged_prompt = Attention::prefill(1, 1024, 8, 8, 64);  // 1024 rows fill a 192-row tile: TMA
  paged_prompt.causal = false;
  paged_prompt.page_size = 384;
  CHECK(pipeweave::default_config(paged_prompt, hopper).tile_kv == 192);
  paged_prompt.page_size = 16;
  CHECK(pipeweave::default_config(paged_prompt, hopper).tile_kv == 128);

  CHECK(pipeweave::default_config(prefill128, ampere).impl == AttentionImpl::flash2);
  CHECK(pipeweave::default_config(prefill64, ampere).tile_kv == 128);
  CHECK(pipeweave::default_config(prefill128, ampere).tile_kv == 64);
  // FlashAttention-2's head size 256: 128 x 64 where one such CTA fits an SM's shared memory but
  // two 64 x 64 CTAs do not (the A100), 64 x 64 where two do (Hopper: what the H100 and H200 ran,
  // data/measurements/*/attention_hd256.csv) or where 128 x 64 does not fit (sm_86, sm_89).
  CHECK(pipeweave::default_config(prefill256, ampere).tile_q == 128);
  CHECK(pipeweave::default_config(prefill256, ampere).tile_kv == 64);
  CHECK(pipeweave::flash2_config(prefill256, hopper).tile_q == 64);
  CHECK(pipeweave::flash2_config(prefill256, hopper).tile_kv == 64);
  CHECK(pipeweave::default_config(decode64, ampere).tile_q == 64);
  CHECK(pipeweave::default_config(decode64, ampere).tile_kv == 256);
  // sm_86 / sm_89 (A40, L40, RTX boards): square 64 x 64 tiles under a causal mask, 128 x 32 without.
  auto ada = synthetic_gpu_cc80(4);
  ada.compute_capability_minor = 9;
  ada.smem_bytes_per_sm = 100.0 * 1024;
  CHECK(pipeweave::default_config(prefill128, ada).tile_q == 64);
  CHECK(pipeweave::default_config(prefill128, ada).tile_kv == 64);
  CHECK(pipeweave::default_config(full128, ada).tile_q == 128);
  CHECK(pipeweave::default_config(full128, ada).tile_kv == 32);
  CHECK(pipeweave::default_config(prefill256, ada).tile_q == 64);
  CHECK(pipeweave::default_config(prefill256, ada).tile_kv == 64);
  // A decode batch's forward kernel has no causal mask (FlashAttention-2 drops it for one query).
  CHECK(pipeweave::flash2_tiles(128, /*causal=*/false, /*split_kernel=*/false, ada).tile_kv == 32);
}

TEST_CASE("attention: an implementation named without tiles runs its own for the GPU", "[demand][attention]") {
  const auto hopper = synthetic_gpu(4);
  Attention prefill = Attention::prefill(1, 1024, 8, 8, 256);
  prefill.config = AttentionConfig::own_tiles(AttentionImpl::flash2);
  prefill.config->num_splits = 2;
  const AttentionConfig resolved = pipeweave::resolved_config(prefill, hopper);
  CHECK(resolved.impl == AttentionImpl::flash2);
  CHECK(resolved.tile_q == 64);
  CHECK(resolved.tile_kv == 64);
  CHECK(resolved.num_splits == 2);  // a split count named beside the implementation stays
  // The demand is that of the tiles written out.
  Attention written = prefill;
  written.config = resolved;
  const auto own = pipeweave::demand(prefill, hopper), explicit_tiles = pipeweave::demand(written, hopper);
  CHECK(own.ctas == explicit_tiles.ctas);
  CHECK(own.busiest_sm_ctas == explicit_tiles.busiest_sm_ctas);
  CHECK(at(own.sm_cycles, Pipe::tensor) == at(explicit_tiles.sm_cycles, Pipe::tensor));
  CHECK(at(own.gpu_cycles, Pipe::dram) == at(explicit_tiles.gpu_cycles, Pipe::dram));
  CHECK(pipeweave::attention_splits(prefill, *prefill.config, hopper) == 2);
  // Zero tiles on one side only are not "its own".
  AttentionConfig half = AttentionConfig::own_tiles(AttentionImpl::flash3);
  half.tile_q = 128;
  CHECK_THROWS_WITH(half.validate(), Catch::Contains("attention.tile_kv"));
}

TEST_CASE("attention demand: paged KV adds block-table reads", "[demand][attention]") {
  // Decode, 1 sequence, 1024 keys, 1 KV head with 4 query heads, head_dim 64, 1 split (given).
  // With 16-token pages the CTA reads ceil(1024/16) = 64 block-table entries of 4 B.
  const auto gpu = synthetic_gpu_cc80(4);
  Attention contiguous = Attention::decode(1, 1024, 4, 1, 64);
  contiguous.config = make_config(AttentionImpl::flash2, 64, 256, 1);
  Attention paged = contiguous;
  paged.page_size = 16;
  const auto dc = pipeweave::demand(contiguous, gpu);
  const auto dp = pipeweave::demand(paged, gpu);
  CHECK(at(dp.sm_cycles, Pipe::l2) - at(dc.sm_cycles, Pipe::l2) == Approx(64.0 * 4 / 1024.0).epsilon(1e-9));
  CHECK(at(dp.sm_cycles, Pipe::tensor) == at(dc.sm_cycles, Pipe::tensor));
}

TEST_CASE("attention demand: fp8 needs an fp8 tensor path", "[demand][attention]") {
  Attention attention = Attention::prefill(1, 256, 2, 2, 64, DType::fp8_e4m3);
  CHECK_THROWS_AS(pipeweave::demand(attention, synthetic_gpu_cc80(4)), pipeweave::Error);
  CHECK_THROWS_WITH(pipeweave::demand(attention, synthetic_gpu_cc80(4)), Catch::Contains("fp8"));
  // On the Hopper-like GPU the same kernel runs at the fp8 rate of 2048 flops/clk/SM:
  // default FA3 fp8 tile 192 x 160 (head_dim 64): tile 0 (rows 0-191) sees 192 keys -> 2 blocks
  // of 160 = 320 rows, tile 1 (rows 192-255) sees 256 keys -> 2 blocks = 320 rows. 2 heads.
  const auto d = pipeweave::demand(attention, synthetic_gpu(4));
  CHECK(at(d.gpu_cycles, Pipe::tensor) == Approx(2 * 4.0 * 192 * 64 * (320 + 320) / (2048.0 * 4)).epsilon(1e-9));
}

TEST_CASE("attention demand: a KV split count past the longest sequence's KV blocks is refused", "[demand][attention]") {
  // The longest KV is 512 tokens, 8 blocks of 64: eight splits give each one block, nine would
  // leave one empty (num_splits=1000000 was predicted as if it ran).
  Attention attention = Attention::decode(2, 512, 8, 8, 128);
  attention.kv_lens[1] = 100;
  attention.config = make_config(AttentionImpl::flash2, 64, 64, 8);
  const auto gpu = synthetic_gpu(4);
  CHECK_NOTHROW(pipeweave::demand(attention, gpu));
  for (const int splits : {9, 1000000}) {
    attention.config->num_splits = splits;
    CHECK_THROWS_WITH(pipeweave::demand(attention, gpu),
                      Catch::Contains("attention.num_splits must be at most the KV blocks of the longest sequence, ceil(512 / 64) = 8") &&
                          Catch::Contains("got " + std::to_string(splits)));
  }
}

TEST_CASE("list schedule: SMs taken in groups schedule as the SMs one by one", "[demand][attention]") {
  // The reference: every SM its own entry, the r least loaded (the longest waiting first among
  // equal loads) take a class's remainder, one CTA each.
  const auto reference = [](const std::vector<pipeweave::detail::CtaClass>& classes, const pipeweave::GpuSpec& gpu,
                            double tensor_rate) {
    const pipeweave::PipeArray rate = pipeweave::detail::per_sm_rates(gpu, tensor_rate);
    const auto sms = static_cast<std::size_t>(gpu.sm_count);
    std::vector<double> load(sms, 0.0), last(sms, 0.0), ctas(sms, 0.0);
    std::vector<pipeweave::detail::PipeWork> work(sms, pipeweave::detail::PipeWork{});
    double stamp = 0;
    for (std::size_t i = 0; i < sms; ++i) last[i] = -static_cast<double>(sms) + static_cast<double>(i);
    for (const auto& cta_class : classes) {
      const double cost = pipeweave::detail::cta_cycles(cta_class.work, rate);
      const auto count = static_cast<std::size_t>(cta_class.count);
      for (std::size_t i = 0; i < sms; ++i) {  // whole rounds: every SM the same
        for (std::size_t p = 0; p < pipeweave::kPipeCount; ++p) work[i][p] += static_cast<double>(count / sms) * cta_class.work[p];
        ctas[i] += static_cast<double>(count / sms);
      }
      std::vector<std::size_t> order(sms);
      for (std::size_t i = 0; i < sms; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return load[a] < load[b] || (load[a] == load[b] && last[a] < last[b]); });
      for (std::size_t k = 0; k < count % sms; ++k) {
        const std::size_t sm = order[k];
        load[sm] += cost, last[sm] = stamp++, ctas[sm] += 1;
        for (std::size_t p = 0; p < pipeweave::kPipeCount; ++p) work[sm][p] += cta_class.work[p];
      }
    }
    std::size_t busiest = 0;
    for (std::size_t i = 1; i < sms; ++i)
      if (load[i] > load[busiest] || (load[i] == load[busiest] && last[i] > last[busiest])) busiest = i;
    return std::pair{work[busiest], ctas[busiest]};
  };
  std::mt19937 rng(3);
  for (const int sm_count : {132, 108, 12}) {
    const pipeweave::GpuSpec gpu = synthetic_gpu(sm_count);
    for (int trial = 0; trial < 200; ++trial) {
      const int multiple = 1 << (trial % 4);  // remainders sharing a factor with the SM count, or not
      std::vector<pipeweave::detail::CtaClass> classes(1 + rng() % 60);
      for (auto& cta_class : classes) {
        for (double& work : cta_class.work) work = rng() % 3 == 0 ? 0.0 : static_cast<double>(1 + rng() % (trial % 2 ? 4 : 100000));
        cta_class.count = static_cast<double>(multiple * (rng() % 80));
      }
      const pipeweave::Demand grouped = pipeweave::detail::list_schedule(classes, gpu, 1000, 2);
      const auto [busiest_work, busiest_ctas] = reference(classes, gpu, 1000);
      pipeweave::Demand expected;
      pipeweave::detail::PipeWork total{};
      double ctas = 0;
      for (const auto& cta_class : classes) {
        for (std::size_t p = 0; p < pipeweave::kPipeCount; ++p) total[p] += cta_class.count * cta_class.work[p];
        ctas += cta_class.count;
      }
      pipeweave::detail::fill_cycles(expected, total, busiest_work, gpu, 1000);
      INFO(sm_count << " SMs, trial " << trial);
      CHECK(grouped.ctas == ctas);
      CHECK(grouped.busiest_sm_ctas == Approx(busiest_ctas));
      for (const Pipe pipe : pipeweave::kAllPipes) {
        CHECK(at(grouped.sm_cycles, pipe) == Approx(at(expected.sm_cycles, pipe)).epsilon(1e-12));
        CHECK(at(grouped.gpu_cycles, pipe) == Approx(at(expected.gpu_cycles, pipe)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("list schedule: work that is not finite reaches every SM's sum, whole rounds or none", "[demand][attention]") {
  // Classes without a whole round add nothing to every SM's work, and are passed over there while
  // every work is finite; a class whose work is infinite must still make that sum what the
  // scalar definition gives, 0 x inf = NaN, so that no figure reads as finite.
  const pipeweave::GpuSpec gpu = synthetic_gpu(132);
  std::vector<pipeweave::detail::CtaClass> classes(2);
  at(classes[0].work, Pipe::tensor) = 1000, classes[0].count = 200;  // one whole round and 68 more
  at(classes[1].work, Pipe::fma) = std::numeric_limits<double>::infinity(), classes[1].count = 4;  // no whole round
  const pipeweave::Demand infinite = pipeweave::detail::list_schedule(classes, gpu, 1000, 2);
  CHECK(std::isnan(at(infinite.sm_cycles, Pipe::fma)));
  CHECK(std::isinf(at(infinite.gpu_cycles, Pipe::fma)));
  // The same classes with finite work: the busiest SM holds the whole round and one CTA of each
  // class it was dealt (the 68 least loaded take the first's remainder, the next 4 the second's).
  at(classes[1].work, Pipe::fma) = 64;
  const pipeweave::Demand finite = pipeweave::detail::list_schedule(classes, gpu, 1000, 2);
  CHECK(std::isfinite(at(finite.sm_cycles, Pipe::fma)));
  CHECK(at(finite.sm_cycles, Pipe::tensor) == Approx(2.0 * 1000 / 1000));
  CHECK(finite.busiest_sm_ctas == 2);
}

TEST_CASE("attention classes: whole-number tile counts are ceil in doubles, to the bit", "[demand][attention]") {
  // attention_classes counts each class's KV tiles in integers (WholeCeilDivisor); this is the
  // same count in doubles, as the model states it, over random lengths, tiles, groups and splits.
  std::mt19937_64 random(2026);
  const auto draw = [&](std::initializer_list<std::int64_t> values) { return values.begin()[random() % values.size()]; };
  int classes_checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Attention attention;
    attention.kv_heads = draw({1, 2, 4, 8, 3});
    attention.heads = attention.kv_heads * draw({1, 2, 3, 4, 5, 6, 7, 8, 16});
    attention.head_dim = draw({64, 96, 128, 256});
    attention.causal = random() % 4 != 0;
    const int sequences = 1 + static_cast<int>(random() % 12);
    for (int s = 0; s < sequences; ++s) {
      const std::int64_t q = random() % 3 == 0 ? 1 : 1 + static_cast<std::int64_t>(random() % 5000);
      attention.q_lens.push_back(q);
      attention.kv_lens.push_back(q + static_cast<std::int64_t>(random() % (random() % 8 == 0 ? 1000000 : 9000)));
    }
    AttentionConfig config{.impl = random() % 2 ? AttentionImpl::flash2 : AttentionImpl::flash3,
                           .tile_q = static_cast<int>(draw({64, 128, 192, 48})),
                           .tile_kv = static_cast<int>(draw({32, 64, 80, 96, 112, 128, 176}))};
    const bool decode = attention.is_decode();
    const double groups = static_cast<double>(attention.heads / attention.kv_heads);
    const double rows_per_position = pipeweave::packs_gqa(attention, config.impl) && !decode ? groups : 1.0;
    std::vector<int> splits;
    for (int s = 0; s < sequences; ++s) splits.push_back(static_cast<int>(draw({1, 1, 2, 3, 5})));
    pipeweave::detail::QueryTiles query(attention, config.impl, decode, config.tile_q);
    double query_tiles = 0;
    for (const std::int64_t q : attention.q_lens) query_tiles += query.tiles(query.rows(q));
    const pipeweave::detail::AttentionClasses built =
        pipeweave::detail::attention_classes(attention, config, splits, decode, 1, rows_per_position, static_cast<std::size_t>(query_tiles));
    // The same walk in doubles: each sequence's query tiles (none again for a sequence like the one before).
    std::size_t c = 0;
    const double tq = config.tile_q, tkv = config.tile_kv;
    for (int s = 0; s < sequences; ++s) {
      const double q = static_cast<double>(attention.q_lens[s]), kv = static_cast<double>(attention.kv_lens[s]);
      const double rows = decode ? groups : (pipeweave::packs_gqa(attention, config.impl) ? q * groups : q);
      const double q_tiles = std::ceil(rows / tq);
      for (double tile = 0; tile < q_tiles; ++tile, ++c) {
        const double visible =
            attention.causal && !decode ? std::min(kv, kv - q + std::min(q, std::ceil((tile + 1) * tq / rows_per_position))) : kv;
        const double tiles = std::ceil(std::ceil(visible / tkv) / splits[static_cast<std::size_t>(s)]);
        REQUIRE(c < built.kv_tiles.size());
        INFO("trial " << trial << ", sequence " << s << ", tile " << tile);
        CHECK(built.kv_tiles[c] == tiles);
        CHECK(at(built.classes[c].work, Pipe::tensor) == 4 * tq * (tiles * tkv) * static_cast<double>(attention.head_dim));
        ++classes_checked;
      }
    }
    CHECK(c == built.kv_tiles.size());
  }
  CHECK(classes_checked > 10000);
}

TEST_CASE("attention demand: a head size off FlashAttention's alignment: FA2 pads it, FA3 refuses it", "[demand][attention]") {
  // FlashAttention-2's interface pads the head with zeros to a multiple of 8: a head of 3 computes as one of 8
  const pipeweave::GpuSpec& a100 = pipeweave::find_gpu("A100-SXM4-80GB");
  const auto demand_of = [](std::int64_t head_dim, DType dtype, const pipeweave::GpuSpec& gpu) {
    return pipeweave::demand(Attention::prefill(1, 4096, 32, 8, head_dim, dtype), gpu);
  };
  for (const std::int64_t head_dim : {1, 3, 7}) {
    INFO("head_dim " << head_dim);
    CHECK(demand_of(head_dim, DType::bf16, a100).sm_cycles == demand_of(8, DType::bf16, a100).sm_cycles);
  }
  CHECK(demand_of(9, DType::bf16, a100).sm_cycles == demand_of(16, DType::bf16, a100).sm_cycles);
  CHECK(demand_of(8, DType::bf16, a100).sm_cycles != demand_of(16, DType::bf16, a100).sm_cycles);
  // FlashAttention-3 refuses it (a multiple of 8; of 16 in fp8), as Hopper's default implementation
  const pipeweave::GpuSpec& h100 = pipeweave::find_gpu("H100-SXM");
  CHECK_THROWS_WITH(demand_of(3, DType::bf16, h100), Catch::Contains("attention.head_dim must be a multiple of 8 for impl=flash3"));
  CHECK_THROWS_WITH(demand_of(72, DType::fp8_e4m3, h100),
                    Catch::Contains("attention.head_dim must be a multiple of 16 for impl=flash3") && Catch::Contains("got 72"));
  CHECK_NOTHROW(demand_of(72, DType::bf16, h100));
}
