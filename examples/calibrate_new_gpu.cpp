// A platform engineer's path to a model of a GPU, end to end, on the CPU:
//  1. calibrate: the microbenchmark logs that `pipeweave calibrate --log-dir` kept on the GPU
//     become its spec (sustained clock, per-pipe throughputs, DRAM and L2 bandwidth);
//  2. measure a few hundred kernels on it (`pipeweave collect`), here a measurement CSV;
//  3. fine-tune a GEMM model on part of those rows and score it, before and after, on shapes
//     it did not see; write the spec and the model.
// With no arguments it replays the committed H200 logs and H200 GEMM measurements, and starts
// from the GEMM model trained with no H200 row (data/models/holdout/), as for a GPU that is new.
//
//   calibrate_new_gpu [--log FILE]... [--data FILE.csv] [--init MODEL.json] [--rows N] [--epochs N] [--out DIR]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeweave/pipeweave.hpp"

namespace pw = pipeweave;
namespace fs = std::filesystem;

namespace {

// Where the committed data lives, compiled in so that the default run needs no arguments.
const fs::path kData = PIPEWEAVE_DATA_DIR;

struct Options {
  std::vector<std::string> logs;
  std::string data;
  std::string init;
  std::size_t rows = 400;
  int epochs = 30;
  fs::path out = "calibrated_gpu";
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (i + 1 >= argc) throw pw::InvalidInput(argument + " needs a value");
    const std::string value = argv[++i];
    if (argument == "--log") options.logs.push_back(value);
    else if (argument == "--data") options.data = value;
    else if (argument == "--init") options.init = value;
    else if (argument == "--rows") options.rows = std::stoul(value);
    else if (argument == "--epochs") options.epochs = std::stoi(value);
    else if (argument == "--out") options.out = value;
    else throw pw::InvalidInput("unknown argument " + argument);
  }
  if (options.logs.empty())
    for (int run = 1; run <= 3; ++run)
      options.logs.push_back((kData / "gpus/H200-SXM.calibration" / ("microbench-" + std::to_string(run) + ".json")).string());
  if (options.data.empty()) options.data = (kData / "measurements/H200-SXM/gemm.csv.gz").string();
  if (options.init.empty()) options.init = (kData / "models/holdout/gemm_without_h200.json").string();
  return options;
}

double mape(const pw::Mlp& model, const std::vector<pw::TrainingRow>& rows) {
  std::vector<double> measured;
  for (const pw::TrainingRow& row : rows) measured.push_back(row.measured_us);
  return pw::accuracy(pw::predict_latencies(model, rows), measured).mape_pct;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);

    // 1. Calibrate.
    std::vector<pw::MicrobenchLog> logs;
    for (const std::string& path : options.logs) logs.push_back(pw::load_microbench_log(path));
    const pw::Calibration calibration = pw::calibrate(logs);
    const pw::GpuSpec& spec = calibration.spec;
    std::printf("1. calibrated %s from %d log(s): %.0f MHz under a bf16 load, %.0f GB/s DRAM, %.0f bf16 flops/clk/SM\n",
                spec.name.c_str(), calibration.logs, spec.sm_clock_mhz, spec.dram_bandwidth_gb_s,
                spec.tensor_flops_per_clk_per_sm.fp16_bf16);

    // 2. The GPU's measured GEMMs, as training rows computed with the calibrated spec. Shapes
    //    are split by hash: a few hundred rows to fine-tune on, other shapes to score.
    std::vector<pw::MeasuredKernel> measured;
    for (pw::MeasuredKernel& row : pw::read_measurements(options.data))
      if (row.gpu == spec.name) measured.push_back(std::move(row));
    if (measured.empty()) throw pw::InvalidInput(options.data + " has no row measured on " + spec.name);
    std::vector<pw::MeasuredKernel> pool, tune, score;
    for (pw::MeasuredKernel& row : measured)
      (pw::shape_held_out(row.shape, /*seed=*/7, /*fraction=*/0.5) ? score : pool).push_back(std::move(row));
    // A few hundred rows spread evenly over the file, as a short collection run would give.
    const double stride = std::max(1.0, static_cast<double>(pool.size()) / static_cast<double>(options.rows));
    for (double at = 0; at < static_cast<double>(pool.size()) && tune.size() < options.rows; at += stride)
      tune.push_back(pool[static_cast<std::size_t>(at)]);
    const auto spec_for = [&](const std::string&) { return spec; };
    std::vector<pw::TrainingRow> tune_rows = pw::training_rows(tune, spec_for), score_rows = pw::training_rows(score, spec_for);
    // The last fifth of the tuning rows decides when to stop.
    const auto split = static_cast<std::ptrdiff_t>(tune_rows.size() * 4 / 5);
    const std::vector<pw::TrainingRow> validation(tune_rows.begin() + split, tune_rows.end());
    tune_rows.resize(static_cast<std::size_t>(split));
    std::printf("2. %zu measured GEMMs: fine-tuning on %zu (+%zu to validate), scoring on %zu of other shapes\n",
                measured.size(), tune_rows.size(), validation.size(), score_rows.size());

    // 3. Fine-tune.
    const pw::Mlp initial = pw::load_mlp(options.init);
    const pw::Mlp* start = &initial;
    pw::TrainingOptions training;
    training.epochs = options.epochs;
    training.patience = options.epochs;
    training.learning_rate = 1e-4;  // a nudge, not a retraining
    training.progress = [](const pw::EpochReport& epoch) {
      std::fprintf(stderr, "   epoch %3d: validation MAPE %6.2f%%\n", epoch.epoch, epoch.validation_mape_pct);
    };
    pw::TrainingResult tuned = pw::train_mlp(pw::OpFamily::gemm, tune_rows, validation, training, start);
    // A GEMM given without its config: refit the factor on this GPU's tuning shapes.
    pw::MlpDescription refit = tuned.model.description();
    refit.configless_scale = pw::fit_configless_scale(tuned.model, tune, spec_for);
    tuned.model = pw::Mlp(std::move(refit));
    for (const auto& [dtype, factor] : tuned.model.description().configless_scale)
      std::printf("   config-less %s factor %.3f\n", std::string(pw::to_string(dtype)).c_str(), factor);
    std::printf("3. MAPE on the scored shapes: %s %.2f%%, fine-tuned %.2f%% (roofline bound alone %.2f%%)\n",
                fs::path(options.init).filename().string().c_str(), mape(*start, score_rows), mape(tuned.model, score_rows),
                [&] {
                  std::vector<double> bound, truth;
                  for (const pw::TrainingRow& row : score_rows) bound.push_back(row.bound_us), truth.push_back(row.measured_us);
                  return pw::accuracy(bound, truth).mape_pct;
                }());

    fs::create_directories(options.out);
    std::ofstream(options.out / "gpu.json") << pw::to_json(calibration);
    std::ofstream(options.out / "gemm.json") << pw::to_json(tuned.model);
    std::printf("wrote %s and %s: pipeweave predict --gpu %s ...; pw::Predictor({pw::load_mlp(...)})\n",
                (options.out / "gpu.json").string().c_str(), (options.out / "gemm.json").string().c_str(),
                (options.out / "gpu.json").string().c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "calibrate_new_gpu: error: %s\n", error.what());
    return 2;
  }
}
