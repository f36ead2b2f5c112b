// `pipeweave gpus`, `predict` and `rank`: the library's questions asked from the command line.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "tools.hpp"
#include "pipeweave/pipeweave.hpp"
#include "../json_support.hpp"

namespace pipeweave::cli {
namespace {

using nlohmann::json;

struct PredictOptions {
  std::vector<std::string> positional;
  std::string gpu;
  std::string kernels_file;
  std::vector<std::string> models;  // --model: in place of the bundled model of its family
  bool json = false;
  int top = 10;
};

// The three commands share their options; each takes those it uses.
enum class Asking { gpus, predict, rank };

FlagParser predict_flags(Asking asking, PredictOptions& options) {
  FlagParser flags(asking == Asking::gpus ? "gpus" : asking == Asking::predict ? "predict" : "rank");
  flags.flag("--json", options.json);
  if (asking == Asking::gpus) return flags;
  flags.text("--gpu", options.gpu).texts("--model", options.models).text("--kernels", options.kernels_file).positional(options.positional);
  if (asking == Asking::rank) flags.whole("--top", options.top, 0, std::numeric_limits<int>::max());
  return flags;
}

PredictOptions parse(Asking asking, int argc, const char* const* argv, int first) {
  PredictOptions options;
  predict_flags(asking, options).parse(argc, argv, first);
  return options;
}

double tflops(double flops_per_clk_per_sm, const GpuSpec& gpu) {
  return flops_per_clk_per_sm * gpu.sm_count * gpu.clock_hz() / 1e12;
}

int list_gpus(const PredictOptions& arguments) {
  if (arguments.json) {
    json all = json::array();
    for (const GpuSpec& gpu : gpu_catalog()) all.push_back(json::parse(to_json(gpu)));
    fmt::print("{}\n", all.dump(2));
    return 0;
  }
  // What kernels sustain (the spec predictions use) beside the data sheet's peak and clock.
  fmt::print("{:<31} {:<9} {:>4} {:>4} {:>6} {:>9} {:>9} {:>9} {:>7} {:>8} {:>9} {:>7}  {}\n", "name", "arch", "cc", "SMs",
             "MHz", "bf16 TF", "fp8 TF", "DRAM GB/s", "mem GB", "max MHz", "sheet TF", "x busy", "spec");
  for (const GpuSpec& gpu : gpu_catalog()) {
    const GpuSpec& sheet = find_gpu_datasheet(gpu.name);
    fmt::print("{:<31} {:<9} {:>4} {:>4} {:>6.0f} {:>9.1f} {:>9.1f} {:>9.0f} {:>7.0f} {:>8.0f} {:>9.1f} {:>7.3f}  {}\n", gpu.name,
               gpu.architecture, fmt::format("{}.{}", gpu.compute_capability_major, gpu.compute_capability_minor),
               gpu.sm_count, gpu.sm_clock_mhz, tflops(gpu.tensor_flops_per_clk_per_sm.fp16_bf16, gpu),
               tflops(gpu.tensor_flops_per_clk_per_sm.fp8, gpu), gpu.dram_bandwidth_gb_s, gpu.memory_gb, gpu.max_clock_mhz,
               tflops(sheet.tensor_flops_per_clk_per_sm.fp16_bf16, sheet), gpu.sustained_slowdown(),
               gpu.source.starts_with("pipeweave calibrate") ? "calibrated" : "estimated");
  }
  fmt::print("MHz: the clock under a dense tensor load; sheet TF: the data sheet's dense bf16 peak; x busy: tensor-bound\n"
             "kernels' time back to back at the power limit over their time alone (docs/experiments/gpu-specs.md)\n");
  return 0;
}

// A document of `fields` (scalars, their keys before `key` in order) and `key`'s list of `count`
// rows, row(i) each, written a row at a time as json{..., {key, rows}}.dump(2) lays it out: the
// whole document held at once took 175 times a kernels file's size (500,000 lines: 2.3 GB).
template <typename Row>
void print_rows_document(const json& fields, const std::string& key, std::size_t count, const Row& row) {
  std::string head = "{\n";
  for (const auto& [name, value] : fields.items()) head += "  " + json(name).dump() + ": " + value.dump() + ",\n";
  fmt::print("{}  {}: {}", head, json(key).dump(), count == 0 ? "[]\n}\n" : "[\n");
  for (std::size_t i = 0; i < count; ++i) {
    std::string text = "    " + row(i).dump(2);
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) text.insert(at + 1, "    ");
    fmt::print("{}{}\n", text, i + 1 < count ? "," : "");
  }
  if (count > 0) fmt::print("  ]\n}}\n");
}

// A kernels file's kernels, one a line ('#' starts a comment): read as every input is (a directory
// refused by name, gzip inflated), a UTF-8 byte order mark at its start passed over, and a file
// that holds none refused (a directory or an empty file once read as no kernels beside the
// command line's).
std::vector<std::string> read_kernel_lines(const std::string& path) {
  std::string text = detail::read_file(path, "kernels");
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    lines.push_back(line.substr(first, line.find_last_not_of(" \t\r") - first + 1));
  }
  if (lines.empty()) throw InvalidInput("kernels file " + path + " holds no kernel (one a line, '#' starting a comment)");
  return lines;
}

// Whether `model`, one of `given`, would answer for `kernel`: a model of its family, and a model
// for GEMMs without a config only for such a GEMM of a data type it lists (a GEMM given its config
// is the GEMM model's; without one, the GEMM model still picks its config, unless a given model
// for that type picks it without a search: the analytical default config or its decision tree's).
bool answers_kernel(const Mlp& model, const Kernel& kernel, const std::vector<Mlp>& given) {
  if (kernel.family() != model.family()) return false;
  const Gemm* gemm = kernel.get_if<Gemm>();
  if (!model.description().for_configless_gemm)
    return !gemm || gemm->config || std::none_of(given.begin(), given.end(), [&](const Mlp& other) {
             return other.description().config_pick != ConfigPick::search && other.answers_for(gemm->dtype);
           });
  return gemm && !gemm->config && model.answers_for(gemm->dtype);
}

// The bundled models, each --model in the place of its family's. A model that would answer none
// of the kernels is refused, as an option that cannot apply (it went unused); models for GEMMs
// without a config of several data types are a set, refused only where none of them answers.
Predictor predictor_for(const PredictOptions& arguments, const std::vector<Kernel>& kernels) {
  std::vector<Mlp> models = load_models("--model", arguments.models);
  std::vector<bool> answers(models.size());  // whether each model answers any kernel
  bool configless_set_used = false;
  for (std::size_t i = 0; i < models.size(); ++i) {
    answers[i] = std::any_of(kernels.begin(), kernels.end(), [&](const Kernel& k) { return answers_kernel(models[i], k, models); });
    configless_set_used = configless_set_used || (answers[i] && models[i].description().for_configless_gemm);
  }
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Mlp& model = models[i];
    if (answers[i] || (model.description().for_configless_gemm && configless_set_used)) continue;
    const std::string family(to_string(model.family()));
    const bool family_asked = std::any_of(kernels.begin(), kernels.end(), [&](const Kernel& k) { return k.family() == model.family(); });
    if (!model.description().for_configless_gemm && family_asked)  // (GEMMs without a config, of a type picked without a search)
      FlagParser::fail("--model", arguments.models[i],
                       "must be a model of a kernel asked: it is a GEMM model for GEMMs with their config, and every GEMM asked comes "
                       "without one and is answered at the config another --model picks without a search (the analytical default or "
                       "a decision tree's)");
    if (!model.description().for_configless_gemm || !family_asked)
      FlagParser::fail("--model", arguments.models[i],
                       fmt::format("must be a model of a kernel asked: it is a {} model, and no {} kernel is asked", family, family));
    // (rank predicts each candidate with its config: the GEMM given without one has none left)
    FlagParser::fail("--model", arguments.models[i],
                     fmt::format("must be a model of a kernel asked: it is a model for {}, and every GEMM predicted has its config{}",
                                 configless_place(model), model.description().dtypes.empty() ? "" : " or another data type"));
  }
  return models.empty() ? Predictor() : Predictor().with(std::move(models));
}

// What predict and rank are asked: the GPU, and the kernels from the command line and --kernels
// (`none_given` says what is missing when there are none).
struct Asked {
  GpuSpec gpu;
  std::vector<std::string> texts;
  std::vector<Kernel> kernels;
};

Asked asked(const PredictOptions& arguments, const std::string& command, const std::string& none_given) {
  if (arguments.gpu.empty()) throw InvalidInput(command + " needs --gpu NAME or --gpu spec.json");
  Asked out{resolve_gpu(arguments.gpu), arguments.positional, {}};
  if (!arguments.kernels_file.empty())
    for (std::string& line : read_kernel_lines(arguments.kernels_file)) out.texts.push_back(std::move(line));
  if (out.texts.empty()) throw InvalidInput(command + " needs " + none_given);
  for (const std::string& text : out.texts) out.kernels.push_back(parse_kernel(text));
  return out;
}

int predict(const PredictOptions& arguments) {
  const Asked question = asked(arguments, "predict", "at least one KERNEL (e.g. gemm:m=4096,n=4096,k=4096)");
  const GpuSpec& gpu = question.gpu;
  const std::vector<std::string>& texts = question.texts;
  const std::vector<Kernel>& kernels = question.kernels;

  const Predictor predictor = predictor_for(arguments, kernels);
  const std::vector<Prediction> predictions = predictor.predict(kernels, gpu);
  if (arguments.json) {
    print_rows_document({{"gpu", gpu.name}}, "predictions", kernels.size(), [&](std::size_t i) -> json {
      const Prediction& p = predictions[i];
      return {{"kernel", to_string(kernels[i])},
                      {"op_family", to_string(kernels[i].family())},
                      {"latency_us", p.latency_us},
                      {"lower_bound_us", p.lower_bound_us},
                      {"efficiency", p.efficiency},
                      {"bottleneck", to_string(p.bottleneck)},
                      {"source", to_string(p.source)},
                      {"protocol", to_string(p.protocol)},
                      {"config", describe_config(predictor.configured(kernels[i], gpu), gpu)},
                      {"config_defaulted", p.config_defaulted},
                      {"extrapolated", p.extrapolated}};
    });
    return 0;
  }
  fmt::print("GPU {} ({} SMs at {:.0f} MHz)\n", gpu.name, gpu.sm_count, gpu.sm_clock_mhz);
  fmt::print("{:>12} {:>12} {:>6} {:<10} {:<16} {}\n", "latency_us", "bound_us", "eff", "bottleneck", "source",
             "kernel [config]");
  double total = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Prediction& p = predictions[i];
    total += p.latency_us;
    fmt::print("{:>12.2f} {:>12.2f} {:>6.3f} {:<10} {:<16} {} [{}]\n", p.latency_us, p.lower_bound_us, p.efficiency,
               to_string(p.bottleneck), to_string(p.source), texts[i], describe_config(predictor.configured(kernels[i], gpu), gpu));
  }
  if (kernels.size() > 1) fmt::print("{:>12.2f} total\n", total);
  return 0;
}

// One GEMM without a config: the library's candidates; otherwise the kernels as given.
int rank(const PredictOptions& arguments) {
  Asked question = asked(arguments, "rank", "a GEMM (e.g. gemm:m=4096,n=4096,k=4096), a fused_moe, or the candidate KERNELs");
  const GpuSpec& gpu = question.gpu;
  const std::vector<std::string>& texts = question.texts;
  std::vector<Kernel>& candidates = question.kernels;
  const Gemm* gemm = candidates.size() == 1 ? candidates.front().get_if<Gemm>() : nullptr;
  const FusedMoe* moe = candidates.size() == 1 ? candidates.front().get_if<FusedMoe>() : nullptr;
  if (candidates.size() == 1 && !(gemm && !gemm->config) && !(moe && !moe->config))
    throw InvalidInput("rank takes one GEMM or fused_moe without a config (its candidates are enumerated) or two or more KERNELs, got " +
                    texts.front());
  // The one shape given, once with each of its configs (the shape is copied before the list it
  // came from is cleared).
  const auto with_each_config = [&candidates](auto shape, const auto& configs) {
    candidates.clear();
    for (const auto& config : configs) {
      shape.config = config;
      candidates.push_back(shape);
    }
  };
  if (moe) with_each_config(*moe, fused_moe_candidates(*moe, gpu));
  if (gemm) {
    with_each_config(*gemm, gemm_candidates(*gemm, gpu));
    if (candidates.empty()) throw InvalidInput("no GEMM config fits " + gpu.name + "'s shared memory for " + texts.front());
  }
  const Predictor predictor = predictor_for(arguments, candidates);
  const std::vector<RankedCandidate> ranked = predictor.rank(candidates, gpu);
  const std::size_t shown = arguments.top == 0 ? ranked.size() : std::min<std::size_t>(ranked.size(), arguments.top);
  if (arguments.json) {
    print_rows_document({{"candidates", ranked.size()}, {"gpu", gpu.name}}, "ranked", shown, [&](std::size_t r) -> json {
      const Prediction& p = ranked[r].prediction;
      return {{"rank", r + 1},
                      {"kernel", to_string(candidates[ranked[r].index])},
                      {"latency_us", p.latency_us},
                      {"lower_bound_us", p.lower_bound_us},
                      {"efficiency", p.efficiency},
                      {"bottleneck", to_string(p.bottleneck)},
                      {"source", to_string(p.source)},
                      {"protocol", to_string(p.protocol)},
                      {"extrapolated", p.extrapolated}};
    });
    return 0;
  }
  fmt::print("GPU {}: {} candidates, fastest first\n", gpu.name, ranked.size());
  fmt::print("{:>5} {:>12} {:>12} {:>6} {:<10} {}\n", "rank", "latency_us", "bound_us", "eff", "bottleneck", "kernel");
  for (std::size_t r = 0; r < shown; ++r) {
    const Prediction& p = ranked[r].prediction;
    fmt::print("{:>5} {:>12.2f} {:>12.2f} {:>6.3f} {:<10} {}\n", r + 1, p.latency_us, p.lower_bound_us, p.efficiency,
               to_string(p.bottleneck), to_string(candidates[ranked[r].index]));
  }
  if (shown < ranked.size()) fmt::print("({} more; --top 0 prints all)\n", ranked.size() - shown);
  if (!ranked.empty() && ranked.front().prediction.source == PredictionSource::analytical_bound)
    fmt::print("(no trained model for this op family: ranked by the roofline bound alone)\n");
  return 0;
}

}  // namespace

int gpus_command(int argc, const char* const* argv, int first) { return list_gpus(parse(Asking::gpus, argc, argv, first)); }
int predict_command(int argc, const char* const* argv, int first) { return predict(parse(Asking::predict, argc, argv, first)); }
int rank_command(int argc, const char* const* argv, int first) { return rank(parse(Asking::rank, argc, argv, first)); }

std::vector<std::string> gpus_flag_names() {
  PredictOptions options;
  return predict_flags(Asking::gpus, options).names();
}
std::vector<std::string> predict_flag_names() {
  PredictOptions options;
  return predict_flags(Asking::predict, options).names();
}
std::vector<std::string> rank_flag_names() {
  PredictOptions options;
  return predict_flags(Asking::rank, options).names();
}

}  // namespace pipeweave::cli
