// `pipeweave e2e`: the predicted time of an LLM serving run, from a workload file or from a
// model config, a request trace and a tensor-parallel size.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"
#include "svg.hpp"
#include "flags.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct E2eArguments {
  std::string gpu, workload, model, trace, write_workload, report, measured;
  int tp = 1, pp = 1;
  SchedulerPolicy policy;
  WorkloadOptions options;
  std::optional<double> sustained_slowdown, sustained_utilization;
  std::optional<std::pair<double, double>> engine_terms;  // the engine's iteration_us and kernel_gap_us, given
  std::vector<std::string> kernel_models;  // --kernel-model: in place of the bundled model of its family
  DType dtype = DType::bf16;
  std::optional<AttentionImpl> attention_impl;
  std::optional<double> moe_zipf;  // --moe-zipf: the MoE layers' routing skew
  bool unchunked = false;  // --no-chunked-prefill
  bool expert_parallel = false;  // --expert-parallel
  bool json = false;
};

// An overhead in microseconds: at most a second, far past any engine's (a larger one would
// only hide the kernels, and at 1e308 makes the totals infinite).
constexpr double kMostOverheadUs = 1e6;

bool an_overhead(double us) { return us >= 0 && us <= kMostOverheadUs; }
const std::string kOverheadRequirement = fmt::format("must be a number of microseconds from 0 to {:g}", kMostOverheadUs);

// What only scheduling a trace uses: a workload file is already scheduled.
constexpr std::array kTraceOnlyFlags{"--tp", "--pp", "--max-batched-tokens", "--max-seqs", "--no-chunked-prefill", "--dtype",
                                     "--expert-parallel"};

FlagParser e2e_flags(E2eArguments& a) {
  FlagParser flags("e2e");
  flags.text("--gpu", a.gpu)
      .text("--workload", a.workload)
      .text("--model", a.model)
      .text("--trace", a.trace)
      .whole("--tp", a.tp, 1, 65536)
      .whole("--pp", a.pp, 1, 65536)
      .whole("--max-batched-tokens", a.policy.max_batched_tokens, 1, detail::kMostDimension)  // (an iteration's tokens are a GEMM's M)
      .whole("--max-seqs", a.policy.max_sequences, 1, Attention::kMostSequences)  // (a batch's sequences, one attention kernel's)
      .flag("--no-chunked-prefill", a.unchunked)
      .flag("--expert-parallel", a.expert_parallel)
      .choice("--dtype", a.dtype, {{"bf16", DType::bf16}, {"fp16", DType::fp16}, {"fp8", DType::fp8_e4m3}})
      .choice("--attention-impl", a.attention_impl, {{"flash2", AttentionImpl::flash2}, {"flash3", AttentionImpl::flash3}})
      .number("--moe-zipf", a.moe_zipf, valid_zipf, "must be a Zipf exponent " + std::string(kZipfRange))
      .custom("--engine", [&a](const std::string& name) { a.options.engine = EngineProfile::named(name); })
      .custom("--engine-terms",
              [&a](const std::string& text) {
                const std::size_t comma = text.find(',');
                const std::optional<double> iteration = parse_number(text.substr(0, comma));
                std::optional<double> gap;
                if (comma != std::string::npos) gap = parse_number(text.substr(comma + 1));
                if (!iteration || !gap || !an_overhead(*iteration) || !an_overhead(*gap))
                  FlagParser::fail("--engine-terms", text,
                                   fmt::format("must be ITERATION_US,KERNEL_GAP_US, two numbers of microseconds from 0 to {:g}",
                                               kMostOverheadUs));
                a.engine_terms = std::pair{*iteration, *gap};
              })
      .number("--overhead-us", a.options.extra.per_iteration_us, an_overhead, kOverheadRequirement)
      .number("--kernel-overhead-us", a.options.extra.per_kernel_us, an_overhead, kOverheadRequirement)
      .number("--sustained-slowdown", a.sustained_slowdown, [](double f) { return f >= 1 && f <= 10; },
              "must be a factor from 1 to 10 (1.16: tensor-bound kernels 16% slower; 1: none)")
      .number("--sustained-utilization", a.sustained_utilization, [](double u) { return u >= 0 && u <= 1; },
              "must be a tensor utilisation in [0, 1]")
      .texts("--kernel-model", a.kernel_models)
      .text("--measured", a.measured)
      .text("--write-workload", a.write_workload)
      .text("--report", a.report)
      .whole("--threads", a.options.threads, 0, 1024)
      .flag("--json", a.json);
  return flags;
}

E2eArguments parse(int argc, const char* const* argv, int first) {
  E2eArguments a;
  a.options.threads = 0;  // the command predicts on every core unless told otherwise
  FlagParser flags = e2e_flags(a);
  flags.parse(argc, argv, first);
  // (--workload too: rewritten in place as adjusted, the workload as given would be lost)
  std::vector<std::pair<std::string, std::string>> inputs{{"--gpu", a.gpu},         {"--model", a.model},
                                                          {"--trace", a.trace},     {"--measured", a.measured},
                                                          {"--workload", a.workload}};
  for (const std::string& path : a.kernel_models) inputs.emplace_back("--kernel-model", path);
  check_output("--write-workload", a.write_workload, inputs);
  check_output_folder("--report", a.report, {"iterations.csv", "requests.csv", "timeline.svg", "iterations.svg", "operators.svg"},
                      inputs);
  if (a.unchunked) a.policy.chunked_prefill = false;
  if (a.gpu.empty()) throw InvalidInput("e2e needs --gpu NAME or --gpu spec.json");
  if (a.engine_terms && a.options.engine.name == "none")
    throw InvalidInput("--engine-terms sets an engine's two terms; --engine none runs the kernels alone: give one of them");
  if (a.engine_terms) {
    a.options.engine.iteration_us = a.engine_terms->first;
    a.options.engine.kernel_gap_us = a.engine_terms->second;
    a.options.engine.source += fmt::format("; terms given: {} us per iteration, {} us between kernels", a.engine_terms->first,
                                           a.engine_terms->second);
  }
  if (a.sustained_utilization && !a.sustained_slowdown)
    throw InvalidInput("--sustained-utilization scales --sustained-slowdown: give both");
  if (a.sustained_slowdown)
    a.options.sustained = SustainedLoad{*a.sustained_slowdown, a.sustained_utilization.value_or(0)};
  const bool from_file = !a.workload.empty(), generated = !a.model.empty() || !a.trace.empty();
  if (from_file == generated)
    throw InvalidInput("e2e needs either --workload FILE.json, or --model config.json with --trace trace.csv");
  if (generated && (a.model.empty() || a.trace.empty())) throw InvalidInput("--model and --trace go together");
  if (from_file)
    for (const char* flag : kTraceOnlyFlags)
      if (flags.given(flag))
        throw InvalidInput(std::string(flag) + " schedules a trace (--model with --trace): a --workload file is already "
                           "scheduled, its deployment and batches as written");
  return a;
}


// What the run's flags change in each iteration, read or scheduled: the attention kernel the
// engine runs (PyTorch's flash backend: FlashAttention-2, also on Hopper) and the traffic's routing.
std::function<void(WorkloadIteration&)> iteration_adjustments(const E2eArguments& a) {
  if (!a.attention_impl && !a.moe_zipf) return {};
  return [impl = a.attention_impl, zipf = a.moe_zipf](WorkloadIteration& iteration) {
    if (impl && iteration.operators.attention) iteration.operators.attention->impl = *impl;
    if (zipf && iteration.operators.moe) iteration.operators.moe->zipf = *zipf;
  };
}

constexpr const char* kNoMoe = "--moe-zipf: the run has no mixture-of-experts layer to route";
constexpr const char* kNoExperts = "--expert-parallel: the model has no mixture-of-experts layer to share out";

// The ranks a run's experts are shared over: --expert-parallel's (the TP size), else a workload
// file's (its first MoE layer's ep), else 1.
std::int64_t expert_ranks(const E2eArguments& a, const Workload& workload) {
  if (a.expert_parallel) return a.tp;
  for (const WorkloadIteration& iteration : workload.iterations)
    if (iteration.operators.moe) return iteration.operators.moe->ep;
  return 1;
}
std::string parallel_label(const E2eArguments& a, const Workload& workload) {
  const std::int64_t ep = expert_ranks(a, workload);
  std::string label = workload.pp_size > 1 ? fmt::format("TP {} x PP {}", workload.tp_size, workload.pp_size) : "";
  if (ep > 1) label += fmt::format("{}experts over EP {}", label.empty() ? "" : ", ", ep);
  return label.empty() ? label : " (" + label + ")";
}

// The model a generated run serves, named after its folder (models/Llama-3.1-8B/config.json), else the file.
// The name is printed and written as JSON text: one that is not printable UTF-8 (a control
// character, a byte of another encoding) is refused by name rather than reaching a terminal raw
// or failing deep in the JSON writer.
std::string model_name(const std::string& config_path) {
  const fs::path config(config_path);
  std::string name = config.parent_path().filename().string();
  if (name.empty()) name = config.stem().string();
  if (!detail::is_printable(name))
    detail::fail_field("--model", detail::printable(config_path, 200),
                       "must be in a folder whose name is printable UTF-8 (the run is named after it)");
  return name;
}

Deployment run_deployment(const E2eArguments& a) {
  return Deployment{.tp = a.tp, .pp = a.pp, .dtype = a.dtype, .attention_impl = std::nullopt, .expert_parallel = a.expert_parallel};
}

// --measured: per iteration, predicted against measured.
struct Compared {
  const IterationTime* iteration;
  double measured_us, error_pct;
};

std::vector<Compared> compare_measured(const E2eArguments& a, const WorkloadPrediction& p) {
  std::vector<Compared> compared;
  if (a.measured.empty()) return compared;
  const std::map<std::int64_t, double> measured = load_measured_iterations(a.measured);
  for (const IterationTime& it : p.iterations)
    if (const auto found = measured.find(it.iteration); found != measured.end())
      compared.push_back({&it, found->second, 100 * (it.total_us() - found->second) / found->second});
  if (compared.size() != measured.size()) {
    std::set<std::int64_t> predicted;
    for (const IterationTime& it : p.iterations) predicted.insert(it.iteration);
    std::int64_t missing = 0;  // the first one the run has not (one is, the counts differ)
    for (const auto& [iteration, us] : measured)
      if (!predicted.count(iteration)) {
        missing = iteration;
        break;
      }
    throw InvalidInput(fmt::format("{} names {} iterations, {} of them in the workload: iteration {} is not in it", a.measured,
                                   measured.size(), compared.size(), missing));
  }
  return compared;
}

// The accuracy over the compared iterations of one phase (all: nullopt); nothing where none.
std::optional<Accuracy> summary(const std::vector<Compared>& compared, std::optional<Phase> phase) {
  std::vector<double> predicted, measured;
  for (const Compared& c : compared)
    if (!phase || c.iteration->phase == *phase) predicted.push_back(c.iteration->total_us()), measured.push_back(c.measured_us);
  return predicted.empty() ? std::optional<Accuracy>() : std::optional<Accuracy>(accuracy(predicted, measured));
}

constexpr std::pair<const char*, std::optional<Phase>> kPhases[] = {
    {"overall", std::nullopt}, {"prefill", Phase::prefill}, {"mixed", Phase::mixed}, {"decode", Phase::decode}};

json comparison_json(const std::vector<Compared>& compared) {
  if (compared.empty()) return nullptr;
  json comparison = json::object();
  comparison["per_iteration"] = json::array();
  for (const Compared& c : compared)
    comparison["per_iteration"].push_back({{"iteration", c.iteration->iteration}, {"predicted_us", c.iteration->total_us()},
                                          {"measured_us", c.measured_us}, {"error_pct", c.error_pct}});
  for (auto [name, phase] : kPhases)
    if (const auto acc = summary(compared, phase))
      comparison[name] = {{"iterations", acc->rows}, {"mape_pct", acc->mape_pct}, {"median_ape_pct", acc->median_ape_pct},
                          {"p90_ape_pct", acc->p90_ape_pct}, {"within_10_pct", acc->within_10_pct}};
  return comparison;
}

// One element of a dump(2) array two levels deep (the object's fields four spaces in, keys in
// nlohmann's sorted order), written as it goes: a run's iterations and requests are most of a
// long run's document, and as one JSON tree they took about 3 KB each and a second of the
// 100,000-request trace's time.
class ElementWriter {
 public:
  explicit ElementWriter(std::string& out) : out_(out) {}
  template <typename Value>
  ElementWriter& field(std::string_view key, const Value& value) {
    out_ += first_ ? "{\n      \"" : ",\n      \"";
    first_ = false;
    out_ += key;
    out_ += "\": ";
    out_ += json(value).dump();  // as the document's dump(2) writes it (nlohmann's own number format)
    return *this;
  }
  void close() { out_ += "\n    }"; }

 private:
  std::string& out_;
  bool first_ = true;
};

// Writes `elements` as the array dump(2) would at a top-level member, a few thousand at a time.
template <typename Element, typename WriteOne>
void print_array(const std::vector<Element>& elements, WriteOne write_one) {
  if (elements.empty()) {
    fmt::print("[]");
    return;
  }
  std::string out = "[";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    ElementWriter writer(out);
    write_one(writer, elements[i]);
    writer.close();
    if (out.size() > (1 << 16)) fmt::print("{}", out), out.clear();
  }
  out += "\n  ]";
  fmt::print("{}", out);
}

void print_json(const E2eArguments& a, const GpuSpec& gpu, const Workload& workload, const WorkloadPrediction& p,
                const std::vector<Compared>& compared) {
  json operators = json::array();
  for (const OperatorTime& op : p.operators) operators.push_back({{"name", op.name}, {"us", op.us}, {"launches", op.launches}});
  // The two long arrays are written in their places after the rest is dumped (keys sort, so the
  // two placeholders' places are those of the arrays).
  constexpr std::string_view kIterationsHere = "\"per_iteration\": \"(iterations)\"";
  constexpr std::string_view kRequestsHere = "\"requests\": \"(requests)\"";
  const EngineProfile& e = p.engine;
  const std::string document = json{{"gpu", gpu.name},
                          {"model", workload.model},
                          {"tp_size", workload.tp_size},
                          {"pp_size", workload.pp_size},
                          {"expert_parallel_size", expert_ranks(a, workload)},
                          {"iterations", p.iterations.size()},
                          {"prefill_us", p.prefill_us},
                          {"median_decode_iteration_us", p.median_decode_iteration_us},
                          {"total_us", p.total_us},
                          {"overhead_us", p.overhead_us},
                          {"extrapolated_us", p.extrapolated_us},
                          {"time_to_first_token_us", {{"median", p.time_to_first_token_us.median}, {"p90", p.time_to_first_token_us.p90}}},
                          {"time_per_output_token_us",
                           {{"median", p.time_per_output_token_us.median}, {"p90", p.time_per_output_token_us.p90}}},
                          {"engine", {{"name", e.name}, {"iteration_us", e.iteration_us}, {"kernel_gap_us", e.kernel_gap_us},
                                      {"eager_launch_us", e.eager_launch_us}, {"cuda_graph_max_batch", e.cuda_graph_max_batch},
                                      {"engine_kernels", e.engine_kernels},
                                      {"decode_attention_follows_prompt", e.decode_attention_follows_prompt},
                                      {"flash2_off_hopper", e.flash2_off_hopper}, {"source", e.source}}},
                          {"overhead", {{"per_iteration_us", a.options.extra.per_iteration_us},
                                        {"per_kernel_us", a.options.extra.per_kernel_us}}},
                          {"sustained_slowdown", p.sustained.tensor_bound_slowdown},
                          {"sustained_utilization", p.sustained.at_tensor_utilization},
                          {"served_label_slowdown", p.sustained.served_label_slowdown()},
                          {"served_us", p.served_us},
                          {"operators", operators},
                          {"per_iteration", "(iterations)"},
                          {"requests", "(requests)"},
                          {"comparison", comparison_json(compared)}}
                         .dump(2);
  const std::size_t iterations_at = document.find(kIterationsHere), requests_at = document.find(kRequestsHere);
  if (iterations_at == std::string::npos || requests_at == std::string::npos || requests_at < iterations_at)
    throw std::logic_error("e2e --json: the placeholders of the long arrays are not where the keys' order puts them");
  fmt::print("{}", std::string_view(document).substr(0, iterations_at + kIterationsHere.find(':') + 2));
  print_array(p.iterations, [](ElementWriter& w, const IterationTime& it) {
    w.field("extrapolated_us", it.extrapolated_us).field("iteration", it.iteration).field("kernels_us", it.kernels_us)
        .field("launches", it.launches).field("num_tokens", it.num_tokens).field("overhead_us", it.overhead_us)
        .field("phase", to_string(it.phase)).field("served_us", it.served_us).field("total_us", it.total_us());
  });
  const std::size_t after_iterations = iterations_at + kIterationsHere.size();
  fmt::print("{}", std::string_view(document).substr(after_iterations, requests_at + kRequestsHere.find(':') + 2 - after_iterations));
  print_array(p.requests, [](ElementWriter& w, const RequestTime& r) {
    w.field("finish_us", r.finish_us).field("output_tokens", r.output_tokens).field("prompt_tokens", r.prompt_tokens)
        .field("started_before", r.started_before).field("time_per_output_token_us", r.time_per_output_token_us)
        .field("time_to_first_token_us", r.time_to_first_token_us);
  });
  fmt::print("{}\n", std::string_view(document).substr(requests_at + kRequestsHere.size()));
}

void print_text(const E2eArguments& a, const GpuSpec& gpu, const Workload& workload, const WorkloadPrediction& p,
                const std::vector<Compared>& compared) {
  std::size_t decode_only = 0;
  for (const IterationTime& it : p.iterations) decode_only += it.phase == Phase::decode;
  const int gpus = workload.tp_size * workload.pp_size;
  fmt::print("{} on {} x {}{}: {} iterations, {} with prompt tokens, {} decode-only\n", workload.model, gpus, gpu.name,
             parallel_label(a, workload), p.iterations.size(), p.iterations.size() - decode_only, decode_only);
  fmt::print("  prefill (iterations with prompt tokens) {:>12.3f} ms\n", p.prefill_us / 1000);
  if (decode_only > 0) fmt::print("  median decode iteration                 {:>12.3f} ms\n", p.median_decode_iteration_us / 1000);
  else fmt::print("  median decode iteration                 {:>12}\n", "none");  // (not 0.000 ms: there is none)
  fmt::print("  total                                   {:>12.3f} ms\n", p.total_us / 1000);
  fmt::print("  of which overhead                       {:>12.3f} ms  (engine {}; and {} us per iteration + {} us per kernel; "
             "--overhead-us, --kernel-overhead-us)\n",
             p.overhead_us / 1000, p.engine.name, a.options.extra.per_iteration_us, a.options.extra.per_kernel_us);
  if (p.extrapolated_us > 0)
    fmt::print("  of the kernels' time, {:.3f} ms ({:.1f}%) predicted outside the models' training (extrapolated: "
               "the efficiency measured for their pipe)\n",
               p.extrapolated_us / 1000, 100 * p.extrapolated_us / (p.total_us - p.overhead_us));
  fmt::print("  time to first token     median {:>10.3f} ms, p90 {:>10.3f} ms  ({} requests)\n",
             p.time_to_first_token_us.median / 1000, p.time_to_first_token_us.p90 / 1000, p.requests.size());
  // (the percentiles take the requests that decoded after their first token, seen from the start)
  if (std::any_of(p.requests.begin(), p.requests.end(),
                  [](const RequestTime& r) { return !r.started_before && r.output_tokens > 1; }))
    fmt::print("  time per output token   median {:>10.3f} ms, p90 {:>10.3f} ms\n", p.time_per_output_token_us.median / 1000,
               p.time_per_output_token_us.p90 / 1000);
  else
    fmt::print("  time per output token   none (no request decoded past its first token)\n");
  if (p.engine.name == "none")
    fmt::print("  engine none: the workload's kernels only (--engine sglang|vllm|none)\n");
  else
    fmt::print("  engine {}: {:.0f} us per iteration, {:.2f} us between kernels, CUDA graphs for decode up to {} requests, "
               "rotary, KV-cache write{} (--engine)\n",
               p.engine.name, p.engine.iteration_us, p.engine.kernel_gap_us, p.engine.cuda_graph_max_batch,
               p.engine.decode_attention_follows_prompt ? ", decode attention as the prompt's" : "");
  if (p.sustained.tensor_bound_slowdown != 1)
    fmt::print("  tensor-bound kernels x {:.3g} for the clock under sustained load ({}){}{}\n", p.sustained.tensor_bound_slowdown,
               a.options.sustained ? "--sustained-slowdown" : "the GPU spec's",
               p.sustained.at_tensor_utilization > 0
                   ? fmt::format(", in proportion to each iteration's tensor utilisation up to {:.3g}", p.sustained.at_tensor_utilization)
                   : "",
               p.served_us > 0 ? fmt::format("; those answered from served rows over the x {:.3g} their labels hold",
                                             p.sustained.served_label_slowdown())
                               : "");
  fmt::print("  {:<22} {:>12} {:>7} {:>10}\n", "operator", "total_ms", "share", "launches");
  for (const OperatorTime& op : p.operators)
    fmt::print("  {:<22} {:>12.3f} {:>6.1f}% {:>10}\n", op.name, op.us / 1000, 100 * op.us / p.total_us, op.launches);
  if (!compared.empty()) {
    fmt::print("  measured ({}), predicted against measured per iteration:\n", a.measured);
    for (auto [name, phase] : {std::pair<const char*, std::optional<Phase>>{"all", std::nullopt}, {"prefill", Phase::prefill},
                               {"mixed", Phase::mixed}, {"decode", Phase::decode}})
      if (const auto acc = summary(compared, phase))
        fmt::print("  {:<8} {:>4} iterations: mean |error| {:6.2f}%, median {:6.2f}%, p90 {:6.2f}%, within 10% {:5.1f}%\n", name,
                   acc->rows, acc->mape_pct, acc->median_ape_pct, acc->p90_ape_pct, acc->within_10_pct);
  }
}

// --report DIR: the iterations and requests as CSV, and the plots.
void write_report(const E2eArguments& a, const GpuSpec& gpu, const Workload& workload, const WorkloadPrediction& p,
                  const std::vector<Compared>& compared) {
  const fs::path dir(a.report);
  std::map<std::int64_t, double> measured_of;
  for (const Compared& c : compared) measured_of[c.iteration->iteration] = c.measured_us;
  std::string csv = "iteration,phase,num_tokens,launches,kernels_us,overhead_us,extrapolated_us,total_us,measured_us\n";
  for (const IterationTime& it : p.iterations)
    csv += fmt::format("{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{}\n", it.iteration, to_string(it.phase), it.num_tokens, it.launches,
                       it.kernels_us, it.overhead_us, it.extrapolated_us, it.total_us(),
                       measured_of.contains(it.iteration) ? fmt::format("{:.6g}", measured_of[it.iteration]) : "");
  write_text(dir / "iterations.csv", csv);
  std::string requests_csv =
      "request,prompt_tokens,output_tokens,time_to_first_token_us,time_per_output_token_us,finish_us,started_before\n";
  for (std::size_t i = 0; i < p.requests.size(); ++i) {
    const RequestTime& r = p.requests[i];
    requests_csv += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{}\n", i, r.prompt_tokens, r.output_tokens, r.time_to_first_token_us,
                                r.time_per_output_token_us, r.finish_us, r.started_before ? 1 : 0);
  }
  write_text(dir / "requests.csv", requests_csv);
  std::map<Phase, svg::Series> timeline;
  for (std::size_t i = 0; i < p.iterations.size(); ++i) {
    const IterationTime& it = p.iterations[i];
    timeline[it.phase].name = std::string(to_string(it.phase));
    timeline[it.phase].points.emplace_back(static_cast<double>(i), it.total_us() / 1000);
  }
  std::vector<svg::Series> timeline_series;
  for (auto& [phase, one] : timeline) timeline_series.push_back(std::move(one));
  write_text(dir / "timeline.svg",
             svg::timeline(fmt::format("{} on {}: predicted time of each iteration (engine {})", workload.model, gpu.name, p.engine.name),
                           "iteration", "time (ms)", timeline_series));
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
                                                workload.model, gpu.name, summary(compared, std::nullopt)->mape_pct),
                                    "measured (us)", "predicted (us)", all));
  }
  std::vector<svg::Bar> bars;
  for (const OperatorTime& op : p.operators)
    bars.push_back({op.name, op.us / 1000, fmt::format("{:.2f} ms ({:.1f}%)", op.us / 1000, 100 * op.us / p.total_us)});
  write_text(dir / "operators.svg",
             svg::bar_chart(fmt::format("{} on {}, TP {}{}: time per operator over the run (ms)", workload.model, gpu.name,
                                        workload.tp_size, expert_ranks(a, workload) > 1 ? ", experts over EP" : ""),
                            bars, 0));
  if (!a.json)
    fmt::print("wrote {}, {}, {}, {}{}\n", (dir / "iterations.csv").string(), (dir / "requests.csv").string(),
               (dir / "timeline.svg").string(), (dir / "operators.svg").string(),
               compared.empty() ? "" : " and " + (dir / "iterations.svg").string());
}

// The bundled models, each --kernel-model in the place of its family's. A fused-MoE model for a
// run without experts would answer nothing (a run's attention, norms and GEMMs are its every
// model's; a workload file's are as written): refused, as --moe-zipf is. Likewise models for
// GEMMs without a config none of which is for the run's data type (its GEMMs are all of it,
// without a config; such models of several types are a set, as in predict).
Predictor run_predictor(const E2eArguments& a, bool has_moe, DType run_dtype) {
  std::vector<Mlp> models = load_models("--kernel-model", a.kernel_models);
  const bool configless_set_used = std::any_of(models.begin(), models.end(), [&](const Mlp& model) {
    return model.description().for_configless_gemm && model.answers_for(run_dtype);
  });
  // (a model for them that picks their config without a search, the analytical default or a decision tree's,
  // leaves the GEMM model none to pick for: Predictor::picks_without_search)
  const bool picks_without_search = std::any_of(models.begin(), models.end(), [&](const Mlp& model) {
    return model.description().config_pick != ConfigPick::search && model.answers_for(run_dtype);
  });
  for (std::size_t i = 0; i < models.size(); ++i) {
    if (models[i].family() == OpFamily::gemm && !models[i].description().for_configless_gemm && picks_without_search)
      FlagParser::fail("--kernel-model", a.kernel_models[i],
                       fmt::format("must be a model of the run's kernels: it is a GEMM model for GEMMs with their config, and the "
                                   "run's {} GEMMs are answered at the config another --kernel-model picks without a search (the "
                                   "analytical default or a decision tree's)",
                                   to_string(run_dtype)));
    if (models[i].family() == OpFamily::fused_moe && !has_moe)
      FlagParser::fail("--kernel-model", a.kernel_models[i], "must be a model of the run's kernels: it is a fused_moe model, and "
                                                             "the run has no mixture-of-experts layer");
    if (models[i].description().for_configless_gemm && !configless_set_used)
      FlagParser::fail("--kernel-model", a.kernel_models[i],
                       fmt::format("must be a model of the run's kernels: it is a model for {}, and the run's GEMMs are {}",
                                   configless_place(models[i]), to_string(run_dtype)));
  }
  return models.empty() ? Predictor() : Predictor().with(std::move(models));
}

}  // namespace

int e2e_command(int argc, const char* const* argv, int first) {
  const E2eArguments a = parse(argc, argv, first);
  const GpuSpec gpu = resolve_gpu(a.gpu);
  // What the run is, read: a workload file, or a model's config and a trace (in this order, the
  // errors come the same way whether the trace is predicted as it is scheduled or whole).
  Workload workload;  // a trace's: its model and deployment, the iterations only to write them
  ModelParams params;
  std::vector<TraceRequest> trace;
  const auto adjust = iteration_adjustments(a);
  bool has_moe = false;  // whether the run has a mixture-of-experts layer (to route, or to model)
  if (!a.workload.empty()) {
    workload = load_workload(a.workload);
    if (adjust)
      for (WorkloadIteration& iteration : workload.iterations) adjust(iteration);
    has_moe = std::any_of(workload.iterations.begin(), workload.iterations.end(),
                          [](const WorkloadIteration& it) { return it.operators.moe.has_value(); });
    if (a.moe_zipf && !has_moe) throw InvalidInput(kNoMoe);
    if (workload.iterations.empty()) throw InvalidInput("the workload has no iteration");
  } else {
    params = load_hf_config(a.model);
    trace = load_trace(a.trace);
    has_moe = params.num_experts > 0;  // (every iteration has its MoE layers, or none)
    if (a.moe_zipf && !has_moe) throw InvalidInput(kNoMoe);
    if (a.expert_parallel && !has_moe) throw InvalidInput(kNoExperts);
    if (a.expert_parallel && a.tp == 1)
      throw InvalidInput("--expert-parallel shares the experts over the --tp ranks: with --tp 1 there is one rank, nothing to share");
  }
  const Predictor predictor = run_predictor(a, has_moe, a.workload.empty() ? a.dtype : workload.dtype);
  WorkloadPrediction p;
  if (!a.workload.empty()) {
    // (written once every input is read and checked: a refused run writes nothing)
    if (!a.write_workload.empty()) write_file(a.write_workload, [&](std::ostream& out) { write_json(out, workload); });  // as adjusted
    p = predict_workload(predictor, workload, gpu, a.options);
  } else if (!a.write_workload.empty()) {  // the trace scheduled whole, to be written
    workload = generate_workload(model_name(a.model), params, trace, run_deployment(a), a.policy);
    if (adjust)
      for (WorkloadIteration& iteration : workload.iterations) adjust(iteration);
    write_file(a.write_workload, [&](std::ostream& out) { write_json(out, workload); });
    p = predict_workload(predictor, workload, gpu, a.options);
  } else {  // predicted as it is scheduled, never held whole
    const Deployment deployment = run_deployment(a);
    workload = Workload{model_name(a.model), params, deployment.tp, deployment.pp, deployment.dtype, {}};
    p = predict_trace(predictor, workload.model, params, trace, deployment, a.policy, gpu, a.options, adjust);
  }
  const std::vector<Compared> compared = compare_measured(a, p);
  if (a.json) print_json(a, gpu, workload, p, compared);
  else print_text(a, gpu, workload, p, compared);
  if (!a.report.empty()) write_report(a, gpu, workload, p, compared);
  return 0;
}

std::vector<std::string> e2e_flag_names() {
  E2eArguments a;
  return e2e_flags(a).names();
}

}  // namespace pipeweave::cli
