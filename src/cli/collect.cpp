// `pipeweave collect`: runs pipeweave-collect (cuda_kernels/) on a shape list and writes the
// measurement CSV; or converts raw records saved earlier (--from-raw), without a GPU.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/measurements.hpp"
#include "tools.hpp"

namespace pipeweave::cli {

namespace fs = std::filesystem;

int collect_command(int argc, char** argv, int first) {
  std::string op, shapes, out, raw_out, tool_options;
  std::vector<std::string> from_raw;  // several: runs of one list, pooled
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw Error(argument + " needs a value");
      return std::string(argv[++i]);
    };
    if (argument == "--op") op = value();
    else if (argument == "--shapes") shapes = value();
    else if (argument == "--out") out = value();
    else if (argument == "--raw") raw_out = value();
    else if (argument == "--from-raw") from_raw.push_back(value());
    else if (argument == "--algos" || argument == "--reps" || argument == "--warmup" || argument == "--l2" ||
             argument == "--rest")
      tool_options += " " + argument + " " + shell_quote(value());
    else if (argument == "--sms") {  // every kernel on (at least) N SMs: the rows name the GPU <gpu>-sm<count>
      const std::string text = value();
      if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) < 1)
        detail::fail_field("--sms", text, "must be a positive whole number of SMs");
      tool_options += " --sms " + text;
    }
    else throw Error("unknown argument " + argument + " for collect");
  }
  if (out.empty()) throw Error("collect needs --out FILE.csv");
  std::vector<std::string> raw;
  if (!from_raw.empty()) {
    if (!op.empty() || !shapes.empty() || !raw_out.empty() || !tool_options.empty())
      throw Error("--from-raw converts saved records: it takes only --out (and more --from-raw runs to pool)");
    for (std::size_t i = 0; i < from_raw.size(); ++i)
      for (std::size_t j = 0; j < i; ++j) {
        std::error_code error;  // a file that does not exist is reported by name when read
        if (from_raw[i] == from_raw[j] || fs::equivalent(from_raw[i], from_raw[j], error))
          throw Error("--from-raw " + from_raw[i] + " is the same file as --from-raw " + from_raw[j] +
                      ": a run pooled with itself would count twice");
      }
    for (const std::string& file : from_raw) raw.push_back(read_text(file, "raw measurements"));
  } else {
    if (op == "attention")
      throw Error("attention is measured through PyTorch's FlashAttention by cuda_kernels/collect_attention.py; "
                  "convert its output with pipeweave collect --from-raw FILE --out FILE.csv");
    if (op != "gemm" && op != "rmsnorm" && op != "silu_mul")
      detail::fail_field("--op", detail::quoted(op), "must be gemm, rmsnorm or silu_mul");
    if (shapes.empty()) throw Error("collect needs --shapes FILE (make one with pipeweave shapes)");
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

}  // namespace pipeweave::cli
