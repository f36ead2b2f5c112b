#pragma once
// End to end: an LLM serving run as a list of iterations, each a batch of requests and the
// kernels it launches, and its predicted time (docs/method.md, section 4).
//
// A Workload is read from and written to the JSON layout of the published method's
// artifacts; it can also be generated from a Hugging Face config.json, a request trace and
// a continuous-batching policy. Its time is the sum of its kernels' predicted latencies
// (per GPU of a tensor-parallel group: each GPU runs its shard at the same time, so one
// GPU's kernels, all-reduces included, are the iteration) plus an explicit per-iteration
// overhead that the caller sets (launches, scheduler, sampling): nothing is hidden in the
// kernels.

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/predictor.hpp"

namespace pipeweave {

// What an iteration runs: only prompt tokens, only one new token per request, or both.
enum class Phase : std::uint8_t { prefill, decode, mixed };
std::string_view to_string(Phase phase);

// A decoder-only transformer's shape, as config.json gives it. Mixture-of-experts models
// have experts > 0: their MLP is a fused MoE over `experts` experts of
// `moe_intermediate_size`, plus a dense shared expert of `shared_expert_intermediate_size`
// where the model has one.
struct ModelParams {
  std::int64_t hidden_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t vocab_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_experts = 0;  // 0: dense
  std::int64_t num_experts_per_tok = 0;
  std::int64_t moe_intermediate_size = 0;
  std::int64_t shared_expert_intermediate_size = 0;
  // The longest sequence (prompt and output) the model serves, as vLLM derives its max_model_len
  // from config.json: max_position_embeddings, times a linear, dynamic or YaRN rope_scaling factor
  // above 1 (YaRN's over original_max_position_embeddings where given; Llama 3's and LongRoPE's
  // max_position_embeddings already hold theirs). 0: not stated, no bound. A trace's requests
  // must fit it: no engine runs a request past its model's context.
  std::int64_t max_model_len = 0;
  // Throws pipeweave::Error naming the field: sizes must be positive, heads divisible.
  void validate() const;
  bool operator==(const ModelParams&) const = default;
};

// The operators of one iteration, per GPU, in the published layout: each with the number of
// times the iteration runs it (layers, or layers x 2 for the two norms and all-reduces).
struct WorkloadGemm {
  std::string name;
  // The serving engine's layer class, as the published layout names it: ColumnParallelLinear,
  // RowParallelLinear, MergedColumnParallelLinear, QKVParallelLinear, ReplicatedLinear or
  // Linear; empty when the file gives none. It says how the weight is split under tensor
  // parallelism; the time comes from M, N, K alone.
  std::string type;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t count = 1;
  bool operator==(const WorkloadGemm&) const = default;
};

// The attention kernels the published layout names, and what each means here:
//  fa3_ragged: FlashAttention-3 over a ragged (variable-length) batch of prompts;
//  fa2_ragged: FlashAttention-2, likewise;
//  fa2_paged, fa3_paged: decode over a paged KV cache (kPagedKvBlockTokens tokens a page);
//  prefill, decode, mixed: the phase only (older project files, and generated workloads whose
//    implementation is not stated): the library's default implementation for the GPU.
// Anything else is refused.
inline constexpr std::int64_t kPagedKvBlockTokens = 256;  // FlashAttention-2's paged kernel: pages of 256
struct AttentionType {
  std::optional<AttentionImpl> impl;  // none: the GPU's default
  bool paged = false;
};
// Throws pipeweave::Error naming `field` for a type not listed above.
AttentionType attention_type_from(std::string_view attention_type, const std::string& field = "attention_type");
// The published name for an implementation in a prompt (ragged) or decode (paged) iteration.
std::string attention_type_name(AttentionImpl impl, bool paged);

struct WorkloadAttention {
  std::string attention_type;  // one of the names above
  std::vector<std::int64_t> q_lengths, kv_lengths;
  std::int64_t nh = 0, nkv = 0, hd = 0;  // per GPU
  std::int64_t count = 1;
  // Optional ("impl" in the file, the project's addition): flash2 or flash3, overriding what
  // attention_type implies (e2e --attention-impl sets it).
  std::optional<AttentionImpl> impl;
  bool operator==(const WorkloadAttention&) const = default;
};
// rmsnorm (fused residual add): seq rows of dim. siluandmul: seq rows whose input is dim wide
// (gate and up side by side, as the published layout gives it: the gate-up projection's N); the
// output is dim / 2.
struct WorkloadRows {
  std::int64_t seq = 0, dim = 0;
  std::int64_t count = 1;
  bool operator==(const WorkloadRows&) const = default;
};
// moe: the fused-MoE layers' expert GEMMs; zipf (the project's optional addition, absent: 0) the
// routing's skew, as FusedMoe takes it; ep (likewise, absent: 1) the expert-parallel ranks, each
// holding experts / ep whole experts (FusedMoe::expert_parallel).
struct WorkloadMoe {
  std::int64_t tokens = 0, experts = 0, top_k = 0, hidden = 0, intermediate = 0;
  std::int64_t count = 1;
  double zipf = 0;
  std::int64_t ep = 1;
  bool operator==(const WorkloadMoe&) const = default;
};
// A transfer between GPUs. Published: {name, type, volume_bytes, count}; `type` is
// "collective" (all_reduce, all_gather, reduce_scatter, all_to_all among the tensor-parallel
// group) or "p2p" (send_recv: the activations handed from one pipeline stage to the next).
// `ranks` is the project's optional addition; absent, the tensor-parallel size for a
// collective and 2 for a p2p transfer.
struct WorkloadCollective {
  std::string name = "all_reduce";
  double bytes = 0;  // "volume_bytes": each rank's buffer, or what one send moves
  int ranks = 0;
  std::int64_t count = 1;
  bool operator==(const WorkloadCollective&) const = default;
};
struct WorkloadOperators {
  std::vector<WorkloadGemm> gemm;
  std::optional<WorkloadAttention> attention;
  std::optional<WorkloadRows> rmsnorm;
  std::optional<WorkloadRows> siluandmul;
  std::optional<WorkloadMoe> moe;
  std::vector<WorkloadCollective> communication;
  bool operator==(const WorkloadOperators&) const = default;
};

struct WorkloadIteration {
  std::int64_t iteration = 0;
  Phase phase = Phase::prefill;
  std::vector<std::int64_t> q_lengths, kv_lengths;  // per request: new tokens, tokens attended
  // Optional (the project's "request_ids"): which request each entry is, as generate_workload
  // knows it; empty when the file does not say (requests are then followed by KV length).
  std::vector<std::int64_t> request_ids;
  WorkloadOperators operators;
  std::int64_t batch_size() const { return static_cast<std::int64_t>(q_lengths.size()); }
  std::int64_t num_tokens() const;
  bool operator==(const WorkloadIteration&) const = default;
};

struct Workload {
  std::string model;
  ModelParams model_params;
  int tp_size = 1;
  int pp_size = 1;
  DType dtype = DType::bf16;
  std::vector<WorkloadIteration> iterations;
  bool operator==(const Workload&) const = default;
};

// The JSON layout of the published method's workloads, read and written field for field (see
// docs/formats.md, "Workload"); the project's additions (dtype, attention impl,
// communication ranks) are optional. Reading checks every field and names the one that is
// wrong ("iterations[3].operators.gemm[1].M must be a positive integer, got -4").
//
// Pipeline parallelism (pp_size > 1): an iteration's operators are those of every stage, in
// the order the stages run (counts over all layers), with one send_recv per stage boundary.
// Without micro-batch interleaving (SGLang, and vLLM's default for one batch) the stages of an
// iteration run one after another, so its time is the sum over the stages: the same sum as
// over the listed operators.
Workload workload_from_json(std::string_view json_text);
Workload load_workload(const std::filesystem::path& path);
std::string to_json(const Workload& workload);
// The same text as to_json, written an iteration at a time (a long run's workload is hundreds of
// megabytes as text, several times that as a tree).
void write_json(std::ostream& out, const Workload& workload);

// One kernel of an iteration with how often it runs.
struct WorkloadKernel {
  std::string name;
  Kernel kernel;
  std::int64_t count = 1;
};
// The kernels an iteration's operators stand for, in the workload's dtype.
std::vector<WorkloadKernel> iteration_kernels(const WorkloadIteration& iteration, DType dtype);

// ---- Generating a workload ----------------------------------------------------------------

// The model's shape from a Hugging Face config.json: Llama, Qwen2/Qwen3, Mistral (dense) and
// Mixtral, Qwen2-MoE / Qwen3-MoE (experts). Throws pipeweave::Error naming what is missing or
// what the library does not model (DeepSeek's multi-head latent attention, for one).
ModelParams model_params_from_hf_config(std::string_view json_text);
ModelParams load_hf_config(const std::filesystem::path& config_json);

// One request of a trace: prompt tokens, then one decode iteration per further output token.
struct TraceRequest {
  std::int64_t prefill_tokens = 0;
  std::int64_t decode_tokens = 0;  // decode iterations this request takes part in
  std::int64_t output_tokens = 0;  // tokens it returns (the first comes from its prefill)
};
// The most tokens one request may have (prompt, decode steps, output): 2^24, past the longest
// context of any public model (10M tokens); beyond, a count is a mistake, not a request.
inline constexpr std::int64_t kMaxRequestTokens = std::int64_t{1} << 24;
// The most iterations a trace may schedule into one workload: each holds its batch's lengths
// and operators, so a workload of many millions would take gigabytes. A longer trace is run in
// parts (a published day of traffic, 100k requests, makes about 50k).
inline constexpr std::int64_t kMaxWorkloadIterations = 1'000'000;
// CSV with a header naming num_prefill_tokens, num_decode_tokens and output_tokens (other
// columns ignored), each at most kMaxRequestTokens (output_tokens one more: the prefill's token
// and one per decode step). Errors name the line and column.
std::vector<TraceRequest> trace_from_csv(std::string_view csv_text, std::string_view source = "trace");
std::vector<TraceRequest> load_trace(const std::filesystem::path& csv_path);

// A serving run's iterations as measured, to hold predictions against: CSV with a header naming
// iteration and measured_us (other columns ignored); iteration -> microseconds. Errors name the
// line and column; a file without a row is refused.
std::map<std::int64_t, double> measured_iterations_from_csv(std::string_view csv_text, const std::string& source);
std::map<std::int64_t, double> load_measured_iterations(const std::filesystem::path& csv_path);

// Continuous batching as vLLM and SGLang do it; every request is waiting at the start.
//  - chunked_prefill (vLLM's default): each iteration first gives every running request its
//    decode token, then fills the rest of max_batched_tokens with prompt tokens, splitting a
//    prompt across iterations when it does not fit (mixed iterations);
//  - without it (SGLang's default, vLLM's before chunking): when a waiting prompt fits in
//    max_batched_tokens (any prompt fits an empty batch) the iteration runs prompts only,
//    as many whole ones as fit; otherwise it runs the decodes.
// max_sequences caps the requests that run at once.
struct SchedulerPolicy {
  std::int64_t max_batched_tokens = 8192;
  std::int64_t max_sequences = 256;
  bool chunked_prefill = true;
  void validate() const;
};

// How the model is spread over GPUs and run.
struct Deployment {
  int tp = 1;  // tensor parallelism: each layer's heads and MLP width split over tp GPUs
  int pp = 1;  // pipeline parallelism: the layers cut into pp stages of consecutive layers
  DType dtype = DType::bf16;
  // The attention kernels the engine runs (the workload's attention_type: fa2_ragged for
  // prompts and fa2_paged for decode, or fa3_*); none: the phase only, and the library's
  // default for the GPU at prediction time.
  std::optional<AttentionImpl> attention_impl;
  // Mixture-of-experts layers expert-parallel over the tensor-parallel ranks (vLLM's
  // --enable-expert-parallel): each rank holds num_experts / tp whole experts, every token's
  // rows on every rank, the layer's output all-reduced as under tensor parallelism; false: each
  // expert's intermediate width split over the ranks.
  bool expert_parallel = false;
  void validate() const;
};

// The iterations a trace runs as: per GPU, per layer the input RMSNorm, QKV projection,
// attention, output projection, all-reduce (tp > 1), post-attention RMSNorm, gate-up
// projection, SiLU-and-mul (or the fused MoE), down projection, all-reduce; then the final
// norm and the LM head (vocabulary-parallel, its shards all-gathered) for each request that
// produces a token. Under pipeline parallelism each iteration also hands the hidden states
// and residual across each of the pp - 1 stage boundaries (send_recv); the stages run one
// after another (see the workload format above), so the operators are counted over all layers.
Workload generate_workload(std::string model, const ModelParams& params, std::span<const TraceRequest> trace,
                           const Deployment& deployment, const SchedulerPolicy& policy);

// ---- Predicting it ------------------------------------------------------------------------

// Time spent per iteration outside the kernels, stated by the caller on top of the engine's
// (EngineProfile): kernel launches the GPU waits for, scheduling, sampling. Zero by default.
struct IterationOverhead {
  double per_iteration_us = 0;
  double per_kernel_us = 0;  // for each kernel launched (count included)
  void validate() const;
};

// A GPU that stays busy with dense math reaches its power limit and lowers its clock. Most
// kernel models learn from kernels measured one at a time, after an idle flush (the networks for
// GEMMs without a config from GEMMs timed back to back inside a busy collection, whose clock holds
// a little of the loss: kServedLabelShare); a serving engine's prefill runs them back to back. The power drawn, and so the clock lost, follows the
// tensor load: in an iteration whose tensor utilisation is u (tensor-pipe work at the spec's
// rate over the iteration's predicted kernel time), every tensor-bound kernel takes
// 1 + (tensor_bound_slowdown - 1) x min(1, u / at_tensor_utilization) times its predicted time;
// other kernels keep theirs. With at_tensor_utilization = 0 the full slowdown applies at any
// load. 1 (the default of this struct): none. The GPU's own figures (GpuSpec::sustained_*:
// measured on the H100, 1.156 at 0.890, and the H200, 1.199 at 0.945; estimated from the power
// limit elsewhere) apply unless a prediction is given others (docs/experiments/sustained-load.md).
struct SustainedLoad {
  double tensor_bound_slowdown = 1;
  double at_tensor_utilization = 0;  // the utilisation the slowdown was measured at, in [0, 1]
  static SustainedLoad of(const GpuSpec& gpu) { return {gpu.sustained_slowdown(), gpu.sustained_utilization}; }
  double slowdown_at(double tensor_utilization) const;
  // One tensor-bound kernel launched over and over (a benchmark loop, such as the published fp8
  // split's): its own time is the iteration, so its utilisation is its tensor-pipe time at the
  // spec's rate (`tensor_us`) over its time alone, and back to back it takes
  // isolated_us x slowdown_at(tensor_us / isolated_us); without tensor work, isolated_us.
  // isolated_us inverts that exactly.
  double back_to_back_us(double isolated_us, double tensor_us) const;
  double isolated_us(double back_to_back_us, double tensor_us) const;
  // A network trained on served rows (LabelProtocol::served: back to back inside a busy
  // collection) answers at a clock that already holds this share of the slowdown: measured on two
  // H100s, one Llama-3-8B layer's four prefill GEMMs took 1.8% and 1.0% longer inside a served
  // collection than alone, where 2,000 back to back they took 15.7% and 15.6% longer (shares 0.116
  // and 0.061, their mean; docs/experiments/sustained-load.md, "Against the served protocol");
  // taken for every GPU.
  static constexpr double kServedLabelShare = 0.089;
  // What a served label's time already holds of the slowdown: 1 + kServedLabelShare x (F - 1).
  // A served tensor-bound kernel takes slowdown_at(u) / this times its predicted time (below 1 at
  // light load, whose clock is higher than the label's).
  double served_label_slowdown() const { return 1 + kServedLabelShare * (tensor_bound_slowdown - 1); }
  void validate() const;
};

// What a serving engine adds to each iteration around the kernels a workload lists. Every
// figure names its source (docs/experiments/e2e-published.md):
//  - host time per iteration that the GPU waits for: building the batch's inputs, launching,
//    sampling the next tokens, synchronising (iteration_us);
//  - the gap between consecutive kernels on the GPU (kernel_gap_us), and, for iterations not
//    replayed from a CUDA graph, the host's cost to launch each kernel (eager_launch_us): such
//    an iteration takes the longer of the GPU's time and the host's;
//  - decode iterations of at most cuda_graph_max_batch requests replay a CUDA graph;
//  - kernels the engine runs that the published workloads do not list, per layer: the rotary
//    embedding of the queries and keys and the write of the new keys and values into the KV
//    cache (and, for Qwen3 models, the RMSNorm of each query and key head);
//  - decode attention: both engines serve prompts and decode with one attention backend, so
//    decode iterations run the implementation the run's prompt attention names (a published
//    SGLang FlashAttention-3 run lists its decode as fa2_paged);
//  - FlashAttention-3 is built for Hopper alone: off Hopper the engines' attention backends run
//    FlashAttention-2 where a workload names FlashAttention-3 (flash2_off_hopper; vLLM's
//    flash-attention backend picks its version by architecture). Without it such a workload is
//    an error on a GPU that is not a Hopper.
struct EngineProfile {
  std::string name = "none";
  double iteration_us = 0;
  double kernel_gap_us = 0;
  double eager_launch_us = 0;
  std::int64_t cuda_graph_max_batch = 0;
  bool engine_kernels = false;
  bool decode_attention_follows_prompt = false;
  bool flash2_off_hopper = false;
  std::string source = "nothing added: the workload's kernels alone";

  static EngineProfile none() { return {}; }
  static EngineProfile sglang();
  static EngineProfile vllm();
  // "sglang", "vllm" or "none"; throws pipeweave::Error naming the choices.
  static EngineProfile named(std::string_view name);
  void validate() const;
};

struct WorkloadOptions {
  EngineProfile engine = EngineProfile::sglang();
  std::optional<SustainedLoad> sustained;  // none: the GPU spec's own
  IterationOverhead extra;                 // the caller's, on top of the engine's
  // Threads that predict the iterations at once (the calling one among them); 0: one per core
  // this process may run on.
  // The prediction is the same to the last bit for any count.
  int threads = 1;
};

struct IterationTime {
  std::int64_t iteration = 0;
  Phase phase = Phase::prefill;
  std::int64_t num_tokens = 0;
  double kernels_us = 0;   // the kernels' predicted time, sustained-load slowdown included
  double overhead_us = 0;  // everything else: the engine's and the caller's terms
  std::int64_t launches = 0;
  double extrapolated_us = 0;  // the part of kernels_us predicted outside the models' training (Prediction::extrapolated)
  double served_us = 0;  // the part of kernels_us answered from served rows (Prediction::protocol)
  double total_us() const { return kernels_us + overhead_us; }
};

struct OperatorTime {
  std::string name;  // e.g. qkv_proj, attention, all_reduce, engine_overhead
  double us = 0;     // over the whole run
  std::int64_t launches = 0;
};

// One request's times, every request arriving at the start of the run: time to its first token
// (the end of the iteration that holds its last prompt tokens) and time per output token after
// that (the rest of its decode iterations, over their count; 0 when it decodes none).
// Requests are followed through the iterations by their KV lengths (a decode entry continues
// the request whose KV was one shorter; a prompt chunk whose KV exceeds its new tokens
// continues a prompt; of several candidates, the one seen last, then the one that came first).
struct RequestTime {
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  double time_to_first_token_us = 0;
  double time_per_output_token_us = 0;
  double finish_us = 0;
  // Already running at the workload's first iteration (its first entry continues a context):
  // prompt_tokens is that context, output_tokens the tokens seen, and neither time is known
  // (0, and left out of the percentiles).
  bool started_before = false;
};

struct Percentiles {
  double median = 0, p90 = 0;
};

struct WorkloadPrediction {
  std::vector<IterationTime> iterations;
  std::vector<OperatorTime> operators;  // largest first
  std::vector<RequestTime> requests;
  double prefill_us = 0;                  // iterations that run prompt tokens (prefill and mixed)
  double median_decode_iteration_us = 0;  // 0 when no iteration is decode-only
  double total_us = 0;
  double overhead_us = 0;  // the part of total_us that is not kernels
  double extrapolated_us = 0;  // the part predicted outside the models' training (IterationTime::extrapolated_us)
  double served_us = 0;        // the part answered from served rows (IterationTime::served_us)
  Percentiles time_to_first_token_us, time_per_output_token_us;
  EngineProfile engine;
  SustainedLoad sustained;
};

WorkloadPrediction predict_workload(const Predictor& predictor, const Workload& workload, const GpuSpec& gpu,
                                    const WorkloadOptions& options = {});

// A trace's serving run predicted as it is scheduled: the same answer, to the last bit, as
// predict_workload(predictor, generate_workload(model, params, trace, deployment, policy), gpu,
// options) with `adjust` applied to every iteration in between, without ever holding the whole
// workload (a 100,000-request trace is a workload of about a gigabyte). Iterations are scheduled
// 1,024 at a time (64 per thread past 16 threads); with options.threads other than 1, the next
// block is scheduled on a thread of its own while the predictors work through this one. `adjust` (may be empty) changes each
// iteration as it is scheduled (on that thread), the same way for every iteration (the attention
// kernel the engine runs, the routing's skew); decode attention that follows the prompt's
// (EngineProfile::decode_attention_follows_prompt) follows the first block's. The same errors as
// the two calls, though where several inputs are wrong another may be reported first: the options
// are checked before any iteration is scheduled, and each block is checked and predicted before
// the next is scheduled.
WorkloadPrediction predict_trace(const Predictor& predictor, std::string model, const ModelParams& params,
                                 std::span<const TraceRequest> trace, const Deployment& deployment, const SchedulerPolicy& policy,
                                 const GpuSpec& gpu, const WorkloadOptions& options = {},
                                 const std::function<void(WorkloadIteration&)>& adjust = {});

}  // namespace pipeweave
