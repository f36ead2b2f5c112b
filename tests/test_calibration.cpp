// Calibration: reading microbenchmark logs, pooling their runs, and the GpuSpec derived from
// them. Every expected figure below is worked out by hand from the synthetic log's numbers.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeweave/calibration.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"
#include "test_support.hpp"

using namespace pipeweave;
using Catch::Detail::Approx;
using Catch::Matchers::Contains;
using nlohmann::json;
using pipeweave_test::error_of;

namespace {

constexpr int kSms = 132;

MeasuredDevice h100_device() {
  MeasuredDevice device;
  device.name = "NVIDIA H100 80GB HBM3";
  device.compute_capability_major = 9;
  device.compute_capability_minor = 0;
  device.sm_count = kSms;
  device.max_clock_mhz = 1980;
  device.dram_peak_gb_s = 3352.3;
  device.l2_bytes = 52428800;
  device.memory_bytes = 85017493504;
  device.smem_bytes_per_sm = 233472;
  device.registers_per_sm = 65536;
  device.max_threads_per_sm = 2048;
  device.max_ctas_per_sm = 32;
  device.driver = "580.159.04";
  device.cuda_runtime = 13000;
  return device;
}

// A benchmark whose runs move `work` units in each of `seconds`, at `clock_mhz`.
MicrobenchResult bench(const std::string& name, const std::string& unit, double work, std::vector<double> seconds,
                       double clock_mhz = 0) {
  MicrobenchResult result{name, "synthetic", unit, work, {}};
  for (double s : seconds) result.runs.push_back({s, clock_mhz});
  return result;
}

// Every figure, at round rates: 10 ms runs, so rate = work / 0.01.
MicrobenchLog full_log() {
  MicrobenchLog log;
  log.device = h100_device();
  // bf16: 4000 flop/clk/SM at 1500 MHz = 4000 * 132 * 1.5e9 = 7.92e14 flop/s.
  log.benchmarks.push_back(bench("tensor_bf16", "flop", 7.92e12, {0.01}, 1500));
  // fp8: 8000 flop/clk/SM at 1600 MHz = 1.6896e15 flop/s.
  log.benchmarks.push_back(bench("tensor_fp8", "flop", 1.6896e13, {0.01}, 1600));
  // tf32: 2000 at 1700 MHz = 4.488e14; int8: 8100 ops at 1750 MHz = 1.87110e15.
  log.benchmarks.push_back(bench("tensor_tf32", "flop", 4.488e12, {0.01}, 1700));
  log.benchmarks.push_back(bench("tensor_int8", "op", 1.8711e13, {0.01}, 1750));
  log.benchmarks.push_back(bench("tensor_bf16_mma_sync", "flop", 5e12, {0.01}, 1800));
  // FP32: 125 lanes at 1980 MHz = 3.267e13 ops/s (65.34 TFLOP/s); XU: 16 at 1980 = 4.18176e12.
  log.benchmarks.push_back(bench("fp32_fma", "op", 3.267e11, {0.01}, 1980));
  log.benchmarks.push_back(bench("xu_ex2", "op", 4.18176e10, {0.01}, 1980));
  // Shared memory: 120 B/clk at 2000 MHz = 3.168e13 B/s.
  log.benchmarks.push_back(bench("smem_read", "byte", 3.168e11, {0.01}, 2000));
  log.benchmarks.push_back(bench("dram_read", "byte", 3.0e10, {0.01}));   // 3000 GB/s
  log.benchmarks.push_back(bench("dram_write", "byte", 3.1e10, {0.01}));  // 3100 GB/s
  log.benchmarks.push_back(bench("dram_copy", "byte", 2.8e10, {0.01}));   // 2800 GB/s
  log.benchmarks.push_back(bench("l2_read", "byte", 7.5e10, {0.01}));     // 7500 GB/s
  log.benchmarks.push_back(bench("launch_overhead", "launch", 4000, {0.01}));  // 2.5 us
  return log;
}

const CalibratedFigure& figure(const Calibration& calibration, std::string_view name) {
  for (const CalibratedFigure& f : calibration.figures)
    if (f.figure.benchmark == name) return f;
  FAIL("no figure " << name);
  throw;  // unreachable
}

std::string log_json(const MicrobenchLog& log) {
  json benchmarks = json::array();
  for (const MicrobenchResult& b : log.benchmarks) {
    json runs = json::array();
    for (const MicrobenchRun& r : b.runs) runs.push_back({{"seconds", r.seconds}, {"clock_mhz", r.clock_mhz}});
    benchmarks.push_back(
        {{"name", b.name}, {"instruction", b.instruction}, {"unit", b.unit}, {"iterations", 1}, {"work", b.work}, {"runs", runs}});
  }
  const MeasuredDevice& d = log.device;
  json device{{"name", d.name},
              {"compute_capability", std::to_string(d.compute_capability_major) + "." + std::to_string(d.compute_capability_minor)},
              {"sm_count", d.sm_count},
              {"max_clock_mhz", d.max_clock_mhz},
              {"memory_clock_mhz", 2619},
              {"memory_bus_bits", 5120},
              {"dram_peak_gb_s", d.dram_peak_gb_s},
              {"l2_bytes", d.l2_bytes},
              {"memory_bytes", d.memory_bytes},
              {"smem_bytes_per_sm", d.smem_bytes_per_sm},
              {"registers_per_sm", d.registers_per_sm},
              {"max_threads_per_sm", d.max_threads_per_sm},
              {"max_ctas_per_sm", d.max_ctas_per_sm},
              {"driver", d.driver},
              {"cuda_driver_api", 13000},
              {"cuda_runtime", d.cuda_runtime}};
  return json{{"format", "pipeweave-microbench"}, {"version", 1}, {"quick", log.quick}, {"device", device}, {"benchmarks", benchmarks}}
      .dump();
}

std::string sm64_log_text() {
  std::ifstream in(std::string(PIPEWEAVE_SOURCE_DIR) + "/tests/data/microbench_synthetic_sm64.json");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("calibration turns rates into per-SM-per-clock figures at each benchmark's clock") {
  const std::vector<MicrobenchLog> logs{full_log()};
  const Calibration calibration = calibrate(logs);
  const GpuSpec& spec = calibration.spec;
  REQUIRE(calibration.catalog);
  CHECK(calibration.catalog->name == "H100-SXM");
  CHECK(spec.name == "H100-SXM");
  CHECK(spec.sm_clock_mhz == Approx(1500));  // the clock under the bf16 tensor load
  CHECK(spec.tensor_flops_per_clk_per_sm.fp16_bf16 == Approx(4000));
  CHECK(spec.tensor_flops_per_clk_per_sm.fp8 == Approx(8000));
  CHECK(spec.tensor_flops_per_clk_per_sm.tf32 == Approx(2000));
  CHECK(spec.tensor_flops_per_clk_per_sm.int8 == Approx(8100));
  CHECK(spec.fp32_lanes_per_clk_per_sm == Approx(125));
  CHECK(spec.xu_ops_per_clk_per_sm == Approx(16));
  CHECK(spec.smem_bytes_per_clk_per_sm == Approx(120));
  CHECK(spec.dram_bandwidth_gb_s == Approx(3000));  // the read figure
  CHECK(spec.l2_bandwidth_gb_s == Approx(7500));
  // From the device query, not the catalog.
  CHECK(spec.memory_gb == Approx(85.017493504));
  CHECK(spec.l2_bytes == 52428800);
  // From the catalog: what a single GPU cannot measure.
  CHECK(spec.link_bandwidth_gb_s == find_gpu_datasheet("H100-SXM").link_bandwidth_gb_s);
  CHECK(spec.aliases == find_gpu_datasheet("H100-SXM").aliases);
  CHECK_THAT(spec.source, Contains("580.159.04") && Contains("CUDA runtime 13.0") && Contains("link figures from the catalog"));
  CHECK_NOTHROW(spec.validate());
}

TEST_CASE("calibration shows each figure in its unit against the spec sheet at the measured clock") {
  const std::vector<MicrobenchLog> logs{full_log()};
  const Calibration calibration = calibrate(logs);
  REQUIRE(calibration.figures.size() == microbench_figures().size());

  const CalibratedFigure& bf16 = figure(calibration, "tensor_bf16");
  CHECK(bf16.measured == Approx(792));  // TFLOP/s
  CHECK(bf16.clock_mhz == Approx(1500));
  CHECK(bf16.peak_at_clock == Approx(4096.0 * kSms * 1.5e9 / 1e12));  // 811.0 TFLOP/s
  CHECK(bf16.fraction_of_peak() == Approx(4000.0 / 4096));
  CHECK(bf16.catalog == Approx(4096.0 * kSms * 1.83e9 / 1e12));  // 989.4 at the datasheet's clock
  CHECK(bf16.figure.spec_field == "tensor_flops_per_clk_per_sm.fp16_bf16");

  const CalibratedFigure& fma = figure(calibration, "fp32_fma");
  CHECK(fma.measured == Approx(65.34));  // TFLOP/s: two flops per FMA
  CHECK(fma.fraction_of_peak() == Approx(125.0 / 128));

  const CalibratedFigure& mma = figure(calibration, "tensor_bf16_mma_sync");
  CHECK(mma.measured == Approx(500));
  CHECK(mma.figure.spec_field.empty());  // for the record only
  CHECK(mma.fraction_of_peak() == Approx(500 / (4096.0 * kSms * 1.8e9 / 1e12)));

  const CalibratedFigure& dram = figure(calibration, "dram_read");
  CHECK(dram.measured == Approx(3000));
  CHECK(dram.clock_mhz == 0);
  CHECK(dram.peak_at_clock == Approx(3350));  // the catalog's datasheet figure
  CHECK(dram.fraction_of_peak() == Approx(3000.0 / 3350));

  const CalibratedFigure& l2 = figure(calibration, "l2_read");
  CHECK(l2.peak_at_clock == 0);  // no spec sheet gives one
  CHECK(l2.catalog == Approx(find_gpu_datasheet("H100-SXM").l2_bandwidth_gb_s));

  const CalibratedFigure& launch = figure(calibration, "launch_overhead");
  CHECK(launch.measured == Approx(2.5));  // us per launch
  CHECK(launch.figure.display_unit == "us");
}

TEST_CASE("calibration pools runs: median, spread within, spread between logs") {
  MicrobenchLog first = full_log(), second = full_log();
  // Three runs at 10, 11 and 9 ms: rates r/1, r/1.1, r/0.9 with r = 3000 GB/s.
  first.benchmarks[8] = bench("dram_read", "byte", 3.0e10, {0.010, 0.011, 0.009});
  // The second log 2% slower: 3.0e10 / 0.0102 = 2941.2 GB/s.
  second.benchmarks[8] = bench("dram_read", "byte", 3.0e10, {0.0102, 0.0102, 0.0102});
  SECTION("one log") {
    const std::vector<MicrobenchLog> logs{first};
    const Calibration calibration = calibrate(logs);
    const CalibratedFigure& dram = figure(calibration, "dram_read");
    CHECK(dram.measured == Approx(3000));
    CHECK(dram.spread == Approx((3000 / 0.9 - 3000 / 1.1) / 3000));
    CHECK(dram.run_to_run_spread == 0);
    CHECK(dram.runs == 3);
    CHECK(dram.logs == 1);
  }
  SECTION("two logs") {
    const std::vector<MicrobenchLog> logs{first, second};
    const Calibration calibration = calibrate(logs);
    const CalibratedFigure& dram = figure(calibration, "dram_read");
    // Six rates, sorted: 2727.3, 2941.2, 2941.2, 2941.2, 3000, 3333.3: the middle two are 2941.2.
    CHECK(dram.measured == Approx(3e10 / 0.0102 / 1e9));
    CHECK(dram.runs == 6);
    CHECK(dram.logs == 2);
    // Log medians 3000 and 2941.2; their median is their mean.
    const double low = 3e10 / 0.0102 / 1e9;
    CHECK(dram.run_to_run_spread == Approx((3000 - low) / (0.5 * (3000 + low))));
    CHECK(calibration.logs == 2);
  }
}

TEST_CASE("calibration keeps the catalog's figure for a benchmark the logs lack, and says so") {
  MicrobenchLog log = full_log();
  std::erase_if(log.benchmarks, [](const MicrobenchResult& b) { return b.name == "tensor_fp8" || b.name == "l2_read"; });
  const std::vector<MicrobenchLog> logs{log};
  const Calibration calibration = calibrate(logs);
  CHECK(calibration.spec.tensor_flops_per_clk_per_sm.fp8 == find_gpu_datasheet("H100-SXM").tensor_flops_per_clk_per_sm.fp8);
  CHECK(calibration.spec.l2_bandwidth_gb_s == find_gpu_datasheet("H100-SXM").l2_bandwidth_gb_s);
  CHECK_THAT(calibration.spec.source, Contains("kept from the catalog: tensor fp8, L2 read"));
  CHECK(calibration.figures.size() == microbench_figures().size() - 2);
}

TEST_CASE("calibration of a GPU the catalog does not know") {
  MicrobenchLog log = full_log();
  log.device.name = "NVIDIA Future GPU";
  log.device.compute_capability_major = 12;
  SECTION("every figure measured: a complete spec named as CUDA names it") {
    const std::vector<MicrobenchLog> logs{log};
    const Calibration calibration = calibrate(logs);
    CHECK_FALSE(calibration.catalog);
    CHECK(calibration.spec.name == "NVIDIA Future GPU");
    CHECK(calibration.spec.architecture == "blackwell");
    CHECK(calibration.spec.compute_capability_major == 12);
    CHECK(calibration.spec.tensor_flops_per_clk_per_sm.fp16_bf16 == Approx(4000));
    CHECK(calibration.spec.link_bandwidth_gb_s == 32);
    CHECK_THAT(calibration.spec.source, Contains("not in the catalog") && Contains("PCIe 4.0"));
    const CalibratedFigure& dram = figure(calibration, "dram_read");
    CHECK(dram.peak_at_clock == Approx(3352.3));  // from the device's memory clock and bus
    CHECK(figure(calibration, "tensor_bf16").peak_at_clock == 0);  // no spec sheet to compare with
  }
  SECTION("a missing figure is an error naming it") {
    std::erase_if(log.benchmarks, [](const MicrobenchResult& b) { return b.name == "smem_read"; });
    const std::vector<MicrobenchLog> logs{log};
    CHECK_THAT(error_of([&] { calibrate(logs); }), Contains("NVIDIA Future GPU") && Contains("smem_read"));
  }
  SECTION("an Ampere GPU has no fp8 path, and needs no fp8 figure") {
    log.device.compute_capability_major = 8;
    std::erase_if(log.benchmarks, [](const MicrobenchResult& b) { return b.name == "tensor_fp8"; });
    const std::vector<MicrobenchLog> logs{log};
    const Calibration calibration = calibrate(logs);
    CHECK(calibration.spec.architecture == "ampere");
    CHECK(calibration.spec.tensor_flops_per_clk_per_sm.fp8 == 0);
  }
}

TEST_CASE("calibration: a log of a catalog GPU's name carries that GPU's compute capability") {
  // An H100's log marked 3.0 wrote a Hopper spec of compute capability 3.0
  MicrobenchLog log = full_log();
  log.device.compute_capability_major = 3;
  const std::vector<MicrobenchLog> logs{log};
  CHECK_THAT(error_of([&] { calibrate(logs); }),
             Contains("microbench.device.compute_capability") && Contains("\"3.0\"") && Contains("H100-SXM's, 9.0"));
}

TEST_CASE("calibration refuses what it cannot use") {
  CHECK_THAT(error_of([] { calibrate(std::span<const MicrobenchLog>{}); }), Contains("at least one"));
  MicrobenchLog other = full_log();
  other.device.name = "NVIDIA H200";
  const std::vector<MicrobenchLog> mixed{full_log(), other};
  CHECK_THAT(error_of([&] { calibrate(mixed); }), Contains("log 2 device") && Contains("NVIDIA H200") && Contains("one GPU at a time"));
}

TEST_CASE("calibrated spec JSON: a GPU spec that predict accepts, with the calibration record") {
  const std::vector<MicrobenchLog> logs{full_log()};
  const Calibration calibration = calibrate(logs);
  const std::string text = to_json(calibration);
  CHECK(gpu_spec_from_json(text) == calibration.spec);
  const json document = json::parse(text);
  CHECK(document["calibration"]["catalog_entry"] == "H100-SXM");
  CHECK(document["calibration"]["device"]["driver"] == "580.159.04");
  REQUIRE(document["calibration"]["figures"].size() == microbench_figures().size());
  const json& bf16 = document["calibration"]["figures"][0];
  CHECK(bf16["benchmark"] == "tensor_bf16");
  CHECK(bf16["measured"].get<double>() == Approx(792));
  CHECK(bf16["fraction_of_peak"].get<double>() == Approx(4000.0 / 4096));
  CHECK(bf16["sets"] == "tensor_flops_per_clk_per_sm.fp16_bf16");
}

TEST_CASE("microbenchmark log JSON: read back as written") {
  MicrobenchLog log = full_log();
  log.quick = true;
  log.benchmarks[0].runs = {{0.0101, 1490.5}, {0.0099, 1510.5}};
  const MicrobenchLog read = microbench_log_from_json(log_json(log));
  CHECK(read.quick);
  CHECK(read.device.name == log.device.name);
  CHECK(read.device.compute_capability_major == 9);
  CHECK(read.device.compute_capability_minor == 0);
  CHECK(read.device.l2_bytes == log.device.l2_bytes);
  CHECK(read.device.driver == "580.159.04");
  REQUIRE(read.benchmarks.size() == log.benchmarks.size());
  CHECK(read.benchmarks[0].name == "tensor_bf16");
  REQUIRE(read.benchmarks[0].runs.size() == 2);
  CHECK(read.benchmarks[0].runs[1].seconds == 0.0099);
  CHECK(read.benchmarks[0].runs[1].clock_mhz == 1510.5);
}

TEST_CASE("microbenchmark log JSON: every malformed field is named") {
  const json good = json::parse(log_json(full_log()));
  auto error_with = [&](const std::function<void(json&)>& edit) {
    json broken = good;
    edit(broken);
    return error_of([&] { microbench_log_from_json(broken.dump()); });
  };
  CHECK_THAT(error_of([] { microbench_log_from_json("{\"format\": "); }), Contains("microbenchmark log is not valid JSON"));
  CHECK_THAT(error_with([](json& j) { j["format"] = "pipeweave-gpu"; }), Contains("microbench.format"));
  CHECK_THAT(error_with([](json& j) { j["version"] = 2; }), Contains("microbench.version must be 1"));
  CHECK_THAT(error_with([](json& j) { j["quick"] = "yes"; }), Contains("microbench.quick"));
  CHECK_THAT(error_with([](json& j) { j["extra"] = 1; }), Contains("microbench.extra is not a known field"));
  CHECK_THAT(error_with([](json& j) { j["device"].erase("sm_count"); }), Contains("microbench.device.sm_count is missing"));
  CHECK_THAT(error_with([](json& j) { j["device"]["sm_count"] = -4; }), Contains("microbench.device.sm_count") && Contains("-4"));
  CHECK_THAT(error_with([](json& j) { j["device"]["compute_capability"] = "nine"; }),
             Contains("microbench.device.compute_capability") && Contains("\"nine\""));
  CHECK_THAT(error_with([](json& j) { j["device"]["compute_capability"] = "9.0x"; }),
             Contains("microbench.device.compute_capability"));
  // Digits only, as CUDA writes it: "9.01" was read as 9.1, " 9.0" and "+9.0" as 9.0
  for (const char* loose : {"9.01", " 9.0", "+9.0", "9.", ".0", "9.-0", "123.0"})
    CHECK_THAT(error_with([&](json& j) { j["device"]["compute_capability"] = loose; }),
               Contains("microbench.device.compute_capability") && Contains("must be MAJOR.MINOR"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][2]["name"] = "tensor_fp4"; }),
             Contains("microbench.benchmarks[2].name") && Contains("\"tensor_fp4\"") && Contains("tensor_bf16"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][1]["name"] = "tensor_bf16"; }),
             Contains("microbench.benchmarks[1].name") && Contains("must not repeat"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["unit"] = "byte"; }),
             Contains("microbench.benchmarks[0].unit") && Contains("\"flop\""));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["work"] = 0; }),
             Contains("microbench.benchmarks[0].work must be within [1, 1e24]"));
  // Past what any log holds, once accepted: a launch of 1e304 us, a spread of inf, iterations ignored
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["work"] = 1e-300; }),
             Contains("microbench.benchmarks[0].work must be within [1, 1e24]") && Contains("1e-300"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["runs"][0]["seconds"] = 1e-300; }),
             Contains("microbench.benchmarks[0].runs[0].seconds must be within [1e-06, 10000]"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["iterations"] = -1; }),
             Contains("microbench.benchmarks[0].iterations must be a whole number from 1 to 2^53, got -1"));
  CHECK_THAT(error_with([](json& j) { j["device"]["memory_bus_bits"] = 8; }),
             Contains("microbench.device.memory_bus_bits must be within [32, 65536] bits"));
  CHECK_THAT(error_with([](json& j) { j["device"]["memory_clock_mhz"] = "x"; }),
             Contains("microbench.device.memory_clock_mhz must be a number"));
  CHECK_THAT(error_with([](json& j) { j["device"]["memory_clock_mhz"] = 1; }),
             Contains("microbench.device.memory_clock_mhz must be within [100, 100000] MHz"));
  CHECK_THAT(error_with([](json& j) { j["device"]["sm_observed"] = 1000000; }), Contains("microbench.device.sm_observed"));
  CHECK_THAT(error_with([](json& j) { j["device"]["compute_capability"] = "1.0"; }),
             Contains("microbench.device.compute_capability must be a GPU's, 3.0 to 15.9, got \"1.0\""));
  CHECK_THAT(error_with([](json& j) { j["device"]["max_clock_mhz"] = 1e300; }), Contains("microbench.device.max_clock_mhz must be within"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["runs"] = json::array(); }),
             Contains("microbench.benchmarks[0].runs must be a non-empty array"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][3]["runs"][0]["seconds"] = -0.5; }),
             Contains("microbench.benchmarks[3].runs[0].seconds must be within [1e-06, 10000]") && Contains("-0.5"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][3]["runs"][0]["clock_mhz"] = -1; }),
             Contains("microbench.benchmarks[3].runs[0].clock_mhz"));
  // A log of no benchmark calibrates nothing; a clock past any GPU's; a kernel that reads the
  // clock in one run and not in another (0: not read)
  CHECK_THAT(error_with([](json& j) { j["benchmarks"] = json::array(); }),
             Contains("microbench.benchmarks must be a non-empty array, got []"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["runs"][0]["clock_mhz"] = 1e9; }),
             Contains("microbench.benchmarks[0].runs[0].clock_mhz must be at most 10000 (MHz, past any GPU's clock)"));
  CHECK_THAT(error_with([](json& j) { j["benchmarks"][0]["runs"].push_back({{"seconds", 0.01}, {"clock_mhz", 0}}); }),
             Contains("microbench.benchmarks[0].runs[1].clock_mhz must be 0 in every run or in none") && Contains("runs[0] has 1500"));
  CHECK_THAT(error_of([] { load_microbench_log("/no/such/log.json"); }),
             Contains("cannot open microbenchmark log file /no/such/log.json"));
}

TEST_CASE("the committed calibration logs reproduce the committed specs") {
  // data/gpus/<gpu>.calibrated.json was written by `pipeweave calibrate --runs 3` on the GPU;
  // re-deriving it from the three raw logs beside it must give the same spec.
  for (const std::string gpu : {"H100-SXM", "H200-SXM"}) {
    const std::string dir = std::string(PIPEWEAVE_SOURCE_DIR) + "/data/gpus/";
    std::vector<MicrobenchLog> logs;
    for (int run = 1; run <= 3; ++run)
      logs.push_back(load_microbench_log(dir + gpu + ".calibration/microbench-" + std::to_string(run) + ".json"));
    // The H200's link figures were fitted to all-reduces timed on two of them (NVLink).
    std::vector<AllReduceMeasurement> allreduce;
    if (gpu == "H200-SXM") allreduce = load_allreduce_measurements(dir + gpu + ".calibration/allreduce_2xH200.csv");
    Calibration calibration = calibrate(logs, allreduce);
    // ... and the sustained-load figures from the probe of data/e2e/<gpu>/sustained_load/ (--sustained).
    const std::string probe = std::string(PIPEWEAVE_SOURCE_DIR) + "/data/e2e/" + gpu + "/sustained_load/prefill_gemm_";
    const SustainedProbe measured =
        measure_sustained_load(calibration.spec, read_measurements(probe + "isolated.csv"), read_measurements(probe + "sustained.csv"));
    CHECK(measured.shapes == 4);
    const GpuSpec committed = load_gpu_spec(dir + gpu + ".calibrated.json");
    committed.validate();
    GpuSpec derived = calibration.spec;
    derived.source = committed.source;  // the CLI adds the probe's figures to the text
    // The H100's link bandwidth: NCCL all-reduces on a published 4-GPU host (--link-bandwidth,
    // data/gpus/published/link_bandwidth.txt).
    if (gpu == "H100-SXM") derived.link_bandwidth_gb_s = 320.5;
    CHECK(derived == committed);
    CHECK(committed.name == gpu);
    // Measured, not copied from the data sheet: the clock under tensor load is below the one the
    // data sheet's peak assumes, and the catalog gives the calibrated spec for the name.
    CHECK(committed.sm_clock_mhz < find_gpu_datasheet(gpu).sm_clock_mhz);
    CHECK(find_gpu(gpu) == committed);
    // The probe: GEMMs back to back at the power limit take 1.16x (H100) and 1.20x (H200) as long.
    CHECK(committed.sustained_slowdown() == Approx(gpu == "H100-SXM" ? 1.156 : 1.199).margin(0.001));
    // The two files swapped read as GEMMs faster back to back: refused (they read as no slowdown).
    GpuSpec swapped = calibration.spec;
    CHECK_THAT(error_of([&] { measure_sustained_load(swapped, read_measurements(probe + "sustained.csv"), read_measurements(probe + "isolated.csv")); }),
               Contains("the sustained-load probe's GEMMs ran faster back to back than alone") && Contains("over 4 shapes"));
  }
  // Rows of another op are no probe (silu_mul rows were counted, as x1.000 at a utilisation of 0)
  GpuSpec h100 = find_gpu("H100-SXM");
  const std::vector<MeasuredKernel> silu = read_measurements(std::string(PIPEWEAVE_SOURCE_DIR) + "/tests/data/eval_silu_mul.csv");
  CHECK_THAT(error_of([&] { measure_sustained_load(h100, silu, silu); }), Contains("shares no GEMM shape of H100-SXM"));
}

TEST_CASE("logs confined to part of the SMs (--sms) calibrate a GPU of that many SMs, named for them") {
  // tests/data/microbench_synthetic_sm64.json: pipeweave-microbench --sms 60 on an H100, which got
  // a green context of 64 of its 132 SMs. Per SM per clock: bf16 4.6848e14 flop/s / (64 x 1.83e9)
  // = 4000, fp8 8000, tf32 2000, int8 8000; FP32 1.584e13 / (64 x 1.98e9) = 125 lanes, XU 16,
  // shared memory 120 B; DRAM read 2800 GB/s, L2 5000 GB/s.
  const std::string path = std::string(PIPEWEAVE_SOURCE_DIR) + "/tests/data/microbench_synthetic_sm64.json";
  const MicrobenchLog log = load_microbench_log(path);
  CHECK(log.device.sm_count == 64);
  CHECK(log.device.sm_limit == 64);
  CHECK(log.device.device_sm_count == 132);
  const std::vector<MicrobenchLog> logs{log};
  const Calibration calibration = calibrate(logs);
  const GpuSpec& spec = calibration.spec;
  REQUIRE(calibration.catalog);
  CHECK(calibration.catalog->name == "H100-SXM");
  CHECK(spec.name == "H100-SXM-sm64");
  CHECK(spec.name == sm_limited_gpu_name("H100-SXM", 64));
  CHECK(spec.sm_count == 64);     // the log's count, not the catalog's 132
  CHECK(spec.aliases.empty());    // "NVIDIA H100 80GB HBM3" is the whole GPU
  CHECK(spec.sm_clock_mhz == Approx(1830));
  CHECK(spec.tensor_flops_per_clk_per_sm.fp16_bf16 == Approx(4000));
  CHECK(spec.tensor_flops_per_clk_per_sm.fp8 == Approx(8000));
  CHECK(spec.fp32_lanes_per_clk_per_sm == Approx(125));
  CHECK(spec.smem_bytes_per_clk_per_sm == Approx(120));
  CHECK(spec.dram_bandwidth_gb_s == Approx(2800));
  CHECK(spec.l2_bandwidth_gb_s == Approx(5000));
  CHECK(spec.l2_bytes == 52428800);  // the memory system is the whole GPU's
  CHECK(spec.memory_gb == Approx(85.017493504));
  CHECK(spec.link_bandwidth_gb_s == find_gpu_datasheet("H100-SXM").link_bandwidth_gb_s);
  CHECK_THAT(spec.source, Contains("confined to 64 of its 132 SMs"));
  // The peak at the clock counts the 64 SMs (the catalog's per-SM figure x 64 x 1.83 GHz), not 132.
  const GpuSpec& catalog = find_gpu_datasheet("H100-SXM");
  const double per_clock = catalog.tensor_flops_per_clk_per_sm.fp16_bf16;
  const CalibratedFigure& bf16 = figure(calibration, "tensor_bf16");
  CHECK(bf16.measured == Approx(468.48));
  CHECK(bf16.peak_at_clock == Approx(per_clock * 64 * 1.83e9 / 1e12));
  CHECK(bf16.fraction_of_peak() == Approx(4000.0 / per_clock));
  CHECK(bf16.catalog == Approx(per_clock * 64 * catalog.clock_hz() / 1e12));
  CHECK(figure(calibration, "dram_read").peak_at_clock == Approx(catalog.dram_bandwidth_gb_s));  // the same DRAM
  CHECK_NOTHROW(spec.validate());
  // The spec file names it so, with the limit in its record, and predict reads it as 64 SMs.
  const std::string text = to_json(calibration);
  const GpuSpec read = gpu_spec_from_json(text);
  CHECK(read == spec);
  const json document = json::parse(text);
  CHECK(document["calibration"]["device"]["sm_limit"] == 64);
  CHECK(document["calibration"]["device"]["device_sm_count"] == 132);
  CHECK_FALSE(json::parse(to_json(calibrate(std::vector<MicrobenchLog>{full_log()})))["calibration"]["device"].contains("sm_limit"));

  // A GPU the catalog does not know: CUDA's name, with the count.
  MicrobenchLog unknown = log;
  unknown.device.name = "NVIDIA Future GPU";
  CHECK(calibrate(std::vector<MicrobenchLog>{unknown}).spec.name == "NVIDIA Future GPU-sm64");
  // Logs of the whole GPU and of part of it are two GPUs, and so are two limits.
  CHECK_THAT(error_of([&] { calibrate(std::vector<MicrobenchLog>{full_log(), log}); }),
             Contains("log 2 device") && Contains("on 64 SMs (--sms)") && Contains("one GPU at a time"));
  MicrobenchLog all_through_green = full_log();  // --sms 132: every SM, through a green context
  all_through_green.device.sm_limit = 132;
  all_through_green.device.device_sm_count = 132;
  CHECK_THAT(error_of([&] { calibrate(std::vector<MicrobenchLog>{full_log(), all_through_green}); }), Contains("one GPU at a time"));
  CHECK(calibrate(std::vector<MicrobenchLog>{all_through_green}).spec.name == "H100-SXM-sm132");
}

TEST_CASE("microbenchmark log JSON: the SM limit's fields are checked") {
  const json good = json::parse(sm64_log_text());
  auto error_with = [&](const std::function<void(json&)>& edit) {
    json broken = good;
    edit(broken);
    return error_of([&] { microbench_log_from_json(broken.dump()); });
  };
  CHECK_NOTHROW(microbench_log_from_json(good.dump()));
  CHECK_THAT(error_with([](json& j) { j["device"]["sm_limit"] = 72; }),
             Contains("microbench.device.sm_limit") && Contains("72") && Contains("must be sm_count (64)"));
  CHECK_THAT(error_with([](json& j) { j["device"]["sm_limit"] = "64"; }), Contains("microbench.device.sm_limit must be an integer"));
  CHECK_THAT(error_with([](json& j) { j["device"].erase("device_sm_count"); }), Contains("microbench.device.device_sm_count is missing"));
  CHECK_THAT(error_with([](json& j) { j["device"]["device_sm_count"] = 32; }),
             Contains("microbench.device.device_sm_count") && Contains("at least sm_limit (64)"));
  CHECK_THAT(error_with([](json& j) { j["device"].erase("sm_limit"); }),
             Contains("microbench.device.device_sm_count") && Contains("comes only with sm_limit"));
}

namespace {
// All-reduce times as the collective model gives them on `gpu`, at sizes from 4 KiB to 256 MiB.
std::vector<AllReduceMeasurement> modelled_allreduces(const GpuSpec& gpu, int ranks) {
  std::vector<AllReduceMeasurement> rows;
  const Predictor analytical = Predictor::analytical();
  for (double bytes = 4096; bytes <= 268435456; bytes *= 4) {
    const Collective op{CollectiveKind::all_reduce, bytes, ranks, DType::bf16};
    rows.push_back({ranks, bytes, "graph", analytical.predict(op, gpu).latency_us});
  }
  return rows;
}
}  // namespace

TEST_CASE("fit_link recovers the link figures that produced the timings") {
  GpuSpec truth = find_gpu_datasheet("H200-SXM");
  truth.link_bandwidth_gb_s = 317;
  truth.link_latency_us = 8.5;
  std::vector<AllReduceMeasurement> rows = modelled_allreduces(truth, 2);
  for (const AllReduceMeasurement& row : modelled_allreduces(truth, 8)) rows.push_back(row);
  // Eager rows carry the host's launch; they must not pull the fit.
  rows.push_back({2, 4096, "eager", 35.0});
  rows.push_back({2, 1048576, "eager", 500.0});
  rows.push_back({2, 1048576, "stream", 1.0});

  const GpuSpec& start = find_gpu_datasheet("H200-SXM");  // the catalog's 450 GB/s and 2 us
  const LinkFit fit = fit_link(rows, start);
  CHECK(fit.rows == 18);
  CHECK(fit.link_bandwidth_gb_s == Approx(317).epsilon(0.01));
  CHECK(fit.link_latency_us == Approx(8.5).epsilon(0.01));
  CHECK(fit.mape_pct < 0.5);
  CHECK(fit.mape_pct_before > 20);
  CHECK(fit.bandwidth_before_gb_s == start.link_bandwidth_gb_s);
  CHECK(fit.latency_before_us == start.link_latency_us);

  std::vector<AllReduceMeasurement> eager_only{{2, 4096, "eager", 35.0}};
  CHECK_THAT(error_of([&] { fit_link(eager_only, start); }), Contains("mode graph"));
  // One size fits any line through its point (it read "0.0% error"): two unknowns need two sizes
  std::vector<AllReduceMeasurement> one_size{{2, 4096, "graph", 12.0}, {8, 4096, "graph", 20.0}};
  CHECK_THAT(error_of([&] { fit_link(one_size, start); }),
             Contains("needs all-reduces of at least two sizes") && Contains("the 2 given are all of 4096 bytes"));
}

TEST_CASE("fit_link predicts each size once a trial but scores every row, and bounds its work") {
  GpuSpec truth = find_gpu_datasheet("H200-SXM");
  truth.link_bandwidth_gb_s = 317;
  truth.link_latency_us = 8.5;
  const GpuSpec& start = find_gpu_datasheet("H200-SXM");
  // Rows repeated at one size, timed apart: the mean error is over the rows, not the sizes.
  std::vector<AllReduceMeasurement> rows = modelled_allreduces(truth, 2);
  const std::size_t sizes = rows.size();
  for (std::size_t i = 0; i < sizes; ++i) rows.push_back({2, rows[i].bytes, "graph", rows[i].measured_us * 1.1});
  const LinkFit fit = fit_link(rows, start);
  CHECK(fit.rows == static_cast<int>(2 * sizes));
  GpuSpec fitted = start;
  fitted.link_bandwidth_gb_s = fit.link_bandwidth_gb_s, fitted.link_latency_us = fit.link_latency_us;
  const Predictor analytical = Predictor::analytical();
  double sum = 0;
  for (const AllReduceMeasurement& row : rows) {
    const Collective op{CollectiveKind::all_reduce, row.bytes, row.ranks, DType::bf16};
    sum += std::abs(analytical.predict(op, fitted).latency_us - row.measured_us) / row.measured_us;
  }
  CHECK(fit.mape_pct == Approx(100 * sum / static_cast<double>(rows.size())).epsilon(1e-12));
  // At either timing of each size (10% apart) or between: 4.5-4.8% off on average, not half of it
  CHECK(fit.mape_pct > 4.5);
  CHECK(fit.mape_pct < 4.8);

  // Flat timings, or a larger message faster, are no link's: refused before a fit (they fitted one
  // at the search's edge, or 4,190 GB/s at 97.5% off), not written.
  std::vector<AllReduceMeasurement> flat{{2, 4096, "graph", 5.0}, {2, 1048576, "graph", 5.0}, {2, 16777216, "graph", 5.0}};
  CHECK(error_of([&] { fit_link(flat, start); }) ==
        "the all-reduce timings over 2 ranks do not grow with the message size: 4096 bytes took 5 us, 16777216 bytes 5 us "
        "(means of their rows): are they this GPU's all-reduces?");
  std::vector<AllReduceMeasurement> falling{{2, 4096, "graph", 50.0}, {2, 65536, "graph", 49.0}, {2, 268435456, "graph", 46.0}};
  CHECK_THAT(error_of([&] { fit_link(falling, start); }), Contains("4096 bytes took 50 us, 268435456 bytes 46 us"));
  // Timings that barely grow fit a link past any GPU's
  std::vector<AllReduceMeasurement> barely{{2, 4096, "graph", 5.0}, {2, 16777216, "graph", 5.001}};
  CHECK_THAT(error_of([&] { fit_link(barely, start); }),
             Contains("the all-reduce timings fit a link of") && Contains("past any GPU's (1.5-5000 GB/s, 0.015-6000 us)"));
  // Timings that grow but follow no bandwidth and latency: a fit more than 50% off is refused
  std::vector<AllReduceMeasurement> scattered{{2, 4096, "graph", 10.0},   {2, 65536, "graph", 400.0}, {2, 1048576, "graph", 12.0},
                                              {2, 16777216, "graph", 900.0}, {2, 268435456, "graph", 20.0}, {2, 536870912, "graph", 1000.0}};
  CHECK_THAT(error_of([&] { fit_link(scattered, start); }), Contains("% on average (past 50%): they do not follow a link's bandwidth and latency"));

  std::vector<AllReduceMeasurement> many_rows;
  for (int i = 0; i < 16385; ++i) many_rows.push_back(rows[static_cast<std::size_t>(i) % rows.size()]);
  CHECK_THAT(error_of([&] { fit_link(many_rows, start); }),
             Contains("16385 rows timed in a CUDA graph") && Contains("must be at most 16384"));
  many_rows.resize(16384);
  CHECK_NOTHROW(fit_link(many_rows, start));
  std::vector<AllReduceMeasurement> many_sizes;
  for (int i = 0; i < 257; ++i) many_sizes.push_back({2, 4096.0 + i, "graph", 10.0 + i});
  CHECK_THAT(error_of([&] { fit_link(many_sizes, start); }),
             Contains("257 distinct (bytes, ranks)") && Contains("must be at most 256"));
}

TEST_CASE("all-reduce timings: the CSV is read by its header, and bad cells are named") {
  const auto rows = allreduce_measurements_from_csv(
      "ranks,bytes,mode,measured_us,spread\n2,4096,eager,32.1,0.1\n2,4096,graph,9.13,0.02\n\n8,1048576,graph,40.5,0.01\n",
      "ar.csv");
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].ranks == 2);
  CHECK(rows[1].bytes == 4096);
  CHECK(rows[1].mode == "graph");
  CHECK(rows[1].measured_us == 9.13);
  CHECK(rows[2].ranks == 8);
  CHECK(rows[2].bytes == 1048576);

  auto error_with = [](const std::string& text) { return error_of([&] { allreduce_measurements_from_csv(text, "ar.csv"); }); };
  CHECK_THAT(error_with("ranks,bytes,measured_us\n2,4096,9\n"), Contains("ar.csv: the header has no column mode"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n1,4096,graph,9\n"),
             Contains("ar.csv line 2 column ranks") && Contains("\"1\"") && Contains("from 2 to 4096"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n9999999999,4096,graph,9\n"), Contains("from 2 to 4096"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,4096,graph,9,7\n"), Contains("ar.csv line 2 has 5 cells, the header 4"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,4096,eager,30\n2,4096,stream,6\n"),
             Contains("ar.csv: no all-reduce timed in a CUDA graph"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,-4096,graph,9\n"),
             Contains("ar.csv line 2 column bytes") && Contains("\"-4096\"") && Contains("positive number"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,4096,graph,nan\n"), Contains("ar.csv line 2 column measured_us"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,1e30,graph,9\n"),
             Contains("ar.csv line 2 column bytes must be within [1, 2^50] bytes, an all-reduce's buffer, got 1e+30"));
  // A buffer of half a byte is none (it was read and shown as 4096)
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,4096.5,graph,9\n"),
             Contains("ar.csv line 2 column bytes must be a whole number of bytes, got 4096.5"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,4096,replay,9\n"),
             Contains("ar.csv line 2 column mode") && Contains("graph, eager or stream"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n2,4096\n"), Contains("ar.csv line 2 column mode is missing"));
  CHECK_THAT(error_with("ranks,bytes,mode,measured_us\n"), Contains("ar.csv: no measurement"));
  CHECK_THAT(error_with(""), Contains("ar.csv: no header row"));
  CHECK_THAT(error_of([] { load_allreduce_measurements("/no/such/allreduce.csv"); }), Contains("/no/such/allreduce.csv"));
}
