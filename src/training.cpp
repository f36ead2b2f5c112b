// Training the efficiency network. See pipeweave/training.hpp.
#include "pipeweave/training.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "statistics.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/predictor.hpp"

namespace pipeweave {
namespace {

constexpr float kBatchNormEpsilon = 1e-5f;
constexpr float kBatchNormMomentum = 0.1f;
constexpr double kAdamBeta1 = 0.9, kAdamBeta2 = 0.999, kAdamEpsilon = 1e-8;

class Random {  // splitmix64: the same numbers on every platform
 public:
  explicit Random(std::uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {  // Box-Muller
    const double u = std::max(unit(), 1e-300), v = unit();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

 private:
  std::uint64_t state_;
};

// A parameter tensor with its AdamW moments.
struct Parameter {
  Eigen::MatrixXf value, gradient, first, second;
  void init(Eigen::Index rows, Eigen::Index cols) {
    value = gradient = first = second = Eigen::MatrixXf::Zero(rows, cols);
  }
  void step(double learning_rate, double weight_decay, int t, bool decay) {
    first = kAdamBeta1 * first + (1 - kAdamBeta1) * gradient;
    second = kAdamBeta2 * second + (1 - kAdamBeta2) * gradient.cwiseProduct(gradient);
    const double correction1 = 1 - std::pow(kAdamBeta1, t), correction2 = 1 - std::pow(kAdamBeta2, t);
    if (decay) value *= static_cast<float>(1 - learning_rate * weight_decay);
    value.array() -= static_cast<float>(learning_rate / correction1) * first.array() /
                     ((second.array() / static_cast<float>(correction2)).sqrt() + static_cast<float>(kAdamEpsilon));
  }
};

struct Layer {
  Parameter weights, bias;      // dense
  Parameter gamma, beta;        // batch-norm scale and shift (hidden layers, when on)
  Eigen::VectorXf running_mean, running_var;
  // Kept from the forward pass for the backward one.
  Eigen::MatrixXf input, normalized, pre_activation;
  Eigen::VectorXf inverse_std;
};

class Network {
 public:
  Network(const std::vector<int>& hidden, bool batch_norm, Random& random) : batch_norm_(batch_norm) {
    int inputs = static_cast<int>(kFeatureCount);
    for (std::size_t i = 0; i <= hidden.size(); ++i) {
      const int outputs = i < hidden.size() ? hidden[i] : 1;
      Layer layer;
      layer.weights.init(outputs, inputs);
      layer.bias.init(outputs, 1);
      const double scale = i < hidden.size() ? std::sqrt(2.0 / inputs) : 0.1 * std::sqrt(1.0 / inputs);  // He for ReLU
      for (Eigen::Index r = 0; r < outputs; ++r)
        for (Eigen::Index c = 0; c < inputs; ++c) layer.weights.value(r, c) = static_cast<float>(scale * random.normal());
      if (i < hidden.size() && batch_norm) {
        layer.gamma.init(outputs, 1);
        layer.beta.init(outputs, 1);
        layer.gamma.value.setOnes();
        layer.running_mean = Eigen::VectorXf::Zero(outputs);
        layer.running_var = Eigen::VectorXf::Ones(outputs);
      }
      layers_.push_back(std::move(layer));
      inputs = outputs;
    }
  }
  // From a trained network (batch-norm folded already): fine-tuning continues without it.
  explicit Network(const std::vector<MlpLayer>& trained) : batch_norm_(false) {
    for (const MlpLayer& source : trained) {
      Layer layer;
      layer.weights.init(source.weights.rows(), source.weights.cols());
      layer.bias.init(source.bias.size(), 1);
      layer.weights.value = source.weights;
      layer.bias.value = source.bias;
      layers_.push_back(std::move(layer));
    }
  }

  void set_output_bias(float value) { layers_.back().bias.value(0, 0) = value; }
  void ignore_inputs(const std::vector<bool>& ignored) {
    for (std::size_t c = 0; c < ignored.size(); ++c)
      if (ignored[c]) layers_.front().weights.value.col(static_cast<Eigen::Index>(c)).setZero();
  }

  // Logits for a batch (features x batch, standardised); training mode uses batch statistics.
  Eigen::RowVectorXf forward(const Eigen::MatrixXf& x, bool training) {
    Eigen::MatrixXf current = x;
    for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
      Layer& layer = layers_[i];
      if (training) layer.input = current;
      Eigen::MatrixXf z = layer.weights.value * current;
      z.colwise() += layer.bias.value.col(0);
      if (batch_norm_) {
        Eigen::VectorXf mean, var;
        if (training && z.cols() > 1) {
          mean = z.rowwise().mean();
          var = (z.colwise() - mean).array().square().rowwise().mean();
          layer.running_mean = (1 - kBatchNormMomentum) * layer.running_mean + kBatchNormMomentum * mean;
          layer.running_var = (1 - kBatchNormMomentum) * layer.running_var + kBatchNormMomentum * var;
        } else {
          mean = layer.running_mean, var = layer.running_var;
        }
        const Eigen::VectorXf inverse_std = (var.array() + kBatchNormEpsilon).rsqrt();
        Eigen::MatrixXf normalized = (z.colwise() - mean).array().colwise() * inverse_std.array();
        z = (normalized.array().colwise() * layer.gamma.value.col(0).array()).colwise() + layer.beta.value.col(0).array();
        if (training) layer.normalized = std::move(normalized), layer.inverse_std = inverse_std;
      }
      if (training) layer.pre_activation = z;
      current = z.cwiseMax(0.0f);
    }
    Layer& last = layers_.back();
    if (training) last.input = current;
    return (last.weights.value * current).array() + last.bias.value(0, 0);
  }

  // Gradients from d(loss)/d(logit) for the batch of the last training forward pass.
  void backward(const Eigen::RowVectorXf& logit_gradient) {
    Layer& last = layers_.back();
    last.weights.gradient = logit_gradient * last.input.transpose();
    last.bias.gradient(0, 0) = logit_gradient.sum();
    Eigen::MatrixXf upstream = last.weights.value.transpose() * logit_gradient;
    const float batch = static_cast<float>(logit_gradient.size());
    for (std::size_t i = layers_.size() - 1; i-- > 0;) {
      Layer& layer = layers_[i];
      Eigen::MatrixXf d = upstream.cwiseProduct((layer.pre_activation.array() > 0).cast<float>().matrix());
      if (batch_norm_) {
        layer.gamma.gradient = d.cwiseProduct(layer.normalized).rowwise().sum();
        layer.beta.gradient = d.rowwise().sum();
        const Eigen::MatrixXf d_normalized = d.array().colwise() * layer.gamma.value.col(0).array();
        const Eigen::VectorXf sum = d_normalized.rowwise().sum();
        const Eigen::VectorXf sum_scaled = d_normalized.cwiseProduct(layer.normalized).rowwise().sum();
        d = ((batch * d_normalized).colwise() - sum - (layer.normalized.array().colwise() * sum_scaled.array()).matrix())
                .array()
                .colwise() *
            (layer.inverse_std.array() / batch);
      }
      layer.weights.gradient = d * layer.input.transpose();
      layer.bias.gradient = d.rowwise().sum();
      if (i > 0) upstream = layer.weights.value.transpose() * d;
    }
  }

  void step(double learning_rate, double weight_decay, int t) {
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Layer& layer = layers_[i];
      layer.weights.step(learning_rate, weight_decay, t, true);
      layer.bias.step(learning_rate, weight_decay, t, false);
      if (batch_norm_ && i + 1 < layers_.size()) {
        layer.gamma.step(learning_rate, weight_decay, t, false);
        layer.beta.step(learning_rate, weight_decay, t, false);
      }
    }
  }

  // Dense layers with batch-norm folded in: y = gamma * (Wx + b - mean) / sqrt(var + eps) + beta.
  std::vector<MlpLayer> export_layers() const {
    std::vector<MlpLayer> out;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const Layer& layer = layers_[i];
      MlpLayer exported{layer.weights.value, layer.bias.value.col(0)};
      if (batch_norm_ && i + 1 < layers_.size()) {
        const Eigen::VectorXf scale =
            layer.gamma.value.col(0).array() * (layer.running_var.array() + kBatchNormEpsilon).rsqrt();
        exported.weights = scale.asDiagonal() * exported.weights;
        exported.bias = (scale.array() * (exported.bias - layer.running_mean).array() + layer.beta.value.col(0).array()).matrix();
      }
      out.push_back(std::move(exported));
    }
    return out;
  }

 private:
  bool batch_norm_;
  std::vector<Layer> layers_;
};

double mape(const Eigen::RowVectorXf& logits, std::span<const TrainingRow> rows, std::span<const std::size_t> index) {
  double total = 0;
  for (Eigen::Index i = 0; i < logits.size(); ++i) {
    const TrainingRow& row = rows[index[static_cast<std::size_t>(i)]];
    const double efficiency = 1 / (1 + std::exp(-static_cast<double>(logits(i))));
    total += std::abs(row.bound_us / efficiency - row.measured_us) / row.measured_us;
  }
  return 100 * total / static_cast<double>(logits.size());
}

Eigen::MatrixXf standardized(std::span<const TrainingRow> rows, std::span<const std::size_t> index, const Eigen::VectorXf& mean,
                             const Eigen::VectorXf& scale) {
  Eigen::MatrixXf x(static_cast<Eigen::Index>(kFeatureCount), static_cast<Eigen::Index>(index.size()));
  for (std::size_t j = 0; j < index.size(); ++j)
    for (std::size_t f = 0; f < kFeatureCount; ++f)
      x(static_cast<Eigen::Index>(f), static_cast<Eigen::Index>(j)) = (rows[index[j]].features[f] - mean(static_cast<Eigen::Index>(f))) /
                                                                        scale(static_cast<Eigen::Index>(f));
  return x;
}

void check_rows(std::span<const TrainingRow> rows, const char* which) {
  if (rows.empty()) throw InvalidInput(std::string("the ") + which + " set is empty");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    detail::require_positive(std::string(which) + "[" + std::to_string(i) + "].bound_us", rows[i].bound_us);
    detail::require_positive(std::string(which) + "[" + std::to_string(i) + "].measured_us", rows[i].measured_us);
  }
}

// The shuffled order with each group's rows together, groups in the order of their first row;
// a row of group 0 (in no group) stays where the shuffle put it.
std::vector<std::size_t> grouped_order(std::span<const TrainingRow> rows, const std::vector<std::size_t>& order) {
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> members;
  std::vector<std::pair<std::uint64_t, std::size_t>> slots;  // a group, or group 0 and the row
  for (std::size_t i : order) {
    if (rows[i].group == 0) {
      slots.emplace_back(0, i);
      continue;
    }
    std::vector<std::size_t>& list = members[rows[i].group];
    if (list.empty()) slots.emplace_back(rows[i].group, 0);
    list.push_back(i);
  }
  std::vector<std::size_t> grouped;
  grouped.reserve(order.size());
  for (const auto& [group, row] : slots) {
    if (group == 0) grouped.push_back(row);
    else grouped.insert(grouped.end(), members[group].begin(), members[group].end());
  }
  return grouped;
}

// Adds the ranking term's gradient (TrainingOptions::rank_weight) for the pairs of rows of one
// group in the batch, whose rows grouped_order put next to each other. With p = b / s and
// s = sigmoid(z), d log p / dz = -(1 - s).
void add_ranking_gradient(std::span<const TrainingRow> rows, std::span<const std::size_t> batch,
                          const Eigen::RowVectorXf& logits, double weight, Eigen::RowVectorXf& gradient) {
  const auto count = static_cast<Eigen::Index>(batch.size());
  std::vector<double> log_predicted(batch.size()), sigmoid(batch.size());
  for (Eigen::Index j = 0; j < count; ++j) {
    sigmoid[static_cast<std::size_t>(j)] = 1 / (1 + std::exp(-static_cast<double>(logits(j))));
    log_predicted[static_cast<std::size_t>(j)] =
        std::log(rows[batch[static_cast<std::size_t>(j)]].bound_us / sigmoid[static_cast<std::size_t>(j)]);
  }
  // A run of rows of one group; rows of group 0 are in none, so form no pairs.
  auto group_end = [&](std::size_t start) {
    std::size_t end = start + 1;
    if (rows[batch[start]].group != 0)
      while (end < batch.size() && rows[batch[end]].group == rows[batch[start]].group) ++end;
    return end;
  };
  std::size_t pairs = 0;
  for (std::size_t start = 0, end = 0; start < batch.size(); start = end) {
    end = group_end(start);
    pairs += (end - start) * (end - start - 1) / 2;
  }
  if (pairs == 0) return;
  const double share = weight / static_cast<double>(pairs);
  for (std::size_t start = 0, end = 0; start < batch.size(); start = end) {
    end = group_end(start);
    for (std::size_t a = start; a < end; ++a)
      for (std::size_t b = a + 1; b < end; ++b) {
        const double error = (log_predicted[a] - log_predicted[b]) -
                             std::log(rows[batch[a]].measured_us / rows[batch[b]].measured_us);
        const double sign = error > 0 ? 1.0 : (error < 0 ? -1.0 : 0.0);
        gradient(static_cast<Eigen::Index>(a)) += static_cast<float>(share * sign * -(1 - sigmoid[a]));
        gradient(static_cast<Eigen::Index>(b)) += static_cast<float>(share * -sign * -(1 - sigmoid[b]));
      }
  }
}

}  // namespace

std::vector<TrainingRow> training_rows(std::span<const MeasuredKernel> rows,
                                       const std::function<GpuSpec(const std::string& gpu)>& spec_for) {
  std::vector<TrainingRow> out;
  out.reserve(rows.size());
  std::string last_gpu;
  GpuSpec spec;
  for (const MeasuredKernel& row : rows) {
    if (row.gpu != last_gpu || out.empty()) spec = spec_for(row.gpu), spec.validate(), last_gpu = row.gpu;
    const Demand demand = compute_demand(row.kernel, spec);
    std::uint64_t group = 1469598103934665603ull;
    for (unsigned char c : row.gpu + "|" + row.shape) group = (group ^ c) * 1099511628211ull;
    if (group == 0) group = 1;  // 0 says "in no group"
    out.push_back(TrainingRow{features(demand, spec), demand.bound_cycles() / spec.clock_hz() * 1e6, isolated_duration_us(row, spec), group,
                              demand.bottleneck(), spec.compute_capability_major * 10 + spec.compute_capability_minor,
                              spec.tensor_flops_per_dram_byte()});
  }
  return out;
}

void record_training_domain(MlpDescription& description, std::span<const TrainingRow> rows) {
  if (rows.empty()) return;
  description.trained_compute_capabilities.clear();
  description.input_min = Eigen::VectorXf::Constant(kFeatureCount, std::numeric_limits<float>::infinity());
  description.input_max = Eigen::VectorXf::Constant(kFeatureCount, -std::numeric_limits<float>::infinity());
  // Per pipe (and all pipes, the last), per doubling of the bound: the rows' efficiencies.
  constexpr int kBins = 25;  // bounds up to 2^24 us, 17 s
  std::array<std::array<std::vector<double>, kBins>, kPipeCount + 1> efficiencies;
  for (const TrainingRow& row : rows) {
    auto& seen = description.trained_compute_capabilities;
    if (row.compute_capability > 0 && std::find(seen.begin(), seen.end(), row.compute_capability) == seen.end())
      seen.push_back(row.compute_capability);
    for (std::size_t f = 0; f < kFeatureCount; ++f) {
      const auto i = static_cast<Eigen::Index>(f);
      description.input_min(i) = std::min(description.input_min(i), row.features[f]);
      description.input_max(i) = std::max(description.input_max(i), row.features[f]);
    }
    if (!(row.bound_us > 0) || !(row.measured_us > 0)) continue;
    const int bin = std::clamp(static_cast<int>(std::ceil(std::log2(row.bound_us))), 0, kBins - 1);
    const double efficiency = std::min(1.0, row.bound_us / row.measured_us);
    efficiencies[static_cast<std::size_t>(row.bottleneck)][static_cast<std::size_t>(bin)].push_back(efficiency);
    efficiencies[kPipeCount][static_cast<std::size_t>(bin)].push_back(efficiency);
  }
  std::sort(description.trained_compute_capabilities.begin(), description.trained_compute_capabilities.end());
  description.balance_min = description.balance_max = 0;
  for (const TrainingRow& row : rows) {
    if (!(row.balance > 0)) continue;
    description.balance_min = description.balance_min > 0 ? std::min(description.balance_min, row.balance) : row.balance;
    description.balance_max = std::max(description.balance_max, row.balance);
  }
  for (std::size_t p = 0; p <= kPipeCount; ++p) {
    description.pipe_efficiency[p].clear();
    for (int bin = 0; bin < kBins; ++bin) {
      std::vector<double>& values = efficiencies[p][static_cast<std::size_t>(bin)];
      if (values.size() < 8) continue;
      description.pipe_efficiency[p].emplace_back(std::ldexp(1.0, bin), detail::upper_middle(values));
    }
  }
}

std::vector<std::pair<DType, double>> fit_configless_scale(
    const Mlp& model, std::span<const MeasuredKernel> rows, const std::function<GpuSpec(const std::string& gpu)>& spec_for,
    const std::function<void(std::size_t done, std::size_t total)>& progress) {
  if (model.family() != OpFamily::gemm || model.description().for_configless_gemm) return {};
  MlpDescription uncorrected = model.description();
  uncorrected.configless_scale.clear();
  const Predictor predictor(std::vector<Mlp>{Mlp(std::move(uncorrected))});
  // cuBLAS's first choice per GPU and shape, without its config; per GPU, one batched call. Rows
  // timed back to back (the published fp8 split: the tile the published method assumes, not a
  // cuBLAS call's own choice) say nothing of how far cuBLAS's choice falls from the least prediction.
  std::vector<MeasuredKernel> timed_alone;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(timed_alone), [](const MeasuredKernel& row) { return !row.back_to_back; });
  const std::vector<MeasuredKernel> first_choices = configless_first_choices(timed_alone);
  std::map<std::string, std::vector<const MeasuredKernel*>> by_gpu;
  std::size_t total = 0;
  for (const MeasuredKernel& row : first_choices)
    if (row.kernel.get_if<Gemm>()) by_gpu[row.gpu].push_back(&row), ++total;
  std::map<DType, std::vector<double>> log_ratios;
  std::size_t done = 0;
  for (const auto& [gpu, members] : by_gpu) {
    const GpuSpec spec = spec_for(gpu);
    std::vector<Kernel> kernels;
    for (const MeasuredKernel* row : members) kernels.push_back(row->kernel);
    constexpr std::size_t kChunk = 1024;  // progress between chunks: a first-seen shape ranks its candidates
    for (std::size_t begin = 0; begin < kernels.size(); begin += kChunk) {
      const std::size_t end = std::min(kernels.size(), begin + kChunk);
      const std::vector<Prediction> predicted =
          predictor.predict(std::span<const Kernel>(kernels).subspan(begin, end - begin), spec);
      for (std::size_t i = begin; i < end; ++i)
        log_ratios[kernels[i].get_if<Gemm>()->dtype].push_back(
            std::log(members[i]->duration_us / predicted[i - begin].latency_us));
      done += end - begin;
      if (progress) progress(done, total);
    }
  }
  std::vector<std::pair<DType, double>> scales;
  for (auto& [dtype, values] : log_ratios) {
    scales.emplace_back(dtype, std::exp(detail::median(std::move(values))));
  }
  return scales;
}

bool shape_held_out(const std::string& shape, std::uint64_t seed, double fraction) {
  std::uint64_t hash = 1469598103934665603ull ^ seed;  // FNV-1a, seeded
  for (unsigned char c : shape) hash = (hash ^ c) * 1099511628211ull;
  hash ^= hash >> 33, hash *= 0xff51afd7ed558ccdull, hash ^= hash >> 33;
  return static_cast<double>(hash >> 11) * 0x1.0p-53 < fraction;
}

std::vector<double> predict_latencies(const Mlp& model, std::span<const TrainingRow> rows) {
  Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic> features(static_cast<int>(kFeatureCount),
                                                                                static_cast<Eigen::Index>(rows.size()));
  for (std::size_t j = 0; j < rows.size(); ++j)
    for (std::size_t f = 0; f < kFeatureCount; ++f)
      features(static_cast<Eigen::Index>(f), static_cast<Eigen::Index>(j)) = rows[j].features[f];
  const Eigen::VectorXd efficiency = model.efficiency(features);
  std::vector<double> latency(rows.size());
  for (std::size_t j = 0; j < rows.size(); ++j) latency[j] = rows[j].bound_us / efficiency(static_cast<Eigen::Index>(j));
  return latency;
}

namespace {

// One network of a model, from `seed` (or from `start`, a trained network, when fine-tuning):
// trained for the epochs given, the weights of the best validation epoch kept.
struct TrainedNetwork {
  std::vector<MlpLayer> layers;
  std::vector<EpochReport> history;
  int best_epoch = 0;
  double best_validation_mape_pct = 0;
};

// In an ensemble (`network_count` > 1) errors name the network, and `stop`, once set (another
// network failed), ends the training at the next epoch.
TrainedNetwork train_network(std::span<const TrainingRow> train, std::span<const TrainingRow> validation,
                             const TrainingOptions& options, std::uint64_t seed, int network_index, std::size_t network_count,
                             const std::vector<MlpLayer>* start, const Eigen::VectorXf& mean, const Eigen::VectorXf& scale,
                             const std::vector<bool>& constant, const std::atomic<bool>& stop) {
  Random random(seed);
  Network network = start ? Network(*start) : Network(options.hidden, options.batch_norm, random);
  // A feature that never varied cannot be learned from: its first-layer weights start at
  // zero and stay there (its standardised input, and so its gradient, is always zero), so
  // the model ignores it rather than answering a new value with random weights.
  network.ignore_inputs(constant);
  if (!start) {  // start at the median efficiency, so that early epochs fit the shape, not the level
    std::vector<double> efficiency;
    for (const TrainingRow& row : train) efficiency.push_back(std::clamp(row.bound_us / row.measured_us, 0.01, 0.99));
    const double middle = detail::upper_middle(efficiency);
    network.set_output_bias(static_cast<float>(std::log(middle / (1 - middle))));
  }

  std::vector<std::size_t> order(train.size()), validation_index(validation.size());
  std::iota(order.begin(), order.end(), 0);
  std::iota(validation_index.begin(), validation_index.end(), 0);
  const Eigen::MatrixXf validation_x = standardized(validation, validation_index, mean, scale);

  std::vector<EpochReport> history;
  int best_epoch = 0;
  std::vector<MlpLayer> best_layers;
  double best = std::numeric_limits<double>::infinity();
  int since_best = 0, step = 0;
  for (int epoch = 1; epoch <= options.epochs && !stop; ++epoch) {
    // Cosine decay from the given rate to 1% of it at the last epoch: late epochs refine.
    const double progress = static_cast<double>(epoch - 1) / std::max(1, options.epochs - 1);
    const double learning_rate = options.learning_rate * (0.01 + 0.99 * 0.5 * (1 + std::cos(3.141592653589793 * progress)));
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random.next() % i]);  // Fisher-Yates
    if (options.rank_weight > 0) order = grouped_order(train, order);
    double train_total = 0;
    for (std::size_t begin = 0; begin < order.size(); begin += static_cast<std::size_t>(options.batch_size)) {
      const std::size_t count = std::min(order.size() - begin, static_cast<std::size_t>(options.batch_size));
      if (count < 2 && begin > 0) break;  // a batch of one has no batch statistics
      const std::span<const std::size_t> batch(order.data() + begin, count);
      const Eigen::MatrixXf x = standardized(train, batch, mean, scale);
      const Eigen::RowVectorXf logits = network.forward(x, true);
      Eigen::RowVectorXf gradient(static_cast<Eigen::Index>(count));
      for (std::size_t j = 0; j < count; ++j) {
        const TrainingRow& row = train[batch[j]];
        const double efficiency = 1 / (1 + std::exp(-static_cast<double>(logits(static_cast<Eigen::Index>(j)))));
        const double predicted = row.bound_us / efficiency;
        train_total += std::abs(predicted - row.measured_us) / row.measured_us;
        // d|b/s - y|/y / dz = sign(b/s - y) * (b/s) / y * -(1 - s), s = sigmoid(z)
        const double sign = predicted > row.measured_us ? 1.0 : (predicted < row.measured_us ? -1.0 : 0.0);
        gradient(static_cast<Eigen::Index>(j)) =
            static_cast<float>(-sign * predicted / row.measured_us * (1 - efficiency) / static_cast<double>(count));
      }
      if (options.rank_weight > 0) add_ranking_gradient(train, batch, logits, options.rank_weight, gradient);
      network.backward(gradient);
      network.step(learning_rate, options.weight_decay, ++step);
    }
    EpochReport report;
    report.epoch = epoch;
    report.network = network_index;
    report.train_mape_pct = 100 * train_total / static_cast<double>(train.size());
    report.validation_mape_pct = mape(network.forward(validation_x, false), validation, validation_index);
    if (!std::isfinite(report.validation_mape_pct))
      throw Error((network_count > 1 ? "network " + std::to_string(network_index) + ": " : std::string()) +
                  "training diverged at epoch " + std::to_string(epoch) + " (lower the learning rate)");
    if (report.validation_mape_pct < best) {
      best = report.validation_mape_pct, report.best = true, since_best = 0;
      best_layers = network.export_layers();
      best_epoch = epoch;
    } else {
      ++since_best;
    }
    history.push_back(report);
    if (options.progress) options.progress(report);
    if (since_best >= options.patience) break;
  }

  return TrainedNetwork{std::move(best_layers), std::move(history), best_epoch, best};
}

void check_training_options(OpFamily family, const TrainingOptions& options, const Mlp* init) {
  if (options.epochs < 1) detail::fail_field("epochs", options.epochs, "must be at least 1");
  if (options.batch_size < 2) detail::fail_field("batch size", options.batch_size, "must be at least 2");
  // (as train's --lr: smaller steps vanish in float weights, 1e-300 trained nothing; a step too large
  // for the data diverges, and training says so)
  if (!(options.learning_rate >= 1e-7 && std::isfinite(options.learning_rate)))
    detail::fail_field("learning rate", options.learning_rate, "must be at least 1e-7 and finite (smaller steps vanish in float weights)");
  detail::require_non_negative("weight decay", options.weight_decay);
  detail::require_non_negative("rank weight", options.rank_weight);
  if (options.networks < 1 || options.networks > kMaxNetworks)
    detail::fail_field("networks", options.networks, "must be between 1 and " + std::to_string(kMaxNetworks));
  if (options.hidden.size() > static_cast<std::size_t>(Mlp::kMaxHiddenLayers))  // (what loading the model takes)
    detail::fail_field("hidden layers", options.hidden.size(), "must be at most " + std::to_string(Mlp::kMaxHiddenLayers));
  if (init && init->family() != family)  // its inputs mean another op family's demand: nothing to start from
    detail::fail_field("the start model's op family", std::string(to_string(init->family())),
                       "must be the family trained (" + std::string(to_string(family)) + ")");
  if (init && options.networks != 1 && static_cast<std::size_t>(options.networks) != init->network_count())
    detail::fail_field("networks", options.networks,
                       "must be 1 or the start model's " + std::to_string(init->network_count()) +
                           " when fine-tuning (each of its networks is tuned)");
  if (!init) {
    if (options.hidden.empty()) throw InvalidInput("hidden layer sizes must list at least one layer");
    for (int width : options.hidden)
      if (width < 1 || width > Mlp::kMaxWidth)
        detail::fail_field("hidden layer size", width, "must be between 1 and " + std::to_string(Mlp::kMaxWidth));
  }
}

// The inputs' standardisation, and the features it found constant (which get no weight).
struct Standardization {
  Eigen::VectorXf mean, scale;
  std::vector<bool> constant = std::vector<bool>(kFeatureCount, false);
};

// The training set's mean and spread per feature, summed in double so that a feature the set
// never varies (attention's pipeline stages in FA2-only data) comes out with no spread at all, not
// a rounding error's worth that would scale it up 10^4-fold at inference. Such a feature gets
// scale 1, and no weight.
Standardization training_standardization(std::span<const TrainingRow> train) {
  Standardization out;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(kFeatureCount), squares = Eigen::VectorXd::Zero(kFeatureCount);
  for (const TrainingRow& row : train)
    for (std::size_t f = 0; f < kFeatureCount; ++f) sum(static_cast<Eigen::Index>(f)) += row.features[f];
  const Eigen::VectorXd average = sum / static_cast<double>(train.size());
  for (const TrainingRow& row : train)
    for (std::size_t f = 0; f < kFeatureCount; ++f) {
      const double d = row.features[f] - average(static_cast<Eigen::Index>(f));
      squares(static_cast<Eigen::Index>(f)) += d * d;
    }
  out.mean = average.cast<float>(), out.scale = Eigen::VectorXf::Ones(kFeatureCount);
  for (Eigen::Index f = 0; f < out.scale.size(); ++f) {
    const double spread = std::sqrt(squares(f) / static_cast<double>(train.size()));
    // Features are log1p of counts and cycles: a spread of 0.1% of e is no information.
    if (spread > 1e-3) out.scale(f) = static_cast<float>(spread);
    else out.constant[static_cast<std::size_t>(f)] = true;
  }
  return out;
}

// Trains one network per start (nullptr: from random weights), from seeds seed, seed + 1, ... The
// networks are independent, each deterministic in its seed: they train side by side, as many at a
// time as the machine has cores, and report their epochs one at a time.
std::vector<TrainedNetwork> train_networks(std::span<const TrainingRow> train, std::span<const TrainingRow> validation,
                                           const TrainingOptions& options,
                                           const std::vector<const std::vector<MlpLayer>*>& starts,
                                           const Standardization& inputs) {
  TrainingOptions each = options;
  std::mutex progress_lock;
  if (options.progress)
    each.progress = [&](const EpochReport& report) {
      const std::lock_guard<std::mutex> hold(progress_lock);
      options.progress(report);
    };
  std::atomic<bool> stop = false;  // set when a network fails, so that the others end early
  const auto train_one = [&](std::size_t n) {
    try {
      return train_network(train, validation, each, options.seed + n, static_cast<int>(n), starts.size(), starts[n],
                           inputs.mean, inputs.scale, inputs.constant, stop);
    } catch (...) {
      stop = true;
      throw;
    }
  };
  std::vector<TrainedNetwork> networks;
  if (starts.size() == 1) {
    networks.push_back(train_one(0));  // one network: on the caller's thread
  } else {
    const std::size_t at_once = std::max(1u, std::thread::hardware_concurrency());
    for (std::size_t first = 0; first < starts.size(); first += at_once) {
      std::vector<std::future<TrainedNetwork>> running;
      for (std::size_t n = first; n < std::min(starts.size(), first + at_once); ++n)
        running.push_back(std::async(std::launch::async, train_one, n));
      for (std::future<TrainedNetwork>& network : running) networks.push_back(network.get());
    }
  }
  return networks;
}

// Fine-tuning: the start's ground stays covered, and its measured efficiencies, from more rows, stay.
void keep_start_domain(MlpDescription& description, const MlpDescription& start) {
  for (int cc : start.trained_compute_capabilities)
    if (std::find(description.trained_compute_capabilities.begin(), description.trained_compute_capabilities.end(), cc) ==
        description.trained_compute_capabilities.end())
      description.trained_compute_capabilities.push_back(cc);
  std::sort(description.trained_compute_capabilities.begin(), description.trained_compute_capabilities.end());
  if (start.balance_max > 0) {
    description.balance_min = description.balance_min > 0 ? std::min(description.balance_min, start.balance_min) : start.balance_min;
    description.balance_max = std::max(description.balance_max, start.balance_max);
  }
  if (start.input_min.size() == description.input_min.size()) {
    description.input_min = description.input_min.cwiseMin(start.input_min);
    description.input_max = description.input_max.cwiseMax(start.input_max);
  }
  if (!start.pipe_efficiency.back().empty()) description.pipe_efficiency = start.pipe_efficiency;
}

// The model's description: the trained networks, the standardisation, and the ground it covers.
MlpDescription trained_description(OpFamily family, std::span<const TrainingRow> train,
                                   std::span<const TrainingRow> validation, std::vector<TrainedNetwork>& networks,
                                   const Standardization& inputs, const Mlp* init) {
  MlpDescription description;
  description.family = family;
  for (std::string_view name : kFeatureNames) description.feature_names.emplace_back(name);
  description.input_mean = inputs.mean;
  description.input_scale = inputs.scale;
  description.layers = std::move(networks.front().layers);
  for (std::size_t n = 1; n < networks.size(); ++n) description.further_networks.push_back(std::move(networks[n].layers));
  // The ground it covers: the rows it learned from (fine-tuning: those and its start's).
  std::vector<TrainingRow> seen(train.begin(), train.end());
  seen.insert(seen.end(), validation.begin(), validation.end());
  record_training_domain(description, seen);
  if (init) keep_start_domain(description, init->description());
  // A fine-tuned network keeps its start's config-less factor until fit_configless_scale refits it.
  if (init && init->family() == family) {
    description.configless_scale = init->description().configless_scale;
    description.for_configless_gemm = init->description().for_configless_gemm;  // what it answers for stays
    description.dtypes = init->description().dtypes;
    description.config_pick = init->description().config_pick;  // and whose config's demand it reads
    description.config_tree = init->description().config_tree;
    // (not its second view, MlpDescription::second_view: a network trained on other rows than these)
    description.protocol = init->description().protocol;  // and how its rows were timed
  }
  return description;
}

}  // namespace

TrainingResult train_mlp(OpFamily family, std::span<const TrainingRow> train, std::span<const TrainingRow> validation,
                         const TrainingOptions& options, const Mlp* init) {
  check_rows(train, "training");
  check_rows(validation, "validation");
  check_training_options(family, options, init);

  // Standardisation: the training set's (fine-tuning: the start's, which its weights expect).
  Standardization inputs;
  if (init) inputs.mean = init->description().input_mean, inputs.scale = init->description().input_scale;
  else inputs = training_standardization(train);

  // An ensemble's networks: from seeds seed, seed + 1, ... (fine-tuning: from each of the
  // start's networks), on the same rows and standardisation.
  std::vector<const std::vector<MlpLayer>*> starts;
  if (init) {
    starts.push_back(&init->description().layers);
    for (const std::vector<MlpLayer>& network : init->description().further_networks) starts.push_back(&network);
  } else {
    starts.assign(static_cast<std::size_t>(options.networks), nullptr);
  }
  std::vector<TrainedNetwork> networks = train_networks(train, validation, options, starts, inputs);

  Mlp model(trained_description(family, train, validation, networks, inputs, init));
  std::vector<EpochReport> history;
  for (const TrainedNetwork& network : networks) history.insert(history.end(), network.history.begin(), network.history.end());
  // One network: its best epoch's figure; an ensemble: its mean prediction's, measured.
  double validation_mape = networks.front().best_validation_mape_pct;
  if (networks.size() > 1) {
    std::vector<double> measured;
    for (const TrainingRow& row : validation) measured.push_back(row.measured_us);
    validation_mape = accuracy(predict_latencies(model, validation), measured).mape_pct;
  }
  return TrainingResult{std::move(model), std::move(history), networks.front().best_epoch, validation_mape};
}

}  // namespace pipeweave
