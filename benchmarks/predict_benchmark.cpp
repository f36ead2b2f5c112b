// How long one prediction takes: the analytical stage alone, a prediction with a
// 256-128-64 network (the published size), single calls and batches, per op family.
// The network's weights are random (seeded): inference cost does not depend on their values.
//
//   build/benchmarks/predict_benchmark --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "pipeweave/detail/dense.hpp"
#include "pipeweave/pipeweave.hpp"

namespace pw = pipeweave;

namespace {

// `networks` > 1: an ensemble of that many networks (MlpDescription::further_networks).
pw::Mlp random_mlp(pw::OpFamily family, const std::vector<int>& hidden, int networks = 1) {
  std::mt19937 rng(42);
  pw::MlpDescription description;
  description.family = family;
  for (std::string_view name : pw::kFeatureNames) description.feature_names.emplace_back(name);
  description.input_mean = Eigen::VectorXf::Constant(pw::kFeatureCount, 5.0f);
  description.input_scale = Eigen::VectorXf::Constant(pw::kFeatureCount, 3.0f);
  std::vector<int> widths = hidden;
  widths.push_back(1);
  for (int network = 0; network < networks; ++network) {
    std::vector<pw::MlpLayer> layers;
    int inputs = static_cast<int>(pw::kFeatureCount);
    for (int width : widths) {
      std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(inputs)));
      pw::MlpLayer layer;
      layer.weights = Eigen::MatrixXf::NullaryExpr(width, inputs, [&] { return normal(rng); });
      layer.bias = Eigen::VectorXf::Zero(width);
      layers.push_back(std::move(layer));
      inputs = width;
    }
    if (network == 0) description.layers = std::move(layers);
    else description.further_networks.push_back(std::move(layers));
  }
  return pw::Mlp(std::move(description));
}

pw::Predictor trained_predictor(const std::vector<int>& hidden = {256, 128, 64}) {
  std::vector<pw::Mlp> models;
  for (pw::OpFamily family : pw::kAllOpFamilies) models.push_back(random_mlp(family, hidden));
  return pw::Predictor(std::move(models));
}

// One representative kernel per family, shaped like Llama-3-8B serving work.
pw::Kernel sample(pw::OpFamily family) {
  switch (family) {
    case pw::OpFamily::gemm: {  // with its config: the network's cost, not the choice of a config
      pw::Gemm gemm{.m = 4096, .n = 6144, .k = 4096};
      gemm.config = pw::default_config(gemm, pw::default_gpu());
      return gemm;
    }
    case pw::OpFamily::attention: return pw::Attention::prefill(4, 2048, 32, 8, 128);
    case pw::OpFamily::rmsnorm: return pw::RmsNorm{.tokens = 8192, .hidden = 4096, .fused_residual = true};
    case pw::OpFamily::silu_mul: return pw::SiluMul{.tokens = 8192, .dim = 14336};
    case pw::OpFamily::fused_moe:
      return pw::FusedMoe{.tokens = 512, .experts = 8, .top_k = 2, .hidden = 4096, .intermediate = 14336};
    case pw::OpFamily::elementwise: return pw::Elementwise{.bytes = 1e9, .flops = 2.5e8};
    case pw::OpFamily::collective: return pw::Collective{.bytes = 16e6, .ranks = 8};
  }
  return pw::Gemm{.m = 1, .n = 1, .k = 1};
}

// A batch of distinct GEMMs, as a scheduler or autotuner would ask about.
std::vector<pw::Kernel> gemm_batch(std::size_t size) {
  std::vector<pw::Kernel> kernels;
  for (std::size_t i = 0; i < size; ++i) {
    pw::Gemm gemm{.m = static_cast<std::int64_t>(1 + 37 * i), .n = 4096, .k = 4096};
    gemm.config = pw::default_config(gemm, pw::default_gpu());
    kernels.push_back(gemm);
  }
  return kernels;
}

void family_args(benchmark::internal::Benchmark* bench) {
  for (pw::OpFamily family : pw::kAllOpFamilies) bench->Arg(static_cast<int>(family));
}

void set_label(benchmark::State& state) {
  state.SetLabel(std::string(pw::to_string(static_cast<pw::OpFamily>(state.range(0)))));
}

// Batch benchmarks take the batch size as range(0) and report time per kernel.
void set_ns_per_kernel(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() * state.range(0));
  // Inverted rate of (kernels / 1e9): elapsed seconds * 1e9 / kernels, i.e. ns per kernel.
  state.counters["ns_per_kernel"] = benchmark::Counter(static_cast<double>(state.iterations() * state.range(0)) * 1e-9,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// This CPU's clock in MHz as Linux reports it (/proc/cpuinfo, the first core), 0 where unknown.
double cpu_mhz() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) return std::stod(line.substr(line.find(':') + 1));
  return 0;
}

// The multiply-adds of one pass of a model's networks.
double multiply_adds(const pw::Mlp& mlp) {
  double total = 0;
  for (const pw::MlpLayer& layer : mlp.description().layers) total += static_cast<double>(layer.weights.size());
  return total * static_cast<double>(mlp.network_count());
}

// Beside the time, the floor this CPU puts under it: `passes` network passes of `mlp` per
// iteration at two vector multiply-adds a cycle (two FMA pipes, or an add and a multiply pipe)
// of the dense kernel's lanes (16 with AVX-512, 8 with AVX2, else 4), at the clock Linux reports.
// (Some AVX-512 parts have one 512-bit FMA pipe, not two: their floor is twice this.) floor_ns is
// that floor per iteration; at_floor its share of the time measured (1: at the floor).
void set_floor(benchmark::State& state, const pw::Mlp& mlp, double passes) {
  const double mhz = cpu_mhz();
  if (!(mhz > 0)) return;
  const std::string_view isa = pw::detail::dense_layer_isa();
  const double lanes = isa == "avx512" ? 16 : isa == "avx2_fma" ? 8 : 4;
  const double floor_ns = passes * multiply_adds(mlp) / (2 * lanes) / (mhz * 1e-3);
  state.counters["floor_ns"] = floor_ns;
  // A rate of (iterations x floor seconds) per elapsed second: floor / time per iteration.
  state.counters["at_floor"] = benchmark::Counter(static_cast<double>(state.iterations()) * floor_ns * 1e-9, benchmark::Counter::kIsRate);
}

void BM_Demand(benchmark::State& state) {
  const pw::Kernel kernel = sample(static_cast<pw::OpFamily>(state.range(0)));
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(pw::compute_demand(kernel, gpu));
  set_label(state);
}
BENCHMARK(BM_Demand)->Apply(family_args);

// Attention's demand for a mixed batch as a serving run's iterations hold: 250 decode sequences at
// context lengths spread over 50-2,049 and six prompt chunks of 1,000-1,185 tokens, Llama-3.1-8B's
// heads (32 query, 8 KV, 128 wide), on the H100: one class of CTAs per (sequence, query tile), 458 in all.
void BM_DemandMixedBatch(benchmark::State& state) {
  pw::Attention mixed;
  mixed.heads = 32, mixed.kv_heads = 8, mixed.head_dim = 128;
  for (std::int64_t i = 0; i < 250; ++i) mixed.q_lens.push_back(1), mixed.kv_lens.push_back(50 + (i * 7919) % 2000);
  for (std::int64_t i = 0; i < 6; ++i) mixed.q_lens.push_back(1000 + 37 * i), mixed.kv_lens.push_back(1000 + 137 * i);
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(pw::demand(mixed, gpu));
}
BENCHMARK(BM_DemandMixedBatch);

void BM_PredictAnalytical(benchmark::State& state) {
  const pw::Predictor predictor = pw::Predictor::analytical();
  const pw::Kernel kernel = sample(static_cast<pw::OpFamily>(state.range(0)));
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
  set_label(state);
}
BENCHMARK(BM_PredictAnalytical)->Apply(family_args);

void BM_PredictTrained(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor();
  const pw::Kernel kernel = sample(static_cast<pw::OpFamily>(state.range(0)));
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
  set_label(state);
  set_floor(state, *predictor.model(static_cast<pw::OpFamily>(state.range(0))), 1);
}
BENCHMARK(BM_PredictTrained)->Apply(family_args);

// A fused-MoE layer (Mixtral-8x7B's, 512 tokens) with the bundled fused-MoE model's shape: an
// ensemble of four networks, of 256-128-64 (range(0) = 256) or 512-256-128 (512).
void BM_PredictFusedMoeEnsemble(benchmark::State& state) {
  const int first = static_cast<int>(state.range(0));
  const pw::Predictor predictor =
      trained_predictor().with({random_mlp(pw::OpFamily::fused_moe, {first, first / 2, first / 4}, 4)});
  const pw::Kernel kernel = sample(pw::OpFamily::fused_moe);
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
  set_floor(state, *predictor.model(pw::OpFamily::fused_moe), 1);
}
BENCHMARK(BM_PredictFusedMoeEnsemble)->Arg(256)->Arg(512);

// The first question about a skewed MoE layer's routing: each expert's chance of being among a
// token's top_k (successive sampling's integral), which the demand then remembers per layer.
// Args: experts, top_k, Zipf exponent x 10.
void BM_SkewedRoutingChances(benchmark::State& state) {
  const double zipf = static_cast<double>(state.range(2)) / 10;
  for (auto _ : state) benchmark::DoNotOptimize(pw::detail::successive_sampling_chances(state.range(0), state.range(1), zipf));
}
BENCHMARK(BM_SkewedRoutingChances)->Args({8, 2, 12})->Args({256, 8, 12})->Args({32768, 2, 40})->Unit(benchmark::kMillisecond);

// A serving engine's decode step: 256 sequences, one token each, at context lengths spread over
// 500-4,000 (every one distinct), Llama-3-8B's heads; as predict_workload asks about it each
// iteration (its lengths move every step, so no memo answers it).
void BM_PredictTrainedDecodeBatch(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor();
  pw::Attention decode = pw::Attention::decode(256, 1000, 32, 8, 128);
  for (std::size_t s = 0; s < decode.kv_lens.size(); ++s) decode.kv_lens[s] = static_cast<std::int64_t>(500 + (s * 7919) % 3500);
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(decode, gpu));
  set_floor(state, *predictor.model(pw::OpFamily::attention), 1);
}
BENCHMARK(BM_PredictTrainedDecodeBatch);

void BM_PredictTrainedGemmBatch(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor();
  const std::vector<pw::Kernel> kernels = gemm_batch(static_cast<std::size_t>(state.range(0)));
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernels, gpu));
  set_ns_per_kernel(state);
  set_floor(state, *predictor.model(pw::OpFamily::gemm), static_cast<double>(state.range(0)));
}
BENCHMARK(BM_PredictTrainedGemmBatch)->Arg(16)->Arg(256)->Arg(4096);

// The same single GEMM prediction with a smaller network (64-64-32), for the size/speed trade-off.
void BM_PredictTrainedSmallGemm(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor({64, 64, 32});
  const pw::Kernel kernel = sample(pw::OpFamily::gemm);
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
  set_floor(state, *predictor.model(pw::OpFamily::gemm), 1);
}
BENCHMARK(BM_PredictTrainedSmallGemm);

void BM_PredictTrainedSmallGemmBatch(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor({64, 64, 32});
  const std::vector<pw::Kernel> kernels = gemm_batch(static_cast<std::size_t>(state.range(0)));
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernels, gpu));
  set_ns_per_kernel(state);
  set_floor(state, *predictor.model(pw::OpFamily::gemm), static_cast<double>(state.range(0)));
}
BENCHMARK(BM_PredictTrainedSmallGemmBatch)->Arg(256);

// A GEMM without a config whose shape was asked about before: its best config is remembered,
// and the network for GEMMs without a config answers (as with the bundled models).
void BM_PredictTrainedGemmNoConfig(benchmark::State& state) {
  pw::MlpDescription configless = random_mlp(pw::OpFamily::gemm, {256, 128, 64}).description();
  configless.for_configless_gemm = true;
  const pw::Predictor predictor = trained_predictor().with({pw::Mlp(std::move(configless))});
  const pw::Kernel kernel = pw::Gemm{.m = 4096, .n = 6144, .k = 4096};
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
}
BENCHMARK(BM_PredictTrainedGemmNoConfig);

// The bundled models on one bf16 GEMM without a config whose shape was asked about before: as
// bundled (arg 1: the network reading the search's pick and its second view, the one reading the
// tree's config, MlpDescription::second_view) and without the view (arg 0): what the view costs.
void BM_BundledGemmNoConfig(benchmark::State& state) {
  const pw::Predictor bundled;
  pw::MlpDescription alone = bundled.configless_gemm_model(pw::DType::bf16)->description();
  alone.second_view = nullptr;
  const pw::Predictor predictor = state.range(0) == 1 ? bundled : bundled.with({pw::Mlp(std::move(alone))});
  const pw::Kernel kernel = pw::Gemm{.m = 1000, .n = 6144, .k = 4096};
  const pw::GpuSpec& gpu = pw::default_gpu();
  benchmark::DoNotOptimize(predictor.predict(kernel, gpu));  // the config chosen once
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
}
BENCHMARK(BM_BundledGemmNoConfig)->Arg(0)->Arg(1);

// The bundled models on the calls benchmarks/python_overhead.py makes from Python, so that the
// two can be compared in one session: one GEMM with its config, and 4,096 GEMMs without configs
// whose shapes were asked about before (m = 1 + 37 i, n = k = 4096).
void BM_BundledGemmWithConfig(benchmark::State& state) {
  const pw::Predictor predictor;
  const pw::Kernel kernel = sample(pw::OpFamily::gemm);
  const pw::GpuSpec& gpu = pw::default_gpu();
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernel, gpu));
}
BENCHMARK(BM_BundledGemmWithConfig);

void BM_BundledGemmBatchNoConfig(benchmark::State& state) {
  const pw::Predictor predictor;
  std::vector<pw::Kernel> kernels;
  for (std::int64_t i = 0; i < state.range(0); ++i) kernels.push_back(pw::Gemm{.m = 1 + 37 * i, .n = 4096, .k = 4096});
  const pw::GpuSpec& gpu = pw::default_gpu();
  benchmark::DoNotOptimize(predictor.predict(kernels, gpu));  // the configs chosen once, as a scheduler's warm cache
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(kernels, gpu));
  set_ns_per_kernel(state);
}
BENCHMARK(BM_BundledGemmBatchNoConfig)->Arg(4096);

// The full config search of a GEMM shape (every gemm_candidates() entry in order of bound, none
// scored past the best latency found; random weights, so nearly all scored), as
// best_gemm_config() runs it at its grid of m.
void BM_FullSearchGemmConfig(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor();
  const pw::GpuSpec& gpu = pw::default_gpu();
  const pw::Gemm gemm{.m = 1001, .n = 6144, .k = 4096};
  for (auto _ : state) benchmark::DoNotOptimize(predictor.full_search_gemm_config(gemm, gpu));
}
BENCHMARK(BM_FullSearchGemmConfig);

// best_gemm_config() with the bundled models on shapes never asked before, as a scheduler meets
// them: m counts through 256 sizes of one layer, then n moves on (the grid points' searches
// spread over the m between). range(0): the first m (1: decode sizes, 1-256; 1000: prompt chunks).
void BM_BestGemmConfigFirstTimeBundled(benchmark::State& state) {
  const pw::Predictor predictor = pw::Predictor().with({});  // the bundled models, a memo of its own
  const pw::GpuSpec& gpu = pw::default_gpu();
  const std::int64_t first = state.range(0);
  std::int64_t m = 0;
  for (auto _ : state) {
    const std::int64_t step = m++;
    const pw::Gemm gemm{.m = first + step % 256, .n = 6144 + 128 * (step / 256), .k = 4096};
    benchmark::DoNotOptimize(predictor.best_gemm_config(gemm, gpu));
  }
}
BENCHMARK(BM_BestGemmConfigFirstTimeBundled)->Arg(1)->Arg(1000);

// A new m of a layer whose two grid points either side were searched before: the best of their
// shortlists scored at m. Every m off the grid from 1,000 to 5,096 once; then the next layer,
// its grid points searched with the clock stopped.
void BM_BestGemmConfigBetweenGridBundled(benchmark::State& state) {
  const pw::Predictor predictor = pw::Predictor().with({});
  const pw::GpuSpec& gpu = pw::default_gpu();
  constexpr std::int64_t kFirst = 1000, kLast = 5096, kGrid = pw::Predictor::kConfigGridM;
  std::int64_t n = 6144, m = kLast;
  for (auto _ : state) {
    if (++m % kGrid == 0) ++m;
    if (m >= kLast) {
      state.PauseTiming();
      n += 128;
      for (std::int64_t point = kFirst / kGrid * kGrid; point <= kLast + kGrid; point += kGrid)
        benchmark::DoNotOptimize(predictor.best_gemm_config(pw::Gemm{.m = point, .n = n, .k = 4096}, gpu));
      m = kFirst + 1;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(predictor.best_gemm_config(pw::Gemm{.m = m, .n = n, .k = 4096}, gpu));
  }
}
BENCHMARK(BM_BestGemmConfigBetweenGridBundled);

// The first question about a layer, off the grid of m: both grid points either side searched in
// full, then the m between (a new n every time).
void BM_BestGemmConfigNewLayerBundled(benchmark::State& state) {
  const pw::Predictor predictor = pw::Predictor().with({});
  const pw::GpuSpec& gpu = pw::default_gpu();
  std::int64_t n = 6144;
  for (auto _ : state) benchmark::DoNotOptimize(predictor.best_gemm_config(pw::Gemm{.m = 1001, .n = n += 8, .k = 4096}, gpu));
}
BENCHMARK(BM_BestGemmConfigNewLayerBundled);

// A GEMM shape never asked before, without its config, answered by a network for such GEMMs that
// reads the analytical default config's demand (MlpDescription::config_pick): no search, one
// network pass (a new n every time, as BestGemmConfigNewLayerBundled).
void BM_PredictGemmNewShapeDefaultPick(benchmark::State& state) {
  pw::MlpDescription configless = random_mlp(pw::OpFamily::gemm, {256, 128, 64}).description();
  configless.for_configless_gemm = true;
  configless.config_pick = pw::ConfigPick::analytical_default;
  const pw::Predictor predictor = trained_predictor().with({pw::Mlp(std::move(configless))});
  const pw::GpuSpec& gpu = pw::default_gpu();
  std::int64_t n = 6144;
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(pw::Gemm{.m = 1001, .n = n += 8, .k = 4096}, gpu));
}
BENCHMARK(BM_PredictGemmNewShapeDefaultPick);

// At most `count` of a 4096 x 6144 x 4096 GEMM's candidates, as kernels.
std::vector<pw::Kernel> gemm_candidate_kernels(std::size_t count, const pw::GpuSpec& gpu) {
  pw::Gemm gemm{.m = 4096, .n = 6144, .k = 4096};
  std::vector<pw::Kernel> candidates;
  for (const pw::GemmConfig& config : pw::gemm_candidates(gemm, gpu)) {
    gemm.config = config;
    candidates.push_back(gemm);
  }
  candidates.resize(std::min(candidates.size(), count), candidates.front());
  return candidates;
}

// An autotuner's call: rank a GEMM's candidates (range(0) of them), time per candidate.
void BM_RankGemmCandidates(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor();
  const pw::GpuSpec& gpu = pw::default_gpu();
  const std::vector<pw::Kernel> candidates = gemm_candidate_kernels(static_cast<std::size_t>(state.range(0)), gpu);
  for (auto _ : state) benchmark::DoNotOptimize(predictor.rank(candidates, gpu));
  set_ns_per_kernel(state);
}
BENCHMARK(BM_RankGemmCandidates)->Arg(48);

// The same with the ranking model's shape: an ensemble of four 256-128-64 networks
// (data/models/ranking/gemm_rank3.json.gz), in the bundled GEMM model's place.
void BM_RankGemmCandidatesEnsemble(benchmark::State& state) {
  const pw::Predictor predictor = trained_predictor().with({random_mlp(pw::OpFamily::gemm, {256, 128, 64}, 4)});
  const pw::GpuSpec& gpu = pw::default_gpu();
  const std::vector<pw::Kernel> candidates = gemm_candidate_kernels(static_cast<std::size_t>(state.range(0)), gpu);
  for (auto _ : state) benchmark::DoNotOptimize(predictor.rank(candidates, gpu));
  set_ns_per_kernel(state);
}
BENCHMARK(BM_RankGemmCandidatesEnsemble)->Arg(48);

// A serving run: Llama-3.1-8B (its config.json's shape) on one H100 with the bundled models, 64
// requests of 200-4,000 prompt tokens and 200-1,990 output tokens (seeded), scheduled as vLLM
// does (chunked prefill, 8,192 tokens a batch): 1,936 iterations. range(0) 1: each run with a
// fresh GEMM config memo, as the first run of a process (the shapes' configs chosen within the
// time); 0: the memo already holds them, as a scheduler that has run for a while.
void BM_PredictWorkload(benchmark::State& state) {
  const pw::ModelParams llama = pw::model_params_from_hf_config(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
  std::mt19937 rng(1);
  std::vector<pw::TraceRequest> trace;
  for (int r = 0; r < 64; ++r) {
    const std::int64_t output = std::uniform_int_distribution<std::int64_t>(200, 1990)(rng);
    trace.push_back({std::uniform_int_distribution<std::int64_t>(200, 4000)(rng), output, output});
  }
  const pw::Workload workload = pw::generate_workload("Llama-3.1-8B", llama, trace, pw::Deployment{}, pw::SchedulerPolicy{});
  const pw::GpuSpec& gpu = pw::default_gpu();
  const bool cold = state.range(0) == 1;
  pw::Predictor predictor;
  if (!cold) benchmark::DoNotOptimize(pw::predict_workload(predictor, workload, gpu));
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      predictor = pw::Predictor().with({});  // the bundled models, an empty memo
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(pw::predict_workload(predictor, workload, gpu));
  }
  state.counters["iterations"] = static_cast<double>(workload.iterations.size());
}
BENCHMARK(BM_PredictWorkload)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_MlpSingle(benchmark::State& state) {
  const pw::Mlp mlp = random_mlp(pw::OpFamily::gemm, {256, 128, 64});
  const pw::Features features = pw::features(pw::compute_demand(sample(pw::OpFamily::gemm), pw::default_gpu()),
                                             pw::default_gpu());
  for (auto _ : state) benchmark::DoNotOptimize(mlp.efficiency(features));
  set_floor(state, mlp, 1);
}
BENCHMARK(BM_MlpSingle);

}  // namespace

BENCHMARK_MAIN();
