// `pipeweave calibrate`: runs the CUDA microbenchmarks (a separate program, so that this tool
// needs no CUDA), turns their timings into a GpuSpec through pipeweave::calibrate, prints the
// table and writes the spec, the raw logs and a report.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "svg.hpp"
#include "flags.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMicrobench = "pipeweave-microbench";

struct CalibrateArguments {
  bool quick = false;
  bool json = false;
  int runs = 1;
  int sms = 0;  // --sms N: the microbenchmarks on (at least) N SMs; 0: the whole GPU
  std::string out;
  std::string log_dir;
  std::string report_dir;
  std::vector<std::string> from_logs;
  std::string link;  // all-reduce timings (measure_allreduce.py) to fit the link figures to
  std::string sustained_isolated, sustained_busy;  // --sustained ISOLATED.csv,BACK_TO_BACK.csv
  double link_bandwidth = 0;  // --link-bandwidth GB/s: an all-reduce bus bandwidth measured elsewhere
};

FlagParser calibrate_flags(CalibrateArguments& arguments) {
  FlagParser flags("calibrate");
  flags.flag("--quick", arguments.quick)
      .whole("--runs", arguments.runs, 1, 100)
      .whole("--sms", arguments.sms, 1, kMostSms)
      .text("--log-dir", arguments.log_dir)
      .texts("--from-log", arguments.from_logs)
      .text("--link", arguments.link)
      .number("--link-bandwidth", arguments.link_bandwidth, [](double gb_s) { return gb_s >= 0.001 && gb_s <= 1e6; },
              "must be a number of GB/s within [0.001, 1e+06], as a spec's link_bandwidth_gb_s")
      .custom("--sustained",
              [&arguments](const std::string& text) {
                const std::size_t comma = text.find(',');
                if (comma == std::string::npos || comma == 0 || comma + 1 == text.size())
                  FlagParser::fail("--sustained", text,
                                   "must be ISOLATED.csv,BACK_TO_BACK.csv (two measurement files of the same GEMMs)");
                arguments.sustained_isolated = text.substr(0, comma);
                arguments.sustained_busy = text.substr(comma + 1);
                // One file as both runs would read the slowdown as 1 however the clock fell.
                std::error_code error;
                if (arguments.sustained_isolated == arguments.sustained_busy ||
                    std::filesystem::equivalent(arguments.sustained_isolated, arguments.sustained_busy, error))
                  FlagParser::fail("--sustained", text, "must name two files (the GEMMs timed alone, then back to back)");
              })
      .text("--out", arguments.out)
      .flag("--json", arguments.json)
      .text("--report", arguments.report_dir);
  return flags;
}

CalibrateArguments parse(int argc, const char* const* argv, int first) {
  CalibrateArguments arguments;
  calibrate_flags(arguments).parse(argc, argv, first);
  std::vector<std::pair<std::string, std::string>> inputs{
      {"--link", arguments.link}, {"--sustained", arguments.sustained_isolated}, {"--sustained", arguments.sustained_busy}};
  for (const std::string& path : arguments.from_logs) inputs.emplace_back("--from-log", path);
  check_output("--out", arguments.out, inputs);
  check_output_folder("--report", arguments.report_dir, {"calibration.csv", "calibration.svg", "link.csv", "link.svg"}, inputs);
  check_output_folder("--log-dir", arguments.log_dir);
  if (arguments.link_bandwidth > 0 && !arguments.link.empty())
    throw InvalidInput("--link-bandwidth and --link both set the link: give one");
  if (!arguments.from_logs.empty() && (arguments.quick || arguments.runs != 1 || arguments.sms > 0 || !arguments.log_dir.empty()))
    throw InvalidInput("--from-log re-reads saved logs: it does not combine with --quick, --runs, --sms or --log-dir");
  return arguments;
}

// Runs the microbenchmarks once (on `sms` SMs, 0: all) and returns their log.
std::string run_microbench(const fs::path& program, bool quick, int sms, int run, int runs) {
  const fs::path log_path = fs::temp_directory_path() / fmt::format("pipeweave-microbench-{}-{}.json", ::getpid(), run);
  if (runs > 1) fmt::print(stderr, "pipeweave: microbenchmark run {} of {}\n", run, runs);
  try {
    run_tool(program,
             fmt::format("{}{}--out {}", quick ? "--quick " : "", sms > 0 ? fmt::format("--sms {} ", sms) : "",
                         shell_quote(log_path.string())),
             "the microbenchmarks could not run");
  } catch (const Error&) {
    fs::remove(log_path);
    throw;
  }
  std::string text = read_text(log_path, "microbenchmark log");
  fs::remove(log_path);
  return text;
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }
std::string number(double value) {
  if (value == 0) return "-";
  return std::abs(value) >= 100 ? fmt::format("{:.0f}", value) : fmt::format("{:.2f}", value);
}

void print_table(const Calibration& calibration) {
  const MeasuredDevice& device = calibration.device;
  fmt::print("{} (compute capability {}.{}, {} SMs{}, driver {}): {} log(s); catalog entry {}\n", device.name,
             device.compute_capability_major, device.compute_capability_minor, device.sm_count,
             device.sm_limit > 0 ? fmt::format(" of {} (--sms)", device.device_sm_count) : "", device.driver,
             calibration.logs, calibration.catalog ? calibration.catalog->name : "none");
  const bool several = calibration.logs > 1;
  fmt::print("{:<24} {:>10} {:<8} {:>7}{} {:>9} {:>10} {:>8} {:>9} {:>7}\n", "figure", "measured", "unit", "spread",
             several ? fmt::format(" {:>10}", "run-to-run") : "", "clock MHz", "peak@clock", "of peak", "catalog",
             "ratio");
  for (const CalibratedFigure& f : calibration.figures) {
    fmt::print("{:<24} {:>10} {:<8} {:>7}{} {:>9} {:>10} {:>8} {:>9} {:>7}\n", f.figure.label, number(f.measured),
               f.figure.display_unit, percent(f.spread), several ? fmt::format(" {:>10}", percent(f.run_to_run_spread)) : "",
               f.clock_mhz > 0 ? fmt::format("{:.0f}", f.clock_mhz) : "-", number(f.peak_at_clock),
               f.peak_at_clock > 0 ? percent(f.fraction_of_peak()) : "-", number(f.catalog),
               f.catalog > 0 ? fmt::format("{:.3f}", f.measured / f.catalog) : "-");
  }
  const GpuSpec& spec = calibration.spec;
  const TensorRates& t = spec.tensor_flops_per_clk_per_sm;
  fmt::print("spec {}: {:.0f} MHz; per SM per clock: tensor bf16 {:.0f}, fp8 {:.0f}, tf32 {:.0f}, int8 {:.0f}; FP32 {:.1f} lanes, "
             "XU {:.2f}, shared memory {:.1f} B; DRAM {:.0f} GB/s, L2 {:.0f} GB/s\n",
             spec.name, spec.sm_clock_mhz, t.fp16_bf16, t.fp8, t.tf32, t.int8, spec.fp32_lanes_per_clk_per_sm,
             spec.xu_ops_per_clk_per_sm, spec.smem_bytes_per_clk_per_sm, spec.dram_bandwidth_gb_s, spec.l2_bandwidth_gb_s);
  fmt::print("sustained load: tensor-bound kernels x{:.3f} back to back ({:.0f} MHz effective of {:.0f}) from a tensor "
             "utilisation of {:.3f}; {}\n",
             spec.sustained_slowdown(), spec.sustained_clock_mhz, spec.max_clock_mhz, spec.sustained_utilization,
             calibration.sustained ? fmt::format("measured on {} GEMMs (--sustained)", calibration.sustained->shapes)
                                   : "estimated from the tensor microbenchmark's clock (--sustained measures it)");
}

// Each all-reduce timed in a CUDA graph, measured against the model with the figures the fit
// started from and with the fitted ones.
struct LinkRow {
  const AllReduceMeasurement* measured;
  double before_us, after_us;
};
std::vector<LinkRow> link_rows(const Calibration& calibration, const std::vector<AllReduceMeasurement>& measured) {
  std::vector<LinkRow> rows;
  if (!calibration.link) return rows;
  const Predictor analytical = Predictor::analytical();
  GpuSpec before = calibration.spec;
  before.link_bandwidth_gb_s = calibration.link->bandwidth_before_gb_s;
  before.link_latency_us = calibration.link->latency_before_us;
  for (const AllReduceMeasurement& m : measured) {
    if (m.mode != "graph") continue;
    const Collective op{CollectiveKind::all_reduce, m.bytes, m.ranks, DType::bf16};
    rows.push_back({&m, analytical.predict(op, before).latency_us, analytical.predict(op, calibration.spec).latency_us});
  }
  return rows;
}

void print_link(const Calibration& calibration, const std::vector<LinkRow>& rows) {
  const LinkFit& fit = *calibration.link;
  fmt::print("link fitted to {} all-reduces timed in CUDA graphs: {:.1f} GB/s per direction, {:.2f} us per step "
             "(mean error {:.1f}%; {:.1f}% with {:.0f} GB/s and {:.2f} us)\n",
             fit.rows, fit.link_bandwidth_gb_s, fit.link_latency_us, fit.mape_pct, fit.mape_pct_before,
             fit.bandwidth_before_gb_s, fit.latency_before_us);
  fmt::print("{:>6} {:>12} {:>12} {:>12} {:>12}\n", "ranks", "bytes", "measured_us", "before_us", "fitted_us");
  for (const LinkRow& r : rows)
    fmt::print("{:>6} {:>12.0f} {:>12.2f} {:>12.2f} {:>12.2f}\n", r.measured->ranks, r.measured->bytes, r.measured->measured_us,
               r.before_us, r.after_us);
}

std::string csv(const Calibration& calibration) {
  std::string text = "benchmark,label,unit,measured,spread,run_to_run_spread,runs,logs,clock_mhz,peak_at_clock,"
                     "fraction_of_peak,catalog,sets\n";
  for (const CalibratedFigure& f : calibration.figures)
    text += fmt::format("{},\"{}\",{},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{}\n", f.figure.benchmark,
                        f.figure.label, f.figure.display_unit, f.measured, f.spread, f.run_to_run_spread, f.runs, f.logs,
                        f.clock_mhz, f.peak_at_clock, f.fraction_of_peak(), f.catalog, f.figure.spec_field);
  return text;
}

std::string chart(const Calibration& calibration) {
  std::vector<svg::Bar> bars;
  for (const CalibratedFigure& f : calibration.figures)
    if (f.peak_at_clock > 0)
      bars.push_back({std::string(f.figure.label), f.fraction_of_peak(),
                      fmt::format("{} {} of {} ({})", number(f.measured), f.figure.display_unit, number(f.peak_at_clock),
                                  percent(f.fraction_of_peak()))});
  return svg::bar_chart(fmt::format("{}: measured / spec-sheet peak at the measured clock", calibration.device.name), bars,
                        1.0);
}

}  // namespace

int calibrate_command(int argc, const char* const* argv, int first) {
  const CalibrateArguments arguments = parse(argc, argv, first);
  std::vector<MicrobenchLog> logs;
  if (!arguments.from_logs.empty()) {
    for (const std::string& path : arguments.from_logs) logs.push_back(load_microbench_log(path));
  } else {
    const fs::path program = find_tool(kMicrobench, "PIPEWEAVE_MICROBENCH");
    for (int run = 1; run <= arguments.runs; ++run) {
      const std::string text = run_microbench(program, arguments.quick, arguments.sms, run, arguments.runs);
      logs.push_back(microbench_log_from_json(text));
      if (!arguments.log_dir.empty()) write_text(fs::path(arguments.log_dir) / fmt::format("microbench-{}.json", run), text);
    }
  }
  std::vector<AllReduceMeasurement> allreduce;
  if (!arguments.link.empty()) allreduce = load_allreduce_measurements(arguments.link);
  Calibration calibration = calibrate(logs, allreduce, arguments.link.empty() ? "" : "--link " + arguments.link);
  if (arguments.link_bandwidth > 0) {
    calibration.spec.link_bandwidth_gb_s = arguments.link_bandwidth;
    calibration.spec.source += fmt::format("; link bandwidth {:g} GB/s given (--link-bandwidth: an all-reduce bus bandwidth "
                                           "measured on a host of these GPUs)",
                                           arguments.link_bandwidth);
  }
  if (!arguments.sustained_isolated.empty()) {
    const std::vector<MeasuredKernel> isolated = read_measurements(arguments.sustained_isolated);
    const std::vector<MeasuredKernel> busy = read_measurements(arguments.sustained_busy);
    calibration.sustained = measure_sustained_load(calibration.spec, isolated, busy);
    const std::string estimate = "; sustained load estimated from that clock's loss";
    if (const std::size_t at = calibration.spec.source.find(estimate); at != std::string::npos)
      calibration.spec.source.erase(at, estimate.size());
    calibration.spec.source += fmt::format("; sustained load measured on {} GEMMs alone and back to back (--sustained): x{:.3f} "
                                           "from a tensor utilisation of {:.3f}",
                                           calibration.sustained->shapes, calibration.sustained->slowdown,
                                           calibration.sustained->tensor_utilization);
  }
  calibration.spec.validate();  // (a spec this writes is one every command reads)
  const std::vector<LinkRow> rows = link_rows(calibration, allreduce);
  const std::string spec_json = to_json(calibration);
  if (arguments.json) fmt::print("{}", spec_json);
  else print_table(calibration);
  if (!arguments.json && calibration.link) print_link(calibration, rows);
  if (!arguments.out.empty()) {
    write_text(arguments.out, spec_json);
    if (!arguments.json) fmt::print("wrote {}\n", arguments.out);
  }
  if (!arguments.report_dir.empty()) {
    const fs::path dir(arguments.report_dir);
    write_text(dir / "calibration.csv", csv(calibration));
    write_text(dir / "calibration.svg", chart(calibration));
    if (!arguments.json) fmt::print("wrote {} and {}\n", (dir / "calibration.csv").string(), (dir / "calibration.svg").string());
    if (calibration.link) {
      std::string text = "ranks,bytes,measured_us,before_us,fitted_us\n";
      svg::Series before{fmt::format("{:.0f} GB/s {:.1f} us", calibration.link->bandwidth_before_gb_s,
                                     calibration.link->latency_before_us), {}};
      svg::Series after{fmt::format("fit {:.0f} GB/s {:.1f} us", calibration.link->link_bandwidth_gb_s,
                                    calibration.link->link_latency_us), {}};
      for (const LinkRow& r : rows) {
        text += fmt::format("{},{:.0f},{:.6g},{:.6g},{:.6g}\n", r.measured->ranks, r.measured->bytes, r.measured->measured_us,
                            r.before_us, r.after_us);
        before.points.emplace_back(r.measured->measured_us, r.before_us);
        after.points.emplace_back(r.measured->measured_us, r.after_us);
      }
      write_text(dir / "link.csv", text);
      write_text(dir / "link.svg", svg::scatter_log_log(fmt::format("{}: all-reduce, predicted against measured (CUDA graphs)",
                                                                    calibration.spec.name),
                                                        "measured (us)", "predicted (us)", {before, after}));
      if (!arguments.json) fmt::print("wrote {} and {}\n", (dir / "link.csv").string(), (dir / "link.svg").string());
    }
  }
  return 0;
}

std::vector<std::string> calibrate_flag_names() {
  CalibrateArguments arguments;
  return calibrate_flags(arguments).names();
}

}  // namespace pipeweave::cli
