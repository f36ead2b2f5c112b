// Calibration: microbenchmark logs -> GpuSpec. See pipeweave/calibration.hpp.
#include "pipeweave/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "csv_support.hpp"
#include "json_support.hpp"
#include "statistics.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"

namespace pipeweave {
namespace {

using detail::check_format;
using detail::Fields;
using detail::json;

// How a benchmark's rate (log units per second) becomes a displayed figure and a spec field.
struct FigureRule {
  MicrobenchFigure figure;
  std::string_view log_unit;
  double display_per_unit;              // displayed = rate x this (launch: 1e6 / rate)
  double (*per_clock)(const GpuSpec&);  // the spec's per-SM-per-clock figure, in log units; null: not per clock
  void (*set)(GpuSpec&, double);        // stores per-clock units, or GB/s for bandwidths; null: record only
};

constexpr double kTera = 1e-12, kGiga = 1e-9;

const FigureRule kRules[] = {
    {{"tensor_bf16", "tensor bf16", "TFLOP/s", "tensor_flops_per_clk_per_sm.fp16_bf16"}, "flop", kTera,
     [](const GpuSpec& g) { return g.tensor_flops_per_clk_per_sm.fp16_bf16; },
     [](GpuSpec& g, double v) { g.tensor_flops_per_clk_per_sm.fp16_bf16 = v; }},
    {{"tensor_fp8", "tensor fp8", "TFLOP/s", "tensor_flops_per_clk_per_sm.fp8"}, "flop", kTera,
     [](const GpuSpec& g) { return g.tensor_flops_per_clk_per_sm.fp8; },
     [](GpuSpec& g, double v) { g.tensor_flops_per_clk_per_sm.fp8 = v; }},
    {{"tensor_tf32", "tensor tf32", "TFLOP/s", "tensor_flops_per_clk_per_sm.tf32"}, "flop", kTera,
     [](const GpuSpec& g) { return g.tensor_flops_per_clk_per_sm.tf32; },
     [](GpuSpec& g, double v) { g.tensor_flops_per_clk_per_sm.tf32 = v; }},
    {{"tensor_int8", "tensor int8", "TOP/s", "tensor_flops_per_clk_per_sm.int8"}, "op", kTera,
     [](const GpuSpec& g) { return g.tensor_flops_per_clk_per_sm.int8; },
     [](GpuSpec& g, double v) { g.tensor_flops_per_clk_per_sm.int8 = v; }},
    // Hopper's FlashAttention-2 path: the same tensor cores through the older instruction.
    {{"tensor_bf16_mma_sync", "tensor bf16 (mma.sync)", "TFLOP/s", ""}, "flop", kTera,
     [](const GpuSpec& g) { return g.tensor_flops_per_clk_per_sm.fp16_bf16; }, nullptr},
    // Displayed as FLOP/s (an FMA is two); the spec counts lane operations.
    {{"fp32_fma", "FP32 FMA", "TFLOP/s", "fp32_lanes_per_clk_per_sm"}, "op", 2 * kTera,
     [](const GpuSpec& g) { return g.fp32_lanes_per_clk_per_sm; },
     [](GpuSpec& g, double v) { g.fp32_lanes_per_clk_per_sm = v; }},
    {{"xu_ex2", "XU (ex2)", "Gop/s", "xu_ops_per_clk_per_sm"}, "op", kGiga,
     [](const GpuSpec& g) { return g.xu_ops_per_clk_per_sm; }, [](GpuSpec& g, double v) { g.xu_ops_per_clk_per_sm = v; }},
    {{"smem_read", "shared memory read", "GB/s", "smem_bytes_per_clk_per_sm"}, "byte", kGiga,
     [](const GpuSpec& g) { return g.smem_bytes_per_clk_per_sm; },
     [](GpuSpec& g, double v) { g.smem_bytes_per_clk_per_sm = v; }},
    {{"dram_read", "DRAM read", "GB/s", "dram_bandwidth_gb_s"}, "byte", kGiga, nullptr,
     [](GpuSpec& g, double v) { g.dram_bandwidth_gb_s = v; }},
    {{"dram_write", "DRAM write", "GB/s", ""}, "byte", kGiga, nullptr, nullptr},
    {{"dram_copy", "DRAM copy (read + write)", "GB/s", ""}, "byte", kGiga, nullptr, nullptr},
    {{"l2_read", "L2 read", "GB/s", "l2_bandwidth_gb_s"}, "byte", kGiga, nullptr,
     [](GpuSpec& g, double v) { g.l2_bandwidth_gb_s = v; }},
    {{"launch_overhead", "kernel launch", "us", ""}, "launch", 0, nullptr, nullptr},
};

const FigureRule& rule_for(const std::string& benchmark, const std::string& where) {
  for (const FigureRule& rule : kRules)
    if (rule.figure.benchmark == benchmark) return rule;
  std::string known;
  for (const FigureRule& rule : kRules) known += (known.empty() ? "" : ", ") + std::string(rule.figure.benchmark);
  detail::fail_field(where, detail::quoted(benchmark), "must name a known benchmark (" + known + ")");
}

bool is_dram(const FigureRule& rule) { return rule.figure.benchmark.starts_with("dram_"); }

using detail::median;

double relative_spread(const std::vector<double>& values) {
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  const double middle = median(values);
  return middle > 0 ? (*high - *low) / middle : 0;
}

double displayed(const FigureRule& rule, double units_per_second) {
  return rule.log_unit == "launch" ? 1e6 / units_per_second : units_per_second * rule.display_per_unit;
}

// (a spec's label must be its own; before 8.0, which no architecture-dependent figure knows, "unknown")
std::string architecture_label(int major, int minor) {
  const std::string_view named = architecture_of(major, minor);
  return named.empty() ? "unknown" : std::string(named);
}

MeasuredDevice read_device(const json& object) {
  const Fields fields(object, "microbench.device.");
  fields.only({"name", "compute_capability", "sm_count", "max_clock_mhz", "memory_clock_mhz", "memory_bus_bits",
               "dram_peak_gb_s", "l2_bytes", "memory_bytes", "smem_bytes_per_sm", "registers_per_sm",
               "max_threads_per_sm", "max_ctas_per_sm", "driver", "cuda_driver_api", "cuda_runtime",
               // pipeweave-microbench --sms N only
               "sm_limit", "sm_requested", "device_sm_count", "sm_observed"});
  MeasuredDevice device;
  device.name = fields.text("name");
  if (device.name.empty()) detail::fail_field("microbench.device.name", "\"\"", "must not be empty");
  const std::string cc = fields.text("compute_capability");
  const auto dot = cc.find('.');
  // Digits only, as CUDA writes it ("9.01" read as 9.1, " 9.0" and "+9.0" passed std::stoi)
  const auto digits = [](std::string_view part) {
    return !part.empty() && part.size() <= 2 && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  try {
    if (dot == std::string::npos || !digits(std::string_view(cc).substr(0, dot)) || cc.size() != dot + 2 ||
        !digits(std::string_view(cc).substr(dot + 1)))
      throw std::invalid_argument(cc);
    std::size_t used_major = 0, used_minor = 0;
    device.compute_capability_major = std::stoi(cc.substr(0, dot), &used_major);
    device.compute_capability_minor = std::stoi(cc.substr(dot + 1), &used_minor);
    if (used_major != dot || used_minor != cc.size() - dot - 1) throw std::invalid_argument(cc);
  } catch (const std::exception&) {
    detail::fail_field("microbench.device.compute_capability", detail::quoted(cc), "must be MAJOR.MINOR, e.g. \"9.0\"");
  }
  device.sm_count = fields.integer("sm_count");
  device.max_clock_mhz = fields.number("max_clock_mhz");
  device.dram_peak_gb_s = fields.number("dram_peak_gb_s");
  device.l2_bytes = fields.number("l2_bytes");
  device.memory_bytes = fields.number("memory_bytes");
  device.smem_bytes_per_sm = fields.number("smem_bytes_per_sm");
  device.registers_per_sm = fields.integer("registers_per_sm");
  device.max_threads_per_sm = fields.integer("max_threads_per_sm");
  device.max_ctas_per_sm = fields.integer("max_ctas_per_sm");
  device.driver = fields.text("driver");
  device.cuda_runtime = fields.integer("cuda_runtime");
  // Each figure within what any GPU could report (a clock of 1 MHz or 8 memory bits is a broken
  // log, not a GPU); the figures the calibration does not use are checked all the same.
  const auto within = [](const std::string& field, double value, double least, double most, std::string_view unit) {
    if (!(value >= least && value <= most)) {
      std::ostringstream requirement;
      requirement << std::setprecision(17) << "must be within [" << least << ", " << most << "] " << unit << " (what a GPU could report)";
      detail::fail_field("microbench.device." + field, value, requirement.str());
    }
  };
  if (device.compute_capability_major < 3 || device.compute_capability_major > 15 || device.compute_capability_minor < 0 ||
      device.compute_capability_minor > 9)
    detail::fail_field("microbench.device.compute_capability", detail::quoted(cc), "must be a GPU's, 3.0 to 15.9");
  within("sm_count", device.sm_count, 1, 4096, "SMs");
  within("max_clock_mhz", device.max_clock_mhz, 100, 10000, "MHz");
  within("dram_peak_gb_s", device.dram_peak_gb_s, 1, 1e6, "GB/s");
  within("l2_bytes", device.l2_bytes, 1024, 1e12, "bytes");
  within("memory_bytes", device.memory_bytes, 1 << 20, 1e15, "bytes");
  within("smem_bytes_per_sm", device.smem_bytes_per_sm, 1024, 1 << 24, "bytes");
  within("registers_per_sm", device.registers_per_sm, 1024, 1 << 24, "registers");
  within("max_threads_per_sm", device.max_threads_per_sm, 32, 65536, "threads");
  within("max_ctas_per_sm", device.max_ctas_per_sm, 1, 1024, "CTAs");
  within("cuda_runtime", device.cuda_runtime, 1000, 1000000, "(CUDA's version number, 13000 for 13.0)");
  if (fields.has("memory_clock_mhz")) within("memory_clock_mhz", fields.number("memory_clock_mhz"), 100, 100000, "MHz");
  if (fields.has("memory_bus_bits")) within("memory_bus_bits", fields.integer("memory_bus_bits"), 32, 65536, "bits");
  if (fields.has("cuda_driver_api"))
    within("cuda_driver_api", fields.integer("cuda_driver_api"), 1000, 1000000, "(CUDA's version number, 13000 for 13.0)");
  for (const char* field : {"sm_requested", "sm_observed", "device_sm_count"})
    if (fields.has(field)) within(field, fields.integer(field), 1, 4096, "SMs");
  if (fields.has("sm_limit")) {  // the kernels ran on sm_limit of the device's device_sm_count SMs
    device.sm_limit = fields.integer("sm_limit");
    device.device_sm_count = fields.integer("device_sm_count");
    detail::require_positive("microbench.device.sm_limit", device.sm_limit);
    if (device.sm_limit != device.sm_count)
      detail::fail_field("microbench.device.sm_limit", std::to_string(device.sm_limit),
                         "must be sm_count (" + std::to_string(device.sm_count) + "), the SMs the benchmarks ran on");
    if (device.device_sm_count < device.sm_limit)
      detail::fail_field("microbench.device.device_sm_count", std::to_string(device.device_sm_count),
                         "must be at least sm_limit (" + std::to_string(device.sm_limit) + ")");
  } else if (fields.has("device_sm_count")) {
    detail::fail_field("microbench.device.device_sm_count", detail::excerpt(fields.get("device_sm_count")),
                       "comes only with sm_limit (a log of pipeweave-microbench --sms)");
  }
  return device;
}

MicrobenchResult read_benchmark(const json& object, const std::string& prefix) {
  const Fields fields(object, prefix);
  fields.only({"name", "instruction", "unit", "iterations", "work", "runs"});
  MicrobenchResult result;
  result.name = fields.text("name");
  const std::string where = prefix + "name";  // named: GCC 13's -Wdangling-reference flags a temporary argument
  const FigureRule& rule = rule_for(result.name, where);
  result.instruction = fields.text("instruction");
  result.unit = fields.text("unit");
  if (result.unit != rule.log_unit)
    detail::fail_field(prefix + "unit", detail::quoted(result.unit), "must be \"" + std::string(rule.log_unit) + "\" for " + result.name);
  result.work = fields.number("work");
  // Work counts whole things (operations, bytes, launches); 1e-300 of it made a launch of 1e304 us.
  if (!(result.work >= 1 && result.work <= 1e24))
    detail::fail_field(prefix + "work", result.work, "must be within [1, 1e24] (operations, bytes or launches timed)");
  if (fields.has("iterations") && !detail::integer_within(fields.get("iterations"), 1, std::int64_t{1} << 53))
    detail::fail_field(prefix + "iterations", detail::excerpt(fields.get("iterations")), "must be a whole number from 1 to 2^53");
  const json& runs = fields.get("runs");
  if (!runs.is_array() || runs.empty()) detail::fail_field(prefix + "runs", detail::excerpt(runs), "must be a non-empty array");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string run_prefix = prefix + "runs[" + std::to_string(i) + "].";
    const Fields run(runs[i], run_prefix);
    run.only({"seconds", "clock_mhz"});
    MicrobenchRun parsed{run.number("seconds"), run.number("clock_mhz")};
    // (a run of 1e-300 s made a spread of inf; one of under a microsecond is no timing)
    if (!(parsed.seconds >= 1e-6 && parsed.seconds <= 1e4))
      detail::fail_field(run_prefix + "seconds", parsed.seconds, "must be within [1e-06, 10000] (a timed run's seconds)");
    detail::require_non_negative(run_prefix + "clock_mhz", parsed.clock_mhz);
    detail::require_at_most(run_prefix + "clock_mhz", parsed.clock_mhz, 10000, "MHz, past any GPU's clock");
    // 0 says the kernel does not read the clock: so in every run of it, or in none
    if (!result.runs.empty() && (parsed.clock_mhz > 0) != (result.runs.front().clock_mhz > 0))
      detail::fail_field(run_prefix + "clock_mhz", parsed.clock_mhz,
                         "must be 0 in every run or in none (0: the kernel does not read the clock), as runs[0] has " +
                             detail::excerpt(runs[0]["clock_mhz"]));
    result.runs.push_back(parsed);
  }
  return result;
}

}  // namespace

std::string sm_limited_gpu_name(std::string_view gpu, int sm_count) {
  return std::string(gpu) + "-sm" + std::to_string(sm_count);
}

std::span<const MicrobenchFigure> microbench_figures() {
  static const std::vector<MicrobenchFigure> figures = [] {
    std::vector<MicrobenchFigure> out;
    for (const FigureRule& rule : kRules) out.push_back(rule.figure);
    return out;
  }();
  return figures;
}

MicrobenchLog microbench_log_from_json(std::string_view json_text) {
  const json document = detail::parse_json(json_text, "microbenchmark log");
  const Fields fields(document, "microbench.");
  fields.only({"format", "version", "quick", "device", "benchmarks"});
  check_format(fields, "pipeweave-microbench", "microbench.");
  MicrobenchLog log;
  const json& quick = fields.get("quick");
  if (!quick.is_boolean()) detail::fail_field("microbench.quick", detail::excerpt(quick), "must be true or false");
  log.quick = quick.get<bool>();
  log.device = read_device(fields.get("device"));
  const json& benchmarks = fields.get("benchmarks");
  if (!benchmarks.is_array() || benchmarks.empty())  // a log of no benchmark calibrates nothing
    detail::fail_field("microbench.benchmarks", detail::excerpt(benchmarks), "must be a non-empty array");
  for (std::size_t i = 0; i < benchmarks.size(); ++i) {
    MicrobenchResult result = read_benchmark(benchmarks[i], "microbench.benchmarks[" + std::to_string(i) + "].");
    for (const MicrobenchResult& earlier : log.benchmarks)
      if (earlier.name == result.name)
        detail::fail_field("microbench.benchmarks[" + std::to_string(i) + "].name", detail::quoted(result.name), "must not repeat");
    log.benchmarks.push_back(std::move(result));
  }
  return log;
}

MicrobenchLog load_microbench_log(const std::string& path) {
  try {
    return microbench_log_from_json(detail::read_file(path, "microbenchmark log"));
  } catch (const Error& error) {
    detail::rethrow_as(error, path + ": " + error.what());
  }
}

std::vector<AllReduceMeasurement> allreduce_measurements_from_csv(std::string_view csv_text, const std::string& source) {
  std::vector<AllReduceMeasurement> rows;
  detail::for_each_csv_row(csv_text, source, {"ranks", "bytes", "mode", "measured_us"}, [&](const detail::CsvRow& row) {
    AllReduceMeasurement m;
    m.ranks = static_cast<int>(row.integer("ranks", 2, 4096));
    m.bytes = row.positive("bytes");
    if (m.bytes < 1 || m.bytes > static_cast<double>(Collective::kMostBytes))  // (named here, not as collective.bytes later)
      detail::fail_field(row.where("bytes"), m.bytes, "must be within [1, 2^50] bytes, an all-reduce's buffer");
    if (m.bytes != std::floor(m.bytes)) detail::fail_field(row.where("bytes"), m.bytes, "must be a whole number of bytes");
    m.mode = row.text("mode");
    if (m.mode != "graph" && m.mode != "eager" && m.mode != "stream")
      detail::fail_field(row.where("mode"), detail::quoted(m.mode), "must be graph, eager or stream");
    m.measured_us = row.measured_us("measured_us");
    rows.push_back(std::move(m));
  });
  if (rows.empty()) throw InvalidInput(source + ": no measurement");
  if (std::none_of(rows.begin(), rows.end(), [](const AllReduceMeasurement& m) { return m.mode == "graph"; }))
    throw InvalidInput(source + ": no all-reduce timed in a CUDA graph (mode graph), which the link fit needs");
  return rows;
}

std::vector<AllReduceMeasurement> load_allreduce_measurements(const std::string& path) {
  return allreduce_measurements_from_csv(detail::read_file(path, "all-reduce measurements"), path);
}

namespace {

// Over each rank count timed at two sizes or more, the largest message's mean time must pass the
// smallest's: timings that shrink as the message grows (or stay flat) are no link's, and fit one
// at the search's edge or with a mean error near 100% (50 -> 46 us from 4 KiB to 256 MiB fitted
// 4,190 GB/s and 47.8 us, 97.5% off, and was written into the spec).
void check_timings_grow(const std::vector<const AllReduceMeasurement*>& rows) {
  std::map<int, std::map<double, std::pair<double, int>>> by_ranks;  // ranks -> bytes -> (sum of times, rows)
  for (const AllReduceMeasurement* m : rows) {
    auto& [sum, count] = by_ranks[m->ranks][m->bytes];
    sum += m->measured_us, ++count;
  }
  for (const auto& [ranks, by_bytes] : by_ranks) {
    if (by_bytes.size() < 2) continue;
    const auto& [small_bytes, small] = *by_bytes.begin();
    const auto& [large_bytes, large] = *by_bytes.rbegin();
    const double small_us = small.first / small.second, large_us = large.first / large.second;
    if (!(large_us > small_us)) {
      std::ostringstream message;
      message << "the all-reduce timings over " << ranks << " ranks do not grow with the message size: "
              << static_cast<std::int64_t>(small_bytes) << " bytes took " << small_us << " us, " << static_cast<std::int64_t>(large_bytes)
              << " bytes " << large_us << " us (means of their rows): are they this GPU's all-reduces?";
      throw InvalidInput(message.str());
    }
  }
}

// A fit within what any link could be, and one the timings follow: said so, not written into a
// spec as a figure (16,681 GB/s once was, from flat timings).
void check_link_fit(const LinkFit& fit) {
  const auto refuse = [&fit](const auto& why) {
    std::ostringstream message;
    message << "the all-reduce timings fit a link of " << fit.link_bandwidth_gb_s << " GB/s and " << fit.link_latency_us << " us a step"
            << why;
    throw InvalidInput(message.str());
  };
  if (fit.link_bandwidth_gb_s > 5000 || fit.link_bandwidth_gb_s < 1.5 || fit.link_latency_us < 0.015 || fit.link_latency_us > 6000)
    refuse(", past any GPU's (1.5-5000 GB/s, 0.015-6000 us): do their times grow with the message size?");
  // (the H200's measured all-reduces fit within 9.9%)
  if (fit.mape_pct > 50) {
    std::ostringstream within;
    within << " only within " << fit.mape_pct << "% on average (past 50%): they do not follow a link's bandwidth and latency";
    refuse(within.str());
  }
}

}  // namespace

LinkFit fit_link(std::span<const AllReduceMeasurement> measurements, const GpuSpec& gpu) {
  std::vector<const AllReduceMeasurement*> rows;
  for (const AllReduceMeasurement& m : measurements)
    if (m.mode == "graph") rows.push_back(&m);
  if (rows.empty()) throw InvalidInput("fitting the link needs all-reduces measured in a CUDA graph (mode graph); none was given");
  // Two unknowns, bandwidth and latency: one size of message fits any line through its point
  std::set<double> sizes;
  for (const AllReduceMeasurement* m : rows) sizes.insert(m->bytes);
  if (sizes.size() < 2) {
    std::ostringstream message;
    message << "fitting the link's bandwidth and latency needs all-reduces of at least two sizes timed in a CUDA graph "
               "(mode graph); the "
            << rows.size() << " given are all of " << static_cast<std::int64_t>(*sizes.begin()) << " bytes";
    throw InvalidInput(message.str());
  }
  check_timings_grow(rows);
  // The fit scores 13,448 trial links: each distinct (size, ranks) is predicted once a trial and
  // the rows read their own, summed in the rows' order as before. Both are bounded so that a fit
  // takes about a second at most (measure_allreduce.py writes a few dozen rows of ~20 sizes).
  constexpr std::size_t kMostRows = 16384, kMostCases = 256;
  if (rows.size() > kMostRows)
    detail::fail_field("all-reduce measurements", std::to_string(rows.size()) + " rows timed in a CUDA graph",
                       "must be at most " + std::to_string(kMostRows) + " for the link fit");
  std::vector<Collective> cases;
  std::vector<std::size_t> case_of(rows.size());
  {
    std::map<std::pair<double, int>, std::size_t> index;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto [found, added] = index.emplace(std::pair{rows[r]->bytes, rows[r]->ranks}, cases.size());
      if (added) cases.push_back(Collective{CollectiveKind::all_reduce, rows[r]->bytes, rows[r]->ranks, DType::bf16});
      case_of[r] = found->second;
    }
  }
  if (cases.size() > kMostCases)
    detail::fail_field("all-reduce measurements", std::to_string(cases.size()) + " distinct (bytes, ranks) timed in a CUDA graph",
                       "must be at most " + std::to_string(kMostCases) + " for the link fit");
  const Predictor analytical = Predictor::analytical();
  GpuSpec trial = gpu;
  std::vector<double> predicted_us(cases.size());
  auto mape = [&](double bandwidth_gb_s, double latency_us) {
    trial.link_bandwidth_gb_s = bandwidth_gb_s, trial.link_latency_us = latency_us;
    for (std::size_t c = 0; c < cases.size(); ++c) predicted_us[c] = analytical.predict(cases[c], trial).latency_us;
    double sum = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) sum += std::abs(predicted_us[case_of[r]] - rows[r]->measured_us) / rows[r]->measured_us;
    return 100 * sum / static_cast<double>(rows.size());
  };
  LinkFit fit;
  fit.rows = static_cast<int>(rows.size());
  fit.mape_pct_before = mape(gpu.link_bandwidth_gb_s, gpu.link_latency_us);
  fit.bandwidth_before_gb_s = gpu.link_bandwidth_gb_s, fit.latency_before_us = gpu.link_latency_us;
  // The error is piecewise smooth in (log bandwidth, log latency): a coarse grid over
  // 1 GB/s..10 TB/s and 10 ns..10 ms, then finer grids around the best point.
  double log_bw_best = 0, log_lat_best = 0, best = std::numeric_limits<double>::infinity();
  double log_bw_low = 0, log_bw_high = 4, log_lat_low = -2, log_lat_high = 4;
  constexpr int kSteps = 40;
  for (int round = 0; round < 8; ++round) {
    const double bw_step = (log_bw_high - log_bw_low) / kSteps, lat_step = (log_lat_high - log_lat_low) / kSteps;
    for (int i = 0; i <= kSteps; ++i)
      for (int j = 0; j <= kSteps; ++j) {
        const double log_bw = log_bw_low + i * bw_step, log_lat = log_lat_low + j * lat_step;
        const double error = mape(std::pow(10.0, log_bw), std::pow(10.0, log_lat));
        if (error < best) best = error, log_bw_best = log_bw, log_lat_best = log_lat;
      }
    log_bw_low = log_bw_best - 2 * bw_step, log_bw_high = log_bw_best + 2 * bw_step;
    log_lat_low = log_lat_best - 2 * lat_step, log_lat_high = log_lat_best + 2 * lat_step;
  }
  fit.link_bandwidth_gb_s = std::pow(10.0, log_bw_best);
  fit.link_latency_us = std::pow(10.0, log_lat_best);
  fit.mape_pct = best;
  check_link_fit(fit);
  return fit;
}

namespace {

// Every log must be of one GPU (and one SM limit): calibrate one GPU at a time.
void check_one_gpu(std::span<const MicrobenchLog> logs) {
  const MeasuredDevice& first = logs.front().device;
  for (std::size_t i = 1; i < logs.size(); ++i)
    if (logs[i].device.name != first.name || logs[i].device.sm_count != first.sm_count ||
        logs[i].device.sm_limit != first.sm_limit) {
      auto described = [](const MeasuredDevice& d) {
        return d.sm_limit > 0 ? d.name + "\" on " + std::to_string(d.sm_limit) + " SMs (--sms)" : d.name + "\"";
      };
      detail::fail_field("log " + std::to_string(i + 1) + " device", "\"" + described(logs[i].device),
                         "must be the first log's GPU (\"" + described(first) + "): calibrate one GPU at a time");
    }
}

// What a figure is compared with: the data sheet's peak (at its clock and at the clock the runs
// held), or without a data sheet the DRAM peak the memory clock and bus width give.
void compare_with_peaks(CalibratedFigure& figure, const FigureRule& rule, const std::optional<GpuSpec>& catalog_entry,
                        const MeasuredDevice& device) {
  const bool limited = device.sm_limit > 0;
  if (catalog_entry) {
    const GpuSpec& catalog = *catalog_entry;
    if (rule.per_clock) {  // the catalog's per-SM figure, over the SMs the benchmarks ran on
      const double per_sm_clock = rule.per_clock(catalog) * (limited ? device.sm_count : catalog.sm_count);
      figure.catalog = displayed(rule, per_sm_clock * catalog.clock_hz());
      if (figure.clock_mhz > 0) figure.peak_at_clock = displayed(rule, per_sm_clock * figure.clock_mhz * 1e6);
    } else if (is_dram(rule)) {
      figure.catalog = figure.peak_at_clock = catalog.dram_bandwidth_gb_s;
    } else if (rule.figure.benchmark == "l2_read") {
      figure.catalog = catalog.l2_bandwidth_gb_s;  // an estimate, not a spec-sheet peak
    }
  } else if (is_dram(rule)) {
    figure.peak_at_clock = device.dram_peak_gb_s;  // from the memory clock and bus width
  }
}

// One figure's runs pooled over the logs, or nothing where no log ran its benchmark.
std::optional<CalibratedFigure> pooled_figure(const FigureRule& rule, std::span<const MicrobenchLog> logs,
                                              const std::optional<GpuSpec>& catalog, const MeasuredDevice& device) {
  std::vector<double> rates, clocks, log_medians;
  for (const MicrobenchLog& log : logs)
    for (const MicrobenchResult& result : log.benchmarks) {
      if (result.name != rule.figure.benchmark) continue;
      std::vector<double> this_log;
      for (const MicrobenchRun& run : result.runs) {
        rates.push_back(result.work / run.seconds);
        this_log.push_back(rates.back());
        if (run.clock_mhz > 0) clocks.push_back(run.clock_mhz);
      }
      log_medians.push_back(median(this_log));
    }
  if (rates.empty()) return std::nullopt;
  CalibratedFigure figure;
  figure.figure = rule.figure;
  std::vector<double> shown;
  for (double rate : rates) shown.push_back(displayed(rule, rate));
  figure.measured = displayed(rule, median(rates));
  figure.spread = relative_spread(shown);
  figure.runs = static_cast<int>(rates.size());
  figure.logs = static_cast<int>(log_medians.size());
  if (log_medians.size() > 1) figure.run_to_run_spread = relative_spread(log_medians);
  if (!clocks.empty()) figure.clock_mhz = median(clocks);
  compare_with_peaks(figure, rule, catalog, device);
  return figure;
}

const CalibratedFigure* find_figure(const std::vector<CalibratedFigure>& figures, std::string_view benchmark) {
  for (const CalibratedFigure& figure : figures)
    if (figure.figure.benchmark == benchmark) return &figure;
  return nullptr;
}

// The spec before any rate is set: the catalog entry (or a bare one), with what the device
// reports of itself.
GpuSpec device_spec(const MeasuredDevice& device, const std::optional<GpuSpec>& catalog) {
  GpuSpec spec;
  if (catalog) {
    // The catalog's GPU of this name is of one architecture: a log saying otherwise is not of it
    // (an H100's log marked 3.0 wrote a Hopper spec of compute capability 3.0)
    if (catalog->compute_capability_major != device.compute_capability_major ||
        catalog->compute_capability_minor != device.compute_capability_minor)
      detail::fail_field("microbench.device.compute_capability",
                         detail::quoted(std::to_string(device.compute_capability_major) + "." + std::to_string(device.compute_capability_minor)),
                         "must be " + catalog->name + "'s, " + std::to_string(catalog->compute_capability_major) + "." +
                             std::to_string(catalog->compute_capability_minor) + " (the catalog's GPU of the log's name)");
    spec = *catalog;
  } else {
    spec.name = device.name;
    spec.architecture = architecture_label(device.compute_capability_major, device.compute_capability_minor);
    spec.link_bandwidth_gb_s = 32;  // PCIe 4.0 x16, per direction
    spec.link_latency_us = 5;
  }
  spec.compute_capability_major = device.compute_capability_major;
  spec.compute_capability_minor = device.compute_capability_minor;
  spec.sm_count = device.sm_count;
  spec.l2_bytes = device.l2_bytes;
  spec.memory_gb = device.memory_bytes / 1e9;
  spec.smem_bytes_per_sm = device.smem_bytes_per_sm;
  spec.registers_per_sm = device.registers_per_sm;
  spec.max_threads_per_sm = device.max_threads_per_sm;
  spec.max_ctas_per_sm = device.max_ctas_per_sm;
  if (device.sm_limit > 0) {  // a GPU of its own: named for its SM count; CUDA's names belong to the whole GPU
    spec.name = sm_limited_gpu_name(spec.name, device.sm_limit);
    spec.aliases.clear();
  }
  spec.max_clock_mhz = device.max_clock_mhz;
  return spec;
}

// Sets the SM clock and every rate the figures measure; returns the names of those the logs
// lack and the catalog supplies (", " before each). Without a catalog entry a missing one is an error.
std::string set_measured_rates(GpuSpec& spec, const Calibration& out) {
  const MeasuredDevice& device = out.device;
  std::string kept;
  const CalibratedFigure* bf16 = find_figure(out.figures, "tensor_bf16");
  if (bf16 && bf16->clock_mhz > 0) spec.sm_clock_mhz = bf16->clock_mhz;
  else if (out.catalog) kept += ", SM clock";
  else throw InvalidInput("calibrating " + device.name + ", which is not in the catalog, needs the tensor_bf16 benchmark and its clock");

  for (const FigureRule& rule : kRules) {
    if (!rule.set) continue;
    const CalibratedFigure* figure = find_figure(out.figures, rule.figure.benchmark);
    if (!figure || (rule.per_clock && figure->clock_mhz <= 0)) {
      // fp8 before Ada has no tensor path at all: nothing to keep or miss.
      const bool absent_on_this_architecture = rule.figure.benchmark == "tensor_fp8" && device.compute_capability_major * 10 + device.compute_capability_minor < 89;
      if (absent_on_this_architecture) continue;
      if (!out.catalog)
        throw InvalidInput("calibrating " + device.name + ", which is not in the catalog, needs the " +
                    std::string(rule.figure.benchmark) + " benchmark" + (figure ? " with its clock" : ""));
      kept += ", " + std::string(rule.figure.label);
      continue;
    }
    // Back from the displayed unit to log units per second.
    const double units_per_second = figure->measured / rule.display_per_unit;
    if (rule.per_clock) rule.set(spec, units_per_second / (device.sm_count * figure->clock_mhz * 1e6));
    else rule.set(spec, figure->measured);  // GB/s
  }
  return kept;
}

// Where the spec's figures came from, up to the link's.
std::string calibration_source(std::span<const MicrobenchLog> logs, const MeasuredDevice& device, const std::string& kept) {
  const bool limited = device.sm_limit > 0;
  const MicrobenchLog& first = logs.front();
  std::string source = "pipeweave calibrate: " + std::to_string(logs.size()) + " run(s) of pipeweave-microbench" +
                       (first.quick ? " --quick" : "") + " on " + device.name +
                       (limited ? " confined to " + std::to_string(device.sm_limit) + " of its " +
                                      std::to_string(device.device_sm_count) + " SMs (--sms: a green context)"
                                : "") +
                       ", driver " + device.driver + ", CUDA runtime " +
                       std::to_string(device.cuda_runtime / 1000) + "." + std::to_string(device.cuda_runtime % 1000 / 10) +
                       "; per-clock figures at the clock measured under each load, sm_clock_mhz under the bf16 tensor load"
                       "; sustained load estimated from that clock's loss";
  if (!kept.empty()) source += "; not measured, kept from the catalog: " + kept.substr(2);
  return source;
}

}  // namespace

Calibration calibrate(std::span<const MicrobenchLog> logs, std::span<const AllReduceMeasurement> allreduce,
                      std::string_view allreduce_source) {
  if (logs.empty()) throw InvalidInput("calibration needs at least one microbenchmark log");
  check_one_gpu(logs);
  Calibration out;
  out.device = logs.front().device;
  out.logs = static_cast<int>(logs.size());
  const MeasuredDevice& device = out.device;

  try {  // the data sheet: what each figure is compared with, and what the logs do not measure
    out.catalog = find_gpu_datasheet(device.name);
  } catch (const Error&) {
    out.catalog.reset();
  }

  // Pool the runs, per figure.
  for (const FigureRule& rule : kRules)
    if (std::optional<CalibratedFigure> figure = pooled_figure(rule, logs, out.catalog, device))
      out.figures.push_back(*figure);

  // The spec: the catalog entry (or a bare one), then everything measured.
  GpuSpec& spec = out.spec;
  spec = device_spec(device, out.catalog);
  const std::string kept = set_measured_rates(spec, out);  // figures the logs lack, kept from the catalog

  // Not measured by the microbenchmarks: estimated from their clock loss (pipeweave calibrate
  // --sustained measures it from GEMMs run alone and back to back).
  estimate_sustained_load(spec);

  spec.source = calibration_source(logs, device, kept);
  if (!allreduce.empty()) {
    try {
      out.link = fit_link(allreduce, spec);
    } catch (const Error& error) {
      if (allreduce_source.empty()) throw;
      detail::rethrow_as(error, std::string(allreduce_source) + ": " + error.what());
    }
    spec.link_bandwidth_gb_s = out.link->link_bandwidth_gb_s;
    spec.link_latency_us = out.link->link_latency_us;
    spec.source += "; link figures fitted to " + std::to_string(out.link->rows) + " all-reduces timed in CUDA graphs";
  } else {
    spec.source += out.catalog ? "; link figures from the catalog (" + out.catalog->name + ")"
                               : "; not in the catalog: link figures assume PCIe 4.0 x16";
  }
  spec.validate();
  return out;
}

SustainedProbe measure_sustained_load(GpuSpec& gpu, std::span<const MeasuredKernel> isolated,
                                      std::span<const MeasuredKernel> sustained) {
  gpu.validate();
  detail::require_positive("gpu.max_clock_mhz", gpu.max_clock_mhz);
  std::map<std::string, const MeasuredKernel*> alone;  // shape -> cuBLAS's first choice, measured alone
  // GEMMs alone: other rows (silu_mul, say) were counted as the probe's, and read as no slowdown
  const auto probe_row = [&gpu](const MeasuredKernel& row) {
    return row.is_default && row.gpu == gpu.name && row.kernel.family() == OpFamily::gemm;
  };
  for (const MeasuredKernel& row : isolated)
    if (probe_row(row)) alone.emplace(row.shape, &row);
  SustainedProbe probe;
  double alone_us = 0, busy_us = 0, tensor_us = 0;
  std::map<std::string, bool> seen;
  for (const MeasuredKernel& row : sustained) {
    if (!probe_row(row) || seen[row.shape]) continue;
    const auto found = alone.find(row.shape);
    if (found == alone.end()) continue;
    seen[row.shape] = true;
    ++probe.shapes;
    alone_us += found->second->duration_us;
    busy_us += row.duration_us;
    const Demand demand = compute_demand(found->second->kernel, gpu);
    tensor_us += at(demand.gpu_cycles, Pipe::tensor) / gpu.clock_hz() * 1e6;
  }
  if (probe.shapes == 0)
    throw InvalidInput("the sustained-load probe shares no GEMM shape of " + gpu.name + " between its isolated and back-to-back rows");
  // Back to back slower or as fast, never faster beyond the timing's noise (a GPU that holds its
  // clock measures within a few percent of 1 either way, read as no slowdown): 5% faster, the two
  // files are most likely swapped (swapped, the H100's and H200's probes read 0.865 and 0.834; they
  // were taken as no slowdown without a word).
  if (busy_us < 0.95 * alone_us) {
    std::ostringstream message;
    message << "the sustained-load probe's GEMMs ran faster back to back than alone (" << busy_us << " us against " << alone_us
            << " us over " << probe.shapes << " shapes): give the GEMMs timed alone first, then those back to back";
    throw InvalidInput(message.str());
  }
  probe.slowdown = std::max(1.0, busy_us / alone_us);
  probe.tensor_utilization = std::min(1.0, tensor_us / alone_us);
  gpu.sustained_clock_mhz = gpu.max_clock_mhz / probe.slowdown;
  gpu.sustained_utilization = probe.tensor_utilization;
  return probe;
}

std::string to_json(const Calibration& calibration) {
  json document = json::parse(to_json(calibration.spec));
  json figures = json::array();
  for (const CalibratedFigure& figure : calibration.figures) {
    json row{{"benchmark", figure.figure.benchmark},
             {"unit", figure.figure.display_unit},
             {"measured", figure.measured},
             {"spread", figure.spread},
             {"runs", figure.runs},
             {"logs", figure.logs}};
    if (figure.logs > 1) row["run_to_run_spread"] = figure.run_to_run_spread;
    if (figure.clock_mhz > 0) row["clock_mhz"] = figure.clock_mhz;
    if (figure.peak_at_clock > 0) row["peak_at_clock"] = figure.peak_at_clock, row["fraction_of_peak"] = figure.fraction_of_peak();
    if (figure.catalog > 0) row["catalog"] = figure.catalog;
    if (!figure.figure.spec_field.empty()) row["sets"] = figure.figure.spec_field;
    figures.push_back(row);
  }
  const MeasuredDevice& device = calibration.device;
  document["calibration"] = {
      {"device", {{"name", device.name},
                  {"compute_capability", std::to_string(device.compute_capability_major) + "." +
                                             std::to_string(device.compute_capability_minor)},
                  {"max_clock_mhz", device.max_clock_mhz},
                  {"dram_peak_gb_s", device.dram_peak_gb_s},
                  {"driver", device.driver},
                  {"cuda_runtime", device.cuda_runtime}}},
      {"catalog_entry", calibration.catalog ? json(calibration.catalog->name) : json(nullptr)},
      {"logs", calibration.logs},
      {"figures", figures}};
  if (device.sm_limit > 0) {
    document["calibration"]["device"]["sm_limit"] = device.sm_limit;
    document["calibration"]["device"]["device_sm_count"] = device.device_sm_count;
  }
  if (const auto& link = calibration.link)
    document["calibration"]["link_fit"] = {{"all_reduces", link->rows},
                                           {"link_bandwidth_gb_s", link->link_bandwidth_gb_s},
                                           {"link_latency_us", link->link_latency_us},
                                           {"mape_pct", link->mape_pct},
                                           {"link_bandwidth_gb_s_before", link->bandwidth_before_gb_s},
                                           {"link_latency_us_before", link->latency_before_us},
                                           {"mape_pct_before", link->mape_pct_before}};
  if (const auto& probe = calibration.sustained)
    document["calibration"]["sustained_probe"] = {{"shapes", probe->shapes},
                                                  {"slowdown", probe->slowdown},
                                                  {"tensor_utilization", probe->tensor_utilization}};
  return document.dump(2) + "\n";
}

}  // namespace pipeweave
