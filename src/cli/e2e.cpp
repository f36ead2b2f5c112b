// `pipeweave e2e`: the predicted time of an LLM serving run, from a workload file or from a
// model config, a request trace and a tensor-parallel size.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "../csv_support.hpp"
#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "svg.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct E2eArguments {
  std::string gpu, workload, model, trace, write_workload, report, measured;
  int tp = 1;
  SchedulerPolicy policy;
  IterationOverhead overhead;
  SustainedLoad sustained;
  DType dtype = DType::bf16;
  std::optional<AttentionImpl> attention_impl;
  bool json = false;
};

std::int64_t whole_number(const std::string& flag, const std::string& text, std::int64_t minimum) {
  std::size_t used = 0;
  long long value = minimum - 1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < minimum)
    throw Error(fmt::format("{} must be an integer >= {}, got \"{}\"", flag, minimum, text));
  return value;
}

double non_negative(const std::string& flag, const std::string& text) {
  const std::optional<double> value = parse_number(text);
  if (!value || *value < 0) throw Error(fmt::format("{} must be a number >= 0 (microseconds), got \"{}\"", flag, text));
  return *value;
}

E2eArguments parse(int argc, char** argv, int first) {
  E2eArguments a;
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw Error(argument + " needs a value");
      return std::string(argv[++i]);
    };
    if (argument == "--gpu") a.gpu = value();
    else if (argument == "--workload") a.workload = value();
    else if (argument == "--model") a.model = value();
    else if (argument == "--trace") a.trace = value();
    else if (argument == "--tp") a.tp = static_cast<int>(whole_number("--tp", value(), 1));
    else if (argument == "--max-batched-tokens") a.policy.max_batched_tokens = whole_number(argument, value(), 1);
    else if (argument == "--max-seqs") a.policy.max_sequences = whole_number(argument, value(), 1);
    else if (argument == "--no-chunked-prefill") a.policy.chunked_prefill = false;
    else if (argument == "--overhead-us") a.overhead.per_iteration_us = non_negative(argument, value());
    else if (argument == "--kernel-overhead-us") a.overhead.per_kernel_us = non_negative(argument, value());
    else if (argument == "--sustained-slowdown") {
      const std::string text = value();
      const std::optional<double> factor = parse_number(text);
      if (!factor || *factor < 1)
        throw Error(fmt::format("--sustained-slowdown must be a factor >= 1 (1.16: tensor-bound kernels 16% slower), got \"{}\"", text));
      a.sustained.tensor_bound_slowdown = *factor;
    } else if (argument == "--sustained-utilization") {
      const std::string text = value();
      const std::optional<double> share = parse_number(text);
      if (!share || *share < 0 || *share > 1)
        throw Error(fmt::format("--sustained-utilization must be a tensor utilisation in [0, 1], got \"{}\"", text));
      a.sustained.at_tensor_utilization = *share;
    }
    else if (argument == "--dtype") {
      const std::string text = value();
      if (text == "bf16") a.dtype = DType::bf16;
      else if (text == "fp16") a.dtype = DType::fp16;
      else if (text == "fp8") a.dtype = DType::fp8_e4m3;
      else throw Error("--dtype must be bf16, fp16 or fp8, got \"" + text + "\"");
    } else if (argument == "--write-workload") a.write_workload = value();
    else if (argument == "--report") a.report = value();
    else if (argument == "--measured") a.measured = value();
    else if (argument == "--attention-impl") {
      const std::string text = value();
      if (text == "flash2") a.attention_impl = AttentionImpl::flash2;
      else if (text == "flash3") a.attention_impl = AttentionImpl::flash3;
      else throw Error("--attention-impl must be flash2 or flash3, got \"" + text + "\"");
    }
    else if (argument == "--json") a.json = true;
    else throw Error("unknown argument " + argument + " for e2e");
  }
  if (a.gpu.empty()) throw Error("e2e needs --gpu NAME or --gpu spec.json");
  if (a.sustained.at_tensor_utilization > 0 && a.sustained.tensor_bound_slowdown == 1)
    throw Error("--sustained-utilization scales --sustained-slowdown: give both");
  const bool from_file = !a.workload.empty(), generated = !a.model.empty() || !a.trace.empty();
  if (from_file == generated)
    throw Error("e2e needs either --workload FILE.json, or --model config.json with --trace trace.csv");
  if (generated && (a.model.empty() || a.trace.empty())) throw Error("--model and --trace go together");
  return a;
}

// iteration -> measured microseconds, from a CSV with (at least) columns iteration, measured_us.
std::map<std::int64_t, double> read_measured(const std::string& path) {
  std::map<std::int64_t, double> out;
  detail::for_each_csv_row(read_text(path, "measured iterations"), path, {"iteration", "measured_us"},
                           [&](const detail::CsvRow& row) { out[row.integer("iteration", 0)] = row.positive("measured_us"); });
  if (out.empty()) throw Error(path + ": no measured iteration");
  return out;
}

}  // namespace

int e2e_command(int argc, char** argv, int first) {
  const E2eArguments a = parse(argc, argv, first);
  const GpuSpec gpu = resolve_gpu(a.gpu);
  Workload workload;
  if (!a.workload.empty()) {
    workload = load_workload(a.workload);
  } else {
    // The model is named after its folder (models/Llama-3.1-8B/config.json), else the file.
    const fs::path config(a.model);
    std::string name = config.parent_path().filename().string();
    if (name.empty()) name = config.stem().string();
    workload = generate_workload(name, load_hf_config(config), load_trace(a.trace),
                                 Deployment{.tp = a.tp, .pp = 1, .dtype = a.dtype, .attention_impl = std::nullopt}, a.policy);
  }
  if (a.attention_impl)  // what the run uses (PyTorch's flash backend: FlashAttention-2, also on Hopper)
    for (WorkloadIteration& iteration : workload.iterations)
      if (iteration.operators.attention) iteration.operators.attention->impl = *a.attention_impl;
  if (!a.write_workload.empty()) write_text(a.write_workload, to_json(workload));
  if (workload.iterations.empty()) throw Error("the workload has no iteration");

  const Predictor predictor;
  const WorkloadPrediction p = predict_workload(predictor, workload, gpu, a.overhead, a.sustained);

  // --measured: per iteration, predicted against measured.
  struct Compared {
    const IterationTime* iteration;
    double measured_us, error_pct;
  };
  std::vector<Compared> compared;
  if (!a.measured.empty()) {
    const std::map<std::int64_t, double> measured = read_measured(a.measured);
    for (const IterationTime& it : p.iterations)
      if (const auto found = measured.find(it.iteration); found != measured.end())
        compared.push_back({&it, found->second, 100 * (it.total_us() - found->second) / found->second});
    if (compared.size() != measured.size())
      throw Error(fmt::format("{} names {} iterations, {} of them in the workload", a.measured, measured.size(), compared.size()));
  }
  auto summary = [&](std::optional<Phase> phase) {
    std::vector<double> predicted, measured;
    for (const Compared& c : compared)
      if (!phase || c.iteration->phase == *phase) predicted.push_back(c.iteration->total_us()), measured.push_back(c.measured_us);
    return predicted.empty() ? std::optional<Accuracy>() : std::optional<Accuracy>(accuracy(predicted, measured));
  };
  std::size_t decode_only = 0;
  for (const IterationTime& it : p.iterations) decode_only += it.phase == Phase::decode;

  json comparison = nullptr;
  if (!compared.empty()) {
    comparison = json::object();
    comparison["per_iteration"] = json::array();
    for (const Compared& c : compared)
      comparison["per_iteration"].push_back({{"iteration", c.iteration->iteration}, {"predicted_us", c.iteration->total_us()},
                                            {"measured_us", c.measured_us}, {"error_pct", c.error_pct}});
    for (auto [name, phase] : {std::pair<const char*, std::optional<Phase>>{"overall", std::nullopt}, {"prefill", Phase::prefill},
                               {"mixed", Phase::mixed}, {"decode", Phase::decode}})
      if (const auto acc = summary(phase))
        comparison[name] = {{"iterations", acc->rows}, {"mape_pct", acc->mape_pct}, {"median_ape_pct", acc->median_ape_pct},
                            {"p90_ape_pct", acc->p90_ape_pct}, {"within_10_pct", acc->within_10_pct}};
  }
  if (a.json) {
    json operators = json::array();
    for (const OperatorTime& op : p.operators) operators.push_back({{"name", op.name}, {"us", op.us}, {"launches", op.launches}});
    json iterations = json::array();
    for (const IterationTime& it : p.iterations)
      iterations.push_back({{"iteration", it.iteration}, {"phase", to_string(it.phase)}, {"num_tokens", it.num_tokens},
                            {"kernels_us", it.kernels_us}, {"overhead_us", it.overhead_us}, {"total_us", it.total_us()}});
    fmt::print("{}\n", json{{"gpu", gpu.name},
                            {"model", workload.model},
                            {"tp_size", workload.tp_size},
                            {"iterations", p.iterations.size()},
                            {"prefill_us", p.prefill_us},
                            {"median_decode_iteration_us", p.median_decode_iteration_us},
                            {"total_us", p.total_us},
                            {"overhead_us", p.overhead_us},
                            {"overhead", {{"per_iteration_us", a.overhead.per_iteration_us}, {"per_kernel_us", a.overhead.per_kernel_us}}},
                            {"sustained_slowdown", a.sustained.tensor_bound_slowdown},
                            {"sustained_utilization", a.sustained.at_tensor_utilization},
                            {"operators", operators},
                            {"per_iteration", iterations},
                            {"comparison", comparison}}
                           .dump(2));
  } else {
    fmt::print("{} on {} x {}: {} iterations, {} with prompt tokens, {} decode-only\n", workload.model, workload.tp_size,
               gpu.name, p.iterations.size(), p.iterations.size() - decode_only, decode_only);
    fmt::print("  prefill (iterations with prompt tokens) {:>12.3f} ms\n", p.prefill_us / 1000);
    fmt::print("  median decode iteration                 {:>12.3f} ms\n", p.median_decode_iteration_us / 1000);
    fmt::print("  total                                   {:>12.3f} ms\n", p.total_us / 1000);
    fmt::print("  of which overhead                       {:>12.3f} ms  ({} us per iteration + {} us per kernel; "
               "--overhead-us, --kernel-overhead-us)\n",
               p.overhead_us / 1000, a.overhead.per_iteration_us, a.overhead.per_kernel_us);
    if (a.sustained.tensor_bound_slowdown != 1)
      fmt::print("  tensor-bound kernels x {} for the clock under sustained load (--sustained-slowdown){}\n",
                 a.sustained.tensor_bound_slowdown,
                 a.sustained.at_tensor_utilization > 0
                     ? fmt::format(", in proportion to each iteration's tensor utilisation up to {}", a.sustained.at_tensor_utilization)
                     : "");
    fmt::print("  {:<22} {:>12} {:>7} {:>10}\n", "operator", "total_ms", "share", "launches");
    for (const OperatorTime& op : p.operators)
      fmt::print("  {:<22} {:>12.3f} {:>6.1f}% {:>10}\n", op.name, op.us / 1000, 100 * op.us / p.total_us, op.launches);
    if (!compared.empty()) {
      fmt::print("  measured ({}), predicted against measured per iteration:\n", a.measured);
      for (auto [name, phase] : {std::pair<const char*, std::optional<Phase>>{"all", std::nullopt}, {"prefill", Phase::prefill},
                                 {"mixed", Phase::mixed}, {"decode", Phase::decode}})
        if (const auto acc = summary(phase))
          fmt::print("  {:<8} {:>4} iterations: mean |error| {:6.2f}%, median {:6.2f}%, p90 {:6.2f}%, within 10% {:5.1f}%\n", name,
                     acc->rows, acc->mape_pct, acc->median_ape_pct, acc->p90_ape_pct, acc->within_10_pct);
    }
  }
  if (!a.report.empty()) {
    const fs::path dir(a.report);
    std::map<std::int64_t, double> measured_of;
    for (const Compared& c : compared) measured_of[c.iteration->iteration] = c.measured_us;
    std::string csv = "iteration,phase,num_tokens,kernels_us,overhead_us,total_us,measured_us\n";
    for (const IterationTime& it : p.iterations)
      csv += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{}\n", it.iteration, to_string(it.phase), it.num_tokens, it.kernels_us,
                         it.overhead_us, it.total_us(),
                         measured_of.contains(it.iteration) ? fmt::format("{:.6g}", measured_of[it.iteration]) : "");
    write_text(dir / "iterations.csv", csv);
    if (!compared.empty()) {
      std::map<Phase, svg::Series> series;
      for (const Compared& c : compared) {
        series[c.iteration->phase].name = std::string(to_string(c.iteration->phase));
        series[c.iteration->phase].points.emplace_back(c.measured_us, c.iteration->total_us());
      }
      std::vector<svg::Series> all;
      for (auto& [phase, one] : series) all.push_back(std::move(one));
      write_text(dir / "iterations.svg",
                 svg::scatter_log_log(fmt::format("{} on {}: predicted against measured iteration time, mean |error| {:.2f}%",
                                                  workload.model, gpu.name, summary(std::nullopt)->mape_pct),
                                      "measured (us)", "predicted (us)", all));
    }
    std::vector<svg::Bar> bars;
    for (const OperatorTime& op : p.operators)
      bars.push_back({op.name, op.us / 1000, fmt::format("{:.2f} ms ({:.1f}%)", op.us / 1000, 100 * op.us / p.total_us)});
    write_text(dir / "operators.svg",
               svg::bar_chart(fmt::format("{} on {}, TP {}: time per operator over the run (ms)", workload.model, gpu.name,
                                          workload.tp_size),
                              bars, 0));
    if (!a.json)
      fmt::print("wrote {}, {}{}\n", (dir / "iterations.csv").string(), (dir / "operators.svg").string(),
                 compared.empty() ? "" : " and " + (dir / "iterations.svg").string());
  }
  return 0;
}

}  // namespace pipeweave::cli
