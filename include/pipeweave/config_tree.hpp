#pragma once
// GemmConfigTree: the config cuBLAS is expected to run for a GEMM given only its shape, a decision
// tree learnt from measured first choices (data/models/served_config_tree.py). cuBLAS's Hopper
// kernels run tiles the library's candidates do not hold (160x256, 208x192, ...), so the config the
// GEMM model picks among those is seldom the one that runs; a network for GEMMs without a config
// that reads the demand of the tree's pick instead (MlpDescription::config_pick = cublas_tree)
// came out about half a point closer on fp8 GEMMs of model families it never saw
// (docs/experiments/served-gemms.md). A pick is one walk down the tree: no search.

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/ops/gemm.hpp"
#include "pipeweave/pipes.hpp"

namespace pipeweave {

struct GemmConfigTree {
  // The inputs a node may split on, in this order, as served_config_tree.py computes them (in
  // double, then float: scikit-learn compares float32 inputs with its thresholds). The GPU enters
  // by its DRAM bandwidth (cuBLAS's heuristics chose differently on the H100 and the H200) and its
  // SM count. The first nine are the shape's scale; the rest its remainders, which name cuBLAS's
  // tiles fitted to m more often (tree_inputs() below; docs/experiments/served-gemms.md).
  static constexpr std::array<std::string_view, 27> kInputNames = {
      "log2_m", "log2_n", "log2_k", "log2_mn", "log2_nk", "log2_mnk", "log2_dram_gb_s", "n_multiple_of_256",
      "k_multiple_of_256", "m_mod_8", "m_mod_16", "m_mod_32", "m_mod_64", "m_mod_128", "m_mod_256", "n_mod_64", "k_mod_64",
      "n_mod_128", "k_mod_128", "n_mod_256", "k_mod_256", "waves_64x128", "waves_128x128", "waves_192x128", "waves_256x128",
      "tiles_past_waves_128x128", "tiles_past_waves_256x256"};
  // The tree reads the first input_count of them: a model file lists those (a tree of the nine
  // alone, as files held before the remainders, reads as it was written).
  std::size_t input_count = kInputNames.size();
  // An entry of `input`: -1 at a leaf, else the index of one of the tree's inputs. One rule for a
  // tree built in code (validate()) and a model file's (checked as it is read, before the other
  // arrays are counted by it).
  static bool is_node_input(std::int32_t value, std::size_t inputs) {
    return value >= -1 && value < static_cast<std::int64_t>(inputs);
  }
  static std::string node_input_rule(std::size_t inputs) {
    return "must be -1 (a leaf) or the index of one of the tree's inputs (0-" + std::to_string(inputs - 1) + ")";
  }
  // The most nodes a tree may hold (node indices are stored as float32: exact to 2^24).
  static constexpr std::size_t kMaxNodes = std::size_t{1} << 24;

  // One entry per node, node 0 the root, in preorder (as scikit-learn numbers them): an inner
  // node's left child is the node after it. input: the input split on, -1 at a leaf; threshold: the
  // walk goes left (to the next node) where the input is at most it, else to `right` (after the
  // left child, so every walk ends; scikit-learn's double threshold is written as the greatest float
  // at or below it, which sends every float input the same way); config: at a leaf, the index of
  // its config in `configs`. (A model file stores threshold and right for the inner nodes only and
  // config for the leaves only: docs/formats.md.)
  std::vector<std::int32_t> input;
  std::vector<float> threshold;
  std::vector<std::int32_t> right, config;
  std::vector<GemmConfig> configs;

  // Throws pipeweave::InvalidInput naming the first field (prefix + name) that breaks a rule.
  void validate(const std::string& prefix = "config_tree.") const {
    const std::size_t nodes = input.size();
    if (nodes == 0) detail::fail_field(prefix + "nodes", 0, "must be at least 1 (the root)");
    if (nodes > kMaxNodes) detail::fail_field(prefix + "nodes", nodes, "must be at most 2^24");
    if (input_count == 0 || input_count > kInputNames.size())
      detail::fail_field(prefix + "inputs entries", input_count, "must be 1-" + std::to_string(kInputNames.size()) + " (the inputs this build computes)");
    for (const auto& [name, size] :
         {std::pair{"threshold", threshold.size()}, std::pair{"right", right.size()}, std::pair{"config", config.size()}})
      if (size != nodes) detail::fail_field(prefix + name + " entries", size, "must be one per node (" + std::to_string(nodes) + ")");
    if (configs.empty()) detail::fail_field(prefix + "configs", 0, "must hold at least one config");
    for (std::size_t c = 0; c < configs.size(); ++c) {
      try {
        configs[c].validate();
      } catch (const InvalidInput& error) {
        throw InvalidInput(prefix + "configs[" + std::to_string(c) + "]: " + error.what());
      }
    }
    for (std::size_t i = 0; i < nodes; ++i) {
      // (a node's field name is built only for its error)
      const auto field = [&](const char* name) { return prefix + name + '[' + std::to_string(i) + ']'; };
      if (input[i] == -1) {
        if (config[i] < 0 || static_cast<std::size_t>(config[i]) >= configs.size())
          detail::fail_field(field("config"), config[i], "must index configs (0-" + std::to_string(configs.size() - 1) + ") at a leaf");
        continue;
      }
      if (!is_node_input(input[i], input_count)) detail::fail_field(field("input"), input[i], node_input_rule(input_count));
      if (i + 2 >= nodes)
        detail::fail_field(field("input"), input[i],
                           "must be -1 at the last two nodes (an inner node's left child is the next node, its right one after it)");
      if (!std::isfinite(threshold[i])) detail::fail_field(field("threshold"), threshold[i], "must be finite");
      if (right[i] <= static_cast<std::int64_t>(i) + 1 || static_cast<std::size_t>(right[i]) >= nodes)
        detail::fail_field(field("right"), right[i],
                           "must be a node after the left child, the next node (" + std::to_string(i + 2) + "-" + std::to_string(nodes - 1) + ")");
    }
  }

  // (A tree that has passed validate(): its walks end inside the arrays.)
  // The config at the leaf this GEMM on this GPU reaches, its split-K cut to the GEMM's K steps
  // where a leaf learnt from longer K asks for more (a split without a step is no kernel).
  GemmConfig pick(const Gemm& gemm, const GpuSpec& gpu) const {
    const std::array<float, kInputNames.size()> inputs = tree_inputs(gemm, gpu);
    std::size_t node = 0;
    while (input[node] >= 0)
      node = inputs[static_cast<std::size_t>(input[node])] <= threshold[node] ? node + 1 : static_cast<std::size_t>(right[node]);
    GemmConfig picked = configs[static_cast<std::size_t>(config[node])];
    const std::int64_t k_steps = (gemm.k - 1) / picked.tile_k + 1;
    if (picked.split_k > k_steps) picked.split_k = static_cast<int>(k_steps);
    return picked;
  }

  // kInputNames' values for a GEMM on a GPU (shape and GPU validated: positive sizes and SMs).
  static std::array<float, kInputNames.size()> tree_inputs(const Gemm& gemm, const GpuSpec& gpu) {
    const double m = std::log2(static_cast<double>(gemm.m)), n = std::log2(static_cast<double>(gemm.n)),
                 k = std::log2(static_cast<double>(gemm.k));
    std::array<float, kInputNames.size()> inputs = {
        static_cast<float>(m), static_cast<float>(n), static_cast<float>(k), static_cast<float>(m + n),
        static_cast<float>(n + k), static_cast<float>(m + n + k), static_cast<float>(std::log2(gpu.dram_bandwidth_gb_s)),
        gemm.n % 256 == 0 ? 1.0f : 0.0f, gemm.k % 256 == 0 ? 1.0f : 0.0f};
    std::size_t at = 9;
    for (std::int64_t d : {8, 16, 32, 64, 128, 256}) inputs[at++] = static_cast<float>(gemm.m % d);
    for (std::int64_t d : {64, 128, 256}) inputs[at++] = static_cast<float>(gemm.n % d), inputs[at++] = static_cast<float>(gemm.k % d);
    // Tiles as served_config_tree.py counts them, the ceiling of a quotient in double (exact: sizes are
    // at most detail::kMostDimension, so products of tiles stay whole below 2^53).
    const double m_size = static_cast<double>(gemm.m), n_size = static_cast<double>(gemm.n), sms = gpu.sm_count;
    for (double t : {64.0, 128.0, 192.0, 256.0})
      inputs[at++] = static_cast<float>(detail::ceil_div(m_size, t) * detail::ceil_div(n_size, 128) / sms);
    for (double t : {128.0, 256.0})
      inputs[at++] = static_cast<float>(std::fmod(detail::ceil_div(m_size, t) * detail::ceil_div(n_size, t), sms));
    return inputs;
  }
};

}  // namespace pipeweave
