#pragma once
// The learned stage (docs/method.md, section 2): a small dense network, inference only, on
// Eigen. Inputs are the demand features, standardised with the training set's mean and
// scale; hidden layers are dense + ReLU with batch-norm already folded into their
// weights; one sigmoid output, the efficiency in (0, 1). A model may be an ensemble: several
// such networks of the same widths, the geometric mean of whose efficiencies it answers. Weights load from a
// versioned JSON file (see pipeweave/io.hpp) that is checked against the features this code computes.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeweave/config_tree.hpp"
#include "pipeweave/detail/dense.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

struct MlpLayer {
  Eigen::MatrixXf weights;  // outputs x inputs
  Eigen::VectorXf bias;     // outputs
};

// How the rows a network learnt from were timed, which says what clock its answers carry.
// rested: each kernel alone after an L2 flush and a rest (the collection's default), at the
// clock of an idle GPU; served: back to back over copies of the weights inside a busy collection,
// as a serving engine runs them (pipeweave-collect --l2 served), whose clock already holds a
// little of what sustained load takes (SustainedLoad::kServedLabelShare).
enum class LabelProtocol : std::uint8_t { rested, served };
constexpr std::string_view to_string(LabelProtocol protocol) { return protocol == LabelProtocol::served ? "served" : "rested"; }
inline std::optional<LabelProtocol> parse_label_protocol(std::string_view text) {
  if (text == "rested") return LabelProtocol::rested;
  if (text == "served") return LabelProtocol::served;
  return std::nullopt;
}

// The most networks one model holds (an ensemble answers at that many times one network's cost;
// `train --networks` trains at most as many).
inline constexpr int kMaxNetworks = 64;
namespace detail {
inline void check_further_networks(std::size_t further) {
  if (further + 1 > static_cast<std::size_t>(kMaxNetworks))
    fail_field("mlp.further_networks", std::to_string(further) + " networks",
               "must hold at most " + std::to_string(kMaxNetworks - 1) + " (an ensemble of at most " + std::to_string(kMaxNetworks) + ")");
}
}  // namespace detail

class Mlp;

// Which config a model for GEMMs without a config reads the demand of (MlpDescription::config_pick).
enum class ConfigPick : std::uint8_t { search, analytical_default, cublas_tree };

constexpr std::string_view to_string(ConfigPick pick) {
  switch (pick) {
    case ConfigPick::search: return "search";
    case ConfigPick::analytical_default: return "analytical_default";
    case ConfigPick::cublas_tree: return "cublas_tree";
  }
  return "?";
}

inline std::optional<ConfigPick> parse_config_pick(std::string_view text) {
  for (ConfigPick pick : {ConfigPick::search, ConfigPick::analytical_default, ConfigPick::cublas_tree})
    if (text == to_string(pick)) return pick;
  return std::nullopt;
}

struct MlpDescription {
  OpFamily family = OpFamily::gemm;
  int feature_version = kFeatureVersion;
  std::vector<std::string> feature_names;  // must equal kFeatureNames, in order
  Eigen::VectorXf input_mean;              // subtracted from the features
  Eigen::VectorXf input_scale;             // then divided by this (> 0)
  std::vector<MlpLayer> layers;            // hidden layers (ReLU) then the output layer (sigmoid)
  // An ensemble's other networks: the same widths as `layers`, trained on the same rows from
  // other random starts. The model's efficiency is the geometric mean of every network's (so
  // its latency, bound / efficiency, is the geometric mean of theirs): each start errs
  // differently on shapes none was trained on, and the mean cancels part of it. Each network
  // costs its own inference time. Empty: one network.
  std::vector<std::vector<MlpLayer>> further_networks;
  // GEMM models only. A GEMM given without its config is predicted at the least prediction over
  // the library's candidates (Predictor::best_gemm_config's pick, or nearly it), and the least of a few hundred predictions, each a few percent
  // off, is biased low (the chosen config tends to be one the network under-predicts). Per data
  // type, the factor that takes that least prediction to the measured time of the config cuBLAS
  // ran (its first choice): the median ratio over the training shapes (fit_configless_scale in
  // pipeweave/training.hpp). A data type not listed is not corrected.
  std::vector<std::pair<DType, double>> configless_scale;
  // A GEMM model that answers only for GEMMs given without their config: trained on cuBLAS's
  // first choice as measured, with the demand of the config the predictor's GEMM model picks
  // (Predictor::best_gemm_config; or its tree's, or the analytical default config: config_pick), so it learns
  // what that pick's prediction misses. A
  // Predictor that holds one beside a GEMM model uses it for such GEMMs (and no
  // configless_scale); it holds no configless_scale itself.
  bool for_configless_gemm = false;
  // Models for GEMMs without a config only: whose config's demand the network reads. search: the
  // config the predictor's GEMM model expects fastest (Predictor::best_gemm_config), so the network
  // answers beside a GEMM model; analytical_default: the analytical stage's own choice
  // (default_config in pipeweave/ops/gemm.hpp), which needs no GEMM model and no search;
  // cublas_tree: the config config_tree expects cuBLAS to run (on Hopper and later; elsewhere the
  // analytical default), no GEMM model or search needed either.
  ConfigPick config_pick = ConfigPick::search;
  // With config_pick cublas_tree only: the tree (shared by copies: it is large and never changes).
  std::shared_ptr<const GemmConfigTree> config_tree;
  // Models for GEMMs without a config whose network reads the search's pick (config_pick search)
  // only, and at most: a second model for the same GEMMs, trained on the same rows given the
  // config its tree expects cuBLAS to run (config_pick cublas_tree). Where both answer from their
  // networks (the tree's config on an architecture the second learnt, the GPU able to launch it,
  // neither outside its training ground), the latency is the geometric mean of the two: the two
  // picks err differently on shapes neither saw, and on the held-out bf16 families the mean came
  // out closer than either (docs/experiments/served-gemms.md). Elsewhere this model answers alone.
  // Shared by copies; it holds no second view itself.
  std::shared_ptr<const Mlp> second_view;
  // A factor on every latency this model answers, fitted after training: 1 / mean(predicted /
  // measured) over its training rows. A network trained with MAPE as its loss answers the median
  // ratio, and a long tail of kernels slower than predicted leaves its mean too fast (the served
  // GEMM networks by 1.0% (bf16) and 2.1% (fp8)); the factor makes the mean right where the
  // median was (docs/experiments/served-gemms.md). 1: none.
  double latency_scale = 1.0;
  // Models for GEMMs without a config only: the data types it answers for (empty: every type).
  // The features carry no data type, and an fp8 GEMM reads much as a bf16 GEMM of half the
  // tensor and operand cycles would, while it reaches a smaller share of its peak: one network
  // for both was biased by type on its own training rows (bf16 +1.7%, fp8 -2.4%, median) and one
  // per type came out about a point closer on model families it never saw (docs/experiments/
  // served-gemms.md). A Predictor answers a GEMM of a listed type with the model that lists it
  // before one that lists none.
  std::vector<DType> dtypes;
  // How the training rows were timed (absent from a model file: rested).
  LabelProtocol protocol = LabelProtocol::rested;
  // Free-form key/value record of how the weights were made (data, GPUs, rows, command, date).
  std::vector<std::pair<std::string, std::string>> provenance;

  // What the network was trained on, so that a prediction can say when it leaves that ground
  // (Prediction::extrapolated): the compute capabilities of the training rows' GPUs (major x 10
  // + minor: 90 for Hopper) and each input feature's range over the training rows. Empty (model
  // files from before they were recorded): every GPU and input counts as covered.
  std::vector<int> trained_compute_capabilities;
  Eigen::VectorXf input_min, input_max;
  // The compute/memory balance of the training GPUs: dense bf16 tensor flops per DRAM byte
  // (GpuSpec, at its clock), the least and the most (0, 0: not recorded). A GPU more than twice
  // beyond them is a balance the network never saw: it transfers from the H100 alone to the H200,
  // 1.5x apart (docs/experiments/trained-models.md), and not from the H800 to the H20, 7x apart.
  double balance_min = 0, balance_max = 0;
  // Where the network is not trusted, the efficiency the training rows measured for a kernel's
  // bottleneck pipe and size: per pipe (index: Pipe; the last, kPipeCount, every pipe together),
  // rows of (largest lower bound in microseconds the row covers, median efficiency of the
  // training kernels of that pipe up to that bound and above the previous row's), ascending.
  // A pipe with no row takes the all-pipes rows. Empty: no fallback (the network answers).
  std::array<std::vector<std::pair<double, double>>, kPipeCount + 1> pipe_efficiency;
};

class Mlp {
 public:
  // Widest layer a model may have: inference keeps its activations on the stack.
  static constexpr int kMaxWidth = 1024;
  // Most hidden layers a model may have: the bundled ones have three; 64 of 1,024 took 1.2 GB to
  // train and more than ten seconds for one epoch of 300 rows.
  static constexpr int kMaxHiddenLayers = 8;
  static_assert(kMaxWidth <= detail::kDenseMaxInputs && kFeatureCount <= detail::kDenseMaxInputs,
                "every layer's inputs must fit the dense kernels' list of them");

  // Throws pipeweave::Error naming what does not match the code's features or the layer chain.
  explicit Mlp(MlpDescription description) : description_(std::move(description)) {
    // A tree of its own: a caller holding a non-const pointer to the one given could change it
    // after the checks below (a walk relies on them to end).
    if (description_.config_tree) description_.config_tree = std::make_shared<const GemmConfigTree>(*description_.config_tree);
    check();
    pack();
  }
  // The same with its config tree (config_pick cublas_tree) given apart, in the place of
  // description.config_tree: moved in, not copied, as no one else holds it (mlp_from_json's).
  Mlp(MlpDescription description, GemmConfigTree config_tree) : description_(std::move(description)) {
    description_.config_tree = std::make_shared<const GemmConfigTree>(std::move(config_tree));
    check();
    pack();
  }

  const MlpDescription& description() const { return description_; }
  OpFamily family() const { return description_.family; }
  std::size_t network_count() const { return 1 + description_.further_networks.size(); }
  std::vector<int> hidden_sizes() const {
    std::vector<int> sizes;
    for (std::size_t i = 0; i + 1 < description_.layers.size(); ++i)
      sizes.push_back(static_cast<int>(description_.layers[i].bias.size()));
    return sizes;
  }

  // Whether the network was trained on GPUs of this compute capability (major x 10 + minor),
  // and whether a kernel's features lie within its training rows' range (a tenth of the range
  // of slack on each side). True where the model records no such domain.
  bool covers_compute_capability(int compute_capability) const {
    const std::vector<int>& seen = description_.trained_compute_capabilities;
    return seen.empty() || std::find(seen.begin(), seen.end(), compute_capability) != seen.end();
  }
  bool covers(const Features& features) const {
    const MlpDescription& d = description_;
    if (d.input_min.size() != static_cast<Eigen::Index>(kFeatureCount)) return true;
    for (std::size_t f = 0; f < kFeatureCount; ++f) {
      const auto i = static_cast<Eigen::Index>(f);
      const float slack = 0.1f * (d.input_max(i) - d.input_min(i));
      if (features[f] < d.input_min(i) - slack || features[f] > d.input_max(i) + slack) return false;
    }
    return true;
  }
  bool covers_balance(double tensor_flops_per_dram_byte) const {
    const MlpDescription& d = description_;
    if (!(d.balance_max > 0)) return true;
    return tensor_flops_per_dram_byte >= d.balance_min / kBalanceSlack && tensor_flops_per_dram_byte <= d.balance_max * kBalanceSlack;
  }
  static constexpr double kBalanceSlack = 2.0;
  bool has_pipe_efficiency() const { return !description_.pipe_efficiency.back().empty(); }
  // The measured efficiency for a kernel bound by `pipe` whose lower bound is `bound_us`
  // (MlpDescription::pipe_efficiency); 1 when the model has none.
  double pipe_efficiency(Pipe pipe, double bound_us) const {
    const auto& by_pipe = description_.pipe_efficiency;
    const std::vector<std::pair<double, double>>* rows = &by_pipe[static_cast<std::size_t>(pipe)];
    if (rows->empty()) rows = &by_pipe.back();
    if (rows->empty()) return 1.0;
    for (const auto& [upto_us, efficiency] : *rows)
      if (bound_us <= upto_us) return efficiency;
    return rows->back().second;
  }

  // Whether this model answers for GEMMs of this data type (MlpDescription::dtypes).
  bool answers_for(DType dtype) const {
    const std::vector<DType>& listed = description_.dtypes;
    return listed.empty() || std::find(listed.begin(), listed.end(), dtype) != listed.end();
  }

  // The factor on every latency this model answers (MlpDescription::latency_scale; 1: none).
  double latency_scale() const { return description_.latency_scale; }

  // The factor for a GEMM of this data type predicted without its config (1: none recorded).
  double configless_scale(DType dtype) const {
    for (const auto& [listed, scale] : description_.configless_scale)
      if (listed == dtype) return scale;
    return 1.0;
  }

  // Efficiency for one feature vector. No allocation: activations live on the stack.
  double efficiency(const Features& features) const {
    alignas(32) float input[kFeatureCount];
    alignas(32) float buffer_a[kMaxWidth];
    alignas(32) float buffer_b[kMaxWidth];
    Eigen::Map<const Eigen::Matrix<float, static_cast<int>(kFeatureCount), 1>> raw(features.data());
    Eigen::Map<Eigen::Matrix<float, static_cast<int>(kFeatureCount), 1>> standardized(input);
    standardized = (raw - description_.input_mean).cwiseQuotient(description_.input_scale);
    const float first = logit(0, input, buffer_a, buffer_b);
    if (description_.further_networks.empty()) return sigmoid(first);
    double log_sum = log_sigmoid(first);
    for (std::size_t n = 1; n < network_count(); ++n) log_sum += log_sigmoid(logit(n, input, buffer_a, buffer_b));
    return std::exp(log_sum / static_cast<double>(network_count()));
  }

  // Efficiencies for a batch: `features` holds one column per kernel (kFeatureCount rows).
  // Matrix-matrix products reuse each weight across a block of kernels; blocks of 64 keep
  // the activations in the CPU's L1/L2 while the weights stream once per block.
  Eigen::VectorXd efficiency(const Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic>& features) const {
    constexpr Eigen::Index kBlock = 64;
    const Eigen::Index count = features.cols();
    Eigen::VectorXd result(count);
    Eigen::MatrixXf input, current, next;
    for (Eigen::Index begin = 0; begin < count; begin += kBlock) {
      const Eigen::Index width = std::min(kBlock, count - begin);
      input = (features.middleCols(begin, width).colwise() - description_.input_mean).array().colwise() /
              description_.input_scale.array();
      const auto logits_of = [&](std::size_t network) -> Eigen::RowVectorXf {
        Eigen::RowVectorXf out(width);
        current.resize(widest_, width), next.resize(widest_, width);
        logits(network, input.data(), static_cast<int>(width), current.data(), next.data(), out.data());
        return out;
      };
      const Eigen::RowVectorXf first = logits_of(0);
      if (description_.further_networks.empty()) {
        for (Eigen::Index i = 0; i < width; ++i) result(begin + i) = sigmoid(first(i));
        continue;
      }
      Eigen::VectorXd log_sum(width);
      for (Eigen::Index i = 0; i < width; ++i) log_sum(i) = log_sigmoid(first(i));
      for (std::size_t n = 1; n < network_count(); ++n) {
        const Eigen::RowVectorXf more = logits_of(n);
        for (Eigen::Index i = 0; i < width; ++i) log_sum(i) += log_sigmoid(more(i));
      }
      result.segment(begin, width) = (log_sum / static_cast<double>(network_count())).array().exp();
    }
    return result;
  }

 private:
  static double sigmoid(float logit) { return 1.0 / (1.0 + std::exp(-static_cast<double>(logit))); }
  // log(sigmoid(z)), without the overflow of exp(-z) for very negative z.
  static double log_sigmoid(float logit) {
    const double z = logit;
    return z >= 0 ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z));
  }

  const std::vector<MlpLayer>& network_layers(std::size_t network) const {
    return network == 0 ? description_.layers : description_.further_networks[network - 1];
  }

  // Network `network`'s layers (0: `layers`, then `further_networks`) on `columns` inputs, each
  // layer through the dense kernel the CPU runs best (detail::dense_layer); `a` and `b` hold a
  // layer's outputs in turn (the widest layer x columns), `out` the logits.
  void logits(std::size_t network, const float* input, int columns, float* a, float* b, float* out) const {
    const detail::DenseLayerFn dense = detail::dense_layer();
    // The weights' fp16 bits where the CPU converts them (half the bytes of a pass, which streams
    // them from L2); the same values either way (detail::round_to_half_precision).
    const detail::DenseHalfLayerFn half = !packed_half_[network].empty() ? detail::dense_layer_half() : nullptr;
    const std::vector<MlpLayer>& layers = network_layers(network);
    const std::vector<std::vector<float>>& packed = packed_[network];
    const float* current = input;
    float* next = a;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const bool last = i + 1 == layers.size();
      float* target = last ? out : next;
      const int rows = static_cast<int>(layers[i].weights.rows()), inputs = static_cast<int>(layers[i].weights.cols());
      if (half) half(packed_half_[network][i].data(), layers[i].bias.data(), current, target, rows, inputs, columns, !last);
      else dense(packed[i].data(), layers[i].bias.data(), current, target, rows, inputs, columns, !last);
      current = target;
      next = next == a ? b : a;
    }
  }
  // One network's output logit for a standardised input; `a` and `b` hold the activations.
  float logit(std::size_t network, const float* input, float* a, float* b) const {
    float out = 0;
    logits(network, input, 1, a, b, &out);
    return out;
  }

  // The weights in the layout the dense kernel reads (detail::pack_dense_weights), per network and
  // layer, at half precision where every weight of the network fits fp16's range (else as they are,
  // and no fp16 copy): as floats (the baseline kernel's), and as fp16 bits where the CPU converts them.
  void pack() {
    packed_.assign(network_count(), {});
    packed_half_.assign(network_count(), {});
    for (std::size_t n = 0; n < network_count(); ++n) {
      for (const MlpLayer& layer : network_layers(n)) {
        widest_ = std::max(widest_, layer.weights.rows());
        packed_[n].push_back(detail::pack_dense_weights(layer.weights.data(), static_cast<int>(layer.weights.rows()),
                                                        static_cast<int>(layer.weights.cols())));
      }
      if (!std::all_of(packed_[n].begin(), packed_[n].end(), detail::fits_half_precision)) continue;
      for (std::vector<float>& layer : packed_[n]) {
        detail::round_to_half_precision(layer);
        packed_half_[n].push_back(detail::half_precision_bits(layer));
      }
    }
  }

  // Every rule a description must keep, in the order the messages report the first broken one.
  void check() const {
    const MlpDescription& d = description_;
    check_domain(d);
    check_features(d);
    check_networks(d);
    check_configless_options(d);
    // A factor of 2 either way would be no correction of a bias but a broken fit.
    if (!(d.latency_scale >= 0.5 && d.latency_scale <= 2))
      detail::fail_field("mlp.latency_scale", d.latency_scale, "must be within 0.5-2 (a correction of the mean, 1: none)");
  }

  // The domain the model was trained on: the balance range, the feature ranges and the pipe
  // efficiency tables.
  static void check_domain(const MlpDescription& d) {
    if (!(d.balance_min >= 0) || !(d.balance_max >= d.balance_min) || !std::isfinite(d.balance_max))
      detail::fail_field("mlp.domain.balance", d.balance_min, "must be a range [min, max] of flops per byte, min <= max");
    if (d.input_min.size() != d.input_max.size() ||
        (d.input_min.size() != 0 && d.input_min.size() != static_cast<Eigen::Index>(kFeatureCount)))
      detail::fail_field("mlp.domain.input_min", d.input_min.size(), "must be empty or hold one entry per feature, as input_max");
    for (Eigen::Index f = 0; f < d.input_min.size(); ++f)
      if (!(d.input_min(f) <= d.input_max(f)))
        detail::fail_field("mlp.domain.input_min[" + std::to_string(f) + "]", d.input_min(f),
                           "must be finite and at most input_max (" + std::to_string(d.input_max(f)) + ")");
    for (std::size_t p = 0; p < d.pipe_efficiency.size(); ++p)
      for (std::size_t r = 0; r < d.pipe_efficiency[p].size(); ++r) {
        const auto& [upto, efficiency] = d.pipe_efficiency[p][r];
        const std::string field = "mlp.pipe_efficiency." + std::string(p < kPipeCount ? to_string(kAllPipes[p]) : "all") + "[" +
                                  std::to_string(r) + "]";
        if (!(upto > 0) || !std::isfinite(upto) || (r > 0 && !(upto > d.pipe_efficiency[p][r - 1].first)))
          detail::fail_field(field, upto, "must be a bound in us, positive and ascending");
        // (a kernel at under a millionth of its bound is no measurement: 5e-324 made latencies infinite)
        if (!(efficiency >= 1e-6 && efficiency <= 1)) detail::fail_field(field, efficiency, "must be an efficiency in [1e-6, 1]");
      }
  }

  // The features: this build's version and names, and the standardisation of each.
  static void check_features(const MlpDescription& d) {
    if (d.feature_version != kFeatureVersion)
      detail::fail_field("mlp.feature_version", d.feature_version,
                         "must be " + std::to_string(kFeatureVersion) + " (the features this build computes)");
    if (d.feature_names.size() != kFeatureCount)
      detail::fail_field("mlp.features", d.feature_names.size(),
                         "must list the " + std::to_string(kFeatureCount) + " features this build computes");
    for (std::size_t i = 0; i < kFeatureCount; ++i)
      if (d.feature_names[i] != kFeatureNames[i])
        detail::fail_field("mlp.features[" + std::to_string(i) + "]", d.feature_names[i],
                           "must be \"" + std::string(kFeatureNames[i]) + "\"");
    const auto features = static_cast<Eigen::Index>(kFeatureCount);
    if (d.input_mean.size() != features) detail::fail_field("mlp.input_mean", d.input_mean.size(), "must have one entry per feature");
    if (d.input_scale.size() != features) detail::fail_field("mlp.input_scale", d.input_scale.size(), "must have one entry per feature");
    if (!d.input_mean.allFinite()) throw InvalidInput("mlp.input_mean holds a value that is not finite");
    for (Eigen::Index i = 0; i < features; ++i) {
      if (!(d.input_scale(i) > 0) || !std::isfinite(d.input_scale(i)))
        detail::fail_field("mlp.input_scale[" + std::to_string(i) + "]", d.input_scale(i), "must be positive and finite");
      // What training writes: a feature's spread, more than 0.001 (its features are log1p of
      // counts and cycles), or 1. A scale of 1e-45 made every input infinite and the network NaN.
      if (d.input_scale(i) < 1e-3 || d.input_scale(i) > 1e6)
        detail::fail_field("mlp.input_scale[" + std::to_string(i) + "]", d.input_scale(i),
                           "must be within [0.001, 1e+06] (a feature's spread, as training writes it)");
    }
  }

  // The networks: at most kMaxNetworks, each a valid layer chain, the further ones of the first one's widths.
  static void check_networks(const MlpDescription& d) {
    detail::check_further_networks(d.further_networks.size());
    check_layers(d.layers, "mlp.layers");
    for (std::size_t n = 0; n < d.further_networks.size(); ++n) {
      const std::string field = "mlp.further_networks[" + std::to_string(n) + "]";
      check_layers(d.further_networks[n], field);
      bool same_widths = d.further_networks[n].size() == d.layers.size();
      for (std::size_t i = 0; same_widths && i < d.layers.size(); ++i)
        same_widths = d.further_networks[n][i].bias.size() == d.layers[i].bias.size();
      if (!same_widths) detail::fail_field(field, "(other layer widths)", "must have the layer widths of mlp.layers");
    }
  }

  // What is for GEMM models only (and what such a model for GEMMs without a config must or
  // must not hold).
  static void check_configless_options(const MlpDescription& d) {
    if (d.for_configless_gemm && d.family != OpFamily::gemm)
      detail::fail_field("mlp.for_configless_gemm", "(a " + std::string(to_string(d.family)) + " model)",
                         "is for GEMM models only");
    if (d.for_configless_gemm && !d.configless_scale.empty())
      detail::fail_field("mlp.configless_scale", "(a model for GEMMs without a config)",
                         "must be empty: such a model answers for them itself");
    if (d.config_pick != ConfigPick::search && !d.for_configless_gemm)
      detail::fail_field("mlp.config_pick", "\"" + std::string(to_string(d.config_pick)) + "\"",
                         "is for models for GEMMs without a config only");
    if ((d.config_pick == ConfigPick::cublas_tree) != (d.config_tree != nullptr))
      detail::fail_field("mlp.config_tree", d.config_tree ? "(a tree)" : "(none)",
                         "must be given with config_pick \"cublas_tree\" and only with it");
    if (d.config_tree) d.config_tree->validate("mlp.config_tree.");
    if (d.second_view) check_second_view(d, d.second_view->description());
    if (!d.dtypes.empty() && !d.for_configless_gemm)
      detail::fail_field("mlp.dtypes", "(a model for " + std::string(d.family == OpFamily::gemm ? "GEMMs with their config" : to_string(d.family)) + ")",
                         "is for models for GEMMs without a config only");
    for (std::size_t i = 0; i < d.dtypes.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (d.dtypes[j] == d.dtypes[i])
          detail::fail_field("mlp.dtypes[" + std::to_string(i) + "]", "\"" + std::string(to_string(d.dtypes[i])) + "\"", "is listed twice");
    if (!d.configless_scale.empty() && d.family != OpFamily::gemm)
      detail::fail_field("mlp.configless_scale", "(a " + std::string(to_string(d.family)) + " model)",
                         "is for GEMM models only (a GEMM's config is what it replaces)");
    for (std::size_t i = 0; i < d.configless_scale.size(); ++i) {
      const auto& [dtype, scale] = d.configless_scale[i];
      const std::string field = "mlp.configless_scale." + std::string(to_string(dtype));
      // (as latency_scale: a correction of a bias, not a new latency; 1e308 made every latency inf)
      if (!(scale >= 0.5 && scale <= 2)) detail::fail_field(field, scale, "must be within 0.5-2 (a correction of the least prediction's bias)");
      for (std::size_t j = 0; j < i; ++j)
        if (d.configless_scale[j].first == dtype) detail::fail_field(field, scale, "is listed twice");
    }
  }

  // A second view (MlpDescription::second_view): beside a model for GEMMs without a config that
  // reads the search's pick, a model for the same data types that reads its tree's (and so holds no
  // second view of its own: the first rule, on the view when it was built).
  static void check_second_view(const MlpDescription& d, const MlpDescription& view) {
    if (!d.for_configless_gemm || d.config_pick != ConfigPick::search)
      detail::fail_field("mlp.second_view", "(a model)",
                         "is for models for GEMMs without a config that read the search's pick (config_pick \"search\") only");
    if (!view.for_configless_gemm || view.config_pick != ConfigPick::cublas_tree)
      detail::fail_field("mlp.second_view.config_pick", detail::quoted(to_string(view.config_pick)),
                         "must be \"cublas_tree\", in a model for GEMMs without a config (for_configless_gemm)");
    if (view.dtypes != d.dtypes)
      detail::fail_field("mlp.second_view.dtypes", "(" + std::to_string(view.dtypes.size()) + " types)",
                         "must list the data types the model lists, in its order");
    // (a prediction carries one protocol, the model's, which the sustained-load term reads)
    if (view.protocol != d.protocol)
      detail::fail_field("mlp.second_view.protocol", detail::quoted(to_string(view.protocol)),
                         "must be the model's, \"" + std::string(to_string(d.protocol)) + "\" (how the training rows were timed)");
  }

  // A network's layer chain: from the features to one output, each layer fitting the last.
  static void check_layers(const std::vector<MlpLayer>& layers, const std::string& name) {
    if (layers.empty()) throw InvalidInput(name + " must hold at least the output layer");
    Eigen::Index inputs = static_cast<Eigen::Index>(kFeatureCount);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const MlpLayer& layer = layers[i];
      const std::string field = name + "[" + std::to_string(i) + "]";
      if (layer.weights.cols() != inputs)
        detail::fail_field(field + ".weights columns", layer.weights.cols(),
                           "must equal the previous layer's width " + std::to_string(inputs));
      if (layer.weights.rows() != layer.bias.size())
        detail::fail_field(field + ".bias size", layer.bias.size(),
                           "must equal the weights' rows " + std::to_string(layer.weights.rows()));
      if (layer.weights.rows() < 1 || layer.weights.rows() > kMaxWidth)
        detail::fail_field(field + " width", layer.weights.rows(), "must be between 1 and " + std::to_string(kMaxWidth));
      if (!layer.weights.allFinite() || !layer.bias.allFinite()) throw InvalidInput(field + " holds a value that is not finite");
      inputs = layer.weights.rows();
    }
    if (inputs != 1) detail::fail_field(name == "mlp.layers" ? "mlp output layer width" : name + " output layer width", inputs,
                                        "must be 1 (the efficiency)");
  }

  MlpDescription description_;
  std::vector<std::vector<std::vector<float>>> packed_;
  std::vector<std::vector<std::vector<std::uint16_t>>> packed_half_;  // empty for a network kept at float precision
  Eigen::Index widest_ = 1;  // the most outputs of any layer
};

}  // namespace pipeweave
