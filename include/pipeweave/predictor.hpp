#pragma once
// Predictor: demand (analytical) -> efficiency (learned) -> latency.
//
//   latency = bound_cycles / efficiency / clock
//
// bound_cycles is the busiest pipe's cycles, a physical lower bound; the model's sigmoid
// keeps efficiency in (0, 1], so no prediction falls below that bound. An op family with
// no trained model answers with the bound itself and says so (source = analytical_bound).
// A GEMM that comes without its config runs the best predicted of the configs a GEMM library
// would consider (gemm_candidates; exactly at a grid of m, from shortlists between: see
// best_gemm_config; or, where the config-less model for its data type reads another pick
// (MlpDescription::config_pick), the config its tree expects cuBLAS to run or the analytical
// default config: config_without_search). Its latency: with a config-less GEMM model
// (Mlp::for_configless_gemm, bundled, one per data type), that model's answer for the chosen config (where
// it holds a second view, MlpDescription::second_view, and the view applies: the geometric mean of that
// answer and the view's at the config its tree picks); else the
// chosen config's prediction times the GEMM model's configless_scale (the least of a few
// hundred predictions is biased low; see Mlp::configless_scale).
// A Predictor is immutable after construction: every method is const and thread-safe (the
// one shared state, the memos of those choices, is locked).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeweave/demand.hpp"
#include "pipeweave/detail/gemm_config_cache.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/mlp.hpp"

namespace pipeweave {

// trained_model: the op family's network; analytical_bound: no network, the bound itself;
// pipe_efficiency: the kernel lies outside what the network was trained on (a GPU architecture
// or compute/memory balance it never saw, or inputs beyond its training range), so the efficiency is the one its training
// rows measured for the kernel's bottleneck pipe at its size (Mlp::pipe_efficiency);
// misaligned_strides: a 16-bit GEMM without a config on Hopper whose strides TMA cannot take, so
// cuBLAS runs a pre-Hopper kernel: the rates such kernels were measured at (misaligned_gemm_us).
enum class PredictionSource : std::uint8_t { trained_model, analytical_bound, pipe_efficiency, misaligned_strides };

constexpr std::string_view to_string(PredictionSource source) {
  switch (source) {
    case PredictionSource::trained_model: return "trained_model";
    case PredictionSource::analytical_bound: return "analytical_bound";
    case PredictionSource::pipe_efficiency: return "pipe_efficiency";
    case PredictionSource::misaligned_strides: return "misaligned_strides";
  }
  return "?";
}

struct Prediction {
  double latency_us = 0;
  double efficiency = 1;      // lower bound / latency
  double lower_bound_us = 0;  // the busiest pipe alone
  // The tensor pipe's work over the whole GPU at the spec's rate (Demand::gpu_cycles), which sets
  // how busy a serving iteration keeps the tensor cores (SustainedLoad).
  double tensor_us = 0;
  Pipe bottleneck = Pipe::tensor;
  PredictionSource source = PredictionSource::analytical_bound;
  // How the rows of the network that answered were timed (MlpDescription::protocol; the bound
  // alone: rested, as it carries no clock of its own). A serving run's sustained-load slowdown
  // takes account of it (SustainedLoad).
  LabelProtocol protocol = LabelProtocol::rested;
  bool config_defaulted = false;  // the kernel came without its implementation config
  // The network was not trained on this GPU's architecture, or the kernel's inputs fall outside
  // its training range: the answer is source pipe_efficiency (or the network's own, where the
  // model has no such table), and less sure than the network's held-out figures.
  bool extrapolated = false;
};

// One candidate of Predictor::rank: where it was in the list given, and its prediction.
struct RankedCandidate {
  std::size_t index = 0;
  Prediction prediction;
};

class Predictor {
 public:
  // The models bundled with the library (data/models/, compiled in at build time).
  Predictor();
  // These models, at most one per op family and one for GEMMs without a config per data type (a
  // later one replaces an earlier one in its place; among these, for a data type, a config-less
  // model that lists it (Mlp::answers_for) takes the place before one that lists no type, in any
  // order). with() puts its models over these: there a config-less model for every type replaces
  // the ones for each.
  explicit Predictor(std::vector<Mlp> models) { place(std::move(models)); }
  // No models: every prediction is the analytical bound.
  static Predictor analytical() { return Predictor(std::vector<Mlp>{}); }
  // This predictor's models with `models` in their places (as the constructor places them);
  // the configs chosen for GEMMs without one are chosen afresh.
  Predictor with(std::vector<Mlp> models) const {
    Predictor copy = *this;
    copy.gemm_configs_ = std::make_shared<detail::GemmConfigCache>();
    copy.gemm_shortlists_ = std::make_shared<detail::GemmShortlistCache>();
    copy.place(std::move(models));
    return copy;
  }

  const Mlp* model(OpFamily family) const { return models_[static_cast<std::size_t>(family)].get(); }
  // The model for GEMMs of this data type given without their config (Mlp::for_configless_gemm),
  // if any. It is used beside a GEMM model, which picks the config whose demand it reads; one that
  // reads another pick (its tree's, or the analytical default config's: MlpDescription::config_pick)
  // is used with or without one.
  const Mlp* configless_gemm_model(DType dtype) const { return configless_gemm_[dtype_index(dtype)].get(); }

  // Throws pipeweave::InvalidInput for an invalid GpuSpec, or a kernel this GPU cannot run
  // (a data type it has no tensor path for, a tile too large for its shared memory).
  Prediction predict(const Kernel& kernel, const GpuSpec& gpu) const {
    gpu.validate();
    const Demand demand = resolved_demand(kernel, gpu);
    const auto [mlp, scale] = network_for(kernel);
    if (!mlp) return finish(demand, gpu, 1.0, nullptr, 1.0);
    const Features row = features(demand, gpu);
    if (!covered(*mlp, gpu, row))
      return with_misaligned_strides(kernel, gpu, finish(demand, gpu, 0, mlp, scale, /*outside=*/true, &row));
    Prediction prediction = finish(demand, gpu, mlp->efficiency(row), mlp, scale);
    if (const std::optional<ViewInput> view = second_view_input(kernel, *mlp, gpu))
      prediction = mean_of_views(prediction, view->demand, gpu, view->network->efficiency(view->row), *view->network);
    return with_misaligned_strides(kernel, gpu, prediction);
  }

  // Many kernels on one GPU: one pass per network (one per op family, one for GEMMs without a
  // config) for the whole batch.
  std::vector<Prediction> predict(std::span<const Kernel> kernels, const GpuSpec& gpu) const {
    gpu.validate();
    std::vector<Demand> demands;
    demands.reserve(kernels.size());
    for (const Kernel& kernel : kernels) demands.push_back(resolved_demand(kernel, gpu));
    std::vector<double> efficiency(kernels.size(), 1.0);
    std::vector<std::pair<const Mlp*, double>> networks;
    networks.reserve(kernels.size());
    for (const Kernel& kernel : kernels) networks.push_back(network_for(kernel));
    // Each kernel's network inputs, once: for the coverage check, the batch and an answer off its ground.
    std::vector<Features> rows(kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i)
      if (networks[i].first) rows[i] = features(demands[i], gpu);
    std::vector<std::size_t> members;
    std::vector<bool> outside(kernels.size(), false);
    std::array<const Mlp*, kOpFamilyCount + kAllDTypes.size()> all_networks{};
    for (std::size_t f = 0; f < kOpFamilyCount; ++f) all_networks[f] = models_[f].get();
    for (std::size_t t = 0; t < kAllDTypes.size(); ++t) all_networks[kOpFamilyCount + t] = configless_gemm_[t].get();
    for (std::size_t n = 0; n < all_networks.size(); ++n) {
      const Mlp* mlp = all_networks[n];
      // A config-less model that answers for several data types holds several places: once.
      if (!mlp || std::find(all_networks.begin(), all_networks.begin() + static_cast<std::ptrdiff_t>(n), mlp) !=
                      all_networks.begin() + static_cast<std::ptrdiff_t>(n))
        continue;
      members.clear();
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        if (networks[i].first != mlp) continue;
        if (covered(*mlp, gpu, rows[i])) members.push_back(i);
        else outside[i] = true;
      }
      batch_efficiency(*mlp, rows, members, efficiency);
    }
    // The second views (MlpDescription::second_view) of the config-less models that answered: the
    // kernels one answers too (ascending), their demand and inputs at its config; a pass per view.
    std::vector<std::size_t> viewed;
    std::vector<Demand> view_demands;
    std::vector<Features> view_rows;
    std::vector<const Mlp*> views;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (!networks[i].first || outside[i]) continue;
      std::optional<ViewInput> view = second_view_input(kernels[i], *networks[i].first, gpu);
      if (!view) continue;
      if (viewed.empty()) {  // room for the rest at once, only in a batch a view answers
        viewed.reserve(kernels.size() - i);
        view_demands.reserve(kernels.size() - i);
        view_rows.reserve(kernels.size() - i);
      }
      viewed.push_back(i);
      view_demands.push_back(std::move(view->demand));
      view_rows.push_back(view->row);
      if (std::find(views.begin(), views.end(), view->network) == views.end()) views.push_back(view->network);
    }
    std::vector<double> view_efficiency(viewed.size());
    for (const Mlp* view : views) {
      members.clear();
      for (std::size_t j = 0; j < viewed.size(); ++j)
        if (networks[viewed[j]].first->description().second_view.get() == view) members.push_back(j);
      batch_efficiency(*view, view_rows, members, view_efficiency);
    }
    std::vector<Prediction> predictions;
    predictions.reserve(kernels.size());
    std::size_t next_viewed = 0;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      Prediction prediction = finish(demands[i], gpu, efficiency[i], networks[i].first, networks[i].second, outside[i], &rows[i]);
      if (next_viewed < viewed.size() && viewed[next_viewed] == i) {
        prediction = mean_of_views(prediction, view_demands[next_viewed], gpu, view_efficiency[next_viewed],
                                   *networks[i].first->description().second_view);
        ++next_viewed;
      }
      predictions.push_back(with_misaligned_strides(kernels[i], gpu, prediction));
    }
    return predictions;
  }

  // The candidates ordered by predicted latency, fastest first (ties keep their order):
  // the autotuner's question. One network pass per network for the whole list.
  std::vector<RankedCandidate> rank(std::span<const Kernel> candidates, const GpuSpec& gpu) const {
    const std::vector<Prediction> predictions = predict(candidates, gpu);
    std::vector<RankedCandidate> ranked;
    ranked.reserve(predictions.size());
    for (std::size_t i = 0; i < predictions.size(); ++i) ranked.push_back({i, predictions[i]});
    std::stable_sort(ranked.begin(), ranked.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
      return a.prediction.latency_us < b.prediction.latency_us;
    });
    return ranked;
  }

  // The config this predictor expects to run fastest for a GEMM given only its shape, remembered
  // per GPU and shape (predict() answers with the config-less GEMM model on it, or its
  // prediction times the model's configless_scale; where the config-less model reads another
  // pick, predict() and configured() take config_without_search() instead, and this still answers
  // the search). With no GEMM model there is nothing to
  // rank by (the bound favours configs that real kernels run slowly): the analytical
  // default_config. Throws pipeweave::InvalidInput when the GPU cannot run the GEMM.
  //
  // At m up to kConfigGridM and at its multiples, the best predicted of all gemm_candidates()
  // (full_search_gemm_config). Between two such m, the best predicted at m of the
  // kConfigShortlist best configs of each (those that are candidates at m; on a tie, the one
  // below's first): a serving scheduler
  // meets a new token count almost every iteration, and this scores about ten candidates where
  // the full search scores up to a few hundred, after the two grid points' searches (remembered
  // for every m between them). Over every m from 1 to 8,192 of eight layers on the H100 the
  // answer differs from the full search's at 6 of 65,536 shapes, by at most 0.69% of predicted
  // latency (the H200: 5, 1.16%; the H20: none)
  // (benchmarks/gemm_search_study, docs/experiments/config-search.md). A fixed grid keeps the
  // answer for a shape independent of what was asked before.
  GemmConfig best_gemm_config(const Gemm& gemm, const GpuSpec& gpu) const {
    const Mlp* mlp = model(OpFamily::gemm);
    // Nothing to rank by without a network, nor with one that never saw this architecture (its
    // configs are another family's). On another balance the network still orders a shape's
    // configs better than the default one: trained on the H20 and H800 without configs, the
    // H20's held-out shapes came out 2.9% off with its picks, 6.3% with the default configs.
    if (!mlp || !mlp->covers_compute_capability(compute_capability(gpu))) return default_config(gemm, gpu);
    const std::uint64_t spec = detail::SpecFingerprint(gpu).value();
    const detail::GemmConfigCache::Key key{spec, gemm.m, gemm.n, gemm.k, gemm.dtype};
    if (auto known = gemm_configs_->find(key)) return *known;
    const bool on_grid = gemm.m <= kConfigGridM || gemm.m % kConfigGridM == 0 ||
                         gemm.m > std::numeric_limits<std::int64_t>::max() - kConfigGridM;
    std::vector<GemmConfig> proposed;  // off the grid: the grid points' shortlists, as far as they are candidates here
    if (!on_grid) {
      Gemm grid_point = gemm;
      for (const std::int64_t m : {gemm.m / kConfigGridM * kConfigGridM, (gemm.m / kConfigGridM + 1) * kConfigGridM}) {
        grid_point.m = m;
        for (const GemmConfig& config : shortlist(grid_point, gpu, *mlp, spec))
          if (std::find(proposed.begin(), proposed.end(), config) == proposed.end() && is_gemm_candidate(config, gemm, gpu))
            proposed.push_back(config);
      }
    }
    const std::vector<GemmConfig> picked = on_grid             ? shortlist(gemm, gpu, *mlp, spec)
                                           : proposed.empty() ? fastest_configs(gemm, gpu, *mlp, gemm_candidates(gemm, gpu), 1)
                                                              : fastest_configs(gemm, gpu, *mlp, proposed, 1);
    GemmConfig best;
    if (!picked.empty()) {
      best = picked.front();
    } else {
      const std::vector<GemmConfig> candidates = gemm_candidates(gemm, gpu);
      if (candidates.empty()) return default_config(gemm, gpu);  // no tile fits: demand() names why
      best = candidates.front();  // every latency NaN (a broken model): predict() names why
    }
    gemm_configs_->insert(key, best);
    return best;
  }

  // The best predicted of every gemm_candidates() for this shape, not remembered: what
  // best_gemm_config() answers at its grid of m, for comparing the two elsewhere.
  GemmConfig full_search_gemm_config(const Gemm& gemm, const GpuSpec& gpu) const {
    const Mlp* mlp = model(OpFamily::gemm);
    if (!mlp || !mlp->covers_compute_capability(compute_capability(gpu))) return default_config(gemm, gpu);
    const std::vector<GemmConfig> candidates = gemm_candidates(gemm, gpu);
    if (candidates.empty()) return default_config(gemm, gpu);
    const std::vector<GemmConfig> picked = fastest_configs(gemm, gpu, *mlp, candidates, 1);
    return picked.empty() ? candidates.front() : picked.front();
  }

  // The spacing of m at which best_gemm_config() searches every candidate, and how many of the
  // best there it keeps to propose for the m between.
  static constexpr std::int64_t kConfigGridM = 16;
  static constexpr std::size_t kConfigShortlist = 8;

  // The kernel as predict() runs it: a GEMM without a config gets best_gemm_config() (or
  // config_without_search() where picks_without_search()); any
  // other kernel is returned as given (its family's default config applies inside the
  // demand model, and describe_config() names it). For showing what was predicted.
  Kernel configured(const Kernel& kernel, const GpuSpec& gpu) const {
    const Gemm* gemm = kernel.get_if<Gemm>();
    if (!gemm || gemm->config) return kernel;
    Gemm tuned = *gemm;
    if (picks_without_search(*gemm)) tuned.config = config_without_search(*gemm, gpu);
    else if (model(OpFamily::gemm)) tuned.config = best_gemm_config(*gemm, gpu);
    else return kernel;
    return tuned;
  }

  // Whether a GEMM given without its config is answered at a config no search picks: its
  // config-less model reads the analytical default config's demand or its tree's
  // (MlpDescription::config_pick), with or without a GEMM model beside it.
  bool picks_without_search(const Gemm& gemm) const {
    const Mlp* configless = configless_gemm_model(gemm.dtype);
    return configless && configless->description().config_pick != ConfigPick::search;
  }

  // That config (where picks_without_search): the tree's on an architecture its network learnt
  // (Hopper and later), where the GPU can launch it (detail::GemmLaunch::fits, the rule demand()
  // refuses by: its cluster within the SMs, its stages within an SM's shared memory; the tree learnt
  // an H100's and an H200's kernels, which a GPU of that architecture with fewer SMs or less shared
  // memory may not run); the analytical default config otherwise.
  GemmConfig config_without_search(const Gemm& gemm, const GpuSpec& gpu) const {
    if (const std::optional<GemmConfig> picked = tree_config(*configless_gemm_model(gemm.dtype), gemm, gpu)) return *picked;
    return default_config(gemm, gpu);
  }

 private:
  // The network's efficiency for each of `members` (indices into `rows`), in one pass, into `efficiency`.
  static void batch_efficiency(const Mlp& mlp, const std::vector<Features>& rows, const std::vector<std::size_t>& members,
                               std::vector<double>& efficiency) {
    if (members.empty()) return;
    Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic> batch(static_cast<int>(kFeatureCount),
                                                                                 static_cast<Eigen::Index>(members.size()));
    for (std::size_t j = 0; j < members.size(); ++j)
      batch.col(static_cast<Eigen::Index>(j)) = Eigen::Map<const Eigen::Matrix<float, static_cast<int>(kFeatureCount), 1>>(rows[members[j]].data());
    const Eigen::VectorXd result = mlp.efficiency(batch);
    for (std::size_t j = 0; j < members.size(); ++j) efficiency[members[j]] = result(static_cast<Eigen::Index>(j));
  }

  // The config a model's tree picks for this GEMM where the tree applies (config_pick cublas_tree;
  // an architecture its network learnt, Hopper and later; a config the GPU can launch): the rule
  // config_without_search and a second view share. Nothing elsewhere.
  static std::optional<GemmConfig> tree_config(const Mlp& model, const Gemm& gemm, const GpuSpec& gpu) {
    const MlpDescription& d = model.description();
    if (d.config_pick != ConfigPick::cublas_tree || !detail::hopper_or_later(gpu) ||
        !model.covers_compute_capability(compute_capability(gpu)))
      return std::nullopt;
    const GemmConfig picked = d.config_tree->pick(gemm, gpu);
    if (!detail::gemm_launch(picked, gemm.dtype).fits(gpu)) return std::nullopt;
    return picked;
  }

  // A second view's network and its demand and inputs at the config its tree picks.
  struct ViewInput {
    const Mlp* network;
    Demand demand;
    Features row;
  };

  // Where the config-less model `answering` (network_for's, answering from its network) has a second
  // view (MlpDescription::second_view) that applies to this GEMM without a config: at the config the
  // view's tree picks (tree_config), inside the view's training ground. Nothing otherwise, nor for
  // strides TMA cannot take (with_misaligned_strides answers those from measured rates, over the
  // model's own bound). Single calls and batches ask the same.
  static std::optional<ViewInput> second_view_input(const Kernel& kernel, const Mlp& answering, const GpuSpec& gpu) {
    const Gemm* gemm = kernel.get_if<Gemm>();
    const Mlp* view = answering.description().second_view.get();
    if (!view || !gemm || gemm->config) return std::nullopt;
    Gemm picked = *gemm;
    picked.config = tree_config(*view, *gemm, gpu);
    if (!picked.config || misaligned_gemm_us(*gemm, gpu).has_value()) return std::nullopt;
    ViewInput input{view, pipeweave::demand(picked, gpu), {}};
    input.demand.config_defaulted = true;
    input.row = features(input.demand, gpu);
    if (!covered(*view, gpu, input.row)) return std::nullopt;
    return input;
  }

  // The answer of a model and its second view (`view`, whose network answered `view_efficiency` at
  // `view_demand`): the geometric mean of their latencies, the lesser of their bounds (each config's
  // bound is a floor for that config; the mean of two latencies at or above their bounds is at or
  // above the lesser); what else it says (bottleneck, tensor work, source) the model's, whose config
  // configured() names.
  static Prediction mean_of_views(Prediction model, const Demand& view_demand, const GpuSpec& gpu, double view_efficiency,
                                  const Mlp& view) {
    const Prediction answer = finish(view_demand, gpu, view_efficiency, &view, view.latency_scale(), false, nullptr,
                                     "model's second view (mlp.second_view)");
    model.latency_us = std::sqrt(model.latency_us * answer.latency_us);
    model.lower_bound_us = std::min(model.lower_bound_us, answer.lower_bound_us);
    model.efficiency = model.lower_bound_us / model.latency_us;
    return model;
  }

  // A grid point's kConfigShortlist best configs, fastest first, searched once per GPU and shape.
  std::vector<GemmConfig> shortlist(const Gemm& gemm, const GpuSpec& gpu, const Mlp& mlp, std::uint64_t spec) const {
    const detail::GemmShortlistCache::Key key{spec, gemm.m, gemm.n, gemm.k, gemm.dtype};
    if (auto known = gemm_shortlists_->find(key)) return *std::move(known);
    std::vector<GemmConfig> best = fastest_configs(gemm, gpu, mlp, gemm_candidates(gemm, gpu), kConfigShortlist);
    gemm_shortlists_->insert(key, best);
    return best;
  }

  // The `keep` lowest predicted latencies of `candidates` for this shape, fastest first (on a
  // tie, the earlier candidate); NaN latencies are dropped, so a broken model's: empty.
  // Ordered by the network alone, also where a candidate's inputs lie outside its training
  // range and predict() would answer it from the pipe table: the table knows a kernel's
  // bottleneck and size, not its config, so it cannot tell a shape's configs apart, while the
  // network's order carries (best_gemm_config's comment). Scoring such candidates by the table instead
  // made a configless model of the published fp8 split (its rows read as shapes, as they were
  // then) 3.78% off where this gave 2.84% (docs/experiments/transfer.md, "Tried and withdrawn"). So rank, which lists each candidate's own prediction, can put
  // first a config other than this one where the candidates lie off the network's ground.
  // The network's efficiency is at most 1, so a candidate's latency is at least its bound: in
  // order of bound, the candidates whose bound is past the keep-th latency found cannot be among
  // the best and are never scored. The same answer as scoring all of them, for a fraction of the
  // network passes; and only the candidates scored get their network inputs (a log1p per figure).
  static std::vector<GemmConfig> fastest_configs(const Gemm& gemm, const GpuSpec& gpu, const Mlp& mlp,
                                                 const std::vector<GemmConfig>& candidates, std::size_t keep) {
    std::vector<Demand> demands;  // reserved, not sized: sizing zeroes some hundred bytes a candidate first
    demands.reserve(candidates.size());
    std::vector<double> bounds(candidates.size());
    std::vector<std::size_t> order(candidates.size());
    Gemm tuned = gemm;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      tuned.config = candidates[i];
      demands.push_back(pipeweave::demand(tuned, gpu));
      bounds[i] = demands[i].bound_cycles();
      order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bounds[a] < bounds[b]; });
    constexpr std::size_t kChunk = 16;
    std::vector<std::pair<double, std::size_t>> best;  // (latency, candidate), fastest first, at most `keep`
    auto threshold = [&] { return best.size() < keep ? std::numeric_limits<double>::infinity() : best.back().first; };
    Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic> batch;
    for (std::size_t start = 0; start < order.size() && !(bounds[order[start]] > threshold()); start += kChunk) {
      const std::size_t end = std::min(order.size(), start + kChunk);
      batch.resize(static_cast<int>(kFeatureCount), static_cast<Eigen::Index>(end - start));
      for (std::size_t j = start; j < end; ++j) {
        const Features row = features(demands[order[j]], gpu);
        batch.col(static_cast<Eigen::Index>(j - start)) = Eigen::Map<const Eigen::Matrix<float, static_cast<int>(kFeatureCount), 1>>(row.data());
      }
      const Eigen::VectorXd efficiency = mlp.efficiency(batch);
      for (std::size_t j = start; j < end; ++j) {
        const std::pair<double, std::size_t> scored{bounds[order[j]] / efficiency(static_cast<Eigen::Index>(j - start)), order[j]};
        if (!(scored.first <= threshold())) continue;  // NaN too
        best.insert(std::upper_bound(best.begin(), best.end(), scored), scored);
        if (best.size() > keep) best.pop_back();
      }
    }
    std::vector<GemmConfig> configs;
    configs.reserve(best.size());
    for (const auto& [latency, index] : best) configs.push_back(candidates[index]);
    return configs;
  }

  // A GEMM without a config runs the best predicted one; every other kernel as given.
  Demand resolved_demand(const Kernel& kernel, const GpuSpec& gpu) const {
    const Gemm* gemm = kernel.get_if<Gemm>();
    if (!gemm || gemm->config || (!model(OpFamily::gemm) && !picks_without_search(*gemm))) return compute_demand(kernel, gpu);
    Demand demand = compute_demand(configured(kernel, gpu), gpu);
    demand.config_defaulted = true;
    return demand;
  }

  // The network that answers for a kernel (null: none, the bound answers) and the factor on
  // its latency. A GEMM whose config the predictor chooses: the config-less GEMM model if there
  // is one, else the GEMM model times its correction for choosing the least of many predictions.
  // Every network's answer also carries its own latency_scale.
  std::pair<const Mlp*, double> network_for(const Kernel& kernel) const {
    const Mlp* mlp = model(kernel.family());
    const Gemm* gemm = kernel.get_if<Gemm>();
    if (!gemm || gemm->config) return {mlp, mlp ? mlp->latency_scale() : 1.0};
    if (picks_without_search(*gemm)) {
      const Mlp* configless = configless_gemm_model(gemm->dtype);
      return {configless, configless->latency_scale()};
    }
    if (!mlp) return {nullptr, 1.0};
    if (const Mlp* configless = configless_gemm_model(gemm->dtype)) return {configless, configless->latency_scale()};
    return {mlp, mlp->configless_scale(gemm->dtype) * mlp->latency_scale()};
  }

  void place(std::vector<Mlp> models) {
    std::array<bool, kAllDTypes.size()> listed_here{};  // a data type a model of these lists by name
    for (Mlp& model : models) {
      auto shared = std::make_shared<const Mlp>(std::move(model));
      if (shared->description().for_configless_gemm) {
        const bool listing = !shared->description().dtypes.empty();
        for (DType dtype : kAllDTypes) {
          const std::size_t slot = dtype_index(dtype);
          if (!shared->answers_for(dtype) || (!listing && listed_here[slot])) continue;
          configless_gemm_[slot] = shared;
          listed_here[slot] = listed_here[slot] || listing;
        }
      } else
        models_[static_cast<std::size_t>(shared->family())] = std::move(shared);
    }
  }

  static std::size_t dtype_index(DType dtype) { return static_cast<std::size_t>(dtype); }
  static_assert(static_cast<std::size_t>(DType::int8) + 1 == kAllDTypes.size(), "DType values index kAllDTypes");
  static int compute_capability(const GpuSpec& gpu) { return gpu.compute_capability_major * 10 + gpu.compute_capability_minor; }
  // Whether a network's training covers this GPU's architecture and this kernel's inputs.
  static bool covered(const Mlp& mlp, const GpuSpec& gpu, const Features& row) {
    return mlp.covers_compute_capability(compute_capability(gpu)) && mlp.covers_balance(gpu.tensor_flops_per_dram_byte()) &&
           mlp.covers(row);
  }

  // The least efficiency a network's answer may be: a kernel a million times slower than its floor.
  static constexpr double kLeastEfficiency = 1e-6;
  // An efficiency as an error shows it (std::to_string printed 8.8e-197 as 0.000000).
  static std::string fmt_efficiency(double efficiency) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", efficiency);
    return text;
  }

  // `outside`: the kernel lies beyond what `mlp` was trained on; its efficiency is the network's
  // (`row` recomputed) where the model has no pipe table, else the table's. `whose`: what `mlp` is,
  // for the error a broken network raises (a model's second view is named as one).
  static Prediction finish(const Demand& demand, const GpuSpec& gpu, double efficiency, const Mlp* mlp, double scale,
                           bool outside = false, const Features* row = nullptr, std::string_view whose = "model") {
    Prediction prediction;
    const double us_per_cycle = 1e6 / gpu.clock_hz();
    prediction.lower_bound_us = demand.bound_cycles() * us_per_cycle;
    prediction.bottleneck = demand.bottleneck();
    prediction.tensor_us = at(demand.gpu_cycles, Pipe::tensor) / gpu.clock_hz() * 1e6;
    prediction.source = mlp ? PredictionSource::trained_model : PredictionSource::analytical_bound;
    if (mlp) prediction.protocol = mlp->description().protocol;
    if (outside) {
      prediction.extrapolated = true;
      if (mlp->has_pipe_efficiency()) {
        efficiency = mlp->pipe_efficiency(prediction.bottleneck, prediction.lower_bound_us);
        scale = 1.0;
        prediction.source = PredictionSource::pipe_efficiency;
      } else {
        efficiency = mlp->efficiency(*row);
      }
    }
    // A broken model file (weights or input scaling that give a NaN, or an efficiency that
    // underflows toward 0) is an error, never a silent answer at the bound or a latency of 10^198
    // us: no kernel runs a million times slower than its busiest pipe's floor.
    if (mlp && !(efficiency >= kLeastEfficiency && std::isfinite(efficiency / scale)))
      throw InvalidInput("the " + std::string(to_string(mlp->family())) + " " + std::string(whose) + " answered an efficiency of " +
                         fmt_efficiency(efficiency) +
                         " for a kernel (at least 1e-6 is a kernel's): its weights or input scaling are broken (retrain or replace it), or the "
                         "kernel's inputs are not finite");
    prediction.efficiency = std::min(1.0, efficiency / scale);  // a scale below 1 leaves the bound a floor
    prediction.latency_us = prediction.lower_bound_us / prediction.efficiency;
    prediction.config_defaulted = demand.config_defaulted;
    return prediction;
  }

  // A 16-bit GEMM without a config that a network answered, on Hopper, with strides TMA cannot
  // take: the networks never met the pre-Hopper kernel cuBLAS runs for it (they take every GEMM for
  // aligned, and answered the measured ones 78.5% too fast), so the rates that kernel was measured
  // at answer instead (misaligned_gemm_us). The bound stays the demand's, a floor.
  static Prediction with_misaligned_strides(const Kernel& kernel, const GpuSpec& gpu, Prediction prediction) {
    const Gemm* gemm = kernel.get_if<Gemm>();
    if (!gemm || prediction.source == PredictionSource::analytical_bound) return prediction;
    const std::optional<double> us = misaligned_gemm_us(*gemm, gpu);
    if (!us) return prediction;
    prediction.latency_us = std::max(*us, prediction.lower_bound_us);
    prediction.efficiency = prediction.lower_bound_us / prediction.latency_us;
    prediction.source = PredictionSource::misaligned_strides;
    prediction.protocol = LabelProtocol::served;  // the rates come from served rows
    return prediction;  // extrapolated as the network's coverage said: the rates are the H100's and H200's
  }

  std::array<std::shared_ptr<const Mlp>, kOpFamilyCount> models_{};
  // Per data type (index: DType): the config-less GEMM model.
  std::array<std::shared_ptr<const Mlp>, kAllDTypes.size()> configless_gemm_{};
  // Shared by copies: they hold the same models, so the same choices.
  std::shared_ptr<detail::GemmConfigCache> gemm_configs_ = std::make_shared<detail::GemmConfigCache>();
  std::shared_ptr<detail::GemmShortlistCache> gemm_shortlists_ = std::make_shared<detail::GemmShortlistCache>();
};

}  // namespace pipeweave
