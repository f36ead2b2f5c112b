// `pipeweave train`: fits the efficiency network of one op family on measurement CSVs, with
// shapes held out for the test (and, with --holdout-gpu, a GPU left out of training), and
// writes the model file the Predictor loads.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "flags.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

std::vector<int> parse_hidden(const std::string& text) {
  std::vector<int> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::optional<std::int64_t> value = parse_whole(text.substr(start, comma - start));
    if (!value || *value < 1 || *value > Mlp::kMaxWidth)
      FlagParser::fail("--hidden", text, fmt::format("must be layer widths from 1 to {} joined by commas", Mlp::kMaxWidth));
    sizes.push_back(static_cast<int>(*value));
    start = comma + 1;
  }
  if (sizes.size() > static_cast<std::size_t>(Mlp::kMaxHiddenLayers))
    FlagParser::fail("--hidden", text, fmt::format("must list at most {} hidden layers", Mlp::kMaxHiddenLayers));
  return sizes;
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


struct TrainArguments {
  std::string op, out, specs_dir, holdout_gpu, init_path, chooser_path;
  bool configless = false;  // --without-configs: a GEMM given without its config
  ConfigPick config_pick = ConfigPick::search;  // --config-pick: whose config's demand it reads
  bool config_pick_given = false;
  std::string dtypes_text;
  std::optional<LabelProtocol> protocol;  // --protocol: how the rows were timed (checked against them; else read from them)
  std::vector<std::string> data;
  std::map<std::string, std::string> specs;
  TrainingOptions options;
  double test_fraction = 0.2, validation_fraction = 0.15;
  bool no_batch_norm = false;
  bool hidden_given = false;  // --hidden (a start model's layers are its own)
  int seed = static_cast<int>(TrainingOptions{}.seed);
  std::string command;  // as typed: recorded in the model's provenance
};

bool a_fraction(double value) { return value > 0 && value < 1; }
constexpr const char* kFraction = "must be a fraction between 0 and 1";
// A step Adam can take in float weights: 1e-300 passed as a fraction and trained nothing.
bool a_learning_rate(double value) { return value >= 1e-7 && value < 1; }
constexpr const char* kLearningRate = "must be from 1e-7 to below 1 (smaller steps vanish in float weights)";

FlagParser train_flags(TrainArguments& a) {
  FlagParser flags("train");
  flags.text("--op", a.op)
      .texts("--data", a.data)
      .text("--out", a.out)
      .customs("--spec", [&a](const std::string& text) { add_named_spec(text, a.specs); })
      .text("--specs", a.specs_dir)
      .text("--holdout-gpu", a.holdout_gpu)
      .text("--init", a.init_path)
      .custom("--hidden",
              [&a](const std::string& text) {
                a.options.hidden = parse_hidden(text);
                a.hidden_given = true;
              })
      .whole("--epochs", a.options.epochs, 1, 100000)
      .whole("--patience", a.options.patience, 1, 100000)
      .whole("--batch", a.options.batch_size, 2, 1 << 20)
      .number("--lr", a.options.learning_rate, a_learning_rate, kLearningRate)
      .whole("--seed", a.seed, 0, 2147483647)
      .number("--test-fraction", a.test_fraction, a_fraction, kFraction)
      .number("--validation-fraction", a.validation_fraction, a_fraction, kFraction)
      .flag("--no-batch-norm", a.no_batch_norm)
      .number("--rank-weight", a.options.rank_weight, [](double w) { return w >= 0; }, "must be a number >= 0")
      .whole("--networks", a.options.networks, 1, kMaxNetworks)
      .flag("--without-configs", a.configless)
      .text("--chooser", a.chooser_path)
      .custom("--config-pick",
              [&a](const std::string& text) {
                const auto pick = parse_config_pick(text);
                if (!pick) FlagParser::fail("--config-pick", text, "must be search, analytical_default or cublas_tree");
                a.config_pick = *pick;
                a.config_pick_given = true;
              })
      .text("--dtypes", a.dtypes_text)
      .choice("--protocol", a.protocol, {{"rested", LabelProtocol::rested}, {"served", LabelProtocol::served}});
  return flags;
}

TrainArguments parse(int argc, const char* const* argv, int first) {
  TrainArguments a;
  train_flags(a).parse(argc, argv, first);
  // (--init is read whole first: a model fine-tuned in place is written over on purpose)
  std::vector<std::pair<std::string, std::string>> inputs{{"--chooser", a.chooser_path}};
  for (const std::string& path : a.data) inputs.emplace_back("--data", path);
  for (const auto& [gpu, path] : a.specs) inputs.emplace_back("--spec", path);
  check_output("--out", a.out, inputs);
  check_specs_folder(a.specs_dir);
  if (a.hidden_given && !a.init_path.empty())
    throw InvalidInput("--hidden sets a new network's layers; the start model (--init) keeps its own: give one of them");
  if (a.no_batch_norm && !a.init_path.empty())
    throw InvalidInput("--no-batch-norm builds a new network without batch normalisation; the start model (--init) keeps its own");
  a.options.seed = static_cast<std::uint64_t>(a.seed);
  if (a.no_batch_norm) a.options.batch_norm = false;
  a.command = "pipeweave";
  for (int i = 1; i < argc; ++i) a.command.append(" ").append(argv[i]);
  return a;
}

// Every row of --data, all of the family trained.
std::vector<MeasuredKernel> read_rows(const TrainArguments& a, OpFamily family) {
  std::vector<MeasuredKernel> rows;
  for (const std::string& path : a.data)
    for (MeasuredKernel& row : read_measurements(path)) {
      if (row.kernel.family() != family)
        throw InvalidInput(fmt::format("{} holds {} rows, not {}", path, to_string(row.kernel.family()), a.op));
      rows.push_back(std::move(row));
    }
  return rows;
}

// Whether this trains the model for GEMMs given without their config, and whether the options
// asked for go with what is trained.
void check_mode(TrainArguments& a, OpFamily family, const std::vector<MeasuredKernel>& rows) {
  // GEMMs measured without the config that ran (a CSV of shapes and times only) are what a GEMM
  // given without its config asks: trained as --without-configs, the configs picked by a chooser.
  const bool shapes_only = family == OpFamily::gemm && !rows.empty() && std::none_of(rows.begin(), rows.end(), [](const MeasuredKernel& row) {
                             return row.kernel.get_if<Gemm>()->config.has_value();
                           });
  if (shapes_only && !a.configless) {
    a.configless = true;
    fmt::print(stderr, "pipeweave train: the GEMM rows come without the config that ran: trained as --without-configs\n");
  }
  if (!a.chooser_path.empty() && !a.configless) throw InvalidInput("--chooser picks the configs for --without-configs; give both");
  if (a.config_pick_given && !a.configless) throw InvalidInput("--config-pick says whose config --without-configs reads; give both");
  if (!a.chooser_path.empty() && a.config_pick != ConfigPick::search)
    throw InvalidInput("--chooser picks configs by a GEMM model; --config-pick " + std::string(to_string(a.config_pick)) +
                       " takes another config: give one of them");
  // (a tree is learnt elsewhere, data/models/served_config_tree_model.py; fine-tuning keeps the start's)
  if (a.config_pick == ConfigPick::cublas_tree && a.init_path.empty())
    throw InvalidInput("--config-pick cublas_tree needs the tree of a start model (--init): train cannot learn one");
  if (a.configless && family != OpFamily::gemm)
    FlagParser::fail("--without-configs with --op", a.op, "must be gemm (the config it leaves out is a GEMM's)");
  if (a.configless && a.options.rank_weight > 0)
    throw InvalidInput("--rank-weight orders a shape's configs; --without-configs keeps one row per shape");
}

// The ranking term pairs rows of one shape on one GPU (training_rows' groups) and learns how their
// times differ: with no shape trained on under two configs, it would train exactly as without it.
void check_rank_pairs(const TrainArguments& a, const std::vector<MeasuredKernel>& rows) {
  if (a.options.rank_weight <= 0 || a.configless) return;
  std::unordered_map<std::string, std::string> first_kernel;  // gpu|shape -> the first row's kernel
  const bool paired = std::any_of(rows.begin(), rows.end(), [&](const MeasuredKernel& row) {
    if (row.gpu == a.holdout_gpu) return false;  // tested on, never trained on
    const std::string kernel = to_string(row.kernel);
    const auto [found, added] = first_kernel.emplace(row.gpu + "|" + row.shape, kernel);
    return !added && found->second != kernel;
  });
  if (!paired)
    throw InvalidInput(fmt::format("--rank-weight orders a shape's configs, and no shape of these {} rows (--op {}) is trained on "
                                   "under two configs: there is nothing to order",
                                   rows.size(), a.op));
}

// --init: the model fine-tuned, checked before any work (train_mlp refuses a wrong one too).
std::optional<Mlp> start_model(const TrainArguments& a, OpFamily family) {
  if (a.init_path.empty()) return std::nullopt;
  Mlp init = load_mlp(a.init_path);
  if (init.family() != family)
    throw InvalidInput(fmt::format("the start model's op family must be the family trained ({}), got {}", to_string(family),
                                   to_string(init.family())));
  if (init.description().for_configless_gemm != a.configless)
    throw InvalidInput(a.init_path + (a.configless
                                          ? " is a model for GEMMs with their config: --without-configs trains one for GEMMs without"
                                          : " is a model for GEMMs without a config: fine-tune it with --without-configs"));
  return init;
}

// A fine-tuned model for GEMMs without a config reads the demand it learnt from: its start's pick,
// which --config-pick, where given, must name.
void keep_start_pick(TrainArguments& a, const std::optional<Mlp>& init) {
  if (!init || !a.configless) return;
  const ConfigPick start = init->description().config_pick;
  if (a.config_pick_given && a.config_pick != start)
    FlagParser::fail("--config-pick", std::string(to_string(a.config_pick)),
                     fmt::format("must be the start model's pick: {} reads the {} config's demand", a.init_path, to_string(start)));
  a.config_pick = start;
  if (!a.chooser_path.empty() && start != ConfigPick::search)
    throw InvalidInput(a.init_path + " reads the " + std::string(to_string(start)) + " config's demand: --chooser picks no config for it");
}

// How the rows were timed, from their l2 column (MeasuredKernel::served): every row served, or
// none (rested; the published rows timed back to back are learnt as their time alone). --protocol,
// where given, and the start model must agree: a model records one protocol for all it answers.
LabelProtocol rows_protocol(const TrainArguments& a, const std::vector<MeasuredKernel>& rows, const std::optional<Mlp>& init) {
  const auto served =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const MeasuredKernel& row) { return row.served; }));
  if (served != 0 && served != rows.size())
    throw InvalidInput(fmt::format("the rows were timed two ways: {} served (l2 column \"served\") and {} not; train on rows of "
                                   "one protocol",
                                   served, rows.size() - served));
  const LabelProtocol found = served > 0 ? LabelProtocol::served : LabelProtocol::rested;
  if (a.protocol && *a.protocol != found)
    FlagParser::fail("--protocol", std::string(to_string(*a.protocol)),
                     fmt::format("must say how the rows were timed: {} of their {} are served (l2 column)", served, rows.size()));
  if (init && init->description().protocol != found)
    throw InvalidInput(fmt::format("{} learnt from {} rows and these are {}: fine-tune it on rows timed the same way", a.init_path,
                                   to_string(init->description().protocol), to_string(found)));
  return found;
}

// The data types a model for GEMMs without a config answers for (MlpDescription::dtypes; empty:
// all): --dtypes, else what the start model answered for.
std::vector<DType> answered_dtypes(const TrainArguments& a, const std::optional<Mlp>& init) {
  if (a.dtypes_text.empty()) return init ? init->description().dtypes : std::vector<DType>{};
  if (!a.configless)
    throw InvalidInput("--dtypes trains a model for GEMMs without a config of those data types; give --without-configs");
  std::vector<DType> dtypes;
  for (const std::string& name : split_list("--dtypes", a.dtypes_text)) {
    const std::optional<DType> dtype = parse_dtype(name);
    if (!dtype) FlagParser::fail("--dtypes", name, "must list data types (bf16, fp8_e4m3, ...)");
    if (std::find(dtypes.begin(), dtypes.end(), *dtype) != dtypes.end())
      FlagParser::fail("--dtypes", name, "is listed twice");
    dtypes.push_back(*dtype);
  }
  if (dtypes.empty()) FlagParser::fail("--dtypes", a.dtypes_text, "must name at least one data type");
  if (init && !init->description().dtypes.empty() && init->description().dtypes != dtypes)
    throw InvalidInput(a.init_path + " answers for other data types than --dtypes lists: fine-tune it on its own (leave --dtypes out)");
  return dtypes;
}

// Keeps the rows of the listed data types. A type with no rows may be listed beside one of the
// same tensor path that has them (fp16 with bf16, fp8_e5m2 with fp8_e4m3): the same MMA rate and
// operand bytes, the same kernels.
void keep_dtypes(const std::vector<DType>& dtypes, std::vector<MeasuredKernel>& rows) {
  if (dtypes.empty()) return;
  const auto tensor_path = [](DType dtype) { return dtype == DType::fp16 ? DType::bf16 : dtype == DType::fp8_e5m2 ? DType::fp8_e4m3 : dtype; };
  std::set<DType> in_data;
  for (const MeasuredKernel& row : rows) in_data.insert(row.kernel.get_if<Gemm>()->dtype);
  const auto has_rows = [&](DType dtype) { return in_data.count(dtype) > 0; };
  for (DType dtype : dtypes)
    if (!has_rows(dtype) && std::none_of(dtypes.begin(), dtypes.end(), [&](DType other) {
          return other != dtype && tensor_path(other) == tensor_path(dtype) && has_rows(other);
        }))
      FlagParser::fail("--dtypes", std::string(to_string(dtype)),
                         "must be a data type --data holds GEMM rows of, or listed beside one of its tensor path that has them "
                         "(fp16 with bf16, fp8_e5m2 with fp8_e4m3)");
  std::erase_if(rows, [&](const MeasuredKernel& row) {
    return std::find(dtypes.begin(), dtypes.end(), row.kernel.get_if<Gemm>()->dtype) == dtypes.end();
  });
}

using SpecFor = std::function<GpuSpec(const std::string&)>;

// --without-configs' chooser where it searches (--chooser, else the bundled GEMM model), as named
// in messages.
std::string chooser_name(const TrainArguments& a) { return a.chooser_path.empty() ? "the bundled GEMM model" : a.chooser_path; }

// That chooser, checked before any work: it holds a GEMM model, and its test shapes are this run's.
Predictor checked_chooser(const TrainArguments& a, const std::set<std::string>& gpus) {
  Predictor chooser = a.chooser_path.empty() ? Predictor() : Predictor(std::vector<Mlp>{load_mlp(a.chooser_path)});
  if (!chooser.model(OpFamily::gemm))
    FlagParser::fail("--chooser", chooser_name(a), "must hold a GEMM model for GEMMs with their config (it picks the configs)");
  // The test shapes must be new to the chooser too: the same split as its training...
  const std::map<std::string, std::string> recorded(chooser.model(OpFamily::gemm)->description().provenance.begin(),
                                                    chooser.model(OpFamily::gemm)->description().provenance.end());
  const std::pair<const char*, std::string> split[] = {{"split_seed", std::to_string(a.options.seed)},
                                                       {"test_fraction", fmt::format("{}", a.test_fraction)},
                                                       {"holdout_gpu", a.holdout_gpu}};
  // ...which matters only where the chooser learned from a GPU of this data.
  const std::string chooser_gpus = recorded.count("gpus") ? recorded.at("gpus") : "";
  const bool shares_a_gpu = chooser_gpus.empty() || std::any_of(gpus.begin(), gpus.end(), [&](const std::string& gpu) {
                              return chooser_gpus.find(gpu + " ") != std::string::npos || chooser_gpus.find(gpu + ",") != std::string::npos ||
                                     chooser_gpus.ends_with(gpu);
                            });
  for (const auto& [key, value] : split)
    if (shares_a_gpu && recorded.count(key) && recorded.at(key) != value)
      throw InvalidInput(fmt::format("--chooser {} was trained with {} \"{}\", this run has \"{}\": its test shapes would not be new "
                                     "to the chooser (give the same --seed, --test-fraction and --holdout-gpu)",
                                     chooser_name(a), key, recorded.at(key), value));
  return chooser;
}

// The rows of a model for GEMMs given without their config: per GPU and shape, cuBLAS's first
// choice as measured, with the demand of the config picked for it: by the chooser's search (a GEMM
// model) or, with another --config-pick, the config the start model's predictor answers it with (its
// tree's or the analytical default); without a start, the analytical default (compute_demand's, as
// bare: no predictor configures the rows).
std::vector<MeasuredKernel> chosen_config_rows(const TrainArguments& a, const std::vector<MeasuredKernel>& rows,
                                               const std::set<std::string>& gpus, const SpecFor& spec_for,
                                               const std::optional<Mlp>& init) {
  const bool search = a.config_pick == ConfigPick::search;
  std::optional<Predictor> picking;
  if (search) picking = checked_chooser(a, gpus);
  else if (init) picking.emplace(std::vector<Mlp>{*init});
  // (read only where a predictor configures the rows: the model records the specs read)
  std::map<std::string, GpuSpec> gpu_specs;
  if (picking)
    for (const std::string& gpu : gpus) gpu_specs.emplace(gpu, spec_for(gpu));
  std::vector<MeasuredKernel> chosen = configless_first_choices(rows);
  if (chosen.empty()) throw InvalidInput("--without-configs found no GEMM row marked is_default (cuBLAS's first choice) in --data");
  for (std::size_t i = 0; picking && i < chosen.size(); ++i) {
    chosen[i].kernel = picking->configured(chosen[i].kernel, gpu_specs.at(chosen[i].gpu));
    if (search && (i + 1) % 1024 == 0)
      fmt::print(stderr, "configs chosen for {} of {} (GPU, shape) pairs\n", i + 1, chosen.size());
  }
  if (search) fmt::print(stderr, "configs chosen for {} (GPU, shape) pairs by {}\n", chosen.size(), chooser_name(a));
  else fmt::print(stderr, "the {} config for {} (GPU, shape) pairs\n", to_string(a.config_pick), chosen.size());
  return chosen;
}

struct SplitRows {
  std::vector<MeasuredKernel> train, validation, test;
};

// Shapes, not rows, are split: no shape is in two sets. --holdout-gpu: that GPU only in the test.
SplitRows split_rows(const TrainArguments& a, std::vector<MeasuredKernel>& rows) {
  SplitRows split;
  for (MeasuredKernel& row : rows) {
    const bool test_shape = shape_held_out(row.shape, a.options.seed, a.test_fraction);
    if (test_shape) {
      if (a.holdout_gpu.empty() || row.gpu == a.holdout_gpu) split.test.push_back(std::move(row));
    } else if (row.gpu != a.holdout_gpu) {
      (shape_held_out(row.shape, a.options.seed + 1000003, a.validation_fraction) ? split.validation : split.train)
          .push_back(std::move(row));
    }
  }
  return split;
}

// What the model file records beside its weights: how it answers GEMMs without a config, and
// where it came from.
MlpDescription describe(const TrainArguments& a, OpFamily family, const TrainingResult& result, const std::vector<DType>& dtypes,
                        const SplitRows& split, const std::map<std::string, std::string>& spec_sources, const SpecFor& spec_for,
                        std::size_t train_count, std::size_t validation_count, std::size_t test_count) {
  MlpDescription description = result.model.description();
  description.protocol = a.protocol.value_or(LabelProtocol::rested);
  if (a.configless) {
    description.for_configless_gemm = true;
    description.configless_scale.clear();
    description.dtypes = dtypes;
  } else if (family == OpFamily::gemm) {
    // Fit on the shapes trained on (train and validation), never on the test shapes.
    std::vector<MeasuredKernel> fitted_rows = split.train;
    fitted_rows.insert(fitted_rows.end(), split.validation.begin(), split.validation.end());
    description.configless_scale = fit_configless_scale(result.model, fitted_rows, spec_for, [](std::size_t done, std::size_t total) {
      fmt::print(stderr, "config-less GEMMs: {} of {} (GPU, shape) pairs trained on predicted without their config\n", done, total);
    });
    for (const auto& [dtype, scale] : description.configless_scale)
      fmt::print(stderr, "config-less {}: measured cuBLAS first choice / least prediction, median {:.4f}\n", to_string(dtype), scale);
  }
  std::vector<std::string> gpu_items;
  for (const auto& [gpu, source] : spec_sources) gpu_items.push_back(gpu + " (" + source + ")");
  description.provenance = {
      {"data", join(a.data, " ")},
      {"gpus", join(gpu_items, ", ")},
      {"rows", fmt::format("{} train, {} validation, {} test", train_count, validation_count, test_count)},
      {"split", fmt::format("by shape: seed {}, test fraction {}, validation fraction {}", a.options.seed, a.test_fraction,
                            a.validation_fraction)},
      {"split_seed", std::to_string(a.options.seed)},
      {"test_fraction", fmt::format("{}", a.test_fraction)},
      {"holdout_gpu", a.holdout_gpu},
      {"rank_weight", fmt::format("{}", a.options.rank_weight)},
      {"validation_mape_pct", fmt::format("{:.3f}", result.best_validation_mape_pct)},
      {"command", a.command}};
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
  if (a.configless && a.config_pick != ConfigPick::search) description.config_pick = a.config_pick;
  else if (a.configless) description.provenance.emplace_back("chooser", a.chooser_path.empty() ? "the bundled GEMM model" : a.chooser_path);
  return description;
}

// The network alone on the held-out shapes, on the label it learned (a row timed back to back:
// its time alone). Off the model's ground predict answers from the pipe efficiencies instead;
// eval --held-out scores the model as predict answers, as each row was timed.
void print_held_out(const TrainArguments& a, const Mlp& model, const std::vector<TrainingRow>& test_set) {
  if (test_set.empty()) return;
  std::vector<double> measured, bound;
  for (const TrainingRow& row : test_set) measured.push_back(row.measured_us), bound.push_back(row.bound_us);
  const Accuracy trained = accuracy(predict_latencies(model, test_set), measured);
  const Accuracy roofline = accuracy(bound, measured);
  fmt::print("held-out shapes{}, the network alone: {} rows; MAPE {:.2f}% (roofline {:.2f}%), median {:.2f}%, p90 {:.2f}%, "
             "within 10% {:.1f}%, Spearman {:.4f} (eval --held-out scores the model as predict answers)\n",
             a.holdout_gpu.empty() ? "" : " on " + a.holdout_gpu, trained.rows, trained.mape_pct, roofline.mape_pct,
             trained.median_ape_pct, trained.p90_ape_pct, trained.within_10_pct, trained.spearman);
}

}  // namespace

int train_command(int argc, const char* const* argv, int first) {
  TrainArguments a = parse(argc, argv, first);
  const auto family = parse_op_family(a.op);
  if (!family) FlagParser::fail("--op", a.op, "must be an op family (gemm, attention, rmsnorm, silu_mul, ...)");
  if (a.data.empty()) throw InvalidInput("train needs --data FILE.csv (a measurement CSV; see docs/formats.md)");
  if (a.out.empty()) throw InvalidInput("train needs --out MODEL.json");

  std::vector<MeasuredKernel> rows = read_rows(a, *family);
  check_mode(a, *family, rows);
  const std::optional<Mlp> init = start_model(a, *family);
  keep_start_pick(a, init);
  a.protocol = rows_protocol(a, rows, init);
  const std::vector<DType> dtypes = answered_dtypes(a, init);
  keep_dtypes(dtypes, rows);
  check_rank_pairs(a, rows);
  std::set<std::string> gpus;
  for (const MeasuredKernel& row : rows) gpus.insert(row.gpu);
  if (!a.holdout_gpu.empty() && !gpus.count(a.holdout_gpu))
    FlagParser::fail("--holdout-gpu", a.holdout_gpu, "must be a GPU the data holds");
  check_named_specs_used(a.specs, gpus);
  std::map<std::string, std::string> spec_sources;
  const SpecFor spec_for = [&](const std::string& gpu) { return spec_for_gpu(gpu, a.specs, a.specs_dir, spec_sources[gpu]); };
  if (a.configless) rows = chosen_config_rows(a, rows, gpus, spec_for, init);

  if (init && a.options.networks != 1 && static_cast<std::size_t>(a.options.networks) != init->network_count())
    FlagParser::fail("--networks", std::to_string(a.options.networks),
                     fmt::format("must be 1 or the start model's {} when fine-tuning (each of its networks is tuned)",
                                 init->network_count()));
  const SplitRows split = split_rows(a, rows);  // rows moved into the three sets
  // Said before any work or progress line: a split that leaves a set empty trains nothing.
  for (const auto& [set, name] : {std::pair{&split.train, "train on"}, std::pair{&split.validation, "validate on"}})
    if (set->empty())
      throw InvalidInput(fmt::format("the split leaves no row to {}: {} rows at --test-fraction {}, --validation-fraction {}{} "
                                     "(shapes, not rows, are split)",
                                     name, rows.size(), a.test_fraction, a.validation_fraction,
                                     a.holdout_gpu.empty() ? "" : ", --holdout-gpu " + a.holdout_gpu));
  const std::vector<TrainingRow> train_set = training_rows(split.train, spec_for);
  const std::vector<TrainingRow> validation_set = training_rows(split.validation, spec_for);
  const std::vector<TrainingRow> test_set = training_rows(split.test, spec_for);
  fmt::print(stderr, "pipeweave train: {} {} rows: {} train, {} validation, {} test{}\n", a.op, rows.size(), train_set.size(),
             validation_set.size(), test_set.size(), a.holdout_gpu.empty() ? "" : " (test: " + a.holdout_gpu + " only, never trained on)");

  const bool ensemble = a.options.networks > 1 || (init && init->network_count() > 1);
  a.options.progress = [ensemble](const EpochReport& report) {
    fmt::print(stderr, "{}epoch {:>4}: train MAPE {:7.3f}%  validation {:7.3f}%{}\n",
               ensemble ? fmt::format("network {:>2} ", report.network) : "", report.epoch, report.train_mape_pct,
               report.validation_mape_pct, report.best ? "  (best)" : "");
  };
  const TrainingResult result = train_mlp(*family, train_set, validation_set, a.options, init ? &*init : nullptr);
  const Mlp model(describe(a, *family, result, dtypes, split, spec_sources, spec_for, train_set.size(), validation_set.size(),
                           test_set.size()));
  write_text(a.out, to_json(model));
  print_held_out(a, model, test_set);
  if (result.model.network_count() > 1)
    fmt::print("wrote {} ({} networks, validation MAPE {:.2f}%)\n", a.out, result.model.network_count(), result.best_validation_mape_pct);
  else
    fmt::print("wrote {} (best epoch {}, validation MAPE {:.2f}%)\n", a.out, result.best_epoch, result.best_validation_mape_pct);
  return 0;
}

std::vector<std::string> train_flag_names() {
  TrainArguments arguments;
  return train_flags(arguments).names();
}

}  // namespace pipeweave::cli
