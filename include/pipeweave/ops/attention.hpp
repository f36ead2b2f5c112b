#pragma once
// Attention as FlashAttention-2/3 run it (the kernels vLLM and SGLang call), prefill and
// decode alike, over a batch of sequences of their own query and KV lengths.
//
// Work units: one CTA per (query tile of tile_q rows, head) and per KV split. For decode
// (every sequence has one query token) the query heads that share a KV head are packed
// into the tile's rows, as both implementations do ("pack GQA" / "seqlenq_ngroups_swapped"),
// so units run per KV head. A unit walks the KV it may see (all of it, or under a causal
// mask up to its last query row) in blocks of tile_kv: QK^T and PV on the tensor pipe, an
// exp per score on the XU, the online-softmax bookkeeping on the FMA pipe, K and V staged
// through shared memory. Split-KV (flash-decoding) uses FlashAttention's own heuristic for
// the number of splits and a combine pass over fp32 partial outputs.
// Mapping: FlashAttention-2's plain grid is list-scheduled in launch order;
// FlashAttention-3's scheduler hands out the longest units first.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "pipeweave/detail/list_schedule.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

enum class AttentionImpl : std::uint8_t { flash2, flash3 };

constexpr std::string_view to_string(AttentionImpl impl) { return impl == AttentionImpl::flash2 ? "flash2" : "flash3"; }

// tile_q = tile_kv = 0 names the implementation alone: it runs its own tiles for the shape and
// the GPU (resolved_config), as a serving engine that picks FlashAttention-2 or -3 gets them.
struct AttentionConfig {
  AttentionImpl impl = AttentionImpl::flash3;
  int tile_q = 0;
  int tile_kv = 0;
  int num_splits = 0;  // 0: FlashAttention's heuristic
  static AttentionConfig own_tiles(AttentionImpl impl) { return AttentionConfig{.impl = impl}; }
  bool has_own_tiles() const { return tile_q == 0 && tile_kv == 0; }
  void validate() const {
    if (!has_own_tiles()) {
      detail::require_positive("attention.tile_q", tile_q);
      detail::require_positive("attention.tile_kv", tile_kv);
      // FlashAttention's tiles are whole MMA fragments of 16 rows (FA2's m16n8k16, FA3's
      // warpgroup MMA of 64 rows, a KV tile in steps of 16): a tile of 7 rows is no kernel.
      if (tile_q % 16 != 0) detail::fail_field("attention.tile_q", tile_q, "must be a multiple of 16 (an MMA's rows)");
      if (tile_kv % 16 != 0) detail::fail_field("attention.tile_kv", tile_kv, "must be a multiple of 16 (an MMA's rows)");
    }
    detail::require_non_negative("attention.num_splits", num_splits);
  }
  bool operator==(const AttentionConfig&) const = default;
};

struct Attention {
  static constexpr OpFamily family = OpFamily::attention;
  std::vector<std::int64_t> q_lens;   // new query tokens per sequence
  std::vector<std::int64_t> kv_lens;  // KV length per sequence, the new tokens included
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  bool causal = true;
  std::int64_t page_size = 0;  // 0: contiguous KV cache; else the paged cache's block size
  DType dtype = DType::bf16;
  std::optional<AttentionConfig> config;

  // `batch` sequences of `seq_len` new tokens each, no cached prefix.
  static Attention prefill(std::int64_t batch, std::int64_t seq_len, std::int64_t heads, std::int64_t kv_heads,
                           std::int64_t head_dim, DType dtype = DType::bf16) {
    Attention attention;
    attention.q_lens.assign(static_cast<std::size_t>(std::max<std::int64_t>(batch, 0)), seq_len);
    attention.kv_lens = attention.q_lens;
    attention.heads = heads, attention.kv_heads = kv_heads, attention.head_dim = head_dim, attention.dtype = dtype;
    return attention;
  }
  // `batch` sequences of one new token each over `kv_len` tokens of context.
  static Attention decode(std::int64_t batch, std::int64_t kv_len, std::int64_t heads, std::int64_t kv_heads,
                          std::int64_t head_dim, DType dtype = DType::bf16) {
    Attention attention;
    attention.q_lens.assign(static_cast<std::size_t>(std::max<std::int64_t>(batch, 0)), 1);
    attention.kv_lens.assign(attention.q_lens.size(), kv_len);
    attention.heads = heads, attention.kv_heads = kv_heads, attention.head_dim = head_dim, attention.dtype = dtype;
    return attention;
  }

  // The most sequences one attention kernel takes: far past any engine's batch (thousands), and
  // small enough that a batch's lists stay a few megabytes.
  static constexpr std::int64_t kMostSequences = 1 << 20;

  bool is_decode() const {
    return std::all_of(q_lens.begin(), q_lens.end(), [](std::int64_t q) { return q == 1; });
  }

  void validate() const {
    if (q_lens.empty()) detail::fail_field("attention.q_lens", "[]", "must hold one entry per sequence");
    if (q_lens.size() > kMostSequences)
      detail::fail_field("attention.q_lens", std::to_string(q_lens.size()) + " sequences",
                         "must hold at most " + std::to_string(kMostSequences) + " (no engine batches more)");
    if (kv_lens.size() != q_lens.size())
      detail::fail_field("attention.kv_lens", kv_lens.size(), "must have as many entries as attention.q_lens");
    for (std::size_t i = 0; i < q_lens.size(); ++i) {
      if (q_lens[i] <= 0)  // (the field's name built only for the error: validation runs on every prediction)
        detail::require_positive("attention.q_lens[" + std::to_string(i) + "]", q_lens[i]);
      if (kv_lens[i] > detail::kMostDimension)
        detail::require_dimension("attention.kv_lens[" + std::to_string(i) + "]", kv_lens[i]);
      if (kv_lens[i] < q_lens[i])
        detail::fail_field("attention.kv_lens[" + std::to_string(i) + "]", kv_lens[i],
                           "must be >= the sequence's q_len (" + std::to_string(q_lens[i]) + ")");
    }
    detail::require_positive("attention.heads", heads);
    detail::require_positive("attention.kv_heads", kv_heads);
    detail::require_at_most("attention.heads", heads, 65536, "no model has more");
    if (heads % kv_heads != 0)
      detail::fail_field("attention.kv_heads", kv_heads, "must divide attention.heads (" + std::to_string(heads) + ")");
    detail::require_positive("attention.head_dim", head_dim);
    if (head_dim > 256) detail::fail_field("attention.head_dim", head_dim, "must be <= 256");
    if (page_size > detail::kMostDimension) detail::require_dimension("attention.page_size", page_size);
    detail::require_non_negative("attention.page_size", page_size);
    if (dtype == DType::fp32 || dtype == DType::tf32 || dtype == DType::int8)
      detail::fail_field("attention.dtype", to_string(dtype), "must be fp16, bf16 or fp8");
    if (config) config->validate();
  }
  bool operator==(const Attention&) const = default;
};

// FlashAttention-2's tiles for a head size on a GPU (flash_fwd_launch_template.h, what PyTorch's
// flash backend runs, Hopper included): its forward kernel's kBlockM x kBlockN, or its split-KV
// kernel's 64-row tiles, which decode runs when the KV is split. The forward tiles depend on the
// GPU: sm_86/sm_89 take square 64 x 64 tiles under a causal mask (and narrower ones without) up
// to head size 160, and head size 256 takes 128 x 64 (8 warps) only where that fits a CTA's shared
// memory but two 64 x 64 CTAs do not fit an SM (A100), 64 x 64 otherwise (Hopper: measured,
// data/measurements/*/attention_hd256.csv.gz; Ada and sm_86 boards). Head sizes round up to
// 32, 64, 96, 128, 160, 192, and past 192 to 256 (FA2's head_size_rounded).
inline AttentionConfig flash2_tiles(std::int64_t head_dim, bool causal, bool split_kernel, const GpuSpec& gpu) {
  AttentionConfig config;
  config.impl = AttentionImpl::flash2;
  if (split_kernel) {
    config.tile_q = 64;
    config.tile_kv = head_dim <= 64 ? 256 : (head_dim <= 128 ? 128 : 64);
    return config;
  }
  const bool sm8x = gpu.compute_capability_major == 8 && gpu.compute_capability_minor > 0;
  auto tiles = [&](int q, int kv) {
    config.tile_q = q, config.tile_kv = kv;
    return config;
  };
  if (head_dim <= 64) return tiles(128, 128);
  if (head_dim <= 96) return sm8x && causal ? tiles(64, 64) : tiles(128, 64);
  if (head_dim <= 128) return sm8x ? (causal ? tiles(64, 64) : tiles(128, 32)) : tiles(128, 64);
  if (head_dim <= 160) return sm8x ? (causal ? tiles(64, 64) : tiles(128, 64)) : tiles(128, 32);
  if (head_dim <= 192) return tiles(128, 64);
  const double hd = 256;
  const double block_smem = gpu.smem_bytes_per_sm - 1024;  // a CTA may take all but 1 KiB of an SM's
  return block_smem >= 2 * hd * (128 + 2 * 64) && gpu.smem_bytes_per_sm < 4 * hd * (64 + 2 * 64) ? tiles(128, 64)
                                                                                                  : tiles(64, 64);
}
// Decode is given the split-KV kernel's tiles; demand() moves it to the forward kernel's when
// FlashAttention's heuristic does not split.
inline AttentionConfig flash2_config(const Attention& attention, const GpuSpec& gpu) {
  // FlashAttention-2 drops the causal mask when every query is one token (decode)
  const bool decode = attention.is_decode();
  return flash2_tiles(attention.head_dim, attention.causal && !decode, decode, gpu);
}

// FlashAttention-3's tiles on Hopper for this head size, 16-bit inputs (hopper/tile_size.h,
// tile_size_fwd_sm90): kBlockM x kBlockN, the KV tile narrower under a causal mask and for a
// paged cache read without TMA (pages that do not hold whole KV tiles, e.g. SGLang's pages of
// one token or vLLM's of 16). Decode uses the same tiles, its query heads packed into the rows;
// it drops the causal mask (one query sees all its keys) except for head sizes 65-128 over a
// paged cache, which keep it for its narrower KV tile (flash_api.cpp, "special case of hdim 128").
inline AttentionConfig flash3_config(const Attention& attention) {
  const std::int64_t hd = attention.head_dim;
  const bool causal =
      attention.causal && (!attention.is_decode() || (hd > 64 && hd <= 128 && attention.page_size > 0));
  const bool fp8 = dtype_bytes(attention.dtype) == 1;
  auto tile_kv = [&](bool paged_non_tma) -> int {
    if (fp8) {
      if (hd <= 64) return 160;
      if (hd <= 96) return 128;
      if (hd <= 128) return paged_non_tma ? 160 : 224;
      return hd <= 192 ? 160 : 128;
    }
    if (hd <= 64) return causal || paged_non_tma ? 128 : 192;
    if (hd <= 96) return paged_non_tma ? 128 : 144;
    if (hd <= 128) return causal || paged_non_tma ? 128 : 176;
    if (hd <= 192) return paged_non_tma ? 96 : 128;
    return 80;
  };
  AttentionConfig config;
  config.impl = AttentionImpl::flash3;
  config.tile_q = hd <= 96 ? 192 : 128;
  // A paged cache is read through TMA only when pages hold whole KV tiles and the query rows of
  // one head group fill more than a tile (get_pagedkv_tma): never for decode.
  const std::int64_t longest_q =
      attention.q_lens.empty() ? 0 : *std::max_element(attention.q_lens.begin(), attention.q_lens.end());
  const std::int64_t groups = attention.kv_heads > 0 ? attention.heads / attention.kv_heads : 1;  // validated later
  // (in doubles: a query length of 10^18 times the groups overflowed int64; exact below 2^53)
  const bool fills_tile = static_cast<double>(longest_q) * static_cast<double>(groups) > config.tile_q;
  const int tma_tile_kv = tile_kv(false);
  config.tile_kv = tile_kv(attention.page_size > 0 && (attention.page_size % tma_tile_kv != 0 || !fills_tile));
  return config;
}

// The implementation a serving engine uses on this GPU: FlashAttention-3 on Hopper (its kernels
// are built for sm_90 alone), FlashAttention-2 elsewhere, with their kernels' tiles.
inline AttentionConfig default_config(const Attention& attention, const GpuSpec& gpu) {
  return gpu.compute_capability_major == 9 ? flash3_config(attention) : flash2_config(attention, gpu);
}

// The config the kernel runs with on `gpu`: the one it names, the named implementation's own
// tiles where it names the implementation alone, else the GPU's default.
inline AttentionConfig resolved_config(const Attention& attention, const AttentionConfig& named, const GpuSpec& gpu) {
  if (!named.has_own_tiles()) return named;
  AttentionConfig config = named.impl == AttentionImpl::flash2 ? flash2_config(attention, gpu) : flash3_config(attention);
  config.num_splits = named.num_splits;
  return config;
}
inline AttentionConfig resolved_config(const Attention& attention, const GpuSpec& gpu) {
  return attention.config ? resolved_config(attention, *attention.config, gpu) : default_config(attention, gpu);
}

namespace detail {

// FlashAttention's num_splits_heuristic (flash_api.cpp): the fewest splits whose wave
// efficiency is within 85% of the best, skipping split counts that change nothing.
inline int flash_num_splits(double units, double sm_count, double kv_blocks) {
  if (units >= 0.8 * sm_count) return 1;
  const int max_splits = static_cast<int>(std::min({128.0, sm_count, kv_blocks}));
  auto eligible = [kv_blocks](int splits) {
    return splits == 1 || ceil_div(kv_blocks, splits) != ceil_div(kv_blocks, splits - 1);
  };
  auto efficiency = [&](int splits) {
    const double waves = units * splits / sm_count;
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (int splits = 1; splits <= max_splits; ++splits)
    if (eligible(splits)) best = std::max(best, efficiency(splits));
  for (int splits = 1; splits <= max_splits; ++splits)
    if (eligible(splits) && efficiency(splits) >= 0.85 * best) return splits;
  return 1;
}

// FlashAttention-3's num_splits_heuristic (hopper/heuristics.h): no split when the units fill
// 80% of the SMs or the KV is at most 4 blocks; otherwise the fewest splits whose wave
// efficiency is within 85% of the best, up to 128.
inline int flash3_num_splits(double units, double sm_count, double kv_blocks) {
  if (units >= 0.8 * sm_count || kv_blocks <= 4) return 1;
  const int max_splits = static_cast<int>(std::min({128.0, sm_count, kv_blocks}));
  auto efficiency = [&](int splits) {
    const double waves = units * splits / sm_count;
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (int splits = 1; splits <= max_splits; ++splits) best = std::max(best, efficiency(splits));
  for (int splits = 1; splits <= max_splits; ++splits)
    if (efficiency(splits) >= 0.85 * best) return splits;
  return 1;
}

}  // namespace detail

// The head size the work is counted at: FlashAttention-2's interface pads a head size that is not a
// multiple of 8 with zeros to the next one (head_size_og), so a head of 3 computes as one of 8;
// FlashAttention-3's refuses such heads (demand() does too: hopper/flash_api.cpp, a multiple of 8,
// of 16 for fp8), so its heads are their own size here.
inline double padded_head_dim(const Attention& attention) {
  return static_cast<double>((attention.head_dim + 7) / 8 * 8);
}

// Whether the query heads of a KV group share a work unit's rows ("pack GQA"): FlashAttention-2
// for decode ("seqlenq_ngroups_swapped"); FlashAttention-3 for every variable-length batch, which
// is how the serving engines call it (its should_pack_gqa).
inline bool packs_gqa(const Attention& attention, AttentionImpl impl) {
  return attention.is_decode() || impl == AttentionImpl::flash3;
}
namespace detail {
// Query rows one work unit covers, per sequence of one kernel, and its query tiles: the groups'
// integer division done once, the division by the tile once per distinct row count (a decode
// batch's rows are all one count). `decode`: attention.is_decode(), which scans every sequence,
// worked out once by the caller (a batch of 100,000 decode sequences was quadratic).
class QueryTiles {
 public:
  QueryTiles(const Attention& attention, AttentionImpl impl, bool decode, double tile_q)
      : groups_(static_cast<double>(attention.heads / attention.kv_heads)), decode_(decode),
        packs_(impl == AttentionImpl::flash3), tile_q_(tile_q) {}
  double rows(std::int64_t q_len) const {
    if (decode_) return groups_;
    const double q = static_cast<double>(q_len);
    return packs_ ? q * groups_ : q;  // packs_gqa: FlashAttention-3, or decode
  }
  double tiles(double rows) {
    if (rows != last_rows_) last_rows_ = rows, last_tiles_ = ceil_div(rows, tile_q_);
    return last_tiles_;
  }

 private:
  double groups_;
  bool decode_, packs_;
  double tile_q_;
  double last_rows_ = -1, last_tiles_ = 0;
};
}  // namespace detail

// Query rows one work unit covers for one sequence (detail::QueryTiles walks a kernel's).
inline double attention_rows(const Attention& attention, std::size_t sequence, AttentionImpl impl) {
  return detail::QueryTiles(attention, impl, attention.is_decode(), 1).rows(attention.q_lens[sequence]);
}

inline double attention_head_units(const Attention& attention, AttentionImpl impl) {
  return static_cast<double>(packs_gqa(attention, impl) ? attention.kv_heads : attention.heads);
}

// KV splits per sequence: the config's, or FlashAttention's heuristics.
// FlashAttention-2 splits only decode with grouped query heads, by its heuristic over all the
// query-tile units against twice the SM
// count ("we're using 128 threads per block": two of its CTAs share an SM), one split count for
// the batch. FlashAttention-3 (variable-length, as the engines call it) takes the heuristic's
// count for one sequence of the longest lengths as an upper bound, then splits each sequence
// in proportion to its KV blocks so that the batch's blocks spread over the SMs with a 10%
// margin (hopper/flash_prepare_scheduler.cu): a long sequence among short ones is split, the
// short ones are not.
inline std::vector<int> attention_splits_per_sequence(const Attention& attention, const AttentionConfig& named,
                                                      const GpuSpec& gpu) {
  const AttentionConfig config = resolved_config(attention, named, gpu);
  const std::size_t count = attention.q_lens.size();
  if (config.num_splits > 0) return std::vector<int>(count, config.num_splits);
  const double head_units = attention_head_units(attention, config.impl);
  const bool decode = attention.is_decode();
  detail::QueryTiles query(attention, config.impl, decode, config.tile_q);
  double units = 0, max_rows = 0;
  std::int64_t longest_kv = 0;
  for (std::size_t s = 0; s < count; ++s) {
    const double rows = query.rows(attention.q_lens[s]);
    units += query.tiles(rows) * head_units;
    max_rows = std::max(max_rows, rows);
    longest_kv = std::max(longest_kv, attention.kv_lens[s]);
  }
  // (ceil_div rises with the KV length: the longest's blocks are the most of any)
  const double max_kv_blocks = count == 0 ? 0 : detail::ceil_div(static_cast<double>(longest_kv), config.tile_kv);
  if (config.impl == AttentionImpl::flash2) {
    // Only decode whose query heads share KV heads ("seqlenq_ngroups_swapped") splits: prompts
    // and multi-head decode run unsplit (every such row measured on both GPUs: num_splits 1).
    if (!decode || attention.heads <= attention.kv_heads || attention.head_dim % 8 != 0)
      return std::vector<int>(count, 1);
    return std::vector<int>(count, detail::flash_num_splits(units, gpu.sm_count * 2.0, max_kv_blocks));
  }
  const int most = detail::flash3_num_splits(detail::ceil_div(max_rows, config.tile_q) * head_units, gpu.sm_count, max_kv_blocks);
  if (most == 1) return std::vector<int>(count, 1);
  double total_blocks = 0;
  std::vector<double> kv_blocks(count);
  const detail::ExactDivisor per_kv_block(config.tile_kv);  // (a multiplication where the tile is a power of two)
  for (std::size_t s = 0; s < count; ++s) {
    kv_blocks[s] = std::ceil(per_kv_block(static_cast<double>(attention.kv_lens[s])));
    total_blocks += query.tiles(query.rows(attention.q_lens[s])) * kv_blocks[s];
  }
  const double blocks_per_sm = std::ceil(total_blocks * 1.1 * head_units / gpu.sm_count);
  std::vector<int> splits(count);
  for (std::size_t s = 0; s < count; ++s)  // (no more blocks than an SM's share: one split, no division needed)
    splits[s] = kv_blocks[s] <= blocks_per_sm
                    ? 1
                    : static_cast<int>(std::max(1.0, std::min(detail::ceil_div(kv_blocks[s], blocks_per_sm), static_cast<double>(most))));
  return splits;
}
// The largest split count of the batch (FlashAttention-2: the batch's one count).
inline int attention_splits(const Attention& attention, const AttentionConfig& config, const GpuSpec& gpu) {
  const std::vector<int> splits = attention_splits_per_sequence(attention, config, gpu);
  return splits.empty() ? 1 : *std::max_element(splits.begin(), splits.end());
}

// The config the kernel runs with on `gpu` (resolved_config), where FlashAttention-2's decode
// moves from its split-KV kernel's 64-row tiles to its plain forward kernel's when it does not
// split: with its own heuristic, or one split named beside tiles it chose itself.
inline AttentionConfig effective_config(const Attention& attention, const GpuSpec& gpu) {
  AttentionConfig config = resolved_config(attention, gpu);
  const bool own_tiles = !attention.config || attention.config->has_own_tiles();
  if (config.impl == AttentionImpl::flash2 && attention.is_decode() && config.tile_q == 64 &&
      (config.num_splits == 0 || (own_tiles && config.num_splits == 1)) && attention_splits(attention, config, gpu) == 1) {
    const AttentionConfig forward = flash2_tiles(attention.head_dim, /*causal=*/false, /*split_kernel=*/false, gpu);
    config.tile_q = forward.tile_q, config.tile_kv = forward.tile_kv;
  }
  return config;
}

namespace detail {

// The classes of an attention kernel's CTAs, one per (sequence, query tile), with what the
// demand needs beside them.
struct AttentionClasses {
  std::vector<CtaClass> classes;
  std::vector<double> kv_tiles;  // each class's KV tiles: its tensor work, in whole tiles
  double combine_bytes = 0;      // the split-KV combine's fp32 partials, read and written
  double longest_kv_rows = 0;
};

inline AttentionClasses attention_classes(const Attention& attention, const AttentionConfig& config,
                                          const std::vector<int>& sequence_splits, bool decode, double head_units,
                                          double rows_per_position, std::size_t query_tiles) {
  const double tq = config.tile_q, tkv = config.tile_kv, hd = padded_head_dim(attention);
  const double bytes = dtype_bytes(attention.dtype);
  AttentionClasses built;
  std::vector<CtaClass>& classes = built.classes;
  std::vector<double>& kv_tiles = built.kv_tiles;
  // Written through a cursor into lists of their final length (the caller's count of query
  // tiles), not appended one by one.
  classes.resize(query_tiles);
  kv_tiles.resize(query_tiles);
  std::size_t size = 0;
  const auto fit = [&](std::size_t needed) {  // (a guard: demand's count of the tiles is the walk's)
    if (needed > classes.size()) classes.resize(needed), kv_tiles.resize(needed);
  };
  double dram_total = 0, l2_total = 0, combine_bytes = 0, longest_kv_rows = 0;
  // The tile counts in whole numbers (lengths are at most 2^30: every count below is the one the
  // same arithmetic in doubles gives, to the bit), divided by shifts where the divisor is a power
  // of two; the page count's division as an exact multiplication where the page is one.
  const WholeCeilDivisor kv_tiles_of(config.tile_kv), positions_of(static_cast<std::int64_t>(rows_per_position));
  const ExactDivisor per_page(static_cast<double>(attention.page_size));
  const std::int64_t tile_rows = config.tile_q;
  QueryTiles query(attention, config.impl, decode, tq);
  std::size_t previous_begin = 0;  // the classes of the sequence before, from here to the end
  for (std::size_t s = 0; s < attention.q_lens.size(); ++s) {
    const double q = static_cast<double>(attention.q_lens[s]), kv = static_cast<double>(attention.kv_lens[s]);
    const double splits = sequence_splits[s];
    const std::size_t begin = size;
    if (s > 0 && attention.q_lens[s] == attention.q_lens[s - 1] && attention.kv_lens[s] == attention.kv_lens[s - 1] &&
        sequence_splits[s] == sequence_splits[s - 1]) {
      // A sequence like the one before (a batch of equal prompts, or decode at one context
      // length) has its classes: copied, not worked out again.
      const std::size_t copied = begin - previous_begin;
      fit(begin + copied);
      std::copy_n(classes.begin() + static_cast<std::ptrdiff_t>(previous_begin), copied, classes.begin() + static_cast<std::ptrdiff_t>(begin));
      std::copy_n(kv_tiles.begin() + static_cast<std::ptrdiff_t>(previous_begin), copied, kv_tiles.begin() + static_cast<std::ptrdiff_t>(begin));
      for (std::size_t c = begin; c < begin + copied; ++c) l2_total += at(classes[c].work, Pipe::l2) * classes[c].count;
      size += copied;
    }
    previous_begin = begin;
    const double partial_bytes = splits > 1 ? 4 : bytes;  // split outputs are fp32 partials
    const double rows = query.rows(attention.q_lens[s]);
    const double q_tiles = size > begin ? 0 : query.tiles(rows);
    fit(size + static_cast<std::size_t>(q_tiles));
    const std::int64_t q_len = attention.q_lens[s], kv_len = attention.kv_lens[s];
    const int whole_splits = sequence_splits[s];
    const bool masked = attention.causal && !decode;
    for (double tile = 0; tile < q_tiles; ++tile) {
      const double real_rows = std::min(tq, rows - tile * tq);
      // Under a causal mask query position p (0-based) sees KV positions up to kv - q + p.
      const std::int64_t visible_len =
          masked ? std::min(kv_len, kv_len - q_len + std::min(q_len, positions_of((static_cast<std::int64_t>(tile) + 1) * tile_rows)))
                 : kv_len;
      const std::int64_t visible_tiles = kv_tiles_of(visible_len);
      const std::int64_t split_tiles = whole_splits == 1 ? visible_tiles : (visible_tiles + whole_splits - 1) / whole_splits;
      const double visible = static_cast<double>(visible_len), tiles = static_cast<double>(split_tiles);
      const double kv_rows = tiles * tkv;
      longest_kv_rows = std::max(longest_kv_rows, kv_rows);
      CtaClass& cta = classes[size];
      at(cta.work, Pipe::tensor) = 4 * tq * kv_rows * hd;
      at(cta.work, Pipe::xu) = tq * kv_rows;
      // (`tiles`: kv_rows / tkv to the bit, the rows being at most 2^30 times a tile)
      at(cta.work, Pipe::fma) = 4 * tq * kv_rows + tq * hd * tiles;
      at(cta.work, Pipe::smem) = 2 * (tq + 2 * kv_rows) * hd * bytes;
      double l2 = (real_rows + 2 * std::min(kv_rows, visible)) * hd * bytes + real_rows * hd * partial_bytes;
      if (attention.page_size > 0) l2 += std::ceil(per_page(kv_rows)) * 4;
      at(cta.work, Pipe::l2) = l2;
      cta.count = head_units * splits;
      l2_total += l2 * cta.count;
      kv_tiles[size++] = tiles;
    }
    dram_total += q * attention.heads * hd * bytes * 2 + kv * attention.kv_heads * hd * bytes * 2;
    if (splits > 1) combine_bytes += 2 * splits * q * attention.heads * hd * 4;
  }
  classes.resize(size);
  kv_tiles.resize(size);
  dram_total += combine_bytes;
  // Each CTA's DRAM share follows its L2 traffic: what the chip must fetch, spread by who asks.
  const double fetched = dram_total - combine_bytes / 2;
  std::size_t c = 0;
#if defined(__GNUC__)
  using Pair = double __attribute__((vector_size(16)));  // two divisions at once (the compiler does not pair these)
  for (; c + 1 < classes.size(); c += 2) {
    const Pair l2{at(classes[c].work, Pipe::l2), at(classes[c + 1].work, Pipe::l2)};
    const Pair dram = l2 * fetched / l2_total;
    at(classes[c].work, Pipe::dram) = dram[0];
    at(classes[c + 1].work, Pipe::dram) = dram[1];
  }
#endif
  for (; c < classes.size(); ++c) at(classes[c].work, Pipe::dram) = at(classes[c].work, Pipe::l2) * fetched / l2_total;
  built.combine_bytes = combine_bytes;
  built.longest_kv_rows = longest_kv_rows;
  return built;
}

// FlashAttention-3's order: the classes by tensor work, descending, ties in launch order. A
// class's tensor work grows with its KV rows alone, whole KV tiles, so the order is the classes
// by KV tiles, most first, stable: counted into one bucket per tile count where the counts span
// a range not much wider than the classes are many (a batch's KV lengths mostly do), else sorted
// as (tiles, index) packed in one integer, the tiles inverted.
inline std::vector<std::uint32_t> longest_first_order(const std::vector<CtaClass>& classes, const std::vector<double>& kv_tiles) {
  std::vector<std::uint32_t> order(classes.size());
  if (kv_tiles.empty()) return order;
  const auto [least, most] = std::minmax_element(kv_tiles.begin(), kv_tiles.end());
  const double span = *most - *least;
  const double most_tiles = std::ldexp(1.0, 31);  // the query-tile cap keeps indices below 2^26
  // (Past 2^31 tiles, tile counts apart may read as one tensor work: sorted by the work below.)
  if (*most < most_tiles && span <= 4.0 * static_cast<double>(kv_tiles.size()) + 1024) {
    std::vector<std::uint32_t> start(static_cast<std::size_t>(span) + 2, 0);
    // (through a signed integer: x86-64 converts a double to one in one instruction, to an unsigned in a branch or two)
    const auto bucket = [&, most = *most](double tiles) { return static_cast<std::size_t>(static_cast<std::int64_t>(most - tiles)); };
    for (const double tiles : kv_tiles) ++start[bucket(tiles) + 1];
    for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    for (std::size_t i = 0; i < kv_tiles.size(); ++i) order[start[bucket(kv_tiles[i])]++] = static_cast<std::uint32_t>(i);
    return order;
  }
  if (*most < most_tiles) {
    std::vector<std::uint64_t> keyed(classes.size());
    for (std::size_t i = 0; i < classes.size(); ++i) keyed[i] = (static_cast<std::uint64_t>(static_cast<std::int64_t>(most_tiles - kv_tiles[i])) << 32) | i;
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t i = 0; i < keyed.size(); ++i) order[i] = static_cast<std::uint32_t>(keyed[i]);
    return order;
  }
  // KV of 2^31 tiles and more: sorted by the work itself
  for (std::size_t i = 0; i < classes.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return at(classes[a].work, Pipe::tensor) > at(classes[b].work, Pipe::tensor);
  });
  return order;
}

}  // namespace detail


inline Demand demand(const Attention& attention, const GpuSpec& gpu) {
  using detail::ceil_div;
  // Checked here too, not only where a Kernel is built: the tile counts are whole numbers of at most
  // 2^30 lengths, and a kernel given straight to demand() once reached them unchecked.
  attention.validate();
  AttentionConfig config = effective_config(attention, gpu);
  if (config.impl == AttentionImpl::flash3 && gpu.compute_capability_major != 9)
    detail::fail_field("attention.impl", "flash3",
                       "runs on Hopper (compute capability 9.x) only; " + gpu.name + " is " +
                           std::to_string(gpu.compute_capability_major) + "." + std::to_string(gpu.compute_capability_minor));
  // FlashAttention-2 named for fp8 names no kernel (FlashAttention-3 runs fp8, on Hopper). Where the
  // implementation is the GPU's default, fp8 is left to the GPU's own check of its tensor paths.
  if (attention.config && attention.config->impl == AttentionImpl::flash2 && dtype_bytes(attention.dtype) == 1)
    detail::fail_field("attention.dtype", to_string(attention.dtype),
                       "must be fp16 or bf16 for impl=flash2 (FlashAttention-3 runs fp8, on Hopper)");
  if (const std::int64_t alignment = dtype_bytes(attention.dtype) == 1 ? 16 : 8;
      config.impl == AttentionImpl::flash3 && attention.head_dim % alignment != 0)
    detail::fail_field("attention.head_dim", attention.head_dim,
                       "must be a multiple of " + std::to_string(alignment) + " for impl=flash3 (FlashAttention-3 refuses others" +
                           (alignment == 16 ? " in fp8" : "") + "; FlashAttention-2 pads them)");
  const double tq = config.tile_q, tkv = config.tile_kv, hd = padded_head_dim(attention);
  if (config.num_splits > 1 && !attention.kv_lens.empty()) {  // every split takes at least one KV block, or it is no split at all
    const std::int64_t longest_kv = *std::max_element(attention.kv_lens.begin(), attention.kv_lens.end());
    const double kv_blocks = ceil_div(static_cast<double>(longest_kv), tkv);
    if (config.num_splits > kv_blocks)
      detail::fail_field("attention.num_splits", config.num_splits,
                         "must be at most the KV blocks of the longest sequence, ceil(" + std::to_string(longest_kv) + " / " +
                             std::to_string(config.tile_kv) + ") = " + std::to_string(static_cast<std::int64_t>(kv_blocks)));
  }
  const double bytes = dtype_bytes(attention.dtype);
  // FlashAttention-2 issues warp-level mma.sync, which on Hopper (and Blackwell's data-centre
  // part, whose native path is likewise another instruction) reaches 65.2% of the tensor peak per
  // clock (calibration's tensor_bf16_mma_sync: 0.652 on the H100, 0.651 on the H200); before
  // Hopper, and on sm_120, mma.sync is the tensor cores' own path. The demand counts FA2's
  // tensor work at the rate it can reach, so that its efficiency means the same on every GPU.
  const bool mma_sync_share = config.impl == AttentionImpl::flash2 &&
                              (gpu.compute_capability_major == 9 || gpu.compute_capability_major == 10);
  const double tensor_rate = detail::tensor_rate(gpu, attention.dtype) * (mma_sync_share ? 0.652 : 1.0);
  const bool decode = attention.is_decode();
  const double head_units = attention_head_units(attention, config.impl);
  // Packed rows hold the query heads of a group side by side: a tile covers tile_q / groups positions.
  const double rows_per_position =
      packs_gqa(attention, config.impl) && !decode ? static_cast<double>(attention.heads / attention.kv_heads) : 1.0;
  const std::vector<int> sequence_splits = attention_splits_per_sequence(attention, config, gpu);

  // One class per (sequence, query tile); heads and splits are its identical copies. The walk is
  // bounded: scheduling the classes takes a pass over the SMs for each, so the query tiles times
  // the SMs may be at most 2^25 (0.2 s at most; 254,200 tiles on 132 SMs, 8,192 on 4,096).
  // A batch of hundreds of thousands of query tiles is no kernel any engine launches (128k-token
  // prompts of tile 128 are 1,024 tiles each), and q_len = 10^12 would never end.
  constexpr double kMostTilePasses = 1 << 25;
  const double most_query_tiles = std::floor(kMostTilePasses / gpu.sm_count);
  double query_tiles = 0;
  detail::QueryTiles query(attention, config.impl, decode, tq);
  for (std::size_t s = 0; s < attention.q_lens.size() && query_tiles <= most_query_tiles; ++s)
    query_tiles += query.tiles(query.rows(attention.q_lens[s]));
  if (query_tiles > most_query_tiles)
    detail::fail_field("attention.q_lens", "tiles of " + std::to_string(config.tile_q) + " query rows over " +
                                               std::to_string(attention.q_lens.size()) + " sequences",
                       "must make at most " + std::to_string(static_cast<std::int64_t>(most_query_tiles)) + " query tiles in all on " +
                           std::to_string(gpu.sm_count) + " SMs (2^25 tile-SM passes; longer prompts or a larger tile_q)");
  const detail::AttentionClasses built = detail::attention_classes(attention, config, sequence_splits, decode, head_units,
                                                                   rows_per_position, static_cast<std::size_t>(query_tiles));
  const std::vector<detail::CtaClass>& classes = built.classes;
  const double combine_bytes = built.combine_bytes, longest_kv_rows = built.longest_kv_rows;
  const bool fa3 = config.impl == AttentionImpl::flash3;
  // FlashAttention-3 hands out the longest units first; FlashAttention-2's grid runs in launch order.
  const std::vector<std::uint32_t> order = fa3 ? detail::longest_first_order(classes, built.kv_tiles) : std::vector<std::uint32_t>{};
  const double threads = fa3 ? 384 : 128;
  const double smem = (tq + (fa3 ? 4 : 2) * tkv) * hd * bytes;  // Q, and K+V (two stages on FA3)
  const double resident = detail::resident_ctas(gpu, threads, smem, 0, "attention CTA");
  Demand result = detail::list_schedule(classes, order, gpu, tensor_rate, resident);

  result.serial_steps = longest_kv_rows / tkv;
  result.pipeline_stages = fa3 ? 2 : 1;
  if (combine_bytes > 0) {  // the combine kernel: a balanced pass over the fp32 partials
    result.kernels = 2;
    const PipeArray rate = detail::per_sm_rates(gpu, tensor_rate);
    for (Pipe pipe : {Pipe::dram, Pipe::l2}) {
      const double extra = combine_bytes / 2 / (at(rate, pipe) * gpu.sm_count);
      at(result.gpu_cycles, pipe) += extra;
      at(result.sm_cycles, pipe) += extra;
    }
  }
  result.config_defaulted = !attention.config.has_value();
  return result;
}

}  // namespace pipeweave
