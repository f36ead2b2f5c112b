#pragma once
// Fused MoE as vLLM's and SGLang's Triton fused_moe runs the expert GEMMs (the kernel measured:
// cuda_kernels/fused_moe/): tokens are sorted by the expert they are routed to and each expert's
// rows padded to BLOCK_SIZE_M; one launch computes gate-up ([rows, hidden] x [hidden,
// 2*intermediate]) and a second the down projection ([rows, intermediate] x [intermediate,
// hidden]). The SiLU between them and the top-k sum after are separate kernels (silu_mul,
// elementwise). Routing: each token picks top_k distinct experts, uniformly, or (zipf > 0) in
// proportion to a Zipf popularity of that exponent over the experts, as skewed loads route; the
// demand takes each expert's expected share of the rows. Expert parallelism (expert_parallel > 1)
// as vLLM runs it without an all-to-all: the rank holds experts / expert_parallel of the experts,
// sorts and pads every routed row as before, computes its own experts' blocks, and writes zeros for
// the rows of the other ranks' experts (the ranks' outputs are summed after).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "pipeweave/error.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

// The Triton kernel's config keys, as the engines' tuned tables name them: BLOCK_SIZE_M/N/K
// (tl.arange needs powers of two), num_stages, GROUP_SIZE_M (how many M blocks share a column of N
// blocks, for L2 reuse) and num_warps.
struct FusedMoeConfig {
  int block_m = 0;
  int block_n = 0;
  int block_k = 0;
  int stages = 3;
  int group_m = 1;
  int warps = 4;
  void validate() const {
    require_power_of_two("fused_moe.block_m", block_m, 16, 256);
    require_power_of_two("fused_moe.block_n", block_n, 16, 256);
    require_power_of_two("fused_moe.block_k", block_k, 16, 256);
    if (stages < 1 || stages > 8) detail::fail_field("fused_moe.stages", stages, "must be within [1, 8]");
    if (group_m < 1 || group_m > 1024) detail::fail_field("fused_moe.group_m", group_m, "must be within [1, 1024]");
    require_power_of_two("fused_moe.warps", warps, 1, 16);
  }
  bool operator==(const FusedMoeConfig&) const = default;

 private:
  static void require_power_of_two(std::string_view field, int value, int least, int most) {
    if (value < least || value > most || (value & (value - 1)) != 0)
      detail::fail_field(field, value, "must be a power of two within [" + std::to_string(least) + ", " + std::to_string(most) + "]");
  }
};

// The routing skews FusedMoe takes (FusedMoe::zipf): Zipf exponents from 0 (uniform) to 4 (nearly
// every token to the most popular experts). Workload files and e2e's --moe-zipf check the same.
inline bool valid_zipf(double zipf) { return zipf >= 0 && zipf <= 4; }
inline constexpr std::string_view kZipfRange = "within [0, 4] (0: uniform routing)";

struct FusedMoe {
  static constexpr OpFamily family = OpFamily::fused_moe;
  std::int64_t tokens = 0;
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;  // per expert, after any tensor-parallel split
  DType dtype = DType::bf16;
  // The routing's skew: expert i (of the popularity order) is picked in proportion to
  // 1 / (i + 1)^zipf; 0 is uniform. Engines see about 0.5-1.5 on real traffic.
  double zipf = 0;
  // Ranks the experts are split over (1: none, or tensor parallelism): this kernel is one rank's,
  // over all `tokens`, `experts` the model's; it must divide them.
  std::int64_t expert_parallel = 1;
  std::optional<FusedMoeConfig> config;

  std::int64_t local_experts() const { return expert_parallel > 0 ? experts / expert_parallel : experts; }

  void validate() const {
    detail::require_dimension("fused_moe.tokens", tokens);
    detail::require_positive("fused_moe.experts", experts);
    detail::require_at_most("fused_moe.experts", experts, 65536, "no model has more");
    detail::require_positive("fused_moe.top_k", top_k);
    if (top_k > experts) detail::fail_field("fused_moe.top_k", top_k, "must not exceed fused_moe.experts");
    detail::require_dimension("fused_moe.hidden", hidden);
    detail::require_dimension("fused_moe.intermediate", intermediate);
    // The engines' Triton kernel multiplies 16-bit, fp8 or int8 (w8a8) weights on the tensor cores:
    // fp32 and tf32 name none of its paths (fp32 answered inf, a tensor rate of 0)
    if (dtype == DType::fp32 || dtype == DType::tf32)
      detail::fail_field("fused_moe.dtype", to_string(dtype), "must be fp16, bf16, fp8 or int8 (the Triton kernel's weights)");
    if (!valid_zipf(zipf)) detail::fail_field("fused_moe.zipf", zipf, "must be " + std::string(kZipfRange));
    detail::require_positive("fused_moe.ep", expert_parallel);  // (named as kernel strings and files name it)
    if (experts % expert_parallel != 0)
      detail::fail_field("fused_moe.ep", expert_parallel,
                         "must divide fused_moe.experts (" + std::to_string(experts) + ") into equal shares");
    if (config) config->validate();
  }
  bool operator==(const FusedMoe&) const = default;
};

// vLLM's get_default_config for bf16 and per-tensor fp8 (v0.6-v0.8): small blocks when the
// batch has at most as many tokens as experts, else 64x64x32 with GROUP_SIZE_M 8; num_warps and
// num_stages left to Triton's defaults, 4 and 3. What an engine runs with no tuned table. (The
// experts it counts are the rank's: its weight tensor's.)
inline FusedMoeConfig default_config(const FusedMoe& moe, const GpuSpec&) {
  if (moe.tokens <= moe.local_experts()) return FusedMoeConfig{.block_m = 16, .block_n = 32, .block_k = 64, .stages = 3, .group_m = 1, .warps = 4};
  return FusedMoeConfig{.block_m = 64, .block_n = 64, .block_k = 32, .stages = 3, .group_m = 8, .warps = 4};
}

// The configs vLLM's tuning script searches (benchmark_moe.py's grid), less those whose
// pipeline does not fit in the GPU's shared memory, and vLLM's default config (off the grid) last:
// what an autotuner ranks for a fused-MoE layer.
inline std::vector<FusedMoeConfig> fused_moe_candidates(const FusedMoe& moe, const GpuSpec& gpu) {
  std::vector<FusedMoeConfig> candidates;
  const double bytes = dtype_bytes(moe.dtype);
  for (int block_m : {16, 32, 64, 128, 256})
    for (int block_n : {32, 64, 128, 256})
      for (int block_k : {64, 128, 256})
        for (int group_m : {1, 16, 32, 64})
          for (int warps : {4, 8})
            for (int stages : {2, 3, 4, 5})
              if (stages * (block_m + block_n) * block_k * bytes <= gpu.smem_bytes_per_sm - 8192)
                candidates.push_back(FusedMoeConfig{.block_m = block_m, .block_n = block_n, .block_k = block_k,
                                                    .stages = stages, .group_m = group_m, .warps = warps});
  const FusedMoeConfig engine_default = default_config(moe, gpu);
  if (std::find(candidates.begin(), candidates.end(), engine_default) == candidates.end()) candidates.push_back(engine_default);
  return candidates;
}

namespace detail {

// One grouped GEMM launch over the sorted rows: `blocks` row blocks of BLOCK_SIZE_M that hold rows
// (each of one expert), `n` x `k` weights per expert, `a_rows` distinct rows of activations read.
// The grid is launched for the most padded rows any routing could give (`grid_blocks`); blocks
// past the real end return at once and are counted as CTAs without work.
inline Demand moe_gemm(double active_experts, double blocks, double grid_blocks, double routed_rows, double a_rows,
                       double n, double k, const FusedMoeConfig& config, DType dtype, const GpuSpec& gpu) {
  const double in_bytes = dtype_bytes(dtype), bm = config.block_m, bn = config.block_n;
  const double k_padded = round_up(k, config.block_k);
  const double n_blocks = ceil_div(n, bn);
  const double ctas = blocks * n_blocks;
  PipeWork per_cta{};
  at(per_cta, Pipe::tensor) = 2 * bm * bn * k_padded;
  at(per_cta, Pipe::fma) = bm * bn;
  const double operand_bytes = (bm + bn) * k_padded * in_bytes;
  at(per_cta, Pipe::l2) = operand_bytes + bm * bn * 2;
  at(per_cta, Pipe::smem) = 2 * operand_bytes;
  // DRAM: each touched expert's weights once, the activations once and the outputs once.
  const double dram = active_experts * n * k * in_bytes + a_rows * k * in_bytes + routed_rows * n * 2;
  at(per_cta, Pipe::dram) = dram / ctas;
  const double threads = 32.0 * config.warps;
  const double smem = config.stages * (bm + bn) * config.block_k * in_bytes;
  // The accumulator tile spread over the CTA's threads, plus operands and addressing (at most
  // the 255 registers a thread can hold; beyond, Triton spills).
  const double registers = std::min(255.0, bm * bn / threads + 64);
  const double resident = resident_ctas(gpu, threads, smem, registers, "fused_moe CTA");
  Demand demand = uniform_grid(per_cta, ctas, resident, gpu, tensor_rate(gpu, dtype));
  demand.ctas = grid_blocks * n_blocks;  // the launch, early exits included
  // The implementation's shape (Demand's fields say why each matters): K steps and stages; on
  // Hopper, Triton feeds tl.dot to warpgroup MMAs of 64 rows when BLOCK_SIZE_M reaches 64 (two
  // warpgroups split M from 128 rows, else N), to mma.sync below; the share of the computed tile
  // that is real rows (padding to BLOCK_SIZE_M, overhang of N and K); the last wave's fill; and
  // GROUP_SIZE_M's raster, the share of a launch's row blocks walked together before the next N block.
  demand.serial_steps = k_padded / config.block_k;
  demand.pipeline_stages = config.stages;
  if (config.block_m >= 64 && gpu.compute_capability_major >= 9) {
    const bool split_m = config.warps >= 8 && config.block_m >= 128;
    demand.warpgroup_mma_m = split_m ? bm / 2 : bm;
    demand.warpgroup_mma_n = config.warps >= 8 && !split_m ? bn / 2 : bn;
  }
  demand.tile_fill = routed_rows * n * k / (ctas * bm * bn * k_padded);
  const double full_wave = resident * gpu.sm_count;
  demand.wave_fill = ctas / (std::ceil(ctas / full_wave) * full_wave);
  demand.raster_along_m = (std::min<double>(config.group_m, grid_blocks) - 1) / std::max(1.0, grid_blocks - 1);
  return demand;
}

// Each expert's chance of being among a token's top_k distinct experts when they are drawn one
// after another, each in proportion to its popularity w_i = (i + 1)^-zipf among those not yet
// drawn (successive sampling: the collector's Gumbel top-k over log-popularity). Equivalently each
// expert draws a key E_i / w_i, E_i exponential, and the top_k least keys win, so
//   chance_i = integral over t > 0 of w_i e^(-w_i t) P(fewer than top_k other keys below t) dt,
// the other keys below t a sum of independent Bernoulli(1 - e^(-w_j t)). There is no closed form;
// the popularity scaled to add up to top_k (capped at 1) put too few experts in a batch, 1-3% on
// every family measured (data/models/fused_moe_routing.py). Integrated by the trapezoid rule in
// ln t: the integrand is analytic and falls off exponentially at both ends, where the rule
// converges geometrically; the count of other keys below t turns over in a window of about
// 1/sqrt(top_k) in ln t, so the step is 1/4 up to top_k 7 and 0.7/sqrt(top_k) past it (the chances
// add up to top_k within 1e-10 at 256 experts, top 8). At each point the count's law over the
// experts before i (truncated at top_k - 1) and its distribution function over those after i give
// the others' for every i: O(experts x top_k) a point, some hundred points. Past 2^17 experts x
// top_k (no model's layer: 65,536 experts, top 2, is exact), Rosen's approximation for successive
// sampling instead (chance_i = 1 - e^(-w_i xi), xi such that they add up to top_k), which under a
// steep skew is some percent off per expert. One draw (top_k 1) is w_i / sum(w), and top_k =
// experts every expert.
inline std::vector<double> successive_sampling_chances(std::int64_t experts, std::int64_t top_k, double zipf) {
  const std::size_t count = static_cast<std::size_t>(experts), k = static_cast<std::size_t>(top_k);
  std::vector<double> weight(count), chance(count, 0.0);
  for (std::size_t i = 0; i < count; ++i) weight[i] = std::pow(double(i + 1), -zipf);
  if (k >= count) return std::vector<double>(count, 1.0);
  double total = 0;  // (from the least popular up: the small ones keep their digits)
  for (std::size_t i = count; i-- > 0;) total += weight[i];
  if (k == 1) {
    for (std::size_t i = 0; i < count; ++i) chance[i] = weight[i] * (1 / total);
    return chance;
  }
  const double least_weight = weight[count - 1];  // weight[0] = 1 is the greatest
  if (static_cast<double>(count) * static_cast<double>(k) > 131072) {
    const auto drawn = [&](double xi) {
      double sum = 0;
      for (const double w : weight) sum += -std::expm1(-w * xi);
      return sum;
    };
    // ln xi from where the sum is under top_k (1 - e^-x < x: at most half of it) to where it is over
    // (each chance at least 1 - e^-1000, and top_k < experts)
    double low = std::log(0.5 * static_cast<double>(k) / total), high = std::log(1e3 / least_weight);
    for (int halving = 0; halving < 100; ++halving) {
      const double middle = 0.5 * (low + high);
      (drawn(std::exp(middle)) < static_cast<double>(k) ? low : high) = middle;
    }
    const double xi = std::exp(0.5 * (low + high));
    for (std::size_t i = 0; i < count; ++i) chance[i] = -std::expm1(-weight[i] * xi);
    return chance;
  }
  // ln t from where the most popular key is below t with chance 1e-12 (the integrand ~ w t there)
  // to where the least popular one is, but for e^-40.
  const double step = std::min(0.25, 0.7 / std::sqrt(static_cast<double>(k)));
  const double first = std::log(1e-12 / weight[0]), last = std::log(40 / least_weight);
  const std::size_t points = static_cast<std::size_t>(std::ceil((last - first) / step)) + 1;
  std::vector<double> below(count);             // each key's chance to be below t
  std::vector<double> after((count + 1) * k);   // [i][m]: P(at most m of the keys of experts i.. below t)
  std::vector<double> before(k);                // [m]: P(exactly m of the keys of experts ..i-1 below t)
  for (std::size_t point = 0; point < points; ++point) {
    const double t = std::exp(first + static_cast<double>(point) * step);
    for (std::size_t i = 0; i < count; ++i) below[i] = -std::expm1(-weight[i] * t);
    std::fill(after.begin() + static_cast<std::ptrdiff_t>(count * k), after.end(), 1.0);
    for (std::size_t i = count; i-- > 0;) {
      const double* next = &after[(i + 1) * k];
      double* here = &after[i * k];
      here[0] = (1 - below[i]) * next[0];
      for (std::size_t m = 1; m < k; ++m) here[m] = (1 - below[i]) * next[m] + below[i] * next[m - 1];
    }
    std::fill(before.begin(), before.end(), 0.0);
    before[0] = 1;
    for (std::size_t i = 0; i < count; ++i) {
      const double* rest = &after[(i + 1) * k];
      double others_fewer = 0;  // P(fewer than top_k of the other keys below t)
      for (std::size_t m = 0; m < k; ++m) others_fewer += before[m] * rest[k - 1 - m];
      const double wt = weight[i] * t;
      chance[i] += step * wt * std::exp(-wt) * others_fewer;  // (dt = t d(ln t))
      for (std::size_t m = k - 1; m > 0; --m) before[m] = before[m] * (1 - below[i]) + before[m - 1] * below[i];
      before[0] *= 1 - below[i];
    }
  }
  return chance;
}

// successive_sampling_chances, remembered by experts, top_k and skew: a serving run or an autotuner
// asks about one layer's routing over and over. Readers share a lock; a full memo (256 layers, or
// 2^21 chances: 16 MB) is emptied.
inline std::shared_ptr<const std::vector<double>> skewed_chances(std::int64_t experts, std::int64_t top_k, double zipf) {
  using Key = std::tuple<std::int64_t, std::int64_t, double>;
  static std::shared_mutex mutex;
  static std::map<Key, std::shared_ptr<const std::vector<double>>> known;
  static std::size_t held = 0;  // the chances the memo holds (under the lock)
  const Key key{experts, top_k, zipf};
  {
    const std::shared_lock lock(mutex);
    if (const auto found = known.find(key); found != known.end()) return found->second;
  }
  auto chances = std::make_shared<const std::vector<double>>(successive_sampling_chances(experts, top_k, zipf));
  const std::unique_lock lock(mutex);
  if (known.size() >= 256 || held + chances->size() > (std::size_t{1} << 21)) known.clear(), held = 0;
  if (known.emplace(key, chances).second) held += chances->size();
  return chances;
}

// The experts a batch is expected to touch and the row blocks of BLOCK_SIZE_M their rows fill.
struct ExpertLoad {
  double active = 0;
  double blocks = 0;
};

inline ExpertLoad expert_load(const FusedMoe& moe, int block_m) {
  const double experts = moe.experts, tokens = moe.tokens, routed_rows = tokens * moe.top_k;
  if (moe.zipf == 0) {
    // Each expert is among a token's top_k with probability p = top_k / experts; touched by a
    // batch with 1 - (1 - p)^tokens, written so that a small p keeps its digits (1 - 2e-17 is 1 in
    // a double: no expert touched).
    const double active = experts * -std::expm1(tokens * std::log1p(-double(moe.top_k) / experts));
    return {active, active * std::ceil(routed_rows / active / block_m)};
  }
  // Skewed: each expert's chance of being among a token's top_k (skewed_chances), the same for
  // every batch of these experts and this skew: worked out once.
  const std::shared_ptr<const std::vector<double>> chances = skewed_chances(moe.experts, moe.top_k, moe.zipf);
  const std::vector<double>& chance = *chances;
  ExpertLoad load;
  for (double p : chance) {
    // Touched with 1 - (1 - p)^tokens; when touched, its expected rows fill whole blocks.
    const double touched = p >= 1 ? 1.0 : -std::expm1(tokens * std::log1p(-p));
    if (touched <= 0) continue;
    load.active += touched;
    load.blocks += touched * std::ceil(tokens * p / touched / block_m);
  }
  return load;
}

}  // namespace detail

inline Demand demand(const FusedMoe& moe, const GpuSpec& gpu) {
  const FusedMoeConfig config = moe.config ? *moe.config : default_config(moe, gpu);
  const double experts = moe.experts, tokens = moe.tokens, routed_rows = tokens * moe.top_k;
  const auto [active, blocks] = detail::expert_load(moe, config.block_m);
  // vLLM sizes the sorted id list, and so the grid, for every expert padded by a block less one
  // row; a batch of fewer routed rows than experts, for each row its own block.
  const double max_padded = routed_rows < experts ? routed_rows * config.block_m : routed_rows + experts * (config.block_m - 1);
  const double grid_blocks = std::max(blocks, detail::ceil_div(max_padded, config.block_m));
  // Under expert parallelism the rank's experts are a share of the popularity order that nothing
  // ties to it: in expectation 1 / ranks of the experts touched, their row blocks and their rows;
  // gate-up reads the tokens that picked at least one of them, each token's top_k distinct experts
  // missing all of the rank's with C(E - local, k) / C(E, k). (Divided by one rank, each is as it was.)
  const double ranks = static_cast<double>(moe.expert_parallel);
  const double local_active = active / ranks, local_blocks = blocks / ranks, local_rows = routed_rows / ranks;
  double misses_rank = 1;
  for (std::int64_t pick = 0; moe.expert_parallel > 1 && pick < moe.top_k && misses_rank > 0; ++pick)
    misses_rank *= double(moe.experts - moe.local_experts() - pick) / double(moe.experts - pick);
  const double local_tokens = moe.expert_parallel == 1 ? tokens : tokens * (1 - misses_rank);
  Demand result = detail::moe_gemm(local_active, local_blocks, grid_blocks, local_rows, local_tokens, 2.0 * moe.intermediate,
                                   moe.hidden, config, moe.dtype, gpu);
  result += detail::moe_gemm(local_active, local_blocks, grid_blocks, local_rows, local_rows, moe.hidden, moe.intermediate,
                             config, moe.dtype, gpu);
  if (moe.expert_parallel > 1) {
    // The other ranks' blocks write zeros to their rows of both outputs (16-bit): a pass over those
    // bytes spread over the SMs, on top of the GEMMs' CTAs.
    const double zero_bytes = (routed_rows - local_rows) * (2.0 * moe.intermediate + moe.hidden) * 2;
    const PipeArray rate = detail::per_sm_rates(gpu, detail::tensor_rate(gpu, moe.dtype));
    for (Pipe pipe : {Pipe::dram, Pipe::l2}) {
      const double extra = zero_bytes / (at(rate, pipe) * gpu.sm_count);
      at(result.gpu_cycles, pipe) += extra;
      at(result.sm_cycles, pipe) += extra;
    }
  }
  result.config_defaulted = !moe.config.has_value();
  return result;
}

}  // namespace pipeweave
