#pragma once
// Predictor: demand (analytical) -> efficiency (learned) -> latency.
//
//   latency = bound_cycles / efficiency / clock
//
// bound_cycles is the busiest pipe's cycles, a physical lower bound; the model's sigmoid
// keeps efficiency in (0, 1], so no prediction falls below that bound. An op family with
// no trained model answers with the bound itself and says so (source = analytical_bound).
// A Predictor is immutable after construction: every method is const and thread-safe.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "pipeweave/demand.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/mlp.hpp"

namespace pipeweave {

enum class PredictionSource : std::uint8_t { trained_model, analytical_bound };

constexpr std::string_view to_string(PredictionSource source) {
  return source == PredictionSource::trained_model ? "trained_model" : "analytical_bound";
}

struct Prediction {
  double latency_us = 0;
  double efficiency = 1;      // lower bound / latency
  double lower_bound_us = 0;  // the busiest pipe alone
  Pipe bottleneck = Pipe::tensor;
  PredictionSource source = PredictionSource::analytical_bound;
  bool config_defaulted = false;  // the kernel came without its implementation config
};

class Predictor {
 public:
  // The models bundled with the library (data/models/, compiled in at build time).
  Predictor();
  // These models, at most one per op family (a later one replaces an earlier one).
  explicit Predictor(std::vector<Mlp> models) {
    for (Mlp& model : models) {
      const auto family = static_cast<std::size_t>(model.family());
      models_[family] = std::make_shared<const Mlp>(std::move(model));
    }
  }
  // No models: every prediction is the analytical bound.
  static Predictor analytical() { return Predictor(std::vector<Mlp>{}); }

  const Mlp* model(OpFamily family) const { return models_[static_cast<std::size_t>(family)].get(); }

  // Throws pipeweave::Error for an invalid GpuSpec, or a kernel this GPU cannot run
  // (a data type it has no tensor path for, a tile too large for its shared memory).
  Prediction predict(const Kernel& kernel, const GpuSpec& gpu) const {
    gpu.validate();
    const Demand demand = compute_demand(kernel, gpu);
    const Mlp* mlp = model(kernel.family());
    return finish(demand, gpu, mlp ? mlp->efficiency(features(demand, gpu)) : 1.0, mlp != nullptr);
  }

  // Many kernels on one GPU: one network pass per op family for the whole batch.
  std::vector<Prediction> predict(std::span<const Kernel> kernels, const GpuSpec& gpu) const {
    gpu.validate();
    std::vector<Demand> demands;
    demands.reserve(kernels.size());
    for (const Kernel& kernel : kernels) demands.push_back(compute_demand(kernel, gpu));
    std::vector<double> efficiency(kernels.size(), 1.0);
    std::vector<std::size_t> members;
    for (OpFamily family : kAllOpFamilies) {
      const Mlp* mlp = model(family);
      if (!mlp) continue;
      members.clear();
      for (std::size_t i = 0; i < kernels.size(); ++i)
        if (kernels[i].family() == family) members.push_back(i);
      if (members.empty()) continue;
      Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic> batch(
          static_cast<int>(kFeatureCount), static_cast<Eigen::Index>(members.size()));
      for (std::size_t j = 0; j < members.size(); ++j) {
        const Features row = features(demands[members[j]], gpu);
        batch.col(static_cast<Eigen::Index>(j)) =
            Eigen::Map<const Eigen::Matrix<float, static_cast<int>(kFeatureCount), 1>>(row.data());
      }
      const Eigen::VectorXd result = mlp->efficiency(batch);
      for (std::size_t j = 0; j < members.size(); ++j) efficiency[members[j]] = result(static_cast<Eigen::Index>(j));
    }
    std::vector<Prediction> predictions;
    predictions.reserve(kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i)
      predictions.push_back(finish(demands[i], gpu, efficiency[i], model(kernels[i].family()) != nullptr));
    return predictions;
  }

 private:
  static Prediction finish(const Demand& demand, const GpuSpec& gpu, double efficiency, bool trained) {
    Prediction prediction;
    const double us_per_cycle = 1e6 / gpu.clock_hz();
    prediction.lower_bound_us = demand.bound_cycles() * us_per_cycle;
    prediction.efficiency = efficiency;
    prediction.latency_us = prediction.lower_bound_us / efficiency;
    prediction.bottleneck = demand.bottleneck();
    prediction.source = trained ? PredictionSource::trained_model : PredictionSource::analytical_bound;
    prediction.config_defaulted = demand.config_defaulted;
    return prediction;
  }

  std::array<std::shared_ptr<const Mlp>, kOpFamilyCount> models_{};
};

}  // namespace pipeweave
