// The dense layer's kernels (src/simd/): each instruction set's against a plain double-precision
// reference, and the one chosen at run time against the baseline's, over the layer shapes the
// networks have and the awkward ones (rows not a multiple of 8, one column, column counts not a
// multiple of the kernel's block of 2).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
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
  if (detail::DenseLayerFn avx512 = detail::dense_layer_avx512()) kernels.emplace_back("avx512", avx512);
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
  CHECK((isa == "baseline" || isa == "avx2_fma" || isa == "avx512"));
  CHECK((isa == "avx2_fma") == (detail::dense_layer() == detail::dense_layer_avx2_fma() && detail::dense_layer_avx2_fma() != nullptr));
  CHECK((isa == "avx512") == (detail::dense_layer() == detail::dense_layer_avx512() && detail::dense_layer_avx512() != nullptr));
  const std::string cap = std::getenv("PIPEWEAVE_SIMD") ? std::getenv("PIPEWEAVE_SIMD") : "";
  if (cap == "baseline") CHECK(isa == "baseline");
  if (cap == "avx2") CHECK(isa != "avx512");
  // Uncapped, the widest kernel the CPU runs is chosen
  if (cap.empty()) CHECK(isa == (detail::dense_layer_avx512() ? "avx512" : detail::dense_layer_avx2_fma() ? "avx2_fma" : "baseline"));
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

TEST_CASE("dense layer: zero inputs are skipped, and every sum is the one over all inputs", "[dense]") {
  // Inputs zero at random (as after a ReLU; -0 among them), so that the columns of a block differ in
  // which inputs they skip: a column answers the same alone as beside others, and as the reference.
  std::vector<std::pair<std::string, detail::DenseLayerFn>> kernels{{"baseline", detail::dense_layer_baseline()}};
  if (detail::DenseLayerFn avx2 = detail::dense_layer_avx2_fma()) kernels.emplace_back("avx2_fma", avx2);
  if (detail::DenseLayerFn avx512 = detail::dense_layer_avx512()) kernels.emplace_back("avx512", avx512);
  for (const auto& [name, kernel] : kernels)
    for (const auto& shape : kShapes) {
      Layer layer = random_layer(shape[0], shape[1], shape[2], 21);
      std::mt19937 random(5);
      for (float& value : layer.x)
        if (random() % 5 < 3) value = random() % 2 == 0 ? 0.0f : -0.0f;
      for (bool relu : {false, true}) {
        INFO(name << " rows " << layer.rows << " inputs " << layer.inputs << " columns " << layer.columns << " relu " << relu);
        const std::vector<float> together = run(kernel, layer, relu);
        const std::vector<double> expected = reference(layer, relu);
        for (std::size_t i = 0; i < together.size(); ++i) REQUIRE(together[i] == Approx(expected[i]).margin(1e-4).epsilon(1e-4));
        for (int c = 0; c < layer.columns; ++c) {
          Layer alone = layer;
          alone.columns = 1;
          alone.x.assign(layer.x.begin() + c * layer.inputs, layer.x.begin() + (c + 1) * layer.inputs);
          const std::vector<float> answer = run(kernel, alone, relu);
          for (int r = 0; r < layer.rows; ++r) REQUIRE(answer[static_cast<std::size_t>(r)] == together[static_cast<std::size_t>(c * layer.rows + r)]);
        }
      }
    }
}

TEST_CASE("dense layer: weights round to the nearest fp16 value, ties to even, and give its exact bits", "[dense]") {
  // value, its fp16 value, the fp16 bits
  const std::tuple<float, float, std::uint16_t> cases[] = {
      {1.0f, 1.0f, 0x3c00},
      {1.0f + 0x1p-11f, 1.0f, 0x3c00},                        // a tie: to the even neighbour below
      {1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f, 0x3c02},          // a tie: to the even neighbour above
      {1.0f + 0x1p-11f + 0x1p-20f, 1.0f + 0x1p-10f, 0x3c01},  // past the tie: up
      {-2.0f, -2.0f, 0xc000},
      {0.1f, 0.0999755859375f, 0x2e66},
      {65504.0f, 65504.0f, 0x7bff},  // the largest
      {2047.75f, 2048.0f, 0x6800},   // a carry into the exponent
      {0x1p-14f, 0x1p-14f, 0x0400},  // the smallest normal
      {0x1p-24f, 0x1p-24f, 0x0001},  // the smallest subnormal
      {0x1p-25f, 0.0f, 0x0000},      // a tie between 0 and 2^-24: to 0
      {3 * 0x1p-25f, 0x1p-23f, 0x0002},
      {-0.0f, -0.0f, 0x8000},
      {-0x1p-26f, -0.0f, 0x8000},                   // rounds to zero, keeping its sign
      {0x1p-14f - 0x1p-26f, 0x1p-14f, 0x0400},      // a subnormal's neighbour that rounds up to the smallest normal
      {1e-40f, 0.0f, 0x0000},                       // a float subnormal
      {-5 * 0x1p-25f, -0x1p-23f, 0x8002},           // a negative subnormal tie, 2.5 steps: to the even 2
      {0x1p-14f + 0x1p-25f, 0x1p-14f, 0x0400},      // a tie at the bottom of the normal range: to the even below
  };
  std::vector<float> weights;
  for (const auto& [value, rounded, bits] : cases) weights.push_back(value);
  REQUIRE(detail::fits_half_precision(weights));
  detail::round_to_half_precision(weights);
  const std::vector<std::uint16_t> half = detail::half_precision_bits(weights);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const auto& [value, rounded, bits] = cases[i];
    INFO("value " << value);
    CHECK(weights[i] == rounded);
    CHECK(std::signbit(weights[i]) == std::signbit(rounded));
    CHECK(half[i] == bits);
  }
  CHECK_FALSE(detail::fits_half_precision({1.0f, 65505.0f}));
  CHECK_FALSE(detail::fits_half_precision({65519.0f}));  // IEEE would round it to 65504; kept as floats instead
  CHECK_FALSE(detail::fits_half_precision({-70000.0f}));
  CHECK_FALSE(detail::fits_half_precision({std::numeric_limits<float>::quiet_NaN()}));
  CHECK_FALSE(detail::fits_half_precision({std::numeric_limits<float>::infinity()}));
}

TEST_CASE("dense layer: the fp16 kernel answers bit for bit as the float kernel on the rounded weights",
          "[dense]") {
  const std::string isa(detail::dense_layer_isa());
  // It goes with AVX2's or AVX-512's float kernel; the baseline runs its float kernel on the rounded weights.
  CHECK((detail::dense_layer_half() != nullptr) == (isa == "avx512" || (isa == "avx2_fma" && detail::dense_layer_half_avx2_fma() != nullptr)));
  if (isa == "avx2_fma") CHECK(detail::dense_layer_half() == detail::dense_layer_half_avx2_fma());
  if (isa == "avx512") CHECK(detail::dense_layer_half() == detail::dense_layer_half_avx512());
  std::vector<std::tuple<std::string, detail::DenseLayerFn, detail::DenseHalfLayerFn>> kernels;
  if (detail::dense_layer_half_avx2_fma()) kernels.emplace_back("avx2_fma", detail::dense_layer_avx2_fma(), detail::dense_layer_half_avx2_fma());
  if (detail::dense_layer_half_avx512()) kernels.emplace_back("avx512", detail::dense_layer_avx512(), detail::dense_layer_half_avx512());
  if (kernels.empty()) {
    WARN("this CPU has no AVX2 with FMA and F16C: the fp16 kernels are not run here");
    return;
  }
  int compared = 0;
  for (const auto& [name, wide, half] : kernels)
    for (const auto& shape : kShapes) {
      Layer layer = random_layer(shape[0], shape[1], shape[2], 11);
      std::vector<float> packed = detail::pack_dense_weights(layer.weights.data(), layer.rows, layer.inputs);
      REQUIRE(detail::fits_half_precision(packed));
      detail::round_to_half_precision(packed);
      const std::vector<std::uint16_t> bits = detail::half_precision_bits(packed);
      for (bool relu : {false, true}) {
        std::vector<float> from_floats(static_cast<std::size_t>(layer.rows * layer.columns), -7.0f), from_halves = from_floats;
        wide(packed.data(), layer.bias.data(), layer.x.data(), from_floats.data(), layer.rows, layer.inputs, layer.columns, relu);
        half(bits.data(), layer.bias.data(), layer.x.data(), from_halves.data(), layer.rows, layer.inputs, layer.columns, relu);
        INFO(name << ": " << layer.rows << " x " << layer.inputs << ", " << layer.columns << " columns" << (relu ? ", ReLU" : ""));
        CHECK(from_halves == from_floats);
        ++compared;
      }
    }
  CHECK(compared == 2 * static_cast<int>(std::size(kShapes) * kernels.size()));
}

TEST_CASE("dense layer: AVX-512 answers as AVX2 to the bit, floats and fp16, zero inputs among them", "[dense]") {
  const detail::DenseLayerFn avx2 = detail::dense_layer_avx2_fma(), avx512 = detail::dense_layer_avx512();
  const detail::DenseHalfLayerFn avx2_half = detail::dense_layer_half_avx2_fma(), avx512_half = detail::dense_layer_half_avx512();
  if (!avx512) {
    WARN("this CPU has no AVX-512F: its kernel is not run here");
    return;
  }
  REQUIRE(avx2);  // (AVX-512's kernel is only chosen beside AVX2's)
  REQUIRE(avx2_half);
  REQUIRE(avx512_half);
  // Rows past one and two panels (the pairs of 128 rows, and a pair's partial second panel), and
  // the networks' own shapes
  const int shapes[][3] = {{256, 30, 1}, {128, 256, 1}, {64, 128, 1}, {1, 64, 1}, {256, 30, 7}, {200, 96, 1},
                           {129, 40, 2}, {192, 33, 4}, {65, 5, 1},  {7, 3, 4},  {320, 256, 3}, {128, 256, 37}};
  for (const auto& shape : shapes) {
    Layer layer = random_layer(shape[0], shape[1], shape[2], 31);
    std::mt19937 random(7);
    for (float& value : layer.x)
      if (random() % 5 < 3) value = 0.0f;
    std::vector<float> packed = detail::pack_dense_weights(layer.weights.data(), layer.rows, layer.inputs);
    detail::round_to_half_precision(packed);
    const std::vector<std::uint16_t> bits = detail::half_precision_bits(packed);
    for (bool relu : {false, true}) {
      const std::size_t size = static_cast<std::size_t>(layer.rows * layer.columns);
      std::vector<float> a(size, -7.0f), b(size, -7.0f), a_half(size, -7.0f), b_half(size, -7.0f);
      avx2(packed.data(), layer.bias.data(), layer.x.data(), a.data(), layer.rows, layer.inputs, layer.columns, relu);
      avx512(packed.data(), layer.bias.data(), layer.x.data(), b.data(), layer.rows, layer.inputs, layer.columns, relu);
      avx2_half(bits.data(), layer.bias.data(), layer.x.data(), a_half.data(), layer.rows, layer.inputs, layer.columns, relu);
      avx512_half(bits.data(), layer.bias.data(), layer.x.data(), b_half.data(), layer.rows, layer.inputs, layer.columns, relu);
      INFO(layer.rows << " x " << layer.inputs << ", " << layer.columns << " columns" << (relu ? ", ReLU" : ""));
      // (values compared: a sum of zero terms may be +0 on one and -0 on the other, which nothing reads)
      for (std::size_t i = 0; i < size; ++i) {
        REQUIRE(a[i] == b[i]);
        REQUIRE(a_half[i] == b_half[i]);
        REQUIRE(a_half[i] == a[i]);
      }
    }
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
