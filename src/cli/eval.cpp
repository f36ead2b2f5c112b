// `pipeweave eval`: the predictor's accuracy on measured kernels, per GPU and overall, beside
// the analytical roofline bound alone as the baseline.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "svg.hpp"
#include "flags.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct EvalArguments {
  std::vector<std::string> data;
  std::map<std::string, std::string> specs;  // gpu name -> spec file
  std::string specs_dir;
  std::string report_dir;
  std::vector<std::string> models;  // --model, as given
  std::string model;                 // the first
  std::vector<std::string> further_models;  // more config-less GEMM models: one per data type
  bool held_out = false;
  bool json = false;
  bool default_only = false;  // --default-configs
  bool configless = false;  // --without-configs: a GEMM given without its config
  bool ranking = false;
  // Each shape's first choice alone (is_default), as both options score.
  bool first_choices_only() const { return default_only || configless; }
};

FlagParser eval_flags(EvalArguments& arguments) {
  FlagParser flags("eval");
  flags.texts("--data", arguments.data)
      .texts("--model", arguments.models)
      .flag("--held-out", arguments.held_out)
      .customs("--spec", [&arguments](const std::string& text) { add_named_spec(text, arguments.specs); })
      .text("--specs", arguments.specs_dir)
      .flag("--default-configs", arguments.default_only)
      .flag("--without-configs", arguments.configless)
      .flag("--ranking", arguments.ranking)
      .flag("--json", arguments.json)
      .text("--report", arguments.report_dir);
  return flags;
}

EvalArguments parse(int argc, const char* const* argv, int first) {
  EvalArguments arguments;
  eval_flags(arguments).parse(argc, argv, first);
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& path : arguments.data) inputs.emplace_back("--data", path);
  for (const std::string& path : arguments.models) inputs.emplace_back("--model", path);
  for (const auto& [gpu, path] : arguments.specs) inputs.emplace_back("--spec", path);
  check_output_folder("--report", arguments.report_dir, {"eval.csv", "eval.svg"}, inputs);
  check_specs_folder(arguments.specs_dir);
  if (arguments.configless && arguments.default_only)
    throw InvalidInput("--without-configs keeps each shape's default config already: give it without --default-configs");
  if (!arguments.models.empty()) {
    arguments.model = arguments.models.front();
    arguments.further_models.assign(arguments.models.begin() + 1, arguments.models.end());
  }
  if (arguments.data.empty()) throw InvalidInput("eval needs --data FILE.csv (a measurement CSV; see docs/formats.md)");
  if (arguments.held_out && arguments.model.empty()) throw InvalidInput("--held-out needs --model: the split is the model's");
  if (arguments.ranking && arguments.first_choices_only())
    throw InvalidInput(std::string("--ranking orders every candidate of a shape; ") +
                       (arguments.configless ? "--without-configs" : "--default-configs") + " would keep one per shape");
  return arguments;
}

json accuracy_json(const Accuracy& a) {
  return {{"rows", a.rows},          {"mape_pct", a.mape_pct},           {"median_ape_pct", a.median_ape_pct},
          {"p90_ape_pct", a.p90_ape_pct}, {"within_10_pct", a.within_10_pct}, {"within_20_pct", a.within_20_pct},
          {"spearman", a.spearman}};
}

// A pair band's name: "<=1%", "1-2%", ..., ">20%".
std::string pair_band_name(std::size_t band) {
  const auto& edges = RankingAccuracy::kPairBandEdgesPct;
  if (band == 0) return fmt::format("<={}%", edges[0]);
  if (band == edges.size()) return fmt::format(">{}%", edges.back());
  return fmt::format("{}-{}%", edges[band - 1], edges[band]);
}

double misordered_pct(const RankingAccuracy& r, std::size_t band) {
  return r.pairs[band] == 0 ? 0.0 : 100.0 * static_cast<double>(r.misordered_pairs[band]) / static_cast<double>(r.pairs[band]);
}

json ranking_json(const RankingAccuracy& r) {
  json bands = json::array();
  for (std::size_t band = 0; band < r.pairs.size(); ++band)
    bands.push_back({{"measured_apart", pair_band_name(band)},
                     {"pairs", r.pairs[band]},
                     {"misordered_pairs", r.misordered_pairs[band]},
                     {"misordered_pct", misordered_pct(r, band)}});
  return {{"shapes", r.shapes},
          {"mean_spearman", r.mean_spearman},
          {"best_found_pct", r.best_found_pct},
          {"mean_slowdown_pct", r.mean_slowdown_pct},
          {"p90_slowdown_pct", r.p90_slowdown_pct},
          {"pairs_by_measured_gap", bands}};
}

// --ranking: per GPU and overall, how well the predicted latencies order each shape's
// measured candidates, beside the library heuristic's own order (the `candidate` column).
void print_ranking(const std::vector<MeasuredKernel>& rows, const std::vector<double>& predicted, bool as_json) {
  std::map<std::string, std::vector<std::size_t>> by_gpu;
  for (std::size_t i = 0; i < rows.size(); ++i) by_gpu[rows[i].gpu].push_back(i);
  by_gpu["overall"].resize(rows.size());
  std::iota(by_gpu["overall"].begin(), by_gpu["overall"].end(), 0);
  struct Line {
    std::string gpu;
    std::size_t rows;
    RankingAccuracy by_model, by_heuristic;
  };
  std::vector<Line> lines;
  for (const auto& [gpu, indices] : by_gpu) {
    std::vector<std::string> shapes;
    std::vector<double> model, heuristic, measured;
    for (std::size_t i : indices) {
      // A shape is per GPU: the same GEMM on two GPUs is two rankings.
      shapes.push_back(rows[i].gpu + "|" + rows[i].shape);
      model.push_back(predicted[i]);
      heuristic.push_back(rows[i].candidate);
      measured.push_back(rows[i].duration_us);
    }
    lines.push_back({gpu, indices.size(), ranking_accuracy(shapes, model, measured), ranking_accuracy(shapes, heuristic, measured)});
    if (lines.back().by_model.shapes == 0) throw InvalidInput("--ranking found no shape with two or more measured candidates");
  }
  json result = json::object();
  if (!as_json) {
    fmt::print("{:<31} | {:<37} | {}\n", "", "ordered by the predicted latency", "the library's own order (heuristic)");
    fmt::print("{:<16} {:>7} {:>6} | {:>9} {:>6} {:>10} {:>9} | {:>9} {:>6} {:>10} {:>9}\n", "gpu", "shapes", "rows",
               "spearman", "best%", "slowdown%", "p90 slow%", "spearman", "best%", "slowdown%", "p90 slow%");
  }
  for (const Line& line : lines) {
    const RankingAccuracy &m = line.by_model, &h = line.by_heuristic;
    if (as_json)
      result[line.gpu] = {{"rows", line.rows}, {"predicted", ranking_json(m)}, {"library_first_choice", ranking_json(h)}};
    else
      fmt::print("{:<16} {:>7} {:>6} | {:>9.4f} {:>6.1f} {:>10.2f} {:>9.2f} | {:>9.4f} {:>6.1f} {:>10.2f} {:>9.2f}\n", line.gpu,
                 m.shapes, line.rows, m.mean_spearman, m.best_found_pct, m.mean_slowdown_pct, m.p90_slowdown_pct,
                 h.mean_spearman, h.best_found_pct, h.mean_slowdown_pct, h.p90_slowdown_pct);
  }
  if (as_json) {
    fmt::print("{}\n", json{{"ranking", result}}.dump(2));
    return;
  }
  fmt::print("spearman: per shape, predicted (or the heuristic's) order against measured order; best%: shapes whose\n"
             "first choice measured fastest; slowdown%: the first choice's time over the shape's fastest, minus 1\n\n");
  // Where the order goes wrong: pairs of one shape's candidates by how far apart they measured.
  fmt::print("{:<16} {:<10}", "pairs measured", "order by");
  for (std::size_t band = 0; band < RankingAccuracy::kPairBandEdgesPct.size() + 1; ++band)
    fmt::print(" {:>14}", pair_band_name(band) + " apart");
  fmt::print("\n");
  for (const Line& line : lines)
    for (const auto& [name, accuracy] : {std::pair<const char*, const RankingAccuracy&>{"predicted", line.by_model},
                                         std::pair<const char*, const RankingAccuracy&>{"heuristic", line.by_heuristic}}) {
      fmt::print("{:<16} {:<10}", line.gpu, name);
      for (std::size_t band = 0; band < accuracy.pairs.size(); ++band)
        fmt::print(" {:>14}", fmt::format("{:.1f}% of {}", misordered_pct(accuracy, band), accuracy.pairs[band]));
      fmt::print("\n");
    }
  fmt::print("each cell: the share of that band's pairs put in the other order, of how many pairs\n");
}

struct Group {
  std::string spec_source;
  std::vector<double> measured, predicted, bound;
};

// The model given (--model), with the split its training recorded, and the models for GEMMs
// without a config that answer beside it.
struct EvaluatedModel {
  std::optional<Mlp> model;
  std::uint64_t split_seed = 0;
  double test_fraction = 0;
  std::string holdout_gpu;
  std::vector<Mlp> configless_models;
  bool configless() const { return model && model->description().for_configless_gemm; }
  // Models that list their data types are scored on GEMMs of those types only: a row of another
  // type would be answered by some other model, and its error counted as theirs.
  bool listed_types() const {
    return !configless_models.empty() && std::none_of(configless_models.begin(), configless_models.end(),
                                                      [](const Mlp& m) { return m.description().dtypes.empty(); });
  }
};

// Models for GEMMs without a config per data type answer together, each for its types, beside
// the chooser they were trained with; their split must be the same for --held-out to be one.
void add_further_model(const EvalArguments& arguments, const std::string& path, EvaluatedModel& evaluated) {
  Mlp further = load_mlp(path);
  const Mlp& model = *evaluated.model;
  if (!model.description().for_configless_gemm || !further.description().for_configless_gemm)
    throw InvalidInput("--model is given more than once only for models for GEMMs without a config (one per data type); " +
                       (further.description().for_configless_gemm ? arguments.model : path) + " is not one");
  const std::map<std::string, std::string> first(model.description().provenance.begin(), model.description().provenance.end());
  const std::map<std::string, std::string> other(further.description().provenance.begin(), further.description().provenance.end());
  // (each answers its own types at its own pick; a chooser is shared where both search)
  const bool both_search = model.description().config_pick == ConfigPick::search && further.description().config_pick == ConfigPick::search;
  for (const char* key : {"chooser", "split_seed", "test_fraction", "holdout_gpu"}) {
    if (std::string_view(key) == "chooser" && !both_search) continue;
    const std::string a = first.count(key) ? first.at(key) : "", b = other.count(key) ? other.at(key) : "";
    if (a != b)
      throw InvalidInput(fmt::format("{} was trained with {} \"{}\", {} with \"{}\": the models given together must share their chooser and split",
                                     arguments.model, key, a, path, b));
  }
  for (const Mlp& earlier : evaluated.configless_models)
    for (DType dtype : kAllDTypes)
      if (earlier.answers_for(dtype) && further.answers_for(dtype))
        FlagParser::fail("--model " + path, std::string(to_string(dtype)),
                           "answers for a data type an earlier --model answers for (give one model per type)");
  evaluated.configless_models.push_back(std::move(further));
}

EvaluatedModel load_models(EvalArguments& arguments) {
  EvaluatedModel evaluated;
  if (arguments.model.empty()) return evaluated;
  evaluated.model = load_mlp(arguments.model);
  for (const auto& [key, value] : evaluated.model->description().provenance) {
    if (key == "split_seed") evaluated.split_seed = std::stoull(value);
    if (key == "test_fraction") evaluated.test_fraction = std::stod(value);
    if (key == "holdout_gpu") evaluated.holdout_gpu = value;
  }
  if (arguments.held_out && evaluated.test_fraction <= 0)
    throw InvalidInput(arguments.model + " records no test split (provenance split_seed and test_fraction)");
  if (evaluated.configless()) evaluated.configless_models.push_back(*evaluated.model);
  for (const std::string& path : arguments.further_models) add_further_model(arguments, path, evaluated);
  // A model for GEMMs without a config is scored on the GEMMs as a caller without one asks them.
  if (evaluated.configless() && !arguments.configless) {
    if (arguments.ranking || arguments.default_only)
      throw InvalidInput(arguments.model + " answers for GEMMs given without a config: score it with --without-configs");
    arguments.configless = true;
  }
  return evaluated;
}

// The rows scored: every row of --data, less those the options leave out.
std::vector<MeasuredKernel> scored_rows(const EvalArguments& arguments, const EvaluatedModel& evaluated) {
  const bool listed_types = evaluated.listed_types();
  const auto answered = [&](DType dtype) {
    return std::any_of(evaluated.configless_models.begin(), evaluated.configless_models.end(),
                       [&](const Mlp& m) { return m.answers_for(dtype); });
  };
  std::vector<MeasuredKernel> rows;
  bool any_gemm = false, any_other_config = false;
  std::set<std::string> gpus;  // of every row read, before the options leave rows out
  for (const std::string& path : arguments.data) {
    std::vector<MeasuredKernel> read = read_measurements(path);
    for (const MeasuredKernel& row : read) {
      any_gemm = any_gemm || row.kernel.family() == OpFamily::gemm;
      any_other_config = any_other_config || !row.is_default;
      gpus.insert(row.gpu);
    }
    // The caller's question when it knows only the shape: the library picks the config, and
    // the answer is held against what cuBLAS ran first.
    if (arguments.configless) read = configless_first_choices(read);
    for (MeasuredKernel& row : read) {
      if (arguments.first_choices_only() && !row.is_default) continue;
      if (const Gemm* gemm = row.kernel.get_if<Gemm>(); listed_types && gemm && !answered(gemm->dtype)) continue;
      if (arguments.held_out && (!shape_held_out(row.shape, evaluated.split_seed, evaluated.test_fraction) ||
                                 (!evaluated.holdout_gpu.empty() && row.gpu != evaluated.holdout_gpu)))
        continue;
      rows.push_back(std::move(row));
    }
  }
  // Options that would change nothing are refused: the figures would read as if they had.
  check_named_specs_used(arguments.specs, gpus);
  if (arguments.configless && !any_gemm)
    throw InvalidInput(evaluated.configless() ? arguments.model + " answers for GEMMs given without a config, and --data holds no GEMM row"
                                              : "--without-configs scores GEMMs given without their config, and --data holds no GEMM row");
  if (arguments.default_only && !any_other_config)
    throw InvalidInput("--default-configs keeps each shape's first choice (is_default), and every row of --data is one");
  if (rows.empty()) throw InvalidInput("eval found no rows to evaluate");
  return rows;
}

// A model for GEMMs without a config answers beside the GEMM model that picked the configs it
// was trained on: the chooser its provenance names (a model file, or the bundled GEMM model). One
// that reads the analytical default config records no chooser: beside the bundled models, as
// they answer nothing it is asked.
Predictor predictor_for(const EvaluatedModel& evaluated) {
  if (!evaluated.model) return Predictor();
  if (!evaluated.configless()) return Predictor(std::vector<Mlp>{*evaluated.model});
  std::string chooser;  // (of a model that searches: one reading another pick records none)
  for (const Mlp& configless : evaluated.configless_models)
    for (const auto& [key, value] : configless.description().provenance)
      if (key == "chooser") chooser = value;
  // data/models/gemm.json, named from the repository's root where the bundled networks were trained,
  // is the bundled GEMM model: where that path is not there to read (eval run from another folder),
  // the model compiled in from it answers.
  std::error_code ignored;
  if (chooser.empty() || chooser == "the bundled GEMM model" ||
      (chooser == "data/models/gemm.json" && !std::filesystem::exists(chooser, ignored)))
    return Predictor().with(evaluated.configless_models);
  std::vector<Mlp> models{load_mlp(chooser)};
  models.insert(models.end(), evaluated.configless_models.begin(), evaluated.configless_models.end());
  return Predictor(std::move(models));
}

// Each row's prediction and roofline bound, as the row was timed (a row timed back to back at
// the sustained clock), predicted per GPU in batches.
struct Predicted {
  std::vector<double> predicted, bound;
  std::map<std::string, Group> groups;
};

Predicted predict_rows(const EvalArguments& arguments, const Predictor& predictor, const std::vector<MeasuredKernel>& rows) {
  const Predictor baseline = Predictor::analytical();
  std::map<std::string, std::vector<std::size_t>> by_gpu;
  for (std::size_t i = 0; i < rows.size(); ++i) by_gpu[rows[i].gpu].push_back(i);
  Predicted out;
  out.predicted.resize(rows.size());
  out.bound.resize(rows.size());
  for (const auto& [gpu, indices] : by_gpu) {
    Group& group = out.groups[gpu];
    const GpuSpec spec = spec_for_gpu(gpu, arguments.specs, arguments.specs_dir, group.spec_source);
    std::vector<Kernel> kernels;
    for (std::size_t i : indices) kernels.push_back(rows[i].kernel);
    const std::vector<Prediction> model = predictor.predict(kernels, spec);
    const std::vector<Prediction> roofline = baseline.predict(kernels, spec);
    for (std::size_t j = 0; j < indices.size(); ++j) {
      const MeasuredKernel& row = rows[indices[j]];
      out.predicted[indices[j]] = as_timed_us(row, model[j].latency_us, spec);
      out.bound[indices[j]] = as_timed_us(row, roofline[j].latency_us, spec);
      group.measured.push_back(row.duration_us);
      group.predicted.push_back(out.predicted[indices[j]]);
      group.bound.push_back(out.bound[indices[j]]);
    }
  }
  return out;
}

void print_accuracy(const EvalArguments& arguments, const Predictor& predictor, const std::vector<MeasuredKernel>& rows,
                    const Predicted& p, const Accuracy& overall, const Accuracy& overall_bound) {
  if (arguments.json) {
    json gpus = json::object();
    for (const auto& [gpu, group] : p.groups)
      gpus[gpu] = {{"spec", group.spec_source},
                   {"prediction", accuracy_json(accuracy(group.predicted, group.measured))},
                   {"roofline_baseline", accuracy_json(accuracy(group.bound, group.measured))}};
    json overall_json = accuracy_json(overall);
    overall_json["roofline_baseline"] = accuracy_json(overall_bound);
    fmt::print("{}\n", json{{"overall", overall_json}, {"gpus", gpus}}.dump(2));
    return;
  }
  fmt::print("{:<16} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8}   {:>13} {:>13}  spec\n", "gpu", "rows", "MAPE%", "median%",
             "p90%", "<=10%", "<=20%", "spearman", "roofline MAPE", "roofline rho");
  auto line = [](const std::string& name, const Accuracy& a, const Accuracy& b, const std::string& spec) {
    fmt::print("{:<16} {:>7} {:>8.2f} {:>8.2f} {:>8.2f} {:>7.1f} {:>7.1f} {:>8.4f}   {:>13.2f} {:>13.4f}  {}\n", name, a.rows,
               a.mape_pct, a.median_ape_pct, a.p90_ape_pct, a.within_10_pct, a.within_20_pct, a.spearman, b.mape_pct,
               b.spearman, spec);
  };
  for (const auto& [gpu, group] : p.groups)
    line(gpu, accuracy(group.predicted, group.measured), accuracy(group.bound, group.measured), group.spec_source);
  line("overall", overall, overall_bound, "");
  bool any_model = false;
  for (const MeasuredKernel& row : rows) any_model = any_model || predictor.model(row.kernel.family()) != nullptr;
  if (!any_model) fmt::print("(no trained model is bundled for these op families: the prediction is the roofline bound itself)\n");
}

// --report DIR: every row's prediction as CSV, and the scatter plot.
void write_report(const EvalArguments& arguments, const std::vector<MeasuredKernel>& rows, const std::vector<double>& measured,
                  const Predicted& p, const Accuracy& overall) {
  const fs::path dir(arguments.report_dir);
  std::string csv = "gpu,family,kernel,measured_us,predicted_us,roofline_us,ape_pct\n";
  std::map<std::string, svg::Series> series;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    csv += fmt::format("{},{},\"{}\",{:.6g},{:.6g},{:.6g},{:.4g}\n", rows[i].gpu, to_string(rows[i].kernel.family()),
                       to_string(rows[i].kernel), measured[i], p.predicted[i], p.bound[i],
                       100 * std::abs(p.predicted[i] - measured[i]) / measured[i]);
    series[rows[i].gpu].name = rows[i].gpu;
    series[rows[i].gpu].points.emplace_back(measured[i], p.predicted[i]);
  }
  std::vector<svg::Series> all;
  for (auto& [gpu, one] : series) all.push_back(std::move(one));
  write_text(dir / "eval.csv", csv);
  write_text(dir / "eval.svg", svg::scatter_log_log(fmt::format("predicted against measured latency, MAPE {:.2f}%", overall.mape_pct),
                                                    "measured (us)", "predicted (us)", all));
  if (!arguments.json) fmt::print("wrote {} and {}\n", (dir / "eval.csv").string(), (dir / "eval.svg").string());
}

}  // namespace

int eval_command(int argc, const char* const* argv, int first) {
  EvalArguments arguments = parse(argc, argv, first);
  const EvaluatedModel evaluated = load_models(arguments);
  const std::vector<MeasuredKernel> rows = scored_rows(arguments, evaluated);
  if (evaluated.model && std::none_of(rows.begin(), rows.end(), [&](const MeasuredKernel& row) {
        return row.kernel.family() == evaluated.model->family();
      }))
    throw InvalidInput(fmt::format("--model {} answers for {} kernels, and no row scored is one", arguments.model,
                                   to_string(evaluated.model->family())));
  const Predictor predictor = predictor_for(evaluated);
  const Predicted p = predict_rows(arguments, predictor, rows);
  std::vector<double> measured;
  for (const MeasuredKernel& row : rows) measured.push_back(row.duration_us);
  // (the accuracy only where it is printed or reported: --ranking prints its own figures)
  const bool reported = !arguments.report_dir.empty();
  const std::optional<Accuracy> overall =
      !arguments.ranking || reported ? std::optional<Accuracy>(accuracy(p.predicted, measured)) : std::nullopt;
  if (arguments.ranking) print_ranking(rows, p.predicted, arguments.json);
  else print_accuracy(arguments, predictor, rows, p, *overall, accuracy(p.bound, measured));
  // (--ranking too: every candidate's prediction is a row of the report, as without it)
  if (reported) write_report(arguments, rows, measured, p, *overall);
  return 0;
}

std::vector<std::string> eval_flag_names() {
  EvalArguments arguments;
  return eval_flags(arguments).names();
}

}  // namespace pipeweave::cli
