// Measured kernels: cuBLAS kernel names, and raw pipeweave-collect records to measurement CSV.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "pipeweave/calibration.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/measurements.hpp"
#include "test_support.hpp"

using namespace pipeweave;
using Catch::Matchers::Contains;
using pipeweave_test::error_of;

namespace {

const std::string kDevice =
    R"({"op": "device", "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132, )"
    R"("driver": "580.159.04", "cuda_runtime": 13000, "cublaslt": 130100, "reps": 3, "warmup": 1, "l2": "cold"})";

// A GEMM record of m=16 tokens, n=4096, k=4096 whose cuBLAS tile is 64 (along n) x 8 (along m).
std::string gemm_record(const std::string& kernel, const std::string& durations = "[10.0, 12.0, 11.0]",
                        int candidate = 0, const std::string& extra_kernel = "") {
  std::ostringstream out;
  out << R"({"op": "gemm", "dtype": "fp8_e4m3", "m": 16, "n": 4096, "k": 4096, "candidate": )" << candidate
      << R"(, "candidates": 7, "algo_id": 66, "tile_id": 10, "tile_m": 64, "tile_n": 8, "stages_id": 36, "tile_k": 128, )"
      << R"("stages": 0, "split_k": 1, "reduction_scheme": 0, "swizzle": 0, "custom_option": 3, "inner_shape_id": 0, )"
      << R"("cluster_id": 5, "cluster_m": 1, "cluster_n": 2, "workspace_bytes": 0, "waves": 0.9697, "l2": "cold", )"
      << R"("kernels": [)" << (extra_kernel.empty() ? "" : "\"" + extra_kernel + "\", ") << "\"" << kernel
      << R"("], "durations_us": )" << durations << "}";
  return out.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("cuBLAS kernel names carry tile, K step, stages, cluster, raster, schedule and layout") {
  const auto name = parse_cublas_kernel_name("nvjet_sm90_tst_128x144_64x6_2x1_v_bz_TNT");
  REQUIRE(name);
  CHECK(*name == CublasKernelName{128, 144, 64, 6, 2, 1, "v", false, GemmSchedule::ping_pong, true});
  const auto fp8 = parse_cublas_kernel_name("nvjet_sm90_qqtst_112x128_128x7_2x1_v_bz_coopA_algo2_TNN");
  REQUIRE(fp8);
  CHECK(*fp8 == CublasKernelName{112, 128, 128, 7, 2, 1, "v", false, GemmSchedule::cooperative, false});
  const auto split_n = parse_cublas_kernel_name("nvjet_sm90_tst_256x64_64x8_1x1_h_bz_coopB_TNN");
  REQUIRE(split_n);
  CHECK(split_n->schedule == GemmSchedule::cooperative_split_n);
  CHECK_FALSE(split_n->output_transposed);
  const auto split = parse_cublas_kernel_name("nvjet_sm90_tst_96x128_64x7_2x1_v_bz_splitK_TNN");
  REQUIRE(split);
  CHECK(split->split_k);
  const auto horizontal = parse_cublas_kernel_name("nvjet_sm90_tst_192x64_64x6_1x2_h_bz_splitK_TNT");
  REQUIRE(horizontal);
  CHECK(horizontal->raster == "h");
  CHECK(horizontal->cluster_n == 2);
  CHECK_FALSE(parse_cublas_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"));
  CHECK_FALSE(parse_cublas_kernel_name("nvjet_sm90_tst_0x144_64x6_2x1_v_bz_TNT"));
  CHECK_FALSE(parse_cublas_kernel_name("memset"));
  CHECK_FALSE(parse_cublas_kernel_name(""));
}

// Found by tests/fuzz/fuzz_raw_jsonl: std::stoi threw std::out_of_range (not a pipeweave::Error).
TEST_CASE("a cuBLAS kernel name with a number no int holds is an error naming it") {
  const std::string name = "nvjet_sm90_tst_64x32_64x88888888888888888888888888888888_2x4_h_bz_TNT";
  CHECK_THROWS_MATCHES(parse_cublas_kernel_name(name), Error,
                       Catch::Matchers::Message("cuBLAS kernel name \"" + name +
                                                "\" number must fit an int, got 88888888888888888888888888888888"));
  CHECK_THROWS_AS(parse_cublas_kernel_name("nvjet_sm90_tst_4294967360x32_64x8_2x4_h_bz_TNT"), Error);
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + gemm_record(name)); }),
             Contains("line 2") && Contains("must fit an int"));
}

TEST_CASE("raw GEMM records become CSV rows in the library's orientation") {
  const std::string raw = kDevice + "\n" + gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT") + "\n" +
                          gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT", "[20.0, 21.0]", 1, "memset") + "\n";
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(raw));
  REQUIRE(csv.size() == 3);
  CHECK(csv[0] ==
        "gpu,dtype,m,n,k,tile_m,tile_n,tile_k,split_k,stages,cluster_m,cluster_n,duration_us,candidate,is_default,"
        "candidates,kernels,config_source,config_agrees,reduction_scheme,swap_ab,schedule,raster,workspace_bytes,spread,"
        "reps,runs,run_spread,l2,kernel");
  // cuBLAS's 64x8 tile (M along n) is tile_m 8 along the 16 tokens, tile_n 64 along n; its 1x2
  // cluster is 2 along m, 1 along n. The layout TNT puts the tokens on the MMA's N side
  // (swap_ab 1); no coop tag: ping-pong; "h" walks along cuBLAS's N, our m. Median of 10, 12,
  // 11 = 11; spread (12 - 10) / 11; one run, so no spread between runs.
  CHECK(csv[1] ==
        "H100-SXM,fp8_e4m3,16,4096,4096,8,64,128,1,16,2,1,11,0,1,7,1,kernel_name,1,0,1,ping_pong,m,0,0.181818,3,1,0,cold,"
        "nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT");
  // A memset launched beside the GEMM counts as a kernel; the row names the GEMM.
  CHECK_THAT(csv[2], Contains(",20.5,1,0,7,2,kernel_name,1,") && Contains(",nvjet_sm90_qqtst_64x8"));
}

TEST_CASE("raw GEMM records: the name and the algo attributes are cross-checked") {
  // The name says 128x8; the attributes say 64x8.
  const std::string raw = kDevice + "\n" + gemm_record("nvjet_sm90_qqtst_128x8_128x16_1x2_h_bz_algo2_TNT") + "\n";
  CHECK_THAT(lines(measurements_csv_from_raw(raw))[1], Contains(",kernel_name,0,"));
  // A kernel whose name carries no config: the attributes give it.
  const std::string unnamed = kDevice + "\n" + gemm_record("sm90_xmma_gemm_something") + "\n";
  CHECK_THAT(lines(measurements_csv_from_raw(unnamed))[1],
             Contains("H100-SXM,fp8_e4m3,16,4096,4096,8,64,128,1,0,2,1,11,") && Contains(",algo_attributes,,0,,,,0,"));  // only the name says swap_ab, schedule, raster: unknown, empty
}

TEST_CASE("raw GEMM records: cuBLAS's first choice without a readable tile keeps its shape and time") {
  // Neither the name (an older CUTLASS kernel) nor the algo attributes (tile id 0) say the tile.
  std::string record = gemm_record("_ZN7cutlass7Kernel2I57cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1EEvNT_6ParamsE");
  for (const char* attribute : {R"("tile_m": 64)", R"("tile_n": 8)", R"("tile_k": 128)"}) {
    const std::string name = std::string(attribute).substr(0, std::string(attribute).find(':'));
    record.replace(record.find(attribute), std::string(attribute).size(), name + ": 0");
  }
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(kDevice + "\n" + record + "\n"));
  REQUIRE(csv.size() == 2);
  CHECK_THAT(csv[1], Contains("H100-SXM,fp8_e4m3,16,4096,4096,,,,,,,,11,0,1,7,1,unknown,,,,,,0,"));
  // The dataset reads it as a GEMM of that shape whose config cuBLAS chose
  const std::string path =
      (std::filesystem::temp_directory_path() / ("pipeweave_unknown_config_" + std::to_string(std::random_device{}()) + ".csv"))
          .string();
  std::ofstream(path) << csv[0] << "\n" << csv[1] << "\n";
  const std::vector<MeasuredKernel> rows = read_measurements(path);
  std::filesystem::remove(path);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].kernel.get_if<Gemm>());
  CHECK_FALSE(rows[0].kernel.get_if<Gemm>()->config.has_value());
  CHECK(rows[0].duration_us == 11);
  CHECK(rows[0].is_default);
  // Another candidate than the first must say its config: a row without one could not be ranked
  std::string second = record;
  second.replace(second.find(R"("candidate": 0)"), 14, R"("candidate": 1)");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + second + "\n"); }),
             Contains("must carry a tile in its name"));
}

TEST_CASE("raw GEMM records: several runs pool into one row per configuration") {
  const std::string a = gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT", "[10.0, 12.0, 11.0]", 0);
  const std::string b = gemm_record("nvjet_sm90_qqtst_64x16_128x16_1x2_v_bz_coopB_algo2_TNN", "[20.0, 21.0, 22.0]", 1);
  const std::string run1 = kDevice + "\n" + a + "\n" + b + "\n";
  // The second run measured last to first, and slower; the third in order again.
  const std::string run2 = kDevice + "\n" + gemm_record("nvjet_sm90_qqtst_64x16_128x16_1x2_v_bz_coopB_algo2_TNN", "[24.0, 26.0, 25.0]", 1) +
                           "\n" + gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT", "[13.0, 13.0, 13.0]", 0) + "\n";
  const std::string run3 = kDevice + "\n" + gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT", "[9.0, 10.0, 9.5]", 0) +
                           "\n" + gemm_record("nvjet_sm90_qqtst_64x16_128x16_1x2_v_bz_coopB_algo2_TNN", "[19.0, 21.0, 20.0]", 1) + "\n";
  const std::vector<RawRun> runs{{"", run1}, {"", run2}, {"", run3}};
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(runs));
  REQUIRE(csv.size() == 3);
  // Candidate 0: run medians 11, 13, 9.5 -> 11; within-run spreads 2/11, 0, 1/9.5 -> the largest,
  // 0.181818; between runs (13 - 9.5) / 11 = 0.318182.
  CHECK_THAT(csv[1], Contains(",11,0,1,7,1,kernel_name,") && Contains(",1,ping_pong,m,0,0.181818,3,3,0.318182,cold,"));
  // Candidate 1 (first run's order): medians 21, 25, 20 -> 21; spreads 2/21, 2/25, 2/20 -> 0.1;
  // between runs 5 / 21. coopB with layout TNN: cooperative_split_n, m on the MMA's M side.
  CHECK_THAT(csv[2], Contains(",21,1,0,7,1,kernel_name,") &&
                         Contains(",0,cooperative_split_n,n,0,0.1,3,3,0.238095,cold,nvjet_sm90_qqtst_64x16_128x16_1x2_v_bz_coopB"));

  // A run pooled with itself gives the single run's rows, but for the run count.
  const std::vector<std::string> single = lines(measurements_csv_from_raw(run1));
  const std::vector<RawRun> twice{{"", run1}, {"", run1}};
  const std::vector<std::string> doubled = lines(measurements_csv_from_raw(twice));
  REQUIRE(doubled.size() == single.size());
  CHECK(doubled[0] == single[0]);
  for (std::size_t i = 1; i < single.size(); ++i) {
    std::string expected = single[i];
    const std::size_t runs_cell = expected.find(",3,1,0,cold,");  // reps 3, runs 1, run_spread 0
    REQUIRE(runs_cell != std::string::npos);
    expected.replace(runs_cell, 12, ",3,2,0,cold,");
    CHECK(doubled[i] == expected);
  }

  // A run that lacks a configuration, holds an extra one, or comes from another GPU is refused by name.
  const std::vector<RawRun> missing{{"a.jsonl", run1}, {"b.jsonl", kDevice + "\n" + a + "\n"}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(missing); }),
             Contains("b.jsonl: holds no record like a.jsonl: line 3") && Contains("the same configurations"));
  const std::vector<RawRun> extra{{"a.jsonl", kDevice + "\n" + a + "\n"}, {"b.jsonl", run1}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(extra); }), Contains("b.jsonl: line 3: no record like it in a.jsonl"));
  std::string other_gpu = run3;
  other_gpu.replace(other_gpu.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA Future GPU");
  const std::vector<RawRun> mixed{{"", run1}, {"", other_gpu}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(mixed); }),
             Contains("run 2: device name") && Contains("NVIDIA Future GPU") && Contains("H100-SXM"));
  const std::vector<RawRun> bad_second{{"", run1}, {"", kDevice + "\n{\"op\": \n"}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(bad_second); }), Contains("run 2: line 2: the record is not valid JSON"));
  // A bad timing in a later run names that run's line, not the first run's.
  const std::vector<RawRun> bad_timing{
      {"a.jsonl", run1}, {"b.jsonl", kDevice + "\n" + b + "\n" + gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT", "[13.0, -1.0]", 0) + "\n"}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(bad_timing); }),
             Contains("b.jsonl: line 3: durations_us") && Contains("-1"));
  // Runs measured another way (here: with rest after each configuration) do not pool.
  std::string rested = run1;
  rested.replace(rested.find(R"("l2": "cold"})"), 13, R"("l2": "cold", "rest": 2})");
  const std::vector<RawRun> protocols{{"a.jsonl", run1}, {"b.jsonl", rested}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(protocols); }),
             Contains("b.jsonl: device line rest") && Contains("2") && Contains("must be the first run's (0)"));
}

TEST_CASE("raw RMSNorm and SiLU-mul records become CSV rows") {
  const std::string norm =
      kDevice + "\n" +
      R"({"op": "rmsnorm", "dtype": "bf16", "tokens": 174, "hidden": 14208, "fused_residual": 1, "threads": 1024, "l2": "cold", "kernels": ["rms"], "durations_us": [6.0, 8.0, 7.0, 6.5]})";
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(norm));
  REQUIRE(csv.size() == 2);
  CHECK(csv[0] == "gpu,dtype,tokens,hidden,fused_residual,threads,duration_us,spread,reps,runs,run_spread,l2,kernel");
  CHECK(csv[1] == "H100-SXM,bf16,174,14208,1,1024,6.75,0.296296,4,1,0,cold,rms");
  const std::string silu = kDevice + "\n" +
                           R"({"op": "silu_mul", "dtype": "bf16", "tokens": 3, "dim": 2048, "threads": 1024, "l2": "cold", "kernels": ["silu"], "durations_us": [2.5]})";
  const std::vector<std::string> silu_csv = lines(measurements_csv_from_raw(silu));
  REQUIRE(silu_csv.size() == 2);
  CHECK(silu_csv[0] == "gpu,dtype,tokens,dim,threads,duration_us,spread,reps,runs,run_spread,l2,kernel");
  CHECK(silu_csv[1] == "H100-SXM,bf16,3,2048,1024,2.5,0,1,1,0,cold,silu");
  // A record that makes a row train and eval would refuse is refused here, naming its line
  std::string empty = silu;
  empty.replace(empty.find(R"("tokens": 3)"), 11, R"("tokens": 0)");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(empty); }),
             Contains("line 2: makes a row that cannot be read: ") && Contains("tokens"));
}

TEST_CASE("raw records of a GPU the catalog does not know keep its CUDA name") {
  std::string device = kDevice;
  device.replace(device.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA Future GPU");
  const std::string raw = device + "\n" + gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT") + "\n";
  CHECK(lines(measurements_csv_from_raw(raw))[1].starts_with("NVIDIA Future GPU,fp8_e4m3,16,"));
}

TEST_CASE("raw records: every malformed line is named") {
  const std::string gemm = gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT");
  CHECK_THAT(error_of([] { measurements_csv_from_raw(""); }), Contains("empty"));
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n"); }), Contains("no measured kernel"));
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(gemm + "\n"); }), Contains("line 1: op") && Contains("\"device\""));
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n{\"op\": \n"); }), Contains("line 2: the record is not valid JSON"));
  std::string negative = gemm;
  negative.replace(negative.find("[10.0, 12.0, 11.0]"), 18, "[10.0, -1.0]");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + negative + "\n"); }),
             Contains("line 2: durations_us must hold only positive numbers") && Contains("-1.0"));
  std::string no_m = gemm;
  no_m.replace(no_m.find("\"m\": 16, "), 9, "");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + no_m + "\n"); }), Contains("line 2: m is missing"));
  const std::string silu = R"({"op": "silu_mul", "dtype": "bf16", "tokens": 3, "dim": 2048, "threads": 1024, "l2": "cold", "kernels": ["s"], "durations_us": [2.5]})";
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + gemm + "\n" + silu + "\n"); }),
             Contains("line 3: op") && Contains("one op per file"));
  std::string conv = silu;
  conv.replace(conv.find("silu_mul"), 8, "conv2d");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + conv + "\n"); }),
             Contains("line 2: op") && Contains("\"conv2d\""));
}

TEST_CASE("raw attention records: FlashAttention-3's tiles and page size as the collector recorded them") {
  // collect_attention.py --impl flash3: the names carry no traits, the record its tiles (by
  // FlashAttention-3's rule) and the paged cache's page size; the split count is FlashAttention-3's
  // own per-sequence choice (0: the demand model works it out); the row names the attention
  // kernel, not the scheduler kernel launched first.
  const std::string record =
      kDevice + "\n" +
      R"x({"op": "attention", "dtype": "bf16", "q_lens": [1, 1], "kv_lens": [300, 5000], "heads": 32, "kv_heads": 8, )x"
      R"x("head_dim": 128, "causal": 1, "implementation": "flash3", "l2": "cold", "kernels": [)x"
      R"x("void flash::prepare_varlen_num_blocks_kernel<1, true>(int)", "void cutlass::device_kernel<flash::enable_sm90<flash::FlashAttnFwdSm90<x> > >(x)", )x"
      R"x("void cutlass::device_kernel<flash::FlashAttnFwdCombine<x> >(x)"], "grids": [[1, 1, 1], [132, 1, 1], [4, 1, 1]], )x"
      R"x("durations_us": [20.0, 21.0, 19.0], "tile_q": 128, "tile_kv": 128, "page_size": 1})x";
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(record));
  REQUIRE(csv.size() == 2);
  CHECK(csv[1].starts_with("H100-SXM,bf16,2,1/1,300/5000,32,8,128,1,flash3,128,128,12,0,1,20,0.1,3,1,0,cold,3,"));
  CHECK_THAT(csv[1], Contains("FlashAttnFwdSm90"));
  const std::vector<MeasuredKernel> rows = measurements_from_csv(measurements_csv_from_raw(record));
  REQUIRE(rows.size() == 1);
  const Attention* attention = rows[0].kernel.get_if<Attention>();
  REQUIRE(attention);
  CHECK(attention->page_size == 1);
  REQUIRE(attention->config);
  CHECK(attention->config->impl == AttentionImpl::flash3);
  CHECK(attention->config->num_splits == 0);
  std::string no_tiles = record;
  no_tiles.replace(no_tiles.find("\"tile_q\": 128, "), 15, "");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(no_tiles); }), Contains("tile_q"));
}

TEST_CASE("raw attention records: FlashAttention-2's traits and split count from its kernels") {
  const std::string split =
      kDevice + "\n" +
      R"x({"op": "attention", "dtype": "bf16", "q_lens": [1, 1], "kv_lens": [4000, 9000], "heads": 32, "kv_heads": 8, )x"
      R"x("head_dim": 128, "causal": 1, "implementation": "flash2", "l2": "cold", "kernels": [)x"
      R"x("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false>(pytorch_flash::Flash_fwd_params)", )x"
      R"x("void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, 4>(pytorch_flash::Flash_fwd_params)"], )x"
      R"x("grids": [[1, 5, 16], [16, 1, 1]], "durations_us": [30.0, 31.0, 29.0]})x";
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(split));
  REQUIRE(csv.size() == 2);
  CHECK(csv[0] ==
        "gpu,dtype,batch,q_lens,kv_lens,heads,kv_heads,head_dim,causal,impl,tile_q,tile_kv,warps,num_splits,page_size,"
        "duration_us,spread,reps,runs,run_spread,l2,kernels,kernel");
  // kBlockM 64, kBlockN 128, 4 warps; 5 splits from the grid's y; a contiguous cache; median 30, spread 2/30.
  CHECK(csv[1].starts_with("H100-SXM,bf16,2,1/1,4000/9000,32,8,128,1,flash2,64,128,4,5,0,30,0.0666667,3,1,0,cold,2,"));
  std::string plain = split;
  plain.replace(plain.find("[[1, 5, 16], [16, 1, 1]]"), 24, "[[20, 2, 8]]");
  plain.replace(plain.find("flash_fwd_splitkv_kernel"), 24, "flash_fwd_kernel");
  CHECK_THAT(lines(measurements_csv_from_raw(plain))[1], Contains(",flash2,64,128,4,1,0,"));
  std::string unknown = split;
  unknown.replace(unknown.find("Flash_fwd_kernel_traits<128, 64"), 31, "some_other_kernel<1");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(unknown); }), Contains("line 2: kernels[0]") && Contains("traits"));
}

// Found while fixing the fuzz finding above: both kernel-name readers were std::regex, which in
// libstdc++ recurses once per character; a name of 100,000 characters overflowed the stack (SIGSEGV).
TEST_CASE("kernel names of any length are read without running out of stack") {
  const std::string long_tags(200000, 'a');
  const auto cublas = parse_cublas_kernel_name("nvjet_sm90_tst_64x32_64x8_2x4_h_" + long_tags + "_coopA_TNT");
  REQUIRE(cublas);
  CHECK(*cublas == CublasKernelName{64, 32, 64, 8, 2, 4, "h", false, GemmSchedule::cooperative, true});
  CHECK(parse_cublas_kernel_name("nvjet_sm100a_tst_64x32_64x8_2x4_v_"));
  for (const char* wrong : {"nvjet_sm90_tst_64x32_64x8_2x4_h", "nvjet_sm_tst_64x32_64x8_2x4_h_TNT", "nvjet_sm90_TST_64x32_64x8_2x4_h_TNT",
                            "nvjet_sm90_tst_64x32x1_64x8_2x4_h_TNT", "nvjet_sm90_tst_64x_64x8_2x4_h_TNT", "nvjet_sm90_tst_64x32_64x8_2x4_x_TNT",
                            "nvjet_sm90_tst_64x32_64x8_2x4_h_bz\n_TNT", "nvjet_sm90a1_tst_64x32_64x8_2x4_h_TNT"}) {
    INFO(wrong);
    CHECK_FALSE(parse_cublas_kernel_name(wrong));
  }
  const std::string record =
      R"x({"op": "attention", "dtype": "bf16", "q_lens": [1], "kv_lens": [4000], "heads": 32, "kv_heads": 8, "head_dim": 128, )x"
      R"x("causal": 1, "implementation": "flash2", "l2": "cold", "grids": [[20, 2, 8]], "durations_us": [30.0, 31.0, 29.0], )x"
      R"x("kernels": ["flash_fwd_kernel<Flash_fwd_kernel_traits<)x";
  const std::string spaces(200000, ' ');
  CHECK_THAT(lines(measurements_csv_from_raw(kDevice + "\n" + record + spaces + "128," + spaces + "64, 128, 4, false>\"]}"))[1],
             Contains(",flash2,64,128,4,1,0,"));
  const std::string no_traits = "flash_fwd_kernel<Flash_fwd_kernel_traits<" + spaces + "128";
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + record.substr(0, record.rfind('"') + 1) + no_traits + "\"]}"); }),
             Contains("line 2: kernels[0] must be a FlashAttention kernel whose name carries its traits") &&
                 Contains("... (" + std::to_string(no_traits.size()) + " bytes)"));
}

TEST_CASE("raw records confined to part of the SMs (--sms) name the GPU as its calibrated spec does") {
  // tests/data/collect_raw_gemm_sm64.jsonl: pipeweave-collect --sms 64 on an H100 (three
  // candidates of m=64, n=4096, k=4096), whose device line says sm_count 64, sm_limit 64.
  std::ifstream in(std::string(PIPEWEAVE_SOURCE_DIR) + "/tests/data/collect_raw_gemm_sm64.jsonl");
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(raw.empty());
  const std::vector<std::string> csv = lines(measurements_csv_from_raw(raw));
  REQUIRE(csv.size() == 4);
  for (std::size_t i = 1; i < csv.size(); ++i) CHECK(csv[i].starts_with("H100-SXM-sm64,bf16,64,4096,4096,"));
  CHECK(csv[1].starts_with(sm_limited_gpu_name("H100-SXM", 64) + ","));
  // Median of the ten repetitions of candidate 0: the fifth and sixth, both 14.048.
  CHECK_THAT(csv[1], Contains(",14.048,0,1,3,1,kernel_name,1,"));

  // Without sm_limit (the whole GPU) the same records are the H100's.
  const std::string whole = kDevice + raw.substr(raw.find('\n'));
  CHECK(lines(measurements_csv_from_raw(whole))[1].starts_with("H100-SXM,bf16,64,"));
  // A GPU the catalog does not know keeps CUDA's name, with the count.
  std::string unknown = raw;
  unknown.replace(unknown.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA Future GPU");
  CHECK(lines(measurements_csv_from_raw(unknown))[1].starts_with("NVIDIA Future GPU-sm64,"));
  // Runs on different SMs are different GPUs: they do not pool.
  const std::vector<RawRun> mixed{{"full.jsonl", whole}, {"sm64.jsonl", raw}};
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(mixed); }),
             Contains("sm64.jsonl: device name") && Contains("H100-SXM-sm64") && Contains("first run's GPU"));
  // A limit that is not the SMs the kernels ran on is refused.
  std::string wrong = raw;
  const std::string limit = "\"sm_limit\": 64";
  wrong.replace(wrong.find(limit), limit.size(), "\"sm_limit\": 72");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(wrong); }), Contains("line 1: sm_limit") && Contains("must be sm_count (64)"));
  const std::string wrong_limit = "\"sm_limit\": 72";
  wrong.replace(wrong.find(wrong_limit), wrong_limit.size(), "\"sm_limit\": 1000000");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(wrong); }), Contains("line 1: sm_limit must be within [1, 4096]"));
}

TEST_CASE("raw measurements: lines and line lengths are bounded as the CSV inputs' are", "[measurements]") {
  const std::string record = gemm_record("nvjet_sm90_qqtst_128x8_128x16_1x2_h_bz_algo2_TNT");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + record + std::string(std::size_t{1} << 21, '\n')); }),
             Contains("the raw file holds 2097153 lines, more than the 2097152 a file may"));
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(kDevice + "\n" + std::string((1 << 20) + 1, ' ') + "\n"); }),
             Contains("line 2 is 1048577 bytes long, more than the 1048576 a record may"));
}

TEST_CASE("raw measurements: the device line's protocol is one a collector writes", "[measurements]") {
  const std::string record = gemm_record("nvjet_sm90_qqtst_128x8_128x16_1x2_h_bz_algo2_TNT");
  CHECK_NOTHROW(measurements_csv_from_raw(kDevice + "\n" + record + "\n"));
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string device = kDevice;
    device.replace(device.find(from), from.size(), to);
    return error_of([&] { measurements_csv_from_raw(device + "\n" + record + "\n"); });
  };
  // Each was carried into the rows (and compared between runs) as if it meant something.
  CHECK_THAT(with("\"reps\": 3", "\"reps\": -1"), Contains("line 1: reps must be a whole number of repetitions from 1 to 10^6, got -1"));
  CHECK_THAT(with("\"warmup\": 1", "\"warmup\": 1.5"), Contains("line 1: warmup must be a whole number of warm-up runs"));
  CHECK_THAT(with("\"l2\": \"cold\"", "\"l2\": \"hot\""), Contains("line 1: l2 must be \"cold\", \"warm\" or \"served\"") && Contains("\"hot\""));
  CHECK_THAT(with("\"l2\": \"cold\"", "\"l2\": \"cold\", \"rest\": \"nan\""), Contains("line 1: rest must be a number from 0 to 1000"));
  CHECK_THAT(with("\"sm_count\": 132", "\"sm_count\": -1"), Contains("line 1: sm_count must be a whole number of SMs from 1 to 4096"));
  // A record timed otherwise than the device line says, or a candidate past its shape's count, was written as it was
  const auto record_with = [&](const std::string& from, const std::string& to) {
    std::string changed = record;
    changed.replace(changed.find(from), from.size(), to);
    return error_of([&] { measurements_csv_from_raw(kDevice + "\n" + changed + "\n"); });
  };
  CHECK_THAT(record_with("\"l2\": \"cold\"", "\"l2\": \"warm\""),
             Contains("line 2: l2 must be the device line's (\"cold\"): a file holds one protocol, got \"warm\""));
  CHECK_THAT(record_with("\"candidates\": 7", "\"candidates\": 0"), Contains("line 2: candidates must be at least 1"));
  CHECK_THAT(record_with("\"candidate\": 0", "\"candidate\": 7"), Contains("line 2: candidate must be within [0, 6] (of candidates 7), got 7"));
}

TEST_CASE("raw measurements: the device's name must be one a spec could carry", "[measurements]") {
  // It becomes every row's gpu cell and the name eval looks a spec up by: empty, a control
  // character or a line's worth of text more than a spec's name takes is refused by name.
  const std::string record = gemm_record("nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT");
  for (const std::string& name : {std::string(""), std::string("H100\\nX"), std::string(200, 'A')}) {
    std::string device = kDevice;
    device.replace(device.find("NVIDIA H100 80GB HBM3"), 21, name);
    INFO(name);
    CHECK_THAT(error_of([&] { measurements_csv_from_raw(device + "\n" + record + "\n"); }),
               Contains("line 1: name") && Contains("must be the GPU's name, 1 to 128 bytes of text without control characters"));
  }
  // A name of 126 bytes leaves no room for the SM limit's suffix (-sm64: 131 bytes).
  std::string limited = kDevice;
  limited.replace(limited.find("NVIDIA H100 80GB HBM3"), 21, std::string(126, 'A'));
  limited.replace(limited.find("\"sm_count\": 132"), 15, "\"sm_count\": 64, \"sm_limit\": 64");
  CHECK_THAT(error_of([&] { measurements_csv_from_raw(limited + "\n" + record + "\n"); }),
             Contains("line 1: name") && Contains("must leave room for the SM limit's suffix"));
}
