#pragma once
// Training the efficiency network (docs/method.md, section 2) on measured kernels, in C++ on Eigen:
// dense layers with ReLU and batch-norm, a sigmoid efficiency, latency = bound / efficiency,
// mean absolute percentage error of the latency as the loss, AdamW, early stopping on a
// validation set, batch-norm folded into the dense layers on export. Deterministic: the same
// rows, options and seed give the same weights.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pipeweave/dataset.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/mlp.hpp"

namespace pipeweave {

// One measured kernel as the network sees it.
struct TrainingRow {
  Features features{};
  double bound_us = 0;     // the analytical lower bound the efficiency divides
  double measured_us = 0;  // the target
  // Shared by the rows of one shape on one GPU: the candidates a ranking orders (0: in no group,
  // so the ranking term pairs the row with none).
  std::uint64_t group = 0;
  Pipe bottleneck = Pipe::tensor;  // the bound's pipe
  int compute_capability = 0;      // the GPU's, major x 10 + minor
  double balance = 0;              // the GPU's tensor flops per DRAM byte (GpuSpec::tensor_flops_per_dram_byte)
};

// The ground a model covers, measured on its training rows (MlpDescription's domain and
// pipe_efficiency): the compute capabilities, the GPUs' balance, each feature's range, and per bottleneck pipe the
// median efficiency (bound / measured) of the rows in each doubling of the bound from 1 us
// (bins of fewer than 8 rows are left out; a pipe with no rows falls back on all pipes).
void record_training_domain(MlpDescription& description, std::span<const TrainingRow> rows);

// The demand features and bound of each measured kernel on its GPU; `spec_for` maps a row's
// gpu name to the spec it is computed with (a calibrated spec, or the catalog's).
std::vector<TrainingRow> training_rows(std::span<const MeasuredKernel> rows,
                                       const std::function<GpuSpec(const std::string& gpu)>& spec_for);

struct EpochReport {
  int epoch = 0;
  double train_mape_pct = 0;       // over the epoch's batches, in training mode
  double validation_mape_pct = 0;  // the whole validation set, in inference mode
  bool best = false;               // the best validation figure so far: these weights are kept
  int network = 0;                 // which of an ensemble's networks (TrainingOptions::networks)
};

struct TrainingOptions {
  std::vector<int> hidden = {256, 128, 64};
  bool batch_norm = true;
  int epochs = 200;
  int patience = 40;  // epochs without a better validation figure before stopping
  int batch_size = 256;
  double learning_rate = 1e-3;  // at the first epoch; cosine decay to 1% of it at the last
  double weight_decay = 1e-4;  // AdamW, decoupled
  std::uint64_t seed = 1;
  // Weight of a ranking term beside the MAPE: for two rows of one group (one shape's configs
  // on one GPU), |(log predicted_a - log predicted_b) - (log measured_a - log measured_b)|,
  // averaged over the batch's pairs. Batches then keep each group's rows together (groups in
  // shuffled order). It teaches the network how a shape's configs differ, which is what an
  // autotuner asks, where MAPE weighs each row alone. 0: MAPE only.
  double rank_weight = 0;
  // An ensemble of this many networks (MlpDescription::further_networks), trained from seeds
  // seed, seed + 1, ... on the same rows, side by side (as many at a time as the machine has
  // cores). Fine-tuning tunes each of the start's networks (this must then be 1 or their count).
  // 1: a single network, trained on the caller's thread.
  int networks = 1;
  // Called after every epoch, one call at a time; for an ensemble, from the training threads.
  std::function<void(const EpochReport&)> progress;
};

struct TrainingResult {
  Mlp model;
  std::vector<EpochReport> history;  // every network's epochs, network 0's first
  int best_epoch = 0;                // network 0's
  double best_validation_mape_pct = 0;  // the model's: an ensemble's from its mean prediction
};

// Trains a network (or an ensemble, options.networks) for `family`. `init`, if given, is where
// fine-tuning starts (its layer sizes win over options.hidden, its network count over
// options.networks; its batch-norm is already folded, so fine-tuning runs without; its
// configless_scale is kept: refit it with fit_configless_scale on the new GPU's rows; so is
// for_configless_gemm).
// Throws pipeweave::Error for empty sets or bad options, naming them.
TrainingResult train_mlp(OpFamily family, std::span<const TrainingRow> train, std::span<const TrainingRow> validation,
                         const TrainingOptions& options, const Mlp* init = nullptr);

// Latencies a model predicts for rows (bound / efficiency).
std::vector<double> predict_latencies(const Mlp& model, std::span<const TrainingRow> rows);

// For a GEMM model: per data type, the median over `rows`' shapes of the measured time of the
// config cuBLAS ran first (rows with is_default) over what `model` predicts for the GEMM given
// without its config (best_gemm_config's pick: the least prediction over gemm_candidates, or nearly; the model's own
// configless_scale, if any, is not applied). The result is MlpDescription::configless_scale.
// Rows of other families, rows that are not is_default, and every is_default row of a GPU and
// shape after its first are skipped; a data type with no such row gets no factor. `progress`,
// if given, is called with (GPU-and-shape pairs done, pairs in all).
std::vector<std::pair<DType, double>> fit_configless_scale(
    const Mlp& model, std::span<const MeasuredKernel> rows, const std::function<GpuSpec(const std::string& gpu)>& spec_for,
    const std::function<void(std::size_t done, std::size_t total)>& progress = {});

// Whether a shape is in the held-out fraction: a hash of the shape text and the seed, so that
// every row of a shape (every GPU, every config) falls on the same side, on every machine.
bool shape_held_out(const std::string& shape, std::uint64_t seed, double fraction);

}  // namespace pipeweave
