// Kernels as `op:key=value,...` text: the CLI's and the measurement files' way to name one.
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "pipeweave/error.hpp"
#include "pipeweave/io.hpp"

namespace pipeweave {
namespace {

// The key=value pairs of one kernel text; every key must be consumed, so typos are errors.
class KeyValues {
 public:
  // The op names every message's fields, as printable() shows it: it is the input's until checked.
  KeyValues(std::string_view op, std::string_view body) : op_(detail::printable(op, 40)) {
    if (body.ends_with(',')) empty_item();
    while (!body.empty()) {
      const std::size_t comma = body.find(',');
      const std::string_view item = body.substr(0, comma);
      body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
      if (item.empty()) empty_item();
      const std::size_t equals = item.find('=');
      if (equals == std::string_view::npos || equals == 0)
        throw InvalidInput(op_ + ": " + detail::quoted(item) + " is not key=value");
      const std::string key(item.substr(0, equals));
      if (values_.count(key)) throw InvalidInput(op_ + "." + detail::printable(key, 40) + " is given twice");
      values_[key] = std::string(item.substr(equals + 1));
    }
  }

  [[noreturn]] void empty_item() const {  // (a stray comma was once skipped: read as if the text were right)
    throw InvalidInput(op_ + ": an empty item (a comma at the start or the end, or two in a row)");
  }
  bool has(const std::string& key) const { return values_.count(key) != 0; }

  std::int64_t integer(const std::string& key) { return integer_from(take(key), key); }
  std::int64_t integer(const std::string& key, std::int64_t fallback) { return has(key) ? integer(key) : fallback; }
  // A config field held in an int: a value beyond it is refused, not wrapped.
  int small_integer(const std::string& key, int fallback) {
    if (!has(key)) return fallback;
    const std::string text = values_.at(key);
    const std::int64_t value = integer(key);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
      detail::fail_field(op_ + "." + key, detail::quoted(text), "is out of range");
    return static_cast<int>(value);
  }
  int small_integer(const std::string& key) {
    if (!has(key)) return static_cast<int>(integer(key));  // integer() names the missing key
    return small_integer(key, 0);
  }

  double number(const std::string& key) {
    const std::string text = take(key);
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
      detail::fail_field(op_ + "." + key, detail::quoted(text), "must be a finite number");
    return value;
  }
  double number(const std::string& key, double fallback) { return has(key) ? number(key) : fallback; }

  bool flag(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    const std::string text = take(key);
    if (text == "1" || text == "true") return true;
    if (text == "0" || text == "false") return false;
    detail::fail_field(op_ + "." + key, detail::quoted(text), "must be 0, 1, true or false");
  }

  DType dtype(DType fallback) {
    if (!has("dtype")) return fallback;
    const std::string text = take("dtype");
    const auto parsed = parse_dtype(text);
    if (!parsed) detail::fail_field(op_ + ".dtype", detail::quoted(text), "must be one of fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8");
    return *parsed;
  }

  // A '/'-separated list of integers, e.g. q_lens=512/1024/1.
  std::vector<std::int64_t> integers(const std::string& key) {
    const std::string text = take(key);
    std::vector<std::int64_t> out;
    std::string_view rest = text;
    while (true) {
      const std::size_t slash = rest.find('/');
      out.push_back(integer_from(std::string(rest.substr(0, slash)), key));
      if (slash == std::string_view::npos) break;
      rest = rest.substr(slash + 1);
    }
    return out;
  }

  std::string text(const std::string& key, std::string fallback) { return has(key) ? take(key) : fallback; }

  void finish() const {
    if (!values_.empty()) throw InvalidInput(op_ + ": unknown key " + detail::quoted(values_.begin()->first, 40));
  }

 private:
  std::string take(const std::string& key) {
    const auto found = values_.find(key);
    if (found == values_.end()) throw InvalidInput(op_ + "." + key + " is required");
    std::string value = found->second;
    values_.erase(found);
    return value;
  }
  std::int64_t integer_from(const std::string& text, const std::string& key) const {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size())
      detail::fail_field(op_ + "." + key, detail::quoted(text), "must be an integer");
    return value;
  }

  std::string op_;
  std::map<std::string, std::string> values_;
};

Kernel parse_gemm(KeyValues& values) {
  Gemm gemm;
  gemm.m = values.integer("m");
  gemm.n = values.integer("n");
  gemm.k = values.integer("k");
  gemm.dtype = values.dtype(DType::bf16);
  if (values.has("tile_m") || values.has("tile_n") || values.has("tile_k")) {
    GemmConfig config;
    config.tile_m = values.small_integer("tile_m");
    config.tile_n = values.small_integer("tile_n");
    config.tile_k = values.small_integer("tile_k");
    config.split_k = values.small_integer("split_k", 1);
    config.stages = values.small_integer("stages", 0);
    config.cluster_m = values.small_integer("cluster_m", 1);
    config.cluster_n = values.small_integer("cluster_n", 1);
    config.swap_ab = values.flag("swap_ab", false);
    if (values.has("schedule")) config.schedule = detail::gemm_schedule_field("gemm.schedule", values.text("schedule", ""));
    if (values.has("raster")) config.raster = detail::gemm_raster_field("gemm.raster", values.text("raster", ""));
    gemm.config = config;
  } else {
    for (const char* key : {"split_k", "stages", "cluster_m", "cluster_n", "swap_ab", "schedule", "raster"})
      if (values.has(key)) throw InvalidInput(std::string("gemm.") + key + " needs tile_m, tile_n and tile_k too");
  }
  return gemm;
}

Kernel parse_attention(KeyValues& values) {
  Attention attention;
  if (values.has("q_lens") || values.has("kv_lens")) {
    attention.q_lens = values.integers("q_lens");
    attention.kv_lens = values.has("kv_lens") ? values.integers("kv_lens") : attention.q_lens;
  } else {
    const std::int64_t batch = values.integer("batch", 1);
    const std::int64_t q_len = values.integer("q_len");
    const std::int64_t kv_len = values.integer("kv_len", q_len);
    if (batch <= 0) detail::fail_field("attention.batch", batch, "must be positive and finite");
    if (batch > Attention::kMostSequences)
      detail::fail_field("attention.batch", batch, "must be at most " + std::to_string(Attention::kMostSequences) + " sequences");
    attention.q_lens.assign(static_cast<std::size_t>(batch), q_len);
    attention.kv_lens.assign(static_cast<std::size_t>(batch), kv_len);
  }
  attention.heads = values.integer("heads");
  attention.kv_heads = values.integer("kv_heads", attention.heads);
  attention.head_dim = values.integer("head_dim");
  attention.causal = values.flag("causal", true);
  attention.page_size = values.integer("page_size", 0);
  attention.dtype = values.dtype(DType::bf16);
  if (values.has("impl") || values.has("tile_q") || values.has("tile_kv") || values.has("num_splits")) {
    AttentionConfig config;
    const std::string impl = values.text("impl", "flash3");
    if (impl != "flash2" && impl != "flash3") detail::fail_field("attention.impl", detail::quoted(impl), "must be flash2 or flash3");
    config.impl = impl == "flash2" ? AttentionImpl::flash2 : AttentionImpl::flash3;
    if (values.has("tile_q") || values.has("tile_kv")) {
      config.tile_q = values.small_integer("tile_q");
      config.tile_kv = values.small_integer("tile_kv");
      detail::require_positive("attention.tile_q", config.tile_q);  // 0 is not "its own": leave both out
      detail::require_positive("attention.tile_kv", config.tile_kv);
    }  // else an implementation named without its tiles runs its own for the shape and GPU
    config.num_splits = values.small_integer("num_splits", 0);
    attention.config = config;
  }
  return attention;
}

Kernel parse_fused_moe(KeyValues& values) {
  FusedMoe moe;
  moe.tokens = values.integer("tokens");
  moe.experts = values.integer("experts");
  moe.top_k = values.integer("top_k");
  moe.hidden = values.integer("hidden");
  moe.intermediate = values.integer("intermediate");
  moe.dtype = values.dtype(DType::bf16);
  moe.zipf = values.number("zipf", 0.0);
  moe.expert_parallel = values.integer("ep", 1);
  if (values.has("block_m") || values.has("block_n") || values.has("block_k")) {
    FusedMoeConfig config;
    config.block_m = values.small_integer("block_m");
    config.block_n = values.small_integer("block_n");
    config.block_k = values.small_integer("block_k");
    config.stages = values.small_integer("stages", 3);
    config.group_m = values.small_integer("group_m", 1);
    config.warps = values.small_integer("warps", 4);
    moe.config = config;
  }
  return moe;
}

Kernel parse_collective(KeyValues& values, std::string kind) {
  Collective collective;
  if (kind.empty()) kind = values.text("kind", "all_reduce");
  bool known = false;
  for (CollectiveKind candidate : kCollectiveKinds)
    if (kind == to_string(candidate)) collective.kind = candidate, known = true;
  if (!known)
    detail::fail_field("collective.kind", detail::quoted(kind), "must be all_reduce, all_gather, reduce_scatter, all_to_all or send_recv");
  collective.bytes = values.number("bytes");
  collective.ranks = values.small_integer("ranks");
  collective.dtype = values.dtype(DType::bf16);
  return collective;
}

std::string join(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += '/';
    out += std::to_string(values[i]);
  }
  return out;
}

bool all_equal(const std::vector<std::int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [&](std::int64_t v) { return v == values.front(); });
}

// Shortest text that parses back to the same number.
std::string number_text(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

Kernel parse_kernel(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos)
    throw InvalidInput("kernel " + detail::quoted(text) + " must be op:key=value,... (e.g. gemm:m=4096,n=4096,k=4096,dtype=bf16)");
  const std::string op(text.substr(0, colon));
  KeyValues values(op, text.substr(colon + 1));
  auto finish = [&values](Kernel kernel) {
    values.finish();
    return kernel;
  };
  if (op == "gemm") return finish(parse_gemm(values));
  if (op == "attention") return finish(parse_attention(values));
  if (op == "rmsnorm")
    return finish(RmsNorm{values.integer("tokens"), values.integer("hidden"), values.dtype(DType::bf16),
                          values.flag("fused_residual", false)});
  if (op == "silu_mul") return finish(SiluMul{values.integer("tokens"), values.integer("dim"), values.dtype(DType::bf16)});
  if (op == "fused_moe") return finish(parse_fused_moe(values));
  if (op == "elementwise")
    return finish(Elementwise{values.number("bytes"), values.number("flops", 0), values.number("xu_ops", 0)});
  if (op == "collective") return finish(parse_collective(values, ""));
  for (CollectiveKind kind : kCollectiveKinds)
    if (op == to_string(kind)) return finish(parse_collective(values, op));
  throw InvalidInput("unknown op " + detail::quoted(op, 40) + "; known: gemm, attention, rmsnorm, silu_mul, fused_moe, elementwise, collective");
}

std::string to_string(const Kernel& kernel) {
  std::ostringstream out;
  std::visit(
      [&out](const auto& op) {
        using Op = std::decay_t<decltype(op)>;
        out << to_string(Op::family) << ':';
        if constexpr (std::is_same_v<Op, Gemm>) {
          out << "m=" << op.m << ",n=" << op.n << ",k=" << op.k << ",dtype=" << to_string(op.dtype);
          if (op.config)
            out << ",tile_m=" << op.config->tile_m << ",tile_n=" << op.config->tile_n << ",tile_k=" << op.config->tile_k
                << ",split_k=" << op.config->split_k << ",stages=" << op.config->stages
                << ",cluster_m=" << op.config->cluster_m << ",cluster_n=" << op.config->cluster_n
                << ",swap_ab=" << (op.config->swap_ab ? 1 : 0) << ",schedule=" << to_string(op.config->schedule)
                << ",raster=" << to_string(op.config->raster);
        } else if constexpr (std::is_same_v<Op, Attention>) {
          if (all_equal(op.q_lens) && all_equal(op.kv_lens))
            out << "batch=" << op.q_lens.size() << ",q_len=" << op.q_lens.front() << ",kv_len=" << op.kv_lens.front();
          else
            out << "q_lens=" << join(op.q_lens) << ",kv_lens=" << join(op.kv_lens);
          out << ",heads=" << op.heads << ",kv_heads=" << op.kv_heads << ",head_dim=" << op.head_dim
              << ",causal=" << (op.causal ? 1 : 0) << ",page_size=" << op.page_size << ",dtype=" << to_string(op.dtype);
          if (op.config) {
            out << ",impl=" << to_string(op.config->impl);
            if (!op.config->has_own_tiles()) out << ",tile_q=" << op.config->tile_q << ",tile_kv=" << op.config->tile_kv;
            out << ",num_splits=" << op.config->num_splits;
          }
        } else if constexpr (std::is_same_v<Op, RmsNorm>) {
          out << "tokens=" << op.tokens << ",hidden=" << op.hidden << ",dtype=" << to_string(op.dtype)
              << ",fused_residual=" << (op.fused_residual ? 1 : 0);
        } else if constexpr (std::is_same_v<Op, SiluMul>) {
          out << "tokens=" << op.tokens << ",dim=" << op.dim << ",dtype=" << to_string(op.dtype);
        } else if constexpr (std::is_same_v<Op, FusedMoe>) {
          out << "tokens=" << op.tokens << ",experts=" << op.experts << ",top_k=" << op.top_k << ",hidden=" << op.hidden
              << ",intermediate=" << op.intermediate << ",dtype=" << to_string(op.dtype);
          if (op.zipf != 0) out << ",zipf=" << number_text(op.zipf);
          if (op.expert_parallel != 1) out << ",ep=" << op.expert_parallel;
          if (op.config)
            out << ",block_m=" << op.config->block_m << ",block_n=" << op.config->block_n
                << ",block_k=" << op.config->block_k << ",stages=" << op.config->stages << ",group_m=" << op.config->group_m
                << ",warps=" << op.config->warps;
        } else if constexpr (std::is_same_v<Op, Elementwise>) {
          out << "bytes=" << number_text(op.bytes) << ",flops=" << number_text(op.flops)
              << ",xu_ops=" << number_text(op.xu_ops);
        } else {
          out << "kind=" << to_string(op.kind) << ",bytes=" << number_text(op.bytes) << ",ranks=" << op.ranks
              << ",dtype=" << to_string(op.dtype);
        }
      },
      kernel.op());
  return out.str();
}

std::string describe_config(const Kernel& kernel, const GpuSpec& gpu) {
  std::ostringstream out;
  bool defaulted = false;
  if (const Gemm* gemm = kernel.get_if<Gemm>()) {
    GemmConfig config = gemm->config ? *gemm->config : default_config(*gemm, gpu);
    if (config.stages == 0) config.stages = detail::gemm_stages_that_fit(config, gemm->dtype, gpu);
    out << "tile " << config.tile_m << 'x' << config.tile_n << 'x' << config.tile_k << " split_k " << config.split_k
        << " stages " << config.stages << " cluster " << config.cluster_m << 'x' << config.cluster_n
        << (config.swap_ab ? " swap_ab " : " ") << to_string(config.schedule) << " raster " << to_string(config.raster);
    defaulted = !gemm->config;
  } else if (const Attention* attention = kernel.get_if<Attention>()) {
    const AttentionConfig config = effective_config(*attention, gpu);
    out << to_string(config.impl) << " tile " << config.tile_q << 'x' << config.tile_kv << " splits "
        << attention_splits(*attention, config, gpu);
    defaulted = !attention->config;
  } else if (const FusedMoe* moe = kernel.get_if<FusedMoe>()) {
    const FusedMoeConfig config = moe->config ? *moe->config : default_config(*moe, gpu);
    out << "block " << config.block_m << 'x' << config.block_n << 'x' << config.block_k << " stages " << config.stages
        << " group_m " << config.group_m << " warps " << config.warps;
    defaulted = !moe->config;
  } else {
    out << "fixed by the op";
  }
  if (defaulted) out << " (default)";
  return out.str();
}

}  // namespace pipeweave
