// `pipeweave collect`: runs pipeweave-collect (cuda_kernels/) on a shape list and writes the
// measurement CSV; or converts raw records saved earlier (--from-raw), without a GPU.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "commands.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/measurements.hpp"
#include "tools.hpp"

namespace pipeweave::cli {

namespace fs = std::filesystem;

int collect_command(int argc, char** argv, int first) {
  std::string op, shapes, out, raw_out, from_raw, tool_options;
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
    else if (argument == "--from-raw") from_raw = value();
    else if (argument == "--algos" || argument == "--reps" || argument == "--warmup" || argument == "--l2")
      tool_options += " " + argument + " " + shell_quote(value());
    else throw Error("unknown argument " + argument + " for collect");
  }
  if (out.empty()) throw Error("collect needs --out FILE.csv");
  std::string raw;
  if (!from_raw.empty()) {
    if (!op.empty() || !shapes.empty() || !raw_out.empty() || !tool_options.empty())
      throw Error("--from-raw converts saved records: it takes only --out");
    raw = read_text(from_raw, "raw measurements");
  } else {
    if (op == "attention")
      throw Error("attention is measured through PyTorch's FlashAttention by cuda_kernels/collect_attention.py; "
                  "convert its output with pipeweave collect --from-raw FILE --out FILE.csv");
    if (op != "gemm" && op != "rmsnorm" && op != "silu_mul")
      detail::fail_field("--op", "\"" + op + "\"", "must be gemm, rmsnorm or silu_mul");
    if (shapes.empty()) throw Error("collect needs --shapes FILE (make one with pipeweave shapes)");
    if (!fs::exists(shapes)) throw Error("cannot open shape list " + shapes);
    const fs::path program = find_tool("pipeweave-collect", "PIPEWEAVE_COLLECT");
    const fs::path raw_path =
        raw_out.empty() ? fs::temp_directory_path() / fmt::format("pipeweave-collect-{}.jsonl", ::getpid()) : fs::path(raw_out);
    run_tool(program,
             fmt::format("--op {} --shapes {} --out {}{}", op, shell_quote(shapes), shell_quote(raw_path.string()), tool_options),
             "the measurements could not run");
    raw = read_text(raw_path, "raw measurements");
    if (raw_out.empty()) fs::remove(raw_path);
  }
  std::string csv;
  try {
    csv = measurements_csv_from_raw(raw);
  } catch (const Error& error) {
    throw Error((from_raw.empty() ? std::string("raw measurements") : from_raw) + ": " + error.what());
  }
  write_text(out, csv);
  const auto rows = std::count(csv.begin(), csv.end(), '\n') - 1;
  fmt::print("wrote {} rows to {}\n", rows, out);
  return 0;
}

}  // namespace pipeweave::cli
