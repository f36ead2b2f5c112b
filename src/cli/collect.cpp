// `pipeweave collect`: runs pipeweave-collect (cuda_kernels/) on a shape list and writes the
// measurement CSV; or converts raw records saved earlier (--from-raw), without a GPU.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/measurements.hpp"
#include "flags.hpp"
#include "tools.hpp"

namespace pipeweave::cli {

namespace fs = std::filesystem;

namespace {

struct CollectOptions {
  std::string op, shapes, out, raw_out;
  std::vector<std::string> from_raw;  // several: runs of one list, pooled
  // Passed on to pipeweave-collect when given (0 or empty: its default).
  int algos = 0, reps = 0, warmup = 0, sms = 0;
  std::string l2;
  std::optional<double> rest;

  bool measuring_options_given() const { return algos || reps || warmup || sms || !l2.empty() || rest; }
  // The flags for pipeweave-collect, each with a leading space.
  std::string tool_options() const {
    std::string text;
    if (algos) text += fmt::format(" --algos {}", algos);
    if (reps) text += fmt::format(" --reps {}", reps);
    if (warmup) text += fmt::format(" --warmup {}", warmup);
    if (!l2.empty()) text += " --l2 " + l2;
    if (rest) text += fmt::format(" --rest {}", *rest);
    if (sms) text += fmt::format(" --sms {}", sms);  // every kernel on (at least) N SMs: rows name the GPU <gpu>-sm<count>
    return text;
  }
};

FlagParser collect_flags(CollectOptions& o) {
  FlagParser flags("collect");
  flags.text("--op", o.op)
      .text("--shapes", o.shapes)
      .text("--out", o.out)
      .text("--raw", o.raw_out)
      .texts("--from-raw", o.from_raw)
      .whole("--algos", o.algos, 1, 10000)
      .whole("--reps", o.reps, 1, 1000000)
      .whole("--warmup", o.warmup, 1, 1000000)
      .choice("--l2", o.l2, {{"cold", std::string("cold")}, {"warm", std::string("warm")}, {"served", std::string("served")}})
      .number("--rest", o.rest, [](double r) { return r >= 0 && r <= 100; }, "must be a number from 0 to 100")
      .whole("--sms", o.sms, 1, kMostSms);
  return flags;
}

}  // namespace

int collect_command(int argc, const char* const* argv, int first) {
  CollectOptions options;
  collect_flags(options).parse(argc, argv, first);
  std::vector<std::pair<std::string, std::string>> inputs{{"--shapes", options.shapes}};
  for (const std::string& path : options.from_raw) inputs.emplace_back("--from-raw", path);
  check_output("--out", options.out, inputs);
  check_output("--raw", options.raw_out, {{"--shapes", options.shapes}, {"--out", options.out}});
  const std::string &op = options.op, &shapes = options.shapes, &out = options.out, &raw_out = options.raw_out;
  const std::vector<std::string>& from_raw = options.from_raw;
  const std::string tool_options = options.tool_options();
  if (out.empty()) throw InvalidInput("collect needs --out FILE.csv");
  std::vector<std::string> raw;
  if (!from_raw.empty()) {
    if (!op.empty() || !shapes.empty() || !raw_out.empty() || options.measuring_options_given())
      throw InvalidInput("--from-raw converts saved records: it takes only --out (and more --from-raw runs to pool)");
    for (std::size_t i = 0; i < from_raw.size(); ++i)
      for (std::size_t j = 0; j < i; ++j) {
        std::error_code error;  // a file that does not exist is reported by name when read
        if (from_raw[i] == from_raw[j] || fs::equivalent(from_raw[i], from_raw[j], error))
          throw InvalidInput("--from-raw " + from_raw[i] + " is the same file as --from-raw " + from_raw[j] +
                      ": a run pooled with itself would count twice");
      }
    for (const std::string& file : from_raw) raw.push_back(read_text(file, "raw measurements"));
  } else {
    if (op == "attention")
      throw InvalidInput("attention is measured through PyTorch's FlashAttention by cuda_kernels/collect_attention.py; "
                  "convert its output with pipeweave collect --from-raw FILE --out FILE.csv");
    if (op != "gemm" && op != "rmsnorm" && op != "silu_mul")
      FlagParser::fail("--op", op, "must be gemm, rmsnorm or silu_mul");
    if (shapes.empty()) throw InvalidInput("collect needs --shapes FILE (make one with pipeweave shapes)");
    if (!fs::exists(shapes)) throw Error("cannot open shape list " + shapes);
    const fs::path program = find_tool("pipeweave-collect", "PIPEWEAVE_COLLECT");
    const fs::path raw_path =
        raw_out.empty() ? fs::temp_directory_path() / fmt::format("pipeweave-collect-{}.jsonl", ::getpid()) : fs::path(raw_out);
    run_tool(program,
             fmt::format("--op {} --shapes {} --out {}{}", op, shell_quote(shapes), shell_quote(raw_path.string()), tool_options),
             "the measurements could not run");
    raw.push_back(read_text(raw_path, "raw measurements"));
    if (raw_out.empty()) fs::remove(raw_path);
  }
  std::vector<RawRun> runs;
  for (std::size_t i = 0; i < raw.size(); ++i)
    runs.push_back(RawRun{from_raw.empty() ? std::string("raw measurements") : from_raw[i], std::move(raw[i])});
  const std::string csv = measurements_csv_from_raw(runs);
  write_text(out, csv);
  const auto rows = std::count(csv.begin(), csv.end(), '\n') - 1;
  if (runs.size() > 1) fmt::print("wrote {} rows to {} (the median of {} runs)\n", rows, out, runs.size());
  else fmt::print("wrote {} rows to {}\n", rows, out);
  return 0;
}

std::vector<std::string> collect_flag_names() {
  CollectOptions options;
  return collect_flags(options).names();
}

}  // namespace pipeweave::cli
