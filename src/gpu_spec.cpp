#include "pipeweave/gpu_spec.hpp"

#include <sstream>
#include <string>
#include <utility>

#include "pipeweave/error.hpp"

namespace pipeweave {

void GpuSpec::validate() const {
  using detail::require_non_negative;
  using detail::require_positive;
  if (name.empty()) throw InvalidInput("gpu.name must not be empty");
  // Names go into messages and tables: a line's worth of text, no control characters.
  for (const auto& [field, text] : {std::pair<const char*, const std::string&>{"gpu.name", name}, {"gpu.architecture", architecture}})
    if (text.size() > 128 || !detail::is_printable(text))
      detail::fail_field(field, detail::quoted(text), "must be at most 128 bytes of text without control characters");
  if (architecture.empty()) detail::fail_field("gpu.architecture", "\"\"", "must name the architecture (" + name + ")");
  require_positive("gpu.compute_capability_major", compute_capability_major);
  require_non_negative("gpu.compute_capability_minor", compute_capability_minor);
  // The label says what the compute capability does (which decides every architecture-dependent
  // figure): a spec saying "volta" over 9.0 contradicts itself.
  if (const std::string_view named = architecture_of(compute_capability_major, compute_capability_minor);
      !named.empty() && architecture != named)
    detail::fail_field("gpu.architecture", detail::quoted(architecture),
                       "must be \"" + std::string(named) + "\", the architecture of compute capability " +
                           std::to_string(compute_capability_major) + "." + std::to_string(compute_capability_minor));
  require_positive("gpu.sm_count", sm_count);
  require_positive("gpu.sm_clock_mhz", sm_clock_mhz);
  require_positive("gpu.tensor_flops_per_clk_per_sm.fp16_bf16", tensor_flops_per_clk_per_sm.fp16_bf16);
  require_non_negative("gpu.tensor_flops_per_clk_per_sm.fp8", tensor_flops_per_clk_per_sm.fp8);  // 0: no fp8 path
  require_positive("gpu.tensor_flops_per_clk_per_sm.tf32", tensor_flops_per_clk_per_sm.tf32);
  require_positive("gpu.tensor_flops_per_clk_per_sm.int8", tensor_flops_per_clk_per_sm.int8);
  require_positive("gpu.fp32_lanes_per_clk_per_sm", fp32_lanes_per_clk_per_sm);
  require_positive("gpu.xu_ops_per_clk_per_sm", xu_ops_per_clk_per_sm);
  require_positive("gpu.smem_bytes_per_clk_per_sm", smem_bytes_per_clk_per_sm);
  require_positive("gpu.dram_bandwidth_gb_s", dram_bandwidth_gb_s);
  require_positive("gpu.l2_bandwidth_gb_s", l2_bandwidth_gb_s);
  require_positive("gpu.l2_bytes", l2_bytes);
  require_positive("gpu.smem_bytes_per_sm", smem_bytes_per_sm);
  require_positive("gpu.registers_per_sm", registers_per_sm);
  require_positive("gpu.max_threads_per_sm", max_threads_per_sm);
  require_positive("gpu.max_ctas_per_sm", max_ctas_per_sm);
  require_positive("gpu.memory_gb", memory_gb);
  require_positive("gpu.link_bandwidth_gb_s", link_bandwidth_gb_s);
  require_non_negative("gpu.link_latency_us", link_latency_us);
  require_non_negative("gpu.max_clock_mhz", max_clock_mhz);
  require_non_negative("gpu.sustained_clock_mhz", sustained_clock_mhz);
  if (sustained_clock_mhz > 0 && max_clock_mhz == 0)
    detail::fail_field("gpu.sustained_clock_mhz", sustained_clock_mhz, "needs max_clock_mhz, the clock it is compared with");
  // The clock the rates are per is one the GPU reaches (a max_clock_mhz of 100 under an sm_clock_mhz
  // of 1830 was read); within 10%, as calibrate measures sm_clock_mhz under load, which on a GPU that
  // holds its top clock (or a card that boosts past it) may read a little past the reported maximum.
  if (max_clock_mhz > 0 && sm_clock_mhz > 1.1 * max_clock_mhz)
    detail::fail_field("gpu.max_clock_mhz", max_clock_mhz,
                       "must be at least sm_clock_mhz (" + std::to_string(sm_clock_mhz) + ") / 1.1, the clock the rates are per");
  if (sustained_clock_mhz > max_clock_mhz)
    detail::fail_field("gpu.sustained_clock_mhz", sustained_clock_mhz,
                       "must be at most max_clock_mhz (" + std::to_string(max_clock_mhz) + ")");
  if (!(sustained_utilization >= 0 && sustained_utilization <= 1))
    detail::fail_field("gpu.sustained_utilization", sustained_utilization, "must be in [0, 1]");
  require_non_negative("gpu.power_limit_w", power_limit_w);
  // Within what any GPU could have, by a wide margin: past it a figure is a typo or an attack
  // (2147483647 SMs allocated 32 GB; a clock of 1e308 MHz or 1e-300 GB/s gave NaN and inf).
  const auto within = [](const char* field, double value, double least, double most) {
    if (value != 0 && !(value >= least && value <= most)) {
      std::ostringstream range;
      range << "must be within [" << least << ", " << most << "] (what any GPU could have), or 0 where 0 is allowed";
      detail::fail_field(field, value, range.str());
    }
  };
  within("gpu.compute_capability_major", compute_capability_major, 1, 99);
  within("gpu.compute_capability_minor", compute_capability_minor, 0, 99);
  within("gpu.sm_count", sm_count, 1, 4096);
  within("gpu.sm_clock_mhz", sm_clock_mhz, 1, 10000);
  within("gpu.max_clock_mhz", max_clock_mhz, 1, 10000);
  within("gpu.sustained_clock_mhz", sustained_clock_mhz, 1, 10000);
  within("gpu.tensor_flops_per_clk_per_sm.fp16_bf16", tensor_flops_per_clk_per_sm.fp16_bf16, 1, 1e6);
  within("gpu.tensor_flops_per_clk_per_sm.fp8", tensor_flops_per_clk_per_sm.fp8, 1, 1e6);
  within("gpu.tensor_flops_per_clk_per_sm.tf32", tensor_flops_per_clk_per_sm.tf32, 1, 1e6);
  within("gpu.tensor_flops_per_clk_per_sm.int8", tensor_flops_per_clk_per_sm.int8, 1, 1e6);
  within("gpu.fp32_lanes_per_clk_per_sm", fp32_lanes_per_clk_per_sm, 1, 65536);
  within("gpu.xu_ops_per_clk_per_sm", xu_ops_per_clk_per_sm, 0.01, 65536);
  within("gpu.smem_bytes_per_clk_per_sm", smem_bytes_per_clk_per_sm, 1, 65536);
  within("gpu.dram_bandwidth_gb_s", dram_bandwidth_gb_s, 0.001, 1e6);
  within("gpu.l2_bandwidth_gb_s", l2_bandwidth_gb_s, 0.001, 1e7);
  within("gpu.l2_bytes", l2_bytes, 1024, 1e11);
  within("gpu.smem_bytes_per_sm", smem_bytes_per_sm, 1024, 1e8);
  within("gpu.registers_per_sm", registers_per_sm, 1024, 1e8);
  within("gpu.max_threads_per_sm", max_threads_per_sm, 32, 1e6);
  within("gpu.max_ctas_per_sm", max_ctas_per_sm, 1, 1e5);
  within("gpu.memory_gb", memory_gb, 0.001, 1e6);
  within("gpu.link_bandwidth_gb_s", link_bandwidth_gb_s, 0.001, 1e6);
  within("gpu.link_latency_us", link_latency_us, 1e-6, 1e6);
  within("gpu.power_limit_w", power_limit_w, 1, 1e5);
}

std::string_view architecture_of(int compute_capability_major, int compute_capability_minor) {
  if (compute_capability_major == 8) return compute_capability_minor == 9 ? "ada" : "ampere";
  if (compute_capability_major == 9) return "hopper";
  if (compute_capability_major >= 10 && compute_capability_major <= 12) return "blackwell";
  return "";  // (before Ampere, and architectures after Blackwell: their names are not known here)
}

}  // namespace pipeweave
