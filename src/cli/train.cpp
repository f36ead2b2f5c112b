// `pipeweave train`: fits the efficiency network of one op family on measurement CSVs, with
// shapes held out for the test (and, with --holdout-gpu, a GPU left out of training), and
// writes the model file the Predictor loads.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

std::vector<int> parse_hidden(const std::string& text) {
  std::vector<int> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || value < 1 || value > Mlp::kMaxWidth)
      detail::fail_field("--hidden", text, fmt::format("must be layer widths from 1 to {} joined by commas", Mlp::kMaxWidth));
    sizes.push_back(value);
    start = comma + 1;
  }
  return sizes;
}

double fraction_value(const std::string& flag, const std::string& text) {
  const std::optional<double> value = parse_number(text);
  if (!value || !(*value > 0 && *value < 1)) detail::fail_field(flag, text, "must be a fraction between 0 and 1");
  return *value;
}

int whole(const std::string& flag, const std::string& text, int low, int high) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < low || value > high)
    detail::fail_field(flag, text, fmt::format("must be a whole number from {} to {}", low, high));
  return value;
}

// Joins with a separator (string + ternary concatenation trips g++ 12's -Wrestrict).
std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace

int train_command(int argc, char** argv, int first) {
  std::string op, out, specs_dir, holdout_gpu, init_path, chooser_path;
  bool without_configs = false;
  std::string dtypes_text;
  std::vector<std::string> data;
  std::map<std::string, std::string> specs;
  TrainingOptions options;
  double test_fraction = 0.2, validation_fraction = 0.15;
  std::string command = "pipeweave";
  for (int i = 1; i < argc; ++i) command.append(" ").append(argv[i]);
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw Error(argument + " needs a value");
      return std::string(argv[++i]);
    };
    if (argument == "--op") op = value();
    else if (argument == "--data") data.push_back(value());
    else if (argument == "--out") out = value();
    else if (argument == "--spec") add_named_spec(value(), specs);
    else if (argument == "--specs") specs_dir = value();
    else if (argument == "--holdout-gpu") holdout_gpu = value();
    else if (argument == "--init") init_path = value();
    else if (argument == "--without-configs") without_configs = true;
    else if (argument == "--chooser") chooser_path = value();
    else if (argument == "--dtypes") dtypes_text = value();
    else if (argument == "--rank-weight") {
      const std::string text = value();
      const std::optional<double> weight = parse_number(text);
      if (!weight || !(*weight >= 0)) detail::fail_field("--rank-weight", text, "must be a number >= 0");
      options.rank_weight = *weight;
    }
    else if (argument == "--hidden") options.hidden = parse_hidden(value());
    else if (argument == "--no-batch-norm") options.batch_norm = false;
    else if (argument == "--epochs") options.epochs = whole("--epochs", value(), 1, 100000);
    else if (argument == "--patience") options.patience = whole("--patience", value(), 1, 100000);
    else if (argument == "--batch") options.batch_size = whole("--batch", value(), 2, 1 << 20);
    else if (argument == "--lr") options.learning_rate = fraction_value("--lr", value());
    else if (argument == "--seed") options.seed = static_cast<std::uint64_t>(whole("--seed", value(), 0, 2147483647));
    else if (argument == "--networks") options.networks = whole("--networks", value(), 1, kMaxNetworks);
    else if (argument == "--test-fraction") test_fraction = fraction_value("--test-fraction", value());
    else if (argument == "--validation-fraction") validation_fraction = fraction_value("--validation-fraction", value());
    else throw Error("unknown argument " + argument + " for train");
  }
  const auto family = parse_op_family(op);
  if (!family) detail::fail_field("--op", detail::quoted(op), "must be an op family (gemm, attention, rmsnorm, silu_mul, ...)");
  if (data.empty()) throw Error("train needs --data FILE.csv (a measurement CSV; see data/README.md)");
  if (out.empty()) throw Error("train needs --out MODEL.json");

  std::vector<MeasuredKernel> rows;
  for (const std::string& path : data)
    for (MeasuredKernel& row : read_measurements(path)) {
      if (row.kernel.family() != *family)
        throw Error(fmt::format("{} holds {} rows, not {}", path, to_string(row.kernel.family()), op));
      rows.push_back(std::move(row));
    }
  // GEMMs measured without the config that ran (a CSV of shapes and times only) are what a GEMM
  // given without its config asks: trained as --without-configs, the configs picked by a chooser.
  const bool shapes_only = *family == OpFamily::gemm && !rows.empty() && std::none_of(rows.begin(), rows.end(), [](const MeasuredKernel& row) {
                             return row.kernel.get_if<Gemm>()->config.has_value();
                           });
  if (shapes_only && !without_configs) {
    without_configs = true;
    fmt::print(stderr, "pipeweave train: the GEMM rows come without the config that ran: trained as --without-configs\n");
  }
  if (!chooser_path.empty() && !without_configs) throw Error("--chooser picks the configs for --without-configs; give both");
  if (without_configs && *family != OpFamily::gemm)
    detail::fail_field("--without-configs with --op", op, "must be gemm (the config it leaves out is a GEMM's)");
  if (without_configs && options.rank_weight > 0)
    throw Error("--rank-weight orders a shape's configs; --without-configs keeps one row per shape");
  std::optional<Mlp> init;
  if (!init_path.empty()) init = load_mlp(init_path);
  if (init && init->family() != *family)  // before any work: train_mlp refuses it too
    detail::fail_field("the start model's op family", std::string(to_string(init->family())),
                       "must be the family trained (" + std::string(to_string(*family)) + ")");
  if (init && init->description().for_configless_gemm != without_configs)
    throw Error(init_path + (without_configs ? " is a model for GEMMs with their config: --without-configs trains one for GEMMs without"
                                             : " is a model for GEMMs without a config: fine-tune it with --without-configs"));
  // A network per data type (MlpDescription::dtypes): only the listed types' rows are trained on.
  std::vector<DType> dtypes;
  if (!dtypes_text.empty()) {
    if (!without_configs) throw Error("--dtypes trains a model for GEMMs without a config of those data types; give --without-configs");
    for (const std::string& name : split_list(dtypes_text)) {
      const std::optional<DType> dtype = parse_dtype(name);
      if (!dtype) detail::fail_field("--dtypes", detail::quoted(name), "must list data types (bf16, fp8_e4m3, ...)");
      if (std::find(dtypes.begin(), dtypes.end(), *dtype) != dtypes.end())
        detail::fail_field("--dtypes", detail::quoted(name), "is listed twice");
      dtypes.push_back(*dtype);
    }
    if (dtypes.empty()) detail::fail_field("--dtypes", detail::quoted(dtypes_text), "must name at least one data type");
    if (init && !init->description().dtypes.empty() && init->description().dtypes != dtypes)
      throw Error(init_path + " answers for other data types than --dtypes lists: fine-tune it on its own (leave --dtypes out)");
  } else if (init) {
    dtypes = init->description().dtypes;  // fine-tuned, it answers for what its start did
  }
  if (!dtypes.empty()) {
    // A type with no rows may be listed beside one of the same tensor path that has them (fp16
    // with bf16, fp8_e5m2 with fp8_e4m3): the same MMA rate and operand bytes, the same kernels.
    const auto tensor_path = [](DType dtype) {
      return dtype == DType::fp16 ? DType::bf16 : dtype == DType::fp8_e5m2 ? DType::fp8_e4m3 : dtype;
    };
    std::set<DType> in_data;
    for (const MeasuredKernel& row : rows) in_data.insert(row.kernel.get_if<Gemm>()->dtype);
    const auto has_rows = [&](DType dtype) { return in_data.count(dtype) > 0; };
    for (DType dtype : dtypes)
      if (!has_rows(dtype) && std::none_of(dtypes.begin(), dtypes.end(), [&](DType other) {
            return other != dtype && tensor_path(other) == tensor_path(dtype) && has_rows(other);
          }))
        detail::fail_field("--dtypes", std::string(to_string(dtype)),
                           "must be a data type --data holds GEMM rows of, or listed beside one of its tensor path that has them "
                           "(fp16 with bf16, fp8_e5m2 with fp8_e4m3)");
    std::erase_if(rows, [&](const MeasuredKernel& row) {
      return std::find(dtypes.begin(), dtypes.end(), row.kernel.get_if<Gemm>()->dtype) == dtypes.end();
    });
  }
  std::set<std::string> gpus;
  for (const MeasuredKernel& row : rows) gpus.insert(row.gpu);
  if (!holdout_gpu.empty() && !gpus.count(holdout_gpu))
    detail::fail_field("--holdout-gpu", holdout_gpu, "must be a GPU the data holds");
  std::map<std::string, std::string> spec_sources;
  auto spec_for = [&](const std::string& gpu) { return spec_for_gpu(gpu, specs, specs_dir, spec_sources[gpu]); };
  if (without_configs) {
    // A model for GEMMs given without their config: per GPU and shape, cuBLAS's first choice as
    // measured, with the demand of the config the chooser (a GEMM model) picks for the shape.
    const Predictor chooser = chooser_path.empty() ? Predictor() : Predictor(std::vector<Mlp>{load_mlp(chooser_path)});
    const std::string chooser_name = chooser_path.empty() ? "the bundled GEMM model" : chooser_path;
    if (!chooser.model(OpFamily::gemm))
      detail::fail_field("--chooser", chooser_name, "must hold a GEMM model for GEMMs with their config (it picks the configs)");
    // The test shapes must be new to the chooser too: the same split as its training.
    const std::map<std::string, std::string> recorded(chooser.model(OpFamily::gemm)->description().provenance.begin(),
                                                      chooser.model(OpFamily::gemm)->description().provenance.end());
    const std::pair<const char*, std::string> split[] = {{"split_seed", std::to_string(options.seed)},
                                                         {"test_fraction", fmt::format("{}", test_fraction)},
                                                         {"holdout_gpu", holdout_gpu}};
    // ...which matters only where the chooser learned from a GPU of this data.
    const std::string chooser_gpus = recorded.count("gpus") ? recorded.at("gpus") : "";
    const bool shares_a_gpu = chooser_gpus.empty() || std::any_of(gpus.begin(), gpus.end(), [&](const std::string& gpu) {
                                return chooser_gpus.find(gpu + " ") != std::string::npos || chooser_gpus.find(gpu + ",") != std::string::npos ||
                                       chooser_gpus.ends_with(gpu);
                              });
    for (const auto& [key, value] : split)
      if (shares_a_gpu && recorded.count(key) && recorded.at(key) != value)
        throw Error(fmt::format("--chooser {} was trained with {} \"{}\", this run has \"{}\": its test shapes would not be new "
                                "to the chooser (give the same --seed, --test-fraction and --holdout-gpu)",
                                chooser_name, key, recorded.at(key), value));
    std::map<std::string, GpuSpec> gpu_specs;
    for (const std::string& gpu : gpus) gpu_specs.emplace(gpu, spec_for(gpu));
    std::vector<MeasuredKernel> chosen = first_choices_without_configs(rows);
    if (chosen.empty()) throw Error("--without-configs found no GEMM row marked is_default (cuBLAS's first choice) in --data");
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      chosen[i].kernel = chooser.configured(chosen[i].kernel, gpu_specs.at(chosen[i].gpu));
      if ((i + 1) % 1024 == 0) fmt::print(stderr, "configs chosen for {} of {} (GPU, shape) pairs\n", i + 1, chosen.size());
    }
    fmt::print(stderr, "configs chosen for {} (GPU, shape) pairs by {}\n", chosen.size(), chooser_name);
    rows = std::move(chosen);
  }

  // Shapes, not rows, are split: no shape is in two sets.
  std::vector<MeasuredKernel> train_rows, validation_rows, test_rows;
  for (MeasuredKernel& row : rows) {
    const bool test_shape = shape_held_out(row.shape, options.seed, test_fraction);
    if (test_shape) {
      if (holdout_gpu.empty() || row.gpu == holdout_gpu) test_rows.push_back(std::move(row));
    } else if (row.gpu != holdout_gpu) {
      (shape_held_out(row.shape, options.seed + 1000003, validation_fraction) ? validation_rows : train_rows).push_back(std::move(row));
    }
  }
  const std::vector<TrainingRow> train_set = training_rows(train_rows, spec_for);
  const std::vector<TrainingRow> validation_set = training_rows(validation_rows, spec_for);
  const std::vector<TrainingRow> test_set = training_rows(test_rows, spec_for);
  fmt::print(stderr, "pipeweave train: {} {} rows: {} train, {} validation, {} test{}\n", op, rows.size(), train_set.size(),
             validation_set.size(), test_set.size(), holdout_gpu.empty() ? "" : " (test: " + holdout_gpu + " only, never trained on)");

  const bool ensemble = options.networks > 1 || (init && init->network_count() > 1);
  options.progress = [ensemble](const EpochReport& report) {
    fmt::print(stderr, "{}epoch {:>4}: train MAPE {:7.3f}%  validation {:7.3f}%{}\n",
               ensemble ? fmt::format("network {:>2} ", report.network) : "", report.epoch, report.train_mape_pct,
               report.validation_mape_pct, report.best ? "  (best)" : "");
  };
  const TrainingResult result = train_mlp(*family, train_set, validation_set, options, init ? &*init : nullptr);

  MlpDescription description = result.model.description();
  if (without_configs) {
    description.for_configless_gemm = true;
    description.configless_scale.clear();
    description.dtypes = dtypes;
  } else if (*family == OpFamily::gemm) {
    // Fit on the shapes trained on (train and validation), never on the test shapes.
    std::vector<MeasuredKernel> fitted_rows = train_rows;
    fitted_rows.insert(fitted_rows.end(), validation_rows.begin(), validation_rows.end());
    description.configless_scale = fit_configless_scale(result.model, fitted_rows, spec_for, [](std::size_t done, std::size_t total) {
      fmt::print(stderr, "config-less GEMMs: {} of {} (GPU, shape) pairs trained on predicted without their config\n", done, total);
    });
    for (const auto& [dtype, scale] : description.configless_scale)
      fmt::print(stderr, "config-less {}: measured cuBLAS first choice / least prediction, median {:.4f}\n", to_string(dtype), scale);
  }
  std::vector<std::string> gpu_items;
  for (const auto& [gpu, source] : spec_sources) gpu_items.push_back(gpu + " (" + source + ")");
  const std::string gpu_list = join(gpu_items, ", ");
  description.provenance = {
      {"data", join(data, " ")},
      {"gpus", gpu_list},
      {"rows", fmt::format("{} train, {} validation, {} test", train_set.size(), validation_set.size(), test_set.size())},
      {"split", fmt::format("by shape: seed {}, test fraction {}, validation fraction {}", options.seed, test_fraction,
                            validation_fraction)},
      {"split_seed", std::to_string(options.seed)},
      {"test_fraction", fmt::format("{}", test_fraction)},
      {"holdout_gpu", holdout_gpu},
      {"rank_weight", fmt::format("{}", options.rank_weight)},
      {"validation_mape_pct", fmt::format("{:.3f}", result.best_validation_mape_pct)},
      {"command", command}};
  if (result.model.network_count() == 1) {
    description.provenance.emplace_back("best_epoch", std::to_string(result.best_epoch));
  } else {
    // Each network's best epoch (the weights it keeps), in order.
    std::vector<std::string> best_epochs(result.model.network_count());
    for (const EpochReport& report : result.history)
      if (report.best) best_epochs[static_cast<std::size_t>(report.network)] = std::to_string(report.epoch);
    description.provenance.emplace_back("networks", std::to_string(result.model.network_count()));
    description.provenance.emplace_back("best_epochs", join(best_epochs, " "));
  }
  if (without_configs)
    description.provenance.emplace_back("chooser", chooser_path.empty() ? "the bundled GEMM model" : chooser_path);
  const Mlp model(std::move(description));
  write_text(out, to_json(model));

  if (!test_set.empty()) {
    std::vector<double> measured, bound;
    for (const TrainingRow& row : test_set) measured.push_back(row.measured_us), bound.push_back(row.bound_us);
    const Accuracy trained = accuracy(predict_latencies(model, test_set), measured);
    const Accuracy roofline = accuracy(bound, measured);
    // The network alone, on the label it learned (a row timed back to back: its time alone).
    // Off the model's ground predict answers from the pipe efficiencies instead; eval --held-out
    // scores the model as predict answers, as each row was timed.
    fmt::print("held-out shapes{}, the network alone: {} rows; MAPE {:.2f}% (roofline {:.2f}%), median {:.2f}%, p90 {:.2f}%, "
               "within 10% {:.1f}%, Spearman {:.4f} (eval --held-out scores the model as predict answers)\n",
               holdout_gpu.empty() ? "" : " on " + holdout_gpu, trained.rows, trained.mape_pct, roofline.mape_pct,
               trained.median_ape_pct, trained.p90_ape_pct, trained.within_10_pct, trained.spearman);
  }
  if (result.model.network_count() > 1)
    fmt::print("wrote {} ({} networks, validation MAPE {:.2f}%)\n", out, result.model.network_count(), result.best_validation_mape_pct);
  else
    fmt::print("wrote {} (best epoch {}, validation MAPE {:.2f}%)\n", out, result.best_epoch, result.best_validation_mape_pct);
  return 0;
}

}  // namespace pipeweave::cli
