#pragma once
// GEMM: C[m,n] = A[m,k] * B[k,n], the way cuBLASLt/CUTLASS run it: output tiles of
// tile_m x tile_n, each marching over its K slice in steps of tile_k; split-K cuts K
// into slices that separate CTAs compute and a reduction adds; thread-block clusters
// place groups of tiles together, so only whole clusters fit on the chip.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

// How the two consumer warpgroups of a Hopper warp-specialised kernel share the work
// (CUTLASS's kernel schedules; cuBLAS's nvjet kernels name them too). Every MMA
// instruction covers 64 rows on the MMA's M side and N = 8..256 columns on its N side.
enum class GemmSchedule : std::uint8_t {
  ping_pong,            // one output tile per warpgroup, taking turns: one tile's epilogue runs under
                        // the other's main loop (nvjet: no tag)
  cooperative,          // both warpgroups on one tile, split along the MMA's M side, which must be a
                        // multiple of 128 (nvjet: coopA)
  cooperative_split_n,  // both on one tile, split along the MMA's N side, which must be a multiple
                        // of 16 (nvjet: coopB, for M sides of 64 or 192)
};
inline constexpr std::array<GemmSchedule, 3> kAllGemmSchedules{GemmSchedule::ping_pong, GemmSchedule::cooperative,
                                                                GemmSchedule::cooperative_split_n};

constexpr std::string_view to_string(GemmSchedule schedule) {
  constexpr std::array<std::string_view, 3> names{"ping_pong", "cooperative", "cooperative_split_n"};
  return names[static_cast<std::size_t>(schedule)];
}

constexpr std::optional<GemmSchedule> parse_gemm_schedule(std::string_view text) {
  for (GemmSchedule schedule : kAllGemmSchedules)
    if (text == to_string(schedule)) return schedule;
  return std::nullopt;
}

// The order in which consecutive CTAs walk the output tiles: along m, they share a tile of
// B (the weights) and step through A's rows; along n, they share a tile of A.
enum class GemmRaster : std::uint8_t { along_n, along_m };

constexpr std::string_view to_string(GemmRaster raster) { return raster == GemmRaster::along_m ? "m" : "n"; }

constexpr std::optional<GemmRaster> parse_gemm_raster(std::string_view text) {
  if (text == "m") return GemmRaster::along_m;
  if (text == "n") return GemmRaster::along_n;
  return std::nullopt;
}

namespace detail {

// The schedule and the raster an input's field names (a kernel text's, a measurement row's, a model
// file's tree config's): one wording of a bad value wherever they are read. Throws
// pipeweave::InvalidInput naming `field`.
inline GemmSchedule gemm_schedule_field(std::string_view field, std::string_view text) {
  const std::optional<GemmSchedule> schedule = parse_gemm_schedule(text);
  if (!schedule) fail_field(field, quoted(text), "must be ping_pong, cooperative or cooperative_split_n");
  return *schedule;
}

inline GemmRaster gemm_raster_field(std::string_view field, std::string_view text) {
  const std::optional<GemmRaster> raster = parse_gemm_raster(text);
  if (!raster) fail_field(field, quoted(text), "must be m or n");
  return *raster;
}

}  // namespace detail

struct GemmConfig {
  int tile_m = 0;
  int tile_n = 0;
  int tile_k = 0;
  int split_k = 1;
  int stages = 0;  // 0: as many as fit in shared memory
  int cluster_m = 1;
  int cluster_n = 1;
  // Hopper's MMA shape and schedule. swap_ab: the MMA's M side runs along n and its N side
  // along m (the tokens), as cuBLAS does for most linear layers (nvjet names ending in T)
  // and vLLM's CUTLASS kernels do for small batches; without it m is on the M side.
  bool swap_ab = false;
  GemmSchedule schedule = GemmSchedule::ping_pong;
  GemmRaster raster = GemmRaster::along_n;

  int mma_m_side() const { return swap_ab ? tile_n : tile_m; }
  int mma_n_side() const { return swap_ab ? tile_m : tile_n; }

  void validate() const {
    detail::require_positive("gemm.tile_m", tile_m);
    detail::require_positive("gemm.tile_n", tile_n);
    detail::require_positive("gemm.tile_k", tile_k);
    detail::require_positive("gemm.split_k", split_k);
    detail::require_non_negative("gemm.stages", stages);
    detail::require_positive("gemm.cluster_m", cluster_m);
    detail::require_positive("gemm.cluster_n", cluster_n);
    // What any GPU's CTA can hold: past these a config describes no kernel (and tile products
    // would overflow the arithmetic of the checks that follow).
    // Nor below 8 a side: the smallest tensor-core MMA tile (cuBLAS's smallest is 8 x 8).
    for (const auto& [field, side] : {std::pair{"gemm.tile_m", tile_m}, std::pair{"gemm.tile_n", tile_n}, std::pair{"gemm.tile_k", tile_k}})
      if (side < 8) detail::fail_field(field, side, "must be at least 8 (no tensor-core kernel takes a smaller tile)");
    detail::require_at_most("gemm.tile_m", tile_m, 1024, "no GPU's CTA holds a larger tile");
    detail::require_at_most("gemm.tile_n", tile_n, 1024, "no GPU's CTA holds a larger tile");
    detail::require_at_most("gemm.tile_k", tile_k, 1024, "no GPU's CTA holds a larger K step");
    detail::require_at_most("gemm.stages", stages, 64, "no GPU's shared memory holds more");
    detail::require_at_most("gemm.cluster_m", cluster_m, 16, "a thread-block cluster holds at most 16 CTAs");
    detail::require_at_most("gemm.cluster_n", cluster_n, 16, "a thread-block cluster holds at most 16 CTAs");
    if (cluster_m * cluster_n > 16)  // (each at most 16 here: the product cannot overflow)
      detail::fail_field("gemm.cluster_m*cluster_n", std::to_string(cluster_m) + "x" + std::to_string(cluster_n),
                         "must be at most 16 CTAs (a thread-block cluster holds at most 16)");
    const char* m_side = swap_ab ? "gemm.tile_n" : "gemm.tile_m";
    const char* n_side = swap_ab ? "gemm.tile_m" : "gemm.tile_n";
    if (schedule == GemmSchedule::cooperative && mma_m_side() % 128 != 0)
      detail::fail_field(m_side, mma_m_side(),
                         "must be a multiple of 128 for the cooperative schedule (two warpgroups of 64 rows each on "
                         "the MMA's M side; swap_ab=" + std::string(swap_ab ? "1" : "0") + ")");
    if (schedule == GemmSchedule::cooperative_split_n && mma_n_side() % 16 != 0)
      detail::fail_field(n_side, mma_n_side(),
                         "must be a multiple of 16 for the cooperative_split_n schedule (two warpgroups of N >= 8 "
                         "each on the MMA's N side; swap_ab=" + std::string(swap_ab ? "1" : "0") + ")");
  }
  bool operator==(const GemmConfig&) const = default;
};

struct Gemm {
  static constexpr OpFamily family = OpFamily::gemm;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::bf16;
  std::optional<GemmConfig> config;  // the implementation's tiling, when known

  void validate() const {
    detail::require_dimension("gemm.m", m);
    detail::require_dimension("gemm.n", n);
    detail::require_dimension("gemm.k", k);
    if (config) {
      config->validate();
      // Every slice of a split-K GEMM runs at least one K step.
      const std::int64_t k_steps = (k - 1) / config->tile_k + 1;  // ceil, without overflowing near INT64_MAX
      if (config->split_k > k_steps)
        detail::fail_field("gemm.split_k", config->split_k,
                           "must be at most the K steps, ceil(k / tile_k) = " + std::to_string(k_steps));
    }
  }
  bool operator==(const Gemm&) const = default;
};

namespace detail {

// Output element size: fp16/bf16/fp8 GEMMs write 16-bit results (as vLLM's do), tf32/fp32 write fp32, int8 int32.
constexpr double gemm_output_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp16:
    case DType::bf16:
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return 2;
    default: return 4;
  }
}

// Hopper (sm_90) or later: thread-block clusters, TMA and warp-specialised warpgroup MMA kernels,
// which the GEMM configs, thread counts and operand sharing below follow.
constexpr bool hopper_or_later(const GpuSpec& gpu) { return gpu.compute_capability_major >= 9; }

// Threads of one CTA: Hopper and later run warp-specialised kernels (one producer and
// two consumer warpgroups), earlier GPUs eight-warp multistage kernels.
inline double gemm_threads(const GpuSpec& gpu) { return hopper_or_later(gpu) ? 384 : 256; }

inline double gemm_stage_bytes(const GemmConfig& config, DType dtype) {
  return (config.tile_m + config.tile_n) * static_cast<double>(config.tile_k) * dtype_bytes(dtype);
}

// Stages that fit in one SM's shared memory, leaving 16 KB for the epilogue, at most 8.
inline int gemm_stages_that_fit(const GemmConfig& config, DType dtype, const GpuSpec& gpu) {
  const double fit = std::floor((gpu.smem_bytes_per_sm - 16384) / gemm_stage_bytes(config, dtype));
  return static_cast<int>(std::clamp(fit, 1.0, 8.0));
}

// What launching a GEMM config's CTAs asks of a GPU (its stages given): SMs for one cluster (only
// whole clusters are placed) and one CTA's shared memory. fits() is the one rule of demand(), which
// refuses a config that does not fit (require_fits: pipeweave::InvalidInput saying which), and of
// Predictor::config_without_search, which takes the analytical default config instead.
struct GemmLaunch {
  double cluster_ctas = 1;
  double smem_per_cta = 0;
  bool fits(const GpuSpec& gpu) const { return cluster_ctas <= gpu.sm_count && smem_per_cta <= gpu.smem_bytes_per_sm; }
  void require_fits(const GpuSpec& gpu) const {
    if (fits(gpu)) return;
    if (cluster_ctas > gpu.sm_count) fail_field("gemm.cluster_m*cluster_n", cluster_ctas, "must not exceed the SM count");
    // (in the words of any op's CTA that does not fit on one SM: resident_ctas throws for it)
    resident_ctas(gpu, gemm_threads(gpu), smem_per_cta, 0, "gemm CTA");
  }
};
inline GemmLaunch gemm_launch(const GemmConfig& config, DType dtype) {
  return {static_cast<double>(config.cluster_m) * config.cluster_n, config.stages * gemm_stage_bytes(config, dtype)};
}

}  // namespace detail

// The library's own choice when a GEMM comes without its config (docs/method.md, "Op families"):
//  - tile_k: 128 bytes of K per step (64 for 16-bit types, 128 for fp8, 32 for tf32/fp32);
//  - tile_m 64 when m <= 64 (decode-shaped), else 128; tile_n 128, or 256 when both m
//    and n are >= 4096 on Hopper and later;
//  - split-K when the output tiles fill at most half the SMs and K is long enough for
//    every slice to keep at least four K steps: as many slices as bring the tiles up to
//    the SM count, at most 16;
//  - stages: as many as fit in shared memory (at most 8); cluster 2x1 on Hopper and later
//    when there are at least as many tiles as SMs.
// Predictor::predict does not use it: it takes the config best_gemm_config picks from gemm_candidates().
// It remains the analytical stage's choice (compute_demand of a GEMM without a config).
inline GemmConfig default_config(const Gemm& gemm, const GpuSpec& gpu) {
  GemmConfig config;
  config.tile_k = static_cast<int>(128 / std::max(1.0, dtype_bytes(gemm.dtype)));
  config.tile_m = gemm.m <= 64 ? 64 : 128;
  config.tile_n = (detail::hopper_or_later(gpu) && gemm.m >= 4096 && gemm.n >= 4096) ? 256 : 128;
  const double tiles = detail::ceil_div(gemm.m, config.tile_m) * detail::ceil_div(gemm.n, config.tile_n);
  const double k_steps = detail::ceil_div(gemm.k, config.tile_k);
  if (tiles * 2 <= gpu.sm_count && k_steps >= 8) {
    const double wanted = std::floor(gpu.sm_count / tiles);
    config.split_k = static_cast<int>(std::clamp(std::min(wanted, std::floor(k_steps / 4)), 1.0, 16.0));
  }
  config.stages = detail::gemm_stages_that_fit(config, gemm.dtype, gpu);
  if (detail::hopper_or_later(gpu) && tiles >= gpu.sm_count && gpu.sm_count >= 2) config.cluster_m = 2;
  return config;
}

namespace detail {

// The tile sizes, K steps and accumulator limit gemm_candidates draws from on this GPU.
struct GemmTileMenu {
  bool hopper = false;
  std::vector<int> fine_tiles;    // tile_m where tokens may be few (before Hopper, or with swap_ab)
  std::vector<int> coarse_tiles;  // tile_n, and tile_m on Hopper without swap_ab
  // Per K step: (bytes of K, the most stages kept); Hopper's TMA pipelines keep as many as fit.
  std::vector<std::pair<int, int>> k_steps_and_stages;
  int max_outputs = 0;  // outputs per CTA whose accumulators fit in registers
};

// One menu per architecture, built once: a new shape's config search asks for it once per
// candidate it checks (is_gemm_candidate).
inline const GemmTileMenu& gemm_tile_menu(const GpuSpec& gpu) {
  static const GemmTileMenu hopper_menu{true, {8, 16, 32, 64, 128, 192, 256}, {64, 128, 192, 256}, {{128, 8}}, 256 * 256};
  static const GemmTileMenu earlier_menu{false, {16, 32, 64, 128, 256}, {64, 128, 256}, {{64, 6}, {128, 4}}, 256 * 128};
  return hopper_or_later(gpu) ? hopper_menu : earlier_menu;
}

// The smallest tile that covers `size`, else the largest tile.
inline int covering_tile(const std::vector<int>& tiles, std::int64_t size) {
  for (int tile : tiles)
    if (tile >= size) return tile;
  return tiles.back();
}

// A tile with its K step and stages, or nothing when shared memory holds fewer stages than
// such a kernel needs (2 on Hopper and for the skinny tiles, else 3).
inline std::optional<GemmConfig> gemm_tile_with_stages(const Gemm& gemm, const GpuSpec& gpu, bool hopper, bool swap_ab,
                                                       int tile_m, int tile_n, int tile_k, int most_stages) {
  GemmConfig base;
  base.tile_m = tile_m, base.tile_n = tile_n, base.tile_k = tile_k, base.swap_ab = hopper && swap_ab;
  const int least_stages = hopper || tile_m < 64 ? 2 : 3;
  if (gpu.smem_bytes_per_sm - 16384 < least_stages * gemm_stage_bytes(base, gemm.dtype)) return std::nullopt;
  base.stages = std::min(most_stages, gemm_stages_that_fit(base, gemm.dtype, gpu));
  return base;
}

// Whether gemm_candidates offers this tile for this GEMM (before the shared-memory check):
// small tiles only where m is small, none larger than the smallest that covers its dimension,
// accumulators that fit in registers.
inline bool gemm_tile_offered(const GemmTileMenu& menu, const Gemm& gemm, bool swap_ab, int tile_m, int tile_n) {
  const std::vector<int>& m_tiles = (swap_ab || !menu.hopper) ? menu.fine_tiles : menu.coarse_tiles;
  return std::find(m_tiles.begin(), m_tiles.end(), tile_m) != m_tiles.end() &&
         std::find(menu.coarse_tiles.begin(), menu.coarse_tiles.end(), tile_n) != menu.coarse_tiles.end() &&
         tile_m <= covering_tile(m_tiles, gemm.m) && !(tile_m < 64 && tile_m * 8 < gemm.m) &&
         tile_n <= covering_tile(menu.coarse_tiles, gemm.n) && tile_m * tile_n <= menu.max_outputs;
}

// Every split-K, cluster, schedule and raster gemm_candidates offers for one tile, in its order,
// each given to `visit` (gemm_candidates lists them; is_gemm_candidate looks for one, without a list).
template <typename Visit>
inline void for_each_gemm_variant(const GemmConfig& base, const Gemm& gemm, const GpuSpec& gpu, bool hopper, Visit&& visit) {
  const double tiles_m = ceil_div(gemm.m, base.tile_m), tiles_n = ceil_div(gemm.n, base.tile_n);
  const double k_steps = ceil_div(gemm.k, base.tile_k);
  // Each choice's options, the first `*_count` of each array: fixed arrays, as this runs for
  // every tile of every new shape's search.
  std::array<int, 4> splits{1};
  std::size_t split_count = 1;
  if (tiles_m * tiles_n * 2 <= gpu.sm_count)
    for (int split : {2, 4, 8})
      if (k_steps / split >= 4) splits[split_count++] = split;
  std::array<std::pair<int, int>, 3> clusters{{{1, 1}}};
  std::size_t cluster_count = 1;
  std::array<GemmSchedule, 2> schedules{GemmSchedule::ping_pong};
  std::size_t schedule_count = 1;
  std::array<GemmRaster, 2> rasters{GemmRaster::along_n};
  std::size_t raster_count = 1;
  if (hopper) {
    if (tiles_m >= 2 && gpu.sm_count >= 2) clusters[cluster_count++] = {2, 1};  // (a cluster's CTAs on SMs of their own)
    if (tiles_n >= 2 && gpu.sm_count >= 2) clusters[cluster_count++] = {1, 2};
    if (base.mma_m_side() % 128 == 0) schedules[schedule_count++] = GemmSchedule::cooperative;
    else if (base.mma_n_side() % 16 == 0) schedules[schedule_count++] = GemmSchedule::cooperative_split_n;
    if (tiles_m >= 2 && tiles_n >= 2 && tiles_m * tiles_n > gpu.sm_count) rasters[raster_count++] = GemmRaster::along_m;
  }
  for (int split : std::span(splits).first(split_count))
    for (auto [cluster_m, cluster_n] : std::span(clusters).first(cluster_count))
      for (GemmSchedule schedule : std::span(schedules).first(schedule_count))
        for (GemmRaster raster : std::span(rasters).first(raster_count)) {
          GemmConfig config = base;
          config.split_k = split, config.cluster_m = cluster_m, config.cluster_n = cluster_n;
          config.schedule = schedule, config.raster = raster;
          visit(config);
        }
}

}  // namespace detail

// The configs a GEMM library would consider for this GEMM on this GPU, for a caller that
// knows only m, n, k (an autotuner ranks them; Predictor::best_gemm_config picks from them).
//  - on Hopper and later, tile_k 128 bytes of K per step, as in default_config, and both MMA
//    orientations: with swap_ab the tokens (m) run along the MMA's N side, in steps of 8
//    (tile_m from {8, 16, 32, 64, 128, 192, 256}) and n along its M side (tile_n from
//    {64, 128, 192, 256}), as cuBLAS's nvjet kernels mostly do; without it tile_m from
//    {64, 128, 192, 256} and tile_n from {64, 128, 192, 256}; at most 256 x 256 outputs per CTA
//    (the accumulators must fit in registers); stages: as many as fit (at most 8), at least 2;
//  - before Hopper (sm_80, 86, 89), the mma.sync kernels with a cp.async multistage pipeline
//    that cuBLAS (ampere_*_s16816gemm_*_<M>x<N>_..._stages_<K>x<S>) and CUTLASS's sm80
//    configurations run: tile_m from {16, 32, 64, 128, 256} (16 and 32 for skinny GEMMs) and
//    tile_n from {64, 128, 256}, at most 256 x 128 or 128 x 256 outputs per CTA; tile_k of 64 or
//    128 bytes (32 or 64 values of bf16) with at most 6 or 4 stages as those kernels keep
//    (stages_32x5, stages_64x3, ...), as many as fit up to that, and at least 3 (2 for the
//    skinny tiles), else the tile is skipped;
//  - small tiles only where m is small (a tile below 64 rows only when it is at least m/8),
//    and no tile larger than the smallest one that covers its dimension;
//  - split-K 2, 4, 8 besides 1 when the output tiles fill at most half the SMs and
//    every slice keeps at least four K steps;
//  - clusters 1x1, 2x1, 1x2 on Hopper and later, no larger than the tile grid;
//  - schedules on Hopper and later: ping-pong always; cooperative when the MMA's M side is a
//    multiple of 128, else cooperative_split_n when its N side is a multiple of 16 (the pairs
//    cuBLAS offers); rasters along n and along m when the grid is more than one wave of tiles
//    in both directions, else along n (the order matters only where tiles share operands in L2).
inline std::vector<GemmConfig> gemm_candidates(const Gemm& gemm, const GpuSpec& gpu) {
  const detail::GemmTileMenu& menu = detail::gemm_tile_menu(gpu);
  const double k_bytes = std::max(1.0, dtype_bytes(gemm.dtype));
  std::vector<GemmConfig> candidates;
  // Hopper: swap_ab first (tokens on the MMA's N side), then without; before Hopper one orientation.
  for (const bool swap_ab : menu.hopper ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
    for (int tile_m : (swap_ab || !menu.hopper) ? menu.fine_tiles : menu.coarse_tiles) {
      for (int tile_n : menu.coarse_tiles) {
        if (!detail::gemm_tile_offered(menu, gemm, swap_ab, tile_m, tile_n)) continue;
        for (auto [step_bytes, most_stages] : menu.k_steps_and_stages) {
          const int tile_k = static_cast<int>(step_bytes / k_bytes);
          const std::optional<GemmConfig> base =
              detail::gemm_tile_with_stages(gemm, gpu, menu.hopper, swap_ab, tile_m, tile_n, tile_k, most_stages);
          if (base)
            detail::for_each_gemm_variant(*base, gemm, gpu, menu.hopper,
                                          [&candidates](const GemmConfig& variant) { candidates.push_back(variant); });
        }
      }
    }
  }
  return candidates;
}

// Whether gemm_candidates(gemm, gpu) lists this config, without listing them all.
inline bool is_gemm_candidate(const GemmConfig& config, const Gemm& gemm, const GpuSpec& gpu) {
  const detail::GemmTileMenu& menu = detail::gemm_tile_menu(gpu);
  if (config.swap_ab && !menu.hopper) return false;
  if (!detail::gemm_tile_offered(menu, gemm, config.swap_ab, config.tile_m, config.tile_n)) return false;
  const double k_bytes = std::max(1.0, dtype_bytes(gemm.dtype));
  for (auto [step_bytes, most_stages] : menu.k_steps_and_stages) {
    const int tile_k = static_cast<int>(step_bytes / k_bytes);
    if (tile_k != config.tile_k) continue;
    const std::optional<GemmConfig> base =
        detail::gemm_tile_with_stages(gemm, gpu, menu.hopper, config.swap_ab, config.tile_m, config.tile_n, tile_k, most_stages);
    if (!base) continue;
    bool listed = false;
    detail::for_each_gemm_variant(*base, gemm, gpu, menu.hopper,
                                  [&](const GemmConfig& variant) { listed = listed || variant == config; });
    if (listed) return true;
  }
  return false;
}

inline Demand demand(const Gemm& gemm, const GpuSpec& gpu) {
  using detail::ceil_div;
  using detail::round_up;
  GemmConfig config = gemm.config ? *gemm.config : default_config(gemm, gpu);
  if (config.stages == 0) config.stages = detail::gemm_stages_that_fit(config, gemm.dtype, gpu);

  const double in_bytes = dtype_bytes(gemm.dtype);
  const double out_bytes = detail::gemm_output_bytes(gemm.dtype);
  const bool fp32_fma = gemm.dtype == DType::fp32;
  const double tensor_rate = fp32_fma ? 0 : detail::tensor_rate(gpu, gemm.dtype);

  const double tm = config.tile_m, tn = config.tile_n, tk = config.tile_k, split = config.split_k;
  const double k_slice = round_up(ceil_div(gemm.k, split), tk);
  const double ctas = ceil_div(gemm.m, tm) * ceil_div(gemm.n, tn) * split;
  // Clusters and the warpgroup MMA's orientation and schedules are Hopper's: a config that asks
  // for them on an older GPU describes no kernel that GPU runs.
  if (!detail::hopper_or_later(gpu)) {
    auto hopper_only = [&gpu](const char* what) {
      return std::string(what) + " needs Hopper (sm_90) or later; " + gpu.name + " is sm_" +
             std::to_string(gpu.compute_capability_major) + std::to_string(gpu.compute_capability_minor);
    };
    if (config.cluster_m != 1 || config.cluster_n != 1)
      detail::fail_field("gemm.cluster_m*cluster_n", std::to_string(config.cluster_m) + "x" + std::to_string(config.cluster_n),
                         "must be 1x1: " + hopper_only("a thread-block cluster"));
    if (config.swap_ab) detail::fail_field("gemm.swap_ab", 1, "must be 0: " + hopper_only("the warpgroup MMA's orientation"));
    if (config.schedule != GemmSchedule::ping_pong)
      detail::fail_field("gemm.schedule", to_string(config.schedule), "must be ping_pong: " + hopper_only("a warpgroup schedule"));
  }
  const detail::GemmLaunch launch = detail::gemm_launch(config, gemm.dtype);
  launch.require_fits(gpu);
  const double cluster = launch.cluster_ctas;
  // Only whole clusters are placed, so SMs left over after the last whole cluster idle.
  const double usable_sms = std::floor(gpu.sm_count / cluster) * cluster;

  // Per-CTA work. Partial sums of a split-K GEMM are fp32 and are added by a reduction.
  const double tile_outputs = tm * tn;
  const double mma_flops = 2 * tm * tn * k_slice;
  detail::PipeWork per_cta{};
  at(per_cta, fp32_fma ? Pipe::fma : Pipe::tensor) = fp32_fma ? mma_flops / 2 : mma_flops;
  at(per_cta, Pipe::fma) += tile_outputs * (split > 1 ? 3 : 2);  // alpha/beta epilogue, plus the split-K add
  // Within a cluster, TMA multicast loads each A tile once for the cluster_n CTAs that
  // share it and each B tile once for the cluster_m CTAs, so L2 sends each CTA its share.
  const double a_share = detail::hopper_or_later(gpu) ? 1.0 / config.cluster_n : 1.0;
  const double b_share = detail::hopper_or_later(gpu) ? 1.0 / config.cluster_m : 1.0;
  const double operand_bytes = (tm + tn) * k_slice * in_bytes;
  const double l2_operand_bytes = (tm * a_share + tn * b_share) * k_slice * in_bytes;
  const double written_bytes = tile_outputs * (split > 1 ? 4 : out_bytes);
  at(per_cta, Pipe::l2) = l2_operand_bytes + written_bytes;
  at(per_cta, Pipe::smem) = 2 * operand_bytes + 2 * tile_outputs * out_bytes;  // staged in, read by MMA; epilogue

  // DRAM sees each matrix once (L2 serves the re-reads) plus the split-K workspace round trip.
  const double m = gemm.m, n = gemm.n, k = gemm.k;
  double dram_bytes = (m * k + k * n) * in_bytes + m * n * out_bytes;
  if (split > 1) dram_bytes += 2 * m * n * 4 * split;
  at(per_cta, Pipe::dram) = dram_bytes / ctas;

  const double resident = detail::resident_ctas(gpu, detail::gemm_threads(gpu), launch.smem_per_cta, 0, "gemm CTA");

  Demand result = detail::uniform_grid(per_cta, ctas, resident, gpu, tensor_rate, usable_sms);
  result.serial_steps = k_slice / tk;
  result.pipeline_stages = config.stages;
  result.cluster_ctas = cluster;
  if (detail::hopper_or_later(gpu) && !fp32_fma) {  // Hopper's warpgroup MMAs (GemmConfig's schedule)
    const bool ping_pong = config.schedule == GemmSchedule::ping_pong;
    result.warpgroup_mma_m = config.mma_m_side() / (config.schedule == GemmSchedule::cooperative ? 2.0 : 1.0);
    result.warpgroup_mma_n = config.mma_n_side() / (config.schedule == GemmSchedule::cooperative_split_n ? 2.0 : 1.0);
    result.tiles_in_flight = ping_pong ? 2 : 1;
    result.swap_ab = config.swap_ab ? 1 : 0;
  }
  result.raster_along_m = config.raster == GemmRaster::along_m ? 1 : 0;
  result.tile_fill = m * n * k / (ctas * tm * tn * k_slice);
  const double full_wave = resident * usable_sms;
  result.wave_fill = ctas / (std::ceil(ctas / full_wave) * full_wave);
  {
    // One wave's output tiles, walked along the raster: whole lines of tiles, then part of one.
    // An estimate of the footprint: with split-K a wave holds full_wave / split tiles (a
    // fraction when it does not divide) each read over all of K, and edge tiles count whole.
    const double tiles_m = ceil_div(gemm.m, tm), tiles_n = ceil_div(gemm.n, tn);
    const double wave_tiles = std::min(full_wave / split, tiles_m * tiles_n);
    const double along = config.raster == GemmRaster::along_m ? tiles_m : tiles_n;
    const double lines = std::ceil(wave_tiles / along), in_line = std::min(wave_tiles, along);
    const double rows = config.raster == GemmRaster::along_m ? in_line : lines;  // tiles along m
    const double cols = config.raster == GemmRaster::along_m ? lines : in_line;  // tiles along n
    result.wave_operand_bytes_per_l2 = (rows * tm + cols * tn) * k * in_bytes / gpu.l2_bytes;
  }
  result.config_defaulted = !gemm.config.has_value();
  return result;
}

// Hopper's TMA copies need 16-byte aligned strides. A GEMM as PyTorch's F.linear lays it out
// (x[m, k] and W[n, k] of the input type, y[m, n] of the output type: bf16 for fp8 inputs, int32
// for int8) has strides k and n: the largest power of two up to 16 that divides both, in bytes.
inline int gemm_stride_alignment_bytes(const Gemm& gemm) {
  const auto in_bytes = static_cast<std::int64_t>(dtype_bytes(gemm.dtype));
  const std::int64_t out_bytes = gemm.dtype == DType::int8                                        ? 4
                                 : gemm.dtype == DType::fp8_e4m3 || gemm.dtype == DType::fp8_e5m2 ? 2
                                                                                                 : in_bytes;
  const std::int64_t strides = std::gcd(gemm.k % 16 * in_bytes, gemm.n % 16 * out_bytes);  // 0 where both are whole
  int alignment = 1;
  while (alignment < 16 && (strides == 0 || strides % (2 * alignment) == 0)) alignment *= 2;
  return alignment;
}

// What cuBLAS's pre-Hopper kernels (cutlass_75 / cutlass_80 tensorop, alignment 1 and 2), which it
// runs on Hopper for a 16-bit GEMM whose strides TMA cannot take, reached on seeds 1-3's misaligned
// served rows of both GPUs (Granite-3.1-8B's lm_head, vocab 49,155 at TP 1-8): the median
// multiply-add rate (2mnk flops) over the rows of m >= 1,024, as a share of the GPU's 16-bit tensor
// rate, and the median rate of bytes moved (x, W and y once) per SM and clock over those of m <= 64
// (`python3 data/models/served_alignment.py --fit`; docs/experiments/served-gemms.md). Below
// `first_m` cuBLAS runs GEMV-style kernels (gemv2T at m = 1, gemmSN_TN at m 2-9 with 2-byte
// strides) that read as fast as its aligned ones: the networks answer those. 8-byte strides were
// never measured: they take the 4-byte rates, a floor (a kernel of wider loads is no slower).
struct MisalignedGemmRates {
  int alignment_bytes;
  std::int64_t first_m;
  double tensor_share, bytes_per_sm_clock;
};
inline constexpr std::array<MisalignedGemmRates, 2> kMisalignedGemmRates{{{2, 10, 0.1060, 3.44}, {4, 2, 0.2926, 9.40}}};

// The time in microseconds of a 16-bit GEMM without a config whose strides TMA cannot take, on a
// Hopper GPU, as the longer of its work and its bytes at those rates; nullopt for every other
// GEMM (aligned, too few rows, another data type, another architecture, or a config given).
inline std::optional<double> misaligned_gemm_us(const Gemm& gemm, const GpuSpec& gpu) {
  if (gemm.config || gpu.compute_capability_major != 9 || (gemm.dtype != DType::bf16 && gemm.dtype != DType::fp16))
    return std::nullopt;
  const int alignment = gemm_stride_alignment_bytes(gemm);
  if (alignment >= 16) return std::nullopt;
  const MisalignedGemmRates& rates = alignment <= 2 ? kMisalignedGemmRates[0] : kMisalignedGemmRates[1];
  if (gemm.m < rates.first_m) return std::nullopt;
  const double m = static_cast<double>(gemm.m), n = static_cast<double>(gemm.n), k = static_cast<double>(gemm.k);
  const double sm_clocks_per_us = static_cast<double>(gpu.sm_count) * gpu.sm_clock_mhz;
  const double flops_per_sm_clock = rates.tensor_share * gpu.tensor_flops_per_clk_per_sm.fp16_bf16;
  const double work_us = 2 * m * n * k / flops_per_sm_clock / sm_clocks_per_us;
  const double bytes_us = (n * k + m * k + m * n) * 2 / rates.bytes_per_sm_clock / sm_clocks_per_us;
  return std::max(work_us, bytes_us);
}

}  // namespace pipeweave
