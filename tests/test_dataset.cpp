// Measurement CSVs read back as kernels, and the accuracy figures of an evaluation.
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "pipeweave/dataset.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/workload.hpp"
#include "pipeweave/error.hpp"
#include "test_support.hpp"

using namespace pipeweave;
using Catch::Detail::Approx;
using Catch::Matchers::Contains;
using pipeweave_test::error_of;

TEST_CASE("CSV lines split on commas outside quotes") {
  CHECK(split_csv_line("a,b,,c") == std::vector<std::string>{"a", "b", "", "c"});
  CHECK(split_csv_line("x,\"void f<1, 2>(int)\",y\r") == std::vector<std::string>{"x", "void f<1, 2>(int)", "y"});
  CHECK(split_csv_line("\"say \"\"hi\"\"\",2") == std::vector<std::string>{"say \"hi\"", "2"});
}

TEST_CASE("a row timed as served says so (its l2 column), others do not") {
  const std::string header = "gpu,dtype,m,n,k,duration_us,l2\n";
  const std::vector<MeasuredKernel> rows =
      measurements_from_csv(header + "H100-SXM,bf16,64,4096,4096,10,served\nH100-SXM,bf16,64,4096,4096,9,cold\nH100-SXM,bf16,64,4096,4096,9,\n");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].served);
  CHECK_FALSE(rows[1].served);
  CHECK_FALSE(rows[2].served);
  CHECK_FALSE(measurements_from_csv("gpu,dtype,m,n,k,duration_us\nH100-SXM,bf16,64,4096,4096,10\n")[0].served);  // no column
}

TEST_CASE("a measurement file's header names each column once; a byte-order mark before it is passed over") {
  CHECK_THROWS_WITH(measurements_from_csv("gpu,dtype,m,n,k,duration_us,m\nH100-SXM,bf16,64,4096,4096,10,65\n", "rows.csv"),
                    "rows.csv:1: the header names the column \"m\" twice");
  CHECK(measurements_from_csv("\xEF\xBB\xBFgpu,dtype,m,n,k,duration_us\nH100-SXM,bf16,64,4096,4096,10\n").size() == 1);
}

TEST_CASE("GEMM rows become Gemm kernels with the config that ran") {
  const std::string csv =
      "gpu,dtype,m,n,k,tile_m,tile_n,tile_k,split_k,stages,cluster_m,cluster_n,duration_us,candidate,is_default,extra\n"
      "H100-SXM,bf16,384,448,1472,40,64,64,1,16,4,2,5.696,0,1,ignored\n"
      "H100-SXM,fp8_e4m3,16,4096,4096,8,64,128,2,7,2,1,11.5,3,0,ignored\n";
  const std::vector<MeasuredKernel> rows = measurements_from_csv(csv);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].gpu == "H100-SXM");
  CHECK(rows[0].duration_us == 5.696);
  CHECK(rows[0].is_default);
  CHECK_FALSE(rows[1].is_default);
  CHECK(rows[0].candidate == 0);
  CHECK(rows[1].candidate == 3);
  const Gemm& gemm = std::get<Gemm>(rows[1].kernel.op());
  CHECK(gemm.m == 16);
  CHECK(gemm.dtype == DType::fp8_e4m3);
  REQUIRE(gemm.config);
  GemmConfig expected;  // without the MMA columns: GemmConfig's defaults for those
  expected.tile_m = 8, expected.tile_n = 64, expected.tile_k = 128, expected.split_k = 2, expected.stages = 7;
  expected.cluster_m = 2, expected.cluster_n = 1;
  CHECK(*gemm.config == expected);
  CHECK(rows[0].shape == "gemm:bf16,384,448,1472");
  CHECK(rows[0].shape != rows[1].shape);
}

TEST_CASE("GEMM rows: the MMA shape, schedule and raster columns") {
  const std::string header =
      "gpu,dtype,m,n,k,tile_m,tile_n,tile_k,split_k,stages,cluster_m,cluster_n,duration_us,swap_ab,schedule,raster\n";
  const std::vector<MeasuredKernel> rows = measurements_from_csv(header +
                                                                 "H100-SXM,bf16,384,448,1472,40,128,64,1,16,4,2,5.6,1,cooperative,m\n"
                                                                 "H100-SXM,bf16,384,448,1472,64,192,64,1,8,1,1,6.1,0,cooperative_split_n,n\n");
  REQUIRE(rows.size() == 2);
  const GemmConfig& swapped = *std::get<Gemm>(rows[0].kernel.op()).config;
  CHECK(swapped.swap_ab);
  CHECK(swapped.schedule == GemmSchedule::cooperative);
  CHECK(swapped.raster == GemmRaster::along_m);
  const GemmConfig& split_n = *std::get<Gemm>(rows[1].kernel.op()).config;
  CHECK_FALSE(split_n.swap_ab);
  CHECK(split_n.schedule == GemmSchedule::cooperative_split_n);
  CHECK(split_n.raster == GemmRaster::along_n);
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,384,448,1472,40,128,64,1,16,4,2,5.6,2,cooperative,m\n", "g.csv"); }),
             Contains("g.csv:2: swap_ab must be 0 or 1") && Contains("\"2\""));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,384,448,1472,40,128,64,1,16,4,2,5.6,1,coopA,m\n", "g.csv"); }),
             Contains("g.csv:2: schedule must be ping_pong, cooperative or cooperative_split_n") && Contains("coopA"));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,384,448,1472,40,128,64,1,16,4,2,5.6,1,cooperative,h\n", "g.csv"); }),
             Contains("g.csv:2: raster must be m or n") && Contains("\"h\""));
  // Empty cells: the data does not say them (a kernel whose name does not), GemmConfig's defaults.
  const GemmConfig unstated = *std::get<Gemm>(measurements_from_csv(header + "H100-SXM,bf16,384,448,1472,40,128,64,1,16,4,2,5.6,,,\n")[0].kernel.op()).config;
  CHECK_FALSE(unstated.swap_ab);
  CHECK(unstated.schedule == GemmSchedule::ping_pong);
  CHECK(unstated.raster == GemmRaster::along_n);
  // A tile beyond an int is refused, not wrapped (2^32 + 64 would wrap to 64).
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,384,448,1472,4294967360,128,64,1,16,4,2,5.6,0,ping_pong,n\n", "g.csv"); }),
             Contains("g.csv:2: tile_m is out of range") && Contains("4294967360"));
  // Cooperative needs two warpgroups of 64 rows on the MMA's M side: here tile_m (no swap) is 64.
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,384,448,1472,64,128,64,1,8,1,1,5.6,0,cooperative,m\n", "g.csv"); }),
             Contains("g.csv:2: gemm.tile_m must be a multiple of 128 for the cooperative schedule") && Contains("got 64"));
}

TEST_CASE("RMSNorm, SiLU-mul and attention rows become their kernels") {
  const auto norm = measurements_from_csv("gpu,dtype,tokens,hidden,fused_residual,threads,duration_us\nH200-SXM,bf16,174,14208,1,1024,6.75\n");
  REQUIRE(norm.size() == 1);
  CHECK(std::get<RmsNorm>(norm[0].kernel.op()) == RmsNorm{.tokens = 174, .hidden = 14208, .dtype = DType::bf16, .fused_residual = true});
  const auto silu = measurements_from_csv("gpu,dtype,tokens,dim,threads,duration_us\nH100-SXM,bf16,3,2048,1024,2.5\n");
  CHECK(std::get<SiluMul>(silu[0].kernel.op()) == SiluMul{.tokens = 3, .dim = 2048, .dtype = DType::bf16});
  const auto attention = measurements_from_csv(
      "gpu,dtype,batch,q_lens,kv_lens,heads,kv_heads,head_dim,causal,impl,tile_q,tile_kv,warps,num_splits,duration_us,kernel\n"
      "H100-SXM,bf16,2,1/1,4000/9000,32,8,128,1,flash2,64,128,4,5,30,\"void k<128, 64>()\"\n");
  REQUIRE(attention.size() == 1);
  const Attention& a = std::get<Attention>(attention[0].kernel.op());
  CHECK(a.q_lens == std::vector<std::int64_t>{1, 1});
  CHECK(a.kv_lens == std::vector<std::int64_t>{4000, 9000});
  CHECK(a.causal);
  REQUIRE(a.config);
  CHECK(*a.config == AttentionConfig{.impl = AttentionImpl::flash2, .tile_q = 64, .tile_kv = 128, .num_splits = 5});
  CHECK(attention[0].shape == "attention:bf16,1/1,4000/9000,32,8,128,1");
}

TEST_CASE("fused-MoE rows become FusedMoe kernels, the routing's skew from the zipf column") {
  const std::string header = "gpu,dtype,tokens,experts,top_k,hidden,intermediate,block_m,block_n,block_k,stages,group_m,warps,"
                             "duration_us,is_default,zipf\n";
  const auto rows = measurements_from_csv(header + "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,113.4,0,1.2\n"
                                                   "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,120.5,0,0\n"
                                                   "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,121.0,1,\n");
  REQUIRE(rows.size() == 3);
  CHECK(std::get<FusedMoe>(rows[0].kernel.op()).zipf == 1.2);
  CHECK(std::get<FusedMoe>(rows[1].kernel.op()).zipf == 0);
  CHECK(std::get<FusedMoe>(rows[2].kernel.op()).zipf == 0);  // an empty cell: uniform
  // Skewed and uniform routing of one shape are two shapes (an autotuner ranks each's configs).
  CHECK(rows[0].shape == "fused_moe:bf16,64,64,6,2048,1408,zipf=1.2");
  CHECK(rows[1].shape == "fused_moe:bf16,64,64,6,2048,1408");
  CHECK_FALSE(rows[0].is_default);
  CHECK(rows[2].is_default);
  CHECK_THROWS_WITH(measurements_from_csv(header + "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,113.4,0,9\n"),
                    Catch::Contains("fused_moe.zipf"));
  // The expert-parallel ranks from the ep column (absent or empty: one); a rank's shape is a shape of its own.
  const std::string with_ep = "gpu,dtype,tokens,experts,top_k,hidden,intermediate,block_m,block_n,block_k,stages,group_m,warps,"
                              "duration_us,is_default,zipf,ep\n";
  const auto ranked = measurements_from_csv(with_ep + "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,40.1,0,0,8\n"
                                                      "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,113.4,0,0,\n");
  CHECK(std::get<FusedMoe>(ranked[0].kernel.op()).expert_parallel == 8);
  CHECK(std::get<FusedMoe>(ranked[1].kernel.op()).expert_parallel == 1);
  CHECK(ranked[0].shape == "fused_moe:bf16,64,64,6,2048,1408,ep=8");
  CHECK(ranked[1].shape == "fused_moe:bf16,64,64,6,2048,1408");
  CHECK_THROWS_WITH(measurements_from_csv(with_ep + "H100-SXM,bf16,64,64,6,2048,1408,16,128,128,4,32,8,40.1,0,0,5\n"),
                    Catch::Contains("fused_moe.ep must divide"));
}

TEST_CASE("measurement CSVs: errors name the line and the column") {
  const std::string header = "gpu,dtype,tokens,dim,threads,duration_us\n";
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,3,two,1024,2.5\n", "f.csv"); }),
             Contains("f.csv:2: dim") && Contains("\"two\""));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,3,2048,1024,-2.5\n", "f.csv"); }),
             Contains("f.csv:2: duration_us must be positive") && Contains("-2.5"));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,3,2048\n", "f.csv"); }),
             Contains("f.csv:2: the row's cell count") && Contains("4"));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf17,3,2048,1024,2.5\n", "f.csv"); }),
             Contains("f.csv:2: dtype") && Contains("bf17"));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,-3,2048,1024,2.5\n", "f.csv"); }),
             Contains("f.csv:2: silu_mul.tokens must be positive"));
  CHECK_THAT(error_of([] { measurements_from_csv("gpu,dtype,foo,duration_us\nH100-SXM,bf16,1,2\n", "f.csv"); }),
             Contains("f.csv:1: the header names no known op family"));
  CHECK_THAT(error_of([] { measurements_from_csv("dtype,m,n,k\n", "f.csv"); }), Contains("gpu and duration_us"));
  CHECK_THAT(error_of([] { measurements_from_csv("", "f.csv"); }), Contains("f.csv: no header row"));
  CHECK_THAT(error_of([] { read_measurements("/no/such.csv"); }), Contains("cannot open measurements file /no/such.csv"));
  const std::string attention_header = "gpu,dtype,batch,q_lens,kv_lens,heads,kv_heads,head_dim,causal,impl,tile_q,tile_kv,warps,num_splits,duration_us\n";
  CHECK_THAT(error_of([&] { measurements_from_csv(attention_header + "H100-SXM,bf16,2,1/x,4/5,32,8,128,1,flash2,64,128,4,1,30\n", "a.csv"); }),
             Contains("a.csv:2: q_lens") && Contains("\"1/x\""));
  CHECK_THAT(error_of([&] { measurements_from_csv(attention_header + "H100-SXM,bf16,1,1,4,32,8,128,1,flash9,64,128,4,1,30\n", "a.csv"); }),
             Contains("a.csv:2: impl") && Contains("flash9"));
  // Flags are 0 or 1 (2 and -7 once read as 1), and a config is all its cells or none
  CHECK_THAT(error_of([&] { measurements_from_csv(attention_header + "H100-SXM,bf16,1,1,4,32,8,128,5,flash2,64,128,4,1,30\n", "a.csv"); }),
             Contains("a.csv:2: causal") && Contains("must be 0 or 1") && Contains("\"5\""));
  CHECK_THAT(error_of([] {
               measurements_from_csv("gpu,dtype,tokens,hidden,fused_residual,threads,duration_us\nH200-SXM,bf16,174,14208,-7,1024,6.75\n", "r.csv");
             }),
             Contains("r.csv:2: fused_residual") && Contains("must be 0 or 1"));
  const std::string gemm_header = "gpu,dtype,m,n,k,tile_m,tile_n,tile_k,split_k,stages,cluster_m,cluster_n,duration_us\n";
  CHECK_THAT(error_of([&] { measurements_from_csv(gemm_header + "H100-SXM,bf16,64,64,64,,128,64,1,4,1,1,5.0\n", "g.csv"); }),
             Contains("g.csv:2: tile_m") && Contains("must be given where tile_n is"));
  CHECK(measurements_from_csv(gemm_header + "H100-SXM,bf16,64,64,64,,,,,,,,5.0\n", "g.csv").size() == 1);  // config-less: fine
}

TEST_CASE("accuracy: percentage errors, their spread, and rank correlation") {
  // Errors: 10%, 0%, 50%, 20% -> mean 20, median 15, nearest-rank p90 = the 4th of 4 = 50.
  const std::vector<double> measured{10, 20, 40, 50};
  const std::vector<double> predicted{11, 20, 60, 40};
  const Accuracy a = accuracy(predicted, measured);
  CHECK(a.rows == 4);
  CHECK(a.mape_pct == Approx(20));
  CHECK(a.median_ape_pct == Approx(15));
  CHECK(a.p90_ape_pct == Approx(50));
  CHECK(a.within_10_pct == Approx(50));  // 10% counts as within 10%
  CHECK(a.within_20_pct == Approx(75));
  // Ranks: measured 1,2,3,4; predicted 1,2,4,3 -> d^2 sum 2 -> rho = 1 - 6*2/(4*15) = 0.8.
  CHECK(a.spearman == Approx(0.8));
  // Ties share ranks: predicted 1,1,2,2 against 1,2,3,4 -> ranks 1.5,1.5,3.5,3.5 -> rho = 0.894427.
  CHECK(accuracy(std::vector<double>{1, 1, 2, 2}, measured).spearman == Approx(0.894427).epsilon(1e-5));
  CHECK_THAT(error_of([&] { accuracy(std::vector<double>{1, 2}, measured); }), Contains("predictions") && Contains("4"));
  CHECK_THAT(error_of([] { accuracy(std::vector<double>{}, std::vector<double>{}); }), Contains("at least one"));
  CHECK_THAT(error_of([&] { accuracy(std::vector<double>{1, 2, 0, 4}, measured); }), Contains("predicted[2]"));
}

TEST_CASE("ranking accuracy: per shape order, the first choice, and its slowdown") {
  using pipeweave::ranking_accuracy;
  // Shape a: the score orders its three candidates exactly as measured (rho 1) and picks the
  // fastest. Shape b: the score has it backwards (rho -1) and picks 5 us where 4 us was on
  // offer, 25% slower. Shape c has one candidate and says nothing about order.
  const std::vector<std::string> shapes{"a", "b", "a", "c", "a", "b"};
  const std::vector<double> score{1.0, 1.0, 3.0, 7.0, 2.0, 2.0};
  const std::vector<double> measured{10.0, 5.0, 12.0, 9.0, 11.0, 4.0};
  const auto r = ranking_accuracy(shapes, score, measured);
  CHECK(r.shapes == 2);
  CHECK(r.mean_spearman == Approx(0.0).margin(1e-12));
  CHECK(r.best_found_pct == Approx(50.0));
  CHECK(r.mean_slowdown_pct == Approx(12.5));
  CHECK(r.p90_slowdown_pct == Approx(25.0));  // nearest rank of {0, 25}
  // Pairs by how far apart they measured: shape a's 10/11 and 11/12 us are 9.5% and 8.7% apart
  // (5-10%), 10/12 us 18.2% (10-20%), all in order; shape b's 5/4 us, 22.3% (beyond 20%), reversed.
  using Bands = std::array<std::size_t, 6>;
  CHECK(r.pairs == Bands{0, 0, 0, 2, 1, 1});
  CHECK(r.misordered_pairs == Bands{0, 0, 0, 0, 0, 1});
  // Two candidates 0.5% apart, ordered the wrong way: the first band.
  const auto close = ranking_accuracy(std::vector<std::string>{"n", "n"}, std::vector<double>{2, 1}, std::vector<double>{10, 10.05});
  CHECK(close.pairs == Bands{1, 0, 0, 0, 0, 0});
  CHECK(close.misordered_pairs == Bands{1, 0, 0, 0, 0, 0});

  // Shape a alone: a perfect ranking.
  const auto a = ranking_accuracy(std::vector<std::string>{"a", "a", "a"}, std::vector<double>{1, 3, 2},
                                  std::vector<double>{10, 12, 11});
  CHECK(a.mean_spearman == Approx(1.0));
  CHECK(a.best_found_pct == Approx(100.0));
  CHECK(a.mean_slowdown_pct == Approx(0.0).margin(1e-12));

  // A tied score picks the candidate listed first; a constant score has no order (rho 0).
  const auto tie = ranking_accuracy(std::vector<std::string>{"t", "t"}, std::vector<double>{1, 1}, std::vector<double>{3, 2});
  CHECK(tie.mean_slowdown_pct == Approx(50.0));
  CHECK(tie.mean_spearman == 0);
  CHECK(tie.pairs[5] == 1);                // 3 and 2 us: 40.5% apart
  CHECK(tie.misordered_pairs[5] == 0);     // a tie in the score is no order, right or wrong

  // No shape with two candidates: nothing to report, and no division by zero.
  CHECK(ranking_accuracy(std::vector<std::string>{"x"}, std::vector<double>{1}, std::vector<double>{1}).shapes == 0);

  // Bad input names what is wrong.
  CHECK_THROWS_WITH(ranking_accuracy(shapes, std::vector<double>{1.0}, measured), Catch::Contains("as many as the shapes"));
  CHECK_THROWS_WITH(ranking_accuracy(std::vector<std::string>{"a", "a"}, std::vector<double>{1, 2}, std::vector<double>{1, -2}),
                    Catch::Contains("measured[1]"));
  CHECK_THROWS_WITH(ranking_accuracy(std::vector<std::string>{"a", "a"}, std::vector<double>{1, std::nan("")},
                                     std::vector<double>{1, 2}),
                    Catch::Contains("score[1]"));
}

TEST_CASE("configless_first_choices: cuBLAS's first choice per GPU and shape, without its config") {
  Gemm gemm{.m = 64, .n = 4096, .k = 4096};
  gemm.config = GemmConfig{.tile_m = 64, .tile_n = 128, .tile_k = 64};
  Gemm other = gemm;
  other.config->tile_n = 256;
  const std::string shape = "gemm:m=64,n=4096,k=4096,dtype=bf16";
  const Kernel norm = RmsNorm{.tokens = 8, .hidden = 4096};
  const std::vector<MeasuredKernel> rows{
      {"H100-SXM", other, 9.0, shape, false, 1},      // not the first choice: left out
      {"H100-SXM", gemm, 10.0, shape, true, 0},       // the first choice
      {"H100-SXM", other, 11.0, shape, true, 0},      // the same GPU and shape again: left out
      {"H200-SXM", other, 8.0, shape, true, 0},       // another GPU: its own
      {"H100-SXM", norm, 3.0, "rmsnorm", true, 0}};   // another family: kept as it is
  const std::vector<MeasuredKernel> first = configless_first_choices(rows);
  REQUIRE(first.size() == 3);
  CHECK(first[0].gpu == "H100-SXM");
  CHECK(first[0].duration_us == 10.0);
  CHECK(first[1].gpu == "H200-SXM");
  CHECK(first[1].duration_us == 8.0);
  for (int i : {0, 1}) {
    REQUIRE(first[i].kernel.get_if<Gemm>());
    CHECK_FALSE(first[i].kernel.get_if<Gemm>()->config);
    CHECK(first[i].kernel.get_if<Gemm>()->m == 64);
  }
  CHECK(first[2].kernel == norm);
}

TEST_CASE("GEMM rows without the config that ran, and the published fp8 split's own layout") {
  // A shape and its time only: the GEMM comes without a config, as a caller without one asks it.
  const auto bare = measurements_from_csv("gpu,dtype,m,n,k,duration_us\nH100-SXM,bf16,64,4096,4096,20.5\n");
  REQUIRE(bare.size() == 1);
  const Gemm* gemm = bare[0].kernel.get_if<Gemm>();
  REQUIRE(gemm);
  CHECK_FALSE(gemm->config);
  CHECK(bare[0].is_default);
  CHECK(bare[0].shape == "gemm:bf16,64,4096,4096");
  // The published split as published: M,N,K,avg_duration,hardware (its other columns unread),
  // fp8 GEMMs on the GPU the catalog names for `hardware`.
  const auto rows = read_measurements(std::string(PIPEWEAVE_TEST_DATA_DIR) + "/published/gemm_fp8_train_first30.csv");
  REQUIRE(rows.size() == 60);
  CHECK(rows.front().gpu == "H20");
  CHECK(rows.back().gpu == "H800");
  const Gemm* first = rows.front().kernel.get_if<Gemm>();
  REQUIRE(first);
  CHECK(first->m == 108);
  CHECK(first->n == 8192);
  CHECK(first->k == 1024);
  CHECK(first->dtype == DType::fp8_e4m3);
  // The tile the published method assumes for every row, timed back to back.
  REQUIRE(first->config);
  CHECK(first->config->tile_m == 128);
  CHECK(first->config->tile_n == 128);
  CHECK(first->config->tile_k == 128);
  CHECK(first->config->split_k == 1);
  CHECK(rows.front().back_to_back);
  CHECK(rows.front().duration_us == Approx(13.6596));
  CHECK(rows.front().shape == "gemm:fp8_e4m3,108,8192,1024");
  // The H20 keeps its clock under load (its estimated spec loses none): the same time alone.
  const GpuSpec& h20 = find_gpu("H20");
  CHECK(isolated_duration_us(rows.front(), h20) == rows.front().duration_us);
  // The H800 loses clock back to back: a tensor-heavy row took less alone, and back again.
  const GpuSpec& h800 = find_gpu("H800");
  REQUIRE(h800.sustained_slowdown() > 1.1);
  const MeasuredKernel& large = rows.back();
  const double alone = isolated_duration_us(large, h800);
  const double tensor_us = at(compute_demand(large.kernel, h800).gpu_cycles, Pipe::tensor) / h800.clock_hz() * 1e6;
  // 32 tiles of 128 x 128 on 132 SMs: a light tensor load (u below the spec's 0.92), so the row
  // lost (s - 1) x tensor / u0 of its time to the clock, not the full factor.
  REQUIRE(tensor_us / large.duration_us < h800.sustained_utilization);
  CHECK(alone == Approx(large.duration_us - (h800.sustained_slowdown() - 1) * tensor_us / h800.sustained_utilization));
  CHECK(alone < large.duration_us);
  CHECK(as_timed_us(large, alone, h800) == Approx(large.duration_us).epsilon(1e-12));
  // This project's rows were timed alone: unchanged either way.
  CHECK_FALSE(bare[0].back_to_back);
  CHECK(isolated_duration_us(bare[0], h800) == 20.5);
  CHECK(as_timed_us(bare[0], 17.0, h800) == 17.0);
  // Asked without its config, such a row would be held against a config that never ran: refused.
  CHECK_THAT(error_of([&] { (void)configless_first_choices(rows); }),
             Contains("H20 gemm:fp8_e4m3,108,8192,1024 was timed back to back with the tile that ran"));
  CHECK_THAT(error_of([] { measurements_from_csv("M,N,K,avg_duration,hardware\n8,8,8,-1,NVIDIA H20\n", "p.csv"); }),
             Contains("p.csv:2: avg_duration"));
  // A denormal duration (MAPE infinite) or one of years is no kernel's.
  CHECK_THAT(error_of([] { measurements_from_csv("M,N,K,avg_duration,hardware\n8,8,8,1e-320,NVIDIA H20\n", "p.csv"); }),
             Contains("p.csv:2: avg_duration must be within [0.001, 1e11] us"));
  CHECK_THAT(error_of([] { measurements_from_csv("gpu,dtype,m,n,k,duration_us\nH100-SXM,bf16,8,8,8,1e15\n", "q.csv"); }),
             Contains("q.csv:2: duration_us must be within"));
  // How a row was timed, where stated, must be a timing's: a protocol no collector writes, a
  // negative spread or no repetitions.
  const std::string header = "gpu,dtype,tokens,dim,threads,duration_us,spread,reps,run_spread,l2\n";
  CHECK(measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233,0.01,10,0,cold\n", "t.csv").size() == 1);
  CHECK(measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233,,,,\n", "t.csv").size() == 1);
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233,0.01,10,0,hot\n", "t.csv"); }),
             Contains("t.csv:2: l2 must be cold, warm or served (how the row was timed), got \"hot\""));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233,-1,10,0,cold\n", "t.csv"); }),
             Contains("t.csv:2: spread must be a number >= 0, got \"-1\""));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233,0.01,10,-0.5,cold\n", "t.csv"); }),
             Contains("t.csv:2: run_spread must be a number >= 0"));
  for (const std::string spread : {"+0.01", " 0.01"})  // a cell's number is the whole cell
    CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233," + spread + ",10,0,cold\n", "t.csv"); }),
               Contains("t.csv:2: spread must be a number, got \"" + spread + "\""));
  CHECK_THAT(error_of([&] { measurements_from_csv(header + "H100-SXM,bf16,8192,14336,1024,233,0.01,0,0,cold\n", "t.csv"); }),
             Contains("t.csv:2: reps must be a whole number >= 1, got \"0\""));
  CHECK_THAT(error_of([] {
               measurements_from_csv("gpu,dtype,tokens,dim,duration_us,runs\nH100-SXM,bf16,8192,14336,233,0\n", "r.csv");
             }),
             Contains("r.csv:2: runs must be a whole number >= 1, got \"0\""));
}

TEST_CASE("CSV inputs: lines and line lengths are bounded, checked before any row is read", "[dataset]") {
  const std::string header = "gpu,dtype,m,n,k,duration_us\n";
  const std::string row = "H100-SXM,bf16,64,4096,4096,10\n";
  // 2^21 lines in all (blank ones count: 900 MB of them once took seconds and a gigabyte)
  std::string text = header + row + std::string((std::size_t{1} << 21) - 2, '\n');
  CHECK(measurements_from_csv(text, "rows.csv").size() == 1);
  text += '\n';
  CHECK_THROWS_WITH(measurements_from_csv(text, "rows.csv"),
                    "rows.csv holds 2097153 lines, more than the 2097152 a CSV input may: split it");
  const std::string trace = "num_prefill_tokens,num_decode_tokens,output_tokens\n5,1,2" + std::string(std::size_t{1} << 21, '\n');
  CHECK_THAT(error_of([&] { trace_from_csv(trace, "trace.csv"); }), Contains("trace.csv holds 2097153 lines"));
  // One line past a mebibyte (a gigabyte of NUL bytes after a row made a 3 GB cell)
  const std::string long_line = header + row + "H100-SXM,bf16,64,4096,4096," + std::string(1 << 20, '0') + "\n";
  CHECK_THROWS_WITH(measurements_from_csv(long_line, "rows.csv"),
                    "rows.csv line 3 is 1048603 bytes long, more than the 1048576 a CSV line may");
}

TEST_CASE("read_measurements: gzip-compressed files read as their text, a truncated one refused", "[dataset]") {
  const std::string plain = std::string(PIPEWEAVE_TEST_DATA_DIR) + "/published/gemm_fp8_train_first30.csv";
  const auto rows = read_measurements(plain), compressed = read_measurements(plain + ".gz");
  REQUIRE(compressed.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(compressed[i].shape == rows[i].shape);
    CHECK(compressed[i].gpu == rows[i].gpu);
    CHECK(compressed[i].duration_us == rows[i].duration_us);
  }
  // The first half of the compressed file: the stream ends early.
  std::ifstream in(plain + ".gz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string truncated = (std::filesystem::temp_directory_path() /
                                 ("pipeweave_truncated_" + std::to_string(std::random_device{}()) + ".csv.gz"))
                                    .string();
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK_THAT(error_of([&] { read_measurements(truncated); }), Contains("cannot read measurements file " + truncated));
  std::filesystem::remove(truncated);
  // A directory is no file: one mention of the path, and why.
  const std::string folder = std::filesystem::temp_directory_path().string();
  CHECK_THAT(error_of([&] { read_measurements(folder); }), Contains(folder + ": Is a directory"));
}
