// Predictor: analytical answers, answers through a hand-made model, batches, threads,
// and the errors a prediction can raise.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>
#include <string>
#include <thread>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/mlp.hpp"
#include "pipeweave/predictor.hpp"

using namespace pipeweave;
using Catch::Matchers::Contains;

namespace {

constexpr int kInputs = static_cast<int>(kFeatureCount);

using pipeweave_test::error_of;

using pipeweave_test::constant_model;
using pipeweave_test::empty_description;

// A model whose answer moves with the features, so different kernels get different efficiencies.
Mlp varying_model(OpFamily family) {
  MlpDescription d = empty_description(family);
  for (int i = 0; i < kInputs; ++i) d.input_mean(i) = 4.0f, d.input_scale(i) = 3.0f;
  MlpLayer first;
  first.weights.resize(4, kInputs);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < kInputs; ++c) first.weights(r, c) = 0.03f * static_cast<float>((r * 5 + c * 7) % 9 - 4);
  first.bias = Eigen::Vector4f(0.1f, -0.1f, 0.2f, 0.0f);
  MlpLayer output;
  output.weights.resize(1, 4);
  output.weights << 0.6f, -0.4f, 0.3f, 0.5f;
  output.bias = Eigen::VectorXf::Constant(1, 0.2f);
  d.layers = {first, output};
  return Mlp(d);
}

Gemm make_gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype = DType::bf16) {
  Gemm gemm;
  gemm.m = m, gemm.n = n, gemm.k = k, gemm.dtype = dtype;
  return gemm;
}

// One or more kernels of every family, GEMMs of several shapes among them.
std::vector<Kernel> mixed_kernels() {
  std::vector<Kernel> kernels;
  kernels.push_back(parse_kernel("gemm:m=4096,n=4096,k=4096,dtype=bf16"));
  kernels.push_back(parse_kernel("attention:batch=4,q_len=2048,heads=32,kv_heads=8,head_dim=128"));
  kernels.push_back(parse_kernel("gemm:m=16,n=6144,k=4096,dtype=fp16"));
  kernels.push_back(parse_kernel("rmsnorm:tokens=8192,hidden=4096"));
  kernels.push_back(parse_kernel("silu_mul:tokens=8192,dim=14336"));
  kernels.push_back(parse_kernel("gemm:m=8192,n=1024,k=28672,dtype=fp8,tile_m=128,tile_n=128,tile_k=128,split_k=1"));
  kernels.push_back(parse_kernel("attention:q_lens=512/1/1,kv_lens=512/4096/900,heads=32,kv_heads=8,head_dim=128"));
  kernels.push_back(parse_kernel("fused_moe:tokens=512,experts=8,top_k=2,hidden=4096,intermediate=14336"));
  kernels.push_back(parse_kernel("elementwise:bytes=1e9,flops=2.5e8"));
  kernels.push_back(parse_kernel("all_reduce:bytes=16777216,ranks=8"));
  kernels.push_back(parse_kernel("gemm:m=1,n=128256,k=4096"));
  kernels.push_back(parse_kernel("gemm:m=2048,n=2048,k=2048,dtype=fp32"));
  return kernels;
}

bool same(const Prediction& a, const Prediction& b) {
  return a.latency_us == b.latency_us && a.efficiency == b.efficiency && a.lower_bound_us == b.lower_bound_us &&
         a.bottleneck == b.bottleneck && a.source == b.source && a.protocol == b.protocol &&
         a.config_defaulted == b.config_defaulted;
}

}  // namespace

TEST_CASE("Predictor::analytical answers with the bound itself", "[predictor]") {
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  for (OpFamily family : kAllOpFamilies) CHECK(predictor.model(family) == nullptr);
  for (const Kernel& kernel : mixed_kernels()) {
    INFO(to_string(kernel));
    const Prediction p = predictor.predict(kernel, gpu);
    CHECK(p.source == PredictionSource::analytical_bound);
    CHECK(p.efficiency == 1.0);
    CHECK(p.latency_us == p.lower_bound_us);
    CHECK(p.lower_bound_us > 0);
    CHECK(std::isfinite(p.lower_bound_us));
  }
}

TEST_CASE("Predictor: the bound is physical: no kernel beats its busiest pipe's peak", "[predictor]") {
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& h100 = find_gpu_datasheet("H100-SXM");
  // H100-SXM datasheet peaks, written out: 989.4 TF dense bf16, 3.35 TB/s HBM3, 450 GB/s NVLink each way,
  // 128 FP32 lanes x 132 SMs x 1.83 GHz.
  constexpr double kBf16Flops = 989.4e12, kDramBytes = 3.35e12, kLinkBytes = 450e9, kFp32Lanes = 128 * 132 * 1.83e9;

  SECTION("a large bf16 GEMM is tensor-bound") {
    const double m = 8192, n = 8192, k = 8192;
    const Prediction p = predictor.predict(make_gemm(8192, 8192, 8192), h100);
    CHECK(p.bottleneck == Pipe::tensor);
    CHECK(p.lower_bound_us >= 2 * m * n * k / kBf16Flops * 1e6 * 0.999);
    CHECK(p.lower_bound_us <= 2 * m * n * k / kBf16Flops * 1e6 * 1.25);  // tiles of 128x256 fill it well
  }
  SECTION("an fp32 GEMM runs on the FMA pipe, one lane op per multiply-add") {
    const double m = 2048, n = 2048, k = 2048;
    const Prediction p = predictor.predict(make_gemm(2048, 2048, 2048, DType::fp32), h100);
    CHECK(p.bottleneck == Pipe::fma);
    CHECK(p.lower_bound_us >= m * n * k / kFp32Lanes * 1e6 * 0.999);
  }
  SECTION("a streaming kernel is DRAM-bound") {
    const Prediction p = predictor.predict(parse_kernel("elementwise:bytes=1e9"), h100);
    CHECK(p.bottleneck == Pipe::dram);
    CHECK(p.lower_bound_us == Approx(1e9 / kDramBytes * 1e6).epsilon(0.01));
  }
  SECTION("a large all-reduce is link-bound: a ring moves 2(n-1)/n of the buffer") {
    const double bytes = 1e9, ranks = 8;
    const Prediction p = predictor.predict(parse_kernel("all_reduce:bytes=1e9,ranks=8"), h100);
    CHECK(p.bottleneck == Pipe::link);
    CHECK(p.lower_bound_us >= 2 * (ranks - 1) / ranks * bytes / kLinkBytes * 1e6 * 0.999);
  }
  SECTION("the same GEMM is slower on a slower GPU") {
    const Gemm gemm = make_gemm(8192, 8192, 8192);
    CHECK(predictor.predict(gemm, find_gpu("A100-SXM4-80GB")).lower_bound_us >
          2.5 * predictor.predict(gemm, h100).lower_bound_us);
  }
}

TEST_CASE("Predictor with a gemm model: trained answers for GEMMs only", "[predictor]") {
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const Predictor analytical = Predictor::analytical();
  const Predictor predictor(std::vector<Mlp>{constant_model(OpFamily::gemm, 0.6)});
  REQUIRE(predictor.model(OpFamily::gemm) != nullptr);
  CHECK(predictor.model(OpFamily::attention) == nullptr);

  for (const Kernel& kernel : mixed_kernels()) {
    INFO(to_string(kernel));
    const Prediction p = predictor.predict(kernel, gpu);
    // A GEMM without a config runs the config the model picks; compare like with like.
    Kernel as_run = kernel;
    if (const Gemm* gemm = kernel.get_if<Gemm>(); gemm && !gemm->config) {
      Gemm tuned = *gemm;
      tuned.config = predictor.best_gemm_config(*gemm, gpu);
      as_run = tuned;
    }
    const Prediction bound = analytical.predict(as_run, gpu);
    // The model changes the efficiency, never the bound or its pipe.
    CHECK(p.lower_bound_us == bound.lower_bound_us);
    CHECK(p.bottleneck == bound.bottleneck);
    CHECK(p.config_defaulted == analytical.predict(kernel, gpu).config_defaulted);
    CHECK(p.latency_us >= p.lower_bound_us);
    CHECK(p.latency_us == Approx(p.lower_bound_us / p.efficiency).epsilon(1e-12));
    if (kernel.family() == OpFamily::gemm) {
      CHECK(p.source == PredictionSource::trained_model);
      CHECK(p.efficiency == Approx(0.6).epsilon(1e-6));
      CHECK(p.latency_us == Approx(bound.lower_bound_us / 0.6).epsilon(1e-6));
    } else {
      CHECK(p.source == PredictionSource::analytical_bound);
      CHECK(p.efficiency == 1.0);
      CHECK(p.latency_us == p.lower_bound_us);
    }
  }
}

TEST_CASE("Predictor: a later model for the same family replaces an earlier one", "[predictor]") {
  const GpuSpec& gpu = find_gpu("H100-SXM");
  std::vector<Mlp> models;
  models.push_back(constant_model(OpFamily::gemm, 0.3));
  models.push_back(constant_model(OpFamily::rmsnorm, 0.5));
  models.push_back(constant_model(OpFamily::gemm, 0.8));
  const Predictor predictor(std::move(models));
  CHECK(predictor.predict(make_gemm(1024, 1024, 1024), gpu).efficiency == Approx(0.8).epsilon(1e-6));
  CHECK(predictor.predict(parse_kernel("rmsnorm:tokens=64,hidden=4096"), gpu).efficiency == Approx(0.5).epsilon(1e-6));
  CHECK(predictor.predict(parse_kernel("silu_mul:tokens=64,dim=4096"), gpu).source == PredictionSource::analytical_bound);
}

TEST_CASE("Predictor: predict(span) equals one predict per kernel", "[predictor]") {
  const std::vector<Kernel> kernels = mixed_kernels();
  std::vector<Mlp> models;
  models.push_back(varying_model(OpFamily::gemm));
  models.push_back(varying_model(OpFamily::attention));
  models.push_back(constant_model(OpFamily::collective, 0.7));
  const Predictor predictor(std::move(models));
  for (const char* name : {"H100-SXM", "L40S", "B200"}) {
    INFO(name);
    const GpuSpec& gpu = find_gpu(name);
    const std::vector<Prediction> batch = predictor.predict(kernels, gpu);
    REQUIRE(batch.size() == kernels.size());
    std::vector<double> gemm_efficiencies;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      INFO(to_string(kernels[i]));
      const Prediction one = predictor.predict(kernels[i], gpu);
      CHECK(batch[i].latency_us == Approx(one.latency_us).epsilon(1e-6));
      CHECK(batch[i].efficiency == Approx(one.efficiency).epsilon(1e-6));
      CHECK(batch[i].lower_bound_us == one.lower_bound_us);
      CHECK(batch[i].bottleneck == one.bottleneck);
      CHECK(batch[i].source == one.source);
      CHECK(batch[i].config_defaulted == one.config_defaulted);
      if (kernels[i].family() == OpFamily::gemm) gemm_efficiencies.push_back(one.efficiency);
    }
    // The varying model really does answer differently per kernel, so the batch is no trivial case.
    REQUIRE(gemm_efficiencies.size() >= 3);
    CHECK(gemm_efficiencies[0] != gemm_efficiencies[1]);
  }
  // An empty batch is an empty answer.
  CHECK(predictor.predict(std::span<const Kernel>{}, find_gpu("H100-SXM")).empty());
}

TEST_CASE("Predictor: concurrent predictions on one const Predictor equal serial ones", "[predictor][thread]") {
  std::vector<Mlp> models;
  models.push_back(varying_model(OpFamily::gemm));
  models.push_back(varying_model(OpFamily::attention));
  const Predictor predictor(std::move(models));
  const std::vector<Kernel> kernels = mixed_kernels();
  const std::vector<const GpuSpec*> gpus = {&find_gpu("H100-SXM"), &find_gpu("A100-SXM4-80GB"), &find_gpu("L4")};
  const auto usable = [](const Kernel& kernel, const GpuSpec& gpu) {
    // fp8 needs Ada or later.
    const Gemm* gemm = kernel.get_if<Gemm>();
    return !(gemm && gemm->dtype == DType::fp8_e4m3 && gpu.tensor_flops_per_clk_per_sm.fp8 == 0);
  };

  // Serial reference.
  std::vector<Prediction> serial;
  std::vector<std::vector<Prediction>> serial_batches;
  for (const GpuSpec* gpu : gpus) {
    std::vector<Kernel> runnable;
    for (const Kernel& kernel : kernels)
      if (usable(kernel, *gpu)) serial.push_back(predictor.predict(kernel, *gpu)), runnable.push_back(kernel);
    serial_batches.push_back(predictor.predict(runnable, *gpu));
  }

  constexpr int kThreads = 4, kRounds = 25;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<int> computed(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::size_t next = 0;
        for (std::size_t g = 0; g < gpus.size(); ++g) {
          std::vector<Kernel> runnable;
          for (const Kernel& kernel : kernels) {
            if (!usable(kernel, *gpus[g])) continue;
            runnable.push_back(kernel);
            if (!same(predictor.predict(kernel, *gpus[g]), serial[next++])) ++mismatches[t];
            ++computed[t];
          }
          const std::vector<Prediction> batch = predictor.predict(runnable, *gpus[g]);
          for (std::size_t i = 0; i < batch.size(); ++i)
            if (!same(batch[i], serial_batches[g][i])) ++mismatches[t];
        }
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(mismatches[t] == 0);
    CHECK(computed[t] == kRounds * static_cast<int>(serial.size()));
  }
}

TEST_CASE("Predictor: an invalid GpuSpec is an Error naming the field", "[predictor]") {
  const Predictor predictor = Predictor::analytical();
  GpuSpec gpu = find_gpu("H100-SXM");
  gpu.sm_count = 0;
  const Kernel kernel = make_gemm(1024, 1024, 1024);
  std::string message = error_of([&] { (void)predictor.predict(kernel, gpu); });
  CHECK_THAT(message, Contains("gpu.sm_count"));
  CHECK_THAT(message, Contains("0"));
  const std::vector<Kernel> kernels = {kernel};
  CHECK_THAT(error_of([&] { (void)predictor.predict(kernels, gpu); }), Contains("gpu.sm_count"));

  gpu = find_gpu("H100-SXM");
  gpu.dram_bandwidth_gb_s = -1;
  message = error_of([&] { (void)predictor.predict(parse_kernel("elementwise:bytes=1e6"), gpu); });
  CHECK_THAT(message, Contains("gpu.dram_bandwidth_gb_s"));
  CHECK_THAT(message, Contains("-1"));
}

TEST_CASE("Predictor: a kernel the GPU cannot run is an Error", "[predictor]") {
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& a100 = find_gpu("A100-SXM4-80GB");
  for (const char* text : {"gemm:m=4096,n=4096,k=4096,dtype=fp8", "gemm:m=64,n=64,k=64,dtype=fp8_e5m2",
                           "attention:batch=1,q_len=512,heads=8,head_dim=128,dtype=fp8",
                           "fused_moe:tokens=64,experts=8,top_k=2,hidden=1024,intermediate=1024,dtype=fp8"}) {
    INFO(text);
    const std::string message = error_of([&] { (void)predictor.predict(parse_kernel(text), a100); });
    CHECK_THAT(message, Contains("fp8"));
    CHECK_THAT(message, Contains("A100-SXM4-80GB"));
  }
  // The same kernels run where there is an fp8 path, and bf16 runs on the A100.
  CHECK_NOTHROW(predictor.predict(parse_kernel("gemm:m=4096,n=4096,k=4096,dtype=fp8"), find_gpu("H100-SXM")));
  CHECK_NOTHROW(predictor.predict(parse_kernel("gemm:m=4096,n=4096,k=4096,dtype=fp8"), find_gpu("L4")));
  CHECK_NOTHROW(predictor.predict(parse_kernel("gemm:m=4096,n=4096,k=4096,dtype=bf16"), a100));

  // A tile whose pipeline does not fit in shared memory cannot launch.
  const std::string message = error_of([&] {
    (void)predictor.predict(parse_kernel("gemm:m=4096,n=4096,k=4096,tile_m=512,tile_n=512,tile_k=256,stages=8"), a100);
  });
  CHECK_THAT(message, Contains("shared memory"));
}

TEST_CASE("Predictor: config_defaulted says whether the kernel came with its config", "[predictor]") {
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  CHECK(predictor.predict(parse_kernel("gemm:m=4096,n=4096,k=4096"), gpu).config_defaulted);
  CHECK_FALSE(
      predictor.predict(parse_kernel("gemm:m=4096,n=4096,k=4096,tile_m=128,tile_n=128,tile_k=64"), gpu).config_defaulted);
  CHECK(predictor.predict(parse_kernel("attention:q_len=1024,heads=8,head_dim=128"), gpu).config_defaulted);
  CHECK_FALSE(predictor.predict(parse_kernel("attention:q_len=1024,heads=8,head_dim=128,tile_q=128,tile_kv=128"), gpu)
                  .config_defaulted);
  CHECK(predictor.predict(parse_kernel("fused_moe:tokens=64,experts=8,top_k=2,hidden=1024,intermediate=1024"), gpu)
            .config_defaulted);
  CHECK_FALSE(predictor.predict(parse_kernel("rmsnorm:tokens=64,hidden=4096"), gpu).config_defaulted);
}

TEST_CASE("Predictor: a GPU read back from JSON predicts exactly as the catalog entry", "[predictor]") {
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("L40S");
  const GpuSpec loaded = gpu_spec_from_json(to_json(gpu));
  for (const Kernel& kernel : mixed_kernels()) {
    INFO(to_string(kernel));
    CHECK(same(predictor.predict(kernel, loaded), predictor.predict(kernel, gpu)));
  }
}

TEST_CASE("Predictor: the default Predictor needs no files", "[predictor]") {
  const Predictor predictor;
  const GpuSpec& gpu = default_gpu();
  for (const Kernel& kernel : mixed_kernels()) {
    INFO(to_string(kernel));
    const Prediction p = predictor.predict(kernel, gpu);
    // Bundled models may or may not exist for a family; the answer must say which it is.
    if (predictor.model(kernel.family()) == nullptr) {
      CHECK(p.source == PredictionSource::analytical_bound);
      CHECK(p.latency_us == p.lower_bound_us);
    } else {
      // The network, or where the kernel lies beyond its training rows (an fp32 GEMM: the
      // bundled GEMM model learned from bf16 and fp8 only) the efficiency its rows measured.
      CHECK((p.source == PredictionSource::trained_model || p.source == PredictionSource::pipe_efficiency));
      CHECK(p.extrapolated == (p.source == PredictionSource::pipe_efficiency));
      CHECK(p.efficiency > 0);
      CHECK(p.efficiency <= 1);
    }
    if (const Gemm* gemm = kernel.get_if<Gemm>(); gemm && gemm->dtype == DType::fp32) CHECK(p.extrapolated);
    CHECK(p.lower_bound_us > 0);
    CHECK(p.latency_us >= p.lower_bound_us);
    CHECK(std::isfinite(p.latency_us));
  }
  // Copies share the bundled models.
  const Predictor other;
  for (OpFamily family : kAllOpFamilies) CHECK(other.model(family) == predictor.model(family));
}

TEST_CASE("Predictor: the bundled fp8 model for GEMMs without a config (kept gzip-compressed) reads its tree's pick",
          "[predictor]") {
  // data/models/gemm_configless_fp8.json.gz: embedded as gzip's bytes and inflated as it is parsed
  const Predictor predictor;
  const Mlp* fp8 = predictor.configless_gemm_model(DType::fp8_e4m3);
  REQUIRE(fp8 != nullptr);
  CHECK(fp8->description().config_pick == ConfigPick::cublas_tree);
  REQUIRE(fp8->description().config_tree != nullptr);
  CHECK(fp8->description().config_tree->input.size() > 10000);  // the tree learnt from every served row, not a fixture
  Gemm gemm{.m = 1000, .n = 4096, .k = 4096, .dtype = DType::fp8_e4m3};
  CHECK(predictor.picks_without_search(gemm));
  const Prediction p = predictor.predict(Kernel(gemm), find_gpu("H200-SXM"));
  CHECK(p.source == PredictionSource::trained_model);
  CHECK(p.protocol == LabelProtocol::served);
}

TEST_CASE("Predictor: the bundled bf16 model for GEMMs without a config answers with its tree's network as a second view",
          "[predictor]") {
  // data/models/gemm_configless_bf16.json.gz: the network reading the search's pick, and beside it the
  // network reading the tree's config; on Hopper the answer is the geometric mean of the two.
  const Predictor predictor;
  const Mlp* bf16 = predictor.configless_gemm_model(DType::bf16);
  REQUIRE(bf16 != nullptr);
  CHECK(bf16->description().config_pick == ConfigPick::search);
  REQUIRE(bf16->description().second_view != nullptr);
  const Mlp& view = *bf16->description().second_view;
  REQUIRE(view.description().config_tree != nullptr);
  CHECK(view.description().config_tree->input.size() > 10000);  // the tree learnt from every served row, not a fixture
  CHECK(predictor.configless_gemm_model(DType::fp16) == bf16);
  const Gemm gemm{.m = 1000, .n = 4096, .k = 4096, .dtype = DType::bf16};
  const GpuSpec& h200 = find_gpu("H200-SXM");
  MlpDescription alone = bf16->description();
  alone.second_view = nullptr;
  const Prediction pick = predictor.with({Mlp(alone)}).predict(Kernel(gemm), h200);
  const Prediction tree = Predictor(std::vector<Mlp>{view}).predict(Kernel(gemm), h200);
  const Prediction p = predictor.predict(Kernel(gemm), h200);
  CHECK(p.source == PredictionSource::trained_model);
  CHECK(p.latency_us == Approx(std::sqrt(pick.latency_us * tree.latency_us)).epsilon(1e-12));
  // Strides TMA cannot take (n = 24,578): the measured rates answer, over the model's own bound; the view is not asked.
  const Gemm misaligned{.m = 1000, .n = 24578, .k = 4096, .dtype = DType::bf16};
  const Prediction rated = predictor.predict(Kernel(misaligned), h200);
  CHECK(rated.source == PredictionSource::misaligned_strides);
  CHECK(same(rated, predictor.with({Mlp(alone)}).predict(Kernel(misaligned), h200)));
}

TEST_CASE("gemm_candidates: the configs a GEMM library would consider, by architecture", "[predictor][rank]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  const GpuSpec& a100 = find_gpu("A100-SXM4-80GB");
  const auto tiles_m = [](const std::vector<GemmConfig>& configs, bool swap_ab = true) {
    std::set<int> seen;
    for (const GemmConfig& c : configs)
      if (c.swap_ab == swap_ab) seen.insert(c.tile_m);
    return seen;
  };
  // Decode-shaped (m = 1): only the smallest tile that covers m: with the tokens on the MMA's
  // N side (swap_ab) Hopper's is 8 rows, on its M side 64.
  const std::vector<GemmConfig> decode = gemm_candidates(make_gemm(1, 4096, 4096), h100);
  CHECK(tiles_m(decode) == std::set<int>{8});
  CHECK(tiles_m(decode, false) == std::set<int>{64});
  // m = 100: tiles from m/8 = 12.5 up (16, 32, 64) and the covering 128; nothing larger.
  CHECK(tiles_m(gemm_candidates(make_gemm(100, 4096, 4096), h100)) == std::set<int>{16, 32, 64, 128});
  // A large GEMM: no tile below 64 rows.
  const std::vector<GemmConfig> large = gemm_candidates(make_gemm(8192, 8192, 8192), h100);
  CHECK(tiles_m(large) == std::set<int>{64, 128, 192, 256});
  CHECK(tiles_m(large, false) == std::set<int>{64, 128, 192, 256});
  // A Hopper spec of one SM (a spec may say 1): no cluster of two, in the candidates or the
  // default config, so that a GEMM without a config still runs (it once chose a 2 x 1 cluster and
  // then refused it).
  GpuSpec one_sm = h100;
  one_sm.sm_count = 1;
  const std::vector<GemmConfig> one_sm_candidates = gemm_candidates(make_gemm(4096, 4096, 4096), one_sm);
  CHECK_FALSE(one_sm_candidates.empty());
  for (const GemmConfig& c : one_sm_candidates) CHECK(c.cluster_m * c.cluster_n == 1);
  CHECK(default_config(make_gemm(4096, 4096, 4096), one_sm).cluster_m == 1);
  CHECK(std::isfinite(Predictor::analytical().predict(Kernel(make_gemm(4096, 4096, 4096)), one_sm).latency_us));
  CHECK(std::isfinite(Predictor().predict(Kernel(make_gemm(4096, 4096, 4096)), one_sm).latency_us));  // the search of the bundled model
  // Ampere's smallest tile is 16 rows; it has no clusters, no swap and no warpgroup schedules.
  const std::vector<GemmConfig> ampere = gemm_candidates(make_gemm(1, 4096, 4096), a100);
  CHECK(tiles_m(ampere, false) == std::set<int>{16});
  CHECK(tiles_m(ampere, true).empty());
  // A large GEMM before Hopper: the tiles cuBLAS's ampere_*_s16816gemm kernels use (no 192, at
  // most 256 x 128), K steps of 32 and 64 bf16 values; on an sm_89 board (100 KB of shared memory
  // per SM) a 128 x 256 tile keeps 3 stages of 32 and cannot keep 3 of 64.
  const std::vector<GemmConfig> ampere_large = gemm_candidates(make_gemm(8192, 8192, 8192), a100);
  CHECK(tiles_m(ampere_large, false) == std::set<int>{64, 128, 256});
  std::set<std::tuple<int, int, int, int>> tile_shapes;  // tile_m, tile_n, tile_k, stages
  for (const GemmConfig& c : ampere_large) tile_shapes.insert({c.tile_m, c.tile_n, c.tile_k, c.stages});
  CHECK(tile_shapes.count({128, 128, 32, 6}) == 1);
  CHECK(tile_shapes.count({128, 128, 64, 4}) == 1);
  CHECK(tile_shapes.count({256, 128, 64, 3}) == 1);  // 3 x 48 KB in the A100's 164 KB less 16 KB
  CHECK(tile_shapes.count({256, 256, 32, 3}) == 0);
  std::set<std::tuple<int, int, int, int>> ada_shapes;
  for (const GemmConfig& c : gemm_candidates(make_gemm(8192, 8192, 8192), find_gpu("RTX-6000-Ada")))
    ada_shapes.insert({c.tile_m, c.tile_n, c.tile_k, c.stages});
  CHECK(ada_shapes.count({128, 256, 32, 3}) == 1);
  for (const auto& [tm, tn, tk, stages] : ada_shapes) CHECK_FALSE((tm == 128 && tn == 256 && tk == 64));

  struct Case {
    const std::vector<GemmConfig>& configs;
    const GpuSpec* gpu;
    Gemm shape;
  };
  for (const Case& each : {Case{decode, &h100, make_gemm(1, 4096, 4096)}, Case{large, &h100, make_gemm(8192, 8192, 8192)},
                           Case{ampere, &a100, make_gemm(1, 4096, 4096)}}) {
    const auto& configs = each.configs;
    const GpuSpec* gpu = each.gpu;
    REQUIRE_FALSE(configs.empty());
    std::set<std::tuple<int, int, int, int, int, int, bool, GemmSchedule, GemmRaster>> distinct;
    for (const GemmConfig& c : configs) {
      CHECK_NOTHROW(c.validate());
      if (gpu == &a100) {  // mma.sync multistage kernels: 64 or 128 bytes of K, 3-6 stages, at most 256 x 128
        CHECK((c.tile_k == 32 || c.tile_k == 64));
        CHECK(c.tile_m * c.tile_n <= 256 * 128);
        CHECK(c.stages >= (c.tile_m < 64 ? 2 : 3));
        CHECK(c.stages <= (c.tile_k == 32 ? 6 : 4));
      } else {
        CHECK(c.tile_k == 64);  // 128 bytes of bf16
        CHECK(c.tile_m * c.tile_n <= 256 * 256);
        CHECK(c.stages >= 2);
      }
      if (gpu == &a100) CHECK((c.cluster_m * c.cluster_n == 1 && c.schedule == GemmSchedule::ping_pong));
      // The cooperative pairs cuBLAS offers: split along M where M is 128 or 256, else along N.
      if (c.schedule == GemmSchedule::cooperative) CHECK(c.mma_m_side() % 128 == 0);
      if (c.schedule == GemmSchedule::cooperative_split_n) CHECK(c.mma_m_side() % 128 != 0);
      distinct.insert({c.tile_m, c.tile_n, c.tile_k, c.split_k, c.cluster_m, c.cluster_n, c.swap_ab, c.schedule, c.raster});
      // Every candidate runs on the GPU it was made for.
      Gemm gemm = each.shape;
      gemm.config = c;
      CHECK_NOTHROW(demand(gemm, *gpu));
    }
    CHECK(distinct.size() == configs.size());
  }
  // Split-K only where the tiles fill at most half the SMs: 8192^2 has 1024+ tiles, none split;
  // m = 1, n = 4096 has at most 64 tiles on 132 SMs, so splits of 2, 4 and 8 appear.
  for (const GemmConfig& c : large) CHECK(c.split_k == 1);
  std::set<int> splits;
  for (const GemmConfig& c : decode) splits.insert(c.split_k);
  CHECK(splits == std::set<int>{1, 2, 4, 8});
  // Clusters no larger than the tile grid: one tile row (m = 1) never clusters along m.
  for (const GemmConfig& c : decode) CHECK(c.cluster_m == 1);
  bool clustered_n = false;
  for (const GemmConfig& c : decode) clustered_n = clustered_n || c.cluster_n == 2;
  CHECK(clustered_n);
  // Both schedules of a 128-row M side, and both rasters of a many-wave grid; one tile row
  // (decode) walks along n only.
  std::set<GemmSchedule> schedules;
  std::set<GemmRaster> rasters;
  for (const GemmConfig& c : large) schedules.insert(c.schedule), rasters.insert(c.raster);
  CHECK(schedules == std::set<GemmSchedule>{GemmSchedule::ping_pong, GemmSchedule::cooperative,
                                            GemmSchedule::cooperative_split_n});
  CHECK(rasters == std::set<GemmRaster>{GemmRaster::along_n, GemmRaster::along_m});
  for (const GemmConfig& c : decode) CHECK(c.raster == GemmRaster::along_n);
}


TEST_CASE("is_gemm_candidate: whether gemm_candidates lists a config, without listing them", "[predictor][rank]") {
  // Every config any of these GPUs, data types and shapes lists, asked of every one of them.
  const std::vector<const char*> gpus = {"H100-SXM", "A100-SXM4-80GB", "L40S", "B200"};
  std::vector<Gemm> shapes;
  for (DType dtype : kAllDTypes)
    for (std::int64_t m : {1, 9, 100, 1001, 8192}) shapes.push_back(make_gemm(m, m == 100 ? 192 : 4096, 14336, dtype));
  std::vector<GemmConfig> pool;
  for (const char* name : gpus)
    for (const Gemm& shape : shapes)
      for (const GemmConfig& config : gemm_candidates(shape, find_gpu(name)))
        if (std::find(pool.begin(), pool.end(), config) == pool.end()) pool.push_back(config);
  std::size_t listed = 0, not_listed = 0, mismatches = 0;
  std::string first_mismatch;
  for (const char* name : gpus) {
    const GpuSpec& gpu = find_gpu(name);
    for (const Gemm& shape : shapes) {
      const std::vector<GemmConfig> candidates = gemm_candidates(shape, gpu);
      for (const GemmConfig& config : pool) {
        const bool in_list = std::find(candidates.begin(), candidates.end(), config) != candidates.end();
        ++(in_list ? listed : not_listed);
        if (is_gemm_candidate(config, shape, gpu) == in_list) continue;
        if (mismatches++ == 0)
          first_mismatch = std::string(name) + " " + std::string(to_string(shape.dtype)) + " m " + std::to_string(shape.m) + " tile " +
                           std::to_string(config.tile_m) + "x" + std::to_string(config.tile_n) + "x" + std::to_string(config.tile_k);
      }
    }
  }
  INFO("first mismatch: " << first_mismatch);
  CHECK(mismatches == 0);
  CHECK(listed > 5000);
  CHECK(not_listed > 5000);
}
TEST_CASE("Predictor::rank orders candidates by predicted latency, fastest first", "[predictor][rank]") {
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const Predictor predictor(std::vector<Mlp>{varying_model(OpFamily::gemm)});
  Gemm gemm = make_gemm(512, 4096, 4096);
  std::vector<Kernel> candidates;
  for (const GemmConfig& config : gemm_candidates(gemm, gpu)) {
    gemm.config = config;
    candidates.push_back(gemm);
  }
  REQUIRE(candidates.size() > 10);
  const std::vector<RankedCandidate> ranked = predictor.rank(candidates, gpu);
  REQUIRE(ranked.size() == candidates.size());
  std::set<std::size_t> indices;
  for (std::size_t r = 0; r < ranked.size(); ++r) {
    indices.insert(ranked[r].index);
    // Each entry is the candidate's own prediction (batched arithmetic: equal to rounding) ...
    const Prediction one = predictor.predict(candidates[ranked[r].index], gpu);
    CHECK(ranked[r].prediction.latency_us == Approx(one.latency_us).epsilon(1e-6));
    CHECK(ranked[r].prediction.lower_bound_us == one.lower_bound_us);
    // ... and they come in order.
    if (r > 0) CHECK(ranked[r - 1].prediction.latency_us <= ranked[r].prediction.latency_us);
  }
  CHECK(indices.size() == candidates.size());  // a permutation
  CHECK(ranked.front().prediction.latency_us < ranked.back().prediction.latency_us);

  // Ties keep the order given: the same kernel three times ranks 0, 1, 2.
  const std::vector<Kernel> copies(3, candidates.front());
  const std::vector<RankedCandidate> tied = predictor.rank(copies, gpu);
  CHECK(tied[0].index == 0);
  CHECK(tied[1].index == 1);
  CHECK(tied[2].index == 2);
  CHECK(predictor.rank(std::span<const Kernel>{}, gpu).empty());
}

TEST_CASE("Predictor: a GEMM without a config is predicted with the best predicted candidate", "[predictor][rank]") {
  const Predictor predictor(std::vector<Mlp>{varying_model(OpFamily::gemm)});
  for (const char* name : {"H100-SXM", "A100-SXM4-80GB"}) {
    INFO(name);
    const GpuSpec& gpu = find_gpu(name);
    // m on best_gemm_config's grid (Predictor::kConfigGridM), where it searches every candidate.
    for (const Gemm& shape : {make_gemm(1, 4096, 4096), make_gemm(704, 14336, 4096), make_gemm(8192, 1024, 28672)}) {
      INFO(shape.m << "x" << shape.n << "x" << shape.k);
      // The best by hand: the lowest predicted latency over every candidate.
      double fastest = 1e300;
      GemmConfig expected;
      for (const GemmConfig& config : gemm_candidates(shape, gpu)) {
        Gemm tuned = shape;
        tuned.config = config;
        const double latency = predictor.predict(tuned, gpu).latency_us;
        if (latency < fastest) fastest = latency, expected = config;
      }
      const GemmConfig chosen = predictor.best_gemm_config(shape, gpu);
      CHECK(chosen == expected);
      CHECK(predictor.best_gemm_config(shape, gpu) == chosen);  // the remembered answer is the same
      const Prediction p = predictor.predict(shape, gpu);
      CHECK(p.latency_us == Approx(fastest).epsilon(1e-9));
      CHECK(p.config_defaulted);
      // configured() shows the kernel as predicted: the chosen config filled in.
      const Kernel as_run = predictor.configured(shape, gpu);
      REQUIRE(as_run.get_if<Gemm>()->config);
      CHECK(*as_run.get_if<Gemm>()->config == chosen);
    }
  }
  // Another spec of the same name (a calibrated file) is another GPU to the memo.
  GpuSpec slower = find_gpu("H100-SXM");
  slower.dram_bandwidth_gb_s /= 4;
  const Gemm decode = make_gemm(16, 8192, 8192);
  Gemm tuned = decode;
  tuned.config = predictor.best_gemm_config(decode, slower);
  CHECK(predictor.predict(decode, slower).latency_us == Approx(predictor.predict(tuned, slower).latency_us).epsilon(1e-9));
  CHECK(predictor.predict(decode, slower).latency_us > predictor.predict(decode, find_gpu("H100-SXM")).latency_us);

  // With no GEMM model there is nothing to rank by: the analytical default config.
  const Predictor analytical = Predictor::analytical();
  const GpuSpec& h100 = find_gpu("H100-SXM");
  CHECK(analytical.best_gemm_config(decode, h100) == default_config(decode, h100));
  CHECK(analytical.configured(decode, h100) == Kernel(decode));  // left to the demand model's default
  const Kernel norm = parse_kernel("rmsnorm:tokens=64,hidden=4096");
  CHECK(predictor.configured(norm, h100) == norm);
  // fp8 on an A100 cannot run, whichever config.
  CHECK_THROWS_AS(predictor.best_gemm_config(make_gemm(64, 4096, 4096, DType::fp8_e4m3), find_gpu("A100-SXM4-80GB")), Error);
}

TEST_CASE("Predictor: a GEMM without a config is scaled by the model's configless_scale for its type", "[predictor][rank]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  const Predictor plain(std::vector<Mlp>{varying_model(OpFamily::gemm)});
  MlpDescription corrected = varying_model(OpFamily::gemm).description();
  corrected.configless_scale = {{DType::bf16, 1.25}, {DType::fp8_e4m3, 0.5}};
  const Predictor predictor(std::vector<Mlp>{Mlp(corrected)});

  const Gemm decode = make_gemm(16, 8192, 8192);
  const Prediction unscaled = plain.predict(decode, h100);
  const Prediction scaled = predictor.predict(decode, h100);
  CHECK(predictor.best_gemm_config(decode, h100) == plain.best_gemm_config(decode, h100));  // the choice is the same
  CHECK(scaled.latency_us == Approx(1.25 * unscaled.latency_us).epsilon(1e-12));
  CHECK(scaled.efficiency == Approx(unscaled.efficiency / 1.25).epsilon(1e-12));
  CHECK(scaled.lower_bound_us == unscaled.lower_bound_us);
  CHECK(scaled.config_defaulted);
  // The batched path scales the same kernels the same way.
  const std::vector<Kernel> kernels{decode, predictor.configured(decode, h100), make_gemm(16, 8192, 8192, DType::fp16)};
  const std::vector<Prediction> batch = predictor.predict(kernels, h100);
  CHECK(batch[0].latency_us == Approx(scaled.latency_us).epsilon(1e-12));
  // Given its config (even the one the predictor chose), a GEMM is not corrected: nothing was chosen.
  CHECK(batch[1].latency_us == Approx(unscaled.latency_us).epsilon(1e-12));
  CHECK(!batch[1].config_defaulted);
  // A type the model records no factor for is left as predicted.
  CHECK(batch[2].latency_us == Approx(plain.predict(kernels[2], h100).latency_us).epsilon(1e-12));
  // A factor below 1 may not take a prediction below the bound: that stays the floor.
  const Prediction fp8 = predictor.predict(make_gemm(4096, 4096, 4096, DType::fp8_e4m3), h100);
  const Prediction fp8_plain = plain.predict(make_gemm(4096, 4096, 4096, DType::fp8_e4m3), h100);
  REQUIRE(0.5 * fp8_plain.latency_us < fp8_plain.lower_bound_us);  // so the floor is what answers
  CHECK(fp8.latency_us == Approx(fp8_plain.lower_bound_us).epsilon(1e-12));
  CHECK(fp8.efficiency == 1.0);
}

TEST_CASE("Mlp: configless_scale is checked and survives a JSON round trip", "[predictor][mlp]") {
  MlpDescription d = varying_model(OpFamily::gemm).description();
  d.configless_scale = {{DType::bf16, 1.0625}, {DType::fp8_e4m3, 1.125}};
  const Mlp model(d);
  CHECK(model.configless_scale(DType::bf16) == 1.0625);
  CHECK(model.configless_scale(DType::fp8_e4m3) == 1.125);
  CHECK(model.configless_scale(DType::fp16) == 1.0);
  const Mlp read_back = mlp_from_json(to_json(model));
  CHECK(read_back.description().configless_scale == d.configless_scale);
  // A model file without the field (every file before it) reads as no correction.
  CHECK(mlp_from_json(to_json(varying_model(OpFamily::gemm))).description().configless_scale.empty());

  MlpDescription bad = d;
  bad.configless_scale = {{DType::bf16, 0.0}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.configless_scale.bf16") && Contains("must be within 0.5-2"));
  bad.configless_scale = {{DType::bf16, 2.5}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.configless_scale.bf16") && Contains("must be within 0.5-2"));
  bad.configless_scale = {{DType::bf16, std::nan("")}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.configless_scale.bf16"));
  bad.configless_scale = {{DType::bf16, 1.1}, {DType::bf16, 1.2}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.configless_scale.bf16") && Contains("twice"));
  MlpDescription norm = varying_model(OpFamily::rmsnorm).description();
  norm.configless_scale = {{DType::bf16, 1.1}};
  CHECK_THAT(error_of([&] { Mlp{norm}; }), Contains("mlp.configless_scale") && Contains("GEMM models only"));

  // In a file: a key that is no data type, and a value that is no number, are named.
  std::string text = to_json(model);
  const std::string key = "\"bf16\":1.0625";
  REQUIRE(text.find(key) != std::string::npos);
  std::string unknown = text;
  unknown.replace(unknown.find(key), key.size(), "\"bf17\":1.0625");
  CHECK_THAT(error_of([&] { mlp_from_json(unknown); }), Contains("mlp.configless_scale") && Contains("bf17"));
  std::string not_object = text;
  const std::string listed = "\"configless_scale\":{\"bf16\":1.0625,\"fp8_e4m3\":1.125}";
  REQUIRE(not_object.find(listed) != std::string::npos);
  not_object.replace(not_object.find(listed), listed.size(), "\"configless_scale\":1.1");
  CHECK_THAT(error_of([&] { mlp_from_json(not_object); }),
             Contains("mlp.configless_scale must be an object keyed by data type, got 1.1"));
  std::string alias = text;  // "fp8" names fp8_e4m3 too: listed twice
  alias.replace(alias.find(key), key.size(), "\"fp8\":1.0625");
  CHECK_THAT(error_of([&] { mlp_from_json(alias); }), Contains("mlp.configless_scale.fp8_e4m3") && Contains("twice"));
  std::string not_number = text;
  not_number.replace(not_number.find(key), key.size(), "\"bf16\":\"1.06\"");
  CHECK_THAT(error_of([&] { mlp_from_json(not_number); }), Contains("mlp.configless_scale.bf16") && Contains("number"));
}

TEST_CASE("Predictor: a network's latency_scale multiplies every latency it answers", "[predictor][mlp]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  MlpDescription answers = constant_model(OpFamily::gemm, 0.4).description();
  answers.for_configless_gemm = true;
  MlpDescription scaled_answers = answers;
  scaled_answers.latency_scale = 1.0213;
  MlpDescription attention = varying_model(OpFamily::attention).description();
  attention.latency_scale = 0.9;
  const Predictor plain(std::vector<Mlp>{varying_model(OpFamily::gemm), Mlp(answers), varying_model(OpFamily::attention)});
  const Predictor predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), Mlp(scaled_answers), Mlp(attention)});
  const Gemm decode = make_gemm(16, 8192, 8192);
  const Kernel prefill = Attention::prefill(2, 1024, 32, 8, 128);
  const Prediction gemm_plain = plain.predict(decode, h100), gemm_scaled = predictor.predict(decode, h100);
  CHECK(gemm_scaled.latency_us == Approx(1.0213 * gemm_plain.latency_us).epsilon(1e-12));  // the config-less network's
  CHECK(gemm_scaled.lower_bound_us == gemm_plain.lower_bound_us);
  CHECK(predictor.configured(decode, h100) == plain.configured(decode, h100));  // the choice is the same
  // With its config the GEMM model answers, which holds no factor.
  const Kernel chosen = plain.configured(decode, h100);
  CHECK(same(predictor.predict(chosen, h100), plain.predict(chosen, h100)));
  const Prediction attention_plain = plain.predict(prefill, h100), attention_scaled = predictor.predict(prefill, h100);
  CHECK(attention_scaled.latency_us == Approx(0.9 * attention_plain.latency_us).epsilon(1e-12));
  // Batched as one at a time.
  const std::vector<Prediction> batch = predictor.predict(std::vector<Kernel>{decode, prefill, chosen}, h100);
  CHECK(same(batch[0], gemm_scaled));
  CHECK(same(batch[1], attention_scaled));

  // In a file: absent reads as 1 (every file before the field), written only where it is not 1,
  // and a value that is no correction of a mean is named.
  CHECK(to_json(Mlp(answers)).find("latency_scale") == std::string::npos);
  CHECK(mlp_from_json(to_json(Mlp(answers))).latency_scale() == 1.0);
  const std::string text = to_json(Mlp(scaled_answers));
  CHECK(mlp_from_json(text).latency_scale() == 1.0213);
  for (const double bad : {0.0, 0.49, 2.01, -1.0, std::nan("")}) {
    MlpDescription broken = scaled_answers;
    broken.latency_scale = bad;
    CHECK_THAT(error_of([&] { Mlp{broken}; }), Contains("mlp.latency_scale") && Contains("0.5-2"));
  }
  MlpDescription just_past = scaled_answers;  // the value as given, not rounded to read as allowed
  just_past.latency_scale = 2.0000001;
  CHECK_THAT(error_of([&] { Mlp{just_past}; }), Contains("got 2.0000001"));
  const std::string field = "\"latency_scale\":1.0213";
  REQUIRE(text.find(field) != std::string::npos);
  std::string not_number = text;
  not_number.replace(not_number.find(field), field.size(), "\"latency_scale\":\"1\"");
  CHECK_THAT(error_of([&] { mlp_from_json(not_number); }), Contains("mlp.latency_scale"));
}

TEST_CASE("Mlp: how its rows were timed survives a JSON round trip, and its predictions say so", "[predictor][mlp]") {
  MlpDescription d = constant_model(OpFamily::gemm, 0.4).description();
  d.for_configless_gemm = true;
  CHECK(d.protocol == LabelProtocol::rested);
  CHECK(to_json(Mlp(d)).find("\"protocol\"") == std::string::npos);  // rested is the absent field, as in older files
  d.protocol = LabelProtocol::served;
  const Mlp served(d);
  const std::string text = to_json(served);
  CHECK(mlp_from_json(text).description().protocol == LabelProtocol::served);
  std::string bad = text;
  bad.replace(bad.find("\"served\""), 8, "\"idle\"");
  CHECK_THAT(error_of([&] { mlp_from_json(bad); }), Contains("mlp.protocol") && Contains("idle"));

  const GpuSpec& h100 = find_gpu("H100-SXM");
  const Predictor predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), served});
  const Gemm decode = make_gemm(16, 8192, 8192);
  CHECK(predictor.predict(decode, h100).protocol == LabelProtocol::served);  // the config-less network answers
  CHECK(predictor.predict(predictor.configured(decode, h100), h100).protocol == LabelProtocol::rested);  // the GEMM model
  CHECK(Predictor::analytical().predict(decode, h100).protocol == LabelProtocol::rested);  // the bound alone
}

TEST_CASE("Predictor: a model for GEMMs without a config answers for them, beside the GEMM model", "[predictor][rank]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  MlpDescription answers = constant_model(OpFamily::gemm, 0.4).description();
  answers.for_configless_gemm = true;
  const Mlp configless(answers);
  const Predictor plain(std::vector<Mlp>{varying_model(OpFamily::gemm)});
  const Predictor predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), configless});
  for (DType dtype : kAllDTypes) {
    CHECK(predictor.configless_gemm_model(dtype) == predictor.configless_gemm_model(DType::bf16));  // every type
    CHECK(plain.configless_gemm_model(dtype) == nullptr);
  }
  REQUIRE(predictor.configless_gemm_model(DType::bf16) != nullptr);
  CHECK(predictor.model(OpFamily::gemm)->description().for_configless_gemm == false);  // each in its place

  const Gemm decode = make_gemm(16, 8192, 8192);
  const Kernel chosen = plain.configured(decode, h100);  // the GEMM model picks the config...
  CHECK(predictor.configured(decode, h100) == chosen);
  const Prediction p = predictor.predict(decode, h100);
  const double bound = plain.predict(chosen, h100).lower_bound_us;
  CHECK(p.latency_us == Approx(bound / 0.4).epsilon(1e-6));  // ...and the config-less model answers on its demand
  CHECK(p.efficiency == Approx(0.4).epsilon(1e-6));
  CHECK(p.config_defaulted);
  // A GEMM with its config, and any other kernel, is the GEMM model's (or its family's) question.
  CHECK(same(predictor.predict(chosen, h100), plain.predict(chosen, h100)));
  // Batched as one at a time.
  const std::vector<Kernel> kernels = mixed_kernels();
  const std::vector<Prediction> batch = predictor.predict(kernels, h100);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    INFO(to_string(kernels[i]));
    CHECK(same(batch[i], predictor.predict(kernels[i], h100)));
  }
  // Alone, without a GEMM model to pick the config, it is not used: the bound answers.
  const Predictor alone(std::vector<Mlp>{configless});
  CHECK(same(alone.predict(decode, h100), Predictor::analytical().predict(decode, h100)));
  // with() puts it in its place in a copy; the original keeps what it had.
  const Predictor added = plain.with({configless});
  CHECK(same(added.predict(decode, h100), p));
  CHECK(same(plain.predict(decode, h100), Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm)}).predict(decode, h100)));
}

TEST_CASE("Predictor: config-less GEMM models per data type, a listing model before one for every type",
          "[predictor][rank]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  auto configless = [](double efficiency, std::vector<DType> dtypes) {
    MlpDescription d = constant_model(OpFamily::gemm, efficiency).description();
    d.for_configless_gemm = true;
    d.dtypes = std::move(dtypes);
    return Mlp(d);
  };
  const Mlp every = configless(0.5, {}), bf16 = configless(0.4, {DType::bf16}), fp8 = configless(0.3, {DType::fp8_e4m3});
  CHECK(bf16.answers_for(DType::bf16));
  CHECK_FALSE(bf16.answers_for(DType::fp16));
  CHECK(every.answers_for(DType::int8));
  auto efficiency_of = [&](const Predictor& predictor, DType dtype) {
    Gemm gemm = make_gemm(64, 4096, 4096);
    gemm.dtype = dtype;
    return predictor.predict(gemm, h100).efficiency;
  };
  // In either order, the model that lists a type answers for it; the one for every type, the rest.
  for (const std::vector<Mlp>& order : {std::vector<Mlp>{varying_model(OpFamily::gemm), every, bf16, fp8},
                                        std::vector<Mlp>{varying_model(OpFamily::gemm), bf16, fp8, every}}) {
    const Predictor predictor(order);
    CHECK(efficiency_of(predictor, DType::bf16) == Approx(0.4).epsilon(1e-6));
    CHECK(efficiency_of(predictor, DType::fp8_e4m3) == Approx(0.3).epsilon(1e-6));
    CHECK(efficiency_of(predictor, DType::fp16) == Approx(0.5).epsilon(1e-6));
    CHECK(predictor.configless_gemm_model(DType::fp16)->description().dtypes.empty());
  }
  // Without one for every type, a type none lists is the GEMM model's pick times its configless_scale.
  const Predictor plain(std::vector<Mlp>{varying_model(OpFamily::gemm)});
  const Predictor listed(std::vector<Mlp>{varying_model(OpFamily::gemm), bf16});
  CHECK(listed.configless_gemm_model(DType::fp16) == nullptr);
  CHECK(efficiency_of(listed, DType::fp16) == Approx(efficiency_of(plain, DType::fp16)).epsilon(1e-12));
  CHECK(efficiency_of(listed, DType::bf16) == Approx(0.4).epsilon(1e-6));
  // A later model that lists a type replaces the earlier one in that type's place only.
  const Predictor replaced = listed.with({configless(0.2, {DType::bf16, DType::fp16})});
  CHECK(efficiency_of(replaced, DType::bf16) == Approx(0.2).epsilon(1e-6));
  CHECK(efficiency_of(replaced, DType::fp16) == Approx(0.2).epsilon(1e-6));
  CHECK(efficiency_of(listed, DType::bf16) == Approx(0.4).epsilon(1e-6));
  // with() a model for every type over per-type ones (a user's model over the bundled): it answers for all.
  const Predictor overridden = Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), bf16, fp8}).with({every});
  for (DType dtype : {DType::bf16, DType::fp8_e4m3, DType::fp16}) CHECK(efficiency_of(overridden, dtype) == Approx(0.5).epsilon(1e-6));
  // A batch of mixed types, each to its own network, as one at a time.
  const Predictor predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), every, bf16, fp8});
  std::vector<Kernel> kernels;
  for (DType dtype : {DType::bf16, DType::fp8_e4m3, DType::fp16, DType::bf16}) {
    Gemm gemm = make_gemm(64, 4096, 4096);
    gemm.dtype = dtype;
    kernels.push_back(gemm);
  }
  const std::vector<Prediction> batch = predictor.predict(kernels, h100);
  for (std::size_t i = 0; i < kernels.size(); ++i) CHECK(same(batch[i], predictor.predict(kernels[i], h100)));
}

TEST_CASE("Mlp: dtypes is checked and survives a JSON round trip", "[predictor][mlp]") {
  MlpDescription d = varying_model(OpFamily::gemm).description();
  d.for_configless_gemm = true;
  d.dtypes = {DType::fp8_e4m3, DType::bf16};
  const Mlp model(d);
  CHECK(mlp_from_json(to_json(model)).description().dtypes == d.dtypes);
  CHECK(mlp_from_json(to_json(varying_model(OpFamily::gemm))).description().dtypes.empty());
  MlpDescription with_config = d;
  with_config.for_configless_gemm = false;
  CHECK_THAT(error_of([&] { Mlp{with_config}; }), Contains("mlp.dtypes") && Contains("without a config only"));
  MlpDescription twice = d;
  twice.dtypes = {DType::bf16, DType::fp8_e4m3, DType::bf16};
  CHECK_THAT(error_of([&] { Mlp{twice}; }), Contains("mlp.dtypes[2] is listed twice, got \"bf16\""));
  std::string text = to_json(model);
  const std::string listed = "\"dtypes\":[\"fp8_e4m3\",\"bf16\"]";
  REQUIRE(text.find(listed) != std::string::npos);
  std::string unknown = text;
  unknown.replace(unknown.find(listed), listed.size(), "\"dtypes\":[\"bf16\",\"fp4\"]");
  CHECK_THAT(error_of([&] { mlp_from_json(unknown); }), Contains("mlp.dtypes[1] must be a data type") && Contains("fp4"));
  std::string not_array = text;
  not_array.replace(not_array.find(listed), listed.size(), "\"dtypes\":\"bf16\"");
  CHECK_THAT(error_of([&] { mlp_from_json(not_array); }), Contains("mlp.dtypes must be an array"));
}

TEST_CASE("Mlp: for_configless_gemm is checked and survives a JSON round trip", "[predictor][mlp]") {
  MlpDescription d = varying_model(OpFamily::gemm).description();
  d.for_configless_gemm = true;
  const Mlp model(d);
  CHECK(mlp_from_json(to_json(model)).description().for_configless_gemm);
  CHECK_FALSE(mlp_from_json(to_json(varying_model(OpFamily::gemm))).description().for_configless_gemm);
  MlpDescription scaled = d;
  scaled.configless_scale = {{DType::bf16, 1.1}};
  CHECK_THAT(error_of([&] { Mlp{scaled}; }), Contains("mlp.configless_scale") && Contains("must be empty"));
  MlpDescription norm = varying_model(OpFamily::rmsnorm).description();
  norm.for_configless_gemm = true;
  CHECK_THAT(error_of([&] { Mlp{norm}; }), Contains("mlp.for_configless_gemm") && Contains("GEMM models only"));
  std::string text = to_json(model);
  const std::string flag = "\"for_configless_gemm\":true";
  REQUIRE(text.find(flag) != std::string::npos);
  text.replace(text.find(flag), flag.size(), "\"for_configless_gemm\":\"yes\"");
  CHECK_THAT(error_of([&] { mlp_from_json(text); }), Contains("mlp.for_configless_gemm must be true or false, got \"yes\""));
}

TEST_CASE("Predictor: a config-less model that reads the analytical default config answers without a search or a GEMM model",
          "[predictor][rank]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  MlpDescription d = constant_model(OpFamily::gemm, 0.4).description();
  d.for_configless_gemm = true;
  d.dtypes = {DType::bf16};
  d.config_pick = ConfigPick::analytical_default;
  const Mlp reads_default(d);
  const Gemm decode = make_gemm(16, 8192, 8192);
  Gemm with_default = decode;
  with_default.config = default_config(decode, h100);
  const Kernel defaulted = with_default;
  for (const Predictor& predictor : {Predictor(std::vector<Mlp>{reads_default}),
                                     Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), reads_default})}) {
    CHECK(predictor.picks_without_search(decode));
    CHECK(predictor.configured(decode, h100) == defaulted);  // the analytical stage's config, not the GEMM model's pick
    const Prediction p = predictor.predict(decode, h100);
    const Prediction bound = Predictor::analytical().predict(decode, h100);  // the same default config's bound
    CHECK(p.lower_bound_us == bound.lower_bound_us);
    CHECK(p.efficiency == Approx(0.4).epsilon(1e-6));
    CHECK(p.source == PredictionSource::trained_model);
    CHECK(p.config_defaulted);
    const std::vector<Prediction> batch = predictor.predict(std::vector<Kernel>{decode, defaulted}, h100);
    CHECK(same(batch[0], p));
    CHECK(same(batch[1], predictor.predict(defaulted, h100)));
  }
  // Given its config, the GEMM is not the config-less model's: with no GEMM model, the bound.
  CHECK(same(Predictor(std::vector<Mlp>{reads_default}).predict(defaulted, h100), Predictor::analytical().predict(defaulted, h100)));
  // A type it does not list: the GEMM model's search, as before.
  Gemm fp8 = decode;
  fp8.dtype = DType::fp8_e4m3;
  const Predictor beside(std::vector<Mlp>{varying_model(OpFamily::gemm), reads_default});
  CHECK_FALSE(beside.picks_without_search(fp8));
  CHECK(beside.configured(fp8, h100) == Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm)}).configured(fp8, h100));

  // In a file: absent reads as search (every file before the field), and the field is checked.
  const std::string text = to_json(reads_default);
  CHECK(mlp_from_json(text).description().config_pick == ConfigPick::analytical_default);
  MlpDescription searching = d;
  searching.config_pick = ConfigPick::search;
  CHECK(to_json(Mlp(searching)).find("config_pick") == std::string::npos);
  CHECK(mlp_from_json(to_json(Mlp(searching))).description().config_pick == ConfigPick::search);
  const std::string field = "\"config_pick\":\"analytical_default\"";
  REQUIRE(text.find(field) != std::string::npos);
  std::string unknown = text;
  unknown.replace(unknown.find(field), field.size(), "\"config_pick\":\"fastest\"");
  CHECK_THAT(error_of([&] { mlp_from_json(unknown); }), Contains("mlp.config_pick") && Contains("fastest"));
  MlpDescription with_config = varying_model(OpFamily::gemm).description();
  with_config.config_pick = ConfigPick::analytical_default;
  CHECK_THAT(error_of([&] { Mlp{with_config}; }), Contains("mlp.config_pick") && Contains("without a config only"));
}

namespace {
// A small tree, in preorder (an inner node's left child the next node): m at most 64 -> config 0;
// else by the GPU's bandwidth: to 4,096 GB/s config 1, past it config 2 (split-K 8).
GemmConfigTree small_config_tree() {
  GemmConfigTree tree;
  tree.input = {0, -1, 6, -1, -1};
  tree.threshold = {6.0f, 0, 12.0f, 0, 0};
  tree.right = {2, 0, 4, 0, 0};
  tree.config = {0, 0, 0, 1, 2};
  GemmConfig small{.tile_m = 64, .tile_n = 128, .tile_k = 128, .stages = 4};
  small.swap_ab = true;
  GemmConfig large{.tile_m = 160, .tile_n = 256, .tile_k = 128, .stages = 4, .cluster_m = 2};
  large.schedule = GemmSchedule::cooperative;
  large.swap_ab = true;  // (the MMA's M side, tile_n, a multiple of 128 as cooperative asks)
  GemmConfig split{.tile_m = 128, .tile_n = 128, .tile_k = 128, .split_k = 8, .stages = 4};
  tree.configs = {small, large, split};
  return tree;
}
}  // namespace

TEST_CASE("GemmConfigTree: a walk reaches its leaf's config; its rules name the field", "[predictor][config_tree]") {
  const GemmConfigTree tree = small_config_tree();
  REQUIRE_NOTHROW(tree.validate());
  GpuSpec fast = find_gpu("H200-SXM");
  fast.dram_bandwidth_gb_s = 4800;
  const GpuSpec& h100 = find_gpu("H100-SXM");  // 3,350 GB/s
  CHECK(tree.pick(make_gemm(64, 4096, 4096), h100) == tree.configs[0]);  // log2 64 = 6: at most the threshold
  CHECK(tree.pick(make_gemm(65, 4096, 4096), h100) == tree.configs[1]);
  CHECK(tree.pick(make_gemm(65, 4096, 4096), fast) == tree.configs[2]);
  // A split past the GEMM's K steps is cut to them (K 256 in steps of 128: two).
  CHECK(tree.pick(make_gemm(1000, 4096, 256), fast).split_k == 2);
  CHECK(tree.pick(make_gemm(1000, 4096, 8192), fast).split_k == 8);

  auto broken = [&](const std::function<void(GemmConfigTree&)>& change) {
    GemmConfigTree copy = tree;
    change(copy);
    return error_of([&] { copy.validate(); });
  };
  CHECK_THAT(broken([](GemmConfigTree& t) { t.right[0] = 1; }),
             Contains("config_tree.right[0] must be a node after the left child, the next node (2-4), got 1"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.right[2] = 5; }),
             Contains("config_tree.right[2] must be a node after the left child, the next node (4-4), got 5"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.input[4] = 0; }),
             Contains("config_tree.input[4] must be -1 at the last two nodes (an inner node's left child is the next node, its right "
                      "one after it), got 0"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.input[3] = 0; }), Contains("config_tree.input[3] must be -1 at the last two nodes"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.config[4] = 3; }), Contains("config_tree.config[4] must index configs (0-2) at a leaf, got 3"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.input[2] = 27; }),
             Contains("config_tree.input[2] must be -1 (a leaf) or the index of one of the tree's inputs (0-26), got 27"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.input_count = 9, t.input[2] = 9; }),
             Contains("config_tree.input[2] must be -1 (a leaf) or the index of one of the tree's inputs (0-8), got 9"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.input_count = 28; }), Contains("config_tree.inputs entries must be 1-27 (the inputs this build computes), got 28"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.threshold[0] = std::nanf(""); }), Contains("config_tree.threshold[0] must be finite"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.right.pop_back(); }), Contains("config_tree.right entries must be one per node (5), got 4"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.configs[1].tile_m = 4; }), Contains("config_tree.configs[1]: gemm.tile_m must be at least 8"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t.configs.clear(); }), Contains("config_tree.configs must hold at least one config"));
  CHECK_THAT(broken([](GemmConfigTree& t) { t = GemmConfigTree{}; }), Contains("config_tree.nodes must be at least 1"));
}

TEST_CASE("GemmConfigTree: the shape's remainders are inputs, as served_config_tree.py computes them", "[predictor][config_tree]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");  // 132 SMs
  const auto inputs = GemmConfigTree::tree_inputs(make_gemm(1000, 4608, 4000), h100);
  const auto value = [&](std::string_view name) {
    const auto at = std::find(GemmConfigTree::kInputNames.begin(), GemmConfigTree::kInputNames.end(), name);
    REQUIRE(at != GemmConfigTree::kInputNames.end());
    return inputs[static_cast<std::size_t>(at - GemmConfigTree::kInputNames.begin())];
  };
  CHECK(value("log2_m") == static_cast<float>(std::log2(1000.0)));
  CHECK(value("n_multiple_of_256") == 1.0f);  // 4608 = 18 x 256
  CHECK(value("k_multiple_of_256") == 0.0f);
  CHECK(value("m_mod_8") == 0.0f);
  CHECK(value("m_mod_16") == 8.0f);
  CHECK(value("m_mod_256") == 232.0f);
  CHECK(value("n_mod_64") == 0.0f);
  CHECK(value("k_mod_64") == 32.0f);    // 4000 = 62 x 64 + 32
  CHECK(value("k_mod_256") == 160.0f);  // 15 x 256 + 160
  CHECK(value("waves_64x128") == static_cast<float>(16.0 * 36 / 132));   // ceil(1000 / 64) = 16 by 36 tiles
  CHECK(value("waves_192x128") == static_cast<float>(6.0 * 36 / 132));
  CHECK(value("tiles_past_waves_128x128") == static_cast<float>((8 * 36) % 132));  // 288 tiles: 24 past two waves
  CHECK(value("tiles_past_waves_256x256") == static_cast<float>(4 * 18));
  // A tree splitting on m mod 64 tells apart two m of one scale.
  GemmConfigTree tree;
  tree.input = {12, -1, -1};  // m_mod_64
  tree.threshold = {0.5f, 0, 0};
  tree.right = {2, 0, 0};
  tree.config = {0, 0, 1};
  tree.configs = {GemmConfig{.tile_m = 128, .tile_n = 128, .tile_k = 128, .stages = 4},
                  GemmConfig{.tile_m = 80, .tile_n = 256, .tile_k = 128, .stages = 2}};
  REQUIRE(GemmConfigTree::kInputNames[12] == "m_mod_64");
  REQUIRE_NOTHROW(tree.validate());
  CHECK(tree.pick(make_gemm(1024, 4096, 4096), h100) == tree.configs[0]);
  CHECK(tree.pick(make_gemm(1000, 4096, 4096), h100) == tree.configs[1]);
  // A tree fitted by scikit-learn on the remainders (tests/data/make_tiny_tree_remainders.py: depth 8,
  // splitting on most of the 27 inputs) names, for 420 shapes of both GPUs, the configs scikit-learn's
  // own predict() named; the GPUs' bandwidth and SMs as served_config_tree.py reads them.
  const Mlp fitted = load_mlp(std::string(PIPEWEAVE_SOURCE_DIR) + "/tests/data/tiny_tree_remainders_fp8.json");
  REQUIRE(fitted.description().config_tree != nullptr);
  CHECK(fitted.description().config_tree->input_count == 27);
  std::ifstream picks(std::string(PIPEWEAVE_SOURCE_DIR) + "/tests/data/tiny_tree_remainders_picks.csv");
  std::string line;
  REQUIRE(std::getline(picks, line));  // the header: gpu, m, n, k, then the config's fields
  std::size_t checked = 0;
  while (std::getline(picks, line)) {
    std::vector<std::string> field;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) field.push_back(cell);
    REQUIRE(field.size() == 14);
    GpuSpec gpu = find_gpu(field[0]);
    gpu.dram_bandwidth_gb_s = field[0] == "H100-SXM" ? 3350 : 4800, gpu.sm_count = 132;
    const auto whole = [&](std::size_t i) { return static_cast<std::int64_t>(std::stoll(field[i])); };
    const Gemm gemm = make_gemm(whole(1), whole(2), whole(3), DType::fp8_e4m3);
    const GemmConfig picked = fitted.description().config_tree->pick(gemm, gpu);
    const std::int64_t k_steps = (gemm.k - 1) / whole(6) + 1;  // (the walk cuts a split past them)
    INFO(line);
    CHECK(std::vector<std::int64_t>{picked.tile_m, picked.tile_n, picked.tile_k, picked.split_k, picked.stages, picked.cluster_m,
                                    picked.cluster_n, picked.swap_ab ? 1 : 0} ==
          std::vector<std::int64_t>{whole(4), whole(5), whole(6), std::min(whole(7), k_steps), whole(8), whole(9), whole(10),
                                    whole(11)});
    CHECK(to_string(picked.schedule) == field[12]);
    CHECK(to_string(picked.raster) == field[13]);
    ++checked;
  }
  CHECK(checked == 420);
  // A tree of the first nine inputs alone (model files before the remainders) reads them alone.
  tree.input_count = 9;
  CHECK_THAT(error_of([&] { tree.validate(); }), Contains("config_tree.input[0] must be -1 (a leaf) or the index of one of the tree's inputs (0-8), got 12"));
}

TEST_CASE("Predictor: a config-less model with a tree answers at the tree's config on Hopper, survives JSON", "[predictor][config_tree]") {
  MlpDescription d = constant_model(OpFamily::gemm, 0.4).description();
  d.for_configless_gemm = true;
  d.dtypes = {DType::fp8_e4m3};
  d.config_pick = ConfigPick::cublas_tree;
  d.config_tree = std::make_shared<const GemmConfigTree>(small_config_tree());
  const Mlp with_tree(d);
  const GpuSpec& h100 = find_gpu("H100-SXM");
  const GpuSpec& a100 = find_gpu("A100-SXM");
  Gemm fp8 = make_gemm(1000, 4096, 4096);
  fp8.dtype = DType::fp8_e4m3;
  for (const Predictor& predictor : {Predictor(std::vector<Mlp>{with_tree}), Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), with_tree}),
                                     Predictor(std::vector<Mlp>{mlp_from_json(to_json(with_tree))})}) {
    CHECK(predictor.picks_without_search(fp8));
    Gemm expected = fp8;
    expected.config = small_config_tree().configs[1];
    CHECK(predictor.configured(fp8, h100) == Kernel(expected));
    const Prediction p = predictor.predict(fp8, h100);
    CHECK(p.lower_bound_us == Predictor::analytical().predict(expected, h100).lower_bound_us);
    CHECK(p.efficiency == Approx(0.4).epsilon(1e-6));
    CHECK(p.config_defaulted);
    CHECK(same(predictor.predict(std::vector<Kernel>{fp8}, h100)[0], p));
    Gemm bf16 = fp8;
    bf16.dtype = DType::bf16;  // a type it does not list: not its pick
    CHECK_FALSE(predictor.picks_without_search(bf16));
    // A Hopper GPU that cannot launch the tree's kernel (a cluster of 2 on one SM, or less shared
    // memory than its stages take): the analytical default config.
    GpuSpec one_sm = h100;
    one_sm.sm_count = 1;
    Gemm one_sm_default = fp8;
    one_sm_default.config = default_config(fp8, one_sm);
    CHECK(predictor.configured(fp8, one_sm) == Kernel(one_sm_default));
    GpuSpec small_smem = h100;
    small_smem.smem_bytes_per_sm = 100 * 1024;  // the tree's 160x256x128 at 4 stages takes 213 KB
    Gemm small_smem_default = fp8;
    small_smem_default.config = default_config(fp8, small_smem);
    CHECK(predictor.configured(fp8, small_smem) == Kernel(small_smem_default));
    CHECK_NOTHROW(predictor.predict(fp8, small_smem));
  }
  // An architecture its network did not learn (the bundled fp8 network's domain: sm_90): the
  // default config, as on Blackwell workstation GPUs with a third of the H100's shared memory.
  MlpDescription hopper_only = d;
  hopper_only.trained_compute_capabilities = {90};
  const Predictor learnt_hopper(std::vector<Mlp>{Mlp(hopper_only)});
  const GpuSpec& blackwell = find_gpu("RTX-PRO-6000-Blackwell-Server");
  Gemm on_blackwell = fp8;
  on_blackwell.config = default_config(fp8, blackwell);
  CHECK(learnt_hopper.configured(fp8, blackwell) == Kernel(on_blackwell));
  CHECK_NOTHROW(learnt_hopper.predict(fp8, blackwell));
  CHECK_NOTHROW(Predictor().predict(fp8, blackwell));  // the bundled models
  // The model keeps a tree of its own: one changed after the model was built does not reach it.
  auto shared = std::make_shared<GemmConfigTree>(small_config_tree());
  MlpDescription owned = d;
  owned.config_tree = shared;
  const Mlp owner(owned);
  shared->right[0] = 0;
  CHECK(owner.description().config_tree->right[0] == 2);
  const Predictor bf16_tree(std::vector<Mlp>{[&] {
    MlpDescription b = d;
    b.dtypes = {DType::bf16};
    return Mlp(b);
  }()});
  Gemm bf16 = make_gemm(1000, 4096, 4096);
  Gemm defaulted = bf16;
  defaulted.config = default_config(bf16, a100);
  CHECK(bf16_tree.configured(bf16, a100) == Kernel(defaulted));

  // The file keeps every array and config (each inner node's threshold and right child, each leaf's
  // config, spread back over the nodes); a pick without its tree, or a tree without the pick, is refused.
  const Mlp read = mlp_from_json(to_json(with_tree));
  REQUIRE(read.description().config_tree != nullptr);
  CHECK(read.description().config_tree->input == small_config_tree().input);
  CHECK(read.description().config_tree->threshold == small_config_tree().threshold);
  CHECK(read.description().config_tree->right == small_config_tree().right);
  CHECK(read.description().config_tree->config == small_config_tree().config);
  CHECK(read.description().config_tree->configs == small_config_tree().configs);
  MlpDescription no_tree = d;
  no_tree.config_tree = nullptr;
  CHECK_THAT(error_of([&] { Mlp{no_tree}; }), Contains("mlp.config_tree") && Contains("must be given with config_pick \"cublas_tree\""));
  MlpDescription no_pick = d;
  no_pick.config_pick = ConfigPick::search;
  CHECK_THAT(error_of([&] { Mlp{no_pick}; }), Contains("mlp.config_tree") && Contains("and only with it"));
  MlpDescription bad_tree = d;
  GemmConfigTree cyclic = small_config_tree();
  cyclic.right[0] = 0;
  bad_tree.config_tree = std::make_shared<const GemmConfigTree>(cyclic);
  CHECK_THAT(error_of([&] { Mlp{bad_tree}; }), Contains("mlp.config_tree.right[0] must be a node after the left child"));
  std::string text = to_json(with_tree);
  const std::string inputs = "\"log2_m\"";
  REQUIRE(text.find(inputs) != std::string::npos);
  std::string renamed = text;
  renamed.replace(renamed.find(inputs), inputs.size(), "\"m\"");
  CHECK_THAT(error_of([&] { mlp_from_json(renamed); }), Contains("mlp.config_tree.inputs must list the first of the inputs this build computes"));
  // A file of the first nine inputs (as they were before the remainders) reads, and is written, as it was.
  nlohmann::json nine = nlohmann::json::parse(text);
  nine["config_tree"]["inputs"] = std::vector<std::string>(GemmConfigTree::kInputNames.begin(), GemmConfigTree::kInputNames.begin() + 9);
  const Mlp read_nine = mlp_from_json(nine.dump());
  CHECK(read_nine.description().config_tree->input_count == 9);
  CHECK(nlohmann::json::parse(to_json(read_nine))["config_tree"]["inputs"] == nine["config_tree"]["inputs"]);
  nlohmann::json too_many = nlohmann::json::parse(text);
  too_many["config_tree"]["inputs"].push_back("m_mod_512");
  CHECK_THAT(error_of([&] { mlp_from_json(too_many.dump()); }), Contains("mlp.config_tree.inputs must list the first of the inputs"));
  std::string schedule = text;
  const std::string cooperative = "\"schedule\":\"cooperative\"";
  REQUIRE(schedule.find(cooperative) != std::string::npos);
  schedule.replace(schedule.find(cooperative), cooperative.size(), "\"schedule\":\"eager\"");
  CHECK_THAT(error_of([&] { mlp_from_json(schedule); }), Contains("mlp.config_tree.configs[1].schedule must be ping_pong") && Contains("eager"));
  // The file's own rules: whole numbers, a count of nodes, no more configs than nodes.
  const nlohmann::json document = nlohmann::json::parse(text);
  auto with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json edited = document;
    change(edited["config_tree"]);
    return error_of([&] { mlp_from_json(edited.dump()); });
  };
  CHECK_THAT(with([](nlohmann::json& t) { t.erase("nodes"); }), Contains("mlp.config_tree.nodes is missing"));
  CHECK_THAT(with([](nlohmann::json& t) { t["nodes"] = 6; }), Contains("mlp.config_tree.input_base64 length"));
  CHECK_THAT(with([](nlohmann::json& t) { t["extra"] = 1; }), Contains("mlp.config_tree.extra"));
  // (the per-node layout of before: a threshold for every node, a left child array)
  CHECK_THAT(with([](nlohmann::json& t) { t["left_base64"] = t["right_base64"]; }), Contains("mlp.config_tree.left_base64"));
  CHECK_THAT(with([](nlohmann::json& t) { t["threshold_base64"] = t["input_base64"]; }),
             Contains("mlp.config_tree.threshold_base64 length") && Contains("(2 float32 values, one per inner node"));
  CHECK_THAT(with([](nlohmann::json& t) { t["config_base64"] = t["input_base64"]; }),
             Contains("mlp.config_tree.config_base64 length") && Contains("(3 float32 values, one per leaf"));
  // An input index out of range is named where it stands, before the other arrays are counted by it.
  CHECK_THAT(with([](nlohmann::json& t) { t["input_base64"] = "AAAAAAAAAMAAAAAAAAAAAAAAAAA="; }),  // 0, -2, 0, 0, 0
             Contains("mlp.config_tree.input_base64[1] must be -1 (a leaf) or the index of one of the tree's inputs (0-26), got -2"));
  CHECK_THAT(with([](nlohmann::json& t) { t["input_base64"] = "AAAAAAAAwD8AAAAAAAAAAAAAAAA="; }),  // 0, 1.5, 0, 0, 0
             Contains("mlp.config_tree.input_base64[1] must be a whole number"));
  CHECK_THAT(with([](nlohmann::json& t) {
               for (int i = 0; i < 3; ++i) t["configs"].push_back(t["configs"][0]);
             }),
             Contains("mlp.config_tree.configs entries must be at most one per node, got 6"));
}

TEST_CASE("Predictor: a config-less model with a second view answers the geometric mean of the two where the view applies",
          "[predictor][config_tree]") {
  const GpuSpec& h100 = find_gpu("H100-SXM");
  MlpDescription view_d = constant_model(OpFamily::gemm, 0.25).description();
  view_d.for_configless_gemm = true;
  view_d.dtypes = {DType::fp8_e4m3};
  view_d.config_pick = ConfigPick::cublas_tree;
  view_d.config_tree = std::make_shared<const GemmConfigTree>(small_config_tree());
  view_d.latency_scale = 1.1;
  const Mlp view(view_d);
  MlpDescription model_d = constant_model(OpFamily::gemm, 0.4).description();
  model_d.for_configless_gemm = true;
  model_d.dtypes = {DType::fp8_e4m3};
  model_d.latency_scale = 0.9;
  const Mlp model(model_d);
  MlpDescription both_d = model_d;
  both_d.second_view = std::make_shared<const Mlp>(view);
  const Mlp both(both_d);

  const Predictor alone(std::vector<Mlp>{varying_model(OpFamily::gemm), model});
  const Predictor view_alone(std::vector<Mlp>{view});
  const Predictor mean(std::vector<Mlp>{varying_model(OpFamily::gemm), both});
  const Gemm fp8 = make_gemm(1000, 4096, 4096, DType::fp8_e4m3);
  const Prediction a = alone.predict(fp8, h100), b = view_alone.predict(fp8, h100), p = mean.predict(fp8, h100);
  REQUIRE(a.latency_us != Approx(b.latency_us).epsilon(0.01));  // two answers apart, so that their mean tells
  CHECK(p.latency_us == Approx(std::sqrt(a.latency_us * b.latency_us)).epsilon(1e-12));
  CHECK(p.lower_bound_us == std::min(a.lower_bound_us, b.lower_bound_us));
  CHECK(p.efficiency == Approx(p.lower_bound_us / p.latency_us).epsilon(1e-12));
  CHECK(p.efficiency <= 1.0);
  CHECK(p.bottleneck == a.bottleneck);  // what else it says is the model's, at the search's config
  CHECK(p.tensor_us == a.tensor_us);
  CHECK(p.source == PredictionSource::trained_model);
  CHECK(p.config_defaulted);
  CHECK(mean.configured(fp8, h100) == alone.configured(fp8, h100));
  // Batched as one at a time, among other kernels; the file keeps the view.
  std::vector<Kernel> kernels = mixed_kernels();
  kernels.push_back(fp8);
  kernels.push_back(make_gemm(64, 8192, 1024, DType::fp8_e4m3));
  const std::vector<Prediction> batch = mean.predict(kernels, h100);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    INFO(to_string(kernels[i]));
    CHECK(same(batch[i], mean.predict(kernels[i], h100)));
  }
  const std::string text = to_json(both);
  const Mlp read = mlp_from_json(text);
  REQUIRE(read.description().second_view != nullptr);
  CHECK(to_json(read) == text);
  CHECK(same(Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), read}).predict(fp8, h100), p));

  // Where the view does not apply, the model alone: off Hopper; a GPU that cannot launch the tree's
  // config (a cluster of 2 on one SM); a GEMM with its config; the view outside its network's ground.
  const GpuSpec& l40s = find_gpu("L40S");
  CHECK(same(mean.predict(fp8, l40s), alone.predict(fp8, l40s)));
  GpuSpec one_sm = h100;
  one_sm.sm_count = 1;
  CHECK(same(mean.predict(fp8, one_sm), alone.predict(fp8, one_sm)));
  const Kernel configured = alone.configured(fp8, h100);
  CHECK(same(mean.predict(configured, h100), alone.predict(configured, h100)));
  MlpDescription narrow_view = view_d;
  narrow_view.input_min = narrow_view.input_max = Eigen::VectorXf::Constant(kInputs, -5.0f);  // no kernel's features
  MlpDescription narrow = model_d;
  narrow.second_view = std::make_shared<const Mlp>(narrow_view);
  CHECK(same(Predictor(std::vector<Mlp>{varying_model(OpFamily::gemm), Mlp(narrow)}).predict(fp8, h100), a));
  // A view whose network answers an efficiency of 0 is an error naming the view, single or batched.
  MlpDescription zero_view = view_d;
  zero_view.layers.back().bias(0) = -3e38f;
  MlpDescription broken_view = model_d;
  broken_view.second_view = std::make_shared<const Mlp>(zero_view);
  const Predictor broken(std::vector<Mlp>{varying_model(OpFamily::gemm), Mlp(broken_view)});
  CHECK_THAT(error_of([&] { (void)broken.predict(fp8, h100); }),
             Contains("the gemm model's second view (mlp.second_view) answered an efficiency of 0"));
  CHECK_THAT(error_of([&] { (void)broken.predict(std::vector<Kernel>{fp8, fp8}, h100); }),
             Contains("the gemm model's second view (mlp.second_view) answered an efficiency of 0"));

  // Refused: a view beside a model that picks without a search, a view that reads the search, a view
  // of other data types; in a file, a view that is not an object or that holds a view, with the
  // view's own errors named as inside it.
  MlpDescription tree_model = view_d;
  tree_model.second_view = std::make_shared<const Mlp>(view);
  CHECK_THAT(error_of([&] { Mlp{tree_model}; }), Contains("mlp.second_view") && Contains("read the search's pick"));
  MlpDescription search_view = model_d;
  search_view.second_view = std::make_shared<const Mlp>(model);
  CHECK_THAT(error_of([&] { Mlp{search_view}; }),
             Contains("mlp.second_view.config_pick must be \"cublas_tree\"") && Contains("got \"search\""));
  MlpDescription other_types = view_d;
  other_types.dtypes = {DType::fp8_e4m3, DType::fp8_e5m2};
  MlpDescription mismatched = model_d;
  mismatched.second_view = std::make_shared<const Mlp>(other_types);
  CHECK_THAT(error_of([&] { Mlp{mismatched}; }), Contains("mlp.second_view.dtypes must list the data types the model lists"));
  MlpDescription rested_view = view_d;
  rested_view.protocol = LabelProtocol::rested;
  MlpDescription served_model = model_d;
  served_model.protocol = LabelProtocol::served;
  served_model.second_view = std::make_shared<const Mlp>(rested_view);
  CHECK_THAT(error_of([&] { Mlp{served_model}; }),
             Contains("mlp.second_view.protocol must be the model's, \"served\"") && Contains("got \"rested\""));
  nlohmann::json document = nlohmann::json::parse(text);
  nlohmann::json not_object = document;
  not_object["second_view"] = 3;
  CHECK_THAT(error_of([&] { mlp_from_json(not_object.dump()); }), Contains("mlp.second_view must be an object"));
  nlohmann::json nested = document;
  nested["second_view"]["second_view"] = document["second_view"];
  CHECK_THAT(error_of([&] { mlp_from_json(nested.dump()); }), Contains("mlp.second_view.second_view must be absent"));
  nlohmann::json inner = document;
  inner["second_view"]["config_pick"] = "bogus";
  CHECK_THAT(error_of([&] { mlp_from_json(inner.dump()); }), Contains("in mlp.second_view: ") && Contains("mlp.config_pick") && Contains("bogus"));
}

TEST_CASE("Predictor: outside what its network was trained on, the measured efficiency of the kernel's pipe answers",
          "[predictor][domain]") {
  // A constant 0.6 network trained (say) on Hopper only, with a pipe table: DRAM-bound kernels
  // up to 16 us measured 0.4, beyond 0.8; every other pipe 0.7 (the all-pipes rows).
  MlpDescription d = constant_model(OpFamily::gemm, 0.6).description();
  d.trained_compute_capabilities = {90};
  d.pipe_efficiency[static_cast<std::size_t>(Pipe::dram)] = {{16, 0.4}, {1024, 0.8}};
  d.pipe_efficiency[kPipeCount] = {{1e7, 0.7}};
  const Predictor predictor(std::vector<Mlp>{Mlp(d)});
  const Kernel small = parse_kernel("gemm:m=8,n=4096,k=4096,dtype=bf16,tile_m=16,tile_n=128,tile_k=64,stages=4");
  const Kernel large = parse_kernel("gemm:m=8192,n=8192,k=8192,dtype=bf16,tile_m=128,tile_n=256,tile_k=64");

  // On a Hopper GPU the network answers, as ever.
  const Prediction on_hopper = predictor.predict(small, find_gpu("H100-SXM"));
  CHECK(on_hopper.source == PredictionSource::trained_model);
  CHECK_FALSE(on_hopper.extrapolated);
  CHECK(on_hopper.efficiency == Approx(0.6).epsilon(1e-6));

  // On an Ampere GPU it never saw: the table for the bottleneck and size.
  const GpuSpec& a100 = find_gpu("A100-SXM4-80GB");
  const Prediction decode = predictor.predict(small, a100);
  REQUIRE(decode.bottleneck == Pipe::dram);
  CHECK(decode.extrapolated);
  CHECK(decode.source == PredictionSource::pipe_efficiency);
  CHECK(decode.efficiency == (decode.lower_bound_us <= 16 ? 0.4 : 0.8));
  CHECK(decode.latency_us == Approx(decode.lower_bound_us / decode.efficiency).epsilon(1e-12));
  const Prediction prefill = predictor.predict(large, a100);
  REQUIRE(prefill.bottleneck == Pipe::tensor);  // no tensor rows: the all-pipes row
  CHECK(prefill.efficiency == 0.7);
  // The batch path says the same, kernel by kernel.
  const std::vector<Kernel> both{small, large};
  const std::vector<Prediction> batch = predictor.predict(both, a100);
  CHECK(batch[0].efficiency == decode.efficiency);
  CHECK(batch[1].source == PredictionSource::pipe_efficiency);
  CHECK(batch[1].extrapolated);
  // A GEMM without its config on that GPU: no ranking to trust, the library's default config.
  const Gemm bare = make_gemm(8, 4096, 4096);
  CHECK(predictor.best_gemm_config(bare, a100) == default_config(bare, a100));

  // Inputs beyond the training range are outside too, on a GPU it knows.
  d.input_min = Eigen::VectorXf::Zero(kInputs);
  d.input_max = Eigen::VectorXf::Constant(kInputs, 0.5f);  // log1p of cycles: every real kernel exceeds it
  const Predictor narrow(std::vector<Mlp>{Mlp(d)});
  const Prediction beyond = narrow.predict(small, find_gpu("H100-SXM"));
  CHECK(beyond.extrapolated);
  CHECK(beyond.source == PredictionSource::pipe_efficiency);
  // Without a pipe table the network still answers, and the prediction says it is extrapolating.
  d.pipe_efficiency = {};
  const Prediction no_table = Predictor(std::vector<Mlp>{Mlp(d)}).predict(small, a100);
  CHECK(no_table.extrapolated);
  CHECK(no_table.source == PredictionSource::trained_model);
  CHECK(no_table.efficiency == Approx(0.6).epsilon(1e-6));
}

TEST_CASE("Mlp: the training domain and pipe table are checked and survive a JSON round trip", "[predictor][mlp][domain]") {
  MlpDescription d = constant_model(OpFamily::silu_mul, 0.5).description();
  d.trained_compute_capabilities = {89, 90};
  d.input_min = Eigen::VectorXf::Constant(kInputs, -1.0f);
  d.input_max = Eigen::VectorXf::Constant(kInputs, 3.5f);
  d.pipe_efficiency[static_cast<std::size_t>(Pipe::dram)] = {{2, 0.25}, {64, 0.75}};
  d.pipe_efficiency[kPipeCount] = {{64, 0.5}};
  const Mlp model(d);
  const Mlp back = mlp_from_json(to_json(model));
  CHECK(back.description().trained_compute_capabilities == d.trained_compute_capabilities);
  CHECK(back.description().input_min == d.input_min);
  CHECK(back.description().input_max == d.input_max);
  CHECK(back.description().pipe_efficiency == d.pipe_efficiency);
  CHECK(back.covers_compute_capability(89));
  CHECK_FALSE(back.covers_compute_capability(80));
  CHECK(back.pipe_efficiency(Pipe::dram, 1) == 0.25);
  CHECK(back.pipe_efficiency(Pipe::dram, 3) == 0.75);
  CHECK(back.pipe_efficiency(Pipe::dram, 1e6) == 0.75);  // beyond the last row: the last
  CHECK(back.pipe_efficiency(Pipe::xu, 1) == 0.5);       // a pipe without rows: all pipes'

  MlpDescription bad = d;
  bad.pipe_efficiency[0] = {{4, 0.5}, {2, 0.5}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.pipe_efficiency.tensor[1]") && Contains("ascending"));
  bad = d;
  bad.pipe_efficiency[0] = {{4, 1.5}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.pipe_efficiency.tensor[0]") && Contains("[1e-6, 1]"));
  // An efficiency of 5e-324 made the latency infinite (exit 0, latency null in JSON)
  bad.pipe_efficiency[0] = {{4, 5e-324}};
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.pipe_efficiency.tensor[0]") && Contains("[1e-6, 1], got 5e-324"));
  bad.pipe_efficiency[0] = {{4, 1e-6}};
  CHECK_NOTHROW(Mlp{bad});
  bad = d;
  bad.input_min(3) = 9;
  CHECK_THAT(error_of([&] { Mlp{bad}; }), Contains("mlp.domain.input_min[3]"));
  std::string text = to_json(model);
  text.replace(text.find("\"compute_capabilities\":[89,90]"), 30, "\"compute_capabilities\":[\"9.0\"]");
  CHECK_THAT(error_of([&] { mlp_from_json(text); }), Contains("mlp.domain.compute_capabilities"));
}

TEST_CASE("Predictor: a model that answers no finite, positive efficiency is an error, not the bound", "[predictor]") {
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const Kernel kernel(make_gemm(4096, 4096, 4096));
  // An output bias of -3e38 underflows the sigmoid to 0 (the latency would be infinite)...
  MlpDescription zero = constant_model(OpFamily::gemm, 0.5).description();
  zero.layers.back().bias(0) = -3e38f;
  const Predictor underflow(std::vector<Mlp>{Mlp(zero)});
  CHECK_THAT(error_of([&] { (void)underflow.predict(kernel, gpu); }),
             Contains("the gemm model answered an efficiency of 0") && Contains("broken"));
  // ... and weights of 3e38 make the hidden layer infinite and the output NaN (it used to be
  // read as efficiency 1: the bound, sourced trained_model), in single calls and in batches.
  MlpDescription nan = varying_model(OpFamily::gemm).description();
  nan.layers.front().weights.setConstant(3e38f);
  nan.layers.back().weights << 3e38f, -3e38f, 3e38f, -3e38f;
  const Predictor broken(std::vector<Mlp>{Mlp(nan)});
  CHECK_THAT(error_of([&] { (void)broken.predict(kernel, gpu); }), Contains("the gemm model answered an efficiency of"));
  const std::vector<Kernel> batch{kernel, kernel};
  CHECK_THAT(error_of([&] { (void)broken.predict(batch, gpu); }), Contains("the gemm model answered an efficiency of"));
  // An efficiency of some 1e-197 (an output bias of -450: the sigmoid's tail) is no kernel's either:
  // it made a latency of 10^198 us, sourced trained_model.
  MlpDescription tiny = constant_model(OpFamily::gemm, 0.5).description();
  tiny.layers.back().bias(0) = -450.0f;
  const Predictor vanishing(std::vector<Mlp>{Mlp(tiny)});
  CHECK_THAT(error_of([&] { (void)vanishing.predict(kernel, gpu); }),
             Contains("answered an efficiency of") && Contains("e-") && Contains("at least 1e-6"));
  // One a million times slower than its floor still answers (efficiency 2e-6: bias -13.1)
  tiny.layers.back().bias(0) = -13.1f;
  const Predictor slow(std::vector<Mlp>{Mlp(tiny)});
  CHECK(std::isfinite(slow.predict(kernel, gpu).latency_us));
  // The factor for GEMMs without a config is a correction, as latency_scale: 1e308 made latencies inf
  MlpDescription scaled = constant_model(OpFamily::gemm, 0.5).description();
  scaled.configless_scale = {{DType::int8, 1e308}};
  CHECK_THAT(error_of([&] { Mlp{scaled}; }), Contains("mlp.configless_scale.int8") && Contains("must be within 0.5-2"));
}

TEST_CASE("Predictor: best_gemm_config, scoring candidates in order of bound and stopping where none can win, picks "
          "what scoring every candidate picks",
          "[predictor][rank]") {
  const Predictor predictor;
  const Mlp& network = *predictor.model(OpFamily::gemm);
  std::size_t shapes = 0;
  for (const char* gpu_name : {"H100-SXM", "H200-SXM", "H20"})  // Hopper: the network picks (elsewhere the default config)
    for (DType dtype : {DType::bf16, DType::fp8_e4m3})
      for (std::int64_t m : {1, 16, 100, 1000, 4096, 30000})
        for (const auto& [n, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{{4096, 4096}, {14336, 4096}, {1024, 8192}}) {
          const GpuSpec& gpu = find_gpu(gpu_name);
          if (dtype == DType::fp8_e4m3 && !(gpu.tensor_flops_per_clk_per_sm.fp8 > 0)) continue;
          Gemm gemm = make_gemm(m, n, k, dtype);
          const std::vector<GemmConfig> candidates = gemm_candidates(gemm, gpu);
          if (candidates.empty()) continue;
          std::size_t best = 0;
          double best_latency = std::numeric_limits<double>::infinity();
          for (std::size_t i = 0; i < candidates.size(); ++i) {
            Gemm tuned = gemm;
            tuned.config = candidates[i];
            const Demand d = demand(tuned, gpu);
            const double latency = d.bound_cycles() / network.efficiency(features(d, gpu));
            if (latency < best_latency) best = i, best_latency = latency;
          }
          INFO(gpu_name << " " << to_string(dtype) << " m " << m << " n " << n << " k " << k);
          CHECK(predictor.full_search_gemm_config(gemm, gpu) == candidates[best]);
          if (m <= Predictor::kConfigGridM || m % Predictor::kConfigGridM == 0)
            CHECK(predictor.best_gemm_config(gemm, gpu) == candidates[best]);
          ++shapes;
        }
  CHECK(shapes > 60);
}

TEST_CASE("Predictor: best_gemm_config between its grid points picks from their shortlists, whatever was asked before",
          "[predictor][rank]") {
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const Predictor bundled;
  const Mlp& network = *bundled.model(OpFamily::gemm);
  auto latency = [&](const Gemm& shape, const GemmConfig& config) {
    Gemm tuned = shape;
    tuned.config = config;
    const Demand d = demand(tuned, gpu);
    return d.bound_cycles() / network.efficiency(features(d, gpu));
  };
  for (const auto& [n, k, dtype] : std::vector<std::tuple<std::int64_t, std::int64_t, DType>>{
           {4096, 4096, DType::bf16}, {14336, 4096, DType::fp8_e4m3}, {1536, 2048, DType::bf16}})
    for (std::int64_t m : {17, 100, 1001, 4099, 30001}) {
      const Gemm shape = make_gemm(m, n, k, dtype);
      INFO(to_string(dtype) << " m " << m << " n " << n << " k " << k);
      REQUIRE(m % Predictor::kConfigGridM != 0);
      // Asked first, and asked after its grid points and neighbours: the same answer.
      const Predictor fresh = bundled.with({}), warmed = bundled.with({});
      const GemmConfig answer = fresh.best_gemm_config(shape, gpu);
      for (std::int64_t near : {m / 16 * 16, m / 16 * 16 + 16, m - 1, m + 1})
        (void)warmed.best_gemm_config(make_gemm(near, n, k, dtype), gpu);
      CHECK(warmed.best_gemm_config(shape, gpu) == answer);
      // The best at m, by hand, of the kConfigShortlist best of each grid point either side (the
      // one below's first), as far as they are candidates at m.
      const std::vector<GemmConfig> candidates = gemm_candidates(shape, gpu);
      std::vector<GemmConfig> proposed;
      for (std::int64_t point : {m / Predictor::kConfigGridM * Predictor::kConfigGridM, (m / Predictor::kConfigGridM + 1) * Predictor::kConfigGridM}) {
        const Gemm grid_point = make_gemm(point, n, k, dtype);
        const std::vector<GemmConfig> there = gemm_candidates(grid_point, gpu);
        std::vector<std::pair<double, std::size_t>> scored;
        for (std::size_t i = 0; i < there.size(); ++i) scored.emplace_back(latency(grid_point, there[i]), i);
        std::sort(scored.begin(), scored.end());
        for (std::size_t j = 0; j < std::min(Predictor::kConfigShortlist, scored.size()); ++j) {
          const GemmConfig& config = there[scored[j].second];
          if (std::find(proposed.begin(), proposed.end(), config) == proposed.end() &&
              std::find(candidates.begin(), candidates.end(), config) != candidates.end())
            proposed.push_back(config);
        }
      }
      REQUIRE(!proposed.empty());
      const GemmConfig* expected = &proposed.front();
      for (const GemmConfig& config : proposed)
        if (latency(shape, config) < latency(shape, *expected)) expected = &config;
      CHECK(answer == *expected);
      // Within 1% of the full search's predicted latency (on the H100 the study over 65,536
      // shapes found at most 0.69%).
      CHECK(latency(shape, answer) <= 1.01 * latency(shape, fresh.full_search_gemm_config(shape, gpu)));
    }
}

TEST_CASE("Predictor: eight threads filling the config memo at once (predict without a config, batches, rank, copies) "
          "answer as one thread does",
          "[predictor][thread]") {
  // Run under ThreadSanitizer by tests/run.sh. Every thread starts on the same empty memo and
  // asks for the same new shapes in a different order, so that threads race to fill each entry.
  const Predictor reference = Predictor().with({});
  const Predictor shared = Predictor().with({});
  const GpuSpec& h100 = find_gpu("H100-SXM");
  std::vector<Kernel> kernels;
  for (std::int64_t m : {1, 7, 64, 333, 1024, 5000})
    for (DType dtype : {DType::bf16, DType::fp8_e4m3, DType::fp16}) kernels.push_back(make_gemm(m, 4096, 1024 + 512 * (m % 3), dtype));
  kernels.push_back(mixed_kernels().front());
  std::vector<Prediction> expected;
  for (const Kernel& kernel : kernels) expected.push_back(reference.predict(kernel, h100));
  std::vector<Kernel> candidates;
  for (const GemmConfig& config : gemm_candidates(make_gemm(512, 4096, 4096), h100)) {
    Gemm gemm = make_gemm(512, 4096, 4096);
    gemm.config = config;
    candidates.push_back(gemm);
    if (candidates.size() == 24) break;
  }
  const std::vector<RankedCandidate> expected_rank = reference.rank(candidates, h100);

  constexpr int kThreads = 8;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const Predictor copy = shared;  // copies share the memo
      for (std::size_t n = 0; n < kernels.size(); ++n) {
        const std::size_t i = (n * 5 + static_cast<std::size_t>(t)) % kernels.size();
        if (!same((t % 2 ? copy : shared).predict(kernels[i], h100), expected[i])) ++mismatches[t];
      }
      const std::vector<Prediction> batch = shared.predict(kernels, h100);
      for (std::size_t i = 0; i < kernels.size(); ++i)
        if (!same(batch[i], expected[i])) ++mismatches[t];
      const std::vector<RankedCandidate> ranked = copy.rank(candidates, h100);
      for (std::size_t i = 0; i < ranked.size(); ++i)
        if (ranked[i].index != expected_rank[i].index || !same(ranked[i].prediction, expected_rank[i].prediction)) ++mismatches[t];
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(mismatches[t] == 0);
  }
}

TEST_CASE("predictor: a 16-bit GEMM whose strides TMA cannot take runs at the pre-Hopper kernels' measured rates", "[predictor]") {
  // F.linear's strides: k (x, W) in the input type, n (y) in the output type (bf16 for fp8, int32 for int8).
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 49155, .k = 4096}) == 2);  // Granite-3.1-8B's vocab
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 24578, .k = 4096}) == 4);
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 4100, .k = 4096}) == 8);
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 49152, .k = 4096}) == 16);
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 4096, .k = 4097}) == 2);
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 4104, .k = 4096, .dtype = DType::fp8_e4m3}) == 16);
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 4096, .k = 4104, .dtype = DType::fp8_e4m3}) == 8);
  CHECK(gemm_stride_alignment_bytes(Gemm{.m = 8, .n = 4097, .k = 4096, .dtype = DType::int8}) == 4);

  const Predictor predictor;  // the bundled models
  const GpuSpec& h100 = find_gpu("H100-SXM");
  const Gemm odd{.m = 10, .n = 49155, .k = 4096};
  const Prediction p = predictor.predict(odd, h100);
  CHECK(p.source == PredictionSource::misaligned_strides);
  CHECK(to_string(p.source) == "misaligned_strides");
  CHECK(p.latency_us == Approx(*misaligned_gemm_us(odd, h100)).epsilon(1e-12));
  CHECK(p.latency_us >= p.lower_bound_us);
  CHECK(p.efficiency == Approx(p.lower_bound_us / p.latency_us));
  // The fresh H100 draw (seed 4, fitted on by nothing) measured this shape at 519.5 us, cuBLAS's
  // cutlass_75 kernel; the aligned width takes a quarter of that.
  CHECK(p.latency_us == Approx(519.5).epsilon(0.05));
  CHECK(predictor.predict(Gemm{.m = 10, .n = 49152, .k = 4096}, h100).latency_us < p.latency_us / 3);
  // Long GEMMs: the work at the kernel's rate, not the bytes.
  const Gemm long_odd{.m = 5104, .n = 49155, .k = 4096};
  CHECK(*misaligned_gemm_us(long_odd, h100) ==
        Approx(2.0 * 5104 * 49155 * 4096 / (kMisalignedGemmRates[0].tensor_share * h100.tensor_flops_per_clk_per_sm.fp16_bf16) /
               (132 * h100.sm_clock_mhz)));
  // The fewest rows run cuBLAS's GEMV-style kernels, as fast as aligned ones: the network answers.
  CHECK_FALSE(misaligned_gemm_us(Gemm{.m = 9, .n = 49155, .k = 4096}, h100));
  CHECK(misaligned_gemm_us(Gemm{.m = 2, .n = 24578, .k = 4096}, h100));
  CHECK_FALSE(misaligned_gemm_us(Gemm{.m = 1, .n = 24578, .k = 4096}, h100));
  CHECK(predictor.predict(Gemm{.m = 1, .n = 49155, .k = 4096}, h100).source == PredictionSource::trained_model);
  // Batched as one at a time.
  const std::vector<Kernel> batch{odd, Gemm{.m = 10, .n = 49152, .k = 4096}, long_odd};
  const std::vector<Prediction> batched = predictor.predict(batch, h100);
  for (std::size_t i = 0; i < batch.size(); ++i) CHECK(batched[i].latency_us == predictor.predict(batch[i], h100).latency_us);
  CHECK(batched[1].source == PredictionSource::trained_model);
  // Not for a config given, another architecture, another data type, or the bound alone.
  CHECK_FALSE(misaligned_gemm_us(Gemm{.m = 10, .n = 49155, .k = 4096, .config = GemmConfig{.tile_m = 64, .tile_n = 128, .tile_k = 64}}, h100));
  CHECK_FALSE(misaligned_gemm_us(odd, find_gpu("A100-SXM4-80GB")));
  CHECK_FALSE(misaligned_gemm_us(Gemm{.m = 10, .n = 4097, .k = 4096, .dtype = DType::int8}, h100));
  CHECK(predictor.predict(odd, find_gpu("A100-SXM4-80GB")).source != PredictionSource::misaligned_strides);
  CHECK(Predictor::analytical().predict(odd, h100).source == PredictionSource::analytical_bound);
}
