#pragma once
// Mapping CTAs of unequal cost onto SMs. The hardware (and FlashAttention-3's persistent
// scheduler) hands each next CTA to whichever SM frees first: list scheduling by per-SM
// load. CTAs come in classes of identical work; a class of `count` CTAs first gives every
// SM count / SMs of them in whole rounds (a uniform offset that changes no SM's rank),
// then its remainder r goes to the r least-loaded SMs, one each. That is exactly what
// dealing them one by one to the least-loaded SM does whenever the load spread is under
// one CTA's cost (always so for longest-first order), at O(SMs) per class instead of
// O(r log SMs): SMs stay sorted by load, the remainder takes the front r, and the two
// sorted runs are merged back, with no comparison sort per class.

#include <algorithm>
#include <numeric>
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
  const std::size_t sm_count = static_cast<std::size_t>(gpu.sm_count);
  // SMs in groups of g, g the greatest common divisor of the SM count and every remainder:
  // each remainder then takes whole groups (the SMs of a group keep equal loads and follow each
  // other in the order), so one entry stands for each group, and the schedule is the same at
  // 1/g of the work (an H100's 132 SMs under classes of 8 KV heads: 33 groups of 4).
  std::size_t group = sm_count;
  for (const CtaClass& cta_class : classes) {
    if (!(cta_class.count > 0)) continue;
    const double rounds = std::floor(cta_class.count / static_cast<double>(sm_count));
    group = std::gcd(group, static_cast<std::size_t>(cta_class.count - rounds * static_cast<double>(sm_count)));
    if (group == 1) break;
  }
  const std::size_t sms = sm_count / group;
  // (load, group) sorted ascending by load: load counts the cycles dealt beyond the whole rounds.
  std::vector<std::pair<double, std::size_t>> by_load(sms), merged(sms);
  for (std::size_t i = 0; i < sms; ++i) by_load[i] = {0.0, i};
  // The work each SM was dealt beyond the whole rounds, kept per SM (memory by SM count, not by
  // the CTAs dealt), so the busiest SM's is at hand at the end.
  std::vector<PipeWork> dealt_work(sms, PipeWork{});
  std::vector<double> dealt_ctas(sms, 0.0);
  PipeWork every_sm{}, total{};
  double every_sm_ctas = 0, ctas = 0;

  for (std::size_t c = 0; c < classes.size(); ++c) {
    const CtaClass& cta_class = classes[c];
    if (cta_class.count > 0) {
      const double cost = cta_cycles(cta_class.work, rate);
      const double rounds = std::floor(cta_class.count / static_cast<double>(sm_count));
      const auto remainder = static_cast<std::size_t>(cta_class.count - rounds * static_cast<double>(sm_count)) / group;
      for (std::size_t i = 0; i < kPipeCount; ++i) {
        every_sm[i] += rounds * cta_class.work[i];
        total[i] += cta_class.count * cta_class.work[i];
      }
      every_sm_ctas += rounds;
      ctas += cta_class.count;
      for (std::size_t r = 0; r < remainder; ++r) {
        by_load[r].first += cost;
        PipeWork& work = dealt_work[by_load[r].second];
        for (std::size_t i = 0; i < kPipeCount; ++i) work[i] += cta_class.work[i];
        dealt_ctas[by_load[r].second] += 1;
      }
      const auto split = by_load.begin() + static_cast<std::ptrdiff_t>(remainder);
      std::merge(split, by_load.end(), by_load.begin(), split, merged.begin(),
                 [](const auto& a, const auto& b) { return a.first < b.first; });
      by_load.swap(merged);
    }
  }
  const std::size_t busiest = by_load.back().second;
  PipeWork busiest_work = every_sm;
  for (std::size_t i = 0; i < kPipeCount; ++i) busiest_work[i] += dealt_work[busiest][i];
  const double busiest_ctas = every_sm_ctas + dealt_ctas[busiest];

  Demand demand;
  demand.ctas = ctas;
  demand.busiest_sm_ctas = busiest_ctas;
  demand.resident_ctas_per_sm = resident_ctas_per_sm;
  fill_cycles(demand, total, busiest_work, gpu, tensor_rate);
  return demand;
}

}  // namespace pipeweave::detail
