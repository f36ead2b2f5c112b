#pragma once
// The vocabulary of the analytical stage (docs/method.md, section 1): the pipelines a kernel
// loads, the demand on each (as cycles if that pipe were the only limit, whole GPU and
// busiest SM), and the feature vector the learned stage reads.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/types.hpp"

namespace pipeweave {

enum class Pipe : std::uint8_t { tensor, fma, xu, dram, l2, smem, link };
inline constexpr std::size_t kPipeCount = 7;
inline constexpr std::array<Pipe, kPipeCount> kAllPipes{Pipe::tensor, Pipe::fma,  Pipe::xu,  Pipe::dram,
                                                        Pipe::l2,     Pipe::smem, Pipe::link};

constexpr std::string_view to_string(Pipe pipe) {
  constexpr std::array<std::string_view, kPipeCount> names{"tensor", "fma", "xu", "dram", "l2", "smem", "link"};
  return names[static_cast<std::size_t>(pipe)];
}

using PipeArray = std::array<double, kPipeCount>;

constexpr double& at(PipeArray& values, Pipe pipe) { return values[static_cast<std::size_t>(pipe)]; }
constexpr double at(const PipeArray& values, Pipe pipe) { return values[static_cast<std::size_t>(pipe)]; }

// What one kernel asks of one GPU. Cycles are SM clock cycles at GpuSpec::sm_clock_mhz.
struct Demand {
  PipeArray gpu_cycles{};  // total work spread evenly over every SM
  PipeArray sm_cycles{};   // work of the busiest SM after mapping CTAs the way the kernel does
  double ctas = 0;                  // CTAs (tiles, work units) the kernel runs
  double busiest_sm_ctas = 0;       // CTAs that land on the busiest SM
  double resident_ctas_per_sm = 1;  // CTAs one SM holds at once
  // The implementation's shape, which the demand figures alone do not show: a GEMM of 64
  // K steps per tile overlaps its prologue and epilogue worse than one of 512, a deep
  // pipeline or a large cluster hides latency better, a second kernel costs a launch.
  double serial_steps = 1;     // main-loop iterations of the longest CTA (K steps, KV blocks)
  double pipeline_stages = 1;  // loads the main loop keeps in flight
  double cluster_ctas = 1;     // CTAs per thread-block cluster
  double kernels = 1;          // kernel launches (a split-KV combine is a second)
  // How a tensor-core kernel feeds its MMAs (GEMM on Hopper, see GemmConfig): one
  // warpgroup's share of the tile on the MMA's M and N sides (0 where there is no such
  // tile), output tiles a CTA keeps in flight (2 when ping-pong warpgroups overlap one
  // tile's epilogue with the next one's main loop), whether m runs along the MMA's N side,
  // and whether consecutive CTAs walk the output along m (1) or along n (0).
  double warpgroup_mma_m = 0;
  double warpgroup_mma_n = 0;
  double tiles_in_flight = 1;
  double swap_ab = 0;
  double raster_along_m = 0;
  // How much of the work the mapping runs is the kernel's: output tiles that overhang the
  // matrix compute padding (useful / computed), and a last wave that fills only part of the
  // SMs leaves the rest idle (CTAs / (waves x the CTAs a full wave holds)).
  double tile_fill = 1;
  double wave_fill = 1;
  // Operand bytes one full wave of CTAs reads, against the L2's size: a wave whose operands do
  // not fit makes the next wave re-read them from DRAM. Depends on the raster.
  double wave_operand_bytes_per_l2 = 0;
  bool config_defaulted = false;    // true when the implementation config was not given and a default was used

  // The physical lower bound: no implementation can finish sooner. Only figures that are
  // hard limits count: SM-local pipes (tensor, fma, xu, smem) on the busiest SM, which
  // cannot borrow another SM's pipe; the chip-wide DRAM and link on the whole GPU (one SM
  // may draw more than its fair share while others idle, so the busiest SM's share is no
  // bound). L2 counts in no bound: no spec sheet gives its bandwidth, and an estimate that
  // is too low would put the "bound" above real kernels. Its demand stays a feature.
  static constexpr bool in_bound_per_sm(Pipe pipe) {
    return pipe == Pipe::tensor || pipe == Pipe::fma || pipe == Pipe::xu || pipe == Pipe::smem;
  }
  static constexpr bool in_bound_whole_gpu(Pipe pipe) { return pipe == Pipe::dram || pipe == Pipe::link; }

  double bound_cycles(Pipe pipe) const {
    const auto i = static_cast<std::size_t>(pipe);
    return in_bound_per_sm(pipe) ? sm_cycles[i] : (in_bound_whole_gpu(pipe) ? gpu_cycles[i] : 0.0);
  }

  double bound_cycles() const {
    double bound = 0;
    for (Pipe pipe : kAllPipes) bound = std::max(bound, bound_cycles(pipe));
    return bound;
  }

  // The pipe that sets bound_cycles() (the first such, in kAllPipes order, on a tie).
  Pipe bottleneck() const {
    Pipe best = Pipe::tensor;
    for (Pipe pipe : kAllPipes)
      if (bound_cycles(pipe) > bound_cycles(best)) best = pipe;
    return best;
  }

  // Sequential kernels (e.g. the two GEMMs of a fused MoE) combine figure by figure, each the
  // way kDemandFields says (defined below, once the table is).
  Demand& operator+=(const Demand& next);
};

// The learned stage's inputs: log1p of every demand figure and count of the mapping's shape;
// the five before the last (tiles in flight, swap_ab, raster along m, tile and wave fill) are
// small figures, taken as they are.
// Bump kFeatureVersion whenever the meaning of a feature changes: weights files record it.
inline constexpr int kFeatureVersion = 4;
inline constexpr std::size_t kFeatureCount = 2 * kPipeCount + 16;
using Features = std::array<float, kFeatureCount>;

namespace detail {

// One figure of Demand as the learned stage and operator+= see it. The table below is the one
// list of them: its order is the feature order, its names are kFeatureNames.
struct DemandField {
  // Where the figure lives: a plain member, one pipe of a PipeArray member, or 'waves', which
  // no member holds (CTAs over the CTAs the whole GPU holds at once).
  enum class Source : std::uint8_t { member, pipe, waves };
  // How the feature reads it: counts and cycles span decades, so log1p; the small ratios and
  // flags as they are.
  enum class Transform : std::uint8_t { log1p, as_is };
  // How two sequential kernels' figures combine (none: computed, not held).
  enum class Combine : std::uint8_t { sum, max, min, none };

  std::string_view name;
  Source source = Source::member;
  double Demand::*member = nullptr;  // Source::member
  PipeArray Demand::*pipes = nullptr;  // Source::pipe, with the pipe's index
  std::size_t pipe = 0;
  Transform transform = Transform::log1p;
  Combine combine = Combine::sum;
};

constexpr DemandField member_field(std::string_view name, double Demand::*member, DemandField::Combine combine,
                                   DemandField::Transform transform = DemandField::Transform::log1p) {
  return {name, DemandField::Source::member, member, nullptr, 0, transform, combine};
}
constexpr DemandField pipe_field(std::string_view name, PipeArray Demand::*pipes, Pipe pipe) {
  return {name, DemandField::Source::pipe, nullptr, pipes, static_cast<std::size_t>(pipe),
          DemandField::Transform::log1p, DemandField::Combine::sum};
}

inline constexpr std::array<DemandField, kFeatureCount> kDemandFields = [] {
  using enum DemandField::Combine;
  constexpr DemandField::Transform as_is = DemandField::Transform::as_is;
  constexpr DemandField waves{"waves", DemandField::Source::waves, nullptr, nullptr, 0, DemandField::Transform::log1p,
                              none};
  return std::array<DemandField, kFeatureCount>{
      pipe_field("tensor_gpu_cycles", &Demand::gpu_cycles, Pipe::tensor),
      pipe_field("fma_gpu_cycles", &Demand::gpu_cycles, Pipe::fma),
      pipe_field("xu_gpu_cycles", &Demand::gpu_cycles, Pipe::xu),
      pipe_field("dram_gpu_cycles", &Demand::gpu_cycles, Pipe::dram),
      pipe_field("l2_gpu_cycles", &Demand::gpu_cycles, Pipe::l2),
      pipe_field("smem_gpu_cycles", &Demand::gpu_cycles, Pipe::smem),
      pipe_field("link_gpu_cycles", &Demand::gpu_cycles, Pipe::link),
      pipe_field("tensor_sm_cycles", &Demand::sm_cycles, Pipe::tensor),
      pipe_field("fma_sm_cycles", &Demand::sm_cycles, Pipe::fma),
      pipe_field("xu_sm_cycles", &Demand::sm_cycles, Pipe::xu),
      pipe_field("dram_sm_cycles", &Demand::sm_cycles, Pipe::dram),
      pipe_field("l2_sm_cycles", &Demand::sm_cycles, Pipe::l2),
      pipe_field("smem_sm_cycles", &Demand::sm_cycles, Pipe::smem),
      pipe_field("link_sm_cycles", &Demand::sm_cycles, Pipe::link),
      member_field("ctas", &Demand::ctas, sum),
      member_field("busiest_sm_ctas", &Demand::busiest_sm_ctas, sum),
      member_field("resident_ctas_per_sm", &Demand::resident_ctas_per_sm, max),
      waves,
      member_field("serial_steps", &Demand::serial_steps, sum),
      member_field("pipeline_stages", &Demand::pipeline_stages, max),
      member_field("cluster_ctas", &Demand::cluster_ctas, max),
      member_field("kernels", &Demand::kernels, sum),
      member_field("warpgroup_mma_m", &Demand::warpgroup_mma_m, max),
      member_field("warpgroup_mma_n", &Demand::warpgroup_mma_n, max),
      member_field("tiles_in_flight", &Demand::tiles_in_flight, max, as_is),
      member_field("swap_ab", &Demand::swap_ab, max, as_is),
      member_field("raster_along_m", &Demand::raster_along_m, max, as_is),
      member_field("tile_fill", &Demand::tile_fill, min, as_is),
      member_field("wave_fill", &Demand::wave_fill, min, as_is),
      member_field("wave_operand_bytes_per_l2", &Demand::wave_operand_bytes_per_l2, max)};
}();

// Each pipe's two cycle figures carry the pipe's name: the entries above must follow kAllPipes.
constexpr bool pipe_fields_follow_pipe_order() {
  const auto named = [](std::string_view name, std::string_view pipe, std::string_view suffix) {
    return name.size() == pipe.size() + suffix.size() && name.starts_with(pipe) && name.ends_with(suffix);
  };
  for (std::size_t i = 0; i < kPipeCount; ++i) {
    const std::string_view pipe = to_string(kAllPipes[i]);
    const DemandField &gpu = kDemandFields[i], &sm = kDemandFields[kPipeCount + i];
    if (gpu.pipe != i || gpu.pipes != &Demand::gpu_cycles || !named(gpu.name, pipe, "_gpu_cycles")) return false;
    if (sm.pipe != i || sm.pipes != &Demand::sm_cycles || !named(sm.name, pipe, "_sm_cycles")) return false;
  }
  return true;
}

// The figure that table entry `Field` stands for, as a double.
template <std::size_t Field>
inline double field_value(const Demand& demand, [[maybe_unused]] const GpuSpec& gpu) {
  constexpr const DemandField& field = kDemandFields[Field];
  if constexpr (field.source == DemandField::Source::member) return demand.*field.member;
  else if constexpr (field.source == DemandField::Source::pipe) return (demand.*field.pipes)[field.pipe];
  else return demand.ctas / (demand.resident_ctas_per_sm * gpu.sm_count);
}

template <std::size_t Field>
inline float feature_value(const Demand& demand, const GpuSpec& gpu) {
  const double value = field_value<Field>(demand, gpu);
  if constexpr (kDemandFields[Field].transform == DemandField::Transform::log1p)
    return static_cast<float>(std::log1p(value));
  else return static_cast<float>(value);
}

template <std::size_t Field>
inline void combine_field([[maybe_unused]] Demand& into, [[maybe_unused]] const Demand& next) {
  using Combine = DemandField::Combine;
  constexpr const DemandField& field = kDemandFields[Field];
  if constexpr (field.source == DemandField::Source::pipe) {
    (into.*field.pipes)[field.pipe] += (next.*field.pipes)[field.pipe];
  } else if constexpr (field.source == DemandField::Source::member) {
    double& held = into.*field.member;
    const double added = next.*field.member;
    if constexpr (field.combine == Combine::sum) held += added;
    else if constexpr (field.combine == Combine::max) held = std::max(held, added);
    else if constexpr (field.combine == Combine::min) held = std::min(held, added);
  }
}

}  // namespace detail

static_assert(detail::pipe_fields_follow_pipe_order());

inline constexpr std::array<std::string_view, kFeatureCount> kFeatureNames = [] {
  std::array<std::string_view, kFeatureCount> names{};
  for (std::size_t i = 0; i < kFeatureCount; ++i) names[i] = detail::kDemandFields[i].name;
  return names;
}();

// Expands to one line per table entry, as the hand-written list it replaces: this is on the
// hot path (every candidate config of every GEMM).
inline Features features(const Demand& demand, const GpuSpec& gpu) {
  Features out{};
  [&]<std::size_t... Field>(std::index_sequence<Field...>) {
    ((out[Field] = detail::feature_value<Field>(demand, gpu)), ...);
  }(std::make_index_sequence<kFeatureCount>{});
  return out;
}

inline Demand& Demand::operator+=(const Demand& next) {
  [&]<std::size_t... Field>(std::index_sequence<Field...>) {
    (detail::combine_field<Field>(*this, next), ...);
  }(std::make_index_sequence<kFeatureCount>{});
  // A flag, not a figure: no feature reads it.
  config_defaulted = config_defaulted || next.config_defaulted;
  return *this;
}

namespace detail {

constexpr double ceil_div(double a, double b) { return std::ceil(a / b); }
constexpr double round_up(double a, double multiple) { return ceil_div(a, multiple) * multiple; }

// x / divisor for one divisor over many x. A power of two's reciprocal is exact, and x times it
// rounds the same real number x / divisor does, so the product is the quotient to the last bit at
// a fraction of a division's latency (tiles and groups mostly are powers of two); any other
// divisor divides.
class ExactDivisor {
 public:
  explicit ExactDivisor(double divisor) : divisor_(divisor) {
    int exponent = 0;
    // (a normal power of two's reciprocal is a double too, if subnormal at 2^1023)
    if (std::isnormal(divisor) && std::frexp(divisor, &exponent) == 0.5) reciprocal_ = 1 / divisor;
  }
  double operator()(double x) const { return reciprocal_ != 0 ? x * reciprocal_ : x / divisor_; }

 private:
  double divisor_;
  double reciprocal_ = 0;
};

// ceil(a / divisor) of whole numbers a >= 0 for one divisor >= 1 over many a: a shift where the
// divisor is a power of two (tiles and groups mostly are), else a division. Whole numbers below
// 2^53 make the same quotient as ceil_div's in doubles (no quotient of such numbers rounds across
// an integer), without a double's ceil, which baseline x86-64 (no SSE4.1) builds from a dozen
// instructions (BM_DemandMixedBatch, attention's classes of a mixed batch, times it).
class WholeCeilDivisor {
 public:
  explicit WholeCeilDivisor(std::int64_t divisor) : divisor_(divisor) {
    if (divisor > 0 && (divisor & (divisor - 1)) == 0)
      while ((std::int64_t{1} << shift_) < divisor) ++shift_;
    else
      shift_ = -1;
  }
  std::int64_t operator()(std::int64_t a) const { return shift_ >= 0 ? (a + divisor_ - 1) >> shift_ : (a + divisor_ - 1) / divisor_; }

 private:
  std::int64_t divisor_;
  int shift_ = 0;
};

// Per-SM rate of each pipe in work units per clock. DRAM and L2 are shared by the
// chip, so one SM's fair share is the chip's rate over the SM count; the link is the
// GPU's own, so it is charged whole to whichever SM drives it.
inline PipeArray per_sm_rates(const GpuSpec& gpu, double tensor_rate) {
  PipeArray rate{};
  at(rate, Pipe::tensor) = tensor_rate;
  at(rate, Pipe::fma) = gpu.fp32_lanes_per_clk_per_sm;
  at(rate, Pipe::xu) = gpu.xu_ops_per_clk_per_sm;
  at(rate, Pipe::dram) = gpu.bytes_per_clk(gpu.dram_bandwidth_gb_s) / gpu.sm_count;
  at(rate, Pipe::l2) = gpu.bytes_per_clk(gpu.l2_bandwidth_gb_s) / gpu.sm_count;
  at(rate, Pipe::smem) = gpu.smem_bytes_per_clk_per_sm;
  at(rate, Pipe::link) = gpu.bytes_per_clk(gpu.link_bandwidth_gb_s);
  return rate;
}

// Tensor-core flops per clock per SM for a GEMM operand type; throws when the GPU has none.
inline double tensor_rate(const GpuSpec& gpu, DType dtype) {
  const TensorRates& rates = gpu.tensor_flops_per_clk_per_sm;
  double rate = 0;
  std::string_view field;
  switch (dtype) {
    case DType::fp16:
    case DType::bf16: rate = rates.fp16_bf16, field = "fp16_bf16"; break;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: rate = rates.fp8, field = "fp8"; break;
    case DType::tf32: rate = rates.tf32, field = "tf32"; break;
    case DType::int8: rate = rates.int8, field = "int8"; break;
    case DType::fp32: return 0;  // plain fp32 runs on the FMA pipe, not the tensor cores
  }
  if (!(rate > 0))
    throw InvalidInput("GPU " + gpu.name + " has no " + std::string(to_string(dtype)) +
                " tensor path (tensor_flops_per_clk_per_sm." + std::string(field) + " = 0)");
  return rate;
}

// Work (flops, lane ops, bytes ...) on each pipe, for one CTA or for the whole kernel.
using PipeWork = PipeArray;

// Converts work to cycles: whole GPU from the kernel's total, busiest SM from the sum of
// the CTAs that land there. Pipes with no work cost no cycles, so a rate of 0 is fine there.
inline void fill_cycles(Demand& demand, const PipeWork& total, const PipeWork& busiest_sm, const GpuSpec& gpu,
                        double tensor_rate) {
  const PipeArray rate = per_sm_rates(gpu, tensor_rate);
  for (std::size_t i = 0; i < kPipeCount; ++i) {
    if (total[i] <= 0 && busiest_sm[i] <= 0) continue;
    if (kAllPipes[i] == Pipe::link) {
      demand.gpu_cycles[i] = total[i] / rate[i];
      demand.sm_cycles[i] = demand.gpu_cycles[i];
      continue;
    }
    demand.gpu_cycles[i] = total[i] / (rate[i] * gpu.sm_count);
    demand.sm_cycles[i] = busiest_sm[i] / rate[i];
  }
}

// A plain grid of identical CTAs: the hardware hands the next CTA to whichever SM frees
// a slot, so the busiest SM runs ceil(ctas / SMs) of them. `usable_sms` (0: all) is fewer
// when CTAs are placed in clusters and SMs beyond the last whole cluster stay idle.
inline Demand uniform_grid(const PipeWork& per_cta, double ctas, double resident_ctas_per_sm, const GpuSpec& gpu,
                           double tensor_rate = 0, double usable_sms = 0) {
  Demand demand;
  demand.ctas = ctas;
  demand.busiest_sm_ctas = ceil_div(ctas, usable_sms > 0 ? usable_sms : gpu.sm_count);
  demand.resident_ctas_per_sm = resident_ctas_per_sm;
  PipeWork total{}, busiest{};
  for (std::size_t i = 0; i < kPipeCount; ++i) {
    total[i] = per_cta[i] * ctas;
    busiest[i] = per_cta[i] * demand.busiest_sm_ctas;
  }
  fill_cycles(demand, total, busiest, gpu, tensor_rate);
  return demand;
}

// How many CTAs of this footprint one SM holds at once (the occupancy calculator's rule).
// A CTA that does not fit at all is a config that cannot launch on this GPU: an error.
inline double resident_ctas(const GpuSpec& gpu, double threads_per_cta, double smem_bytes_per_cta,
                            double registers_per_thread, std::string_view what) {
  double resident = gpu.max_ctas_per_sm;
  resident = std::min(resident, std::floor(gpu.max_threads_per_sm / threads_per_cta));
  if (smem_bytes_per_cta > 0) resident = std::min(resident, std::floor(gpu.smem_bytes_per_sm / smem_bytes_per_cta));
  if (registers_per_thread > 0)
    resident = std::min(resident, std::floor(gpu.registers_per_sm / (registers_per_thread * threads_per_cta)));
  if (resident < 1) {
    std::ostringstream message;
    message << what << " does not fit on one SM of " << gpu.name << ": " << threads_per_cta << " threads, "
            << smem_bytes_per_cta << " bytes of shared memory";
    // (the registers named where they are what runs short: a spec's registers_per_sm of 1024 read
    // as a thread and shared-memory misfit whose figures both fit)
    if (registers_per_thread > 0) message << ", " << registers_per_thread * threads_per_cta << " registers";
    message << " (SM offers " << gpu.max_threads_per_sm << " threads, " << gpu.smem_bytes_per_sm << " bytes";
    if (registers_per_thread > 0) message << ", registers_per_sm " << gpu.registers_per_sm;
    message << ")";
    throw InvalidInput(message.str());
  }
  return resident;
}

}  // namespace detail
}  // namespace pipeweave
