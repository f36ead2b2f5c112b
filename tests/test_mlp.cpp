// The learned stage: Mlp inference checked against a forward pass written out here,
// the batch overload, the weights file round trip, and every way a weights file is refused.
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "test_support.hpp"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/mlp.hpp"

using namespace pipeweave;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr int kInputs = static_cast<int>(kFeatureCount);
using FeatureBatch = Eigen::Matrix<float, static_cast<int>(kFeatureCount), Eigen::Dynamic>;

std::vector<std::string> canonical_feature_names() {
  return std::vector<std::string>(kFeatureNames.begin(), kFeatureNames.end());
}

// Hidden layers [3, 2] with fixed, hand-chosen weights of both signs, so that ReLU clips
// some units for some inputs and passes others.
MlpDescription tiny_description(OpFamily family = OpFamily::gemm) {
  MlpDescription d;
  d.family = family;
  d.feature_version = kFeatureVersion;
  d.feature_names = canonical_feature_names();
  d.input_mean.resize(kInputs);
  d.input_scale.resize(kInputs);
  for (int i = 0; i < kInputs; ++i) {
    d.input_mean(i) = 0.5f * static_cast<float>(i);
    d.input_scale(i) = 1.0f + 0.25f * static_cast<float>(i);
  }
  MlpLayer first;
  first.weights.resize(3, kInputs);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < kInputs; ++c) first.weights(r, c) = 0.05f * static_cast<float>((r * 7 + c * 3) % 11 - 5);
  first.bias.resize(3);
  first.bias << 0.1f, -0.2f, 0.05f;
  MlpLayer second;
  second.weights.resize(2, 3);
  second.weights << 0.5f, -0.3f, 0.8f,  //
      -0.6f, 0.9f, 0.2f;
  second.bias.resize(2);
  second.bias << 0.05f, -0.1f;
  MlpLayer output;
  output.weights.resize(1, 2);
  output.weights << 1.2f, -0.7f;
  output.bias.resize(1);
  output.bias << 0.3f;
  d.layers = {first, second, output};
  d.provenance = {{"command", "hand-made in test_mlp.cpp"}, {"rows", "0"}};
  return d;
}

// The nearest fp16 value (ties to even), worked out apart from the library's bit manipulation:
// 11 significant bits from 2^-14 up, steps of 2^-24 below.
double as_half(float weight) {
  const double w = weight;
  if (std::fabs(w) < 0x1p-14) return std::nearbyint(w * 0x1p24) * 0x1p-24;
  int exponent = 0;
  const double mantissa = std::frexp(w, &exponent);  // in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
}

// The forward pass, written out: standardise, dense + ReLU, dense + ReLU, dense, sigmoid, the
// weights at half precision as the networks keep them (every weight here is within fp16's range).
// Counts the hidden units ReLU clipped and passed, so the test can show both happened.
struct Reference {
  int clipped = 0;
  int passed = 0;
  bool half = true;  // false: the weights as given (a network beyond fp16's range keeps them)
  double operator()(const MlpDescription& d, const Features& f) {
    const auto weight = [this](float w) { return half ? as_half(w) : static_cast<double>(w); };
    std::vector<double> x(kFeatureCount);
    for (std::size_t i = 0; i < kFeatureCount; ++i) {
      const auto e = static_cast<Eigen::Index>(i);
      x[i] = (static_cast<double>(f[i]) - d.input_mean(e)) / d.input_scale(e);
    }
    for (std::size_t l = 0; l + 1 < d.layers.size(); ++l) {
      const MlpLayer& layer = d.layers[l];
      std::vector<double> y(static_cast<std::size_t>(layer.weights.rows()));
      for (Eigen::Index r = 0; r < layer.weights.rows(); ++r) {
        double sum = layer.bias(r);
        for (Eigen::Index c = 0; c < layer.weights.cols(); ++c) sum += weight(layer.weights(r, c)) * x[static_cast<std::size_t>(c)];
        if (sum < 0) ++clipped;
        else ++passed;
        y[static_cast<std::size_t>(r)] = std::max(sum, 0.0);
      }
      x = y;
    }
    const MlpLayer& last = d.layers.back();
    double logit = last.bias(0);
    for (Eigen::Index c = 0; c < last.weights.cols(); ++c) logit += weight(last.weights(0, c)) * x[static_cast<std::size_t>(c)];
    return 1.0 / (1.0 + std::exp(-logit));
  }
};

// Feature vectors of the size log1p(demand) takes, varied per vector.
std::vector<Features> sample_features() {
  std::vector<Features> out;
  for (int v = 0; v < 6; ++v) {
    Features f{};
    for (std::size_t i = 0; i < kFeatureCount; ++i)
      f[i] = static_cast<float>(std::fmod(1.7 * static_cast<double>(i) + 3.1 * v * v + 0.3, 16.0));
    out.push_back(f);
  }
  Features zeros{};
  out.push_back(zeros);
  return out;
}

using pipeweave_test::error_of;

// A valid weights document, to be broken one field at a time (version 2: the layers packed).
json valid_document() { return json::parse(to_json(Mlp(tiny_description()))); }

// Standard base64 of little-endian float32 values, written out here apart from the library's own.
std::string base64_floats(const std::vector<float>& values) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (const float value : values) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, 4);
    for (int b = 0; b < 4; ++b) bytes += static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  std::string text;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t triple = 0;
    for (std::size_t j = 0; j < 3; ++j)
      triple = (triple << 8) | (j < left ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    for (std::size_t j = 0; j < 4; ++j) text += j <= left ? kAlphabet[(triple >> (18 - 6 * j)) & 63] : '=';
  }
  return text;
}

// A network's layers as version 1 writes them: rows of decimals.
json decimal_layers(const std::vector<MlpLayer>& network) {
  json layers = json::array();
  for (const MlpLayer& layer : network) {
    json rows = json::array();
    for (Eigen::Index r = 0; r < layer.weights.rows(); ++r) {
      json row = json::array();
      for (Eigen::Index c = 0; c < layer.weights.cols(); ++c) row.push_back(static_cast<double>(layer.weights(r, c)));
      rows.push_back(row);
    }
    json bias = json::array();
    for (Eigen::Index r = 0; r < layer.bias.size(); ++r) bias.push_back(static_cast<double>(layer.bias(r)));
    layers.push_back({{"weights", rows}, {"bias", bias}});
  }
  return layers;
}

// The same model as a version 1 document, which the reader still takes.
json version1_document(const MlpDescription& d = tiny_description()) {
  json document = json::parse(to_json(Mlp(d)));
  document["version"] = 1;
  document["layers"] = decimal_layers(d.layers);
  if (!d.further_networks.empty()) {
    document["further_networks"] = json::array();
    for (const std::vector<MlpLayer>& network : d.further_networks) document["further_networks"].push_back(decimal_layers(network));
  }
  return document;
}

std::string load_error(const json& document) {
  return error_of([&] { (void)mlp_from_json(document.dump()); });
}

}  // namespace

TEST_CASE("Mlp: a hand-computable network gives the sigmoid of the value worked out on paper", "[mlp]") {
  // Every feature 5, mean 1, scale 2: every standardised input is 2. The first layer reads
  // the first 16 inputs only, so the figures hold for any feature count.
  MlpDescription d;
  d.feature_names = canonical_feature_names();
  d.input_mean = Eigen::VectorXf::Constant(kInputs, 1.0f);
  d.input_scale = Eigen::VectorXf::Constant(kInputs, 2.0f);
  MlpLayer first;
  first.weights = Eigen::MatrixXf::Zero(3, kInputs);
  first.weights.row(0).head(16).setConstant(0.125f);   // 16 * 0.25 = 4
  first.weights.row(1).head(16).setConstant(-0.125f);  // -4, clipped to 0
  first.weights.row(2).head(16).setConstant(0.0625f);  // 2 - 1 = 1
  first.bias = Eigen::Vector3f(0.0f, 0.0f, -1.0f);
  MlpLayer second;
  second.weights.resize(2, 3);
  second.weights << 1.0f, 1.0f, 1.0f,  // 4 + 0 + 1 = 5
      0.5f, 2.0f, -1.0f;               // 2 + 0 - 1 = 1, minus 3 -> clipped to 0
  second.bias = Eigen::Vector2f(0.0f, -3.0f);
  MlpLayer output;
  output.weights.resize(1, 2);
  output.weights << 0.5f, -4.0f;  // 2.5 - 0 + 0.25 = 2.75
  output.bias = Eigen::VectorXf::Constant(1, 0.25f);
  d.layers = {first, second, output};
  const Mlp mlp(d);

  Features f;
  f.fill(5.0f);
  CHECK(mlp.efficiency(f) == Approx(1.0 / (1.0 + std::exp(-2.75))).epsilon(1e-6));
  CHECK(mlp.hidden_sizes() == std::vector<int>{3, 2});
  CHECK(mlp.family() == OpFamily::gemm);
}

TEST_CASE("Mlp: efficiency matches the forward pass computed by hand", "[mlp]") {
  const MlpDescription d = tiny_description();
  const Mlp mlp(d);
  Reference reference;
  for (const Features& f : sample_features()) {
    const double expected = reference(d, f);
    const double actual = mlp.efficiency(f);
    CHECK(actual == Approx(expected).epsilon(1e-5));
    CHECK(actual > 0.0);
    CHECK(actual < 1.0);
  }
  // The samples exercise both sides of ReLU, so the check above covers the clipping.
  CHECK(reference.clipped > 0);
  CHECK(reference.passed > 0);
}

TEST_CASE("Mlp: weights answer at half precision, unless one is beyond fp16's range", "[mlp]") {
  // 0.05 x k is no fp16 value: rounded, the efficiencies move by 1e-5 to 1e-4 of themselves, so
  // a pass at the other precision misses by ten times the 1e-6 of float arithmetic or more.
  MlpDescription d = tiny_description();
  const Mlp rounded(d);
  d.layers.back().weights(0, 1) = -70000.0f;  // beyond 65504: the whole network keeps its float weights
  d.layers[1].bias(1) = -100.0f;              // and that unit never passes, so the answer stays finite
  const Mlp kept(d);
  Reference at_half, at_float;
  at_float.half = false;
  int told_apart = 0;
  for (const Features& f : sample_features()) {
    CHECK(rounded.efficiency(f) == Approx(at_half(tiny_description(), f)).epsilon(1e-6));
    CHECK(kept.efficiency(f) == Approx(at_float(d, f)).epsilon(1e-6));
    // on the network `kept` answers for, so that answering it at half precision would fail the check above
    const double rounded_gap = std::fabs(at_half(d, f) / at_float(d, f) - 1);
    if (rounded_gap > 1e-5) ++told_apart;
  }
  CHECK(told_apart > 0);  // the two precisions do differ on these inputs, so each check above can fail
}

TEST_CASE("Mlp: the batch overload equals one call per feature vector", "[mlp]") {
  const Mlp mlp(tiny_description());
  const std::vector<Features> samples = sample_features();
  FeatureBatch batch(static_cast<int>(kFeatureCount), static_cast<Eigen::Index>(samples.size()));
  for (std::size_t j = 0; j < samples.size(); ++j)
    for (std::size_t i = 0; i < kFeatureCount; ++i)
      batch(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = samples[j][i];
  const Eigen::VectorXd result = mlp.efficiency(batch);
  REQUIRE(result.size() == static_cast<Eigen::Index>(samples.size()));
  for (std::size_t j = 0; j < samples.size(); ++j)
    CHECK(result(static_cast<Eigen::Index>(j)) == Approx(mlp.efficiency(samples[j])).epsilon(1e-6));

  // An empty batch gives an empty answer.
  const FeatureBatch empty(static_cast<int>(kFeatureCount), 0);
  CHECK(mlp.efficiency(empty).size() == 0);
}

TEST_CASE("Mlp: to_json -> mlp_from_json keeps every weight and every output", "[mlp]") {
  for (OpFamily family : {OpFamily::gemm, OpFamily::attention, OpFamily::collective}) {
    const Mlp original(tiny_description(family));
    const Mlp loaded = mlp_from_json(to_json(original));
    const MlpDescription& a = original.description();
    const MlpDescription& b = loaded.description();
    CHECK(loaded.family() == family);
    CHECK(b.feature_version == a.feature_version);
    CHECK(b.feature_names == a.feature_names);
    CHECK(b.input_mean == a.input_mean);
    CHECK(b.input_scale == a.input_scale);
    REQUIRE(b.layers.size() == a.layers.size());
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
      CHECK(b.layers[l].weights == a.layers[l].weights);
      CHECK(b.layers[l].bias == a.layers[l].bias);
    }
    using Record = std::map<std::string, std::string>;
    CHECK(Record(b.provenance.begin(), b.provenance.end()) == Record(a.provenance.begin(), a.provenance.end()));
    for (const Features& f : sample_features()) CHECK(loaded.efficiency(f) == original.efficiency(f));
    // Writing what was read gives the same file.
    CHECK(to_json(loaded) == to_json(original));
    // Version 2 packs each layer as base64 of its float32 values, row-major; version 1's decimals
    // of the same model read as the same model.
    const json document = json::parse(to_json(original));
    CHECK(document["version"] == 2);
    const MlpLayer& first = a.layers[0];
    const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = first.weights;
    CHECK(document["layers"][0]["weights_base64"] == base64_floats(std::vector<float>(row_major.data(), row_major.data() + row_major.size())));
    CHECK(document["layers"][0]["bias_base64"] == base64_floats(std::vector<float>(first.bias.data(), first.bias.data() + first.bias.size())));
    CHECK(document["layers"][0]["shape"] == json{first.weights.rows(), first.weights.cols()});
    CHECK(to_json(mlp_from_json(version1_document(a).dump())) == to_json(original));
  }
}

// A second network of tiny_description's widths, other weights: an ensemble's other member.
std::vector<MlpLayer> other_network() {
  std::vector<MlpLayer> layers = tiny_description().layers;
  for (MlpLayer& layer : layers) {
    layer.weights = -0.8f * layer.weights.array() + 0.03f;
    layer.bias = layer.bias.array() * 1.5f - 0.1f;
  }
  return layers;
}

TEST_CASE("Mlp: an ensemble's efficiency is the geometric mean of its networks'", "[mlp]") {
  MlpDescription single_a = tiny_description(), single_b = tiny_description();
  single_b.layers = other_network();
  MlpDescription third = tiny_description();
  for (MlpLayer& layer : third.layers) layer.bias.array() += 0.4f;
  MlpDescription ensemble = tiny_description();
  ensemble.further_networks = {single_b.layers, third.layers};
  const Mlp a(single_a), b(single_b), c(third), both(ensemble);
  CHECK(both.network_count() == 3);
  CHECK(a.network_count() == 1);
  const std::vector<Features> samples = sample_features();
  FeatureBatch batch(static_cast<int>(kFeatureCount), static_cast<Eigen::Index>(samples.size()));
  bool networks_differ = false;
  for (std::size_t j = 0; j < samples.size(); ++j) {
    const Features& f = samples[j];
    for (std::size_t i = 0; i < kFeatureCount; ++i) batch(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = f[i];
    const double expected = std::cbrt(a.efficiency(f) * b.efficiency(f) * c.efficiency(f));
    CHECK(both.efficiency(f) == Approx(expected).epsilon(1e-6));
    networks_differ = networks_differ || std::abs(a.efficiency(f) - b.efficiency(f)) > 1e-3;
  }
  CHECK(networks_differ);  // else the mean would equal any one of them
  const Eigen::VectorXd batched = both.efficiency(batch);
  for (std::size_t j = 0; j < samples.size(); ++j)
    CHECK(batched(static_cast<Eigen::Index>(j)) == Approx(both.efficiency(samples[j])).epsilon(1e-6));

  // A saturated logit stays finite: sigmoid(-1000) is 0 in double, so log(sigmoid) would be
  // -inf and the mean efficiency 0; log-sigmoid gives -1000 and the mean exp(-500)-odd.
  MlpDescription saturated = tiny_description();
  saturated.further_networks = {tiny_description().layers};
  saturated.further_networks[0].back().bias(0) = -1000.0f;
  const double low = Mlp(saturated).efficiency(samples.front());
  CHECK(std::isfinite(low));
  CHECK(low > 0.0);
  CHECK(low < 1e-15);
}

TEST_CASE("Mlp: an ensemble round-trips through JSON and its networks are checked like the first", "[mlp]") {
  MlpDescription d = tiny_description();
  d.further_networks = {other_network()};
  const Mlp original(d);
  const Mlp loaded = mlp_from_json(to_json(original));
  REQUIRE(loaded.description().further_networks.size() == 1);
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    CHECK(loaded.description().further_networks[0][l].weights == d.further_networks[0][l].weights);
    CHECK(loaded.description().further_networks[0][l].bias == d.further_networks[0][l].bias);
  }
  for (const Features& f : sample_features()) CHECK(loaded.efficiency(f) == original.efficiency(f));
  CHECK(to_json(loaded) == to_json(original));
  // A single network writes no further_networks key (the files of single models stay as they were).
  CHECK_FALSE(json::parse(to_json(Mlp(tiny_description()))).contains("further_networks"));

  json document = json::parse(to_json(original));
  SECTION("not an array") {
    document["further_networks"] = 3;
    CHECK_THAT(load_error(document), Contains("mlp.further_networks"));
  }
  SECTION("more networks than an ensemble holds: refused before any is read, and built in code") {
    document["further_networks"] = json::array();
    for (int n = 0; n < kMaxNetworks; ++n) document["further_networks"].push_back(document["layers"]);
    CHECK(load_error(document) == "mlp.further_networks must hold at most 63 (an ensemble of at most 64), got 64 networks");
    MlpDescription many = tiny_description();
    many.further_networks.assign(static_cast<std::size_t>(kMaxNetworks - 1), tiny_description().layers);
    CHECK(Mlp(many).network_count() == 64);
    many.further_networks.push_back(tiny_description().layers);
    CHECK_THAT(error_of([&] { Mlp mlp(many); }), Contains("got 64 networks"));
  }
  SECTION("a network with a layer too few") {
    document["further_networks"][0].erase(document["further_networks"][0].begin());
    CHECK_THAT(load_error(document), Contains("mlp.further_networks[0]"));
  }
  SECTION("a NaN weight (null in JSON), version 1") {
    document = version1_document(d);
    document["further_networks"][0][1]["weights"][0][2] = nullptr;  // what a NaN becomes in JSON
    CHECK_THAT(load_error(document), Contains("mlp.further_networks[0][1].weights[0]"));
  }
  SECTION("other widths, built in code") {
    MlpDescription narrow = tiny_description();
    narrow.further_networks = {tiny_description().layers};
    MlpLayer& first = narrow.further_networks[0][0];
    first.weights.conservativeResize(2, Eigen::NoChange);
    first.bias.conservativeResize(2);
    MlpLayer& second = narrow.further_networks[0][1];
    second.weights.conservativeResize(Eigen::NoChange, 2);
    const std::string message = error_of([&] { Mlp mlp(narrow); });
    CHECK_THAT(message, Contains("mlp.further_networks[0]"));
    CHECK_THAT(message, Contains("layer widths"));
  }
  SECTION("a value that is not finite, built in code") {
    MlpDescription broken = d;
    broken.further_networks[0][2].bias(0) = std::numeric_limits<float>::infinity();
    CHECK_THAT(error_of([&] { Mlp mlp(broken); }), Contains("mlp.further_networks[0][2]"));
  }
}

TEST_CASE("Mlp: load_mlp reads a file and names the file on error", "[mlp]") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto good = dir / "pipeweave_test_mlp_good.json";
  const auto bad = dir / "pipeweave_test_mlp_bad.json";
  const Mlp original(tiny_description());
  std::ofstream(good) << to_json(original);
  json broken = valid_document();
  broken["feature_version"] = kFeatureVersion + 1;
  std::ofstream(bad) << broken.dump();

  const Mlp loaded = load_mlp(good);
  for (const Features& f : sample_features()) CHECK(loaded.efficiency(f) == original.efficiency(f));
  const std::string message = error_of([&] { (void)load_mlp(bad); });
  CHECK_THAT(message, Contains(bad.string()));
  CHECK_THAT(message, Contains("mlp.feature_version"));
  const std::string missing = error_of([&] { (void)load_mlp(dir / "pipeweave_no_such_model.json"); });
  CHECK_THAT(missing, Contains("pipeweave_no_such_model.json"));
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST_CASE("Mlp: a gzip-compressed model file reads as its text; a cut one is refused naming the file", "[mlp]") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto compressed = dir / ("pipeweave_test_mlp_" + std::to_string(std::random_device{}()) + ".json.gz");
  const Mlp original(tiny_description());
  const std::string text = to_json(original);
  // Two gzip members one after another (as `cat a.gz b.gz` makes): one file's text.
  gzFile out = gzopen(compressed.c_str(), "wb9");
  REQUIRE(out);
  REQUIRE(gzwrite(out, text.data(), static_cast<unsigned>(text.size() / 2)) > 0);
  REQUIRE(gzclose(out) == Z_OK);
  out = gzopen(compressed.c_str(), "ab9");
  REQUIRE(out);
  REQUIRE(gzwrite(out, text.data() + text.size() / 2, static_cast<unsigned>(text.size() - text.size() / 2)) > 0);
  REQUIRE(gzclose(out) == Z_OK);
  const Mlp loaded = load_mlp(compressed);
  for (const Features& f : sample_features()) CHECK(loaded.efficiency(f) == original.efficiency(f));
  std::ifstream in(compressed, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  // Zero bytes after the last member (gzip's padding) are no data; anything else is refused.
  std::ofstream(compressed, std::ios::binary | std::ios::trunc) << bytes << std::string(512, '\0');
  CHECK(load_mlp(compressed).efficiency(sample_features()[0]) == original.efficiency(sample_features()[0]));
  std::ofstream(compressed, std::ios::binary | std::ios::trunc) << bytes << "trailing";
  CHECK_THAT(error_of([&] { (void)load_mlp(compressed); }),
             Contains("(gzip): trailing data after the compressed stream"));
  // The first 60% of the compressed bytes: the stream ends early, the input's fault.
  std::ofstream(compressed, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() * 6 / 10);
  CHECK_THROWS_AS(load_mlp(compressed), InvalidInput);
  CHECK_THAT(error_of([&] { (void)load_mlp(compressed); }),
             Contains("cannot read model weights file " + compressed.string() + " (gzip): the stream ends early"));
  // Bytes that are not deflate data after a gzip header.
  std::ofstream(compressed, std::ios::binary | std::ios::trunc) << bytes.substr(0, 10) << std::string(64, 'x');
  CHECK_THAT(error_of([&] { (void)load_mlp(compressed); }),
             Contains("cannot read model weights file " + compressed.string() + " (gzip): "));
  std::filesystem::remove(compressed);
}

TEST_CASE("a gzip file that expands past 400 times its size, once past 256 MiB, is refused early", "[mlp]") {
  const auto compressed =
      std::filesystem::temp_directory_path() / ("pipeweave_test_bomb_" + std::to_string(std::random_device{}()) + ".json.gz");
  // 300 MiB of zeros compress to about 300 KB (a thousand times): refused at 256 MiB, not at 1 GiB
  gzFile out = gzopen(compressed.c_str(), "wb6");
  REQUIRE(out);
  const std::string zeros(std::size_t{1} << 20, '0');
  for (int i = 0; i < 300; ++i) REQUIRE(gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size())) > 0);
  REQUIRE(gzclose(out) == Z_OK);
  CHECK_THAT(error_of([&] { (void)load_mlp(compressed); }),
             Contains("(gzip): expands more than 400 times its ") && Contains(" bytes (past 256 MiB): a compression bomb"));
  std::filesystem::remove(compressed);
}

TEST_CASE("a GPU spec is read to 16 MiB, inflated or not; a NUL byte ends any text file's reading", "[mlp][gpu]") {
  const auto path = std::filesystem::temp_directory_path() / ("pipeweave_test_spec_" + std::to_string(std::random_device{}()));
  const auto compressed = path.string() + ".json.gz";
  // A 261 KB gzip of a spec whose free-form calibration field held 134 million zeros parsed to 5.7 GB:
  // 17 MiB of text is refused as it inflates, not parsed
  gzFile out = gzopen(compressed.c_str(), "wb6");
  REQUIRE(out);
  const std::string zeros(std::size_t{1} << 20, '0');
  for (int i = 0; i < 17; ++i) REQUIRE(gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size())) > 0);
  REQUIRE(gzclose(out) == Z_OK);
  CHECK_THAT(error_of([&] { (void)load_gpu_spec(compressed); }), Contains("(gzip): expands past 16 MiB"));
  std::filesystem::remove(compressed);
  {
    std::ofstream text(path, std::ios::binary);
    for (int i = 0; i < 17; ++i) text << zeros;
  }
  CHECK_THAT(error_of([&] { (void)load_gpu_spec(path); }), Contains("GPU spec file") && Contains("longer than 16 MiB"));
  // A NUL byte: refused where it is (/dev/zero was read to its gigabyte first), here and in any text input
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "{\"name\": " << std::string(1, '\0') << "}";
  CHECK_THAT(error_of([&] { (void)load_gpu_spec(path); }), Contains("a NUL byte at offset 9 (a binary file, not text)"));
  CHECK_THAT(error_of([&] { (void)load_mlp(path); }), Contains("model weights file") && Contains("a NUL byte at offset 9"));
  std::filesystem::remove(path);
}

TEST_CASE("mlp_from_json: the feature list must be this build's, in order", "[mlp]") {
  SECTION("two features swapped: names the index and the expected name") {
    json document = valid_document();
    std::swap(document["features"][3], document["features"][4]);
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.features[3]"));
    CHECK_THAT(message, Contains(std::string(kFeatureNames[3])));
  }
  SECTION("one feature renamed") {
    json document = valid_document();
    document["features"][kFeatureCount - 1] = "occupancy";
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.features[" + std::to_string(kFeatureCount - 1) + "]"));
    CHECK_THAT(message, Contains(std::string(kFeatureNames[kFeatureCount - 1])));
    CHECK_THAT(message, Contains("occupancy"));
  }
  SECTION("a feature missing") {
    json document = valid_document();
    document["features"].erase(document["features"].size() - 1);
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.features"));
    CHECK_THAT(message, Contains(std::to_string(kFeatureCount - 1)));
  }
  SECTION("features not strings") {
    json document = valid_document();
    document["features"][0] = 7;
    CHECK_THAT(load_error(document), Contains("mlp.features"));
  }
  SECTION("another feature version") {
    json document = valid_document();
    document["feature_version"] = kFeatureVersion + 1;
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.feature_version"));
    CHECK_THAT(message, Contains(std::to_string(kFeatureVersion + 1)));
  }
}

TEST_CASE("mlp_from_json: the layer chain must fit together", "[mlp]") {
  SECTION("a layer's columns do not match the previous width, version 1") {
    json document = version1_document();
    for (json& row : document["layers"][1]["weights"]) row.push_back(0.5);  // 4 columns after a width-3 layer
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[1].weights columns"));
    CHECK_THAT(message, Contains("4"));
  }
  SECTION("the first layer does not take one input per feature, version 1") {
    json document = version1_document();
    for (json& row : document["layers"][0]["weights"]) row.erase(row.size() - 1);
    CHECK_THAT(load_error(document), Contains("mlp.layers[0].weights columns"));
  }
  SECTION("ragged weight rows, version 1") {
    json document = version1_document();
    document["layers"][0]["weights"][1].erase(0);
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[0].weights[1] length"));
    CHECK_THAT(message, Contains(std::to_string(kFeatureCount - 1)));
  }
  SECTION("bias size differs from the rows, version 1") {
    json document = version1_document();
    document["layers"][0]["bias"].erase(2);
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[0].bias size"));
    CHECK_THAT(message, Contains("2"));
  }
  SECTION("hidden_layers says another width than the weights") {
    json document = valid_document();
    document["network"]["hidden_layers"] = {4, 2};
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[0].weights rows"));
    CHECK_THAT(message, Contains("hidden_layers[0]"));
  }
  SECTION("hidden_layers lists another number of layers") {
    json document = valid_document();
    document["network"]["hidden_layers"] = {3};
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers"));
    CHECK_THAT(message, Contains("hidden"));
  }
  SECTION("hidden_layers not an array") {
    json document = valid_document();
    document["network"]["hidden_layers"] = "3,2";
    CHECK_THAT(load_error(document), Contains("mlp.network.hidden_layers"));
  }
  SECTION("output layer wider than 1, version 1") {
    json document = version1_document();
    document["layers"][2]["weights"].push_back({0.1, 0.2});
    document["layers"][2]["bias"].push_back(0.0);
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("output layer"));
    CHECK_THAT(message, Contains("2"));
  }
  SECTION("a packed layer's columns do not match the previous width") {
    json document = valid_document();
    MlpLayer wider = tiny_description().layers[1];
    wider.weights.conservativeResize(Eigen::NoChange, 4);
    wider.weights.col(3).setConstant(0.5f);
    const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = wider.weights;
    document["layers"][1]["shape"] = {2, 4};
    document["layers"][1]["weights_base64"] = base64_floats(std::vector<float>(row_major.data(), row_major.data() + row_major.size()));
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[1].weights columns"));
    CHECK_THAT(message, Contains("4"));
  }
  SECTION("a packed layer's text shorter or longer than its shape says") {
    json document = valid_document();
    document["layers"][1]["shape"] = {2, 4};  // the text holds 2 x 3
    std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[1].weights_base64 length"));
    CHECK_THAT(message, Contains("8 float32 values"));
    document = valid_document();
    document["layers"][0]["bias_base64"] = base64_floats({0.0f, 1.0f});  // 3 rows
    message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[0].bias_base64 length"));
    CHECK_THAT(message, Contains("3 float32 values"));
  }
  SECTION("a packed layer's shape out of range or not two whole numbers") {
    for (const json& shape : {json{2}, json{2, 0}, json{2, -3}, json{2, 1.5}, json{2, 1 << 21}, json("2x3")}) {
      json document = valid_document();
      document["layers"][1]["shape"] = shape;
      const std::string message = load_error(document);
      INFO(shape.dump() << ": " << message);
      CHECK_THAT(message, Contains("mlp.layers[1].shape"));
      CHECK_THAT(message, Contains("[rows, columns]"));
    }
  }
  SECTION("packed text that is not base64") {
    json document = valid_document();
    std::string text = document["layers"][0]["bias_base64"];
    for (const char bad : {'*', '=', '-', ' '}) {
      std::string broken = text;
      broken[1] = bad;
      document["layers"][0]["bias_base64"] = broken;
      const std::string message = load_error(document);
      INFO(broken << ": " << message);
      CHECK_THAT(message, Contains("mlp.layers[0].bias_base64"));
      CHECK_THAT(message, Contains("must be base64"));
    }
    document["layers"][0]["bias_base64"] = 3;
    CHECK_THAT(load_error(document), Contains("must be a base64 string"));
    // The output layer's one bias is 4 bytes: a padded last quad ("xy=="), whose second character's
    // low four bits are left over and must be zero; setting one gives another text of the same bytes.
    document = valid_document();
    std::string padded = base64_floats({0.25f});
    REQUIRE(padded.size() == 8);
    REQUIRE(padded.substr(6) == "==");
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    document["layers"][2]["bias_base64"] = padded;
    CHECK_NOTHROW(mlp_from_json(document.dump()));
    padded[5] = alphabet[alphabet.find(padded[5]) ^ 1];
    document["layers"][2]["bias_base64"] = padded;
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[2].bias_base64"));
    CHECK_THAT(message, Contains("canonical base64"));
  }
  SECTION("a version's layers in the other version's file") {
    json document = version1_document();
    document["version"] = 2;
    std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.layers[0]."));  // (bias or weights: the first key it meets)
    CHECK_THAT(message, Contains("is not a known field"));
    document = valid_document();
    document["version"] = 1;
    CHECK_THAT(load_error(document), Contains("mlp.layers[0].bias_base64 is not a known field"));
  }
  SECTION("no layers at all") {
    json document = valid_document();
    document["network"]["hidden_layers"] = json::array();
    document["layers"] = json::array();
    CHECK_THAT(load_error(document), Contains("mlp.layers"));
  }
}

TEST_CASE("mlp_from_json: values must be finite numbers and scales positive", "[mlp]") {
  SECTION("a weight that is not a number, version 1") {
    json document = version1_document();
    document["layers"][0]["weights"][1][2] = nullptr;  // what a NaN becomes in JSON
    CHECK_THAT(load_error(document), Contains("mlp.layers[0].weights[1]"));
  }
  SECTION("a weight too large for any number type, version 1") {
    json document = version1_document();
    document["layers"][1]["weights"][0][0] = 12345.5;
    std::string text = document.dump();
    const std::size_t at = text.find("12345.5");
    REQUIRE(at != std::string::npos);
    text.replace(at, 7, "1e400");
    const std::string message = error_of([&] { (void)mlp_from_json(text); });
    CHECK_THAT(message, Contains("1e400"));
  }
  SECTION("a weight too large for a float, version 1") {
    json document = version1_document();
    document["layers"][1]["bias"][0] = 1e39;
    CHECK_THAT(load_error(document), Contains("mlp.layers[1]"));
  }
  SECTION("a packed value that is not finite") {
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()}) {
      json document = valid_document();
      document["layers"][0]["bias_base64"] = base64_floats({0.5f, bad, 0.25f});
      const std::string message = load_error(document);
      CHECK_THAT(message, Contains("mlp.layers[0].bias_base64[1]"));
      CHECK_THAT(message, Contains("must be finite"));
    }
  }
  SECTION("a non-finite value given in memory") {
    MlpDescription d = tiny_description();
    d.layers[1].weights(0, 2) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THAT(error_of([&] { Mlp mlp(d); }), Contains("mlp.layers[1]"));
    d = tiny_description();
    d.layers[0].bias(1) = std::numeric_limits<float>::infinity();
    CHECK_THAT(error_of([&] { Mlp mlp(d); }), Contains("mlp.layers[0]"));
    d = tiny_description();
    d.input_mean(5) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THAT(error_of([&] { Mlp mlp(d); }), Contains("mlp.input_mean"));
  }
  SECTION("input_scale zero or negative") {
    json document = valid_document();
    document["input_scale"][3] = 0.0;
    std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.input_scale[3]"));
    CHECK_THAT(message, Contains("0"));
    document["input_scale"][3] = -2.5;
    message = load_error(document);
    CHECK_THAT(message, Contains("mlp.input_scale[3]"));
    CHECK_THAT(message, Contains("-2.5"));
    // Positive but outside what training writes (1e-45 made every input infinite, the network NaN)
    document["input_scale"][3] = 1e-45;
    CHECK_THAT(load_error(document), Contains("mlp.input_scale[3] must be within [0.001, 1e+06]"));
    document["input_scale"][3] = 1e7;
    CHECK_THAT(load_error(document), Contains("mlp.input_scale[3] must be within [0.001, 1e+06]"));
  }
  SECTION("input_mean or input_scale of the wrong length") {
    json document = valid_document();
    document["input_mean"].erase(0);
    std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.input_mean"));
    CHECK_THAT(message, Contains(std::to_string(kFeatureCount - 1)));
    document = valid_document();
    document["input_scale"].push_back(1.0);
    message = load_error(document);
    CHECK_THAT(message, Contains("mlp.input_scale"));
    CHECK_THAT(message, Contains(std::to_string(kFeatureCount + 1)));
  }
  SECTION("a number field holding text") {
    json document = valid_document();
    document["input_mean"][0] = "zero";
    CHECK_THAT(load_error(document), Contains("mlp.input_mean"));
    document = valid_document();
    document["feature_version"] = "1";
    CHECK_THAT(load_error(document), Contains("mlp.feature_version"));
  }
}

TEST_CASE("mlp_from_json: format, network description, missing and unknown fields", "[mlp]") {
  SECTION("wrong format string") {
    json document = valid_document();
    document["format"] = "pipeweave-gpu";
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.format"));
    CHECK_THAT(message, Contains("pipeweave-gpu"));
  }
  SECTION("wrong format version") {
    json document = valid_document();
    document["version"] = 3;
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.version"));
    CHECK_THAT(message, Contains("must be 1 or 2"));
  }
  SECTION("unknown op family") {
    json document = valid_document();
    document["op_family"] = "conv";
    const std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.op_family"));
    CHECK_THAT(message, Contains("conv"));
  }
  SECTION("another input transform or activation") {
    json document = valid_document();
    document["input_transform"] = "minmax";
    CHECK_THAT(load_error(document), Contains("mlp.input_transform"));
    document = valid_document();
    document["network"]["activation"] = "tanh";
    CHECK_THAT(load_error(document), Contains("mlp.network.activation"));
    document = valid_document();
    document["network"]["output_activation"] = "linear";
    CHECK_THAT(load_error(document), Contains("mlp.network.output_activation"));
    document = valid_document();
    document["network"]["batch_norm"] = "live";
    CHECK_THAT(load_error(document), Contains("mlp.network.batch_norm"));
  }
  SECTION("missing fields") {
    for (const char* key : {"format", "version", "op_family", "feature_version", "features", "input_transform",
                            "input_mean", "input_scale", "network", "layers"}) {
      json document = valid_document();
      document.erase(key);
      const std::string message = load_error(document);
      INFO("removed " << key << ": " << message);
      CHECK_THAT(message, Contains(std::string("mlp.") + key));
      CHECK_THAT(message, Contains("missing"));
    }
    json document = valid_document();
    document["network"].erase("hidden_layers");
    CHECK_THAT(load_error(document), Contains("mlp.network.hidden_layers"));
    document = valid_document();
    document["layers"][1].erase("bias_base64");
    CHECK_THAT(load_error(document), Contains("mlp.layers[1].bias_base64"));
    document = version1_document();
    document["layers"][1].erase("bias");
    CHECK_THAT(load_error(document), Contains("mlp.layers[1].bias"));
    // Provenance is optional.
    document = valid_document();
    document.erase("provenance");
    CHECK_NOTHROW(mlp_from_json(document.dump()));
  }
  SECTION("unknown fields") {
    json document = valid_document();
    document["dropout"] = 0.1;
    std::string message = load_error(document);
    CHECK_THAT(message, Contains("mlp.dropout"));
    CHECK_THAT(message, Contains("not a known field"));
    document = valid_document();
    document["network"]["residual"] = true;
    CHECK_THAT(load_error(document), Contains("mlp.network.residual"));
    document = valid_document();
    document["layers"][0]["scale"] = 1.0;
    CHECK_THAT(load_error(document), Contains("mlp.layers[0].scale"));
  }
  SECTION("not JSON, or not an object") {
    CHECK_THAT(error_of([] { (void)mlp_from_json("{\"format\": \"pipeweave-mlp\","); }), Contains("not valid JSON"));
    CHECK_THAT(error_of([] { (void)mlp_from_json("[1, 2, 3]"); }), Contains("JSON object"));
    CHECK_THAT(error_of([] { (void)mlp_from_json(""); }), Contains("not valid JSON"));
  }
}

TEST_CASE("Mlp: descriptions built in code are checked like files", "[mlp]") {
  SECTION("features in another order") {
    MlpDescription d = tiny_description();
    std::swap(d.feature_names[0], d.feature_names[1]);
    const std::string message = error_of([&] { Mlp mlp(d); });
    CHECK_THAT(message, Contains("mlp.features[0]"));
    CHECK_THAT(message, Contains(std::string(kFeatureNames[0])));
  }
  SECTION("feature version") {
    MlpDescription d = tiny_description();
    d.feature_version = 0;
    CHECK_THAT(error_of([&] { Mlp mlp(d); }), Contains("mlp.feature_version"));
  }
  SECTION("no layers") {
    MlpDescription d = tiny_description();
    d.layers.clear();
    CHECK_THAT(error_of([&] { Mlp mlp(d); }), Contains("mlp.layers"));
  }
  SECTION("a layer wider than inference supports") {
    MlpDescription d = tiny_description();
    MlpLayer wide;
    wide.weights = Eigen::MatrixXf::Zero(Mlp::kMaxWidth + 1, kInputs);
    wide.bias = Eigen::VectorXf::Zero(Mlp::kMaxWidth + 1);
    MlpLayer output;
    output.weights = Eigen::MatrixXf::Zero(1, Mlp::kMaxWidth + 1);
    output.bias = Eigen::VectorXf::Zero(1);
    d.layers = {wide, output};
    const std::string message = error_of([&] { Mlp mlp(d); });
    CHECK_THAT(message, Contains("mlp.layers[0] width"));
    CHECK_THAT(message, Contains(std::to_string(Mlp::kMaxWidth + 1)));
  }
  SECTION("a layer exactly as wide as supported works") {
    MlpDescription d = tiny_description();
    MlpLayer wide;
    wide.weights = Eigen::MatrixXf::Constant(Mlp::kMaxWidth, kInputs, 0.001f);
    wide.bias = Eigen::VectorXf::Zero(Mlp::kMaxWidth);
    MlpLayer output;
    output.weights = Eigen::MatrixXf::Constant(1, Mlp::kMaxWidth, -0.001f);
    output.bias = Eigen::VectorXf::Zero(1);
    d.layers = {wide, output};
    const Mlp mlp(d);
    Features f;
    f.fill(20.0f);
    // Each hidden unit: 0.001 * sum of the standardised inputs (all positive here).
    double sum = 0;
    for (int i = 0; i < kInputs; ++i) sum += (20.0 - d.input_mean(i)) / d.input_scale(i);
    const double logit = as_half(-0.001f) * Mlp::kMaxWidth * (as_half(0.001f) * sum);  // at half precision
    CHECK(mlp.efficiency(f) == Approx(1.0 / (1.0 + std::exp(-logit))).epsilon(1e-5));
  }
}
