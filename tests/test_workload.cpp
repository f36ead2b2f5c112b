// Workloads: continuous batching worked out by hand, the operators of a layer per GPU under
// tensor parallelism, the JSON layout both ways, config.json and trace reading, and the sum
// that predict_workload makes of its kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/predictor.hpp"
#include "pipeweave/workload.hpp"
#include "test_support.hpp"

using namespace pipeweave;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using pipeweave_test::error_of;

namespace {

const std::string kData = PIPEWEAVE_TEST_DATA_DIR;

ModelParams llama_8b() { return load_hf_config(kData + "/models/Llama-3.1-8B/config.json"); }

// Three requests: prompts of 600, 100 and 2000 tokens, then 3, 5 and 2 decode steps.
std::vector<TraceRequest> small_trace() { return load_trace(kData + "/trace_small.csv"); }

using Lengths = std::vector<std::int64_t>;

// The small trace scheduled with chunked prefill into 1024-token iterations (see the first test).
Workload small_workload(Deployment deployment) {
  SchedulerPolicy policy;
  policy.max_batched_tokens = 1024;
  return generate_workload("llama", llama_8b(), small_trace(), deployment, policy);
}

const WorkloadGemm& gemm_named(const WorkloadIteration& iteration, const std::string& name) {
  const auto& list = iteration.operators.gemm;
  const auto found = std::find_if(list.begin(), list.end(), [&](const WorkloadGemm& g) { return g.name == name; });
  REQUIRE(found != list.end());
  return *found;
}

}  // namespace

TEST_CASE("workload: a config.json and a trace are read with their fields named", "[workload]") {
  const ModelParams p = llama_8b();
  CHECK(p.hidden_size == 4096);
  CHECK(p.num_attention_heads == 32);
  CHECK(p.num_key_value_heads == 8);
  CHECK(p.head_dim == 128);  // hidden / heads: the config gives no head_dim
  CHECK(p.intermediate_size == 14336);
  CHECK(p.vocab_size == 128256);
  CHECK(p.num_hidden_layers == 32);
  CHECK(p.num_experts == 0);

  const ModelParams mixtral = load_hf_config(kData + "/models/Mixtral-8x7B/config.json");
  CHECK(mixtral.num_experts == 8);
  CHECK(mixtral.num_experts_per_tok == 2);
  CHECK(mixtral.moe_intermediate_size == 14336);
  // Two counts of experts that disagree: which one the model has is not for the reader to guess.
  CHECK_THAT(error_of([] {
               model_params_from_hf_config(R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,
                 "vocab_size": 32000, "num_hidden_layers": 32, "num_local_experts": 8, "num_experts": 16,
                 "num_experts_per_tok": 2})");
             }),
             Contains("config.json: num_experts must agree with num_local_experts (8) where both are given, got 16"));
  CHECK(model_params_from_hf_config(R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,
          "vocab_size": 32000, "num_hidden_layers": 32, "num_local_experts": 8, "num_experts": 8,
          "num_experts_per_tok": 2})")
            .num_experts == 8);
  // A null or 0 num_experts beside num_local_experts says "not given", as it does alone.
  for (const char* other : {"null", "0"})
    CHECK(model_params_from_hf_config(std::string(R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,
            "vocab_size": 32000, "num_hidden_layers": 32, "num_local_experts": 8, "num_experts_per_tok": 2, "num_experts": )") +
                                      other + "}")
              .num_experts == 8);

  CHECK_THAT(error_of([] { model_params_from_hf_config(R"({"model_type": "deepseek_v3", "kv_lora_rank": 512})"); }),
             Contains("multi-head latent attention"));
  CHECK_THAT(error_of([] { model_params_from_hf_config(R"({"num_attention_heads": 32})"); }),
             Contains("config.json: hidden_size is missing"));
  CHECK_THAT(error_of([] {
               model_params_from_hf_config(R"({"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 5,
                 "intermediate_size": 1, "vocab_size": 1, "num_hidden_layers": 1})");
             }),
             Contains("num_key_value_heads") && Contains("must divide num_attention_heads (32)"));
  // hidden_size 4097 over 32 heads would truncate head_dim; sizes past any model would overflow
  // the products a workload forms (vocab_size 2^63 - 1, layers or widths 2^62).
  CHECK_THAT(error_of([] {
               model_params_from_hf_config(R"({"hidden_size": 4097, "num_attention_heads": 32, "intermediate_size": 1,
                 "vocab_size": 1, "num_hidden_layers": 1})");
             }),
             Contains("config.json: hidden_size must be a multiple of num_attention_heads (32)") && Contains("4097"));
  for (const auto& [field, value] : std::vector<std::pair<std::string, std::string>>{
           {"vocab_size", "9223372036854775807"}, {"num_hidden_layers", "4611686018427387904"},
           {"intermediate_size", "4611686018427387904"}, {"hidden_size", "4611686018427387904"}}) {
    std::string config = R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 1, "vocab_size": 1, "num_hidden_layers": 1})";
    const std::string key = "\"" + field + "\": ";
    const std::size_t at = config.find(key) + key.size();
    config.replace(at, config.find_first_of(",}", at) - at, value);
    INFO(config);
    CHECK_THAT(error_of([&] { model_params_from_hf_config(config); }), Contains("model_params." + field + " must be at most"));
  }

  const std::vector<TraceRequest> trace = small_trace();
  REQUIRE(trace.size() == 3);
  CHECK(trace[2].prefill_tokens == 2000);
  CHECK(trace[1].decode_tokens == 5);
  CHECK(trace[1].output_tokens == 6);
  CHECK_THAT(error_of([] { trace_from_csv("num_prefill_tokens,output_tokens\n5,1\n"); }),
             Contains("no column num_decode_tokens"));
  // A spreadsheet's byte-order mark is no part of the first column's name; a column named twice
  // is refused, not read from whichever copy.
  CHECK(trace_from_csv("\xEF\xBB\xBFnum_prefill_tokens,num_decode_tokens,output_tokens\n5,1,2\n").front().prefill_tokens == 5);
  // (empty names, a spreadsheet's trailing columns, are no column: they may repeat)
  CHECK(trace_from_csv("num_prefill_tokens,num_decode_tokens,output_tokens,,\n5,1,2,,\n").front().prefill_tokens == 5);
  CHECK_THAT(error_of([] { trace_from_csv("num_prefill_tokens,num_decode_tokens,num_prefill_tokens,output_tokens\n5,1,6,2\n", "t.csv"); }),
             Contains("t.csv:1: the header names the column \"num_prefill_tokens\" twice"));
  CHECK_THAT(error_of([] { trace_from_csv("num_prefill_tokens,num_decode_tokens,output_tokens\n5,1,2\n7,-1,0\n", "t.csv"); }),
             Contains("t.csv line 3 column num_decode_tokens") && Contains("\"-1\""));
  // A cell's number is the whole cell, as in kernel strings: no leading space, no plus sign.
  for (const char* cell : {" 5", "+5", "5 ", "0x5"}) {
    INFO(cell);
    CHECK_THAT(error_of([&] { trace_from_csv(std::string("num_prefill_tokens,num_decode_tokens,output_tokens\n") + cell + ",1,2\n", "t.csv"); }),
               Contains("t.csv line 2 column num_prefill_tokens must be an integer from 1 to 16777216, got \"" + std::string(cell) + "\""));
  }
  CHECK_THAT(error_of([] { trace_from_csv("num_prefill_tokens,num_decode_tokens,output_tokens\n0,1,2\n"); }),
             Contains("num_prefill_tokens") && Contains("must be an integer from 1 to 16777216"));
  // A request of a billion decode steps would be a billion iterations: refused as read.
  CHECK_THAT(error_of([] { trace_from_csv("num_prefill_tokens,num_decode_tokens,output_tokens\n5,1000000000,2\n"); }),
             Contains("line 2 column num_decode_tokens must be an integer from 0 to 16777216, got \"1000000000\""));
  // A request at the bound: its output is its decode steps and the prefill's token, one more.
  CHECK(trace_from_csv("num_prefill_tokens,num_decode_tokens,output_tokens\n16777216,16777216,16777217\n").front().output_tokens ==
        kMaxRequestTokens + 1);
  CHECK_THAT(error_of([] { trace_from_csv("num_prefill_tokens,num_decode_tokens,output_tokens\n16777217,1,2\n"); }),
             Contains("num_prefill_tokens") && Contains("16777217"));
}

TEST_CASE("workload: a deployment's GPUs, TP times PP, are bounded as each degree is", "[workload]") {
  ModelParams wide = llama_8b();
  wide.num_attention_heads = wide.num_key_value_heads = 256, wide.head_dim = 128, wide.hidden_size = 32768;
  wide.intermediate_size = 65536, wide.num_hidden_layers = 512, wide.vocab_size = 131072;
  const std::vector<TraceRequest> one{{16, 1, 2}};
  CHECK_NOTHROW(generate_workload("wide", wide, one, Deployment{.tp = 256, .pp = 256}, SchedulerPolicy{}));
  CHECK_THAT(error_of([&] { generate_workload("wide", wide, one, Deployment{.tp = 256, .pp = 512}, SchedulerPolicy{}); }),
             Contains("pp times tp (256) must be at most 65536 GPUs") && Contains("got 512"));
  // A workload file's too (its own sizes were bounded one at a time)
  nlohmann::json document = nlohmann::json::parse(to_json(generate_workload("wide", wide, one, Deployment{.tp = 256, .pp = 256}, SchedulerPolicy{})));
  document["pp_size"] = 512;
  CHECK_THAT(error_of([&] { (void)workload_from_json(document.dump()); }), Contains("pp_size times tp_size (256) must be at most 65536 GPUs"));
}

TEST_CASE("workload: a request past the model's context is refused by name; the context is vLLM's max_model_len from config.json",
          "[workload]") {
  const ModelParams llama = llama_8b();
  CHECK(llama.max_model_len == 131072);
  // A token past the context is refused before any iteration is built; at it, the request runs
  const std::vector<TraceRequest> past{{16, 3, 4}, {1000, 130073, 130074}};
  CHECK_THAT(error_of([&] { generate_workload("llama", llama, past, Deployment{.tp = 1}, SchedulerPolicy{}); }),
             Contains("trace[1].num_decode_tokens must be at most 130072: the model's context is 131072 tokens (max_model_len, "
                      "from config.json) and request 2's prompt 1000; no engine runs a longer request, got 130073"));
  // A prompt past it alone is the prompt's fault
  CHECK_THAT(error_of([&] { generate_workload("llama", llama, std::vector<TraceRequest>{{200000, 0, 1}}, Deployment{.tp = 1}, SchedulerPolicy{}); }),
             Contains("trace[0].num_prefill_tokens must be at most the model's context, 131072 tokens (max_model_len, from "
                      "config.json; request 1 of the trace): no engine runs a longer prompt, got 200000"));
  ModelParams short_context = llama;
  short_context.max_model_len = 200;
  CHECK(generate_workload("llama", short_context, std::vector<TraceRequest>{{100, 100, 101}}, Deployment{.tp = 1}, SchedulerPolicy{})
            .iterations.size() == 101);
  CHECK_THROWS_AS(generate_workload("llama", short_context, std::vector<TraceRequest>{{100, 101, 102}}, Deployment{.tp = 1},
                                    SchedulerPolicy{}),
                  InvalidInput);
  // config.json: a linear, dynamic or YaRN factor above 1 multiplies max_position_embeddings (YaRN's
  // over its original_max_position_embeddings); Llama 3's and LongRoPE's do not (their positions
  // hold it); absent or null, no bound
  const auto context = [](const std::string& extra) {
    return model_params_from_hf_config(R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,
      "vocab_size": 128256, "num_hidden_layers": 32)" + extra + "}").max_model_len;
  };
  CHECK(context("") == 0);
  CHECK(context(R"(, "max_position_embeddings": null)") == 0);
  CHECK(context(R"(, "max_position_embeddings": 32768)") == 32768);
  CHECK(context(R"(, "max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0})") == 131072);
  CHECK(context(R"(, "max_position_embeddings": 40960, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
      "original_max_position_embeddings": 32768})") == 131072);
  CHECK(context(R"(, "max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 2.0})") == 8192);
  CHECK(context(R"(, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "original_max_position_embeddings": 8192})") == 131072);
  CHECK(context(R"(, "max_position_embeddings": 131072, "rope_scaling": {"type": "longrope", "factor": 32.0})") == 131072);
  CHECK(context(R"(, "max_position_embeddings": 32768, "rope_scaling": {"rope_type": "linear", "factor": 0.5})") == 32768);
  CHECK(context(R"(, "max_position_embeddings": 32768, "rope_scaling": null)") == 32768);
  CHECK_THAT(error_of([&] { context(R"(, "max_position_embeddings": 32768, "rope_scaling": {"factor": -2})"); }),
             Contains("config.json: rope_scaling.factor must be within (0, 1024]"));
  CHECK_THAT(error_of([&] { context(R"(, "max_position_embeddings": 4611686018427387904, "rope_scaling": {"factor": 1000})"); }),
             Contains("config.json: max_position_embeddings must make a context of at most 2^40"));
  CHECK_THAT(error_of([&] { context(R"(, "max_position_embeddings": 0)"); }), Contains("max_position_embeddings"));
  // YaRN over its original positions where max_position_embeddings is null; a factor out of range
  // is refused for every type (read, if not applied); the field at fault named; no other shape
  CHECK(context(R"(, "max_position_embeddings": null, "rope_scaling": {"rope_type": "yarn", "factor": 4,
      "original_max_position_embeddings": 8192})") == 32768);
  CHECK_THAT(error_of([&] { context(R"(, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 0})"); }),
             Contains("config.json: rope_scaling.factor must be within (0, 1024]"));
  CHECK_THAT(error_of([&] {
               context(R"(, "max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4,
                 "original_max_position_embeddings": 4611686018427387904})");
             }),
             Contains("config.json: rope_scaling.original_max_position_embeddings must make a context of at most 2^40"));
  for (const char* shape : {R"("x")", "[]", "1.5"})
    CHECK_THAT(error_of([&] { context(std::string(R"(, "max_position_embeddings": 32768, "rope_scaling": )") + shape); }),
               Contains("config.json: rope_scaling must be an object or null, got " + std::string(shape)));
  // Written into a workload and read back
  Workload w = generate_workload("llama", llama, std::vector<TraceRequest>{{100, 2, 3}}, Deployment{.tp = 1}, SchedulerPolicy{});
  std::ostringstream text;
  write_json(text, w);
  CHECK(text.str().find("\"max_model_len\": 131072") != std::string::npos);
  CHECK(workload_from_json(text.str()).model_params == llama);
  // A workload's sequences within it (its KV lengths, 100, 101 and 102 tokens here): past it, refused by name
  std::string shorter = text.str();
  const std::string stated = "\"max_model_len\": 131072";
  shorter.replace(shorter.find(stated), stated.size(), "\"max_model_len\": 101");
  CHECK_THAT(error_of([&] { (void)workload_from_json(shorter); }),
             Contains("iterations[2].kv_lengths[0] must be at most model_params.max_model_len (101), got 102"));
  w.model_params.max_model_len = 101;
  CHECK_THAT(error_of([&] { (void)predict_workload(Predictor::analytical(), w, find_gpu("H100-SXM")); }),
             Contains("iterations[2].kv_lengths[0] must be at most model_params.max_model_len (101), got 102"));
  w.model_params.max_model_len = 102;
  CHECK(predict_workload(Predictor::analytical(), w, find_gpu("H100-SXM")).iterations.size() == 3);
}

TEST_CASE("workload: a trace that would make more iterations than a workload holds is refused before any is built",
          "[workload]") {
  // Within the per-request bound, a request of 2^24 decode steps still makes 2^24 iterations (of a
  // model whose context is not stated: Llama-3.1-8B's 131,072 tokens would refuse the request itself).
  ModelParams unbounded = llama_8b();
  unbounded.max_model_len = 0;
  const std::vector<TraceRequest> long_decode{{100, 5, 6}, {100, kMaxRequestTokens, 1}};
  CHECK_THAT(error_of([&] { generate_workload("llama", unbounded, long_decode, Deployment{.tp = 1}, SchedulerPolicy{}); }),
             Contains("the trace makes a workload of at least 16777217 iterations, more than the 1000000 one workload holds: run it in parts"));
  // Given directly (not read from a CSV), a request's counts are checked by name too.
  const std::vector<TraceRequest> negative{{100, 5, 6}, {100, -3, 1}};
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), negative, Deployment{.tp = 1}, SchedulerPolicy{}); }),
             Contains("trace[1].num_decode_tokens must be from 0 to 16777216, got -3"));
  // Many requests, each within the cap, whose decode steps together pass it one sequence at a time.
  SchedulerPolicy one_at_a_time;
  one_at_a_time.max_sequences = 1;
  const std::vector<TraceRequest> many(3, TraceRequest{16, 400'000, 1});
  CHECK_THAT(error_of([&] { generate_workload("llama", unbounded, many, Deployment{.tp = 1}, one_at_a_time); }),
             Contains("the trace makes a workload of at least 1200003 iterations"));
  // The policy's own bounds: an iteration's tokens are a GEMM's M (2^31 was refused as
  // iterations[0].operators.gemm[0].M, a field the user never wrote)
  SchedulerPolicy huge;
  huge.max_batched_tokens = (std::int64_t{1} << 30) + 1;
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), many, Deployment{.tp = 1}, huge); }),
             Contains("scheduler.max_batched_tokens must be at most 1073741824"));
  huge = SchedulerPolicy{};
  huge.max_sequences = (1 << 20) + 1;
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), many, Deployment{.tp = 1}, huge); }),
             Contains("scheduler.max_sequences must be at most 1048576"));
  // Each request's prompt holds a sequence's place too: 1,000 requests of one prompt token and
  // 1,000 decode steps are 1,001,000 iterations one at a time (scheduled for 3 s, then refused);
  // ten of them run, in 10,010 iterations.
  const std::vector<TraceRequest> at_cap(10, TraceRequest{1, 1000, 1001});
  CHECK(generate_workload("llama", llama_8b(), at_cap, Deployment{.tp = 1}, one_at_a_time).iterations.size() == 10010);
  const std::vector<TraceRequest> past_cap(1000, TraceRequest{1, 1000, 1001});
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), past_cap, Deployment{.tp = 1}, one_at_a_time); }),
             Contains("the trace makes a workload of at least 1001000 iterations"));
  // Tokens: 300 prompts of 16,384 tokens and a decode step each, 4,915,500 tokens at 4 an iteration.
  SchedulerPolicy small_budget;
  small_budget.max_batched_tokens = 4;
  const std::vector<TraceRequest> long_prompts(300, TraceRequest{16384, 1, 2});
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), long_prompts, Deployment{.tp = 1}, small_budget); }),
             Contains("the trace makes a workload of at least 1228875 iterations"));
}

TEST_CASE("workload: chunked prefill decodes first, then fills the token budget with prompt chunks", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 1});
  // Iteration 0: prompts 600 and 100, and the first 324 tokens of the 2000-token prompt.
  // 1: the two finished prompts decode (kv 601, 101), the long prompt goes on: 1022 more (to 1346).
  // 2: decodes (602, 102), the last 654 prompt tokens (to 2000).
  // 3-5: decodes until each request has taken its 3, 5 and 2 steps.
  const std::vector<std::pair<Lengths, Lengths>> expected{
      {{600, 100, 324}, {600, 100, 324}}, {{1, 1, 1022}, {601, 101, 1346}}, {{1, 1, 654}, {602, 102, 2000}},
      {{1, 1, 1}, {603, 103, 2001}},      {{1, 1}, {104, 2002}},            {{1}, {105}}};
  const std::vector<Phase> phases{Phase::prefill, Phase::mixed, Phase::mixed, Phase::decode, Phase::decode, Phase::decode};
  REQUIRE(w.iterations.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("iteration " << i);
    CHECK(w.iterations[i].iteration == static_cast<std::int64_t>(i));
    CHECK(w.iterations[i].q_lengths == expected[i].first);
    CHECK(w.iterations[i].kv_lengths == expected[i].second);
    CHECK(w.iterations[i].phase == phases[i]);
  }
  // The LM head runs for each request that produces a token: 2 finished prompts in iteration 0;
  // 2 decodes in 1; 2 decodes and the long prompt's end in 2.
  CHECK(gemm_named(w.iterations[0], "lm_head").m == 2);
  CHECK(gemm_named(w.iterations[1], "lm_head").m == 2);
  CHECK(gemm_named(w.iterations[2], "lm_head").m == 3);
  CHECK(w.iterations[0].num_tokens() == 1024);
}

TEST_CASE("workload: without chunking, prompt-only iterations while whole prompts fit", "[workload]") {
  SchedulerPolicy policy;
  policy.max_batched_tokens = 1024;
  policy.chunked_prefill = false;
  const Workload w = generate_workload("llama", llama_8b(), small_trace(), Deployment{.tp = 1}, policy);
  // 600 and 100 fit together; 2000 does not fit while others run, so the two decode to the end
  // (3 and 5 steps), then the long prompt runs alone in an empty batch, then its 2 decodes.
  const std::vector<Lengths> q{{600, 100}, {1, 1}, {1, 1}, {1, 1}, {1}, {1}, {2000}, {1}, {1}};
  const std::vector<Lengths> kv{{600, 100}, {601, 101}, {602, 102}, {603, 103}, {104}, {105}, {2000}, {2001}, {2002}};
  REQUIRE(w.iterations.size() == q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    INFO("iteration " << i);
    CHECK(w.iterations[i].q_lengths == q[i]);
    CHECK(w.iterations[i].kv_lengths == kv[i]);
    CHECK(w.iterations[i].phase == (q[i].front() == 1 ? Phase::decode : Phase::prefill));
  }
  // max_sequences caps the requests running at once: one at a time runs each to its end.
  policy.max_sequences = 1;
  const Workload serial = generate_workload("llama", llama_8b(), small_trace(), Deployment{.tp = 1}, policy);
  CHECK(serial.iterations.size() == 1 + 3 + 1 + 5 + 1 + 2);
}

TEST_CASE("workload: a layer's operators per GPU under tensor parallelism", "[workload]") {
  SchedulerPolicy policy;
  const Workload w = generate_workload("llama", llama_8b(), std::vector<TraceRequest>{{300, 0, 1}}, Deployment{.tp = 2}, policy);
  REQUIRE(w.iterations.size() == 1);
  const WorkloadIteration& it = w.iterations.front();
  // 32 heads and 8 KV heads over 2 GPUs: 16 and 4 each, of 128.
  CHECK(gemm_named(it, "qkv_proj").n == (16 + 2 * 4) * 128);
  CHECK(gemm_named(it, "qkv_proj").k == 4096);
  CHECK(gemm_named(it, "qkv_proj").m == 300);
  CHECK(gemm_named(it, "qkv_proj").count == 32);
  CHECK(gemm_named(it, "o_proj").k == 16 * 128);
  CHECK(gemm_named(it, "gate_up_proj").n == 14336);  // 2 x 14336 / 2
  CHECK(gemm_named(it, "down_proj").k == 7168);
  CHECK(gemm_named(it, "lm_head").n == 64128);  // the vocabulary split
  CHECK(gemm_named(it, "lm_head").m == 1);
  REQUIRE(it.operators.attention);
  CHECK(it.operators.attention->nh == 16);
  CHECK(it.operators.attention->nkv == 4);
  CHECK(it.operators.attention->count == 32);
  CHECK(it.operators.rmsnorm->count == 65);  // two per layer and the final norm
  CHECK(it.operators.siluandmul->dim == 14336);  // the input's width, gate and up: the gate-up projection's N
  CHECK(gemm_named(it, "qkv_proj").type == "ColumnParallelLinear");
  CHECK(gemm_named(it, "o_proj").type == "RowParallelLinear");
  CHECK(gemm_named(it, "gate_up_proj").type == "MergedColumnParallelLinear");
  CHECK(gemm_named(it, "lm_head").type == "Linear");
  REQUIRE(it.operators.communication.size() == 2);
  CHECK(it.operators.communication[0].name == "all_reduce");
  CHECK(it.operators.communication[0].bytes == 300.0 * 4096 * 2);  // bf16 activations
  CHECK(it.operators.communication[0].count == 64);                // after attention and after the MLP
  CHECK(it.operators.communication[1].name == "all_gather");       // the logits' vocabulary shards

  // One GPU: no collective. Eight GPUs: one KV head each (8 / 8).
  CHECK(generate_workload("llama", llama_8b(), std::vector<TraceRequest>{{300, 0, 1}}, Deployment{.tp = 1}, policy)
            .iterations.front()
            .operators.communication.empty());
  CHECK(generate_workload("llama", llama_8b(), std::vector<TraceRequest>{{300, 0, 1}}, Deployment{.tp = 8}, policy)
            .iterations.front()
            .operators.attention->nkv == 1);
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), small_trace(), Deployment{.tp = 3}, policy); }),
             Contains("tp") && Contains("must divide num_attention_heads (32)"));

  // A mixture of experts: router and fused MoE instead of the dense MLP.
  const ModelParams mixtral = load_hf_config(kData + "/models/Mixtral-8x7B/config.json");
  const WorkloadIteration moe =
      generate_workload("mixtral", mixtral, std::vector<TraceRequest>{{64, 0, 1}}, Deployment{.tp = 2}, policy).iterations.front();
  REQUIRE(moe.operators.moe);
  CHECK(moe.operators.moe->experts == 8);
  CHECK(moe.operators.moe->top_k == 2);
  CHECK(moe.operators.moe->intermediate == 7168);
  CHECK(gemm_named(moe, "router").n == 8);
  CHECK_FALSE(moe.operators.siluandmul);
  CHECK(moe.operators.moe->zipf == 0);  // uniform routing unless the run says otherwise

  // The routing's skew travels from the workload file to the fused-MoE kernel.
  Workload skewed = generate_workload("mixtral", mixtral, small_trace(), Deployment{.tp = 2}, policy);
  for (WorkloadIteration& iteration : skewed.iterations) iteration.operators.moe->zipf = 1.2;
  const std::string text = to_json(skewed);
  CHECK_THAT(text, Contains("\"zipf\": 1.2"));
  CHECK(workload_from_json(text) == skewed);
  CHECK_THAT(to_json(generate_workload("mixtral", mixtral, small_trace(), Deployment{.tp = 2}, policy)), !Contains("zipf"));
  bool found = false;
  for (const WorkloadKernel& k : iteration_kernels(skewed.iterations.front(), DType::bf16))
    if (const FusedMoe* m = k.kernel.get_if<FusedMoe>()) found = m->zipf == 1.2;
  CHECK(found);
  std::string bad = text;
  bad.replace(bad.find("\"zipf\": 1.2"), 11, "\"zipf\": 9.0");
  CHECK_THAT(error_of([&] { workload_from_json(bad); }), Contains("moe.zipf") && Contains("must be within [0, 4]"));

  // Expert parallelism over the tensor-parallel ranks: whole experts, a share of them per rank,
  // the same all-reduces; the file keeps the rank count, and the kernel takes it.
  const Deployment ep2{.tp = 2, .expert_parallel = true};
  const Workload expert_parallel = generate_workload("mixtral", mixtral, small_trace(), ep2, policy);
  const WorkloadIteration& first = expert_parallel.iterations.front();
  REQUIRE(first.operators.moe);
  CHECK(first.operators.moe->intermediate == 14336);
  CHECK(first.operators.moe->ep == 2);
  CHECK(first.operators.moe->experts == 8);
  CHECK(first.operators.communication == skewed.iterations.front().operators.communication);
  CHECK(gemm_named(first, "qkv_proj").n == gemm_named(skewed.iterations.front(), "qkv_proj").n);  // attention stays tensor-parallel
  const std::string ep_text = to_json(expert_parallel);
  CHECK_THAT(ep_text, Contains("\"ep\": 2"));
  CHECK(workload_from_json(ep_text) == expert_parallel);
  std::int64_t kernel_ranks = 0;
  for (const WorkloadKernel& k : iteration_kernels(first, DType::bf16))
    if (const FusedMoe* m = k.kernel.get_if<FusedMoe>()) kernel_ranks = m->expert_parallel * 100 + m->local_experts();
  CHECK(kernel_ranks == 204);  // two ranks, four experts each
  // fused_experts' SiLU-and-mul and top-k sum run over every routed row, at the experts' full width
  // under expert parallelism, half of it sliced over two ranks.
  const auto moe_silu = [](const WorkloadIteration& iteration) {
    for (const WorkloadKernel& k : iteration_kernels(iteration, DType::bf16))
      if (k.name == "moe_silu_and_mul") return *k.kernel.get_if<SiluMul>();
    return SiluMul{};
  };
  CHECK(moe_silu(first).tokens == first.operators.moe->tokens * 2);
  CHECK(moe_silu(first).dim == 14336);
  CHECK(moe_silu(skewed.iterations.front()).dim == 7168);
  std::size_t sums = 0;
  for (const WorkloadKernel& k : iteration_kernels(first, DType::bf16)) sums += k.name == "moe_sum";
  CHECK(sums == 1);
  CHECK_THAT(error_of([&] { generate_workload("mixtral", mixtral, small_trace(), Deployment{.tp = 16, .expert_parallel = true}, policy); }),
             Contains("tp") && Contains("must divide num_experts (8)"));
  CHECK_THAT(error_of([&] { generate_workload("llama", llama_8b(), small_trace(), Deployment{.tp = 2, .expert_parallel = true}, policy); }),
             Contains("expert_parallel") && Contains("needs a mixture-of-experts model"));
  std::string bad_ranks = ep_text;
  bad_ranks.replace(bad_ranks.find("\"ep\": 2"), 7, "\"ep\": 3");
  CHECK_THAT(error_of([&] { (void)workload_from_json(bad_ranks); }),
             Contains("operators.moe.ep must divide moe.experts (8) into equal shares, got 3"));
}

TEST_CASE("workload: the JSON layout reads back what it writes, and names what is wrong", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 2});
  const std::string text = to_json(w);
  CHECK(workload_from_json(text) == w);
  CHECK_THAT(text, Contains("\"M\": 1024") && Contains("\"siluandmul\"") && Contains("\"num_tokens\": 1024"));

  auto broken = [&](const std::string& from, const std::string& to) {
    std::string copy = text;
    const auto at = copy.find(from);
    REQUIRE(at != std::string::npos);
    copy.replace(at, from.size(), to);
    return error_of([&] { workload_from_json(copy); });
  };
  CHECK_THAT(broken("\"M\": 1024", "\"M\": -4"), Contains("iterations[0].operators.gemm[0].M must be a positive integer, got -4"));
  CHECK_THAT(broken("\"num_tokens\": 1024", "\"num_tokens\": 1000"),
             Contains("iterations[0].num_tokens") && Contains("must equal the sum of q_lengths (1024)"));
  CHECK_THAT(broken("\"pp_size\": 1", "\"pp_size\": 0"), Contains("pp_size") && Contains("positive"));
  CHECK_THAT(broken("\"type\": \"RowParallelLinear\"", "\"type\": \"Sideways\""),
             Contains("gemm[1].type") && Contains("RowParallelLinear"));
  CHECK_THAT(broken("\"attention_type\": \"prefill\"", "\"attention_type\": \"fa9_ragged\""),
             Contains("attention.attention_type") && Contains("fa3_ragged"));
  CHECK_THAT(broken("\"type\": \"collective\"", "\"type\": \"p2p\""),
             Contains("communication[0].type") && Contains("\"collective\" for all_reduce"));
  CHECK_THAT(broken("\"volume_bytes\"", "\"bytes\": 5, \"volume_bytes\""), Contains("volume_bytes and bytes are both given"));
  CHECK_THAT(broken("\"dim\": 14336", "\"dim\": 14335"),
             Contains("siluandmul.dim") && Contains("even"));
  CHECK_THAT(broken("\"phase\": \"prefill\"", "\"phase\": \"warmup\""),
             Contains("iterations[0].phase") && Contains("must be prefill, decode or mixed"));
  CHECK_THAT(broken("\"name\": \"all_reduce\"", "\"name\": \"broadcast\""), Contains("communication[0].name"));
  CHECK_THAT(broken("\"count\"", "\"cnt\""), Contains("cnt is not a known field"));
  // A size far past any real serving run is refused by name rather than overflowing a product later.
  CHECK_THAT(broken("\"M\": 1024", "\"M\": 9223372036854775807"),
             Contains("iterations[0].operators.gemm[0].M") && Contains("must be at most 1073741824"));
  CHECK_THAT(error_of([] { workload_from_json("{"); }), Contains("workload is not valid JSON"));
  CHECK_THAT(broken("\"hd\": 128,", "\"hd\": 128, \"impl\": \"flash9\","),
             Contains("iterations[0].operators.attention.impl") && Contains("must be flash2 or flash3"));
  // The parts of a workload agree, as every published one's do
  CHECK_THAT(broken("\"pp_size\": 1", "\"pp_size\": 1000"), Contains("pp_size") && Contains("must be at most the number of layers"));
  CHECK_THAT(broken("\"tp_size\": 2", "\"tp_size\": 3"), Contains("tp_size must divide model_params.num_attention_heads (32), got 3"));
  CHECK_THAT(broken("\"phase\": \"prefill\"", "\"phase\": \"decode\""),
             Contains("iterations[0].q_lengths[0]") && Contains("must be 1 in a decode iteration"));
  Workload other_lengths = w;
  other_lengths.iterations[0].operators.attention->kv_lengths[0] += 1;
  CHECK_THAT(error_of([&] { workload_from_json(to_json(other_lengths)); }),
             Contains("iterations[0].operators.attention.kv_lengths") && Contains("must be the iteration's own"));
  Workload dense_with_experts = w;
  dense_with_experts.iterations[0].operators.moe = WorkloadMoe{1024, 8, 2, 4096, 14336, 32};
  CHECK_THAT(error_of([&] { workload_from_json(to_json(dense_with_experts)); }),
             Contains("iterations[0].operators.moe") && Contains("this one is dense"));
}

TEST_CASE("workload: attention's implementation, when the workload names it, sets its tiles", "[workload]") {
  Workload w = small_workload(Deployment{.tp = 1});
  // Unnamed: no config, so the demand model takes the GPU's default (FlashAttention-3 on Hopper).
  auto attention_of = [&](std::size_t i) {
    for (const WorkloadKernel& k : iteration_kernels(w.iterations[i], w.dtype))
      if (const Attention* a = k.kernel.get_if<Attention>()) return *a;
    FAIL("no attention kernel");
    return Attention{};
  };
  CHECK_FALSE(attention_of(0).config);
  for (WorkloadIteration& it : w.iterations) it.operators.attention->impl = AttentionImpl::flash2;
  CHECK(workload_from_json(to_json(w)) == w);  // "impl" is written and read back
  // The implementation alone: its own tiles for the GPU it runs on. FlashAttention-2 with
  // head_dim 128 on Hopper: 128 x 64 tiles for a prefill, the split kernel's 64 x 128 for decode.
  const Attention prefill = attention_of(0), decode = attention_of(3);
  REQUIRE(prefill.config);
  CHECK(prefill.config->impl == AttentionImpl::flash2);
  CHECK(prefill.config->has_own_tiles());
  const GpuSpec& h100 = find_gpu("H100-SXM");
  CHECK(resolved_config(prefill, h100).tile_q == 128);
  CHECK(resolved_config(prefill, h100).tile_kv == 64);
  REQUIRE(decode.config);
  CHECK(resolved_config(decode, h100).tile_q == 64);
  CHECK(resolved_config(decode, h100).tile_kv == 128);
  CHECK(decode.config->num_splits == 0);  // FlashAttention's own heuristic
  // On an Ada board the same prefill takes FlashAttention-2's square tiles for a causal mask.
  CHECK(resolved_config(prefill, find_gpu("L40S")).tile_q == 64);
  CHECK(resolved_config(prefill, find_gpu("L40S")).tile_kv == 64);
}

TEST_CASE("workload: predicted time is the sum of its kernels, counted, plus the stated overhead", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 2});
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  WorkloadOptions options;
  options.engine = EngineProfile::none();
  options.sustained = SustainedLoad{};  // none
  options.extra.per_iteration_us = 100;
  options.extra.per_kernel_us = 2;
  const WorkloadPrediction p = predict_workload(predictor, w, gpu, options);
  REQUIRE(p.iterations.size() == w.iterations.size());

  double total = 0, prefill = 0, operators = 0;
  std::vector<double> decode;
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    double kernels = 0;
    std::int64_t launches = 0;
    for (const WorkloadKernel& k : iteration_kernels(w.iterations[i], w.dtype)) {
      kernels += predictor.predict(k.kernel, gpu).latency_us * static_cast<double>(k.count);
      launches += k.count;
    }
    INFO("iteration " << i);
    CHECK(p.iterations[i].kernels_us == Approx(kernels).epsilon(1e-9));
    CHECK(p.iterations[i].launches == launches);
    CHECK(p.iterations[i].overhead_us == Approx(100 + 2.0 * static_cast<double>(launches)));
    total += p.iterations[i].total_us();
    (w.iterations[i].phase == Phase::decode ? decode.push_back(p.iterations[i].total_us()) : void(prefill += p.iterations[i].total_us()));
  }
  CHECK(p.total_us == Approx(total).epsilon(1e-12));
  CHECK(p.prefill_us == Approx(prefill).epsilon(1e-12));
  std::sort(decode.begin(), decode.end());
  REQUIRE(decode.size() == 3);
  CHECK(p.median_decode_iteration_us == Approx(decode[1]).epsilon(1e-12));
  for (const OperatorTime& op : p.operators) operators += op.us;
  CHECK(operators == Approx(p.total_us).epsilon(1e-9));  // the overhead is an operator of its own
  CHECK(std::is_sorted(p.operators.begin(), p.operators.end(),
                       [](const OperatorTime& a, const OperatorTime& b) { return a.us > b.us; }));

  // Without an engine and stated terms nothing is added.
  WorkloadOptions bare;
  bare.engine = EngineProfile::none();
  CHECK(predict_workload(predictor, w, gpu, bare).overhead_us == 0);
  options.extra.per_kernel_us = -1;
  CHECK_THAT(error_of([&] { predict_workload(predictor, w, gpu, options); }), Contains("overhead.per_kernel_us"));
}

TEST_CASE("workload: a kernel met again iterations later is answered as it was the first time", "[workload]") {
  // The run remembers what it predicted beyond the iteration before: iterations 0, 1, 0, 2, 1, 0
  // meet each GEMM again after others, and every iteration must come to what predicting its
  // kernels afresh gives, to the bit (the bundled networks answer, configs chosen on the way).
  const Workload small = small_workload(Deployment{.tp = 1});
  Workload w = small;
  w.iterations.clear();
  for (const std::size_t from : {0, 1, 0, 2, 1, 0}) w.iterations.push_back(small.iterations[from]);
  const Predictor predictor;
  const GpuSpec& gpu = find_gpu("H100-SXM");
  WorkloadOptions options;
  options.engine = EngineProfile::none();
  options.sustained = SustainedLoad{};  // none: each kernel's time as predicted
  const WorkloadPrediction p = predict_workload(predictor, w, gpu, options);
  REQUIRE(p.iterations.size() == 6);
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    double kernels = 0;
    for (const WorkloadKernel& k : iteration_kernels(w.iterations[i], w.dtype))
      kernels += Predictor().predict(k.kernel, gpu).latency_us * static_cast<double>(k.count);
    INFO("iteration " << i);
    CHECK(p.iterations[i].kernels_us == kernels);
  }
  CHECK(p.iterations[2].kernels_us == p.iterations[0].kernels_us);
  CHECK(p.iterations[5].kernels_us == p.iterations[0].kernels_us);
  CHECK(p.iterations[4].kernels_us == p.iterations[1].kernels_us);
}

TEST_CASE("workload: an engine profile adds its host time, its kernel gaps and its own kernels", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 1});
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  EngineProfile engine = EngineProfile::sglang();
  engine.iteration_us = 500;
  engine.kernel_gap_us = 1;
  engine.eager_launch_us = 1000;  // larger than any GPU time here: prompt iterations are host-bound
  WorkloadOptions options;
  options.engine = engine;
  options.sustained = SustainedLoad{};
  const WorkloadPrediction p = predict_workload(predictor, w, gpu, options);
  WorkloadOptions none = options;
  none.engine = EngineProfile::none();
  const WorkloadPrediction bare = predict_workload(predictor, w, gpu, none);
  REQUIRE(p.iterations.size() == bare.iterations.size());
  for (std::size_t i = 0; i < p.iterations.size(); ++i) {
    const IterationTime& it = p.iterations[i];
    INFO("iteration " << i);
    // The engine's kernels per layer: rotary embedding and the KV-cache write (not Qwen3: no q/k norms).
    CHECK(it.launches == bare.iterations[i].launches + 2 * 32);
    CHECK(it.kernels_us > bare.iterations[i].kernels_us);
    const double launches = static_cast<double>(it.launches);
    if (it.phase == Phase::decode)  // replayed from a CUDA graph: kernels, their gaps, the host's time
      CHECK(it.total_us() == Approx(it.kernels_us + launches * 1 + 500).epsilon(1e-12));
    else  // launched one by one: the host's 1000 us a launch outlasts the GPU
      CHECK(it.total_us() == Approx(launches * 1000 + 500).epsilon(1e-12));
  }
  // Decode batches larger than the engine's CUDA graphs launch eagerly too.
  options.engine.cuda_graph_max_batch = 1;
  const WorkloadPrediction eager = predict_workload(predictor, w, gpu, options);
  for (std::size_t i = 0; i < eager.iterations.size(); ++i)
    if (w.iterations[i].phase == Phase::decode)
      CHECK(eager.iterations[i].total_us() ==
            Approx(w.iterations[i].batch_size() <= 1 ? p.iterations[i].total_us()
                                                     : static_cast<double>(eager.iterations[i].launches) * 1000 + 500)
                .epsilon(1e-12));

  CHECK(EngineProfile::named("vllm").name == "vllm");
  CHECK(EngineProfile::named("none").iteration_us == 0);
  CHECK_THAT(error_of([] { EngineProfile::named("tgi"); }), Contains("engine") && Contains("sglang, vllm or none"));
  options.engine.kernel_gap_us = -1;
  CHECK_THAT(error_of([&] { predict_workload(predictor, w, gpu, options); }), Contains("engine.kernel_gap_us"));
}

TEST_CASE("workload: under the engines decode attention runs the prompt's implementation", "[workload]") {
  const Workload w =
      workload_from_json(pipeweave_test::read_text(kData + "/published/Qwen2.5-14B_arxiv_8_fa3_tp1_pp1_first3.json"));
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  WorkloadOptions sglang, none;
  none.engine = EngineProfile::none();
  sglang.sustained = none.sustained = SustainedLoad{};  // no slowdown: the kernels' own times
  const WorkloadPrediction a = predict_workload(predictor, w, gpu, sglang), b = predict_workload(predictor, w, gpu, none);
  // Each decode attention as fa2_paged (none) and as FlashAttention-3 (sglang): the demand differs.
  double fa2_us = 0, fa3_us = 0;
  for (std::size_t i = 1; i < w.iterations.size(); ++i) {
    const std::vector<WorkloadKernel> decode_kernels = iteration_kernels(w.iterations[i], w.dtype);
    const auto found =
        std::find_if(decode_kernels.begin(), decode_kernels.end(), [](const WorkloadKernel& k) { return k.name == "attention"; });
    REQUIRE(found != decode_kernels.end());
    Attention attention = *found->kernel.get_if<Attention>();
    REQUIRE(attention.config);
    CHECK(attention.config->impl == AttentionImpl::flash2);
    fa2_us += predictor.predict(attention, gpu).latency_us * 48;  // 48 layers
    attention.config = flash3_config(attention);
    fa3_us += predictor.predict(attention, gpu).latency_us * 48;
  }
  REQUIRE(fa2_us != fa3_us);
  const auto attention_us = [](const WorkloadPrediction& p) {
    for (const OperatorTime& op : p.operators)
      if (op.name == "attention") return op.us;
    return 0.0;
  };
  Workload prompt_only = w;
  prompt_only.iterations.resize(1);
  const double prompt_us = attention_us(predict_workload(predictor, prompt_only, gpu, none));
  CHECK(attention_us(b) == Approx(prompt_us + fa2_us).epsilon(1e-9));
  CHECK(attention_us(a) == Approx(prompt_us + fa3_us).epsilon(1e-9));
}

TEST_CASE("workload: the sustained-load slowdown is the GPU's own unless given", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 1});
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  REQUIRE(gpu.sustained_slowdown() > 1.1);  // measured: 1980 MHz alone, 1713 effective back to back
  WorkloadOptions options;
  options.engine = EngineProfile::none();
  const WorkloadPrediction own = predict_workload(predictor, w, gpu, options);
  CHECK(own.sustained.tensor_bound_slowdown == gpu.sustained_slowdown());
  CHECK(own.sustained.at_tensor_utilization == gpu.sustained_utilization);
  options.sustained = SustainedLoad::of(gpu);
  CHECK(predict_workload(predictor, w, gpu, options).total_us == own.total_us);
  options.sustained = SustainedLoad{};
  const double without = predict_workload(predictor, w, gpu, options).total_us;
  CHECK(predict_workload(predictor, w, gpu, options).prefill_us < own.prefill_us);
  // A GPU whose spec says nothing about sustained load is not slowed.
  GpuSpec unknown = gpu;
  unknown.max_clock_mhz = unknown.sustained_clock_mhz = unknown.sustained_utilization = 0;
  options.sustained.reset();
  CHECK(predict_workload(predictor, w, unknown, options).total_us == without);
}

TEST_CASE("workload: each request's time to first token and time per output token", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 1});
  WorkloadOptions options;
  options.engine = EngineProfile::none();
  const WorkloadPrediction p = predict_workload(Predictor::analytical(), w, find_gpu("H100-SXM"), options);
  // The iterations (see "chunked prefill" above): 0 holds prompts 600 and 100 whole and the first
  // 324 tokens of 2000; 1 and 2 decode the first two and go on with the long prompt, which ends
  // in 2; then decodes until the requests have had 3, 5 and 2 steps.
  std::vector<double> end;
  double at = 0;
  for (const IterationTime& it : p.iterations) end.push_back(at += it.total_us());
  REQUIRE(p.requests.size() == 3);
  CHECK(p.requests[0].prompt_tokens == 600);
  CHECK(p.requests[1].prompt_tokens == 100);
  CHECK(p.requests[2].prompt_tokens == 2000);
  CHECK(p.requests[0].time_to_first_token_us == end[0]);
  CHECK(p.requests[1].time_to_first_token_us == end[0]);
  CHECK(p.requests[2].time_to_first_token_us == end[2]);
  // Request 0 decodes in iterations 1, 2, 3; request 1 in 1-5; request 2 in 3, 4.
  CHECK(p.requests[0].output_tokens == 4);
  CHECK(p.requests[1].output_tokens == 6);
  CHECK(p.requests[2].output_tokens == 3);
  CHECK(p.requests[0].time_per_output_token_us == Approx((end[3] - end[0]) / 3));
  CHECK(p.requests[1].time_per_output_token_us == Approx((end[5] - end[0]) / 5));
  CHECK(p.requests[2].time_per_output_token_us == Approx((end[4] - end[2]) / 2));
  CHECK(p.requests[2].finish_us == end[4]);
  CHECK(p.time_to_first_token_us.median == end[0]);
  CHECK(p.time_to_first_token_us.p90 == Approx(end[0] + 0.8 * (end[2] - end[0])));
}

TEST_CASE("workload: a kernel answered from served rows takes the slowdown over what its label holds", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 1});
  MlpDescription served = pipeweave_test::constant_model(OpFamily::gemm, 0.5).description();
  served.for_configless_gemm = true;
  served.protocol = LabelProtocol::served;
  const Predictor predictor(std::vector<Mlp>{pipeweave_test::constant_model(OpFamily::gemm, 0.6), Mlp(served)});
  const GpuSpec& gpu = find_gpu("H100-SXM");
  SustainedLoad sustained;
  sustained.tensor_bound_slowdown = 1.25;
  CHECK(sustained.served_label_slowdown() == Approx(1 + SustainedLoad::kServedLabelShare * 0.25));
  CHECK(SustainedLoad{}.served_label_slowdown() == 1);  // no slowdown, none held
  const WorkloadPrediction slowed = predict_workload(predictor, w, gpu, WorkloadOptions{EngineProfile::none(), sustained, {}});
  REQUIRE(slowed.iterations.size() == w.iterations.size());
  bool some_served = false, some_rested = false;
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    double expected_us = 0, expected_served_us = 0;
    for (const WorkloadKernel& k : iteration_kernels(w.iterations[i], w.dtype)) {
      const Prediction p = predictor.predict(k.kernel, gpu);
      const bool tensor_bound = p.bottleneck == Pipe::tensor, from_served = p.protocol == LabelProtocol::served;
      if (tensor_bound) (from_served ? some_served : some_rested) = true;
      const double factor = !tensor_bound ? 1.0 : from_served ? 1.25 / sustained.served_label_slowdown() : 1.25;
      expected_us += factor * p.latency_us * static_cast<double>(k.count);
      if (from_served) expected_served_us += factor * p.latency_us * static_cast<double>(k.count);
    }
    INFO("iteration " << i);
    CHECK(slowed.iterations[i].kernels_us == Approx(expected_us).epsilon(1e-9));
    CHECK(slowed.iterations[i].served_us == Approx(expected_served_us).epsilon(1e-9));
  }
  double served_us = 0;
  for (const IterationTime& it : slowed.iterations) served_us += it.served_us;
  CHECK(slowed.served_us == Approx(served_us).epsilon(1e-12));
  CHECK(predict_workload(Predictor::analytical(), w, gpu, WorkloadOptions{EngineProfile::none(), sustained, {}}).served_us == 0);
  CHECK(some_served);  // the GEMMs, given without their configs as a serving engine gives them
  CHECK(some_rested);  // prompt attention: the bound alone, no clock of its own
}

TEST_CASE("workload: under sustained load only tensor-bound kernels slow down", "[workload]") {
  const Workload w = small_workload(Deployment{.tp = 1});
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  SustainedLoad sustained;
  sustained.tensor_bound_slowdown = 1.25;
  const auto with = [](const SustainedLoad& load) { return WorkloadOptions{EngineProfile::none(), load, {}}; };
  const WorkloadPrediction base = predict_workload(predictor, w, gpu, with(SustainedLoad{}));
  const WorkloadPrediction slowed = predict_workload(predictor, w, gpu, with(sustained));
  REQUIRE(slowed.iterations.size() == base.iterations.size());
  bool some_tensor_bound = false, some_memory_bound = false;
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    double tensor_us = 0, other_us = 0;
    for (const WorkloadKernel& k : iteration_kernels(w.iterations[i], w.dtype)) {
      const Prediction p = predictor.predict(k.kernel, gpu);
      (p.bottleneck == Pipe::tensor ? tensor_us : other_us) += p.latency_us * static_cast<double>(k.count);
    }
    some_tensor_bound |= tensor_us > 0, some_memory_bound |= other_us > 0;
    INFO("iteration " << i);
    CHECK(slowed.iterations[i].kernels_us == Approx(1.25 * tensor_us + other_us).epsilon(1e-9));
  }
  // The small trace's prefill GEMMs are tensor-bound, its decode GEMMs memory-bound: both kinds occur.
  CHECK(some_tensor_bound);
  CHECK(some_memory_bound);
  CHECK(slowed.median_decode_iteration_us < 1.25 * base.median_decode_iteration_us);

  // Measured at a tensor utilisation U, the slowdown scales with each iteration's own u.
  sustained.at_tensor_utilization = 0.8;
  const WorkloadPrediction scaled = predict_workload(predictor, w, gpu, with(sustained));
  bool some_partial = false;
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    double tensor_bound_us = 0, other_us = 0, tensor_work_us = 0;
    for (const WorkloadKernel& k : iteration_kernels(w.iterations[i], w.dtype)) {
      const Prediction p = predictor.predict(k.kernel, gpu);
      const double count = static_cast<double>(k.count);
      (p.bottleneck == Pipe::tensor ? tensor_bound_us : other_us) += p.latency_us * count;
      const double tensor_us = at(compute_demand(k.kernel, gpu).gpu_cycles, Pipe::tensor) / gpu.clock_hz() * 1e6;
      CHECK(p.tensor_us == tensor_us);  // what the prediction carries, which the workload sums
      tensor_work_us += tensor_us * count;
    }
    const double u = tensor_work_us / (tensor_bound_us + other_us);
    const double factor = 1 + 0.25 * std::min(1.0, u / 0.8);
    some_partial |= tensor_bound_us > 0 && u < 0.8;
    INFO("iteration " << i << ", tensor utilisation " << u);
    CHECK(scaled.iterations[i].kernels_us == Approx(factor * tensor_bound_us + other_us).epsilon(1e-9));
  }
  CHECK(some_partial);  // a decode iteration with tensor-bound kernels but a low utilisation
  CHECK(sustained.slowdown_at(0.4) == Approx(1.125));
  CHECK(sustained.slowdown_at(0.95) == Approx(1.25));
  CHECK(sustained.slowdown_at(-0.3) == 1.0);             // no load, no slowdown
  CHECK(sustained.slowdown_at(std::nan("")) == 1.0);
  // One kernel looped: its own utilisation. 10 us of tensor work at 0.8: past 12.5 us alone it
  // is below the utilisation of the full slowdown and gains 0.25 x 10 / 0.8 = 3.125 us; below, x1.25.
  CHECK(sustained.back_to_back_us(20, 10) == Approx(23.125));
  CHECK(sustained.back_to_back_us(11, 10) == Approx(13.75));
  for (const double alone : {11.0, 12.5, 20.0, 400.0, 0.5}) {
    INFO("alone " << alone << " us");
    CHECK(sustained.isolated_us(sustained.back_to_back_us(alone, 10), 10) == Approx(alone).epsilon(1e-12));
  }
  CHECK(SustainedLoad{}.isolated_us(7, 5) == 7);  // no slowdown known
  // No tensor work: no clock lost, even where the full slowdown applies at any load (u0 = 0).
  const SustainedLoad any_load{1.2, 0};
  CHECK(any_load.back_to_back_us(30, 0) == 30);
  CHECK(any_load.isolated_us(30, 0) == 30);
  CHECK(sustained.back_to_back_us(30, 0) == 30);
  CHECK(any_load.back_to_back_us(30, 1) == Approx(36));
  CHECK(any_load.isolated_us(36, 1) == Approx(30));

  for (const double bad : {0.9, 0.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    sustained.tensor_bound_slowdown = bad;
    CHECK_THAT(error_of([&] { predict_workload(predictor, w, gpu, with(sustained)); }),
               Contains("sustained.tensor_bound_slowdown"));
  }
  sustained.tensor_bound_slowdown = 1.1;
  for (const double bad : {-0.1, 1.5, std::nan("")}) {
    sustained.at_tensor_utilization = bad;
    CHECK_THAT(error_of([&] { predict_workload(predictor, w, gpu, with(sustained)); }),
               Contains("sustained.at_tensor_utilization"));
  }
}

TEST_CASE("workload: the published workloads are read as published and written back field for field", "[workload]") {
  struct Published {
    std::string file;
    int tp, pp;
    std::optional<AttentionImpl> prompt_impl;
  };
  const std::vector<Published> files{{"Qwen2.5-14B_arxiv_8_fa3_tp1_pp1_first3.json", 1, 1, AttentionImpl::flash3},
                                     {"Qwen3-32B_splitwise_48_fa2_tp2_pp1_first3.json", 2, 1, AttentionImpl::flash2},
                                     {"Llama-3.1-70B_arxiv_16_fa3_tp4_pp1_first3.json", 4, 1, AttentionImpl::flash3},
                                     {"Llama-3.1-70B_splitwise_64_fa3_tp8_pp1_first2.json", 8, 1, AttentionImpl::flash3},
                                     {"Llama-3.1-70B_vllm_a16_fa3_tp4_pp2_first3.json", 4, 2, AttentionImpl::flash3}};
  const Predictor predictor = Predictor::analytical();
  for (const Published& p : files) {
    INFO(p.file);
    const std::string text = pipeweave_test::read_text(kData + "/published/" + p.file);
    const Workload w = workload_from_json(text);
    CHECK(w.tp_size == p.tp);
    CHECK(w.pp_size == p.pp);
    REQUIRE(w.iterations.size() >= 2);
    const WorkloadIteration& prompt = w.iterations.front();
    const WorkloadIteration& decode = w.iterations.back();
    CHECK(prompt.phase == Phase::prefill);
    CHECK(decode.phase == Phase::decode);
    CHECK(gemm_named(prompt, "o_proj").type == "RowParallelLinear");
    CHECK(gemm_named(prompt, "gate_up_proj").type == "MergedColumnParallelLinear");
    // The attention types name the implementation; decode reads a paged KV cache.
    const std::vector<WorkloadKernel> prompt_kernels = iteration_kernels(prompt, w.dtype);
    const std::vector<WorkloadKernel> decode_kernels = iteration_kernels(decode, w.dtype);
    const auto kernel_of = [&](const std::vector<WorkloadKernel>& kernels, const std::string& name) -> const Kernel& {
      const auto found = std::find_if(kernels.begin(), kernels.end(), [&](const WorkloadKernel& k) { return k.name == name; });
      REQUIRE(found != kernels.end());
      return found->kernel;
    };
    const Attention* prompt_attention = kernel_of(prompt_kernels, "attention").get_if<Attention>();
    const Attention* decode_attention = kernel_of(decode_kernels, "attention").get_if<Attention>();
    REQUIRE(prompt_attention);
    REQUIRE(decode_attention);
    REQUIRE(prompt_attention->config);
    CHECK(prompt_attention->config->impl == *p.prompt_impl);
    CHECK(prompt_attention->page_size == 0);
    REQUIRE(decode_attention->config);
    CHECK(decode_attention->config->impl == AttentionImpl::flash2);  // fa2_paged
    CHECK(decode_attention->page_size == kPagedKvBlockTokens);
    // siluandmul's dim is the gate-up projection's output, twice the MLP width per GPU.
    REQUIRE(prompt.operators.siluandmul);
    CHECK(prompt.operators.siluandmul->dim == gemm_named(prompt, "gate_up_proj").n);
    const SiluMul* silu = kernel_of(prompt_kernels, "silu_and_mul").get_if<SiluMul>();
    REQUIRE(silu);
    CHECK(silu->dim * 2 == prompt.operators.siluandmul->dim);
    // Transfers: all-reduces among the tensor-parallel group; a send_recv per stage boundary.
    for (const WorkloadCollective& c : prompt.operators.communication) {
      if (c.name == "all_reduce") CHECK(c.ranks == p.tp);
      if (c.name == "send_recv") {
        CHECK(c.ranks == 2);
        CHECK(c.count == p.pp - 1);
      }
    }
    const bool has_send_recv = std::any_of(prompt.operators.communication.begin(), prompt.operators.communication.end(),
                                           [](const WorkloadCollective& c) { return c.name == "send_recv"; });
    CHECK(has_send_recv == (p.pp > 1));
    CHECK(prompt.operators.communication.empty() == (p.tp == 1 && p.pp == 1));

    // Written back, the document is the published one field for field (plus the project's dtype).
    nlohmann::json original = nlohmann::json::parse(text);
    nlohmann::json written = nlohmann::json::parse(to_json(w));
    CHECK(written["dtype"] == "bf16");
    written.erase("dtype");
    CHECK(written == original);
    CHECK(workload_from_json(to_json(w)) == w);

    // And it is predicted: every iteration has a positive time, the transfers included.
    const WorkloadPrediction prediction = predict_workload(predictor, w, find_gpu("H100-SXM"));
    REQUIRE(prediction.iterations.size() == w.iterations.size());
    for (const IterationTime& it : prediction.iterations) CHECK(it.kernels_us > 0);
  }
}

TEST_CASE("workload: pipeline parallelism hands the activations across each stage boundary", "[workload]") {
  const Workload one = small_workload(Deployment{.tp = 2});
  const Workload staged = small_workload(Deployment{.tp = 2, .pp = 4});
  CHECK(staged.pp_size == 4);
  REQUIRE(staged.iterations.size() == one.iterations.size());
  for (std::size_t i = 0; i < staged.iterations.size(); ++i) {
    const WorkloadOperators& a = one.iterations[i].operators;
    const WorkloadOperators& b = staged.iterations[i].operators;
    CHECK(a.gemm == b.gemm);  // the stages together run every layer once
    REQUIRE(b.communication.size() == a.communication.size() + 1);
    const WorkloadCollective& hand_over = b.communication.back();
    CHECK(hand_over.name == "send_recv");
    CHECK(hand_over.count == 3);
    // hidden states and residual, 16-bit, for every token of the iteration
    CHECK(hand_over.bytes == 2.0 * 2 * 4096 * static_cast<double>(staged.iterations[i].num_tokens()));
  }
  // The stages run one after another: the time is the single-stage sum plus the hand-overs.
  const Predictor predictor = Predictor::analytical();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const WorkloadOptions bare{EngineProfile::none(), SustainedLoad{}, {}};
  const WorkloadPrediction a = predict_workload(predictor, one, gpu, bare), b = predict_workload(predictor, staged, gpu, bare);
  for (std::size_t i = 0; i < a.iterations.size(); ++i) {
    const WorkloadCollective& hand_over = staged.iterations[i].operators.communication.back();
    const double transfer =
        predictor.predict(Collective{.kind = CollectiveKind::send_recv, .bytes = hand_over.bytes, .ranks = 2}, gpu).latency_us;
    CHECK(b.iterations[i].kernels_us == Approx(a.iterations[i].kernels_us + 3 * transfer).epsilon(1e-9));
  }
  CHECK_THAT(error_of([&] { small_workload(Deployment{.tp = 1, .pp = 33}); }),
             Contains("pp") && Contains("number of layers (32)"));
  CHECK_THAT(error_of([&] { small_workload(Deployment{.tp = 1, .pp = 0}); }),
             Contains("pp"));
}

TEST_CASE("workload: every published workload reads unchanged, writes back the same and predicts on any GPU", "[workload]") {
  // tests/data/published/all: the 25 workloads of the published study, each cut to its first two
  // iterations (tests/data/published/shorten.py), every field otherwise as published.
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kData + "/published/all"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  REQUIRE(files.size() == 25);
  const Predictor predictor = Predictor::analytical();
  for (const std::filesystem::path& file : files) {
    INFO(file.filename().string());
    const std::string text = pipeweave_test::read_text(file.string());
    const Workload w = workload_from_json(text);
    nlohmann::json written = nlohmann::json::parse(to_json(w));
    written.erase("dtype");
    // Compared as text (keys sorted, no spacing), so that an integer written back as 3.0 or a
    // float as an integer fails too, which comparing the parsed values would let through.
    CHECK(written.dump() == nlohmann::json::parse(text).dump());
    // Hopper runs the FlashAttention-3 workloads as they are; on an Ampere GPU the engine runs
    // FlashAttention-2 in their place.
    for (const char* gpu : {"H100-SXM", "A100-SXM4-80GB", "RTX-PRO-6000-Blackwell-Server"}) {
      const WorkloadPrediction p = predict_workload(predictor, w, find_gpu(gpu));
      CHECK(p.iterations.size() == 2);
      CHECK(p.total_us > 0);
      CHECK(p.median_decode_iteration_us > 0);
    }
  }
}

TEST_CASE("workload: requests are followed through a long run, finished ones not mistaken for new", "[workload]") {
  // 200 requests of varied prompts and lengths, at most 64 running at once: many reach KV lengths
  // that earlier, finished requests ended at. Every request's tokens must come out as traced.
  std::vector<TraceRequest> trace;
  for (std::int64_t i = 0; i < 200; ++i) {
    const std::int64_t decodes = (i * 13) % 40;
    trace.push_back({50 + (i * 37) % 500, decodes, decodes + 1});
  }
  for (const bool chunked : {true, false}) {
    INFO("chunked prefill " << chunked);
    SchedulerPolicy policy;
    policy.max_batched_tokens = 2048;
    policy.max_sequences = 64;
    policy.chunked_prefill = chunked;
    const Workload w = generate_workload("llama", llama_8b(), trace, Deployment{.tp = 1}, policy);
    const WorkloadPrediction p = predict_workload(Predictor::analytical(), w, find_gpu("H100-SXM"),
                                                  WorkloadOptions{EngineProfile::none(), SustainedLoad{}, {}});
    REQUIRE(p.requests.size() == trace.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < trace.size(); ++i)
      wrong += p.requests[i].prompt_tokens != trace[i].prefill_tokens || p.requests[i].output_tokens != trace[i].output_tokens ||
               p.requests[i].started_before;
    CHECK(wrong == 0);
  }
  // A workload that starts mid-run: its requests were running before, their times unknown.
  SchedulerPolicy policy;
  Workload w = generate_workload("llama", llama_8b(), std::vector<TraceRequest>{{100, 5, 6}}, Deployment{.tp = 1}, policy);
  w.iterations.erase(w.iterations.begin(), w.iterations.begin() + 2);  // the prompt and the first decode gone
  const WorkloadPrediction p = predict_workload(Predictor::analytical(), w, find_gpu("H100-SXM"),
                                                WorkloadOptions{EngineProfile::none(), SustainedLoad{}, {}});
  REQUIRE(p.requests.size() == 1);
  CHECK(p.requests[0].started_before);
  CHECK(p.requests[0].prompt_tokens == 101);  // the context it had
  CHECK(p.requests[0].output_tokens == 4);    // the decode steps seen
  CHECK(p.time_to_first_token_us.median == 0);  // no request whose first token was seen
}

TEST_CASE("measured iterations: iteration -> microseconds, other columns ignored, bad cells and empty files refused",
          "[workload]") {
  const auto measured = pipeweave::measured_iterations_from_csv("phase,iteration,measured_us\nprefill,0,12.5\ndecode,3,8\n", "m.csv");
  CHECK(measured == std::map<std::int64_t, double>{{0, 12.5}, {3, 8.0}});
  CHECK_THROWS_WITH(pipeweave::measured_iterations_from_csv("iteration,measured_us\n0,-1\n", "m.csv"),
                    Catch::Contains("m.csv line 2 column measured_us must be a positive number"));
  CHECK_THROWS_WITH(pipeweave::measured_iterations_from_csv("iteration,measured_us\n", "m.csv"), "m.csv: no measured iteration");
  CHECK_THROWS_AS(pipeweave::measured_iterations_from_csv("iteration\n0\n", "m.csv"), pipeweave::InvalidInput);
}

namespace {

// Every figure of two predictions of one run, compared to the last bit.
void check_same_prediction(const WorkloadPrediction& p, const WorkloadPrediction& one) {
  CHECK(p.total_us == one.total_us);
  CHECK(p.prefill_us == one.prefill_us);
  CHECK(p.overhead_us == one.overhead_us);
  CHECK(p.extrapolated_us == one.extrapolated_us);
  CHECK(p.served_us == one.served_us);
  CHECK(p.median_decode_iteration_us == one.median_decode_iteration_us);
  REQUIRE(p.iterations.size() == one.iterations.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < p.iterations.size(); ++i) {
    const IterationTime &a = p.iterations[i], &b = one.iterations[i];
    differ += a.iteration != b.iteration || a.phase != b.phase || a.num_tokens != b.num_tokens || a.kernels_us != b.kernels_us ||
              a.overhead_us != b.overhead_us || a.launches != b.launches || a.extrapolated_us != b.extrapolated_us ||
              a.served_us != b.served_us;
  }
  CHECK(differ == 0);
  REQUIRE(p.operators.size() == one.operators.size());
  for (std::size_t o = 0; o < p.operators.size(); ++o) {
    CHECK(p.operators[o].name == one.operators[o].name);
    CHECK(p.operators[o].us == one.operators[o].us);
    CHECK(p.operators[o].launches == one.operators[o].launches);
  }
  REQUIRE(p.requests.size() == one.requests.size());
  std::size_t requests_differ = 0;
  for (std::size_t r = 0; r < p.requests.size(); ++r) {
    const RequestTime &a = p.requests[r], &b = one.requests[r];
    requests_differ += a.prompt_tokens != b.prompt_tokens || a.output_tokens != b.output_tokens ||
                       a.time_to_first_token_us != b.time_to_first_token_us ||
                       a.time_per_output_token_us != b.time_per_output_token_us || a.finish_us != b.finish_us ||
                       a.started_before != b.started_before;
  }
  CHECK(requests_differ == 0);
  CHECK(p.time_to_first_token_us.median == one.time_to_first_token_us.median);
  CHECK(p.time_to_first_token_us.p90 == one.time_to_first_token_us.p90);
  CHECK(p.time_per_output_token_us.median == one.time_per_output_token_us.median);
  CHECK(p.time_per_output_token_us.p90 == one.time_per_output_token_us.p90);
}

// A trace of prompts and decode steps: 400 requests make over 4,096 iterations (blocks of 1,024
// are predicted at a time) under small_batches().
std::vector<TraceRequest> long_trace(std::int64_t requests = 400) {
  std::vector<TraceRequest> trace;
  for (std::int64_t i = 0; i < requests; ++i) {
    const std::int64_t decodes = 20 + (i * 37) % 180;
    trace.push_back({30 + (i * 53) % 700, decodes, decodes + 1});
  }
  return trace;
}

SchedulerPolicy small_batches() {
  SchedulerPolicy policy;
  policy.max_batched_tokens = 1024;
  policy.max_sequences = 8;
  return policy;
}

}  // namespace

TEST_CASE("workload: predicted on several threads, a run comes out the same to the last bit", "[workload][thread]") {
  // The bundled networks answering (configs searched and remembered while the threads share the predictor).
  const std::vector<TraceRequest> trace = long_trace();
  const SchedulerPolicy policy = small_batches();
  Workload w = generate_workload("llama", llama_8b(), trace, Deployment{.tp = 1}, policy);
  REQUIRE(w.iterations.size() > 1024 + 64);
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const auto run = [&](int threads) {
    WorkloadOptions options;
    options.threads = threads;
    return predict_workload(Predictor(), w, gpu, options);
  };
  const WorkloadPrediction one = run(1);
  for (const int threads : {2, 3, 0}) {
    INFO(threads << " threads");
    check_same_prediction(run(threads), one);
  }
  // Two iterations that cannot be predicted, the later one first in a chunk of its own (a thread
  // meets it before the earlier one, at the end of the chunk before, is reached): the earlier one's
  // error, in the first block and in the second.
  for (const std::size_t earlier : {std::size_t{31}, std::size_t{1024 + 63}}) {
    INFO("bad iterations " << earlier << " and " << earlier + 1);
    Workload bad = w;
    bad.iterations[earlier].operators.attention->nkv = 7;
    bad.iterations[earlier + 1].operators.attention->nkv = 5;
    for (const int threads : {1, 2, 3}) {
      WorkloadOptions options;
      options.threads = threads;
      CHECK_THAT(error_of([&] { predict_workload(Predictor(), bad, gpu, options); }),
                 StartsWith("iteration " + std::to_string(bad.iterations[earlier].iteration) + " (") &&
                     Contains("attention.kv_heads") && Contains("got 7"));
    }
  }
  CHECK_THAT(error_of([&] { run(-1); }), Contains("options.threads"));
  CHECK_THAT(error_of([&] { run(5000); }), Contains("options.threads"));
}

TEST_CASE("workload: a trace predicted as it is scheduled gives the whole workload's prediction to the last bit",
          "[workload][thread]") {
  const std::vector<TraceRequest> trace = long_trace(640);
  const SchedulerPolicy policy = small_batches();
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const Deployment deployment{.tp = 1};
  // As e2e's --attention-impl: every iteration's attention named FlashAttention-2, which an engine
  // whose decode follows the prompt's kernel (SGLang's profile) then decodes with too.
  const std::function<void(WorkloadIteration&)> flash2 = [](WorkloadIteration& iteration) {
    if (iteration.operators.attention) iteration.operators.attention->impl = AttentionImpl::flash2;
  };
  // (And a deployment naming its attention kernel, FlashAttention-3: the decode steps follow the prompt's.)
  const Deployment named{.tp = 1, .attention_impl = AttentionImpl::flash3};
  for (const auto& [adjusted, deployed] : {std::pair{false, deployment}, std::pair{true, deployment}, std::pair{false, named}}) {
    INFO((adjusted ? "attention named flash2" : "as scheduled") << (deployed.attention_impl ? ", flash3 deployed" : ""));
    Workload whole = generate_workload("llama", llama_8b(), trace, deployed, policy);
    REQUIRE(whole.iterations.size() > 2 * 4096);  // eight blocks and more: the errors below come from later ones
    if (adjusted)
      for (WorkloadIteration& iteration : whole.iterations) flash2(iteration);
    WorkloadOptions options;
    options.engine = EngineProfile::sglang();
    options.threads = 1;
    const WorkloadPrediction expected = predict_workload(Predictor(), whole, gpu, options);
    for (const int threads : {1, 2, 40, 0}) {  // (40: blocks of 2,560 iterations)
      INFO(threads << " threads");
      options.threads = threads;
      check_same_prediction(
          predict_trace(Predictor(), "llama", llama_8b(), trace, deployed, policy, gpu, options, adjusted ? flash2 : nullptr),
          expected);
    }
  }
  // Errors: the scheduling's own checks, an iteration of a later block that cannot be predicted,
  // and a failure while a later block is scheduled (on the thread beside the predictors, or after).
  ModelParams bad_params = llama_8b();
  bad_params.num_key_value_heads = 7;
  CHECK(error_of([&] { predict_trace(Predictor(), "llama", bad_params, trace, deployment, policy, gpu); }) ==
        error_of([&] { generate_workload("llama", bad_params, trace, deployment, policy); }));
  CHECK_THAT(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), {}, deployment, policy, gpu); }),
             Contains("the trace has no request"));
  // An iteration whose lists an adjustment left of two lengths: refused by name, not read past their end.
  const std::function<void(WorkloadIteration&)> cuts_lists = [](WorkloadIteration& iteration) {
    if (iteration.iteration == 4096 + 3) iteration.kv_lengths.clear(), iteration.kv_lengths.shrink_to_fit();
  };
  CHECK_THAT(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), trace, deployment, policy, gpu, {}, cuts_lists); }),
             Contains("iterations[4099].kv_lengths") && Contains("must have one entry per q_lengths entry"));
  const std::function<void(WorkloadIteration&)> cuts_attention = [](WorkloadIteration& iteration) {
    if (iteration.iteration == 7) iteration.operators.attention->kv_lengths.pop_back();
  };
  CHECK_THAT(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), trace, deployment, policy, gpu, {}, cuts_attention); }),
             Contains("iterations[7].operators.attention.kv_lengths"));
  const std::function<void(WorkloadIteration&)> cuts_ids = [](WorkloadIteration& iteration) {
    if (iteration.iteration == 9) iteration.request_ids.pop_back();
  };
  CHECK_THAT(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), trace, deployment, policy, gpu, {}, cuts_ids); }),
             Contains("iterations[9].request_ids"));
  const std::function<void(WorkloadIteration&)> breaks_later = [](WorkloadIteration& iteration) {
    if (iteration.iteration == 4096 + 70) iteration.operators.attention->nkv = 7;
  };
  const std::function<void(WorkloadIteration&)> throws_later = [](WorkloadIteration& iteration) {
    if (iteration.iteration == 2 * 4096 + 5) throw InvalidInput("iteration 8197 refused");
  };
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    WorkloadOptions options;
    options.threads = threads;
    CHECK_THAT(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), trace, deployment, policy, gpu, options, breaks_later); }),
               Contains("attention.kv_heads") && Contains("got 7"));
    CHECK(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), trace, deployment, policy, gpu, options, throws_later); }) ==
          "iteration 8197 refused");
    options.threads = -1;
    CHECK_THAT(error_of([&] { predict_trace(Predictor(), "llama", llama_8b(), trace, deployment, policy, gpu, options); }),
               Contains("options.threads"));
  }
}

TEST_CASE("workload: each iteration numbered once, KV lengths counting the new tokens, a request once a batch", "[workload]") {
  const nlohmann::json document = nlohmann::json::parse(to_json(small_workload(Deployment{.tp = 2})));
  REQUIRE(document["iterations"].size() >= 2);
  const auto error = [](const nlohmann::json& changed) { return error_of([&] { (void)workload_from_json(changed.dump()); }); };
  nlohmann::json changed = document;
  changed["iterations"][1]["iteration"] = changed["iterations"][0]["iteration"];
  CHECK_THAT(error(changed), Contains("iterations[1].iteration must differ from every other iteration's (iterations[0] has it)"));
  changed = document;
  const std::int64_t q = changed["iterations"][0]["q_lengths"][0].get<std::int64_t>();
  changed["iterations"][0]["kv_lengths"][0] = q - 1;
  CHECK_THAT(error(changed), Contains("iterations[0].kv_lengths[0] must be at least q_lengths[0] (" + std::to_string(q) + ")"));
  changed = document;
  changed["iterations"][0]["q_lengths"] = {1, 1};
  changed["iterations"][0]["kv_lengths"] = {5, 6};
  changed["iterations"][0]["batch_size"] = 2;
  changed["iterations"][0]["num_tokens"] = 2;
  changed["iterations"][0]["request_ids"] = {3, 3};
  CHECK_THAT(error(changed), Contains("iterations[0].request_ids must name each request once") && Contains("got 3"));
  changed["iterations"][0]["request_ids"] = {3, 4};
  changed["iterations"][0]["operators"]["attention"]["q_lengths"] = {1, 1};  // (the attention runs the iteration's sequences)
  changed["iterations"][0]["operators"]["attention"]["kv_lengths"] = {5, 6};
  changed["iterations"][0]["operators"]["attention"]["bs"] = 2;
  CHECK_NOTHROW(workload_from_json(changed.dump()));
  // Lengths past 2^30 are refused by name before their sum is taken (two of 2^62 wrapped it: UBSan
  // stopped there; four and a one summed to the num_tokens given)
  changed = document;
  const std::int64_t huge = std::int64_t{1} << 62;
  changed["iterations"][0]["q_lengths"] = {huge, huge, huge, huge, 1};
  changed["iterations"][0]["kv_lengths"] = {huge, huge, huge, huge, 1};
  changed["iterations"][0]["batch_size"] = 5;
  changed["iterations"][0]["num_tokens"] = 1;
  changed["iterations"][0].erase("request_ids");
  CHECK_THAT(error(changed), Contains("iterations[0].q_lengths[0]") && Contains(std::to_string(huge)));
  // An operator's name is printed in the operator table: no control characters, no megabytes
  changed = document;
  changed["iterations"][0]["operators"]["gemm"][0]["name"] = "a\nb\x1b[2J";
  CHECK_THAT(error(changed), Contains("iterations[0].operators.gemm[0].name") && Contains("without control characters"));
  changed["iterations"][0]["operators"]["gemm"][0]["name"] = std::string(300, 'a');
  CHECK_THAT(error(changed), Contains("iterations[0].operators.gemm[0].name") && Contains("at most 256 bytes"));
  changed = document;
  changed["model"] = "";  // (printed " on 2 x H100-SXM")
  CHECK_THAT(error(changed), Contains("model must name the model"));
}

TEST_CASE("workload: a send_recv hands one rank's buffer to one other rank, named where it is read", "[workload]") {
  nlohmann::json document = nlohmann::json::parse(to_json(small_workload(Deployment{.tp = 2, .pp = 2})));
  bool changed = false;
  for (std::size_t i = 0; i < document["iterations"].size() && !changed; ++i) {
    nlohmann::json& communication = document["iterations"][i]["operators"]["communication"];
    for (std::size_t c = 0; c < communication.size() && !changed; ++c)
      if (communication[c]["name"] == "send_recv") {
        communication[c]["ranks"] = 4;
        changed = true;
        CHECK_THAT(error_of([&] { (void)workload_from_json(document.dump()); }),
                   Contains("iterations[" + std::to_string(i) + "].operators.communication[" + std::to_string(c) +
                            "].ranks must be 2 for send_recv"));
      }
  }
  CHECK(changed);  // (a pipeline of two stages hands its activations over)
}
