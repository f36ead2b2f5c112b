// The dense layer's kernels (src/simd/): each instruction set's against a plain double-precision
// reference, and the one chosen at run time against the baseline's, over the layer shapes the
// networks have and the awkward ones (rows not a multiple of 8, one column, column counts not a
// multiple of the kernel's block of 2).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "pipeweave/detail/dense.hpp"
#include "pipeweave/pipeweave.hpp"

using namespace pipeweave;

namespace {

struct Layer {
  int rows, inputs, columns;
  std::vector<float> weights, bias, x;
};

Layer random_layer(int rows, int inputs, int columns, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Layer layer{rows, inputs, columns, {}, {}, {}};
  for (int i = 0; i < rows * inputs; ++i) layer.weights.push_back(normal(random) / std::sqrt(static_cast<float>(inputs)));
  for (int i = 0; i < rows; ++i) layer.bias.push_back(normal(random));
  for (int i = 0; i < inputs * columns; ++i) layer.x.push_back(normal(random));
  return layer;
}

std::vector<double> reference(const Layer& layer, bool relu) {
  std::vector<double> y(static_cast<std::size_t>(layer.rows * layer.columns));
  for (int c = 0; c < layer.columns; ++c)
    for (int r = 0; r < layer.rows; ++r) {
      double sum = layer.bias[static_cast<std::size_t>(r)];
      for (int j = 0; j < layer.inputs; ++j)
        sum += static_cast<double>(layer.weights[static_cast<std::size_t>(j * layer.rows + r)]) * layer.x[static_cast<std::size_t>(c * layer.inputs + j)];
      y[static_cast<std::size_t>(c * layer.rows + r)] = relu ? std::max(sum, 0.0) : sum;
    }
  return y;
}

std::vector<float> run(detail::DenseLayerFn kernel, const Layer& layer, bool relu) {
  std::vector<float> y(static_cast<std::size_t>(layer.rows * layer.columns), -7.0f);
  const std::vector<float> packed = detail::pack_dense_weights(layer.weights.data(), layer.rows, layer.inputs);
  kernel(packed.data(), layer.bias.data(), layer.x.data(), y.data(), layer.rows, layer.inputs, layer.columns, relu);
  return y;
}

const int kShapes[][3] = {{256, 30, 1}, {128, 256, 1}, {64, 128, 1}, {1, 64, 1}, {256, 30, 64},  {128, 256, 37},
                          {1, 64, 5},   {40, 17, 2},   {7, 3, 4},    {33, 9, 3}, {8, 1, 1},   {96, 200, 100}};

}  // namespace

TEST_CASE("dense layer: every kernel this CPU runs matches a double-precision reference", "[dense]") {
  std::vector<std::pair<std::string, detail::DenseLayerFn>> kernels{{"baseline", detail::dense_layer_baseline()}};
  if (detail::DenseLayerFn avx2 = detail::dense_layer_avx2_fma()) kernels.emplace_back("avx2_fma", avx2);
  unsigned seed = 1;
  for (const auto& [name, kernel] : kernels)
    for (const auto& shape : kShapes)
      for (bool relu : {false, true}) {
        const Layer layer = random_layer(shape[0], shape[1], shape[2], seed++);
        const std::vector<double> expected = reference(layer, relu);
        const std::vector<float> got = run(kernel, layer, relu);
        INFO(name << " rows " << shape[0] << " inputs " << shape[1] << " columns " << shape[2] << " relu " << relu);
        for (std::size_t i = 0; i < got.size(); ++i) {
          REQUIRE(got[i] == Approx(expected[i]).margin(1e-4).epsilon(1e-4));
          if (relu) REQUIRE(got[i] >= 0.0f);
        }
      }
}

TEST_CASE("dense layer: the run-time choice names itself and answers as the baseline does, to rounding", "[dense]") {
  const std::string isa(detail::dense_layer_isa());
  CHECK((isa == "baseline" || isa == "avx2_fma"));
  CHECK((isa == "avx2_fma") == (detail::dense_layer() == detail::dense_layer_avx2_fma() && detail::dense_layer_avx2_fma() != nullptr));
  if (std::getenv("PIPEWEAVE_SIMD") && std::string(std::getenv("PIPEWEAVE_SIMD")) == "baseline") CHECK(isa == "baseline");
  const Layer layer = random_layer(256, 30, 9, 99);
  const std::vector<float> chosen = run(detail::dense_layer(), layer, true), baseline = run(detail::dense_layer_baseline(), layer, true);
  for (std::size_t i = 0; i < chosen.size(); ++i) REQUIRE(chosen[i] == Approx(baseline[i]).margin(1e-5).epsilon(1e-5));
}

TEST_CASE("dense layer: a NaN input stays a NaN through the ReLU (never a silent 0)", "[dense]") {
  Layer layer = random_layer(16, 4, 1, 5);
  layer.x[2] = std::nanf("");
  for (detail::DenseLayerFn kernel : {detail::dense_layer_baseline(), detail::dense_layer()}) {
    const std::vector<float> y = run(kernel, layer, true);
    for (float value : y) CHECK(std::isnan(value));
  }
}

TEST_CASE("dense layer: the bundled GEMM model answers a batch bit for bit as one kernel at a time",
          "[dense][predictor]") {
  const Predictor predictor;
  const Mlp& gemm = *predictor.model(OpFamily::gemm);
  const GpuSpec& h100 = find_gpu("H100-SXM");
  std::vector<Features> rows;
  for (std::int64_t m : {1, 64, 1000, 8192})
    for (std::int64_t n : {1024, 4096, 14336}) {
      Gemm g;
      g.m = m, g.n = n, g.k = 4096;
      rows.push_back(features(compute_demand(predictor.configured(g, h100), h100), h100));
    }
  Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic> batch(static_cast<int>(kFeatureCount), static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    batch.col(static_cast<Eigen::Index>(i)) = Eigen::Map<const Eigen::Matrix<float, static_cast<int>(kFeatureCount), 1>>(rows[i].data());
  const Eigen::VectorXd batched = gemm.efficiency(batch);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double single = gemm.efficiency(rows[i]);
    CHECK(single > 0.0);
    CHECK(single <= 1.0);
    CHECK(batched(static_cast<Eigen::Index>(i)) == single);
  }
}
