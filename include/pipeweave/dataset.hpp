#pragma once
// Measured kernels as the library sees them: rows of the measurement CSVs (format in
// docs/formats.md) read back into Kernels with the configuration that ran, and the accuracy
// figures an evaluation reports. Training and `pipeweave eval` both start here.

#include <array>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"

namespace pipeweave {

struct MeasuredKernel {
  std::string gpu;        // catalog name, or the CUDA name of a GPU the catalog lacks
  Kernel kernel;          // with the configuration that ran
  double duration_us = 0;
  std::string shape;      // the kernel without its configuration: rows that share it are one shape
  bool is_default = true; // GEMM: the candidate a plain cuBLAS call runs; other ops: always
  int candidate = 0;      // GEMM: its rank in the library heuristic's list (0 = is_default); other ops: 0
  // Timed as a benchmark loop times a kernel, the same launch back to back (the published fp8
  // split), rather than alone after an idle flush as this project's collectors do: a tensor-bound
  // kernel then runs at the board's sustained clock (SustainedLoad::back_to_back_us). Training
  // learns such a row's time alone; eval predicts its time back to back.
  bool back_to_back = false;
  // Timed as a serving engine runs it (its l2 column says "served": back to back over copies of
  // the weights inside a busy collection): a model trained on such rows records it
  // (MlpDescription::protocol).
  bool served = false;
};

// The time `row` would take run alone, which the models learn (its measured time unless it was
// timed back to back), and the reverse: a prediction of its time alone as `row` was timed.
double isolated_duration_us(const MeasuredKernel& row, const GpuSpec& gpu);
double as_timed_us(const MeasuredKernel& row, double isolated_us, const GpuSpec& gpu);

// Reads one measurement CSV of any op family, finding columns by name (extra columns are
// ignored). Throws pipeweave::Error naming the file, line and column of anything malformed.
std::vector<MeasuredKernel> read_measurements(const std::filesystem::path& csv_path);
std::vector<MeasuredKernel> measurements_from_csv(std::string_view csv_text, std::string_view source = "measurements");

// The question of a caller who knows only the shape: per GPU and shape, the first is_default row
// (cuBLAS's first choice; a file without that column marks every candidate so), a GEMM's config
// dropped. Rows that are not is_default are left out; other families' rows keep their kernel.
// A row timed back to back (the published fp8 split) is refused: its time alone depends on the
// tile that ran, which a config chosen for the bare shape would misstate.
std::vector<MeasuredKernel> configless_first_choices(std::span<const MeasuredKernel> rows);
[[deprecated("renamed configless_first_choices")]] inline std::vector<MeasuredKernel> first_choices_without_configs(
    std::span<const MeasuredKernel> rows) {
  return configless_first_choices(rows);
}

// One CSV line split into cells; quoted cells may hold commas and doubled quotes.
std::vector<std::string> split_csv_line(std::string_view line);

// Accuracy of predictions against measurements (both in the same unit, positive).
struct Accuracy {
  std::size_t rows = 0;
  double mape_pct = 0;        // mean absolute percentage error
  double median_ape_pct = 0;  // median absolute percentage error
  double p90_ape_pct = 0;     // 90th percentile
  double within_10_pct = 0;   // share of rows within 10%, in percent
  double within_20_pct = 0;
  double spearman = 0;        // rank correlation of predicted and measured (ties share ranks)
};
// Throws pipeweave::Error when the spans differ in length, are empty, or hold a value that is not positive.
Accuracy accuracy(std::span<const double> predicted, std::span<const double> measured);

// How well a score orders each shape's candidates, the autotuner's question: rows of one
// shape are its candidates (configs), and a lower score is meant to run faster. The score
// is a predicted latency, or a library heuristic's rank to compare against.
struct RankingAccuracy {
  std::size_t shapes = 0;          // shapes with at least two candidates (the others say nothing)
  double mean_spearman = 0;        // per shape, score order against measured order, averaged
  double best_found_pct = 0;       // share of shapes whose lowest-score candidate is the measured-fastest
  double mean_slowdown_pct = 0;    // lowest-score candidate's time over the shape's fastest, minus 1, averaged
  double p90_slowdown_pct = 0;     // 90th percentile of that slowdown
  // Every pair of one shape's candidates, banded by how far apart they measured (|log ratio|,
  // in percent: up to kPairBandEdgesPct[0], then up to each next edge, then beyond the last),
  // and how many of them the score puts in the other order (a tie in either is neither).
  // Pairs a percent or two apart are where a few percent of prediction error reorders.
  static constexpr std::array<double, 5> kPairBandEdgesPct{1, 2, 5, 10, 20};
  std::array<std::size_t, kPairBandEdgesPct.size() + 1> pairs{};
  std::array<std::size_t, kPairBandEdgesPct.size() + 1> misordered_pairs{};
};
// Throws pipeweave::Error when the spans differ in length or a measurement is not positive.
RankingAccuracy ranking_accuracy(std::span<const std::string> shapes, std::span<const double> score,
                                 std::span<const double> measured);

}  // namespace pipeweave
