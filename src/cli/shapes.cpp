// `pipeweave shapes`: the shape lists `pipeweave collect` measures. Most shapes are the layers of
// real models at tensor-parallel splits 1/2/4/8 and token counts from 1 to 32k; the rest are
// random. The generator is its own (splitmix64 and integer arithmetic), so the same seed gives
// the same list with any compiler and standard library.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "commands.hpp"
#include "pipeweave/error.hpp"
#include "flags.hpp"
#include "tools.hpp"

namespace pipeweave::cli {
namespace {

struct ModelShape {
  const char* name;
  int hidden, intermediate, heads, kv_heads, head_dim, vocab;
};

// From each model's Hugging Face config.json.
constexpr ModelShape kModels[] = {
    {"Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256},   {"Llama-3.1-70B", 8192, 28672, 64, 8, 128, 128256},
    {"Qwen2.5-7B", 3584, 18944, 28, 4, 128, 152064},     {"Qwen2.5-14B", 5120, 13824, 40, 8, 128, 152064},
    {"Qwen2.5-32B", 5120, 27648, 40, 8, 128, 152064},    {"Qwen3-8B", 4096, 12288, 32, 8, 128, 151936},
    {"Qwen3-32B", 5120, 25600, 64, 8, 128, 151936},      {"Mistral-7B", 4096, 14336, 32, 8, 128, 32768},
    {"Mixtral-8x7B (experts)", 4096, 14336, 32, 8, 128, 32000},
};
constexpr int kTensorParallel[] = {1, 2, 4, 8};

// Attention heads of models whose head size is not 128 (each model's config.json): small models
// at 64, Gemma at 256. Attention lists for those head sizes draw from these (--head-dim).
struct AttentionHeads {
  const char* name;
  int heads, kv_heads, head_dim;
};
constexpr AttentionHeads kOtherHeadSizes[] = {
    {"Llama-3.2-1B", 32, 8, 64}, {"TinyLlama-1.1B", 32, 4, 64}, {"Qwen2.5-0.5B", 14, 2, 64},
    {"SmolLM2-1.7B", 32, 32, 64}, {"Gemma-2-2B", 8, 4, 256},   {"Gemma-2-9B", 16, 8, 256},
    {"Gemma-7B", 16, 16, 256},    {"Gemma-3-4B", 8, 4, 256},   {"Gemma-3-12B", 16, 8, 256},
};

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {  // splitmix64
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }
  // Log-uniform integer in [low, high], rounded to a multiple of `step` (at least `step`).
  std::int64_t log_uniform(std::int64_t low, std::int64_t high, std::int64_t step = 1) {
    const double value = std::exp(std::log(static_cast<double>(low)) + unit() * std::log(static_cast<double>(high) / low));
    return std::max<std::int64_t>(step, static_cast<std::int64_t>(std::llround(value / step)) * step);
  }

 private:
  std::uint64_t state_;
};

// Token counts a serving engine batches: decode batches, chunked-prefill chunks, whole prompts.
std::int64_t tokens(Random& random) {
  constexpr std::int64_t kCommon[] = {1,   2,   4,    8,    16,   24,   32,   48,   64,    96,    128,   192,   256,  384,
                                      512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
  if (random.unit() < 0.5) return kCommon[random.below(std::size(kCommon))];
  return random.log_uniform(1, 32768);
}

constexpr double kMaxOperandBytes = 1024.0 * 1024 * 1024;  // what pipeweave-collect allocates
constexpr double kMaxGemmFlops = 2e12;                     // about 2 ms of bf16 on an H100: keeps collection short

// The rows drawn, in order, each once. The set holds views of the list's own strings, whose room is
// reserved for `count` up front so that no string moves: a second copy of a million attention rows
// (hundreds of bytes each) was most of `shapes --count 1000000`'s time.
class DistinctRows {
 public:
  explicit DistinctRows(int count) {
    rows_.reserve(static_cast<std::size_t>(count));
    seen_.reserve(static_cast<std::size_t>(count));
  }
  int size() const { return static_cast<int>(rows_.size()); }
  void add(std::string row) {
    if (rows_.size() == rows_.capacity() || seen_.contains(row)) return;  // (full: the views would move)
    rows_.push_back(std::move(row));
    seen_.insert(rows_.back());
  }
  std::vector<std::string> take() {
    seen_.clear();
    return std::move(rows_);
  }

 private:
  std::vector<std::string> rows_;
  std::unordered_set<std::string_view> seen_;
};

std::vector<std::string> gemm_shapes(Random& random, int count, const std::vector<std::string>& dtypes) {
  DistinctRows rows(count);  // (a hash: a tree of a million shapes took seconds)
  for (int attempts = 0; rows.size() < count && attempts < count * 100; ++attempts) {
    const std::string& dtype = dtypes[static_cast<std::size_t>(rows.size()) % dtypes.size()];
    std::int64_t m = tokens(random), n = 0, k = 0;
    if (random.unit() < 0.7) {
      const ModelShape& model = kModels[random.below(std::size(kModels))];
      const int tp = kTensorParallel[random.below(std::size(kTensorParallel))];
      switch (random.below(5)) {
        case 0: n = std::int64_t{model.heads + 2 * model.kv_heads} * model.head_dim / tp, k = model.hidden; break;  // QKV
        case 1: n = model.hidden, k = std::int64_t{model.heads} * model.head_dim / tp; break;                    // O
        case 2: n = 2 * std::int64_t{model.intermediate} / tp, k = model.hidden; break;                          // gate-up
        case 3: n = model.hidden, k = model.intermediate / tp; break;                                             // down
        default: n = model.vocab / tp, k = model.hidden, m = std::min<std::int64_t>(m, 512); break;               // LM head (decode)
      }
    } else {
      n = random.log_uniform(256, 65536, 64), k = random.log_uniform(256, 32768, 64);
    }
    const double in_bytes = dtype == "bf16" || dtype == "fp16" ? 2 : 1;
    if (n % 16 || k % 16) continue;  // cuBLASLt's fp8 kernels need 16-element alignment; keep all types alike
    if (m * k * in_bytes > kMaxOperandBytes || n * k * in_bytes > kMaxOperandBytes || m * n * 2.0 > kMaxOperandBytes) continue;
    if (2.0 * m * n * k > kMaxGemmFlops) continue;
    rows.add(fmt::format("{},{},{},{}", dtype, m, n, k));
  }
  return rows.take();
}

// RMSNorm over the hidden size, SiLU-and-mul over the (tensor-parallel) intermediate size.
std::vector<std::string> row_shapes(Random& random, int count, bool norm, const std::vector<std::string>& dtypes) {
  DistinctRows rows(count);
  for (int attempts = 0; rows.size() < count && attempts < count * 100; ++attempts) {
    const std::string& dtype = dtypes[static_cast<std::size_t>(rows.size()) % dtypes.size()];
    const std::int64_t t = tokens(random);
    std::int64_t width = 0;
    if (random.unit() < 0.6) {
      const ModelShape& model = kModels[random.below(std::size(kModels))];
      width = norm ? model.hidden : model.intermediate / kTensorParallel[random.below(std::size(kTensorParallel))];
    } else {
      width = norm ? random.log_uniform(1024, 16384, 128) : random.log_uniform(1024, 32768, 128);
    }
    if (static_cast<double>(t) * width * 2 * (norm ? 1 : 2) > kMaxOperandBytes) continue;
    rows.add(norm ? fmt::format("{},{},{},{}", dtype, t, width, random.below(2)) : fmt::format("{},{},{}", dtype, t, width));
  }
  return rows.take();
}

// Attention batches: causal prefill (ragged, some with a cached prefix, as chunked prefill
// makes them) and decode (one new token per sequence over ragged contexts), with the head
// counts of the models above split over 1/2/4/8 GPUs.
// `serving_decode`: decode batches only, at the contexts a serving run holds: each batch draws a
// context cap C (64 to 8192 tokens) and every request a context up to C. The list above draws
// contexts up to 32k for half of each batch, so a batch of 40 almost always holds a 20k+ one,
// and a model trained on it alone overshot short-context decode (docs/experiments/measured-kernels.md).
enum class DecodeList { none, serving, long_context };

std::vector<std::string> attention_shapes(Random& random, int count, const std::vector<std::string>& dtypes,
                                          DecodeList decode_list, int head_dim) {
  const bool serving_decode = decode_list == DecodeList::serving;
  // The models to draw from: kModels' (all of head size 128), or those of another head size.
  std::vector<AttentionHeads> models;
  if (head_dim == 128) {
    for (const ModelShape& model : kModels) models.push_back({model.name, model.heads, model.kv_heads, model.head_dim});
  } else {
    for (const AttentionHeads& model : kOtherHeadSizes)
      if (model.head_dim == head_dim) models.push_back(model);
  }
  constexpr double kMaxKvBytes = 8.0 * 1024 * 1024 * 1024;  // K and V of the whole batch
  DistinctRows rows(count);
  auto join = [](const std::vector<std::int64_t>& values) {
    std::string text;
    for (std::int64_t v : values) {
      if (!text.empty()) text += '/';
      text += std::to_string(v);
    }
    return text;
  };
  for (int attempts = 0; rows.size() < count && attempts < count * 100; ++attempts) {
    const std::string& dtype = dtypes[static_cast<std::size_t>(rows.size()) % dtypes.size()];
    const AttentionHeads& model = models[random.below(static_cast<std::int64_t>(models.size()))];
    const int tp = kTensorParallel[random.below(std::size(kTensorParallel))];
    const std::int64_t heads = std::max(1, model.heads / tp), kv_heads = std::max(1, model.kv_heads / tp);
    if (heads % kv_heads) continue;
    std::vector<std::int64_t> q_lens, kv_lens;
    const bool decode = decode_list != DecodeList::none || random.unit() < 0.5;
    if (decode_list == DecodeList::long_context) {
      // Large decode batches over long contexts: half uniform (every sequence at the cap, as a
      // benchmark or a batch of equal requests holds), half ragged up to it.
      const std::int64_t batch = random.log_uniform(8, 256);
      const std::int64_t cap = random.log_uniform(1024, 32768);
      const bool uniform = random.unit() < 0.5;
      for (std::int64_t b = 0; b < batch; ++b) q_lens.push_back(1), kv_lens.push_back(uniform ? cap : random.log_uniform(16, cap));
    } else if (serving_decode) {
      const std::int64_t batch = random.log_uniform(1, 256);
      const std::int64_t cap = random.log_uniform(64, 8192);
      for (std::int64_t b = 0; b < batch; ++b) q_lens.push_back(1), kv_lens.push_back(random.log_uniform(16, cap));
    } else if (decode) {
      const std::int64_t batch = random.log_uniform(1, 256);
      const std::int64_t typical = random.log_uniform(64, 32768);
      for (std::int64_t b = 0; b < batch; ++b) {
        q_lens.push_back(1);
        kv_lens.push_back(std::max<std::int64_t>(1, random.unit() < 0.5 ? typical : random.log_uniform(16, 32768)));
      }
    } else {
      const std::int64_t batch = random.log_uniform(1, 16);
      std::int64_t total = 0;
      for (std::int64_t b = 0; b < batch && total < 32768; ++b) {
        const std::int64_t q = std::min<std::int64_t>(random.log_uniform(16, 16384), 32768 - total);
        const std::int64_t prefix = random.unit() < 0.3 ? random.log_uniform(16, 16384) : 0;
        q_lens.push_back(q), kv_lens.push_back(q + prefix), total += q;
      }
    }
    double kv_tokens = 0;
    for (std::int64_t kv : kv_lens) kv_tokens += static_cast<double>(kv);
    if (kv_tokens * kv_heads * model.head_dim * 2 * 2 > kMaxKvBytes) continue;
    rows.add(fmt::format("{},{},{},{},{},{},1", dtype, join(q_lens), join(kv_lens), heads, kv_heads, model.head_dim));
  }
  return rows.take();
}

struct ShapesOptions {
  std::string op;
  int count = 0;  // 0: the op's default
  int seed = 1;
  std::string dtype_text;
  std::optional<int> head_dim;  // --head-dim, for the attention lists only
};

FlagParser shapes_flags(ShapesOptions& o) {
  FlagParser flags("shapes");
  flags.text("--op", o.op)
      .whole("--count", o.count, 1, 1000000)
      .whole("--seed", o.seed, 0, 2147483647)
      .text("--dtypes", o.dtype_text)
      .choice("--head-dim", o.head_dim, {{"64", 64}, {"128", 128}, {"256", 256}});
  return flags;
}

// Which list --op asks for; each draws from its own stream of the seed.
enum class ShapeList { gemm, rmsnorm, silu_mul, attention, attention_decode, attention_decode_long };

ShapeList shape_list(const std::string& op) {
  const std::pair<const char*, ShapeList> lists[] = {{"gemm", ShapeList::gemm},
                                                     {"rmsnorm", ShapeList::rmsnorm},
                                                     {"silu_mul", ShapeList::silu_mul},
                                                     {"attention", ShapeList::attention},
                                                     {"attention_decode", ShapeList::attention_decode},
                                                     {"attention_decode_long", ShapeList::attention_decode_long}};
  for (const auto& [name, list] : lists)
    if (op == name) return list;
  FlagParser::fail("--op", op, "must be gemm, rmsnorm, silu_mul, attention, attention_decode or attention_decode_long");
}

// The list's data types: --dtypes, else bf16 (and fp8_e4m3 for GEMMs).
std::vector<std::string> list_dtypes(const std::string& dtype_text, bool gemm) {
  const std::vector<std::string> dtypes = split_list("--dtypes", dtype_text.empty() ? (gemm ? "bf16,fp8_e4m3" : "bf16") : dtype_text);
  if (dtypes.empty()) FlagParser::fail("--dtypes", dtype_text, "must name at least one data type");
  for (const std::string& dtype : dtypes)
    if (dtype != "bf16" && dtype != "fp16" && (!gemm || dtype != "fp8_e4m3"))
      FlagParser::fail("--dtypes", dtype, gemm ? "must list bf16, fp16 or fp8_e4m3" : "must list bf16 or fp16");
  for (std::size_t i = 1; i < dtypes.size(); ++i)  // (bf16,bf16 weighted the list's types, unsaid)
    if (std::find(dtypes.begin(), dtypes.begin() + static_cast<std::ptrdiff_t>(i), dtypes[i]) != dtypes.begin() + static_cast<std::ptrdiff_t>(i))
      FlagParser::fail("--dtypes", dtype_text, "must list each data type once, " + dtypes[i] + " is listed twice");
  return dtypes;
}

}  // namespace

int shapes_command(int argc, const char* const* argv, int first) {
  ShapesOptions options;
  shapes_flags(options).parse(argc, argv, first);
  const ShapeList list = shape_list(options.op);
  const bool gemm = list == ShapeList::gemm, norm = list == ShapeList::rmsnorm;
  const DecodeList decode_list = list == ShapeList::attention_decode        ? DecodeList::serving
                                 : list == ShapeList::attention_decode_long ? DecodeList::long_context
                                                                            : DecodeList::none;
  const bool attention = list == ShapeList::attention || decode_list != DecodeList::none;
  const std::vector<std::string> dtypes = list_dtypes(options.dtype_text, gemm);
  if (options.head_dim && !attention)
    FlagParser::fail("--head-dim", std::to_string(*options.head_dim), "applies to --op attention, attention_decode and attention_decode_long only");
  constexpr int kDefaultCount[] = {2600, 3200, 3200, 3200, 800, 400};  // in ShapeList order
  const int count = options.count > 0 ? options.count : kDefaultCount[static_cast<int>(list)];
  // Each list's own stream (numbers kept from when the lists were added, so that seeds draw the
  // lists they always drew).
  constexpr std::uint64_t kStream[] = {1, 2, 3, 4, 5, 6};
  Random random(static_cast<std::uint64_t>(options.seed) * 0x2545f4914f6cdd1dull + kStream[static_cast<int>(list)]);
  const std::vector<std::string> rows = gemm        ? gemm_shapes(random, count, dtypes)
                                        : attention ? attention_shapes(random, count, dtypes, decode_list, options.head_dim.value_or(128))
                                                    : row_shapes(random, count, norm, dtypes);
  fmt::print("{}\n", gemm        ? "dtype,m,n,k"
                    : norm      ? "dtype,tokens,hidden,fused_residual"
                    : attention ? "dtype,q_lens,kv_lens,heads,kv_heads,head_dim,causal"
                                : "dtype,tokens,dim");
  for (const std::string& row : rows) fmt::print("{}\n", row);
  return 0;
}

std::vector<std::string> shapes_flag_names() {
  ShapesOptions options;
  return shapes_flags(options).names();
}

}  // namespace pipeweave::cli
