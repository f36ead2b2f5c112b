// Raw pipeweave-collect records -> measurement CSV. See pipeweave/measurements.hpp.
#include "pipeweave/measurements.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "csv_support.hpp"
#include "json_support.hpp"
#include "statistics.hpp"
#include "pipeweave/calibration.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"

namespace pipeweave {
namespace {

using detail::Fields;
using detail::json;

using detail::median;

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

struct Timing {
  double median_us;   // the median over runs of each run's median
  double spread;      // (max - min) / median of one run's repetitions, the largest over runs
  int reps;           // repetitions per run
  int runs;
  double run_spread;  // (max - min) / median of the runs' medians (0 for one run)
  std::vector<std::string> kernels;
};

std::vector<double> read_durations(const Fields& fields, const std::string& prefix) {
  const json& durations = fields.get("durations_us");
  if (!durations.is_array() || durations.empty())
    detail::fail_field(prefix + "durations_us", detail::excerpt(durations), "must be a non-empty array");
  std::vector<double> values;
  for (const json& d : durations) {
    if (!d.is_number() || !(d.get<double>() > 0) || !std::isfinite(d.get<double>()))
      detail::fail_field(prefix + "durations_us", detail::excerpt(d), "must hold only positive numbers");
    values.push_back(d.get<double>());
  }
  return values;
}

// One measured configuration: its record in the first run, and its repetitions in every run.
struct PooledRecord {
  const Fields& fields;
  std::string prefix;
  std::vector<std::vector<double>> durations;  // per run
};

Timing read_timing(const PooledRecord& record) {
  std::vector<double> medians;
  double spread = 0;
  for (const std::vector<double>& run : record.durations) {
    medians.push_back(median(run));
    const auto [low, high] = std::minmax_element(run.begin(), run.end());
    spread = std::max(spread, (*high - *low) / medians.back());
  }
  const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
  Timing timing{median(medians), spread, static_cast<int>(record.durations.front().size()),
                static_cast<int>(medians.size()), 0, record.fields.texts("kernels")};
  timing.run_spread = (*high - *low) / timing.median_us;
  if (timing.kernels.empty()) detail::fail_field(record.prefix + "kernels", "[]", "must name the kernels the call launched");
  return timing;
}

// The cells every op's row ends with.
std::string timing_cells(const Timing& timing, const Fields& f) {
  return number(timing.spread) + ',' + std::to_string(timing.reps) + ',' + std::to_string(timing.runs) + ',' +
         number(timing.run_spread) + ',' + f.text("l2");
}

// The kernel that does the work: the GEMM, not the memset or the split-K reduction beside it.
std::string main_kernel(const std::vector<std::string>& kernels) {
  for (const std::string& name : kernels)
    if (name.starts_with("nvjet")) return name;
  for (const std::string& name : kernels)
    if (name != "memset" && name.find("splitKreduce") == std::string::npos) return name;
  return kernels.front();
}

constexpr const char* kGemmHeader =
    "gpu,dtype,m,n,k,tile_m,tile_n,tile_k,split_k,stages,cluster_m,cluster_n,duration_us,candidate,is_default,"
    "candidates,kernels,config_source,config_agrees,reduction_scheme,swap_ab,schedule,raster,workspace_bytes,spread,reps,runs,"
    "run_spread,l2,kernel\n";

std::string gemm_row(const PooledRecord& record, const std::string& gpu) {
  const Fields& f = record.fields;
  const std::string& prefix = record.prefix;
  const Timing timing = read_timing(record);
  const std::string kernel = main_kernel(timing.kernels);
  std::optional<CublasKernelName> parsed;
  try {
    parsed = parse_cublas_kernel_name(kernel);
  } catch (const Error& error) {
    detail::rethrow_as(error, prefix + "kernels: " + error.what());
  }
  const int attr_tile_m = f.integer("tile_m"), attr_tile_n = f.integer("tile_n"), attr_tile_k = f.integer("tile_k");
  const int attr_cluster_m = f.integer("cluster_m"), attr_cluster_n = f.integer("cluster_n");
  // cuBLAS's M runs along the weights (our n), its N along the tokens (our m).
  int tile_m, tile_n, tile_k, stages, cluster_m, cluster_n;
  // The MMA shape and schedule come from the name alone (the algo attributes do not say them);
  // for a kernel without such a name their cells stay empty: not known.
  std::string source, agrees = "", swap_ab, schedule, raster;
  if (parsed) {
    tile_m = parsed->tile_n, tile_n = parsed->tile_m, tile_k = parsed->tile_k, stages = parsed->stages;
    cluster_m = parsed->cluster_n, cluster_n = parsed->cluster_m, source = "kernel_name";
    // cuBLAS's "h" walks along its N (our m), "v" along its M (our n); its output layout
    // letter T says that it computes our m on the MMA's N side.
    raster = to_string(parsed->raster == "h" ? GemmRaster::along_m : GemmRaster::along_n);
    swap_ab = parsed->output_transposed ? "1" : "0", schedule = to_string(parsed->schedule);
    const bool same = attr_tile_m == parsed->tile_m && attr_tile_n == parsed->tile_n && attr_tile_k == parsed->tile_k &&
                      attr_cluster_m == parsed->cluster_m && attr_cluster_n == parsed->cluster_n;
    agrees = same ? "1" : "0";
  } else {
    tile_m = attr_tile_n, tile_n = attr_tile_m, tile_k = attr_tile_k, stages = f.integer("stages");
    cluster_m = std::max(1, attr_cluster_n), cluster_n = std::max(1, attr_cluster_m), source = "algo_attributes";
  }
  const int candidate = f.integer("candidate"), candidates = f.integer("candidates");
  // (a record of candidate 100 of 8, or of 0 candidates, was written as it was)
  if (candidates < 1) detail::fail_field(prefix + "candidates", candidates, "must be at least 1 (cuBLAS's first choice is one)");
  if (candidate < 0 || candidate >= candidates)
    detail::fail_field(prefix + "candidate", candidate, "must be within [0, " + std::to_string(candidates - 1) + "] (of candidates " +
                                                            std::to_string(candidates) + ")");
  // The seven config cells and the reduction scheme; all empty where neither the name nor the
  // algo attributes say the tile (cuBLAS's older CUTLASS kernels and its GEMV kernels, which it
  // picks for shapes of a width that is no multiple of 8: 261 of the 189,762 served H100 rows).
  // Such a row keeps its shape and time, a GEMM measured as cuBLAS chose it (config_source
  // "unknown"), as a model without a config reads it; no name parsed, so the MMA cells are empty too.
  std::ostringstream config;
  std::string reduction_scheme;
  if (tile_m > 0 && tile_n > 0 && tile_k > 0) {
    config << tile_m << ',' << tile_n << ',' << tile_k << ',' << std::max(1, f.integer("split_k")) << ',' << stages << ','
           << cluster_m << ',' << cluster_n;
    reduction_scheme = std::to_string(f.integer("reduction_scheme"));
  } else {
    if (candidate != 0)
      detail::fail_field(prefix + "kernels", kernel,
                         "must carry a tile in its name, or the algo attributes one (a candidate other than cuBLAS's first)");
    config << ",,,,,,";
    source = "unknown";
  }
  std::ostringstream row;
  row << csv_cell(gpu) << ',' << f.text("dtype") << ',' << f.integer("m") << ',' << f.integer("n") << ',' << f.integer("k")
      << ',' << config.str() << ',' << number(timing.median_us) << ',' << candidate << ',' << (candidate == 0 ? 1 : 0) << ','
      << candidates << ',' << timing.kernels.size() << ',' << source << ',' << agrees << ',' << reduction_scheme
      << ',' << swap_ab << ',' << schedule << ',' << raster << ',' << number(f.number("workspace_bytes")) << ','
      << timing_cells(timing, f) << ',' << csv_cell(kernel) << '\n';
  return row.str();
}

constexpr const char* kRmsNormHeader =
    "gpu,dtype,tokens,hidden,fused_residual,threads,duration_us,spread,reps,runs,run_spread,l2,kernel\n";
constexpr const char* kSiluMulHeader = "gpu,dtype,tokens,dim,threads,duration_us,spread,reps,runs,run_spread,l2,kernel\n";

std::string row_op_row(const PooledRecord& record, const std::string& gpu, bool norm) {
  const Fields& f = record.fields;
  const Timing timing = read_timing(record);
  std::ostringstream row;
  row << csv_cell(gpu) << ',' << f.text("dtype") << ',' << f.integer("tokens") << ',';
  if (norm) row << f.integer("hidden") << ',' << f.integer("fused_residual") << ',';
  else row << f.integer("dim") << ',';
  row << f.integer("threads") << ',' << number(timing.median_us) << ',' << timing_cells(timing, f) << ','
      << csv_cell(main_kernel(timing.kernels)) << '\n';
  return row.str();
}

constexpr const char* kAttentionHeader =
    "gpu,dtype,batch,q_lens,kv_lens,heads,kv_heads,head_dim,causal,impl,tile_q,tile_kv,warps,num_splits,page_size,duration_us,"
    "spread,reps,runs,run_spread,l2,kernels,kernel\n";

std::string join_lengths(const json& values, const std::string& field) {
  if (!values.is_array() || values.empty()) detail::fail_field(field, detail::excerpt(values), "must be a non-empty array");
  std::string text;
  for (const json& v : values) {
    if (!v.is_number_integer() || v.get<long long>() <= 0) detail::fail_field(field, detail::excerpt(v), "must hold positive integers");
    if (!text.empty()) text += '/';
    text += std::to_string(v.get<long long>());
  }
  return text;
}

// FlashAttention-2's kernels carry their traits: Flash_fwd_kernel_traits<kHeadDim, kBlockM,
// kBlockN, kNWarps, ...>; the split-KV kernel's launch grid is (m blocks, splits, batch x heads).
// FlashAttention-3's names do not: collect_attention.py records the tiles it chose by its rule
// (tile_q, tile_kv) and the paged cache's page size; its split count is its own heuristic's,
// per sequence (num_splits 0 in the CSV: the demand model works it out as FlashAttention-3 does).

// The first four numbers of FlashAttention-2's Flash_fwd_kernel_traits<HEAD_DIM, BLOCK_M, BLOCK_N,
// WARPS, ...> in a kernel name (spaces allowed after '<' and each ','), or nothing. Read by hand:
// libstdc++'s std::regex recursed once per character and overflowed the stack on a long name.
std::optional<std::array<std::string, 4>> flash_kernel_traits(std::string_view kernel) {
  constexpr std::string_view kOpening = "Flash_fwd_kernel_traits<";
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  for (std::size_t at = kernel.find(kOpening); at != std::string_view::npos; at = kernel.find(kOpening, at + 1)) {
    std::string_view rest = kernel.substr(at + kOpening.size());
    std::array<std::string, 4> numbers;
    bool whole = true;
    for (std::size_t i = 0; i < numbers.size() && whole; ++i) {
      if (i > 0) {
        whole = rest.starts_with(',');
        if (!whole) break;
        rest.remove_prefix(1);
      }
      while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
      std::size_t digits = 0;
      while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
      whole = digits > 0;
      numbers[i] = std::string(rest.substr(0, digits));
      rest.remove_prefix(digits);
    }
    if (whole) return numbers;
  }
  return std::nullopt;
}

std::string attention_row(const PooledRecord& record, const std::string& gpu) {
  const Fields& f = record.fields;
  const std::string& prefix = record.prefix;
  const Timing timing = read_timing(record);
  const std::string implementation = f.text("implementation");
  std::string tile_q, tile_kv, warps;
  int splits = 1;
  std::int64_t page_size = 0;
  std::string kernel = timing.kernels.front();
  if (implementation == "flash3") {
    tile_q = std::to_string(f.integer("tile_q"));
    tile_kv = std::to_string(f.integer("tile_kv"));
    warps = "12";  // a producer and two consumer warpgroups
    splits = 0;
    page_size = f.has("page_size") ? f.whole("page_size", 0) : 0;
    for (const std::string& name : timing.kernels)  // the attention kernel itself, not the scheduler's
      if (name.find("FlashAttnFwdSm90") != std::string::npos) {
        kernel = name;
        break;
      }
  } else {
    const auto traits = flash_kernel_traits(kernel);
    if (!traits) detail::fail_field(prefix + "kernels[0]", detail::quoted(kernel), "must be a FlashAttention kernel whose name carries its traits");
    tile_q = (*traits)[1], tile_kv = (*traits)[2], warps = (*traits)[3];
    const json& grids = f.get("grids");
    for (std::size_t i = 0; i < timing.kernels.size() && grids.is_array() && i < grids.size(); ++i)
      if (timing.kernels[i].find("splitkv_kernel") != std::string::npos && grids[i].is_array() && grids[i].size() == 3 &&
          grids[i][1].is_number_integer())
        splits = grids[i][1].get<int>();
  }
  const json& q_lens = f.get("q_lens");
  std::ostringstream row;
  row << csv_cell(gpu) << ',' << f.text("dtype") << ',' << (q_lens.is_array() ? q_lens.size() : 0) << ','
      << join_lengths(q_lens, prefix + "q_lens") << ',' << join_lengths(f.get("kv_lens"), prefix + "kv_lens") << ','
      << f.integer("heads") << ',' << f.integer("kv_heads") << ',' << f.integer("head_dim") << ',' << f.integer("causal") << ','
      << implementation << ',' << tile_q << ',' << tile_kv << ',' << warps << ',' << splits << ',' << page_size << ','
      << number(timing.median_us) << ',' << timing_cells(timing, f) << ',' << timing.kernels.size() << ','
      << csv_cell(kernel) << '\n';
  return row.str();
}

// The parts of an nvjet kernel name, read one '_'-separated field at a time (see
// parse_cublas_kernel_name).
class NvjetNameReader {
 public:
  explicit NvjetNameReader(std::string_view name) : rest_(name) {}

  // The next field, up to the next '_', which it consumes; nothing where no '_' is left.
  std::optional<std::string_view> next_field() {
    const std::size_t underscore = rest_.find('_');
    if (underscore == std::string_view::npos) return std::nullopt;
    const std::string_view field = rest_.substr(0, underscore);
    rest_.remove_prefix(underscore + 1);
    return field;
  }
  std::string_view rest() const { return rest_; }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
  template <class Predicate>
  static bool all(std::string_view text, Predicate predicate) { return std::all_of(text.begin(), text.end(), predicate); }

  // "nvjet", "sm" with digits then lower-case letters (sm90, sm100a), and a variant of digits and
  // lower-case letters.
  bool read_prefix() {
    const auto head = next_field(), architecture = next_field(), variant = next_field();
    if (!head || *head != "nvjet" || !architecture || !architecture->starts_with("sm") || !variant || variant->empty() ||
        !all(*variant, [](char c) { return is_digit(c) || is_lower(c); }))
      return false;
    const std::string_view sm = architecture->substr(2);
    const std::size_t sm_digits = static_cast<std::size_t>(std::find_if_not(sm.begin(), sm.end(), is_digit) - sm.begin());
    return sm_digits > 0 && all(sm.substr(sm_digits), is_lower);
  }

  // tile_m, tile_n, tile_k, stages, cluster_m, cluster_n: "AxB" three times, each side digits.
  bool read_number_pairs(std::array<std::string_view, 6>& numbers) {
    for (std::size_t pair = 0; pair < 3; ++pair) {
      const auto field = next_field();
      const std::size_t x = field ? field->find('x') : std::string_view::npos;
      if (x == std::string_view::npos) return false;
      numbers[2 * pair] = field->substr(0, x), numbers[2 * pair + 1] = field->substr(x + 1);
      for (std::size_t side = 0; side < 2; ++side)
        if (numbers[2 * pair + side].empty() || !all(numbers[2 * pair + side], is_digit)) return false;
    }
    return true;
  }

 private:
  std::string_view rest_;
};

// A number of the name's form that no int holds (a corrupted name) is an error, not a wrap.
int nvjet_name_number(std::string_view kernel_name, std::string_view digits) {
  int value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size())
    detail::fail_field("cuBLAS kernel name " + detail::quoted(kernel_name, 80) + " number", detail::printable(digits), "must fit an int");
  return value;
}

// What the tags after the raster say: split-K, the schedule (coopA, coopB), and in the last tag
// the layouts of A, B and the output (TNT or TNN for a TN GEMM).
void read_nvjet_tags(CublasKernelName& name, const std::string& tags) {
  const std::string wrapped = "_" + tags + "_";
  name.split_k = wrapped.find("_splitK_") != std::string::npos;
  name.schedule = wrapped.find("_coopA_") != std::string::npos   ? GemmSchedule::cooperative
                  : wrapped.find("_coopB_") != std::string::npos ? GemmSchedule::cooperative_split_n
                                                                 : GemmSchedule::ping_pong;
  const std::size_t layout = tags.rfind('_');
  const std::string layouts = tags.substr(layout == std::string::npos ? 0 : layout + 1);
  name.output_transposed = layouts.size() == 3 && layouts[2] == 'T';
}

}  // namespace

std::optional<CublasKernelName> parse_cublas_kernel_name(std::string_view kernel_name) {
  // nvjet_sm90_<variant>_<tm>x<tn>_<tk>x<stages>_<cm>x<cn>_<raster>_<tags>, read field by field:
  // libstdc++'s std::regex recursed once per character, and a 100k-character name overflowed the stack.
  NvjetNameReader reader(kernel_name);
  std::array<std::string_view, 6> numbers;
  if (!reader.read_prefix() || !reader.read_number_pairs(numbers)) return std::nullopt;
  const auto raster = reader.next_field();
  // The tags may hold anything but a line break (what the former expression's '.' matched).
  if (!raster || (*raster != "v" && *raster != "h") || reader.rest().find_first_of("\n\r") != std::string_view::npos)
    return std::nullopt;
  const auto number = [&](std::size_t index) { return nvjet_name_number(kernel_name, numbers[index]); };
  CublasKernelName name{number(0), number(1), number(2), number(3), number(4), number(5), std::string(*raster)};
  read_nvjet_tags(name, std::string(reader.rest()));
  if (name.tile_m <= 0 || name.tile_n <= 0 || name.tile_k <= 0 || name.cluster_m <= 0 || name.cluster_n <= 0) return std::nullopt;
  return name;
}

namespace {

// One run's records: the device line's GPU name and every other line, parsed.
struct ParsedRun {
  std::string gpu, op;
  json protocol;  // the device line's reps, warmup, l2 and rest: runs pool only under one protocol
  std::vector<std::pair<json, std::size_t>> records;  // document, line number
};

// How the kernels were timed, each within what a collector writes (reps -1 or rest "nan" was
// carried along, and compared between runs as if it meant something).
void check_protocol(const json& document, const Fields& f, const std::string& prefix) {
  if (f.has("reps") && !detail::integer_within(document["reps"], 1, 1'000'000))
    detail::fail_field(prefix + "reps", detail::excerpt(document["reps"]), "must be a whole number of repetitions from 1 to 10^6");
  if (f.has("warmup") && !detail::integer_within(document["warmup"], 0, 1'000'000))
    detail::fail_field(prefix + "warmup", detail::excerpt(document["warmup"]), "must be a whole number of warm-up runs from 0 to 10^6");
  if (f.has("l2")) {
    const json& l2 = document["l2"];
    if (!l2.is_string() || !detail::is_l2_protocol(l2.get_ref<const std::string&>()))
      detail::fail_field(prefix + "l2", detail::excerpt(l2), "must be \"cold\", \"warm\" or \"served\" (how the kernels were timed)");
  }
  if (f.has("rest") && !(document["rest"].is_number() && document["rest"].get<double>() >= 0 && document["rest"].get<double>() <= 1000))
    detail::fail_field(prefix + "rest", detail::excerpt(document["rest"]), "must be a number from 0 to 1000 (the rest, in kernel times)");
  if (f.has("sm_count") && !detail::integer_within(document["sm_count"], 1, 4096))
    detail::fail_field(prefix + "sm_count", detail::excerpt(document["sm_count"]), "must be a whole number of SMs from 1 to 4096");
}

// The device line: the GPU every row names, and how the kernels were timed (runs pool only under one protocol).
void read_device_line(const json& document, const Fields& f, const std::string& prefix, ParsedRun& run) {
  const std::string device = f.text("name");
  // It names every row's GPU, and the spec eval looks for (a spec's name rule).
  if (device.empty() || device.size() > 128 || !detail::is_printable(device))
    detail::fail_field(prefix + "name", detail::quoted(device), "must be the GPU's name, 1 to 128 bytes of text without control characters");
  try {
    run.gpu = find_gpu(device).name;
  } catch (const Error&) {
    run.gpu = device;  // not in the catalog: the CUDA name, as a spec file made by calibrate names it
  }
  // pipeweave-collect --sms N: the kernels ran on sm_limit SMs, a GPU of its own, named as
  // calibrate names the spec of microbenchmarks run the same way.
  if (f.has("sm_limit")) {
    const int sm_limit = f.integer("sm_limit");
    if (sm_limit < 1 || sm_limit > 4096) detail::fail_field(prefix + "sm_limit", sm_limit, "must be within [1, 4096], a spec's SM count");
    if (f.has("sm_count") && f.integer("sm_count") != sm_limit)
      detail::fail_field(prefix + "sm_limit", std::to_string(sm_limit),
                         "must be sm_count (" + std::to_string(f.integer("sm_count")) + "), the SMs the kernels ran on");
    run.gpu = sm_limited_gpu_name(run.gpu, sm_limit);
    if (run.gpu.size() > 128)
      detail::fail_field(prefix + "name", detail::quoted(device), "must leave room for the SM limit's suffix: " + run.gpu + " is past 128 bytes");
  }
  check_protocol(document, f, prefix);
  for (const char* field : {"reps", "warmup", "l2", "rest"})
    run.protocol[field] = document.contains(field) ? document[field] : json();
  // Collections from before --rest existed did not rest.
  if (run.protocol["rest"].is_null() && !run.protocol["reps"].is_null()) run.protocol["rest"] = 0;
}

ParsedRun parse_run(std::string_view raw_jsonl, const std::string& run_prefix) {
  ParsedRun run;
  std::size_t line_number = 0, start = 0;
  bool seen_device = false;
  // Bounded as the CSV inputs are (300,000 records of a 780 KB file took 12 s and 1.2 GB; a
  // collection of 200,000 shapes is a tenth of the bound)
  detail::check_line_count(raw_jsonl, run_prefix + "the raw file", "a file may: split the collection");
  while (start < raw_jsonl.size()) {
    std::size_t end = raw_jsonl.find('\n', start);
    if (end == std::string_view::npos) end = raw_jsonl.size();
    const std::string_view line = raw_jsonl.substr(start, end - start);
    start = end + 1;
    ++line_number;
    detail::check_line_length(line, line_number, run_prefix, "a record may");
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string prefix = run_prefix + "line " + std::to_string(line_number) + ": ";
    json document;
    try {
      document = detail::parse_json(line, "the record");
    } catch (const Error& error) {
      detail::rethrow_as(error, prefix + error.what());
    }
    const Fields f(document, prefix);
    const std::string kind = f.text("op");
    if (!seen_device) {
      if (kind != "device") detail::fail_field(prefix + "op", detail::quoted(kind), "must be \"device\" on the first line");
      read_device_line(document, f, prefix, run);
      seen_device = true;
      continue;
    }
    if (run.op.empty()) {
      if (kind != "gemm" && kind != "rmsnorm" && kind != "silu_mul" && kind != "attention")
        detail::fail_field(prefix + "op", detail::quoted(kind), "must be gemm, rmsnorm, silu_mul or attention");
      run.op = kind;
    } else if (kind != run.op) {
      detail::fail_field(prefix + "op", detail::quoted(kind), "must be the file's op (\"" + run.op + "\"): one op per file");
    }
    run.records.emplace_back(std::move(document), line_number);
  }
  if (!seen_device) throw InvalidInput(run_prefix + "the raw measurements are empty: no device line");
  if (run.op.empty()) throw InvalidInput(run_prefix + "the raw measurements hold no measured kernel");
  return run;
}

// What identifies a measured configuration across runs: everything but its timings.
std::string record_key(const json& record) {
  json key = record;
  key.erase("durations_us");
  return key.dump();
}

}  // namespace

std::string measurements_csv_from_raw(std::string_view raw_jsonl) {
  const RawRun run{"", std::string(raw_jsonl)};
  return measurements_csv_from_raw(std::span<const RawRun>(&run, 1));
}

std::string measurements_csv_from_raw(std::span<const RawRun> runs) {
  if (runs.empty()) throw InvalidInput("no raw measurements to convert");
  auto run_prefix = [&](std::size_t i) -> std::string {
    if (!runs[i].name.empty()) return runs[i].name + ": ";
    return runs.size() == 1 ? "" : "run " + std::to_string(i + 1) + ": ";
  };
  std::vector<ParsedRun> parsed;
  for (std::size_t i = 0; i < runs.size(); ++i) parsed.push_back(parse_run(runs[i].jsonl, run_prefix(i)));
  const ParsedRun& first = parsed.front();
  // Later runs may hold the records in another order (a reversed run): match them by content.
  std::vector<std::map<std::string, std::vector<std::size_t>>> unmatched(parsed.size());
  for (std::size_t r = 1; r < parsed.size(); ++r) {
    if (parsed[r].gpu != first.gpu)
      detail::fail_field(run_prefix(r) + "device name", detail::quoted(parsed[r].gpu), "must be the first run's GPU (\"" + first.gpu + "\")");
    if (parsed[r].op != first.op)
      detail::fail_field(run_prefix(r) + "op", detail::quoted(parsed[r].op), "must be the first run's op (\"" + first.op + "\")");
    for (const auto& [field, value] : first.protocol.items())
      if (parsed[r].protocol[field] != value)
        detail::fail_field(run_prefix(r) + "device line " + field, detail::excerpt(parsed[r].protocol[field]),
                           "must be the first run's (" + detail::excerpt(value) + "): runs pool only when measured the same way");
    for (std::size_t j = parsed[r].records.size(); j-- > 0;)
      unmatched[r][record_key(parsed[r].records[j].first)].push_back(j);  // popped from the back: file order
  }
  const std::string header = first.op == "gemm"        ? kGemmHeader
                             : first.op == "rmsnorm"   ? kRmsNormHeader
                             : first.op == "attention" ? kAttentionHeader
                                                       : kSiluMulHeader;
  std::string csv = header;
  for (const auto& [document, line] : first.records) {
    const std::string prefix = run_prefix(0) + "line " + std::to_string(line) + ": ";
    const Fields f(document, prefix);
    // One protocol a file: a record timed otherwise than its device line says (warm among cold) is refused
    if (const auto stated = first.protocol.find("l2");
        stated != first.protocol.end() && !stated->is_null() && document.contains("l2") && document["l2"] != *stated)
      detail::fail_field(prefix + "l2", detail::excerpt(document["l2"]),
                         "must be the device line's (" + detail::excerpt(*stated) + "): a file holds one protocol");
    PooledRecord record{f, prefix, {read_durations(f, prefix)}};
    const std::string key = runs.size() > 1 ? record_key(document) : std::string();
    for (std::size_t r = 1; r < parsed.size(); ++r) {
      const auto found = unmatched[r].find(key);
      if (found == unmatched[r].end() || found->second.empty())
        throw InvalidInput(run_prefix(r) + "holds no record like " + prefix + "the runs must measure the same configurations");
      const auto& [other, other_line] = parsed[r].records[found->second.back()];
      found->second.pop_back();
      const std::string other_prefix = run_prefix(r) + "line " + std::to_string(other_line) + ": ";
      record.durations.push_back(read_durations(Fields(other, other_prefix), other_prefix));
    }
    const std::string row = first.op == "gemm"        ? gemm_row(record, first.gpu)
                            : first.op == "attention" ? attention_row(record, first.gpu)
                                                      : row_op_row(record, first.gpu, first.op == "rmsnorm");
    // What collect writes, train and eval must read: the row is read back as they read it (a
    // record of tokens 0 was written, then refused by eval)
    try {
      measurements_from_csv(header + row, "the row");
    } catch (const Error& error) {
      detail::rethrow_as(error, prefix + "makes a row that cannot be read: " + error.what());
    }
    csv += row;
  }
  for (std::size_t r = 1; r < parsed.size(); ++r)
    for (const auto& [key, left] : unmatched[r])
      if (!left.empty())
        throw InvalidInput(run_prefix(r) + "line " + std::to_string(parsed[r].records[left.back()].second) +
                    ": no record like it in " + (runs[0].name.empty() ? std::string("run 1") : runs[0].name) +
                    ": the runs must measure the same configurations");
  return csv;
}

}  // namespace pipeweave
