#pragma once
// Mapping CTAs of unequal cost onto SMs. The hardware (and FlashAttention-3's persistent
// scheduler) hands each next CTA to whichever SM frees first: list scheduling, modelled
// with a min-heap of per-SM load. CTAs come in classes of identical work; a class of
// `count` CTAs first gives every SM count / SMs of them in whole rounds (which leaves the
// heap order unchanged, so it is a uniform offset), then deals the remainder one by one.

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "pipeweave/pipes.hpp"

namespace pipeweave::detail {

struct CtaClass {
  PipeWork work{};  // one CTA's work on each pipe
  double count = 0;
};

// Cycles one CTA holds its SM if nothing else ran there: its slowest pipe.
inline double cta_cycles(const PipeWork& work, const PipeArray& rate) {
  double cycles = 0;
  for (std::size_t i = 0; i < kPipeCount; ++i)
    if (work[i] > 0 && kAllPipes[i] != Pipe::link) cycles = std::max(cycles, work[i] / rate[i]);
  return cycles;
}

// Schedules the classes in the order given and returns the demand of the whole grid.
inline Demand list_schedule(const std::vector<CtaClass>& classes, const GpuSpec& gpu, double tensor_rate,
                            double resident_ctas_per_sm) {
  const PipeArray rate = per_sm_rates(gpu, tensor_rate);
  const std::size_t sms = static_cast<std::size_t>(gpu.sm_count);
  // Heap of (load, sm); every SM also carries the work dealt to it one CTA at a time.
  std::vector<std::pair<double, std::size_t>> heap(sms);
  for (std::size_t i = 0; i < sms; ++i) heap[i] = {0.0, i};
  std::vector<PipeWork> dealt(sms, PipeWork{});
  std::vector<double> dealt_ctas(sms, 0.0);
  PipeWork every_sm{}, total{};
  double every_sm_ctas = 0, ctas = 0;

  for (const CtaClass& cta_class : classes) {
    if (cta_class.count <= 0) continue;
    const double cost = cta_cycles(cta_class.work, rate);
    const double rounds = std::floor(cta_class.count / static_cast<double>(sms));
    const auto remainder = static_cast<std::size_t>(cta_class.count - rounds * static_cast<double>(sms));
    for (std::size_t i = 0; i < kPipeCount; ++i) {
      every_sm[i] += rounds * cta_class.work[i];
      total[i] += cta_class.count * cta_class.work[i];
    }
    every_sm_ctas += rounds;
    ctas += cta_class.count;
    for (std::size_t r = 0; r < remainder; ++r) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
      auto& [load, sm] = heap.back();
      load += cost;
      for (std::size_t i = 0; i < kPipeCount; ++i) dealt[sm][i] += cta_class.work[i];
      dealt_ctas[sm] += 1;
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    }
  }
  const auto busiest = std::max_element(heap.begin(), heap.end())->second;
  PipeWork busiest_work{};
  for (std::size_t i = 0; i < kPipeCount; ++i) busiest_work[i] = every_sm[i] + dealt[busiest][i];

  Demand demand;
  demand.ctas = ctas;
  demand.busiest_sm_ctas = every_sm_ctas + dealt_ctas[busiest];
  demand.resident_ctas_per_sm = resident_ctas_per_sm;
  fill_cycles(demand, total, busiest_work, gpu, tensor_rate);
  return demand;
}

}  // namespace pipeweave::detail
