// `pipeweave eval`: the predictor's accuracy on measured kernels, per GPU and overall, beside
// the analytical roofline bound alone as the baseline.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "svg.hpp"
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
  std::string model;
  std::vector<std::string> further_models;  // more config-less GEMM models: one per data type
  bool held_out = false;
  bool json = false;
  bool default_only = false;
  bool without_configs = false;
  bool ranking = false;
};

EvalArguments parse(int argc, char** argv, int first) {
  EvalArguments arguments;
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw Error(argument + " needs a value");
      return std::string(argv[++i]);
    };
    if (argument == "--data") arguments.data.push_back(value());
    else if (argument == "--spec") add_named_spec(value(), arguments.specs);
    else if (argument == "--specs") arguments.specs_dir = value();
    else if (argument == "--report") arguments.report_dir = value();
    else if (argument == "--json") arguments.json = true;
    else if (argument == "--model") (arguments.model.empty() ? arguments.model : arguments.further_models.emplace_back()) = value();
    else if (argument == "--held-out") arguments.held_out = true;
    else if (argument == "--default-configs") arguments.default_only = true;
    else if (argument == "--without-configs") arguments.without_configs = arguments.default_only = true;
    else if (argument == "--ranking") arguments.ranking = true;
    else throw Error("unknown argument " + argument + " for eval");
  }
  if (arguments.data.empty()) throw Error("eval needs --data FILE.csv (a measurement CSV; see data/README.md)");
  if (arguments.held_out && arguments.model.empty()) throw Error("--held-out needs --model: the split is the model's");
  if (arguments.ranking && arguments.default_only)
    throw Error(std::string("--ranking orders every candidate of a shape; ") +
                (arguments.without_configs ? "--without-configs" : "--default-configs") + " would keep one per shape");
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
int print_ranking(const std::vector<MeasuredKernel>& rows, const std::vector<double>& predicted, bool as_json) {
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
    if (lines.back().by_model.shapes == 0) throw Error("--ranking found no shape with two or more measured candidates");
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
    return 0;
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
  return 0;
}

struct Group {
  std::string spec_source;
  std::vector<double> measured, predicted, bound;
};

}  // namespace

int eval_command(int argc, char** argv, int first) {
  EvalArguments arguments = parse(argc, argv, first);
  std::optional<Mlp> model;
  std::uint64_t split_seed = 0;
  double test_fraction = 0;
  std::string holdout_gpu;
  if (!arguments.model.empty()) {
    model = load_mlp(arguments.model);
    for (const auto& [key, value] : model->description().provenance) {
      if (key == "split_seed") split_seed = std::stoull(value);
      if (key == "test_fraction") test_fraction = std::stod(value);
      if (key == "holdout_gpu") holdout_gpu = value;
    }
    if (arguments.held_out && test_fraction <= 0)
      throw Error(arguments.model + " records no test split (provenance split_seed and test_fraction)");
  }
  // Models for GEMMs without a config per data type answer together, each for its types, beside
  // the chooser they were trained with; their split must be the same for --held-out to be one.
  std::vector<Mlp> configless_models;
  if (model && model->description().for_configless_gemm) configless_models.push_back(*model);
  for (const std::string& path : arguments.further_models) {
    Mlp further = load_mlp(path);
    if (!model->description().for_configless_gemm || !further.description().for_configless_gemm)
      throw Error("--model is given more than once only for models for GEMMs without a config (one per data type); " +
                  (further.description().for_configless_gemm ? arguments.model : path) + " is not one");
    const std::map<std::string, std::string> first(model->description().provenance.begin(), model->description().provenance.end());
    const std::map<std::string, std::string> other(further.description().provenance.begin(), further.description().provenance.end());
    for (const char* key : {"chooser", "split_seed", "test_fraction", "holdout_gpu"}) {
      const std::string a = first.count(key) ? first.at(key) : "", b = other.count(key) ? other.at(key) : "";
      if (a != b)
        throw Error(fmt::format("{} was trained with {} \"{}\", {} with \"{}\": the models given together must share their chooser and split",
                                arguments.model, key, a, path, b));
    }
    for (const Mlp& earlier : configless_models)
      for (DType dtype : kAllDTypes)
        if (earlier.answers_for(dtype) && further.answers_for(dtype))
          detail::fail_field("--model " + path, std::string(to_string(dtype)),
                             "answers for a data type an earlier --model answers for (give one model per type)");
    configless_models.push_back(std::move(further));
  }
  // Models that list their data types are scored on GEMMs of those types only: a row of another
  // type would be answered by some other model, and its error counted as theirs.
  const bool listed_types = !configless_models.empty() && std::none_of(configless_models.begin(), configless_models.end(),
                                                                        [](const Mlp& m) { return m.description().dtypes.empty(); });
  // A model for GEMMs without a config is scored on the GEMMs as a caller without one asks them.
  if (model && model->description().for_configless_gemm && !arguments.without_configs) {
    if (arguments.ranking || arguments.default_only)
      throw Error(arguments.model + " answers for GEMMs given without a config: score it with --without-configs");
    arguments.without_configs = arguments.default_only = true;
  }
  std::vector<MeasuredKernel> rows;
  for (const std::string& path : arguments.data) {
    std::vector<MeasuredKernel> read = read_measurements(path);
    // The caller's question when it knows only the shape: the library picks the config, and
    // the answer is held against what cuBLAS ran first.
    if (arguments.without_configs) read = first_choices_without_configs(read);
    for (MeasuredKernel& row : read) {
      if (arguments.default_only && !row.is_default) continue;
      if (const Gemm* gemm = row.kernel.get_if<Gemm>(); listed_types && gemm &&
          std::none_of(configless_models.begin(), configless_models.end(), [&](const Mlp& m) { return m.answers_for(gemm->dtype); }))
        continue;
      if (arguments.held_out && (!shape_held_out(row.shape, split_seed, test_fraction) ||
                                 (!holdout_gpu.empty() && row.gpu != holdout_gpu)))
        continue;
      rows.push_back(std::move(row));
    }
  }
  if (rows.empty()) throw Error("eval found no rows to evaluate");

  // Predict per GPU, in batches.
  // A model for GEMMs without a config answers beside the GEMM model that picked the configs it
  // was trained on: the chooser its provenance names (a model file, or the bundled GEMM model).
  const bool configless_model = model && model->description().for_configless_gemm;
  const Predictor predictor = [&] {
    if (!model) return Predictor();
    if (!configless_model) return Predictor(std::vector<Mlp>{*model});
    std::string chooser;
    for (const auto& [key, value] : model->description().provenance)
      if (key == "chooser") chooser = value;
    if (chooser.empty() || chooser == "the bundled GEMM model") return Predictor().with(configless_models);
    std::vector<Mlp> models{load_mlp(chooser)};
    models.insert(models.end(), configless_models.begin(), configless_models.end());
    return Predictor(std::move(models));
  }();
  const Predictor baseline = Predictor::analytical();
  std::map<std::string, std::vector<std::size_t>> by_gpu;
  for (std::size_t i = 0; i < rows.size(); ++i) by_gpu[rows[i].gpu].push_back(i);
  std::vector<double> predicted(rows.size()), bound(rows.size());
  std::map<std::string, Group> groups;
  std::string sources;
  for (const auto& [gpu, indices] : by_gpu) {
    Group& group = groups[gpu];
    const GpuSpec spec = spec_for_gpu(gpu, arguments.specs, arguments.specs_dir, group.spec_source);
    std::vector<Kernel> kernels;
    for (std::size_t i : indices) kernels.push_back(rows[i].kernel);
    const std::vector<Prediction> model = predictor.predict(kernels, spec);
    const std::vector<Prediction> roofline = baseline.predict(kernels, spec);
    for (std::size_t j = 0; j < indices.size(); ++j) {
      // Both answers as the row was timed (a row timed back to back at the sustained clock).
      const MeasuredKernel& row = rows[indices[j]];
      predicted[indices[j]] = as_timed_us(row, model[j].latency_us, spec);
      bound[indices[j]] = as_timed_us(row, roofline[j].latency_us, spec);
      group.measured.push_back(row.duration_us);
      group.predicted.push_back(predicted[indices[j]]);
      group.bound.push_back(bound[indices[j]]);
    }
  }
  if (arguments.ranking) return print_ranking(rows, predicted, arguments.json);
  std::vector<double> measured;
  for (const MeasuredKernel& row : rows) measured.push_back(row.duration_us);
  const Accuracy overall = accuracy(predicted, measured), overall_bound = accuracy(bound, measured);

  if (arguments.json) {
    json gpus = json::object();
    for (const auto& [gpu, group] : groups)
      gpus[gpu] = {{"spec", group.spec_source},
                   {"prediction", accuracy_json(accuracy(group.predicted, group.measured))},
                   {"roofline_baseline", accuracy_json(accuracy(group.bound, group.measured))}};
    json overall_json = accuracy_json(overall);
    overall_json["roofline_baseline"] = accuracy_json(overall_bound);
    fmt::print("{}\n", json{{"overall", overall_json}, {"gpus", gpus}}.dump(2));
  } else {
    fmt::print("{:<16} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8}   {:>13} {:>13}  spec\n", "gpu", "rows", "MAPE%", "median%",
               "p90%", "<=10%", "<=20%", "spearman", "roofline MAPE", "roofline rho");
    auto line = [](const std::string& name, const Accuracy& a, const Accuracy& b, const std::string& spec) {
      fmt::print("{:<16} {:>7} {:>8.2f} {:>8.2f} {:>8.2f} {:>7.1f} {:>7.1f} {:>8.4f}   {:>13.2f} {:>13.4f}  {}\n", name, a.rows,
                 a.mape_pct, a.median_ape_pct, a.p90_ape_pct, a.within_10_pct, a.within_20_pct, a.spearman, b.mape_pct,
                 b.spearman, spec);
    };
    for (const auto& [gpu, group] : groups)
      line(gpu, accuracy(group.predicted, group.measured), accuracy(group.bound, group.measured), group.spec_source);
    line("overall", overall, overall_bound, "");
    bool any_model = false;
    for (const MeasuredKernel& row : rows) any_model = any_model || predictor.model(row.kernel.family()) != nullptr;
    if (!any_model) fmt::print("(no trained model is bundled for these op families: the prediction is the roofline bound itself)\n");
  }

  if (!arguments.report_dir.empty()) {
    const fs::path dir(arguments.report_dir);
    std::string csv = "gpu,family,kernel,measured_us,predicted_us,roofline_us,ape_pct\n";
    std::map<std::string, svg::Series> series;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      csv += fmt::format("{},{},\"{}\",{:.6g},{:.6g},{:.6g},{:.4g}\n", rows[i].gpu, to_string(rows[i].kernel.family()),
                         to_string(rows[i].kernel), measured[i], predicted[i], bound[i],
                         100 * std::abs(predicted[i] - measured[i]) / measured[i]);
      series[rows[i].gpu].name = rows[i].gpu;
      series[rows[i].gpu].points.emplace_back(measured[i], predicted[i]);
    }
    std::vector<svg::Series> all;
    for (auto& [gpu, s] : series) all.push_back(std::move(s));
    write_text(dir / "eval.csv", csv);
    write_text(dir / "eval.svg", svg::scatter_log_log(fmt::format("predicted against measured latency, MAPE {:.2f}%", overall.mape_pct),
                                                      "measured (us)", "predicted (us)", all));
    if (!arguments.json) fmt::print("wrote {} and {}\n", (dir / "eval.csv").string(), (dir / "eval.svg").string());
  }
  return 0;
}

}  // namespace pipeweave::cli
