#pragma once
// Helpers shared by the unit tests.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <sstream>
#include <cmath>
#include <string>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/mlp.hpp"

namespace pipeweave_test {

// The message of the pipeweave::Error that `action` throws; fails the test if it throws none.
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const pipeweave::Error& error) {
    return error.what();
  }
  FAIL("expected pipeweave::Error, nothing was thrown");
  return {};
}

// A file's whole text; fails the test if it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A model description with no layers yet, its inputs passed through unscaled.
inline pipeweave::MlpDescription empty_description(pipeweave::OpFamily family) {
  constexpr int inputs = static_cast<int>(pipeweave::kFeatureCount);
  pipeweave::MlpDescription d;
  d.family = family;
  d.feature_names = std::vector<std::string>(pipeweave::kFeatureNames.begin(), pipeweave::kFeatureNames.end());
  d.input_mean = Eigen::VectorXf::Zero(inputs);
  d.input_scale = Eigen::VectorXf::Ones(inputs);
  return d;
}

// A model whose answer does not depend on the kernel: hidden weights all zero, so the
// output is sigmoid(bias) and the bias is chosen for the wanted efficiency.
inline pipeweave::Mlp constant_model(pipeweave::OpFamily family, double efficiency) {
  constexpr int inputs = static_cast<int>(pipeweave::kFeatureCount);
  pipeweave::MlpDescription d = empty_description(family);
  pipeweave::MlpLayer hidden;
  hidden.weights = Eigen::MatrixXf::Zero(3, inputs);
  hidden.bias = Eigen::VectorXf::Zero(3);
  pipeweave::MlpLayer output;
  output.weights = Eigen::MatrixXf::Zero(1, 3);
  output.bias = Eigen::VectorXf::Constant(1, static_cast<float>(std::log(efficiency / (1 - efficiency))));
  d.layers = {hidden, output};
  return pipeweave::Mlp(d);
}

}  // namespace pipeweave_test
