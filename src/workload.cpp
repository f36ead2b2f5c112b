// Workloads: the published JSON layout, generation from a model config and a request trace
// under continuous batching, and the predicted time of a run.
#include "pipeweave/workload.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#if defined(__linux__)
#include <sched.h>
#endif
#include <nlohmann/json.hpp>

#include "csv_support.hpp"
#include "json_support.hpp"
#include "statistics.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"

namespace pipeweave {
namespace {

using detail::Fields;
using nlohmann::json;
using nlohmann::ordered_json;  // written in the published files' field order

constexpr std::string_view kPhaseNames[] = {"prefill", "decode", "mixed"};

// SGLang's engine terms, fitted on the published H100 runs (data/e2e/published/fit_engine.py;
// docs/experiments/e2e-published.md). The host's cost per eager launch
// is not fitted (every published prompt iteration keeps the GPU busier than the host): PyTorch's
// eager dispatch of a small op, about 6 us, an estimate.
constexpr double kSglangIterationUs = 492;
constexpr double kSglangKernelGapUs = 0.63;
constexpr double kEagerLaunchUs = 6;
constexpr const char* kSglangSource =
    "SGLang (bench_one_batch): 492 us per iteration and 0.63 us between kernels, fitted to the median decode iteration of "
    "the 8 published H100 runs (TP 1, 2, 4; data/e2e/published/fit_engine.py); 6 us per eager launch, an estimate; "
    "CUDA graphs for decode batches up to 160 (SGLang's default on 80 GB boards)";

Phase phase_from(const std::string& text, const std::string& field) {
  for (std::size_t i = 0; i < std::size(kPhaseNames); ++i)
    if (text == kPhaseNames[i]) return static_cast<Phase>(i);
  detail::fail_field(field, detail::quoted(text), "must be prefill, decode or mixed");
}

CollectiveKind collective_kind(const std::string& name, const std::string& field) {
  for (CollectiveKind kind : kCollectiveKinds)
    if (name == to_string(kind)) return kind;
  detail::fail_field(field, detail::quoted(name), "must be all_reduce, all_gather, reduce_scatter, all_to_all or send_recv");
}

// The published `type` of a transfer: send_recv is point to point, the rest collectives.
std::string_view transfer_type(CollectiveKind kind) { return kind == CollectiveKind::send_recv ? "p2p" : "collective"; }

constexpr std::string_view kGemmTypes[] = {"ColumnParallelLinear", "RowParallelLinear", "MergedColumnParallelLinear",
                                           "QKVParallelLinear",    "ReplicatedLinear",  "Linear"};

DType dtype_from(const std::string& text, const std::string& field) {
  for (DType dtype : {DType::fp16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2})
    if (text == to_string(dtype)) return dtype;
  detail::fail_field(field, detail::quoted(text), "must be fp16, bf16, fp8_e4m3 or fp8_e5m2");
}

// A GPU count: a positive integer no larger than any machine has (int elsewhere).
int gpu_count(const Fields& f, const std::string& key, const std::string& field) {
  const std::int64_t value = f.whole(key);
  if (value > 65536) detail::fail_field(field, value, "must be at most 65536");
  return static_cast<int>(value);
}

// Bytes as the published files write them: an integer when whole.
ordered_json byte_count(double bytes) {
  if (bytes == std::floor(bytes) && bytes < 9e15) return static_cast<std::int64_t>(bytes);
  return bytes;
}

// Each degree is bounded; so is the run's GPU count, their product (TP 65536 x PP 4096 was
// reported as a run on 268,435,456 GPUs), for a trace's run and a workload file's alike.
void check_gpu_total(const std::string& pp_field, std::int64_t pp, const std::string& tp_field, std::int64_t tp) {
  if (tp * pp > 65536)
    detail::fail_field(pp_field, pp, "times " + tp_field + " (" + std::to_string(tp) + ") must be at most 65536 GPUs, past any deployment");
}

std::int64_t sum(const std::vector<std::int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{0});
}

ModelParams read_params(const json& object) {
  const Fields f(object, "model_params.");
  f.only({"hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
          "num_hidden_layers", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
          "shared_expert_intermediate_size", "max_model_len"});
  ModelParams p;
  p.hidden_size = f.whole("hidden_size");
  p.num_attention_heads = f.whole("num_attention_heads");
  p.num_key_value_heads = f.whole("num_key_value_heads");
  p.head_dim = f.whole("head_dim");
  p.intermediate_size = f.whole("intermediate_size");
  p.vocab_size = f.whole("vocab_size");
  p.num_hidden_layers = f.whole("num_hidden_layers");
  if (f.has("num_experts")) p.num_experts = f.whole("num_experts", 0);
  if (f.has("num_experts_per_tok")) p.num_experts_per_tok = f.whole("num_experts_per_tok", 0);
  if (f.has("moe_intermediate_size")) p.moe_intermediate_size = f.whole("moe_intermediate_size", 0);
  if (f.has("shared_expert_intermediate_size"))
    p.shared_expert_intermediate_size = f.whole("shared_expert_intermediate_size", 0);
  if (f.has("max_model_len")) p.max_model_len = f.whole("max_model_len", 0);
  p.validate();
  return p;
}

// An operator's name: printed in the operator table and written again as it is, so printable
// text without control characters (a newline or an escape sequence broke the table and reached
// the terminal raw), of at most 256 bytes.
std::string operator_name(const Fields& fields, const std::string& field) {
  std::string name = fields.text("name");
  if (!detail::is_printable(name))
    detail::fail_field(field, detail::quoted(detail::printable(name, 80)), "must be printable text, without control characters");
  if (name.size() > 256) detail::fail_field(field, detail::quoted(detail::printable(name, 80)), "must be at most 256 bytes");
  return name;
}

std::vector<WorkloadGemm> read_gemms(const json& list, const std::string& prefix) {
  if (!list.is_array()) detail::fail_field(prefix + "gemm", detail::excerpt(list), "must be an array");
  std::vector<WorkloadGemm> gemms;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = prefix + "gemm[" + std::to_string(i) + "].";
    const Fields g(list[i], at);
    g.only({"name", "type", "M", "N", "K", "count"});
    WorkloadGemm gemm{operator_name(g, at + "name"), "", g.whole("M"), g.whole("N"), g.whole("K"), g.whole("count")};
    if (g.has("type")) {
      gemm.type = g.text("type");
      if (std::find(std::begin(kGemmTypes), std::end(kGemmTypes), gemm.type) == std::end(kGemmTypes))
        detail::fail_field(at + "type", detail::quoted(gemm.type),
                           "must be ColumnParallelLinear, RowParallelLinear, MergedColumnParallelLinear, "
                           "QKVParallelLinear, ReplicatedLinear or Linear");
    }
    gemms.push_back(std::move(gemm));
  }
  return gemms;
}

WorkloadAttention read_attention(const json& object, const std::string& prefix) {
  const Fields a(object, prefix + "attention.");
  a.only({"attention_type", "bs", "q_lengths", "kv_lengths", "nh", "nkv", "hd", "count", "impl"});
  WorkloadAttention attention{a.text("attention_type"), a.wholes("q_lengths"), a.wholes("kv_lengths"),
                              a.whole("nh"),           a.whole("nkv"),       a.whole("hd"),
                              a.whole("count"),        std::nullopt};
  (void)attention_type_from(attention.attention_type, prefix + "attention.attention_type");
  if (a.has("impl")) {
    const std::string impl = a.text("impl");
    if (impl == "flash2") attention.impl = AttentionImpl::flash2;
    else if (impl == "flash3") attention.impl = AttentionImpl::flash3;
    else detail::fail_field(prefix + "attention.impl", detail::quoted(impl), "must be flash2 or flash3");
  }
  if (a.whole("bs") != static_cast<std::int64_t>(attention.q_lengths.size()))
    detail::fail_field(prefix + "attention.bs", a.whole("bs"),
                       "must equal the length of q_lengths (" + std::to_string(attention.q_lengths.size()) + ")");
  if (attention.kv_lengths.size() != attention.q_lengths.size())
    detail::fail_field(prefix + "attention.kv_lengths", attention.kv_lengths.size(),
                       "must have as many entries as q_lengths (" + std::to_string(attention.q_lengths.size()) + ")");
  return attention;
}

// The rows of an rmsnorm or siluandmul entry (`name`).
WorkloadRows read_rows(const json& object, const std::string& prefix, std::string_view name) {
  const Fields r(object, prefix + std::string(name) + ".");
  r.only({"seq", "dim", "count"});
  const WorkloadRows rows{r.whole("seq"), r.whole("dim"), r.whole("count")};
  if (name == "siluandmul" && rows.dim % 2 != 0)
    detail::fail_field(prefix + "siluandmul.dim", rows.dim, "must be even: the gate and up halves of the input, side by side");
  return rows;
}

WorkloadMoe read_moe(const json& object, const std::string& prefix) {
  const Fields m(object, prefix + "moe.");
  m.only({"tokens", "experts", "top_k", "hidden", "intermediate", "count", "zipf", "ep"});
  WorkloadMoe moe{m.whole("tokens"), m.whole("experts"), m.whole("top_k"),
                  m.whole("hidden"), m.whole("intermediate"), m.whole("count")};
  if (m.has("zipf")) {
    moe.zipf = m.number("zipf");
    if (!valid_zipf(moe.zipf)) detail::fail_field(prefix + "moe.zipf", moe.zipf, "must be " + std::string(kZipfRange));
  }
  if (m.has("ep")) {
    moe.ep = m.whole("ep");
    if (moe.experts % moe.ep != 0)
      detail::fail_field(prefix + "moe.ep", moe.ep, "must divide moe.experts (" + std::to_string(moe.experts) + ") into equal shares");
  }
  return moe;
}

// One entry of "communication" (`at`: its field path, ending in '.').
WorkloadCollective read_collective(const json& object, const std::string& at, int tp_size) {
  const Fields c(object, at);
  // "bytes" is the name this project's files used before they followed the published layout.
  c.only({"name", "type", "volume_bytes", "bytes", "ranks", "count"});
  WorkloadCollective collective;
  collective.name = c.text("name");
  const CollectiveKind kind = collective_kind(collective.name, at + "name");
  if (c.has("type") && c.text("type") != transfer_type(kind))
    detail::fail_field(at + "type", detail::quoted(c.text("type")),
                       "must be \"" + std::string(transfer_type(kind)) + "\" for " + collective.name);
  if (c.has("volume_bytes") == c.has("bytes"))
    throw InvalidInput(at + "volume_bytes " + (c.has("bytes") ? "and bytes are both given" : "is missing"));
  collective.bytes = c.number(c.has("volume_bytes") ? "volume_bytes" : "bytes");
  detail::require_positive(at + (c.has("volume_bytes") ? "volume_bytes" : "bytes"), collective.bytes);
  const int default_ranks = kind == CollectiveKind::send_recv ? 2 : tp_size;
  collective.ranks = c.has("ranks") ? gpu_count(c, "ranks", at + "ranks") : default_ranks;
  if (collective.ranks < 2)
    detail::fail_field(at + "ranks", collective.ranks,
                       c.has("ranks") ? "must be >= 2" : "must be >= 2 (absent: the workload's tp_size)");
  if (kind == CollectiveKind::send_recv && collective.ranks != 2)
    detail::fail_field(at + "ranks", collective.ranks, "must be 2 for send_recv (one rank sends, one receives)");
  collective.count = c.whole("count");
  return collective;
}

std::vector<WorkloadCollective> read_communication(const json& list, const std::string& prefix, int tp_size) {
  if (!list.is_array()) detail::fail_field(prefix + "communication", detail::excerpt(list), "must be an array");
  std::vector<WorkloadCollective> collectives;
  for (std::size_t i = 0; i < list.size(); ++i)
    collectives.push_back(read_collective(list[i], prefix + "communication[" + std::to_string(i) + "].", tp_size));
  return collectives;
}

// An iteration's operators, each kind read by its own reader above, in the order the fields are checked.
WorkloadOperators read_operators(const json& object, const std::string& prefix, int tp_size) {
  const Fields f(object, prefix);
  f.only({"gemm", "attention", "rmsnorm", "siluandmul", "moe", "communication"});
  WorkloadOperators ops;
  if (f.has("gemm")) ops.gemm = read_gemms(f.get("gemm"), prefix);
  if (f.has("attention")) ops.attention = read_attention(f.get("attention"), prefix);
  if (f.has("rmsnorm")) ops.rmsnorm = read_rows(f.get("rmsnorm"), prefix, "rmsnorm");
  if (f.has("siluandmul")) ops.siluandmul = read_rows(f.get("siluandmul"), prefix, "siluandmul");
  if (f.has("moe")) ops.moe = read_moe(f.get("moe"), prefix);
  if (f.has("communication")) ops.communication = read_communication(f.get("communication"), prefix, tp_size);
  return ops;
}

ordered_json operators_json(const WorkloadOperators& ops, int tp_size) {
  ordered_json out = ordered_json::object();
  ordered_json gemms = ordered_json::array();
  for (const WorkloadGemm& g : ops.gemm) {
    ordered_json gemm = {{"name", g.name}};
    if (!g.type.empty()) gemm["type"] = g.type;
    gemm.update({{"M", g.m}, {"N", g.n}, {"K", g.k}, {"count", g.count}});
    gemms.push_back(std::move(gemm));
  }
  out["gemm"] = std::move(gemms);
  if (ops.attention) {
    const WorkloadAttention& a = *ops.attention;
    out["attention"] = {{"attention_type", a.attention_type}, {"bs", a.q_lengths.size()}, {"q_lengths", a.q_lengths},
                        {"kv_lengths", a.kv_lengths}, {"nh", a.nh}, {"nkv", a.nkv}, {"hd", a.hd}, {"count", a.count}};
    if (a.impl) out["attention"]["impl"] = to_string(*a.impl);
  }
  if (ops.rmsnorm) out["rmsnorm"] = {{"seq", ops.rmsnorm->seq}, {"dim", ops.rmsnorm->dim}, {"count", ops.rmsnorm->count}};
  if (ops.siluandmul)
    out["siluandmul"] = {{"seq", ops.siluandmul->seq}, {"dim", ops.siluandmul->dim}, {"count", ops.siluandmul->count}};
  if (ops.moe)
    out["moe"] = {{"tokens", ops.moe->tokens}, {"experts", ops.moe->experts}, {"top_k", ops.moe->top_k},
                  {"hidden", ops.moe->hidden}, {"intermediate", ops.moe->intermediate}, {"count", ops.moe->count}};
  if (ops.moe && ops.moe->zipf != 0) out["moe"]["zipf"] = ops.moe->zipf;
  if (ops.moe && ops.moe->ep != 1) out["moe"]["ep"] = ops.moe->ep;
  ordered_json transfers = ordered_json::array();
  for (const WorkloadCollective& c : ops.communication) {
    const CollectiveKind kind = collective_kind(c.name, "communication.name");
    ordered_json transfer = {{"name", c.name}, {"type", transfer_type(kind)}, {"volume_bytes", byte_count(c.bytes)}, {"count", c.count}};
    if (c.ranks != (kind == CollectiveKind::send_recv ? 2 : tp_size)) transfer["ranks"] = c.ranks;
    transfers.push_back(std::move(transfer));
  }
  out["communication"] = std::move(transfers);
  return out;
}

// ---- Generation ----------------------------------------------------------------------------

// One request's progress through the scheduler.
struct Live {
  std::int64_t prompt = 0, prefilled = 0, decodes = 0, decoded = 0;
  bool prefill_done() const { return prefilled == prompt; }
  bool finished() const { return prefill_done() && decoded == decodes; }
};

// One iteration's batch: per request, new tokens and tokens attended; rows needing logits.
struct Batch {
  std::vector<std::int64_t> q, kv, ids;
  std::int64_t prompt_tokens = 0, decode_tokens = 0, logits = 0;
};

WorkloadOperators layer_operators(const ModelParams& p, const Batch& batch, const Deployment& deployment, Phase phase) {
  const int tp = deployment.tp;
  const std::int64_t tokens = sum(batch.q), layers = p.num_hidden_layers;
  const std::int64_t heads = p.num_attention_heads / tp;
  const std::int64_t kv_heads = std::max<std::int64_t>(1, p.num_key_value_heads / tp);  // replicated when fewer than tp
  WorkloadOperators ops;
  ops.gemm.push_back({"qkv_proj", "ColumnParallelLinear", tokens, (heads + 2 * kv_heads) * p.head_dim, p.hidden_size, layers});
  ops.gemm.push_back({"o_proj", "RowParallelLinear", tokens, p.hidden_size, heads * p.head_dim, layers});
  if (p.num_experts == 0) {
    ops.gemm.push_back({"gate_up_proj", "MergedColumnParallelLinear", tokens, 2 * p.intermediate_size / tp, p.hidden_size, layers});
    ops.gemm.push_back({"down_proj", "RowParallelLinear", tokens, p.hidden_size, p.intermediate_size / tp, layers});
    ops.siluandmul = WorkloadRows{tokens, 2 * p.intermediate_size / tp, layers};
  } else {
    ops.gemm.push_back({"router", "ReplicatedLinear", tokens, p.num_experts, p.hidden_size, layers});
    ops.moe = WorkloadMoe{tokens, p.num_experts, p.num_experts_per_tok, p.hidden_size, p.moe_intermediate_size / tp, layers};
    if (deployment.expert_parallel)  // whole experts, a share of them per rank
      ops.moe->intermediate = p.moe_intermediate_size, ops.moe->ep = tp;
    if (p.shared_expert_intermediate_size > 0) {
      const std::int64_t shared = p.shared_expert_intermediate_size / tp;
      ops.gemm.push_back({"shared_gate_up_proj", "MergedColumnParallelLinear", tokens, 2 * shared, p.hidden_size, layers});
      ops.gemm.push_back({"shared_down_proj", "RowParallelLinear", tokens, p.hidden_size, shared, layers});
      ops.siluandmul = WorkloadRows{tokens, 2 * shared, layers};
    }
  }
  if (batch.logits > 0)  // vocabulary-parallel: each GPU its shard of the vocabulary
    ops.gemm.push_back({"lm_head", "Linear", batch.logits, (p.vocab_size + tp - 1) / tp, p.hidden_size, 1});
  const std::string attention_type = deployment.attention_impl
                                         ? attention_type_name(*deployment.attention_impl, phase == Phase::decode)
                                         : std::string(to_string(phase));
  ops.attention = WorkloadAttention{attention_type, batch.q, batch.kv, heads, kv_heads, p.head_dim, layers, std::nullopt};
  ops.rmsnorm = WorkloadRows{tokens, p.hidden_size, 2 * layers + 1};  // two per layer and the final norm
  // Activations between layers are 16-bit whatever the GEMMs' type.
  const double activation_bytes = static_cast<double>(tokens * p.hidden_size) * 2;
  if (tp > 1) {
    ops.communication.push_back({"all_reduce", activation_bytes, tp, 2 * layers});
    if (batch.logits > 0)  // the LM head's vocabulary shards gathered for sampling (bf16 logits)
      ops.communication.push_back({"all_gather", static_cast<double>(batch.logits * p.vocab_size) * 2, tp, 1});
  }
  // Each stage boundary hands over the hidden states and the residual (vLLM's and SGLang's
  // intermediate tensors), 16-bit.
  if (deployment.pp > 1) ops.communication.push_back({"send_recv", 2 * activation_bytes, 2, deployment.pp - 1});
  return ops;
}

}  // namespace

std::string_view to_string(Phase phase) { return kPhaseNames[static_cast<std::size_t>(phase)]; }

AttentionType attention_type_from(std::string_view attention_type, const std::string& field) {
  if (attention_type == "fa3_ragged") return {AttentionImpl::flash3, false};
  if (attention_type == "fa2_ragged") return {AttentionImpl::flash2, false};
  if (attention_type == "fa2_paged") return {AttentionImpl::flash2, true};
  if (attention_type == "fa3_paged") return {AttentionImpl::flash3, true};
  for (std::string_view phase : kPhaseNames)
    if (attention_type == phase) return {std::nullopt, false};
  detail::fail_field(field, detail::quoted(attention_type),
                     "must be fa3_ragged, fa2_ragged, fa2_paged, fa3_paged, prefill, decode or mixed");
}

std::string attention_type_name(AttentionImpl impl, bool paged) {
  return std::string(impl == AttentionImpl::flash2 ? "fa2" : "fa3") + (paged ? "_paged" : "_ragged");
}

void ModelParams::validate() const {
  detail::require_positive("model_params.hidden_size", hidden_size);
  detail::require_positive("model_params.num_attention_heads", num_attention_heads);
  detail::require_positive("model_params.num_key_value_heads", num_key_value_heads);
  if (num_attention_heads % num_key_value_heads != 0)
    detail::fail_field("model_params.num_key_value_heads", num_key_value_heads,
                       "must divide num_attention_heads (" + std::to_string(num_attention_heads) + ")");
  detail::require_positive("model_params.head_dim", head_dim);
  detail::require_positive("model_params.intermediate_size", intermediate_size);
  detail::require_positive("model_params.vocab_size", vocab_size);
  detail::require_positive("model_params.num_hidden_layers", num_hidden_layers);
  detail::require_non_negative("model_params.num_experts", num_experts);
  if (num_experts > 0) {
    if (num_experts_per_tok < 1 || num_experts_per_tok > num_experts)
      detail::fail_field("model_params.num_experts_per_tok", num_experts_per_tok,
                         "must be from 1 to num_experts (" + std::to_string(num_experts) + ")");
    detail::require_positive("model_params.moe_intermediate_size", moe_intermediate_size);
  }
  detail::require_non_negative("model_params.shared_expert_intermediate_size", shared_expert_intermediate_size);
  // Past any model by far, and small enough that no product the workload forms from them (a
  // layer's weights, a batch's tokens times the vocabulary) overflows 64 bits.
  detail::require_at_most("model_params.hidden_size", hidden_size, std::int64_t{1} << 24, "past any model");
  detail::require_at_most("model_params.num_attention_heads", num_attention_heads, 65536, "past any model");
  detail::require_at_most("model_params.head_dim", head_dim, 4096, "past any model");
  detail::require_at_most("model_params.intermediate_size", intermediate_size, std::int64_t{1} << 24, "past any model");
  detail::require_at_most("model_params.vocab_size", vocab_size, std::int64_t{1} << 26, "past any model");
  detail::require_at_most("model_params.num_hidden_layers", num_hidden_layers, 4096, "past any model");
  detail::require_at_most("model_params.num_experts", num_experts, 65536, "past any model");
  detail::require_at_most("model_params.moe_intermediate_size", moe_intermediate_size, std::int64_t{1} << 24, "past any model");
  detail::require_at_most("model_params.shared_expert_intermediate_size", shared_expert_intermediate_size, std::int64_t{1} << 24, "past any model");
  detail::require_non_negative("model_params.max_model_len", max_model_len);
  detail::require_at_most("model_params.max_model_len", max_model_len, std::int64_t{1} << 40, "past any model");
}

std::int64_t WorkloadIteration::num_tokens() const { return sum(q_lengths); }

namespace {

// Sizes beyond any real serving run, refused by name before they can overflow a product: an
// operator runs at most a million times an iteration, a dimension or length is at most 2^30.
constexpr std::int64_t kMaxCount = 1'000'000, kMaxSize = std::int64_t{1} << 30, kMaxHeads = 1'000'000;
using detail::require_at_most;

// A value past `most` refused with its field's name, which `name()` builds only then: the check
// runs on every workload predicted, and naming each field first cost more than predicting it.
template <typename Name>
void bounded(std::int64_t value, std::int64_t most, const Name& name) {
  if (value > most) require_at_most(name(), value, most);
}

// Whether every value is at most `most`, in one branch-free pass.
bool within(std::span<const std::int64_t> values, std::int64_t most) {
  std::int64_t largest = std::numeric_limits<std::int64_t>::min();
  for (const std::int64_t value : values) largest = std::max(largest, value);
  return largest <= most;
}

// A batch's query and KV lengths (lists of one length) at most kMaxSize: both pass in a pass each,
// and only where one fails are they walked again in order, for the first entry past the bound,
// named by name(list, index).
template <typename Name>
void bounded_lengths(const std::vector<std::int64_t>& q_lengths, const std::vector<std::int64_t>& kv_lengths, const Name& name) {
  if (within(q_lengths, kMaxSize) && within(kv_lengths, kMaxSize)) return;
  for (std::size_t r = 0; r < q_lengths.size(); ++r) {
    bounded(q_lengths[r], kMaxSize, [&] { return name("q_lengths", r); });
    bounded(kv_lengths[r], kMaxSize, [&] { return name("kv_lengths", r); });
  }
}

// No sequence of a workload whose model states its context (max_model_len) runs past it: a KV
// length counts every token in the cache.
void check_context(const Workload& w) {
  const std::int64_t context = w.model_params.max_model_len;
  if (context == 0) return;
  const auto check = [context](const std::vector<std::int64_t>& lengths, const auto& name) {
    for (std::size_t r = 0; r < lengths.size(); ++r)
      if (lengths[r] > context)
        detail::fail_field(name(r), lengths[r], "must be at most model_params.max_model_len (" + std::to_string(context) + ")");
  };
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    const std::string at = "iterations[" + std::to_string(i) + "].";
    check(w.iterations[i].kv_lengths, [&](std::size_t r) { return at + "kv_lengths[" + std::to_string(r) + "]"; });
    if (const auto& attention = w.iterations[i].operators.attention)
      check(attention->kv_lengths, [&](std::size_t r) { return at + "operators.attention.kv_lengths[" + std::to_string(r) + "]"; });
  }
}

// `iterations` are the workload's from index `first` on (a block of a run scheduled as predicted).
void check_sizes(std::span<const WorkloadIteration> iterations, std::size_t first = 0) {
  for (std::size_t i = first; i < first + iterations.size(); ++i) {
    const WorkloadIteration& it = iterations[i - first];
    const auto at = [i](std::string_view rest) { return "iterations[" + std::to_string(i) + "]." + std::string(rest); };
    const auto op = [&at](std::string_view rest) { return at("operators." + std::string(rest)); };
    const auto indexed = [](std::string_view list, std::size_t index, std::string_view rest = {}) {
      return std::string(list) + "[" + std::to_string(index) + "]" + std::string(rest);
    };
    // (A workload built in code, or changed by predict_trace's adjust, may hold lists of two lengths.)
    if (it.kv_lengths.size() != it.q_lengths.size())
      detail::fail_field(at("kv_lengths"), std::to_string(it.kv_lengths.size()) + " entries",
                         "must have one entry per q_lengths entry (" + std::to_string(it.q_lengths.size()) + ")");
    if (!it.request_ids.empty() && it.request_ids.size() != it.q_lengths.size())
      detail::fail_field(at("request_ids"), std::to_string(it.request_ids.size()) + " entries",
                         "must be empty or have one entry per q_lengths entry (" + std::to_string(it.q_lengths.size()) + ")");
    bounded_lengths(it.q_lengths, it.kv_lengths, [&](std::string_view list, std::size_t r) { return at(indexed(list, r)); });
    const WorkloadOperators& ops = it.operators;
    for (std::size_t g = 0; g < ops.gemm.size(); ++g) {
      const WorkloadGemm& gemm = ops.gemm[g];
      bounded(gemm.m, kMaxSize, [&] { return op(indexed("gemm", g, ".M")); });
      bounded(gemm.n, kMaxSize, [&] { return op(indexed("gemm", g, ".N")); });
      bounded(gemm.k, kMaxSize, [&] { return op(indexed("gemm", g, ".K")); });
      bounded(gemm.count, kMaxCount, [&] { return op(indexed("gemm", g, ".count")); });
    }
    if (ops.attention) {
      const WorkloadAttention& a = *ops.attention;
      if (a.kv_lengths.size() != a.q_lengths.size())
        detail::fail_field(op("attention.kv_lengths"), std::to_string(a.kv_lengths.size()) + " entries",
                           "must have one entry per attention.q_lengths entry (" + std::to_string(a.q_lengths.size()) + ")");
      bounded_lengths(a.q_lengths, a.kv_lengths,
                      [&](std::string_view list, std::size_t r) { return op(indexed("attention." + std::string(list), r)); });
      bounded(a.nh, kMaxHeads, [&] { return op("attention.nh"); });
      bounded(a.nkv, kMaxHeads, [&] { return op("attention.nkv"); });
      bounded(a.hd, kMaxHeads, [&] { return op("attention.hd"); });
      bounded(a.count, kMaxCount, [&] { return op("attention.count"); });
    }
    for (const auto& [name, rows] : {std::pair{"rmsnorm", &ops.rmsnorm}, std::pair{"siluandmul", &ops.siluandmul}})
      if (*rows) {
        const std::string_view family = name;
        bounded((*rows)->seq, kMaxSize, [&] { return op(std::string(family) + ".seq"); });
        bounded((*rows)->dim, kMaxSize, [&] { return op(std::string(family) + ".dim"); });
        bounded((*rows)->count, kMaxCount, [&] { return op(std::string(family) + ".count"); });
      }
    if (ops.moe) {
      const WorkloadMoe& m = *ops.moe;
      bounded(m.tokens, kMaxSize, [&] { return op("moe.tokens"); });
      bounded(m.experts, kMaxHeads, [&] { return op("moe.experts"); });
      bounded(m.top_k, kMaxHeads, [&] { return op("moe.top_k"); });
      bounded(m.hidden, kMaxSize, [&] { return op("moe.hidden"); });
      bounded(m.intermediate, kMaxSize, [&] { return op("moe.intermediate"); });
      bounded(m.count, kMaxCount, [&] { return op("moe.count"); });
      bounded(m.ep, kMaxHeads, [&] { return op("moe.ep"); });
    }
    for (std::size_t c = 0; c < ops.communication.size(); ++c) {
      bounded(ops.communication[c].count, kMaxCount, [&] { return op(indexed("communication", c, ".count")); });
      if (!(ops.communication[c].bytes <= 1e15))
        detail::fail_field(op(indexed("communication", c, ".volume_bytes")), ops.communication[c].bytes, "must be at most 1e15");
    }
  }
}

// A whole workload's limits: its sizes (check_sizes) and its context (check_context).
void check_limits(const Workload& w) {
  check_sizes(w.iterations);
  check_context(w);
}

// Pipeline stages hold whole layers: at most one stage a layer (`field` names the stages' count
// as the input does: a workload's pp_size, a deployment's pp).
void check_stages(std::string_view field, std::int64_t stages, const ModelParams& params) {
  if (stages > params.num_hidden_layers)
    detail::fail_field(field, stages,
                       "must be at most the number of layers (" + std::to_string(params.num_hidden_layers) + "): a stage holds whole layers");
}
// The heads split evenly over the tensor-parallel ranks (`field`: the TP degree's name where it was
// given; `params`: where the model's figures were, "" or "model_params.").
void check_heads_split(std::string_view field, int tp, const ModelParams& params, std::string_view where) {
  const std::string at(where);
  if (params.num_attention_heads % tp != 0)
    detail::fail_field(field, tp, "must divide " + at + "num_attention_heads (" + std::to_string(params.num_attention_heads) + ")");
  if (params.num_key_value_heads % tp != 0 && tp % params.num_key_value_heads != 0)
    detail::fail_field(field, tp,
                       "must divide " + at + "num_key_value_heads (" + std::to_string(params.num_key_value_heads) + ") or be a multiple of it");
}
}  // namespace

Workload workload_from_json(std::string_view json_text) {
  const json document = detail::parse_json(json_text, "workload");
  const Fields f(document, "");
  f.only({"model", "model_params", "tp_size", "pp_size", "dtype", "iterations"});
  Workload w;
  w.model = f.text("model");
  if (w.model.empty()) detail::fail_field("model", "\"\"", "must name the model (printed as \"<model> on <N> x <GPU>\")");
  if (!detail::is_printable(w.model))  // (printed and written again as it is)
    detail::fail_field("model", detail::quoted(detail::printable(w.model, 80)), "must be printable text, without control characters");
  w.model_params = read_params(f.get("model_params"));
  w.tp_size = gpu_count(f, "tp_size", "tp_size");
  w.pp_size = gpu_count(f, "pp_size", "pp_size");
  check_gpu_total("pp_size", w.pp_size, "tp_size", w.tp_size);
  check_stages("pp_size", w.pp_size, w.model_params);  // (as a trace's run refuses it)
  // The heads split over the tensor-parallel ranks, as --tp is held to on a trace (3 over 32 heads
  // was run as if it could be)
  check_heads_split("tp_size", w.tp_size, w.model_params, "model_params.");
  if (f.has("dtype")) w.dtype = dtype_from(f.text("dtype"), "dtype");
  const json& iterations = f.get("iterations");
  if (!iterations.is_array()) detail::fail_field("iterations", detail::excerpt(iterations), "must be an array");
  std::unordered_map<std::int64_t, std::size_t> numbered;  // iteration number -> index
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const std::string prefix = "iterations[" + std::to_string(i) + "].";
    const Fields it(iterations[i], prefix);
    it.only({"iteration", "phase", "batch_size", "q_lengths", "kv_lengths", "num_tokens", "request_ids", "operators"});
    WorkloadIteration iteration;
    iteration.iteration = it.whole("iteration", 0);
    iteration.phase = phase_from(it.text("phase"), prefix + "phase");
    iteration.q_lengths = it.wholes("q_lengths");
    iteration.kv_lengths = it.wholes("kv_lengths");
    if (iteration.kv_lengths.size() != iteration.q_lengths.size())
      detail::fail_field(prefix + "kv_lengths", iteration.kv_lengths.size(),
                         "must have as many entries as q_lengths (" + std::to_string(iteration.q_lengths.size()) + ")");
    // Each length within kMaxSize before any sum of them (num_tokens below) can wrap.
    bounded_lengths(iteration.q_lengths, iteration.kv_lengths,
                    [&](std::string_view list, std::size_t r) { return prefix + std::string(list) + "[" + std::to_string(r) + "]"; });
    // A sequence's KV length counts its new tokens (the attention operator's lists are held to the same).
    for (std::size_t r = 0; r < iteration.q_lengths.size(); ++r)
      if (iteration.kv_lengths[r] < iteration.q_lengths[r])
        detail::fail_field(prefix + "kv_lengths[" + std::to_string(r) + "]", iteration.kv_lengths[r],
                           "must be at least q_lengths[" + std::to_string(r) + "] (" + std::to_string(iteration.q_lengths[r]) +
                               "): the KV length counts the new tokens");
    if (it.has("request_ids")) {
      iteration.request_ids = it.wholes("request_ids", 0);
      if (iteration.request_ids.size() != iteration.q_lengths.size())
        detail::fail_field(prefix + "request_ids", iteration.request_ids.size(),
                           "must have as many entries as q_lengths (" + std::to_string(iteration.q_lengths.size()) + ")");
      for (std::size_t r = 0; r < iteration.request_ids.size(); ++r)
        if (iteration.request_ids[r] > 10'000'000)
          detail::fail_field(prefix + "request_ids[" + std::to_string(r) + "]", iteration.request_ids[r], "must be at most 10000000");
      std::vector<std::int64_t> ids = iteration.request_ids;  // (a request runs once in a batch)
      std::sort(ids.begin(), ids.end());
      if (const auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
        detail::fail_field(prefix + "request_ids", *twice, "must name each request once, but names this one twice");
    }
    if (it.whole("batch_size") != iteration.batch_size())
      detail::fail_field(prefix + "batch_size", it.whole("batch_size"),
                         "must equal the length of q_lengths (" + std::to_string(iteration.batch_size()) + ")");
    if (it.whole("num_tokens") != iteration.num_tokens())
      detail::fail_field(prefix + "num_tokens", it.whole("num_tokens"),
                         "must equal the sum of q_lengths (" + std::to_string(iteration.num_tokens()) + ")");
    iteration.operators = read_operators(it.get("operators"), prefix + "operators.", w.tp_size);
    // The parts of one iteration agree (every published workload's do): a decode step runs one new
    // token per sequence, the attention runs the iteration's sequences, and a dense model has no experts.
    if (iteration.phase == Phase::decode)
      for (std::size_t r = 0; r < iteration.q_lengths.size(); ++r)
        if (iteration.q_lengths[r] != 1)
          detail::fail_field(prefix + "q_lengths[" + std::to_string(r) + "]", iteration.q_lengths[r],
                             "must be 1 in a decode iteration (one new token per sequence; prefill or mixed otherwise)");
    if (const auto& attention = iteration.operators.attention;
        attention && (attention->q_lengths != iteration.q_lengths || attention->kv_lengths != iteration.kv_lengths))
      detail::fail_field(prefix + "operators.attention." + (attention->q_lengths != iteration.q_lengths ? "q_lengths" : "kv_lengths"),
                         "(" + std::to_string(attention->q_lengths.size()) + " entries)",
                         "must be the iteration's own q_lengths and kv_lengths");
    if (iteration.operators.moe && w.model_params.num_experts == 0)
      detail::fail_field(prefix + "operators.moe", "(given)", "needs a mixture-of-experts model (model_params.num_experts > 0): this one is dense");
    // Each iteration its own number: measured times (e2e --measured) are matched by it.
    if (const auto [where, added] = numbered.emplace(iteration.iteration, i); !added)
      detail::fail_field(prefix + "iteration", iteration.iteration,
                         "must differ from every other iteration's (iterations[" + std::to_string(where->second) + "] has it)");
    w.iterations.push_back(std::move(iteration));
  }
  check_limits(w);
  return w;
}

Workload load_workload(const std::filesystem::path& path) { return workload_from_json(detail::read_file(path, "workload")); }

void write_json(std::ostream& out, const Workload& w) {
  const ModelParams& p = w.model_params;
  ordered_json params = {{"hidden_size", p.hidden_size},         {"num_attention_heads", p.num_attention_heads},
                 {"num_key_value_heads", p.num_key_value_heads}, {"head_dim", p.head_dim},
                 {"intermediate_size", p.intermediate_size}, {"vocab_size", p.vocab_size},
                 {"num_hidden_layers", p.num_hidden_layers}};
  if (p.num_experts > 0) {
    params["num_experts"] = p.num_experts;
    params["num_experts_per_tok"] = p.num_experts_per_tok;
    params["moe_intermediate_size"] = p.moe_intermediate_size;
    params["shared_expert_intermediate_size"] = p.shared_expert_intermediate_size;
  }
  if (p.max_model_len > 0) params["max_model_len"] = p.max_model_len;
  // The iterations (the last member) are written one at a time in the place of a placeholder: as
  // one tree, a 20,000-request trace's workload took 1.7 GB to write a 280 MB file.
  const std::string head = ordered_json{{"model", w.model},     {"model_params", params}, {"tp_size", w.tp_size},
                                        {"pp_size", w.pp_size}, {"dtype", to_string(w.dtype)}, {"iterations", "(iterations)"}}
                               .dump(1);
  constexpr std::string_view kPlaceholder = "\"(iterations)\"\n}";
  if (!head.ends_with(kPlaceholder)) throw std::logic_error("workload JSON: the iterations are not the document's last member");
  out << std::string_view(head).substr(0, head.size() - kPlaceholder.size());
  if (w.iterations.empty()) out << "[]";
  std::string text;
  for (std::size_t i = 0; i < w.iterations.size(); ++i) {
    const WorkloadIteration& it = w.iterations[i];
    ordered_json iteration = {{"iteration", it.iteration},
                              {"phase", to_string(it.phase)},
                              {"batch_size", it.batch_size()},
                              {"q_lengths", it.q_lengths},
                              {"kv_lengths", it.kv_lengths},
                              {"num_tokens", it.num_tokens()}};
    if (!it.request_ids.empty()) iteration["request_ids"] = it.request_ids;
    iteration["operators"] = operators_json(it.operators, w.tp_size);
    // dump(1) of the element alone, two levels in: every line indented by two more spaces
    const std::string element = iteration.dump(1);
    text.assign(i == 0 ? "[\n  " : ",\n  ");
    for (const char c : element) {
      text += c;
      if (c == '\n') text += "  ";
    }
    out << text;
  }
  if (!w.iterations.empty()) out << "\n ]";
  out << "\n}\n";
}

std::string to_json(const Workload& w) {
  std::ostringstream out;
  write_json(out, w);
  return std::move(out).str();
}

std::vector<WorkloadKernel> iteration_kernels(const WorkloadIteration& iteration, DType dtype) {
  const WorkloadOperators& ops = iteration.operators;
  std::vector<WorkloadKernel> out;
  for (const WorkloadGemm& g : ops.gemm) out.push_back({g.name, Gemm{.m = g.m, .n = g.n, .k = g.k, .dtype = dtype}, g.count});
  if (ops.attention) {
    const WorkloadAttention& a = *ops.attention;
    const AttentionType type = attention_type_from(a.attention_type);
    Attention attention;
    attention.q_lens = a.q_lengths;
    attention.kv_lens = a.kv_lengths;
    attention.heads = a.nh, attention.kv_heads = a.nkv, attention.head_dim = a.hd;
    attention.dtype = dtype == DType::fp16 ? DType::fp16 : DType::bf16;  // fp8 models keep a 16-bit KV cache here
    attention.page_size = type.paged ? kPagedKvBlockTokens : 0;
    if (const std::optional<AttentionImpl> impl = a.impl ? a.impl : type.impl)
      attention.config = AttentionConfig::own_tiles(*impl);  // its tiles for the GPU it runs on
    out.push_back({"attention", attention, a.count});
  }
  const DType activations = dtype == DType::fp16 ? DType::fp16 : DType::bf16;
  if (ops.rmsnorm)
    out.push_back({"rmsnorm", RmsNorm{.tokens = ops.rmsnorm->seq, .hidden = ops.rmsnorm->dim, .dtype = activations,
                                      .fused_residual = true},
                   ops.rmsnorm->count});
  if (ops.siluandmul)  // the file gives the input's width, gate and up side by side
    out.push_back({"silu_and_mul",
                   SiluMul{.tokens = ops.siluandmul->seq, .dim = ops.siluandmul->dim / 2, .dtype = activations},
                   ops.siluandmul->count});
  if (ops.moe) {
    const WorkloadMoe& moe = *ops.moe;
    out.push_back({"fused_moe",
                   FusedMoe{.tokens = moe.tokens, .experts = moe.experts, .top_k = moe.top_k, .hidden = moe.hidden,
                            .intermediate = moe.intermediate, .dtype = dtype, .zipf = moe.zipf, .expert_parallel = moe.ep},
                   moe.count});
    // The engines' fused_experts runs two more kernels around the grouped GEMMs, over every routed
    // row (tokens x top_k; under expert parallelism the other ranks' rows too, zeros, at the
    // experts' full width): SiLU-and-mul between them, and the sum of each token's top_k outputs.
    const std::int64_t routed = moe.tokens * moe.top_k;
    out.push_back({"moe_silu_and_mul", SiluMul{.tokens = routed, .dim = moe.intermediate, .dtype = activations}, moe.count});
    const double hidden_bytes = static_cast<double>(moe.hidden) * 2;  // 16-bit activations
    out.push_back({"moe_sum",
                   Elementwise{.bytes = (static_cast<double>(routed) + static_cast<double>(moe.tokens)) * hidden_bytes,
                               .flops = static_cast<double>(routed) * static_cast<double>(moe.hidden)},
                   moe.count});
  }
  for (std::size_t i = 0; i < ops.communication.size(); ++i) {
    const WorkloadCollective& c = ops.communication[i];
    out.push_back({c.name,
                   Collective{.kind = collective_kind(c.name, "communication[" + std::to_string(i) + "].name"),
                              .bytes = c.bytes, .ranks = c.ranks, .dtype = activations},
                   c.count});
  }
  return out;
}

namespace {
// The longest sequence as vLLM derives it from config.json (ModelParams::max_model_len):
// max_position_embeddings (absent or null: 0, no bound), times a rope_scaling factor above 1 but
// for Llama 3's, LongRoPE's ("su" of old) and M-RoPE's, whose positions already hold it; YaRN's
// over original_max_position_embeddings where the config gives it. A rope_scaling is an object
// (or null), its factor a number within (0, 1024] whatever its type.
std::int64_t max_model_len(const Fields& f) {
  double factor = 1;
  std::string kind;
  std::optional<std::int64_t> original;  // YaRN's original_max_position_embeddings
  if (f.has("rope_scaling") && !f.get("rope_scaling").is_null()) {
    if (!f.get("rope_scaling").is_object())
      detail::fail_field("config.json: rope_scaling", detail::excerpt(f.get("rope_scaling")), "must be an object or null");
    const Fields scaling(f.get("rope_scaling"), "config.json: rope_scaling.");
    kind = scaling.has("rope_type") ? scaling.text("rope_type") : scaling.has("type") ? scaling.text("type") : "";
    if (scaling.has("factor") && !scaling.get("factor").is_null()) {
      factor = scaling.number("factor");
      if (!(factor > 0 && factor <= 1024)) detail::fail_field("config.json: rope_scaling.factor", factor, "must be within (0, 1024]");
    }
    if (kind == "llama3" || kind == "longrope" || kind == "su" || kind == "mrope") factor = 1;
    if (kind == "yarn" && scaling.has("original_max_position_embeddings"))
      original = scaling.whole("original_max_position_embeddings");
  }
  const bool stated = f.has("max_position_embeddings") && !f.get("max_position_embeddings").is_null();
  if (!stated && !original) return 0;
  const std::int64_t positions = original ? *original : f.whole("max_position_embeddings");
  const double context = std::ceil(static_cast<double>(positions) * std::max(1.0, factor));
  if (context > std::ldexp(1.0, 40))  // (checked in doubles: 2^62 positions would overflow the conversion)
    detail::fail_field(original ? "config.json: rope_scaling.original_max_position_embeddings" : "config.json: max_position_embeddings",
                       positions, "must make a context of at most 2^40 (" + std::to_string(std::int64_t{1} << 40) +
                                      ") tokens with its rope_scaling factor: past any model");
  return static_cast<std::int64_t>(context);
}
}  // namespace

ModelParams model_params_from_hf_config(std::string_view json_text) {
  const json document = detail::parse_json(json_text, "config.json");
  const Fields f(document, "config.json: ");
  const std::string type = f.has("model_type") ? f.text("model_type") : "";
  if (f.has("kv_lora_rank"))
    detail::fail_field("config.json: model_type", detail::quoted(type),
                       "uses multi-head latent attention (kv_lora_rank), which the library does not model");
  ModelParams p;
  p.hidden_size = f.whole("hidden_size");
  p.num_attention_heads = f.whole("num_attention_heads");
  p.num_key_value_heads = f.has("num_key_value_heads") ? f.whole("num_key_value_heads") : p.num_attention_heads;
  if (f.has("head_dim") && !f.get("head_dim").is_null()) {
    p.head_dim = f.whole("head_dim");
  } else {  // hidden_size split over the heads, which must divide it (4097 over 32 would truncate)
    if (p.hidden_size % p.num_attention_heads != 0)
      detail::fail_field("config.json: hidden_size", p.hidden_size,
                         "must be a multiple of num_attention_heads (" + std::to_string(p.num_attention_heads) +
                             ") where head_dim is not given");
    p.head_dim = p.hidden_size / p.num_attention_heads;
  }
  p.intermediate_size = f.whole("intermediate_size");
  p.vocab_size = f.whole("vocab_size");
  p.num_hidden_layers = f.whole("num_hidden_layers");
  if (f.has("num_local_experts")) {  // Mixtral: every expert as wide as the dense MLP
    p.num_experts = f.whole("num_local_experts");
    // (a null or 0 num_experts beside it says "not given", as it does alone below)
    const std::int64_t other = f.has("num_experts") && !f.get("num_experts").is_null() ? f.whole("num_experts", 0) : 0;
    if (other != 0 && other != p.num_experts)
      detail::fail_field("config.json: num_experts", detail::excerpt(f.get("num_experts")),
                         "must agree with num_local_experts (" + std::to_string(p.num_experts) + ") where both are given");
    p.num_experts_per_tok = f.whole("num_experts_per_tok");
    p.moe_intermediate_size = p.intermediate_size;
  } else if (f.has("num_experts") && f.whole("num_experts", 0) > 0) {  // Qwen2-MoE, Qwen3-MoE
    p.num_experts = f.whole("num_experts");
    p.num_experts_per_tok = f.whole("num_experts_per_tok");
    p.moe_intermediate_size = f.whole("moe_intermediate_size");
    if (f.has("shared_expert_intermediate_size"))
      p.shared_expert_intermediate_size = f.whole("shared_expert_intermediate_size", 0);
  } else if (f.has("n_routed_experts")) {
    detail::fail_field("config.json: n_routed_experts", detail::excerpt(f.get("n_routed_experts")),
                       "names a DeepSeek-style MoE, which the library does not model");
  }
  p.max_model_len = max_model_len(f);
  p.validate();
  return p;
}

std::vector<TraceRequest> trace_from_csv(std::string_view csv_text, std::string_view source) {
  std::vector<TraceRequest> trace;
  const std::string where(source);
  detail::for_each_csv_row(csv_text, where, {"num_prefill_tokens", "num_decode_tokens", "output_tokens"},
                           [&](const detail::CsvRow& row) {
                             trace.push_back({row.integer("num_prefill_tokens", 1, kMaxRequestTokens),
                                              row.integer("num_decode_tokens", 0, kMaxRequestTokens),
                                              row.integer("output_tokens", 0, kMaxRequestTokens + 1)});  // decode steps + the prefill's token
                           });
  if (trace.empty()) throw InvalidInput(where + ": no request");
  return trace;
}

ModelParams load_hf_config(const std::filesystem::path& config_json) {
  return model_params_from_hf_config(detail::read_file(config_json, "model config", detail::kMostSmallFileBytes));
}

std::vector<TraceRequest> load_trace(const std::filesystem::path& csv_path) {
  return trace_from_csv(detail::read_file(csv_path, "trace"), csv_path.string());
}

std::map<std::int64_t, double> measured_iterations_from_csv(std::string_view csv_text, const std::string& source) {
  std::map<std::int64_t, double> out;
  detail::for_each_csv_row(csv_text, source, {"iteration", "measured_us"},
                           [&](const detail::CsvRow& row) {
                             const std::int64_t iteration = row.integer("iteration", 0);
                             if (!out.emplace(iteration, row.measured_us("measured_us")).second)  // (not the last one silently)
                               detail::fail_field(row.where("iteration"), iteration, "must name each iteration once");
                           });
  if (out.empty()) throw InvalidInput(source + ": no measured iteration");
  return out;
}

std::map<std::int64_t, double> load_measured_iterations(const std::filesystem::path& csv_path) {
  return measured_iterations_from_csv(detail::read_file(csv_path, "measured iterations"), csv_path.string());
}

void SchedulerPolicy::validate() const {
  detail::require_positive("scheduler.max_batched_tokens", max_batched_tokens);
  detail::require_positive("scheduler.max_sequences", max_sequences);
  // An iteration's tokens are its GEMMs' M, its sequences one attention kernel's batch
  detail::require_at_most("scheduler.max_batched_tokens", max_batched_tokens, detail::kMostDimension, "an iteration's tokens are a GEMM's M");
  detail::require_at_most("scheduler.max_sequences", max_sequences, Attention::kMostSequences, "a batch's sequences are one attention kernel's");
}

void Deployment::validate() const {
  if (tp < 1 || tp > 65536) detail::fail_field("tp", tp, "must be from 1 to 65536");
  if (pp < 1 || pp > 65536) detail::fail_field("pp", pp, "must be from 1 to 65536");
}

namespace {

// What tensor and pipeline parallelism must be able to split: whole layers per stage, and the
// heads and the MLP width evenly over the tensor-parallel ranks.
void check_parallel_split(const ModelParams& params, const Deployment& deployment) {
  const int tp = deployment.tp;
  check_gpu_total("pp", deployment.pp, "tp", tp);
  check_stages("pp", deployment.pp, params);
  check_heads_split("tp", tp, params, "");
  // The shared expert is a tensor-parallel MLP in either mode.
  if (params.shared_expert_intermediate_size % tp != 0)
    detail::fail_field("tp", tp, "must divide the shared expert's width (" + std::to_string(params.shared_expert_intermediate_size) + ")");
  if (deployment.expert_parallel) {
    if (params.num_experts == 0)
      detail::fail_field("expert_parallel", "true", "needs a mixture-of-experts model (num_experts > 0): this one is dense");
    if (params.num_experts % tp != 0)
      detail::fail_field("tp", tp, "must divide num_experts (" + std::to_string(params.num_experts) + ") under expert parallelism");
    return;
  }
  const std::int64_t mlp = params.num_experts > 0 ? params.moe_intermediate_size : params.intermediate_size;
  if (mlp % tp != 0) detail::fail_field("tp", tp, "must divide the MLP width (" + std::to_string(mlp) + ")");
}

InvalidInput too_many_iterations(std::int64_t iterations) {
  return InvalidInput("the trace makes a workload of at least " + std::to_string(iterations) + " iterations, more than the " +
               std::to_string(kMaxWorkloadIterations) + " one workload holds: run it in parts");
}

// The trace's requests, checked, none started yet. Floors on the iterations, so that a trace past
// the cap is refused before any is built: every request takes its prompt's chunks and then one
// iteration per decode step; an iteration decodes at most one token per sequence it may hold and
// takes at most max_batched_tokens.
std::vector<Live> trace_requests(std::span<const TraceRequest> trace, const SchedulerPolicy& policy, std::int64_t context) {
  std::vector<Live> requests;
  std::int64_t least_iterations = 0;
  double all_tokens = 0, all_slots = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceRequest& r = trace[i];
    const std::string field = "trace[" + std::to_string(i) + "].";
    if (r.prefill_tokens < 1 || r.prefill_tokens > kMaxRequestTokens)
      detail::fail_field(field + "num_prefill_tokens", r.prefill_tokens, "must be from 1 to " + std::to_string(kMaxRequestTokens));
    if (r.decode_tokens < 0 || r.decode_tokens > kMaxRequestTokens)
      detail::fail_field(field + "num_decode_tokens", r.decode_tokens, "must be from 0 to " + std::to_string(kMaxRequestTokens));
    // Its KV cache at the last step holds the prompt and every decode step's token (trace[i] counts
    // from 0: request i + 1 of the trace)
    if (context > 0 && r.prefill_tokens > context)
      detail::fail_field(field + "num_prefill_tokens", r.prefill_tokens,
                         "must be at most the model's context, " + std::to_string(context) + " tokens (max_model_len, from config.json; request " +
                             std::to_string(i + 1) + " of the trace): no engine runs a longer prompt");
    if (context > 0 && r.decode_tokens > context - r.prefill_tokens)
      detail::fail_field(field + "num_decode_tokens", r.decode_tokens,
                         "must be at most " + std::to_string(context - r.prefill_tokens) + ": the model's context is " +
                             std::to_string(context) + " tokens (max_model_len, from config.json) and request " + std::to_string(i + 1) +
                             "'s prompt " + std::to_string(r.prefill_tokens) + "; no engine runs a longer request");
    // Without chunked prefill, a prompt past the budget still runs whole in an empty batch.
    const std::int64_t prompt_iterations = policy.chunked_prefill ? 1 + (r.prefill_tokens - 1) / policy.max_batched_tokens : 1;
    least_iterations = std::max(least_iterations, prompt_iterations + r.decode_tokens);
    // The iterations this request is held in, each a sequence's place; the tokens it asks of the
    // iterations' budgets (a whole prompt past the budget, unchunked, runs alone: one budget's worth).
    all_slots += static_cast<double>(prompt_iterations + r.decode_tokens);
    const std::int64_t prompt_tokens = policy.chunked_prefill ? r.prefill_tokens : std::min(r.prefill_tokens, policy.max_batched_tokens);
    all_tokens += static_cast<double>(prompt_tokens + r.decode_tokens);
    requests.push_back({r.prefill_tokens, 0, r.decode_tokens, 0});
  }
  // (with --max-seqs 1, 1,000 requests of 1,000 decode steps scheduled 3 s before the cap stopped them)
  const double floor_all = std::max(std::ceil(all_slots / static_cast<double>(policy.max_sequences)),
                                    std::ceil(all_tokens / static_cast<double>(policy.max_batched_tokens)));
  least_iterations = std::max(least_iterations, static_cast<std::int64_t>(std::min(floor_all, 9e18)));
  if (least_iterations > kMaxWorkloadIterations) throw too_many_iterations(least_iterations);
  return requests;
}

// Continuous batching: requests are admitted in trace order while the batch has room (a token
// budget and a cap on the sequences held), and each iteration's batch is built from the running ones.
class BatchScheduler {
 public:
  BatchScheduler(std::vector<Live> requests, const SchedulerPolicy& policy)
      : requests_(std::move(requests)), policy_(policy) {}

  bool done() const { return next_waiting_ >= requests_.size() && running_.empty(); }

  // The next iteration's batch; requests it finishes leave the running set.
  Batch next() {
    batch_ = Batch{};
    // The lists sized for every sequence the batch can hold (each running request once, and as
    // many admitted as the cap allows, at most a thousand ahead: put() grows them past that), written
    // through a cursor and cut to it at the end: a push_back per entry was 7% of a long run's time.
    const std::size_t waiting = requests_.size() - next_waiting_;
    const std::size_t room = running_.size() + std::min<std::size_t>(
                                                   {waiting, 1024, static_cast<std::size_t>(std::max<std::int64_t>(
                                                                       0, policy_.max_sequences - static_cast<std::int64_t>(running_.size())))});
    batch_.q.resize(room), batch_.kv.resize(room), batch_.ids.resize(room);
    entries_ = 0;
    budget_ = policy_.max_batched_tokens;
    if (policy_.chunked_prefill) fill_chunked();
    else fill_prompt_or_decode();
    batch_.q.resize(entries_), batch_.kv.resize(entries_), batch_.ids.resize(entries_);
    std::erase_if(running_, [&](std::size_t i) { return requests_[i].finished(); });
    return std::move(batch_);
  }

 private:
  void put(std::int64_t q, std::int64_t kv, std::int64_t id) {
    if (entries_ == batch_.q.size()) {
      const std::size_t grown = 2 * entries_ + 16;
      batch_.q.resize(grown), batch_.kv.resize(grown), batch_.ids.resize(grown);
    }
    batch_.q[entries_] = q, batch_.kv[entries_] = kv, batch_.ids[entries_] = id;
    ++entries_;
  }
  void add_prefill(Live& r, std::int64_t chunk) {
    r.prefilled += chunk;
    put(chunk, r.prefilled, &r - requests_.data());
    batch_.prompt_tokens += chunk;
    budget_ -= chunk;
    if (r.prefill_done()) ++batch_.logits;  // the first output token
  }
  void add_decode(Live& r) {
    ++r.decoded;
    put(1, r.prompt + r.decoded, &r - requests_.data());
    ++batch_.decode_tokens, ++batch_.logits;
    --budget_;
  }
  void admit() { running_.push_back(next_waiting_++); }
  bool can_admit() const {
    return next_waiting_ < requests_.size() && static_cast<std::int64_t>(running_.size()) < policy_.max_sequences;
  }

  // Chunked prefill: decodes first, then the running prompts' next chunks, then new requests'
  // first chunks, while the budget lasts.
  void fill_chunked() {
    for (std::size_t i : running_)
      if (budget_ > 0 && requests_[i].prefill_done() && requests_[i].decoded < requests_[i].decodes) add_decode(requests_[i]);
    for (std::size_t i : running_)
      if (budget_ > 0 && !requests_[i].prefill_done())
        add_prefill(requests_[i], std::min(budget_, requests_[i].prompt - requests_[i].prefilled));
    while (budget_ > 0 && can_admit()) {
      admit();
      Live& r = requests_[running_.back()];
      add_prefill(r, std::min(budget_, r.prompt));
    }
  }

  // Without it: an iteration either admits whole prompts (while they fit, or one into an empty
  // batch) or decodes the running requests.
  void fill_prompt_or_decode() {
    const bool prefill_turn = can_admit() && (requests_[next_waiting_].prompt <= budget_ || running_.empty());
    if (prefill_turn) {
      do {
        admit();
        add_prefill(requests_[running_.back()], requests_[running_.back()].prompt);
      } while (can_admit() && requests_[next_waiting_].prompt <= budget_);
    } else {
      for (std::size_t i : running_)
        if (budget_ > 0 && requests_[i].decoded < requests_[i].decodes) add_decode(requests_[i]);
    }
  }

  std::vector<Live> requests_;
  const SchedulerPolicy& policy_;
  std::size_t next_waiting_ = 0;   // requests are admitted in trace order
  std::vector<std::size_t> running_;  // admitted and not finished
  Batch batch_;                    // the batch being built
  std::size_t entries_ = 0;        // of its lists, those written
  std::int64_t budget_ = 0;        // tokens the batch may still take
};

WorkloadIteration iteration_of(Batch&& batch, std::int64_t index, const ModelParams& params, const Deployment& deployment) {
  const Phase phase = batch.prompt_tokens == 0 ? Phase::decode : (batch.decode_tokens == 0 ? Phase::prefill : Phase::mixed);
  WorkloadIteration iteration;
  iteration.iteration = index;
  iteration.phase = phase;
  iteration.operators = layer_operators(params, batch, deployment, phase);  // (its attention copies the lengths)
  iteration.q_lengths = std::move(batch.q);
  iteration.kv_lengths = std::move(batch.kv);
  iteration.request_ids = std::move(batch.ids);
  return iteration;
}

// The scheduler of a trace's requests, once the model, the policy, the deployment and the trace are checked.
BatchScheduler checked_scheduler(const ModelParams& params, std::span<const TraceRequest> trace, const Deployment& deployment,
                                 const SchedulerPolicy& policy) {
  params.validate();
  policy.validate();
  deployment.validate();
  check_parallel_split(params, deployment);
  if (trace.empty()) throw InvalidInput("the trace has no request");
  return BatchScheduler(trace_requests(trace, policy, params.max_model_len), policy);
}

// The scheduler's next batch as the run's iteration `index` (the scheduler not done).
WorkloadIteration next_iteration(BatchScheduler& scheduler, std::size_t index, const ModelParams& params, const Deployment& deployment) {
  Batch batch = scheduler.next();
  if (batch.q.empty()) throw Error("the scheduler made no progress (a bug): please report the trace");
  if (index >= static_cast<std::size_t>(kMaxWorkloadIterations)) throw too_many_iterations(static_cast<std::int64_t>(index) + 1);
  return iteration_of(std::move(batch), static_cast<std::int64_t>(index), params, deployment);
}

}  // namespace

Workload generate_workload(std::string model, const ModelParams& params, std::span<const TraceRequest> trace,
                           const Deployment& deployment, const SchedulerPolicy& policy) {
  BatchScheduler scheduler = checked_scheduler(params, trace, deployment, policy);
  Workload w{std::move(model), params, deployment.tp, deployment.pp, deployment.dtype, {}};
  while (!scheduler.done()) w.iterations.push_back(next_iteration(scheduler, w.iterations.size(), params, deployment));
  return w;
}

void IterationOverhead::validate() const {
  detail::require_non_negative("overhead.per_iteration_us", per_iteration_us);
  detail::require_non_negative("overhead.per_kernel_us", per_kernel_us);
}

void SustainedLoad::validate() const {
  if (!(tensor_bound_slowdown >= 1) || !std::isfinite(tensor_bound_slowdown))
    detail::fail_field("sustained.tensor_bound_slowdown", tensor_bound_slowdown, "must be a finite factor >= 1");
  if (!(at_tensor_utilization >= 0 && at_tensor_utilization <= 1))
    detail::fail_field("sustained.at_tensor_utilization", at_tensor_utilization, "must be in [0, 1]");
}

double SustainedLoad::slowdown_at(double tensor_utilization) const {
  // std::max first: a NaN or negative utilisation counts as none.
  const double share =
      at_tensor_utilization > 0 ? std::min(1.0, std::max(0.0, tensor_utilization / at_tensor_utilization)) : 1.0;
  return 1 + (tensor_bound_slowdown - 1) * share;
}

double SustainedLoad::back_to_back_us(double isolated_us, double tensor_us) const {
  // No tensor work, no power drawn for it: no clock lost (also where the full slowdown would
  // apply at any load, at_tensor_utilization = 0).
  if (!(isolated_us > 0) || !(tensor_us > 0)) return isolated_us;
  return isolated_us * slowdown_at(tensor_us / isolated_us);
}

double SustainedLoad::isolated_us(double back_to_back_us, double tensor_us) const {
  // back_to_back = isolated + (s - 1) x min(isolated, tensor / u0): linear in each piece, and
  // the pieces meet where isolated = tensor / u0, i.e. back_to_back = s x tensor / u0.
  const double extra = tensor_bound_slowdown - 1;
  if (!(back_to_back_us > 0) || !(tensor_us > 0)) return back_to_back_us;
  if (at_tensor_utilization <= 0 || back_to_back_us <= tensor_bound_slowdown * tensor_us / at_tensor_utilization)
    return back_to_back_us / tensor_bound_slowdown;
  return back_to_back_us - extra * std::max(0.0, tensor_us) / at_tensor_utilization;
}

EngineProfile EngineProfile::sglang() {
  EngineProfile e;
  e.name = "sglang";
  e.iteration_us = kSglangIterationUs;
  e.kernel_gap_us = kSglangKernelGapUs;
  e.eager_launch_us = kEagerLaunchUs;
  e.cuda_graph_max_batch = 160;
  e.engine_kernels = true;
  e.decode_attention_follows_prompt = true;
  e.flash2_off_hopper = true;
  e.source = kSglangSource;
  return e;
}

EngineProfile EngineProfile::vllm() {
  EngineProfile e = sglang();
  e.name = "vllm";
  e.cuda_graph_max_batch = 512;
  e.source = "vLLM: no measured vLLM run was given, so SGLang's fitted figures (" + std::string(kSglangSource) +
             "); CUDA graphs for decode batches up to 512 (vLLM's largest capture size)";
  return e;
}

EngineProfile EngineProfile::named(std::string_view name) {
  if (name == "sglang") return sglang();
  if (name == "vllm") return vllm();
  if (name == "none") return none();
  detail::fail_field("engine", detail::quoted(name), "must be sglang, vllm or none");
}

void EngineProfile::validate() const {
  detail::require_non_negative("engine.iteration_us", iteration_us);
  detail::require_non_negative("engine.kernel_gap_us", kernel_gap_us);
  detail::require_non_negative("engine.eager_launch_us", eager_launch_us);
  detail::require_non_negative("engine.cuda_graph_max_batch", cuda_graph_max_batch);
}

namespace {

// The implementation a run's prompt attention names (its first iteration with prompt tokens
// whose attention says one), for engines that decode with the same backend.
std::optional<AttentionImpl> prompt_attention_impl(std::span<const WorkloadIteration> iterations) {
  for (const WorkloadIteration& it : iterations) {
    if (it.phase == Phase::decode || !it.operators.attention) continue;
    const WorkloadAttention& a = *it.operators.attention;
    if (a.impl) return a.impl;
    if (const std::optional<AttentionImpl> impl = attention_type_from(a.attention_type).impl) return impl;
  }
  return std::nullopt;
}

// The per-layer kernels an engine runs that the published workloads leave out: rotary embedding
// of Q and K (read and written in place), the new K and V written into the cache, and for Qwen3
// the RMSNorm of every query and key head. All are streaming kernels: bytes moved, a few flops.
std::vector<WorkloadKernel> engine_kernels(const Workload& workload, const WorkloadIteration& iteration) {
  std::vector<WorkloadKernel> out;
  if (!iteration.operators.attention) return out;
  const WorkloadAttention& a = *iteration.operators.attention;
  const double tokens = static_cast<double>(iteration.num_tokens());
  const double head_values = static_cast<double>((a.nh + a.nkv) * a.hd), kv_values = static_cast<double>(a.nkv * a.hd);
  const double bytes = 2;  // 16-bit activations and cache
  out.push_back({"rotary_embedding", Elementwise{.bytes = 2 * tokens * head_values * bytes, .flops = 3 * tokens * head_values},
                 a.count});
  out.push_back({"kv_cache_write", Elementwise{.bytes = 2 * 2 * tokens * kv_values * bytes}, a.count});
  // Qwen3ForCausalLM, Qwen3MoeForCausalLM: q_norm and k_norm, unless the workload already
  // counts them among its RMSNorms (some published Qwen3 workloads list 4 per layer, not 2).
  const bool listed = iteration.operators.rmsnorm && iteration.operators.rmsnorm->count >= 4 * a.count;
  if (workload.model.rfind("Qwen3", 0) == 0 && !listed)
    out.push_back({"qk_norm", Elementwise{.bytes = 2 * tokens * head_values * bytes, .flops = 4 * tokens * head_values},
                   2 * a.count});
  return out;
}

// Follows requests through the iterations by their KV lengths (see RequestTime). A finished
// request's last length stays on record, so a later request reaching it could be taken for it:
// of the requests a new entry could continue, the one seen last wins (a request that has just
// run continues; one that finished long ago does not), and among those the one that started
// first (the engines keep their running requests in the order they came, so of two with the
// same length the earlier comes first in the batch, and entries are matched in batch order).
struct RequestTracker {
  struct Live {
    std::int64_t prompt = 0, decodes = 0;
    double first_token_us = 0, last_us = 0;
    std::size_t last_iteration = 0;
    bool before = false;  // already running when the workload starts: its prompt was not seen
  };
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<Live> requests;
  std::multimap<std::int64_t, std::size_t> by_kv;  // a request's latest KV length -> its index
  // A request id the workload gives -> its index, looked up for every entry of every iteration
  // (30 million times over a 100,000-request trace): ids below kDenseIds in a list indexed by id
  // (a trace's are 0, 1, 2, ...), any other in a hash map. Which of the two holds an id depends
  // on its value alone, so each id has one place.
  static constexpr std::int64_t kDenseIds = std::int64_t{1} << 22;
  std::vector<std::size_t> by_dense_id;  // kNone: not seen
  std::unordered_map<std::int64_t, std::size_t> by_id;
  // The index of request `id`, and whether it is new (then given the next index).
  std::pair<std::size_t, bool> index_of(std::int64_t id) {
    if (id >= 0 && id < kDenseIds) {
      const std::size_t slot = static_cast<std::size_t>(id);
      if (slot >= by_dense_id.size())
        by_dense_id.resize(std::min(static_cast<std::size_t>(kDenseIds), std::max(slot + 1, 2 * by_dense_id.size())), kNone);
      if (by_dense_id[slot] != kNone) return {by_dense_id[slot], false};
      by_dense_id[slot] = requests.size();
      return {requests.size(), true};
    }
    const auto [found, fresh] = by_id.try_emplace(id, requests.size());
    return {found->second, fresh};
  }
  std::size_t iteration = 0;

  std::size_t take(std::int64_t kv, bool in_prompt) {
    auto [first, last] = by_kv.equal_range(kv);
    auto best = last;
    for (auto it = first; it != last; ++it) {
      const Live& r = requests[it->second];
      if (in_prompt && r.decodes > 0) continue;
      if (best == last) {
        best = it;
        continue;
      }
      const Live& b = requests[best->second];
      if (r.last_iteration > b.last_iteration || (r.last_iteration == b.last_iteration && it->second < best->second)) best = it;
    }
    if (best == last) return kNone;
    const std::size_t index = best->second;
    by_kv.erase(best);
    return index;
  }
  void add(const WorkloadIteration& batch, double end_us) {
    if (!batch.request_ids.empty()) return add_known(batch, end_us);
    for (std::size_t i = 0; i < batch.q_lengths.size(); ++i) {
      const std::int64_t q = batch.q_lengths[i], kv = batch.kv_lengths[i];
      // One new token over a request one token shorter: its decode step. More tokens over a
      // request in its prompt: the prompt's next chunk. Else a request starts (or, with a
      // context already there, was running before the workload's first iteration).
      std::size_t index = q == 1 ? take(kv - 1, false) : kNone;
      bool decode = index != kNone;
      if (!decode && kv > q) index = take(kv - q, true);
      if (index == kNone) {
        index = requests.size();
        requests.push_back({});
        if (kv > q) {  // its earlier tokens came before this workload
          requests.back().before = true;
          requests.back().prompt = kv - q;
          decode = q == 1;
        }
      }
      Live& r = requests[index];
      if (decode) {
        ++r.decodes;
      } else {
        r.prompt += q;
        r.first_token_us = end_us;  // its first token comes from its last prompt chunk
      }
      r.last_us = end_us;
      r.last_iteration = iteration;
      by_kv.emplace(kv, index);
    }
    ++iteration;
  }
  // The workload says which request each entry is: an entry of one new token after the request's
  // prompt is done (a later entry than its last prompt chunk) decodes, any other is a prompt chunk.
  void add_known(const WorkloadIteration& batch, double end_us) {
    for (std::size_t i = 0; i < batch.q_lengths.size(); ++i) {
      const std::int64_t q = batch.q_lengths[i], kv = batch.kv_lengths[i];
      const auto [index, fresh] = index_of(batch.request_ids[i]);
      if (fresh) {
        requests.push_back({});
        if (kv > q) requests.back().before = true, requests.back().prompt = kv - q;
      }
      Live& r = requests[index];
      const bool decode = q == 1 && (r.first_token_us > 0 || r.before) && r.prompt + r.decodes == kv - 1;
      if (decode) ++r.decodes;
      else r.prompt += q, r.first_token_us = end_us;
      r.last_us = end_us;
    }
    ++iteration;
  }
};

Percentiles percentiles(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  // The 90th: linear interpolation between the closest ranks.
  const double position = 0.9 * static_cast<double>(values.size() - 1);
  const std::size_t low = static_cast<std::size_t>(position);
  const std::size_t high = std::min(low + 1, values.size() - 1);
  return {detail::median_of_sorted(values), values[low] + (values[high] - values[low]) * (position - static_cast<double>(low))};
}

// How the engine runs attention: the prompt's implementation (`decode_impl`) for the decode steps
// where the engine keeps one backend, FlashAttention 2 off Hopper where FA3 does not run.
void choose_attention_impls(std::vector<WorkloadKernel>& named, const WorkloadIteration& iteration,
                            const std::optional<AttentionImpl>& decode_impl, const EngineProfile& engine, bool fa3_runs_here) {
  for (WorkloadKernel& k : named) {
    const Attention* attention = k.kernel.get_if<Attention>();
    if (!attention || iteration.operators.attention->impl) continue;  // a stated impl is taken as it is
    if (!attention->config) continue;  // the phase only: the GPU's default implementation
    AttentionImpl impl = attention->config->impl;
    if (decode_impl && iteration.phase == Phase::decode) impl = *decode_impl;
    if (engine.flash2_off_hopper && impl == AttentionImpl::flash3 && !fa3_runs_here) impl = AttentionImpl::flash2;
    if (attention->config->impl == impl) continue;
    Attention changed = *attention;
    changed.config = AttentionConfig::own_tiles(impl);
    k.kernel = Kernel(std::move(changed));
  }
}

// A hash of the figures that set a kernel's size (its config and the rest left to operator==,
// which the memo below checks on every hit): a hash is a lookup's cost, never its answer.
struct KernelSizeHash {
  std::size_t operator()(const Kernel& kernel) const {
    std::uint64_t hash = 0xcbf29ce484222325ULL ^ static_cast<std::uint64_t>(kernel.family());
    const auto mix = [&hash](double value) {
      hash = (hash ^ std::bit_cast<std::uint64_t>(value)) * 0x100000001b3ULL;
      hash ^= hash >> 32;
    };
    const auto as_double = [](auto value) { return static_cast<double>(value); };
    std::visit(
        [&](const auto& op) {
          using Op = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<Op, Gemm>) {
            for (double v : {as_double(op.m), as_double(op.n), as_double(op.k), as_double(op.dtype)}) mix(v);
          } else if constexpr (std::is_same_v<Op, RmsNorm>) {
            for (double v : {as_double(op.tokens), as_double(op.hidden), as_double(op.dtype)}) mix(v);
          } else if constexpr (std::is_same_v<Op, SiluMul>) {
            for (double v : {as_double(op.tokens), as_double(op.dim), as_double(op.dtype)}) mix(v);
          } else if constexpr (std::is_same_v<Op, Elementwise>) {
            for (double v : {op.bytes, op.flops, op.xu_ops}) mix(v);
          } else if constexpr (std::is_same_v<Op, Collective>) {
            for (double v : {as_double(op.kind), op.bytes, as_double(op.ranks)}) mix(v);
          } else if constexpr (std::is_same_v<Op, FusedMoe>) {
            for (double v : {as_double(op.tokens), as_double(op.experts), as_double(op.top_k), as_double(op.hidden),
                             as_double(op.intermediate), op.zipf, as_double(op.expert_parallel)})
              mix(v);
          } else if constexpr (std::is_same_v<Op, Attention>) {
            for (double v : {as_double(op.q_lens.size()), as_double(op.heads), as_double(op.head_dim)}) mix(v);
          }
        },
        kernel.op());
    return static_cast<std::size_t>(hash);
  }
};

// Consecutive iterations mostly run the same kernels (a decode batch keeps its size until a
// request joins or leaves; only attention's lengths move): a kernel equal to the one in its
// place the iteration before keeps that prediction. Others come back over a run (a prefill of the
// token budget, a decode batch size seen before): every kernel but attention (whose lengths seldom
// repeat) is remembered by value, up to kRemembered of them. Only the rest are predicted; a
// prediction is a function of the kernel alone, so both give what predicting it again would.
// The buffers live across iterations so that each iteration allocates as little as it can.
class ReusedPredictions {
 public:
  // The predictions of this iteration's kernels, in their places. The kernels are moved out of
  // `named` (kept as the next iteration's reference); names and counts stay.
  const std::vector<Prediction>& predict(std::vector<WorkloadKernel>& named, const Predictor& predictor, const GpuSpec& gpu) {
    predictions_.resize(named.size());
    kernels_.clear();
    asked_.clear();
    const bool same_places = previous_.size() == named.size();
    for (std::size_t i = 0; i < named.size(); ++i) {
      if (i < previous_.size() && named[i].kernel == previous_[i]) continue;
      if (const auto found = remembered_.find(named[i].kernel); found != remembered_.end()) {
        predictions_[i] = found->second;
        if (same_places) previous_[i] = std::move(named[i].kernel);
        continue;
      }
      kernels_.push_back(std::move(named[i].kernel));
      asked_.push_back(i);
    }
    const std::vector<Prediction> fresh = predictor.predict(kernels_, gpu);
    for (std::size_t j = 0; j < asked_.size(); ++j) {
      predictions_[asked_[j]] = fresh[j];
      if (kernels_[j].family() == OpFamily::attention) continue;
      if (remembered_.size() >= kRemembered) remembered_.clear();  // a run this varied: start again
      remembered_.emplace(kernels_[j], fresh[j]);
    }
    if (!same_places) {  // (then only the asked kernels were moved out of `named`)
      previous_.clear();
      for (WorkloadKernel& k : named) previous_.push_back(std::move(k.kernel));
    }
    for (std::size_t j = 0; j < asked_.size(); ++j) previous_[asked_[j]] = std::move(kernels_[j]);
    return predictions_;
  }

 private:
  static constexpr std::size_t kRemembered = 1 << 16;
  std::vector<Kernel> kernels_, previous_;  // previous: the last iteration's kernels, in their places
  std::vector<std::size_t> asked_;         // the places of `kernels_` in this iteration
  std::vector<Prediction> predictions_;    // this iteration's, in the places of its kernels
  std::unordered_map<Kernel, Prediction, KernelSizeHash> remembered_;
};

// The iteration's tensor utilisation, which sets how much of the sustained-load slowdown applies
// to its tensor-bound kernels.
double sustained_slowdown(const SustainedLoad& sustained, const std::vector<WorkloadKernel>& named,
                          const std::vector<Prediction>& predictions) {
  if (sustained.tensor_bound_slowdown == 1) return 1;
  double tensor_us = 0, kernel_us = 0;
  for (std::size_t i = 0; i < named.size(); ++i) {
    const double count = static_cast<double>(named[i].count);
    tensor_us += predictions[i].tensor_us * count;
    kernel_us += predictions[i].latency_us * count;
  }
  return sustained.slowdown_at(kernel_us > 0 ? tensor_us / kernel_us : 0);
}

// What an iteration adds to an operator's total: a kernel's time and launches, or the engine's overhead.
struct OperatorShare {
  std::string name;
  double us = 0;
  std::int64_t launches = 0;
};

// One iteration's prediction before it joins the run's: its time and what it adds to each
// operator, in the order the totals take them (so that a run's sums come out the same to the
// last bit however many threads predicted its iterations).
struct IterationOutcome {
  IterationTime time;
  std::vector<OperatorShare> shares;
};

// The kernels' time into the iteration's and each kernel's share.
// `slowdown`: sustained_slowdown's, for tensor-bound kernels; `served_slowdown`: the same over what
// the label of a kernel answered from served rows already holds (SustainedLoad::served_label_slowdown).
void add_kernel_times(IterationOutcome& outcome, std::vector<WorkloadKernel>& named, const std::vector<Prediction>& predictions,
                      double slowdown, double served_slowdown) {
  IterationTime& time = outcome.time;
  for (std::size_t i = 0; i < named.size(); ++i) {
    const Prediction& prediction = predictions[i];
    const double tensor_slowdown = prediction.protocol == LabelProtocol::served ? served_slowdown : slowdown;
    const double us = prediction.latency_us * (prediction.bottleneck == Pipe::tensor ? tensor_slowdown : 1.0) *
                      static_cast<double>(named[i].count);
    time.kernels_us += us;
    if (predictions[i].extrapolated) time.extrapolated_us += us;
    if (prediction.protocol == LabelProtocol::served) time.served_us += us;
    time.launches += named[i].count;
    outcome.shares.push_back({std::move(named[i].name), us, named[i].count});
  }
}

// The engine: gaps between kernels on the GPU; outside a CUDA graph the host launches each
// kernel, and the iteration takes whichever of the two is longer; then its own host work.
void add_engine_overhead(IterationOutcome& outcome, const WorkloadIteration& iteration, const EngineProfile& engine,
                         const IterationOverhead& extra) {
  IterationTime& time = outcome.time;
  const double launches = static_cast<double>(time.launches);
  const bool graph = iteration.phase == Phase::decode && iteration.batch_size() <= engine.cuda_graph_max_batch;
  const double gpu_us = time.kernels_us + launches * engine.kernel_gap_us;
  const double busy_us = graph ? gpu_us : std::max(gpu_us, launches * engine.eager_launch_us);
  time.overhead_us = busy_us - time.kernels_us + engine.iteration_us + extra.per_iteration_us + extra.per_kernel_us * launches;
  if (time.overhead_us > 0) outcome.shares.push_back({"engine_overhead", time.overhead_us, 0});
}

// What every iteration's prediction reads, worked out once for the run.
struct RunSettings {
  const Predictor& predictor;
  const Workload& workload;
  const GpuSpec& gpu;
  const WorkloadOptions& options;
  SustainedLoad sustained;
  std::optional<AttentionImpl> decode_impl;
  bool fa3_runs_here = false;
};

// Predicts iterations one after another, remembering what it predicted (ReusedPredictions): one
// per thread.
class IterationPredictor {
 public:
  // An iteration whose kernels cannot be built or predicted (lengths past a kernel's bounds, or a
  // data type the GPU has no path for) is named: the kernel's own field (attention.q_lens,
  // elementwise.bytes) is none the input wrote.
  void predict(const RunSettings& run, const WorkloadIteration& iteration, IterationOutcome& outcome) {
    try {
      predict_named(run, iteration, outcome);
    } catch (const Error& error) {
      detail::rethrow_as(error, "iteration " + std::to_string(iteration.iteration) + " (" + std::to_string(iteration.batch_size()) +
                                    " sequences, " + std::to_string(iteration.num_tokens()) + " tokens) cannot be predicted: " + error.what());
    }
  }

 private:
  void predict_named(const RunSettings& run, const WorkloadIteration& iteration, IterationOutcome& outcome) {
    std::vector<WorkloadKernel> named = iteration_kernels(iteration, run.workload.dtype);
    choose_attention_impls(named, iteration, run.decode_impl, run.options.engine, run.fa3_runs_here);
    if (run.options.engine.engine_kernels)
      for (WorkloadKernel& k : engine_kernels(run.workload, iteration)) named.push_back(std::move(k));
    const std::vector<Prediction>& predictions = reused_.predict(named, run.predictor, run.gpu);
    outcome.time = IterationTime{iteration.iteration, iteration.phase, iteration.num_tokens(), 0, 0, 0, 0};
    outcome.shares.clear();
    const double slowdown = sustained_slowdown(run.sustained, named, predictions);
    add_kernel_times(outcome, named, predictions, slowdown, slowdown / run.sustained.served_label_slowdown());
    add_engine_overhead(outcome, iteration, run.options.engine, run.options.extra);
  }

  ReusedPredictions reused_;
};

// Consecutive iterations a thread takes at a time.
constexpr std::size_t kChunk = 32;

// The cores this process may run on (its affinity mask where the system keeps one), at least one.
std::size_t usable_cores() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<std::size_t>(std::max(1, CPU_COUNT(&set)));
#endif
  return std::max(1U, std::thread::hardware_concurrency());
}

// Predicts `iterations` (the run's from index `first` on) into outcomes[0, size) on
// `predictors.size()` threads (the calling one among them), each taking the next few consecutive
// iterations as it frees: those mostly run the kernels of the one before, which each thread's
// ReusedPredictions remembers. A failed iteration stops the block; the earliest one's error is
// thrown, as a run predicted in order would throw it.
void predict_block(const RunSettings& run, std::span<const WorkloadIteration> iterations, std::vector<IterationPredictor>& predictors,
                   std::vector<IterationOutcome>& outcomes) {
  const std::size_t end = iterations.size();
  outcomes.resize(end);
  std::atomic<std::size_t> next{0};
  std::mutex failure_mutex;
  std::size_t failed_at = end;
  std::exception_ptr failure;
  const auto work = [&](IterationPredictor& predictor) {
    for (std::size_t start; (start = next.fetch_add(kChunk)) < end;) {
      for (std::size_t i = start; i < std::min(end, start + kChunk); ++i) {
        try {
          predictor.predict(run, iterations[i], outcomes[i]);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(failure_mutex);
          if (i < failed_at) failed_at = i, failure = std::current_exception();
          next.store(end);  // the rest would not be used
          return;
        }
      }
    }
  };
  {
    std::vector<std::jthread> helpers;  // joined however this scope ends
    try {
      helpers.reserve(predictors.size() - 1);
      for (std::size_t t = 1; t < predictors.size(); ++t) helpers.emplace_back(work, std::ref(predictors[t]));
    } catch (const std::exception&) {  // no thread (or no memory for one) to be had: those started and this one do the work
    }
    work(predictors[0]);
  }
  if (failure) std::rethrow_exception(failure);
}

// Each request's time to its first token and pace from there, and their median and 90th percentile.
void add_request_times(WorkloadPrediction& result, const RequestTracker& tracker) {
  std::vector<double> ttft, tpot;
  for (const RequestTracker::Live& r : tracker.requests) {
    RequestTime out{r.prompt, r.before ? r.decodes : 1 + r.decodes, r.before ? 0 : r.first_token_us, 0, r.last_us, r.before};
    if (r.decodes > 0 && !r.before) out.time_per_output_token_us = (r.last_us - r.first_token_us) / static_cast<double>(r.decodes);
    result.requests.push_back(out);
    if (r.before) continue;  // neither its first token nor its pace from there were seen
    ttft.push_back(out.time_to_first_token_us);
    if (r.decodes > 0) tpot.push_back(out.time_per_output_token_us);
  }
  result.time_to_first_token_us = percentiles(ttft);
  result.time_per_output_token_us = percentiles(tpot);
}

// Iterations are predicted a block at a time, then join the run's totals in order: the outcomes
// held at once stay a block's, and every sum is taken in the same order on any count of threads.
// 1,024 iterations: a block scheduled beside the prediction is still in the caches when it is
// predicted (4,096 iterations of 256 sequences were 33 MB: a 100,000-request trace took 4% longer
// and 60 MB more); more where more threads predict, two chunks each, so that a block never caps
// the threads a run may use (64 threads: 4,096 iterations, as before).
constexpr std::size_t kBlock = 1024;
std::size_t block_iterations(std::size_t threads) { return std::max(kBlock, 2 * kChunk * threads); }

// The run's totals, joined from its iterations' outcomes in order.
class RunTotals {
 public:
  explicit RunTotals(const RunSettings& run) {
    result_.engine = run.options.engine, result_.sustained = run.sustained;
  }
  void add(std::span<const WorkloadIteration> iterations, const std::vector<IterationOutcome>& outcomes) {
    for (std::size_t i = 0; i < iterations.size(); ++i) {
      const WorkloadIteration& iteration = iterations[i];
      const IterationTime& time = outcomes[i].time;
      const std::vector<OperatorShare>& shares = outcomes[i].shares;
      if (slot_of_share_.size() < shares.size()) slot_of_share_.resize(shares.size(), 0);
      for (std::size_t k = 0; k < shares.size(); ++k) {
        const OperatorShare& share = shares[k];
        OperatorTime& op = operator_named(share.name, slot_of_share_[k]);
        op.us += share.us, op.launches += share.launches;
      }
      result_.total_us += time.total_us();
      result_.overhead_us += time.overhead_us;
      result_.extrapolated_us += time.extrapolated_us;
      result_.served_us += time.served_us;
      if (iteration.phase == Phase::decode) decode_times_.push_back(time.total_us());
      else result_.prefill_us += time.total_us();
      tracker_.add(iteration, result_.total_us);
      result_.iterations.push_back(time);
    }
  }
  WorkloadPrediction finish() && {
    result_.median_decode_iteration_us = percentiles(decode_times_).median;
    // (by name first, as a map keyed by name would list them: std::sort below is not stable)
    std::sort(operators_.begin(), operators_.end(), [](const OperatorTime& a, const OperatorTime& b) { return a.name < b.name; });
    result_.operators = std::move(operators_);
    std::sort(result_.operators.begin(), result_.operators.end(),
              [](const OperatorTime& a, const OperatorTime& b) { return a.us > b.us; });
    add_request_times(result_, tracker_);
    return std::move(result_);
  }

 private:
  // The operator of this name, found where the share in the same place of the iteration before
  // found its own (iterations mostly run the same operators in the same order), else looked up by
  // name; `slot` is that place's remembered index.
  OperatorTime& operator_named(const std::string& name, std::size_t& slot) {
    if (slot < operators_.size() && operators_[slot].name == name) return operators_[slot];
    const auto [found, fresh] = index_by_name_.try_emplace(name, operators_.size());
    if (fresh) operators_.push_back({name, 0, 0});
    slot = found->second;
    return operators_[slot];
  }

  WorkloadPrediction result_;
  std::vector<OperatorTime> operators_;  // one per operator name, in the order first seen
  std::unordered_map<std::string, std::size_t> index_by_name_;
  std::vector<std::size_t> slot_of_share_;  // for the k-th share of an iteration: the index last found
  std::vector<double> decode_times_;
  RequestTracker tracker_;
};

// The options' own checks, and the sustained load they give on `gpu`.
SustainedLoad checked_options(const GpuSpec& gpu, const WorkloadOptions& options) {
  gpu.validate();
  options.engine.validate();
  options.extra.validate();
  detail::require_non_negative("options.threads", options.threads);
  detail::require_at_most("options.threads", options.threads, 1024, "more threads than any machine's cores");
  const SustainedLoad sustained = options.sustained ? *options.sustained : SustainedLoad::of(gpu);
  sustained.validate();
  return sustained;
}

// The threads asked for (options.threads, checked: 0 for one per core).
std::size_t asked_threads(const WorkloadOptions& options) {
  return options.threads > 0 ? static_cast<std::size_t>(options.threads) : usable_cores();
}

// One predictor (and its memo) per thread; no more threads than chunks of `iterations`.
std::vector<IterationPredictor> thread_predictors(const WorkloadOptions& options, std::size_t iterations) {
  const std::size_t threads = asked_threads(options);
  const std::size_t chunks = (iterations + kChunk - 1) / kChunk;
  return std::vector<IterationPredictor>(std::max<std::size_t>(1, std::min(threads, chunks)));
}

}  // namespace

WorkloadPrediction predict_workload(const Predictor& predictor, const Workload& workload, const GpuSpec& gpu,
                                    const WorkloadOptions& options) {
  const SustainedLoad sustained = checked_options(gpu, options);
  check_limits(workload);  // a workload built in code is held to the file's limits
  const std::optional<AttentionImpl> decode_impl =
      options.engine.decode_attention_follows_prompt ? prompt_attention_impl(workload.iterations) : std::nullopt;
  const RunSettings run{predictor, workload, gpu, options, sustained, decode_impl, gpu.compute_capability_major == 9};
  std::vector<IterationPredictor> predictors = thread_predictors(options, workload.iterations.size());
  std::vector<IterationOutcome> outcomes;
  RunTotals totals(run);
  const std::span<const WorkloadIteration> all(workload.iterations);
  const std::size_t block_size = block_iterations(predictors.size());
  for (std::size_t begin = 0; begin < all.size(); begin += block_size) {
    const std::span<const WorkloadIteration> block = all.subspan(begin, std::min(block_size, all.size() - begin));
    predict_block(run, block, predictors, outcomes);
    totals.add(block, outcomes);
  }
  return std::move(totals).finish();
}

WorkloadPrediction predict_trace(const Predictor& predictor, std::string model, const ModelParams& params,
                                 std::span<const TraceRequest> trace, const Deployment& deployment, const SchedulerPolicy& policy,
                                 const GpuSpec& gpu, const WorkloadOptions& options,
                                 const std::function<void(WorkloadIteration&)>& adjust) {
  // generate_workload's checks, then predict_workload's, in that order
  BatchScheduler scheduler = checked_scheduler(params, trace, deployment, policy);
  const SustainedLoad sustained = checked_options(gpu, options);
  const Workload header{std::move(model), params, deployment.tp, deployment.pp, deployment.dtype, {}};

  // The next block of iterations, scheduled, adjusted and checked as generate_workload and
  // predict_workload would (a block's failure is the first of its iterations to fail).
  std::size_t scheduled = 0;
  const std::size_t block_size = block_iterations(asked_threads(options));
  const auto schedule_block = [&](std::vector<WorkloadIteration>& block) {
    block.clear();
    const std::size_t first = scheduled;
    while (block.size() < block_size && !scheduler.done()) {
      block.push_back(next_iteration(scheduler, scheduled, params, deployment));
      if (adjust) adjust(block.back());
      ++scheduled;
    }
    check_sizes(block, first);
  };

  std::vector<WorkloadIteration> block, next_block;
  schedule_block(block);
  // A trace's first iteration runs prompt tokens: the run's prompt attention is named there.
  const std::optional<AttentionImpl> decode_impl =
      options.engine.decode_attention_follows_prompt ? prompt_attention_impl(block) : std::nullopt;
  const RunSettings run{predictor, header, gpu, options, sustained, decode_impl, gpu.compute_capability_major == 9};
  // (A block's worth of threads, unless the first block is the whole trace: its length is not known before.)
  std::vector<IterationPredictor> predictors = thread_predictors(options, block.size());
  const bool overlap = options.threads != 1;  // one thread asked for: the scheduling waits its turn
  std::vector<IterationOutcome> outcomes;
  RunTotals totals(run);
  while (!block.empty()) {
    // The next block is scheduled on a thread of its own while this one is predicted.
    std::exception_ptr scheduling_failure;
    {
      std::jthread scheduling;
      const auto schedule_next = [&] {
        try {
          schedule_block(next_block);
        } catch (...) {
          scheduling_failure = std::current_exception();
        }
      };
      if (overlap) {
        try {
          scheduling = std::jthread(schedule_next);
        } catch (const std::exception&) {  // no thread to be had: scheduled after the block
        }
      }
      predict_block(run, block, predictors, outcomes);  // (on throwing, the scheduling thread is joined first)
      if (scheduling.joinable()) scheduling.join();
      else schedule_next();
    }
    totals.add(block, outcomes);
    if (scheduling_failure) std::rethrow_exception(scheduling_failure);
    std::swap(block, next_block);
  }
  return std::move(totals).finish();
}

}  // namespace pipeweave
