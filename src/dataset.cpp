// Measurement CSVs -> MeasuredKernels, and accuracy figures. See pipeweave/dataset.hpp.
#include "pipeweave/dataset.hpp"
#include "pipeweave/gpu_spec.hpp"


#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "csv_support.hpp"
#include "json_support.hpp"
#include "statistics.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/workload.hpp"

namespace pipeweave {
namespace {

// One data row, with typed access by column name and errors that say where.
class Row {
 public:
  Row(const std::map<std::string, std::size_t>& columns, std::vector<std::string> cells, std::string where)
      : columns_(columns), cells_(std::move(cells)), where_(std::move(where)) {}
  bool has(const std::string& column) const { return columns_.count(column) > 0; }
  const std::string& text(const std::string& column) const {
    const auto found = columns_.find(column);
    if (found == columns_.end()) throw InvalidInput(where_ + ": the header has no column \"" + column + "\"");
    return cells_[found->second];
  }
  std::int64_t integer(const std::string& column) const {
    const std::string& cell = text(column);
    std::int64_t value = 0;
    const auto [end, status] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (status != std::errc() || end != cell.data() + cell.size())
      detail::fail_field(where_ + ": " + column, detail::quoted(cell), "must be an integer");
    return value;
  }
  // A flag: 0 or 1, nothing else (2 and -7 read as 1 once).
  bool flag(const std::string& column) const {
    const std::int64_t value = integer(column);
    if (value != 0 && value != 1) detail::fail_field(where_ + ": " + column, detail::quoted(text(column)), "must be 0 or 1");
    return value == 1;
  }
  // The is_default column: a row is what the library runs by default where the file has no such
  // column, and where the cell says 1; an empty cell says it is not (as the collectors write it).
  bool is_default() const { return !has("is_default") || (states("is_default") && flag("is_default")); }
  // A config field held in an int: a value beyond it is refused, not wrapped.
  int small_integer(const std::string& column) const {
    const std::int64_t value = integer(column);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
      detail::fail_field(where_ + ": " + column, detail::quoted(text(column)), "is out of range");
    return static_cast<int>(value);
  }
  // An optional column's cell: absent or empty when the data does not say it.
  bool states(const std::string& column) const { return has(column) && !text(column).empty(); }
  double number(const std::string& column) const {
    const std::string& cell = text(column);
    double value = 0;
    const auto [end, status] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (status != std::errc() || end != cell.data() + cell.size() || !std::isfinite(value))
      detail::fail_field(where_ + ": " + column, detail::quoted(cell), "must be a number");
    return value;
  }
  DType dtype() const {
    const std::string& cell = text("dtype");
    const auto parsed = parse_dtype(cell);
    if (!parsed) detail::fail_field(where_ + ": dtype", detail::quoted(cell), "must be a dtype (bf16, fp16, fp8_e4m3, ...)");
    return *parsed;
  }
  std::vector<std::int64_t> lengths(const std::string& column) const {
    std::vector<std::int64_t> values;
    const std::string& cell = text(column);
    std::size_t start = 0;
    while (start <= cell.size()) {
      const std::size_t slash = std::min(cell.find('/', start), cell.size());
      std::int64_t value = 0;
      const auto [end, status] = std::from_chars(cell.data() + start, cell.data() + slash, value);
      if (status != std::errc() || end != cell.data() + slash)
        detail::fail_field(where_ + ": " + column, detail::quoted(cell), "must be integers joined by '/'");
      values.push_back(value);
      start = slash + 1;
    }
    return values;
  }
  const std::string& where() const { return where_; }

 private:
  const std::map<std::string, std::size_t>& columns_;
  std::vector<std::string> cells_;
  std::string where_;
};

// A GEMM known by its shape and time: the published fp8 split (M,N,K,avg_duration,hardware; one
// row per GPU and shape, fp8 e4m3; its other columns are the published method's own features and
// are not read). The GPU is the catalog's name for `hardware`. Which kernel ran is not published;
// its times are read as a kernel of the tile the published method assumes for every row (its
// tensor_sm_max_ops column is 2 x 128 x 128 x K per 128 x 128 output tile on the busiest SM),
// 128 x 128 with 128 fp8 values of K per step: on the H800 a GEMM of m = 4 takes 0.34 us longer
// per 128 of K, one such tile's step on one SM (512 clocks), where cuBLAS's own choice on the
// H100 takes 3-5 us in all (docs/experiments/transfer.md, "The published fp8 split"). A benchmark loop timed
// it, so it ran back to back.
MeasuredKernel published_gemm_row(const Row& row) {
  const std::string& hardware = row.text("hardware");
  std::string gpu = hardware;
  try {
    gpu = find_gpu(hardware).name;
  } catch (const Error&) {  // a GPU the catalog lacks keeps the file's name
  }
  Gemm gemm{.m = row.integer("M"), .n = row.integer("N"), .k = row.integer("K"), .dtype = DType::fp8_e4m3};
  gemm.config = GemmConfig{.tile_m = 128, .tile_n = 128, .tile_k = 128};
  const std::string shape = "gemm:fp8_e4m3," + row.text("M") + "," + row.text("N") + "," + row.text("K");
  MeasuredKernel measured{gpu, Kernel(gemm), row.number("avg_duration"), shape, true, 0};
  measured.back_to_back = true;
  return measured;
}

MeasuredKernel gemm_row(const Row& row) {
  Gemm gemm{.m = row.integer("m"), .n = row.integer("n"), .k = row.integer("k"), .dtype = row.dtype()};
  const std::string shape = "gemm:" + row.text("dtype") + "," + row.text("m") + "," + row.text("n") + "," + row.text("k");
  const bool is_default = row.is_default();
  if (!row.states("tile_m")) {  // a shape without the config that ran: what cuBLAS chose
    // (a config is all of its cells or none: one left empty among the rest read as config-less once)
    for (const char* column : {"tile_n", "tile_k", "split_k", "stages", "cluster_m", "cluster_n"})
      if (row.states(column))
        detail::fail_field(row.where() + ": tile_m", "\"\"", std::string("must be given where ") + column + " is (a config is all its cells or none)");
    return MeasuredKernel{row.text("gpu"), Kernel(gemm), row.number("duration_us"), shape, is_default, 0};
  }
  GemmConfig config;
  config.tile_m = row.small_integer("tile_m");
  config.tile_n = row.small_integer("tile_n");
  config.tile_k = row.small_integer("tile_k");
  config.split_k = row.small_integer("split_k");
  config.stages = row.small_integer("stages");
  config.cluster_m = row.small_integer("cluster_m");
  config.cluster_n = row.small_integer("cluster_n");
  gemm.config = config;
  // Hopper's MMA shape and schedule: optional columns (absent or empty where the GEMM library
  // does not say them: GemmConfig's defaults); when stated, every value must be a documented one.
  if (row.states("swap_ab")) {
    const std::string& cell = row.text("swap_ab");
    if (cell != "0" && cell != "1") detail::fail_field(row.where() + ": swap_ab", detail::quoted(cell), "must be 0 or 1");
    gemm.config->swap_ab = cell == "1";
  }
  if (row.states("schedule"))
    gemm.config->schedule = detail::gemm_schedule_field(row.where() + ": schedule", row.text("schedule"));
  if (row.states("raster")) gemm.config->raster = detail::gemm_raster_field(row.where() + ": raster", row.text("raster"));
  const int candidate = row.states("candidate") ? row.small_integer("candidate") : 0;
  if (candidate < 0) detail::fail_field(row.where() + ": candidate", candidate, "must be >= 0 (a candidate's place in its list)");
  return MeasuredKernel{row.text("gpu"), Kernel(gemm), row.number("duration_us"), shape, is_default, candidate};
}

MeasuredKernel rmsnorm_row(const Row& row) {
  const RmsNorm norm{.tokens = row.integer("tokens"), .hidden = row.integer("hidden"), .dtype = row.dtype(),
                     .fused_residual = row.flag("fused_residual")};
  const std::string shape = "rmsnorm:" + row.text("dtype") + "," + row.text("tokens") + "," + row.text("hidden") + "," +
                            row.text("fused_residual");
  return MeasuredKernel{row.text("gpu"), Kernel(norm), row.number("duration_us"), shape, true};
}

MeasuredKernel silu_row(const Row& row) {
  const SiluMul silu{.tokens = row.integer("tokens"), .dim = row.integer("dim"), .dtype = row.dtype()};
  const std::string shape = "silu_mul:" + row.text("dtype") + "," + row.text("tokens") + "," + row.text("dim");
  return MeasuredKernel{row.text("gpu"), Kernel(silu), row.number("duration_us"), shape, true};
}

// A fused-MoE layer's two grouped GEMMs (gate-up, then down) with the Triton config that ran;
// duration_us is the two kernels' sum. is_default (optional): the engines' default config; zipf
// (optional, default 0: uniform): the routing's skew; ep (optional, default 1): the expert-parallel
// ranks.
MeasuredKernel fused_moe_row(const Row& row) {
  FusedMoe moe{.tokens = row.integer("tokens"), .experts = row.integer("experts"), .top_k = row.integer("top_k"),
               .hidden = row.integer("hidden"), .intermediate = row.integer("intermediate"), .dtype = row.dtype(),
               .zipf = row.states("zipf") ? row.number("zipf") : 0.0,
               .expert_parallel = row.states("ep") ? row.integer("ep") : 1};
  moe.config = FusedMoeConfig{.block_m = row.small_integer("block_m"), .block_n = row.small_integer("block_n"),
                              .block_k = row.small_integer("block_k"), .stages = row.small_integer("stages"),
                              .group_m = row.small_integer("group_m"), .warps = row.small_integer("warps")};
  const std::string shape = "fused_moe:" + row.text("dtype") + "," + row.text("tokens") + "," + row.text("experts") + "," +
                            row.text("top_k") + "," + row.text("hidden") + "," + row.text("intermediate") +
                            (moe.zipf != 0 ? ",zipf=" + row.text("zipf") : "") +
                            (moe.expert_parallel != 1 ? ",ep=" + row.text("ep") : "");
  return MeasuredKernel{row.text("gpu"), Kernel(moe), row.number("duration_us"), shape,
                        row.is_default()};
}

MeasuredKernel attention_row(const Row& row) {
  Attention attention;
  attention.q_lens = row.lengths("q_lens");
  attention.kv_lens = row.lengths("kv_lens");
  attention.heads = row.integer("heads");
  attention.kv_heads = row.integer("kv_heads");
  attention.head_dim = row.integer("head_dim");
  attention.causal = row.flag("causal");
  attention.dtype = row.dtype();
  if (row.states("page_size")) attention.page_size = row.integer("page_size");  // optional: 0, a contiguous cache
  const std::string& impl = row.text("impl");
  if (impl != "flash2" && impl != "flash3") detail::fail_field(row.where() + ": impl", detail::quoted(impl), "must be flash2 or flash3");
  attention.config = AttentionConfig{.impl = impl == "flash2" ? AttentionImpl::flash2 : AttentionImpl::flash3,
                                     .tile_q = row.small_integer("tile_q"),
                                     .tile_kv = row.small_integer("tile_kv"),
                                     .num_splits = row.small_integer("num_splits")};
  // A measured row records the tiles that ran: zeros would read as "the implementation's own".
  detail::require_positive(row.where() + ": tile_q", attention.config->tile_q);
  detail::require_positive(row.where() + ": tile_kv", attention.config->tile_kv);
  const std::string shape = "attention:" + row.text("dtype") + "," + row.text("q_lens") + "," + row.text("kv_lens") + "," +
                            row.text("heads") + "," + row.text("kv_heads") + "," + row.text("head_dim") + "," + row.text("causal");
  return MeasuredKernel{row.text("gpu"), Kernel(attention), row.number("duration_us"), shape, true};
}

std::vector<double> ranks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double shared = 0.5 * static_cast<double>(i + j) + 1;  // ties share the mean of their ranks
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = shared;
    i = j + 1;
  }
  return rank;
}

// Spearman's rank correlation (ties share their mean rank); 0 when either side is constant.
double spearman(std::span<const double> x, std::span<const double> y) {
  const std::vector<double> a = ranks(x), b = ranks(y);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;
  double covariance = 0, var_a = 0, var_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    covariance += (a[i] - mean) * (b[i] - mean);
    var_a += (a[i] - mean) * (a[i] - mean);
    var_b += (b[i] - mean) * (b[i] - mean);
  }
  return var_a > 0 && var_b > 0 ? covariance / std::sqrt(var_a * var_b) : 0;
}

}  // namespace

std::vector<std::string> split_csv_line(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else cells.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

namespace {
double tensor_us(const MeasuredKernel& row, const GpuSpec& gpu) {
  return at(compute_demand(row.kernel, gpu).gpu_cycles, Pipe::tensor) / gpu.clock_hz() * 1e6;
}
}  // namespace

// The clock lost back to back follows the tensor pipe's load, whichever pipe bounds the kernel:
// a 128 x 128 tile's staging through shared memory may bound it on paper, and its MMAs still
// draw the power.
double isolated_duration_us(const MeasuredKernel& row, const GpuSpec& gpu) {
  return row.back_to_back ? SustainedLoad::of(gpu).isolated_us(row.duration_us, tensor_us(row, gpu)) : row.duration_us;
}

double as_timed_us(const MeasuredKernel& row, double isolated_us, const GpuSpec& gpu) {
  return row.back_to_back ? SustainedLoad::of(gpu).back_to_back_us(isolated_us, tensor_us(row, gpu)) : isolated_us;
}

std::vector<MeasuredKernel> configless_first_choices(std::span<const MeasuredKernel> rows) {
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<MeasuredKernel> out;
  for (const MeasuredKernel& row : rows) {
    if (row.back_to_back)
      throw InvalidInput(detail::printable(row.gpu, 60) + " " + row.shape +
                  " was timed back to back with the tile that ran (the published fp8 split): without its config it "
                  "would be held against a config that never ran; use such rows with their config");
    if (!row.is_default || !seen.emplace(row.gpu, row.shape).second) continue;
    out.push_back(row);
    if (const Gemm* gemm = row.kernel.get_if<Gemm>()) {
      Gemm bare = *gemm;
      bare.config.reset();
      out.back().kernel = bare;
    }
  }
  return out;
}

namespace {

using RowParser = MeasuredKernel (*)(const Row&);

// The op family a measurements header names, by its columns: the parser of its rows.
RowParser row_parser_for(const std::map<std::string, std::size_t>& columns, const std::string& where) {
  auto has = [&](const char* name) { return columns.count(name) > 0; };
  if (has("M") && has("N") && has("K") && has("avg_duration") && has("hardware")) return published_gemm_row;
  if (!has("gpu") || !has("duration_us"))
    throw InvalidInput(where + ": the header must name the columns gpu and duration_us (see docs/formats.md)");
  if (has("m") && has("n") && has("k")) return gemm_row;
  if (has("q_lens")) return attention_row;
  if (has("experts")) return fused_moe_row;
  if (has("hidden")) return rmsnorm_row;
  if (has("dim")) return silu_row;
  throw InvalidInput(where + ": the header names no known op family's columns (gemm m,n,k; rmsnorm hidden; silu_mul dim; attention q_lens; fused_moe experts)");
}

// The cells that say how a row was timed, where stated: they are not learnt from, but a row
// whose protocol (l2) no collector writes, or whose spread or repetitions no timing gives, is
// not a measurement of what it claims.
void check_timing_cells(const Row& row) {
  if (row.states("l2")) {
    const std::string& l2 = row.text("l2");
    if (!detail::is_l2_protocol(l2))
      detail::fail_field(row.where() + ": l2", detail::quoted(l2), "must be cold, warm or served (how the row was timed)");
  }
  for (const char* column : {"reps", "runs"})
    if (row.states(column) && row.integer(column) < 1)
      detail::fail_field(row.where() + ": " + column, detail::quoted(row.text(column)), "must be a whole number >= 1");
  for (const char* column : {"spread", "run_spread"})
    if (row.states(column) && row.number(column) < 0)
      detail::fail_field(row.where() + ": " + column, detail::quoted(row.text(column)), "must be a number >= 0");
}

// One data row, its duration held to what a kernel can take; every error names the row.
MeasuredKernel measured_row(RowParser parse, const Row& row, const std::string& where) {
  try {
    MeasuredKernel measured = parse(row);
    check_timing_cells(row);
    measured.served = row.states("l2") && row.text("l2") == "served";
    const std::string duration_field = where + (parse == published_gemm_row ? ": avg_duration" : ": duration_us");
    detail::require_positive(duration_field, measured.duration_us);
    // A nanosecond to a day and a half: no kernel is timed outside it (1e-320 made MAPE infinite).
    if (measured.duration_us < detail::CsvRow::kLeastMeasuredUs || measured.duration_us > detail::CsvRow::kMostMeasuredUs)
      detail::fail_field(duration_field, measured.duration_us, detail::CsvRow::kMeasuredUsRequirement);
    return measured;
  } catch (const Error& error) {
    const std::string message = error.what();
    detail::rethrow_as(error, message.starts_with(where) ? message : where + ": " + message);
  }
}

}  // namespace

std::vector<MeasuredKernel> measurements_from_csv(std::string_view csv_text, std::string_view source) {
  std::vector<MeasuredKernel> rows;
  std::map<std::string, std::size_t> columns;
  std::size_t header_cells = 0;
  RowParser parse = nullptr;
  const auto where_at = [&](std::size_t line_number) { return std::string(source) + ":" + std::to_string(line_number); };
  const bool header_seen = detail::for_each_csv_line(
      csv_text, source, detail::CsvLines::skip_spaces,
      [&](const std::vector<std::string>& header, std::size_t line_number) {
        columns = detail::csv_columns(header, where_at(line_number));
        header_cells = header.size();
        parse = row_parser_for(columns, where_at(line_number));
      },
      [&](std::vector<std::string>&& cells, std::size_t line_number) {
        std::string where = where_at(line_number);
        if (cells.size() != header_cells)
          detail::fail_field(where + ": the row's cell count", cells.size(), "must equal the header's " + std::to_string(header_cells));
        const Row row(columns, std::move(cells), std::move(where));
        rows.push_back(measured_row(parse, row, row.where()));
      });
  if (!header_seen) throw InvalidInput(std::string(source) + ": no header row");
  return rows;
}

// Bulk measurements are kept gzip-compressed (.csv.gz): read as every other input is (read_file),
// plain or compressed whatever the name says, a compressed file refused past kMostInflatedBytes
// (zlib's gzread, which read them before, had no bound: 1.6 MB of compressed newlines grew past
// 2 GB) and with anything but another member or padding after its stream.
std::vector<MeasuredKernel> read_measurements(const std::filesystem::path& csv_path) {
  return measurements_from_csv(detail::read_file(csv_path, "measurements"), csv_path.string());
}

Accuracy accuracy(std::span<const double> predicted, std::span<const double> measured) {
  if (predicted.size() != measured.size())
    detail::fail_field("predictions", predicted.size(), "must be as many as the measurements (" + std::to_string(measured.size()) + ")");
  if (measured.empty()) throw InvalidInput("accuracy needs at least one measurement");
  std::vector<double> errors;
  errors.reserve(measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) {
    detail::require_positive("measured[" + std::to_string(i) + "]", measured[i]);
    detail::require_positive("predicted[" + std::to_string(i) + "]", predicted[i]);
    errors.push_back(100 * std::abs(predicted[i] - measured[i]) / measured[i]);
  }
  Accuracy result;
  result.rows = errors.size();
  result.mape_pct = std::accumulate(errors.begin(), errors.end(), 0.0) / static_cast<double>(errors.size());
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  result.median_ape_pct = detail::median_of_sorted(sorted);
  // Nearest-rank percentile.
  result.p90_ape_pct = sorted[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  result.within_10_pct = 100.0 * static_cast<double>(std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 10; })) / n;
  result.within_20_pct = 100.0 * static_cast<double>(std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 20; })) / n;
  result.spearman = spearman(predicted, measured);
  return result;
}

RankingAccuracy ranking_accuracy(std::span<const std::string> shapes, std::span<const double> score,
                                 std::span<const double> measured) {
  if (score.size() != shapes.size() || measured.size() != shapes.size())
    detail::fail_field("ranking scores and measurements", score.size(),
                       "must be one per row, as many as the shapes (" + std::to_string(shapes.size()) + ")");
  std::map<std::string_view, std::vector<std::size_t>> by_shape;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    detail::require_positive("measured[" + std::to_string(i) + "]", measured[i]);
    if (!std::isfinite(score[i])) detail::fail_field("score[" + std::to_string(i) + "]", score[i], "must be finite");
    by_shape[shapes[i]].push_back(i);
  }
  RankingAccuracy result;
  std::vector<double> slowdowns;
  double spearman_sum = 0, found = 0;
  std::vector<double> shape_score, shape_measured;
  for (const auto& [shape, rows] : by_shape) {
    if (rows.size() < 2) continue;
    shape_score.clear(), shape_measured.clear();
    for (std::size_t i : rows) shape_score.push_back(score[i]), shape_measured.push_back(measured[i]);
    spearman_sum += spearman(shape_score, shape_measured);
    // The first of the lowest score: a tie goes to the candidate listed first.
    const std::size_t chosen = static_cast<std::size_t>(std::min_element(shape_score.begin(), shape_score.end()) - shape_score.begin());
    const double fastest = *std::min_element(shape_measured.begin(), shape_measured.end());
    found += shape_measured[chosen] == fastest;
    slowdowns.push_back(100 * (shape_measured[chosen] / fastest - 1));
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (std::size_t b = a + 1; b < rows.size(); ++b) {
        const double apart_pct = 100 * std::abs(std::log(shape_measured[a] / shape_measured[b]));
        const auto& edges = RankingAccuracy::kPairBandEdgesPct;
        const auto band = static_cast<std::size_t>(std::lower_bound(edges.begin(), edges.end(), apart_pct) - edges.begin());
        ++result.pairs[band];
        const double order = (shape_score[a] - shape_score[b]) * (shape_measured[a] - shape_measured[b]);
        if (order < 0) ++result.misordered_pairs[band];
      }
  }
  result.shapes = slowdowns.size();
  if (result.shapes == 0) return result;
  const double count = static_cast<double>(result.shapes);
  result.mean_spearman = spearman_sum / count;
  result.best_found_pct = 100 * found / count;
  result.mean_slowdown_pct = std::accumulate(slowdowns.begin(), slowdowns.end(), 0.0) / count;
  std::sort(slowdowns.begin(), slowdowns.end());
  result.p90_slowdown_pct = slowdowns[static_cast<std::size_t>(std::ceil(0.9 * count)) - 1];
  return result;
}

}  // namespace pipeweave
