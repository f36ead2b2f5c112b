// The pipeweave command-line tool: a thin layer over the public API.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"

namespace {

using nlohmann::json;
namespace pw = pipeweave;

constexpr const char* kUsage = R"(usage:
  pipeweave gpus [--json]
  pipeweave predict --gpu NAME|spec.json [--model MODEL.json]... [--json] [--kernels FILE] KERNEL...
  pipeweave rank --gpu NAME|spec.json [--model MODEL.json]... [--top N] [--json] gemm:m=...,n=...,k=...[,dtype=...] | fused_moe:... | KERNEL KERNEL...
  pipeweave calibrate [--quick] [--runs N] [--sms N] [--log-dir DIR] [--out spec.json] [--json] [--report DIR]
  pipeweave calibrate --from-log FILE [--from-log FILE ...] [--out spec.json] [--json] [--report DIR]
                      [--link allreduce.csv | --link-bandwidth GB_S] [--sustained ALONE.csv,BACK_TO_BACK.csv]
                      (either form: the link figures from measured all-reduces; the sustained-load
                      slowdown from the same GEMMs timed alone and back to back)
  pipeweave shapes --op gemm|rmsnorm|silu_mul|attention|attention_decode|attention_decode_long [--count N] [--seed S] [--dtypes bf16,fp8_e4m3]
                   [--head-dim 64|128|256]
  pipeweave collect --op gemm|rmsnorm|silu_mul --shapes FILE --out FILE.csv [--raw FILE] [--algos N] [--reps N] [--rest R]
                    [--sms N]
  pipeweave collect --from-raw FILE [--from-raw FILE ...] --out FILE.csv   (several: runs of one list, pooled)
  pipeweave eval --data FILE.csv [--data ...] [--model MODEL.json [--model ...] [--held-out]] [--spec GPU=FILE]... [--specs DIR]
                 [--default-configs | --without-configs | --ranking] [--json] [--report DIR]
  pipeweave train --op OP --data FILE.csv [--data ...] --out MODEL.json [--specs DIR] [--spec GPU=FILE]...
                  [--holdout-gpu GPU] [--init MODEL.json] [--hidden 256,128,64] [--epochs N] [--patience N]
                  [--batch N] [--lr X] [--seed S] [--test-fraction F] [--validation-fraction F] [--no-batch-norm]
                  [--rank-weight W] [--networks N] [--without-configs [--chooser GEMM_MODEL.json] [--dtypes LIST]]
  pipeweave e2e --gpu NAME|spec.json --workload W.json [--engine sglang|vllm|none] [--engine-terms US,US]
                [--overhead-us X] [--kernel-overhead-us X] [--sustained-slowdown F [--sustained-utilization U]]
                [--kernel-model MODEL.json]... [--measured M.csv] [--json] [--report DIR]
  pipeweave e2e --gpu NAME|spec.json --model config.json --trace T.csv [--tp N] [--pp N] [--max-batched-tokens N]
                [--max-seqs N] [--no-chunked-prefill] [--dtype bf16|fp16|fp8] [--attention-impl flash2|flash3]
                [--write-workload W.json] [...as above]
  pipeweave --version

KERNEL is op:key=value,...; for example
  gemm:m=4096,n=4096,k=4096,dtype=bf16[,tile_m=128,tile_n=128,tile_k=64,split_k=1,stages=6,cluster_m=2,cluster_n=1,
       swap_ab=0,schedule=ping_pong|cooperative|cooperative_split_n,raster=n|m]
  attention:batch=8,q_len=2048,heads=32,kv_heads=8,head_dim=128[,kv_len=...,causal=1,page_size=16]
  attention:q_lens=512/1/1,kv_lens=512/4096/900,heads=32,kv_heads=8,head_dim=128
  rmsnorm:tokens=8192,hidden=4096,dtype=bf16[,fused_residual=1]
  silu_mul:tokens=8192,dim=14336
  fused_moe:tokens=512,experts=8,top_k=2,hidden=4096,intermediate=14336[,block_m=64,block_n=128,block_k=64,stages=3,group_m=16,warps=4]
  elementwise:bytes=1e9,flops=2.5e8
  all_reduce:bytes=16777216,ranks=8     (also all_gather, reduce_scatter, all_to_all; send_recv:bytes=...,ranks=2)
--kernels FILE reads one KERNEL per line ('#' starts a comment).

rank orders candidates by predicted latency, fastest first: the configs a GEMM library would
consider for one GEMM given without a config (predict uses the first of them; where they lie
outside the model's training, marked extrapolated, predict keeps the network's order to pick one,
and rank lists each candidate's own answer), the configs vLLM's tuning script searches for one
fused_moe given without a config (and vLLM's default, which predict assumes), or the KERNELs given. --top N prints the N fastest (default 10, 0 for all). predict and rank use the bundled
models, each --model in the place of its family's (e.g. the ranking ensemble,
data/models/ranking/gemm_rank3.json).

e2e predicts a serving run: a workload file (the published layout; see data/README.md), or one
generated from a Hugging Face config.json, a request trace (CSV: num_prefill_tokens,
num_decode_tokens, output_tokens) and a tensor-parallel size under continuous batching (chunked
prefill unless --no-chunked-prefill), tensor and pipeline parallel (--tp, --pp). It prints the
prefill time, the median decode iteration, the total, each request's time to first token and
time per output token (median, p90) and the time per operator. --engine (default sglang) adds
what the serving engine does around the kernels: its host time per iteration and the gaps
between kernels (--engine-terms ITERATION_US,GAP_US states them), CUDA graphs for decode, the
rotary embedding and KV-cache write, decode attention as the prompt's; none: the kernels alone.
Tensor-bound kernels are slowed for the clock under sustained dense load by the GPU spec's own
figure; --sustained-slowdown F overrides it (with --sustained-utilization U, the tensor
utilisation F was measured at: an iteration at u gets 1 + (F - 1) x min(1, u / U)).
--overhead-us and --kernel-overhead-us add to the engine's terms; --kernel-model puts a model
file in the place of its family's.
--measured M.csv (columns iteration, measured_us) compares each iteration with a measurement.

calibrate runs the CUDA microbenchmarks (pipeweave-microbench, beside this program or named by
PIPEWEAVE_MICROBENCH) --runs times (default 1; --quick: a few seconds), prints each figure
against the spec sheet, and writes a GPU spec that predict --gpu accepts. --sms N runs them on N
of the GPU's SMs (a green context; rounded up to the hardware's granularity, 8 on Hopper): the spec
is of a GPU with that many SMs and this one's memory, named e.g. H100-SXM-sm64. --log-dir keeps the
raw logs; --from-log re-derives the spec from saved logs without a GPU; --report writes
calibration.csv and calibration.svg. --link F (ranks,bytes,mode,measured_us: all-reduces timed
by cuda_kernels/measure_allreduce.py) fits the link bandwidth and latency to the rows timed in
CUDA graphs instead of taking the catalog's; with --report also link.csv and link.svg.

shapes prints a shape list (real models' layers at TP 1/2/4/8 and 1 to 32k tokens, plus random
shapes; --seed fixes it; --head-dim 64 or 256: the attention of small models or of Gemma); collect
measures each shape on the GPU with pipeweave-collect (every cuBLASLt candidate for GEMMs) and writes the measurement CSV described in data/README.md; with
--sms N on N SMs, as calibrate --sms, its rows naming the GPU as that spec does (H100-SXM-sm64).

eval predicts every measured row (with the GPU's spec from --spec, else DIR/<gpu>.calibrated.json
from --specs, else the catalog) and prints MAPE, median and 90th-percentile error, the share
within 10% and 20%, and Spearman's rank correlation, per GPU and overall, beside the roofline
bound alone; --report writes eval.csv and a log-log scatter eval.svg. --model evaluates that model
instead of the bundled ones (given more than once: models for GEMMs without a config, one per
data type, each answering for its types; models that list their types are scored on GEMMs of
those types only); --held-out keeps only the shapes its training held out.
--ranking scores how each shape's measured candidates (GEMM configs) are ordered by the predicted
latency, beside the library's own order: per-shape Spearman, how often the first choice measured
fastest, and its slowdown against the fastest. --default-configs keeps each shape's first choice
(is_default); --without-configs also drops its GEMM config, so that the library picks one, and
scores that prediction against the time of what cuBLAS ran first.

train fits one op family's network on measurement CSVs (shapes split into train, validation and
test; --holdout-gpu leaves a GPU out of training and tests on it), prints each epoch, the test
accuracy beside the roofline bound, and writes the model (--init fine-tunes an existing one).
--rank-weight W adds a ranking term: how far the predicted ratio of two configs of one shape
is from the measured one, W times beside the MAPE (0, the default: MAPE only). --networks N
trains an ensemble of N networks from seeds S, S+1, ... (side by side; the model's efficiency is
their geometric mean, at N times the inference cost). A GEMM model
also records, per data type, how far the least prediction over the library's candidates falls
below what cuBLAS's first choice measured on the training shapes (configless_scale).
--without-configs trains the network for GEMMs given without their config (bundled beside the
GEMM model, it answers for them): one row per GPU and shape, cuBLAS's first choice, with the
config the GEMM model (--chooser, default the bundled one) picks; without such a network,
predict multiplies the pick's prediction by configless_scale. --dtypes bf16 trains it on the
rows of the listed data types only, and it answers for those alone (one network per type: the
features carry no data type); a type with no rows may be listed beside one of its tensor path
that has them (bf16,fp16; fp8_e4m3,fp8_e5m2).
)";

struct Arguments {
  std::vector<std::string> positional;
  std::string gpu;
  std::string kernels_file;
  std::vector<std::string> models;  // --model: in place of the bundled model of its family
  bool json = false;
  int top = 10;
};

Arguments parse_arguments(int argc, char** argv, int first) {
  Arguments arguments;
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&](const char* flag) {
      if (i + 1 >= argc) throw pw::Error(std::string(flag) + " needs a value");
      return std::string(argv[++i]);
    };
    if (argument == "--json") arguments.json = true;
    else if (argument == "--gpu") arguments.gpu = value("--gpu");
    else if (argument == "--kernels") arguments.kernels_file = value("--kernels");
    else if (argument == "--model") arguments.models.push_back(value("--model"));
    else if (argument == "--top") {
      const std::string text = value("--top");
      std::size_t used = 0;
      int top = -1;
      try {
        top = std::stoi(text, &used);
      } catch (const std::exception&) {
      }
      if (top < 0 || used != text.size()) throw pw::Error("--top must be a count of 0 or more, got \"" + text + "\"");
      arguments.top = top;
    }
    else if (argument.starts_with("--")) throw pw::Error("unknown option " + argument);
    else arguments.positional.push_back(argument);
  }
  return arguments;
}

double tflops(double flops_per_clk_per_sm, const pw::GpuSpec& gpu) {
  return flops_per_clk_per_sm * gpu.sm_count * gpu.clock_hz() / 1e12;
}

int list_gpus(const Arguments& arguments) {
  if (!arguments.positional.empty()) throw pw::Error("gpus takes no arguments, got " + arguments.positional.front());
  if (arguments.json) {
    json all = json::array();
    for (const pw::GpuSpec& gpu : pw::gpu_catalog()) all.push_back(json::parse(pw::to_json(gpu)));
    fmt::print("{}\n", all.dump(2));
    return 0;
  }
  // What kernels sustain (the spec predictions use) beside the data sheet's peak and clock.
  fmt::print("{:<31} {:<9} {:>4} {:>4} {:>6} {:>9} {:>9} {:>9} {:>7} {:>8} {:>9} {:>7}  {}\n", "name", "arch", "cc", "SMs",
             "MHz", "bf16 TF", "fp8 TF", "DRAM GB/s", "mem GB", "max MHz", "sheet TF", "x busy", "spec");
  for (const pw::GpuSpec& gpu : pw::gpu_catalog()) {
    const pw::GpuSpec& sheet = pw::find_gpu_datasheet(gpu.name);
    fmt::print("{:<31} {:<9} {:>4} {:>4} {:>6.0f} {:>9.1f} {:>9.1f} {:>9.0f} {:>7.0f} {:>8.0f} {:>9.1f} {:>7.3f}  {}\n", gpu.name,
               gpu.architecture, fmt::format("{}.{}", gpu.compute_capability_major, gpu.compute_capability_minor),
               gpu.sm_count, gpu.sm_clock_mhz, tflops(gpu.tensor_flops_per_clk_per_sm.fp16_bf16, gpu),
               tflops(gpu.tensor_flops_per_clk_per_sm.fp8, gpu), gpu.dram_bandwidth_gb_s, gpu.memory_gb, gpu.max_clock_mhz,
               tflops(sheet.tensor_flops_per_clk_per_sm.fp16_bf16, sheet), gpu.sustained_slowdown(),
               gpu.source.starts_with("pipeweave calibrate") ? "calibrated" : "estimated");
  }
  fmt::print("MHz: the clock under a dense tensor load; sheet TF: the data sheet's dense bf16 peak; x busy: tensor-bound\n"
             "kernels' time back to back at the power limit over their time alone (data/README.md, \"GPU specs\")\n");
  return 0;
}

std::vector<std::string> read_kernel_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw pw::Error("cannot open kernels file " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    lines.push_back(line.substr(first, line.find_last_not_of(" \t\r") - first + 1));
  }
  return lines;
}

// The bundled models, each --model in the place of its family's.
pw::Predictor predictor_for(const Arguments& arguments) {
  std::vector<pw::Mlp> models;
  for (const std::string& path : arguments.models) models.push_back(pw::load_mlp(path));
  return models.empty() ? pw::Predictor() : pw::Predictor().with(std::move(models));
}

int predict(const Arguments& arguments) {
  if (arguments.gpu.empty()) throw pw::Error("predict needs --gpu NAME or --gpu spec.json");
  const pw::GpuSpec gpu = pw::resolve_gpu(arguments.gpu);
  std::vector<std::string> texts = arguments.positional;
  if (!arguments.kernels_file.empty())
    for (std::string& line : read_kernel_lines(arguments.kernels_file)) texts.push_back(std::move(line));
  if (texts.empty()) throw pw::Error("predict needs at least one KERNEL (e.g. gemm:m=4096,n=4096,k=4096)");
  std::vector<pw::Kernel> kernels;
  for (const std::string& text : texts) kernels.push_back(pw::parse_kernel(text));

  const pw::Predictor predictor = predictor_for(arguments);
  const std::vector<pw::Prediction> predictions = predictor.predict(kernels, gpu);
  if (arguments.json) {
    json rows = json::array();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const pw::Prediction& p = predictions[i];
      rows.push_back({{"kernel", pw::to_string(kernels[i])},
                      {"op_family", pw::to_string(kernels[i].family())},
                      {"latency_us", p.latency_us},
                      {"lower_bound_us", p.lower_bound_us},
                      {"efficiency", p.efficiency},
                      {"bottleneck", pw::to_string(p.bottleneck)},
                      {"source", pw::to_string(p.source)},
                      {"config", pw::describe_config(predictor.configured(kernels[i], gpu), gpu)},
                      {"config_defaulted", p.config_defaulted},
                      {"extrapolated", p.extrapolated}});
    }
    fmt::print("{}\n", json{{"gpu", gpu.name}, {"predictions", rows}}.dump(2));
    return 0;
  }
  fmt::print("GPU {} ({} SMs at {:.0f} MHz)\n", gpu.name, gpu.sm_count, gpu.sm_clock_mhz);
  fmt::print("{:>12} {:>12} {:>6} {:<10} {:<16} {}\n", "latency_us", "bound_us", "eff", "bottleneck", "source",
             "kernel [config]");
  double total = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const pw::Prediction& p = predictions[i];
    total += p.latency_us;
    fmt::print("{:>12.2f} {:>12.2f} {:>6.3f} {:<10} {:<16} {} [{}]\n", p.latency_us, p.lower_bound_us, p.efficiency,
               pw::to_string(p.bottleneck), pw::to_string(p.source), texts[i], pw::describe_config(predictor.configured(kernels[i], gpu), gpu));
  }
  if (kernels.size() > 1) fmt::print("{:>12.2f} total\n", total);
  return 0;
}

// One GEMM without a config: the library's candidates; otherwise the kernels as given.
int rank(const Arguments& arguments) {
  if (arguments.gpu.empty()) throw pw::Error("rank needs --gpu NAME or --gpu spec.json");
  const pw::GpuSpec gpu = pw::resolve_gpu(arguments.gpu);
  std::vector<std::string> texts = arguments.positional;
  if (!arguments.kernels_file.empty())
    for (std::string& line : read_kernel_lines(arguments.kernels_file)) texts.push_back(std::move(line));
  if (texts.empty()) throw pw::Error("rank needs a GEMM (e.g. gemm:m=4096,n=4096,k=4096), a fused_moe, or the candidate KERNELs");
  std::vector<pw::Kernel> candidates;
  for (const std::string& text : texts) candidates.push_back(pw::parse_kernel(text));
  const pw::Gemm* gemm = candidates.size() == 1 ? candidates.front().get_if<pw::Gemm>() : nullptr;
  const pw::FusedMoe* moe = candidates.size() == 1 ? candidates.front().get_if<pw::FusedMoe>() : nullptr;
  if (candidates.size() == 1 && !(gemm && !gemm->config) && !(moe && !moe->config))
    throw pw::Error("rank takes one GEMM or fused_moe without a config (its candidates are enumerated) or two or more KERNELs, got " +
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
  if (moe) with_each_config(*moe, pw::fused_moe_candidates(*moe, gpu));
  if (gemm) {
    with_each_config(*gemm, pw::gemm_candidates(*gemm, gpu));
    if (candidates.empty()) throw pw::Error("no GEMM config fits " + gpu.name + "'s shared memory for " + texts.front());
  }
  const pw::Predictor predictor = predictor_for(arguments);
  const std::vector<pw::RankedCandidate> ranked = predictor.rank(candidates, gpu);
  const std::size_t shown = arguments.top == 0 ? ranked.size() : std::min<std::size_t>(ranked.size(), arguments.top);
  if (arguments.json) {
    json rows = json::array();
    for (std::size_t r = 0; r < shown; ++r) {
      const pw::Prediction& p = ranked[r].prediction;
      rows.push_back({{"rank", r + 1},
                      {"kernel", pw::to_string(candidates[ranked[r].index])},
                      {"latency_us", p.latency_us},
                      {"lower_bound_us", p.lower_bound_us},
                      {"efficiency", p.efficiency},
                      {"bottleneck", pw::to_string(p.bottleneck)},
                      {"source", pw::to_string(p.source)},
                      {"extrapolated", p.extrapolated}});
    }
    fmt::print("{}\n", json{{"gpu", gpu.name}, {"candidates", ranked.size()}, {"ranked", rows}}.dump(2));
    return 0;
  }
  fmt::print("GPU {}: {} candidates, fastest first\n", gpu.name, ranked.size());
  fmt::print("{:>5} {:>12} {:>12} {:>6} {:<10} {}\n", "rank", "latency_us", "bound_us", "eff", "bottleneck", "kernel");
  for (std::size_t r = 0; r < shown; ++r) {
    const pw::Prediction& p = ranked[r].prediction;
    fmt::print("{:>5} {:>12.2f} {:>12.2f} {:>6.3f} {:<10} {}\n", r + 1, p.latency_us, p.lower_bound_us, p.efficiency,
               pw::to_string(p.bottleneck), pw::to_string(candidates[ranked[r].index]));
  }
  if (shown < ranked.size()) fmt::print("({} more; --top 0 prints all)\n", ranked.size() - shown);
  if (!ranked.empty() && ranked.front().prediction.source == pw::PredictionSource::analytical_bound)
    fmt::print("(no trained model for this op family: ranked by the roofline bound alone)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (command == "--version") {
      fmt::print("pipeweave {}\n", pw::kVersion);
      return 0;
    }
    if (command == "calibrate") return pw::cli::calibrate_command(argc, argv, 2);
    if (command == "shapes") return pw::cli::shapes_command(argc, argv, 2);
    if (command == "collect") return pw::cli::collect_command(argc, argv, 2);
    if (command == "eval") return pw::cli::eval_command(argc, argv, 2);
    if (command == "train") return pw::cli::train_command(argc, argv, 2);
    if (command == "e2e") return pw::cli::e2e_command(argc, argv, 2);
    const Arguments arguments = parse_arguments(argc, argv, 2);
    if (command == "gpus") return list_gpus(arguments);
    if (command == "predict") return predict(arguments);
    if (command == "rank") return rank(arguments);
    throw pw::Error("unknown command \"" + command + "\" (try pipeweave --help)");
  } catch (const std::exception& error) {
    fmt::print(stderr, "pipeweave: error: {}\n", error.what());
    return 2;
  }
}
