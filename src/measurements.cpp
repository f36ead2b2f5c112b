// Raw pipeweave-collect records -> measurement CSV. See pipeweave/measurements.hpp.
#include "pipeweave/measurements.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "json_support.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"

namespace pipeweave {
namespace {

using detail::Fields;
using detail::json;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

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
  double median_us;
  double spread;  // (max - min) / median
  int reps;
  std::vector<std::string> kernels;
};

Timing read_timing(const Fields& fields, const std::string& prefix) {
  const json& durations = fields.get("durations_us");
  if (!durations.is_array() || durations.empty())
    detail::fail_field(prefix + "durations_us", durations.dump().substr(0, 60), "must be a non-empty array");
  std::vector<double> values;
  for (const json& d : durations) {
    if (!d.is_number() || !(d.get<double>() > 0) || !std::isfinite(d.get<double>()))
      detail::fail_field(prefix + "durations_us", d.dump(), "must hold only positive numbers");
    values.push_back(d.get<double>());
  }
  Timing timing{median(values), 0, static_cast<int>(values.size()), fields.texts("kernels")};
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  timing.spread = (*high - *low) / timing.median_us;
  if (timing.kernels.empty()) detail::fail_field(prefix + "kernels", "[]", "must name the kernels the call launched");
  return timing;
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
    "candidates,kernels,config_source,config_agrees,reduction_scheme,raster,workspace_bytes,spread,reps,l2,kernel\n";

std::string gemm_row(const Fields& f, const std::string& prefix, const std::string& gpu) {
  const Timing timing = read_timing(f, prefix);
  const std::string kernel = main_kernel(timing.kernels);
  const std::optional<CublasKernelName> parsed = parse_cublas_kernel_name(kernel);
  const int attr_tile_m = f.integer("tile_m"), attr_tile_n = f.integer("tile_n"), attr_tile_k = f.integer("tile_k");
  const int attr_cluster_m = f.integer("cluster_m"), attr_cluster_n = f.integer("cluster_n");
  // cuBLAS's M runs along the weights (our n), its N along the tokens (our m).
  int tile_m, tile_n, tile_k, stages, cluster_m, cluster_n;
  std::string source, agrees = "", raster = "";
  if (parsed) {
    tile_m = parsed->tile_n, tile_n = parsed->tile_m, tile_k = parsed->tile_k, stages = parsed->stages;
    cluster_m = parsed->cluster_n, cluster_n = parsed->cluster_m, source = "kernel_name", raster = parsed->raster;
    const bool same = attr_tile_m == parsed->tile_m && attr_tile_n == parsed->tile_n && attr_tile_k == parsed->tile_k &&
                      attr_cluster_m == parsed->cluster_m && attr_cluster_n == parsed->cluster_n;
    agrees = same ? "1" : "0";
  } else {
    tile_m = attr_tile_n, tile_n = attr_tile_m, tile_k = attr_tile_k, stages = f.integer("stages");
    cluster_m = std::max(1, attr_cluster_n), cluster_n = std::max(1, attr_cluster_m), source = "algo_attributes";
  }
  if (tile_m <= 0 || tile_n <= 0 || tile_k <= 0)
    detail::fail_field(prefix + "kernels", kernel, "must carry a tile in its name, or the algo attributes one");
  const int candidate = f.integer("candidate");
  std::ostringstream row;
  row << csv_cell(gpu) << ',' << f.text("dtype") << ',' << f.integer("m") << ',' << f.integer("n") << ',' << f.integer("k")
      << ',' << tile_m << ',' << tile_n << ',' << tile_k << ',' << std::max(1, f.integer("split_k")) << ',' << stages << ','
      << cluster_m << ',' << cluster_n << ',' << number(timing.median_us) << ',' << candidate << ','
      << (candidate == 0 ? 1 : 0) << ',' << f.integer("candidates") << ',' << timing.kernels.size() << ',' << source << ','
      << agrees << ',' << f.integer("reduction_scheme") << ',' << raster << ',' << number(f.number("workspace_bytes")) << ','
      << number(timing.spread) << ',' << timing.reps << ',' << f.text("l2") << ',' << csv_cell(kernel) << '\n';
  return row.str();
}

constexpr const char* kRmsNormHeader = "gpu,dtype,tokens,hidden,fused_residual,threads,duration_us,spread,reps,l2,kernel\n";
constexpr const char* kSiluMulHeader = "gpu,dtype,tokens,dim,threads,duration_us,spread,reps,l2,kernel\n";

std::string row_op_row(const Fields& f, const std::string& prefix, const std::string& gpu, bool norm) {
  const Timing timing = read_timing(f, prefix);
  std::ostringstream row;
  row << csv_cell(gpu) << ',' << f.text("dtype") << ',' << f.integer("tokens") << ',';
  if (norm) row << f.integer("hidden") << ',' << f.integer("fused_residual") << ',';
  else row << f.integer("dim") << ',';
  row << f.integer("threads") << ',' << number(timing.median_us) << ',' << number(timing.spread) << ',' << timing.reps << ','
      << f.text("l2") << ',' << csv_cell(main_kernel(timing.kernels)) << '\n';
  return row.str();
}

constexpr const char* kAttentionHeader =
    "gpu,dtype,batch,q_lens,kv_lens,heads,kv_heads,head_dim,causal,impl,tile_q,tile_kv,warps,num_splits,duration_us,"
    "spread,reps,l2,kernels,kernel\n";

std::string join_lengths(const json& values, const std::string& field) {
  if (!values.is_array() || values.empty()) detail::fail_field(field, values.dump().substr(0, 60), "must be a non-empty array");
  std::string text;
  for (const json& v : values) {
    if (!v.is_number_integer() || v.get<long long>() <= 0) detail::fail_field(field, v.dump(), "must hold positive integers");
    if (!text.empty()) text += '/';
    text += std::to_string(v.get<long long>());
  }
  return text;
}

// FlashAttention-2's kernels carry their traits: Flash_fwd_kernel_traits<kHeadDim, kBlockM,
// kBlockN, kNWarps, ...>; the split-KV kernel's launch grid is (m blocks, splits, batch x heads).
std::string attention_row(const Fields& f, const std::string& prefix, const std::string& gpu) {
  const Timing timing = read_timing(f, prefix);
  static const std::regex traits(R"(Flash_fwd_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))");
  const std::string& kernel = timing.kernels.front();
  std::smatch match;
  if (!std::regex_search(kernel, match, traits))
    detail::fail_field(prefix + "kernels[0]", kernel.substr(0, 80), "must be a FlashAttention kernel whose name carries its traits");
  const json& grids = f.get("grids");
  int splits = 1;
  for (std::size_t i = 0; i < timing.kernels.size() && grids.is_array() && i < grids.size(); ++i)
    if (timing.kernels[i].find("splitkv_kernel") != std::string::npos && grids[i].is_array() && grids[i].size() == 3 &&
        grids[i][1].is_number_integer())
      splits = grids[i][1].get<int>();
  const json& q_lens = f.get("q_lens");
  std::ostringstream row;
  row << csv_cell(gpu) << ',' << f.text("dtype") << ',' << (q_lens.is_array() ? q_lens.size() : 0) << ','
      << join_lengths(q_lens, prefix + "q_lens") << ',' << join_lengths(f.get("kv_lens"), prefix + "kv_lens") << ','
      << f.integer("heads") << ',' << f.integer("kv_heads") << ',' << f.integer("head_dim") << ',' << f.integer("causal") << ','
      << f.text("implementation") << ',' << match[2] << ',' << match[3] << ',' << match[4] << ',' << splits << ','
      << number(timing.median_us) << ',' << number(timing.spread) << ',' << timing.reps << ',' << f.text("l2") << ','
      << timing.kernels.size() << ',' << csv_cell(kernel) << '\n';
  return row.str();
}

}  // namespace

std::optional<CublasKernelName> parse_cublas_kernel_name(std::string_view kernel_name) {
  // nvjet_sm90_<variant>_<tm>x<tn>_<tk>x<stages>_<cm>x<cn>_<raster>_...
  static const std::regex pattern(R"(^nvjet_sm\d+[a-z]*_[a-z0-9]+_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_([vh])_(.*)$)");
  std::cmatch match;
  if (!std::regex_match(kernel_name.data(), kernel_name.data() + kernel_name.size(), match, pattern)) return std::nullopt;
  auto integer = [&](int group) { return std::stoi(match[group].str()); };
  CublasKernelName name{integer(1), integer(2), integer(3), integer(4), integer(5), integer(6), match[7].str(), false};
  const std::string rest = "_" + match[8].str() + "_";
  name.split_k = rest.find("_splitK_") != std::string::npos;
  if (name.tile_m <= 0 || name.tile_n <= 0 || name.tile_k <= 0 || name.cluster_m <= 0 || name.cluster_n <= 0) return std::nullopt;
  return name;
}

std::string measurements_csv_from_raw(std::string_view raw_jsonl) {
  std::string csv, op, gpu;
  std::size_t line_number = 0, start = 0;
  while (start < raw_jsonl.size()) {
    std::size_t end = raw_jsonl.find('\n', start);
    if (end == std::string_view::npos) end = raw_jsonl.size();
    const std::string_view line = raw_jsonl.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string prefix = "line " + std::to_string(line_number) + ": ";
    json document;
    try {
      document = detail::parse_json(line, "the record");
    } catch (const Error& error) {
      throw Error(prefix + error.what());
    }
    const Fields f(document, prefix);
    const std::string kind = f.text("op");
    if (line_number == 1 || op.empty()) {
      if (kind != "device") detail::fail_field(prefix + "op", "\"" + kind + "\"", "must be \"device\" on the first line");
      const std::string device = f.text("name");
      try {
        gpu = find_gpu(device).name;
      } catch (const Error&) {
        gpu = device;  // not in the catalog: the CUDA name, as a spec file made by calibrate names it
      }
      op = "?";
      continue;
    }
    if (op == "?") {
      if (kind != "gemm" && kind != "rmsnorm" && kind != "silu_mul" && kind != "attention")
        detail::fail_field(prefix + "op", "\"" + kind + "\"", "must be gemm, rmsnorm, silu_mul or attention");
      op = kind;
      csv = kind == "gemm" ? kGemmHeader : kind == "rmsnorm" ? kRmsNormHeader : kind == "attention" ? kAttentionHeader : kSiluMulHeader;
    } else if (kind != op) {
      detail::fail_field(prefix + "op", "\"" + kind + "\"", "must be the file's op (\"" + op + "\"): one op per file");
    }
    csv += op == "gemm"        ? gemm_row(f, prefix, gpu)
           : op == "attention" ? attention_row(f, prefix, gpu)
                               : row_op_row(f, prefix, gpu, op == "rmsnorm");
  }
  if (op.empty()) throw Error("the raw measurements are empty: no device line");
  if (op == "?") throw Error("the raw measurements hold no measured kernel");
  return csv;
}

}  // namespace pipeweave
