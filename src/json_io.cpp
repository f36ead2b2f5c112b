// GpuSpec and model weights as JSON. Every read names the file's field on error.
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <variant>

#include "pipeweave/error.hpp"
#include "pipeweave/io.hpp"
#include "json_support.hpp"

namespace pipeweave {
namespace {

using nlohmann::json;
using detail::check_format;
using detail::Fields;
using detail::parse_json;
using detail::read_file;

// GpuSpec's numeric fields, named as in the struct and the file.
struct NumberField {
  std::string_view name;
  std::variant<double GpuSpec::*, int GpuSpec::*> member;
};
constexpr NumberField kGpuNumbers[] = {
    {"compute_capability_major", &GpuSpec::compute_capability_major},
    {"compute_capability_minor", &GpuSpec::compute_capability_minor},
    {"sm_count", &GpuSpec::sm_count},
    {"sm_clock_mhz", &GpuSpec::sm_clock_mhz},
    {"fp32_lanes_per_clk_per_sm", &GpuSpec::fp32_lanes_per_clk_per_sm},
    {"xu_ops_per_clk_per_sm", &GpuSpec::xu_ops_per_clk_per_sm},
    {"smem_bytes_per_clk_per_sm", &GpuSpec::smem_bytes_per_clk_per_sm},
    {"dram_bandwidth_gb_s", &GpuSpec::dram_bandwidth_gb_s},
    {"l2_bandwidth_gb_s", &GpuSpec::l2_bandwidth_gb_s},
    {"l2_bytes", &GpuSpec::l2_bytes},
    {"smem_bytes_per_sm", &GpuSpec::smem_bytes_per_sm},
    {"registers_per_sm", &GpuSpec::registers_per_sm},
    {"max_threads_per_sm", &GpuSpec::max_threads_per_sm},
    {"max_ctas_per_sm", &GpuSpec::max_ctas_per_sm},
    {"memory_gb", &GpuSpec::memory_gb},
    {"link_bandwidth_gb_s", &GpuSpec::link_bandwidth_gb_s},
    {"link_latency_us", &GpuSpec::link_latency_us},
};
// Fields added after version 1 was first written: optional, 0 when absent (unknown).
constexpr NumberField kGpuOptionalNumbers[] = {
    {"max_clock_mhz", &GpuSpec::max_clock_mhz},
    {"sustained_clock_mhz", &GpuSpec::sustained_clock_mhz},
    {"sustained_utilization", &GpuSpec::sustained_utilization},
    {"power_limit_w", &GpuSpec::power_limit_w},
};
constexpr std::pair<std::string_view, double TensorRates::*> kTensorFields[] = {
    {"fp16_bf16", &TensorRates::fp16_bf16},
    {"fp8", &TensorRates::fp8},
    {"tf32", &TensorRates::tf32},
    {"int8", &TensorRates::int8},
};

constexpr std::string_view kGpuFormat = "pipeweave-gpu";
constexpr std::string_view kMlpFormat = "pipeweave-mlp";

}  // namespace

GpuSpec gpu_spec_from_json(std::string_view json_text) {
  const json document = parse_json(json_text, "GPU spec");
  const Fields fields(document, "gpu.");
  std::vector<std::string_view> known{"format", "version", "name", "aliases", "architecture",
                                      "tensor_flops_per_clk_per_sm", "source", "calibration"};
  for (const NumberField& field : kGpuNumbers) known.push_back(field.name);
  for (const NumberField& field : kGpuOptionalNumbers) known.push_back(field.name);
  fields.only(known);
  check_format(fields, kGpuFormat, "gpu.");

  GpuSpec gpu;
  gpu.name = fields.text("name");
  gpu.aliases = fields.texts("aliases");
  gpu.architecture = fields.text("architecture");
  gpu.source = fields.text("source");
  for (const NumberField& field : kGpuNumbers) {
    const std::string key(field.name);
    if (std::holds_alternative<int GpuSpec::*>(field.member))
      gpu.*std::get<int GpuSpec::*>(field.member) = fields.integer(key);
    else
      gpu.*std::get<double GpuSpec::*>(field.member) = fields.number(key);
  }
  for (const NumberField& field : kGpuOptionalNumbers)
    if (fields.has(std::string(field.name))) gpu.*std::get<double GpuSpec::*>(field.member) = fields.number(std::string(field.name));
  const Fields tensor(fields.get("tensor_flops_per_clk_per_sm"), "gpu.tensor_flops_per_clk_per_sm.");
  tensor.only({"fp16_bf16", "fp8", "tf32", "int8"});
  for (const auto& [name, member] : kTensorFields) gpu.tensor_flops_per_clk_per_sm.*member = tensor.number(std::string(name));
  gpu.validate();
  return gpu;
}

std::string to_json(const GpuSpec& gpu) {
  json document = json::object();
  document["format"] = kGpuFormat;
  document["version"] = 1;
  document["name"] = gpu.name;
  document["aliases"] = gpu.aliases;
  document["architecture"] = gpu.architecture;
  for (const NumberField& field : kGpuNumbers)
    std::visit([&](auto member) { document[std::string(field.name)] = gpu.*member; }, field.member);
  for (const NumberField& field : kGpuOptionalNumbers)
    std::visit([&](auto member) { document[std::string(field.name)] = gpu.*member; }, field.member);
  json tensor = json::object();
  for (const auto& [name, member] : kTensorFields) tensor[std::string(name)] = gpu.tensor_flops_per_clk_per_sm.*member;
  document["tensor_flops_per_clk_per_sm"] = tensor;
  document["source"] = gpu.source;
  return document.dump(2) + "\n";
}

GpuSpec load_gpu_spec(const std::filesystem::path& path) {
  try {
    return gpu_spec_from_json(read_file(path, "GPU spec", detail::kMostSmallFileBytes));
  } catch (const Error& error) {
    detail::rethrow_as(error, path.string() + ": " + error.what());
  }
}

void save_gpu_spec(const GpuSpec& gpu, const std::filesystem::path& path) {
  gpu.validate();
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("cannot write GPU spec file " + path.string());
  out << to_json(gpu);
}

GpuSpec resolve_gpu(std::string_view name_or_path) {
  if (name_or_path.ends_with(".json") || name_or_path.ends_with(".json.gz")) return load_gpu_spec(std::filesystem::path(name_or_path));
  return find_gpu(name_or_path);
}

static Eigen::VectorXf to_vector(const std::vector<float>& values) {
  return Eigen::VectorXf(Eigen::Map<const Eigen::VectorXf>(values.data(), static_cast<Eigen::Index>(values.size())));
}

// A layer's packed numbers: standard base64 (RFC 4648, padded) of little-endian IEEE-754 float32
// values, row-major. Text decimals took 12-13 bytes a weight and most of a model's load time; these
// take 5.3 and read back the very floats written. `count` is what the layer's shape says there
// must be; the text is checked for length before anything is decoded, and every value must be finite.
constexpr std::string_view kBase64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// `counted_as`: where the count comes from, for the length's error.
static std::vector<float> packed_floats(const json& value, std::size_t count, const std::string& field,
                                        std::string_view counted_as = "as the layer's shape says") {
  if (!value.is_string()) detail::fail_field(field, detail::excerpt(value), "must be a base64 string of float32 values");
  const std::string& text = value.get_ref<const std::string&>();
  const std::size_t bytes = count * 4;
  const std::size_t expected_length = (bytes + 2) / 3 * 4;
  if (text.size() != expected_length)
    detail::fail_field(field + " length", text.size(),
                       "must be " + std::to_string(expected_length) + " base64 characters (" + std::to_string(count) +
                           " float32 values, " + std::string(counted_as) + ")");
  static constexpr auto kDecode = [] {
    std::array<std::int8_t, 256> table{};
    table.fill(-1);
    for (std::size_t i = 0; i < kBase64Alphabet.size(); ++i)
      table[static_cast<unsigned char>(kBase64Alphabet[i])] = static_cast<std::int8_t>(i);
    return table;
  }();
  std::vector<unsigned char> raw;
  raw.reserve(expected_length / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t quad = 0;
    int padding = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const unsigned char c = static_cast<unsigned char>(text[i + j]);
      const bool last_quad = i + 4 == text.size();
      if (c == '=' && last_quad && j >= 2 && (j == 3 || text[i + 3] == '=')) {
        ++padding;
        quad <<= 6;
        continue;
      }
      if (kDecode[c] < 0 || padding > 0)
        detail::fail_field(field, "byte " + std::to_string(static_cast<int>(c)) + " at " + std::to_string(i + j),
                           "must be base64 (A-Z, a-z, 0-9, +, /; '=' only as the last quad's padding)");
      quad = (quad << 6) | static_cast<std::uint32_t>(kDecode[c]);
    }
    // (RFC 4648's canonical form: the bits a padded quad leaves over are zero, so one text per value)
    if ((padding == 1 && (quad & 0xff) != 0) || (padding == 2 && (quad & 0xffff) != 0))
      detail::fail_field(field, "the padded quad at " + std::to_string(i), "must leave its unused bits zero (canonical base64)");
    raw.push_back(static_cast<unsigned char>(quad >> 16));
    if (padding < 2) raw.push_back(static_cast<unsigned char>(quad >> 8));
    if (padding < 1) raw.push_back(static_cast<unsigned char>(quad));
  }
  if (raw.size() != bytes)
    detail::fail_field(field + " bytes", raw.size(), "must be " + std::to_string(bytes) + " (" + std::to_string(count) + " float32 values)");
  std::vector<float> out(count);
  for (std::size_t v = 0; v < count; ++v) {
    const std::uint32_t bits = static_cast<std::uint32_t>(raw[4 * v]) | static_cast<std::uint32_t>(raw[4 * v + 1]) << 8 |
                               static_cast<std::uint32_t>(raw[4 * v + 2]) << 16 | static_cast<std::uint32_t>(raw[4 * v + 3]) << 24;
    out[v] = std::bit_cast<float>(bits);
    if (!std::isfinite(out[v])) detail::fail_field(field + "[" + std::to_string(v) + "]", out[v], "must be finite");
  }
  return out;
}

static std::string packed_text(const float* values, std::size_t count) {
  std::vector<unsigned char> raw(count * 4);
  for (std::size_t v = 0; v < count; ++v) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(values[v]);
    for (std::size_t b = 0; b < 4; ++b) raw[4 * v + b] = static_cast<unsigned char>(bits >> (8 * b));
  }
  std::string text;
  text.reserve((raw.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < raw.size(); i += 3) {
    const std::size_t left = std::min<std::size_t>(3, raw.size() - i);
    std::uint32_t triple = static_cast<std::uint32_t>(raw[i]) << 16;
    if (left > 1) triple |= static_cast<std::uint32_t>(raw[i + 1]) << 8;
    if (left > 2) triple |= raw[i + 2];
    for (std::size_t j = 0; j < 4; ++j) text += j <= left ? kBase64Alphabet[(triple >> (18 - 6 * j)) & 63] : '=';
  }
  return text;
}

// A layer written as rows of decimals (as version 1 wrote them): "weights" [[...], ...], "bias" [...].
static MlpLayer decimal_layer(const Fields& layer, const std::string& prefix) {
  layer.only({"weights", "bias"});
  const json& weights = layer.get("weights");
  if (!weights.is_array() || weights.empty()) detail::fail_field(prefix + "weights", "(not a matrix)", "must be a non-empty array of rows");
  MlpLayer out;
  out.bias = to_vector(layer.floats("bias"));
  const Eigen::Index rows = static_cast<Eigen::Index>(weights.size());
  for (Eigen::Index r = 0; r < rows; ++r) {
    // Fields keeps a reference to its object, so the wrapper must outlive `holder`.
    const json wrapped{{"row", weights[static_cast<std::size_t>(r)]}};
    const Fields holder(wrapped, prefix + "weights[" + std::to_string(r) + "].");
    const std::vector<float> row = holder.floats("row");
    if (r == 0) out.weights.resize(rows, static_cast<Eigen::Index>(row.size()));
    if (static_cast<Eigen::Index>(row.size()) != out.weights.cols())
      detail::fail_field(prefix + "weights[" + std::to_string(r) + "] length", row.size(),
                         "must equal the first row's " + std::to_string(out.weights.cols()));
    for (Eigen::Index c = 0; c < out.weights.cols(); ++c) out.weights(r, c) = row[static_cast<std::size_t>(c)];
  }
  return out;
}

// A layer packed (as version 2 writes it): "shape" [rows, columns], "weights_base64", "bias_base64".
static MlpLayer packed_layer(const Fields& layer, const std::string& prefix) {
  layer.only({"shape", "weights_base64", "bias_base64"});
  const json& shape = layer.get("shape");
  // (2^20 a side bounds the text a layer may claim: far beyond any network this library trains)
  constexpr std::int64_t kMostSide = std::int64_t{1} << 20;
  const auto side = [&](std::size_t i) {
    if (!shape.is_array() || shape.size() != 2 || !shape[i].is_number_integer() || shape[i].get<std::int64_t>() < 1 ||
        shape[i].get<std::int64_t>() > kMostSide)
      detail::fail_field(prefix + "shape", detail::excerpt(shape), "must be [rows, columns], each 1 to 2^20");
    return shape[i].get<std::int64_t>();
  };
  const std::int64_t rows = side(0), cols = side(1);
  MlpLayer out;
  const std::vector<float> weights =
      packed_floats(layer.get("weights_base64"), static_cast<std::size_t>(rows * cols), prefix + "weights_base64");
  out.weights = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(weights.data(), rows, cols);
  out.bias = to_vector(packed_floats(layer.get("bias_base64"), static_cast<std::size_t>(rows), prefix + "bias_base64"));
  return out;
}

// One network's layers (hidden then output), checked against the widths mlp.network lists;
// `name` is the field the errors name (mlp.layers, mlp.further_networks[N]). `packed`: version 2's
// layers (packed_layer), else version 1's (decimal_layer).
static std::vector<MlpLayer> layers_from_json(const json& layers, const json& hidden, const std::string& name, bool packed) {
  std::vector<MlpLayer> out_layers;
  if (!layers.is_array()) detail::fail_field(name, detail::excerpt(layers), "must be an array");
  if (hidden.size() > static_cast<std::size_t>(Mlp::kMaxHiddenLayers))
    detail::fail_field("mlp.network.hidden_layers", std::to_string(hidden.size()) + " layers",
                       "must list at most " + std::to_string(Mlp::kMaxHiddenLayers));
  if (layers.size() != hidden.size() + 1)
    detail::fail_field(name, layers.size(),
                       "must hold one layer per hidden width plus the output layer (" + std::to_string(hidden.size() + 1) + ")");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string prefix = name + "[" + std::to_string(i) + "].";
    const Fields layer(layers[i], prefix);
    MlpLayer out = packed ? packed_layer(layer, prefix) : decimal_layer(layer, prefix);
    const Eigen::Index rows = out.weights.rows();
    if (i + 1 < layers.size() && (!hidden[i].is_number_integer() || hidden[i].get<Eigen::Index>() != rows))
      detail::fail_field(prefix + "weights rows", rows, "must equal mlp.network.hidden_layers[" + std::to_string(i) + "] = " + detail::excerpt(hidden[i]));
    out_layers.push_back(std::move(out));
  }
  return out_layers;
}

namespace {

// The "network" block: the activations this code runs, and the hidden widths the layers must have.
const json& hidden_widths(const Fields& fields) {
  const Fields network(fields.get("network"), "mlp.network.");
  network.only({"hidden_layers", "activation", "output_activation", "batch_norm"});
  if (network.text("activation") != "relu") detail::fail_field("mlp.network.activation", network.text("activation"), "must be \"relu\"");
  if (network.text("output_activation") != "sigmoid")
    detail::fail_field("mlp.network.output_activation", network.text("output_activation"), "must be \"sigmoid\"");
  if (network.text("batch_norm") != "folded" && network.text("batch_norm") != "none")
    detail::fail_field("mlp.network.batch_norm", network.text("batch_norm"), "must be \"folded\" or \"none\"");
  const json& hidden = network.get("hidden_layers");
  if (!hidden.is_array()) detail::fail_field("mlp.network.hidden_layers", detail::excerpt(hidden), "must be an array of widths");
  return hidden;
}

std::vector<std::vector<MlpLayer>> further_networks_from_json(const json& networks, const json& hidden, bool packed) {
  if (!networks.is_array()) detail::fail_field("mlp.further_networks", detail::excerpt(networks), "must be an array of layer lists");
  detail::check_further_networks(networks.size());  // (before any is read: 100,000 took seconds)
  std::vector<std::vector<MlpLayer>> out;
  for (std::size_t n = 0; n < networks.size(); ++n)
    out.push_back(layers_from_json(networks[n], hidden, "mlp.further_networks[" + std::to_string(n) + "]", packed));
  return out;
}

bool flag_from_json(const json& flag, const std::string& field) {
  if (!flag.is_boolean()) detail::fail_field(field, detail::excerpt(flag), "must be true or false");
  return flag.get<bool>();
}

// A tree's whole numbers, packed as float32 as the layers are (exact below 2^24).
std::vector<std::int32_t> packed_whole_numbers(const json& value, std::size_t count, const std::string& field,
                                               std::string_view counted_as) {
  const std::vector<float> packed = packed_floats(value, count, field, counted_as);
  std::vector<std::int32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (packed[i] != std::trunc(packed[i]) || std::fabs(packed[i]) > static_cast<float>(GemmConfigTree::kMaxNodes))
      detail::fail_field(field + "[" + std::to_string(i) + "]", packed[i], "must be a whole number within +-2^24");
    out[i] = static_cast<std::int32_t>(packed[i]);
  }
  return out;
}

GemmConfig tree_config_from_json(const json& value, const std::string& prefix) {
  const Fields fields(value, prefix);
  fields.only({"tile_m", "tile_n", "tile_k", "split_k", "stages", "cluster_m", "cluster_n", "swap_ab", "schedule", "raster"});
  GemmConfig config;
  config.tile_m = fields.integer("tile_m");
  config.tile_n = fields.integer("tile_n");
  config.tile_k = fields.integer("tile_k");
  config.split_k = fields.integer("split_k");
  config.stages = fields.integer("stages");
  config.cluster_m = fields.integer("cluster_m");
  config.cluster_n = fields.integer("cluster_n");
  config.swap_ab = flag_from_json(fields.get("swap_ab"), prefix + "swap_ab");
  config.schedule = detail::gemm_schedule_field(prefix + "schedule", fields.text("schedule"));
  config.raster = detail::gemm_raster_field(prefix + "raster", fields.text("raster"));
  return config;
}

// The tree's arrays are checked for their lengths as read; its rules (GemmConfigTree::validate)
// when the model is built. The file holds a threshold and a right child for each inner node and a
// config for each leaf, in node order (half the numbers of one of each per node); they are spread
// back over the nodes here.
GemmConfigTree config_tree_from_json(const json& value) {
  const std::string prefix = "mlp.config_tree.";
  const Fields fields(value, prefix);
  fields.only({"inputs", "nodes", "input_base64", "threshold_base64", "right_base64", "config_base64", "configs"});
  const std::vector<std::string> inputs = fields.texts("inputs");
  const auto& known = GemmConfigTree::kInputNames;
  if (inputs.empty() || inputs.size() > known.size() || !std::equal(inputs.begin(), inputs.end(), known.begin()))
    detail::fail_field(prefix + "inputs", detail::excerpt(fields.get("inputs")),
                       "must list the first of the inputs this build computes, in order (log2_m, log2_n, ..., k_multiple_of_256, "
                       "m_mod_8, ..., tiles_past_waves_256x256)");
  const std::int64_t nodes = fields.whole("nodes");
  if (static_cast<std::uint64_t>(nodes) > GemmConfigTree::kMaxNodes) detail::fail_field(prefix + "nodes", nodes, "must be at most 2^24");
  const auto count = static_cast<std::size_t>(nodes);
  GemmConfigTree tree;
  tree.input_count = inputs.size();
  tree.input = packed_whole_numbers(fields.get("input_base64"), count, prefix + "input_base64", "one per node, as nodes says");
  // (checked before the inner nodes are counted from it: the other arrays' lengths follow from it)
  for (std::size_t i = 0; i < count; ++i)
    if (!GemmConfigTree::is_node_input(tree.input[i], tree.input_count))
      detail::fail_field(prefix + "input_base64[" + std::to_string(i) + "]", tree.input[i], GemmConfigTree::node_input_rule(tree.input_count));
  const auto inner = static_cast<std::size_t>(std::count_if(tree.input.begin(), tree.input.end(), [](std::int32_t i) { return i != -1; }));
  const std::vector<float> thresholds =
      packed_floats(fields.get("threshold_base64"), inner, prefix + "threshold_base64", "one per inner node: input_base64 not -1");
  const std::vector<std::int32_t> rights =
      packed_whole_numbers(fields.get("right_base64"), inner, prefix + "right_base64", "one per inner node: input_base64 not -1");
  const std::vector<std::int32_t> configs_at_leaves =
      packed_whole_numbers(fields.get("config_base64"), count - inner, prefix + "config_base64", "one per leaf: input_base64 -1");
  tree.threshold.assign(count, 0.0f);
  tree.right.assign(count, 0);
  tree.config.assign(count, 0);
  for (std::size_t i = 0, at_inner = 0, at_leaf = 0; i < count; ++i) {
    if (tree.input[i] == -1) {
      tree.config[i] = configs_at_leaves[at_leaf++];
    } else {
      tree.threshold[i] = thresholds[at_inner];
      tree.right[i] = rights[at_inner++];
    }
  }
  const json& configs = fields.get("configs");
  if (!configs.is_array()) detail::fail_field(prefix + "configs", detail::excerpt(configs), "must be an array of GEMM configs");
  if (configs.size() > count) detail::fail_field(prefix + "configs entries", configs.size(), "must be at most one per node");
  for (std::size_t c = 0; c < configs.size(); ++c)
    tree.configs.push_back(tree_config_from_json(configs[c], prefix + "configs[" + std::to_string(c) + "]."));
  return tree;
}

std::vector<DType> dtypes_from_json(const json& listed) {
  if (!listed.is_array()) detail::fail_field("mlp.dtypes", detail::excerpt(listed), "must be an array of data types");
  std::vector<DType> dtypes;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const auto dtype = listed[i].is_string() ? parse_dtype(listed[i].get<std::string>()) : std::nullopt;
    if (!dtype)
      detail::fail_field("mlp.dtypes[" + std::to_string(i) + "]", detail::excerpt(listed[i]), "must be a data type (bf16, fp8_e4m3, ...)");
    dtypes.push_back(*dtype);
  }
  return dtypes;
}

std::vector<std::pair<DType, double>> configless_scale_from_json(const json& listed) {
  if (!listed.is_object()) detail::fail_field("mlp.configless_scale", detail::excerpt(listed), "must be an object keyed by data type");
  const Fields scales(listed, "mlp.configless_scale.");
  std::vector<std::pair<DType, double>> out;
  for (const auto& [name, value] : listed.items()) {
    const auto dtype = parse_dtype(name);
    if (!dtype) detail::fail_field("mlp.configless_scale", detail::quoted(name), "must be keyed by data type (bf16, fp8_e4m3, ...)");
    out.emplace_back(*dtype, scales.number(name));
  }
  return out;
}

// The "domain" block: the compute capabilities, feature ranges and balance the model was trained on.
void read_domain(const json& object, MlpDescription& description) {
  const Fields domain(object, "mlp.domain.");
  domain.only({"compute_capabilities", "input_min", "input_max", "balance"});
  const json& capabilities = domain.get("compute_capabilities");
  if (!capabilities.is_array()) detail::fail_field("mlp.domain.compute_capabilities", detail::excerpt(capabilities), "must be an array");
  for (const json& cc : capabilities) {
    if (!cc.is_number_integer() || cc.get<std::int64_t>() < 10 || cc.get<std::int64_t>() > 999)
      detail::fail_field("mlp.domain.compute_capabilities", detail::excerpt(cc), "must hold compute capabilities as major x 10 + minor (90)");
    description.trained_compute_capabilities.push_back(cc.get<int>());
  }
  description.input_min = to_vector(domain.floats("input_min"));
  description.input_max = to_vector(domain.floats("input_max"));
  if (domain.has("balance")) {
    const std::vector<float> balance = domain.floats("balance");
    if (balance.size() != 2) detail::fail_field("mlp.domain.balance", balance.size(), "must be [least, most] flops per byte");
    description.balance_min = balance[0], description.balance_max = balance[1];
  }
}

// The "pipe_efficiency" block: per pipe (and "all"), [bound_us, efficiency] rows.
void read_pipe_efficiency(const json& object, MlpDescription& description) {
  const Fields table(object, "mlp.pipe_efficiency.");
  std::vector<std::string_view> names;
  for (Pipe pipe : kAllPipes) names.push_back(to_string(pipe));
  names.push_back("all");
  table.only(names);
  for (std::size_t p = 0; p < names.size(); ++p) {
    const std::string name(names[p]);
    if (!table.has(name)) continue;
    const json& rows = table.get(name);
    if (!rows.is_array()) detail::fail_field("mlp.pipe_efficiency." + name, detail::excerpt(rows), "must be an array of [bound_us, efficiency]");
    for (const json& row : rows) {
      if (!row.is_array() || row.size() != 2 || !row[0].is_number() || !row[1].is_number())
        detail::fail_field("mlp.pipe_efficiency." + name, detail::excerpt(row), "must hold [bound_us, efficiency] pairs");
      description.pipe_efficiency[p].emplace_back(row[0].get<double>(), row[1].get<double>());
    }
  }
}

// Free-form notes on how the model was made: strings as they are, anything else as its JSON.
std::vector<std::pair<std::string, std::string>> provenance_from_json(const json& provenance) {
  if (!provenance.is_object()) detail::fail_field("mlp.provenance", detail::excerpt(provenance), "must be an object");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : provenance.items())
    out.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

Mlp mlp_from_document(const json& document);

// A model's second view (MlpDescription::second_view): a whole model file's object, its errors
// named as inside the field.
std::shared_ptr<const Mlp> second_view_from_json(const json& value) {
  if (!value.is_object()) detail::fail_field("mlp.second_view", detail::excerpt(value), "must be an object (a model)");
  // (refused before reading it: a file nesting views could otherwise recurse as deep as it nests)
  if (value.contains("second_view")) detail::fail_field("mlp.second_view.second_view", "(a model)", "must be absent: a second view holds none");
  try {
    return std::make_shared<const Mlp>(mlp_from_document(value));
  } catch (const Error& error) {
    detail::rethrow_as(error, std::string("in mlp.second_view: ") + error.what());
  }
}

Mlp mlp_from_document(const json& document) {
  const Fields fields(document, "mlp.");
  fields.only({"format", "version", "op_family", "feature_version", "features", "input_transform", "input_mean",
               "input_scale", "network", "layers", "further_networks", "configless_scale", "for_configless_gemm", "dtypes",
               "config_pick", "config_tree", "second_view", "latency_scale", "protocol", "provenance", "domain",
               "pipe_efficiency"});
  // Version 1 writes the layers' numbers as decimals, version 2 packed (packed_floats).
  const bool packed = check_format(fields, kMlpFormat, "mlp.", 2) == 2;
  MlpDescription description;
  const std::string family = fields.text("op_family");
  const auto parsed_family = parse_op_family(family);
  if (!parsed_family) detail::fail_field("mlp.op_family", family, "must be an op family (gemm, attention, ...)");
  description.family = *parsed_family;
  description.feature_version = fields.integer("feature_version");
  description.feature_names = fields.texts("features");
  if (fields.text("input_transform") != "standardize")
    detail::fail_field("mlp.input_transform", fields.text("input_transform"), "must be \"standardize\"");
  description.input_mean = to_vector(fields.floats("input_mean"));
  description.input_scale = to_vector(fields.floats("input_scale"));

  const json& hidden = hidden_widths(fields);
  description.layers = layers_from_json(fields.get("layers"), hidden, "mlp.layers", packed);
  if (fields.has("further_networks"))
    description.further_networks = further_networks_from_json(fields.get("further_networks"), hidden, packed);
  if (fields.has("for_configless_gemm"))
    description.for_configless_gemm = flag_from_json(fields.get("for_configless_gemm"), "mlp.for_configless_gemm");
  if (fields.has("dtypes")) description.dtypes = dtypes_from_json(fields.get("dtypes"));
  if (fields.has("config_pick")) {
    const std::string pick = fields.text("config_pick");
    const auto parsed = parse_config_pick(pick);
    if (!parsed)
      detail::fail_field("mlp.config_pick", detail::quoted(pick),
                         "must be \"search\", \"analytical_default\" or \"cublas_tree\" (whose config's demand the network reads)");
    description.config_pick = *parsed;
  }
  std::optional<GemmConfigTree> config_tree;  // moved into the model, which owns it
  if (fields.has("config_tree")) config_tree = config_tree_from_json(fields.get("config_tree"));
  if (fields.has("protocol")) {
    const std::string protocol = fields.text("protocol");
    const auto parsed = parse_label_protocol(protocol);
    if (!parsed) detail::fail_field("mlp.protocol", protocol, "must be \"rested\" or \"served\" (how the training rows were timed)");
    description.protocol = *parsed;
  }
  if (fields.has("configless_scale")) description.configless_scale = configless_scale_from_json(fields.get("configless_scale"));
  if (fields.has("latency_scale")) description.latency_scale = fields.number("latency_scale");
  if (fields.has("domain")) read_domain(fields.get("domain"), description);
  if (fields.has("pipe_efficiency")) read_pipe_efficiency(fields.get("pipe_efficiency"), description);
  if (document.contains("provenance")) description.provenance = provenance_from_json(document["provenance"]);
  if (fields.has("second_view")) description.second_view = second_view_from_json(fields.get("second_view"));
  if (config_tree) return Mlp(std::move(description), *std::move(config_tree));
  return Mlp(std::move(description));
}

}  // namespace

Mlp mlp_from_json(std::string_view json_text) { return mlp_from_document(parse_json(json_text, "model weights")); }

// A float written as the shortest decimal that reads back as the same float: nlohmann would
// widen it to double and print up to 17 digits, which nearly doubles a model file's size.
std::vector<double> shortest_decimals(const Eigen::Ref<const Eigen::VectorXf>& values) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(values.size()));
  char text[32];
  for (const float value : values) {
    const auto written = std::to_chars(text, text + sizeof text, value);
    double widened = 0.0;
    std::from_chars(text, written.ptr, widened);
    out.push_back(widened);
  }
  return out;
}

static json layers_to_json(const std::vector<MlpLayer>& network) {
  json layers = json::array();
  for (const MlpLayer& layer : network) {
    const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = layer.weights;
    layers.push_back({{"shape", {layer.weights.rows(), layer.weights.cols()}},
                      {"weights_base64", packed_text(row_major.data(), static_cast<std::size_t>(row_major.size()))},
                      {"bias_base64", packed_text(layer.bias.data(), static_cast<std::size_t>(layer.bias.size()))}});
  }
  return layers;
}

static json config_tree_to_json(const GemmConfigTree& tree) {
  const auto packed_whole = [](const std::vector<std::int32_t>& values) {
    const std::vector<float> floats(values.begin(), values.end());
    return packed_text(floats.data(), floats.size());
  };
  json configs = json::array();
  for (const GemmConfig& c : tree.configs)
    configs.push_back({{"tile_m", c.tile_m}, {"tile_n", c.tile_n}, {"tile_k", c.tile_k}, {"split_k", c.split_k}, {"stages", c.stages},
                       {"cluster_m", c.cluster_m}, {"cluster_n", c.cluster_n}, {"swap_ab", c.swap_ab},
                       {"schedule", std::string(to_string(c.schedule))}, {"raster", std::string(to_string(c.raster))}});
  json inputs = json::array();
  for (std::size_t i = 0; i < tree.input_count; ++i) inputs.push_back(std::string(GemmConfigTree::kInputNames[i]));
  // (the file's layout: see config_tree_from_json)
  std::vector<float> thresholds;
  std::vector<std::int32_t> rights, configs_at_leaves;
  for (std::size_t i = 0; i < tree.input.size(); ++i) {
    if (tree.input[i] == -1) {
      configs_at_leaves.push_back(tree.config[i]);
    } else {
      thresholds.push_back(tree.threshold[i]);
      rights.push_back(tree.right[i]);
    }
  }
  return {{"inputs", inputs},
          {"nodes", tree.input.size()},
          {"input_base64", packed_whole(tree.input)},
          {"threshold_base64", packed_text(thresholds.data(), thresholds.size())},
          {"right_base64", packed_whole(rights)},
          {"config_base64", packed_whole(configs_at_leaves)},
          {"configs", configs}};
}

static json mlp_document(const Mlp& mlp) {
  const MlpDescription& d = mlp.description();
  json document = json::object();
  document["format"] = kMlpFormat;
  document["version"] = 2;
  document["op_family"] = to_string(d.family);
  document["feature_version"] = d.feature_version;
  document["features"] = d.feature_names;
  document["input_transform"] = "standardize";
  document["input_mean"] = shortest_decimals(d.input_mean);
  document["input_scale"] = shortest_decimals(d.input_scale);
  document["network"] = {{"hidden_layers", mlp.hidden_sizes()},
                         {"activation", "relu"},
                         {"output_activation", "sigmoid"},
                         {"batch_norm", "folded"}};
  document["layers"] = layers_to_json(d.layers);
  if (!d.further_networks.empty()) {
    json networks = json::array();
    for (const std::vector<MlpLayer>& network : d.further_networks) networks.push_back(layers_to_json(network));
    document["further_networks"] = networks;
  }
  if (d.for_configless_gemm) document["for_configless_gemm"] = true;
  if (d.config_pick != ConfigPick::search) document["config_pick"] = std::string(to_string(d.config_pick));
  if (d.config_tree) document["config_tree"] = config_tree_to_json(*d.config_tree);
  if (d.second_view) document["second_view"] = mlp_document(*d.second_view);
  if (d.protocol != LabelProtocol::rested) document["protocol"] = std::string(to_string(d.protocol));
  if (!d.dtypes.empty()) {
    json listed = json::array();
    for (DType dtype : d.dtypes) listed.push_back(std::string(to_string(dtype)));
    document["dtypes"] = listed;
  }
  if (d.latency_scale != 1.0) document["latency_scale"] = d.latency_scale;
  if (!d.configless_scale.empty()) {
    json scales = json::object();
    for (const auto& [dtype, scale] : d.configless_scale) scales[std::string(to_string(dtype))] = scale;
    document["configless_scale"] = scales;
  }
  if (d.input_min.size() > 0 || !d.trained_compute_capabilities.empty())
    document["domain"] = {{"compute_capabilities", d.trained_compute_capabilities},
                          {"balance", {d.balance_min, d.balance_max}},
                          {"input_min", shortest_decimals(d.input_min)},
                          {"input_max", shortest_decimals(d.input_max)}};
  if (mlp.has_pipe_efficiency()) {
    json table = json::object();
    for (std::size_t p = 0; p < d.pipe_efficiency.size(); ++p) {
      if (d.pipe_efficiency[p].empty()) continue;
      json rows = json::array();
      for (const auto& [upto, efficiency] : d.pipe_efficiency[p]) rows.push_back({upto, efficiency});
      table[std::string(p < kPipeCount ? to_string(kAllPipes[p]) : "all")] = rows;
    }
    document["pipe_efficiency"] = table;
  }
  json provenance = json::object();
  for (const auto& [key, value] : d.provenance) provenance[key] = value;
  document["provenance"] = provenance;
  return document;
}

std::string to_json(const Mlp& mlp) { return mlp_document(mlp).dump() + "\n"; }

Mlp load_mlp(const std::filesystem::path& path) {
  try {
    return mlp_from_json(read_file(path, "model weights"));
  } catch (const Error& error) {
    detail::rethrow_as(error, path.string() + ": " + error.what());
  }
}

}  // namespace pipeweave
