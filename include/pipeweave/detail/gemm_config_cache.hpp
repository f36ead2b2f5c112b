#pragma once
// The best predicted config of a GEMM that came without one, remembered per GPU and shape
// (and, at the m where the search runs in full, the few best: Predictor::best_gemm_config).
// Choosing it scores many candidates (up to some hundred network passes); a scheduler asks about
// the same few shapes over and over, and then pays one lookup. Readers share a lock, so
// concurrent predictions do not serialise; a full cache is emptied rather than managed
// (what a serving run asks about refills it at once).

#include <bit>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/ops/gemm.hpp"

namespace pipeweave::detail {

// A hash of every figure of the spec that the demand model reads, and its name: two specs
// of one name (a catalog entry and its calibrated file) must not share entries. Figures are
// mixed a 64-bit word at a time (FNV-1a's multiply, then a shift to spread the high bits
// down): this runs on every prediction of a GEMM without a config.
class SpecFingerprint {
 public:
  explicit SpecFingerprint(const GpuSpec& gpu) {
    for (const char c : gpu.name) mix(static_cast<unsigned char>(c));
    for (double value : {static_cast<double>(gpu.compute_capability_major), static_cast<double>(gpu.compute_capability_minor),
                         static_cast<double>(gpu.sm_count), gpu.sm_clock_mhz, gpu.tensor_flops_per_clk_per_sm.fp16_bf16,
                         gpu.tensor_flops_per_clk_per_sm.fp8, gpu.tensor_flops_per_clk_per_sm.tf32,
                         gpu.tensor_flops_per_clk_per_sm.int8, gpu.fp32_lanes_per_clk_per_sm, gpu.xu_ops_per_clk_per_sm,
                         gpu.smem_bytes_per_clk_per_sm, gpu.dram_bandwidth_gb_s, gpu.l2_bandwidth_gb_s, gpu.l2_bytes,
                         gpu.smem_bytes_per_sm, static_cast<double>(gpu.registers_per_sm),
                         static_cast<double>(gpu.max_threads_per_sm), static_cast<double>(gpu.max_ctas_per_sm),
                         gpu.memory_gb, gpu.link_bandwidth_gb_s, gpu.link_latency_us})
      mix(std::bit_cast<std::uint64_t>(value));
  }
  std::uint64_t value() const { return hash_; }

 private:
  void mix(std::uint64_t word) {
    hash_ = (hash_ ^ word) * 0x100000001b3ULL;
    hash_ ^= hash_ >> 32;
  }
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

template <typename Value, std::size_t Capacity>
class GemmShapeCache {
 public:
  struct Key {
    std::uint64_t gpu = 0;
    std::int64_t m = 0, n = 0, k = 0;
    DType dtype = DType::bf16;
    bool operator==(const Key&) const = default;
  };
  static constexpr std::size_t kCapacity = Capacity;

  std::optional<Value> find(const Key& key) const {
    const std::shared_lock lock(mutex_);
    const auto found = entries_.find(key);
    if (found == entries_.end()) return std::nullopt;
    return found->second;
  }

  void insert(const Key& key, const Value& value) {
    const std::unique_lock lock(mutex_);
    if (entries_.size() >= kCapacity) entries_.clear();
    entries_.insert_or_assign(key, value);
  }

  std::size_t size() const {
    const std::shared_lock lock(mutex_);
    return entries_.size();
  }

 private:
  struct KeyHash {
    std::size_t operator()(const Key& key) const {
      std::uint64_t h = key.gpu;
      for (std::uint64_t part : {static_cast<std::uint64_t>(key.m), static_cast<std::uint64_t>(key.n),
                                 static_cast<std::uint64_t>(key.k), static_cast<std::uint64_t>(key.dtype)})
        h = (h ^ part) * 0x9e3779b97f4a7c15ULL, h ^= h >> 29;
      return static_cast<std::size_t>(h);
    }
  };
  mutable std::shared_mutex mutex_;
  std::unordered_map<Key, Value, KeyHash> entries_;
};

using GemmConfigCache = GemmShapeCache<GemmConfig, 1 << 16>;
// The best few configs, fastest first, of a shape searched in full (a grid point: one m in 16 of
// a layer's, but two for each unrelated shape asked), each a few hundred bytes.
using GemmShortlistCache = GemmShapeCache<std::vector<GemmConfig>, 1 << 14>;

}  // namespace pipeweave::detail
