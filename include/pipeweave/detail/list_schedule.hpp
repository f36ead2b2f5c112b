#pragma once
// Mapping CTAs of unequal cost onto SMs. The hardware (and FlashAttention-3's persistent
// scheduler) hands each next CTA to whichever SM frees first: list scheduling by per-SM
// load. CTAs come in classes of identical work; a class of `count` CTAs first gives every
// SM count / SMs of them in whole rounds (a uniform offset that changes no SM's rank),
// then its remainder r goes to the r least-loaded SMs, one each. That is exactly what
// dealing them one by one to the least-loaded SM does whenever the load spread is under
// one CTA's cost. SMs stay sorted by load; the remainder takes the front r, and those go back
// by a merge from the back: O(r + the entries they pass) per class, with no comparison sort.

#include <algorithm>
#include <cstdint>
#include <numeric>
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

// Schedules classes[order[0]], classes[order[1]], ... (every class in the order given when
// `order` is empty) and returns the demand of the whole grid.
inline Demand list_schedule(const std::vector<CtaClass>& classes, const std::vector<std::uint32_t>& order, const GpuSpec& gpu,
                            double tensor_rate, double resident_ctas_per_sm) {
  const PipeArray rate = per_sm_rates(gpu, tensor_rate);
  const std::size_t sm_count = static_cast<std::size_t>(gpu.sm_count);
  // SMs in groups of g, g the greatest common divisor of the SM count and every remainder:
  // each remainder then takes whole groups (the SMs of a group keep equal loads and follow each
  // other in the order), so one entry stands for each group, and the schedule is the same at
  // 1/g of the work (an H100's 132 SMs under classes of 8 KV heads: 33 groups of 4).
  std::size_t group = sm_count;
  // Each class's cost, in a loop of its own: inside the schedule's, the running maximum of
  // cta_cycles spills to the stack and its steps wait on each other through memory.
  std::vector<double> costs(classes.size());
  for (std::size_t c = 0; c < classes.size(); ++c) costs[c] = cta_cycles(classes[c].work, rate);
  for (const CtaClass& cta_class : classes) {
    if (!(cta_class.count > 0)) continue;
    const double rounds = std::floor(cta_class.count / static_cast<double>(sm_count));
    group = std::gcd(group, static_cast<std::size_t>(cta_class.count - rounds * static_cast<double>(sm_count)));
    if (group == 1) break;
  }
  const std::size_t sms = sm_count / group;
  // (load, group) ascending by load, in a ring that stays full: the remainder leaves from its
  // front, which frees as many slots at its back, and its entries, each one CTA heavier, merge
  // back from the back. Where they land behind the rest (most of the time, the classes coming
  // heaviest first), nothing else moves. load counts the cycles dealt beyond the whole rounds.
  struct Entry {
    double load;
    std::size_t sm;
  };
  std::vector<Entry> ring(sms);
  for (std::size_t i = 0; i < sms; ++i) ring[i] = {0.0, i};
  std::size_t head = 0;  // where the least loaded entry sits
  const auto slot = [&](std::size_t position) {  // the ring's slot of the position-th least loaded
    const std::size_t at_slot = head + position;
    return at_slot >= sms ? at_slot - sms : at_slot;
  };
  std::vector<Entry> dealt;  // the front entries given a CTA of the class in hand
  // The work each SM was dealt beyond the whole rounds, kept per SM (memory by SM count, not by
  // the CTAs dealt), so the busiest SM's is at hand at the end.
  std::vector<PipeWork> dealt_work(sms, PipeWork{});
  std::vector<double> dealt_ctas(sms, 0.0);
  PipeWork every_sm{}, total{};
  double every_sm_ctas = 0, ctas = 0;

  const std::size_t class_count = order.empty() ? classes.size() : order.size();
  for (std::size_t c = 0; c < class_count; ++c) {
    const std::size_t index = order.empty() ? c : order[c];
    const CtaClass& cta_class = classes[index];
    if (!(cta_class.count > 0)) continue;
    const double cost = costs[index];
    const double rounds = std::floor(cta_class.count / static_cast<double>(sm_count));
    const auto remainder = static_cast<std::size_t>(cta_class.count - rounds * static_cast<double>(sm_count)) / group;
    for (std::size_t i = 0; i < kPipeCount; ++i) {
      every_sm[i] += rounds * cta_class.work[i];
      total[i] += cta_class.count * cta_class.work[i];
    }
    every_sm_ctas += rounds;
    ctas += cta_class.count;
    if (remainder == 0) continue;
    dealt.resize(remainder);
    for (std::size_t k = 0; k < remainder; ++k) {
      Entry& entry = dealt[k] = ring[slot(k)];
      entry.load += cost;
      PipeWork& work = dealt_work[entry.sm];
      for (std::size_t i = 0; i < kPipeCount; ++i) work[i] += cta_class.work[i];
      dealt_ctas[entry.sm] += 1;
    }
    head = slot(remainder);  // remainder < sms: the dealt entries' slots are now the ring's back
    // Merge from the back: each dealt entry goes after every other entry of no greater load (the
    // untouched first on a tie, as a merge of the two runs would), the dealt still in order.
    std::size_t write = sms, unmoved = sms - remainder, left = remainder;
    while (left > 0) {
      if (unmoved > 0 && ring[slot(unmoved - 1)].load > dealt[left - 1].load) ring[slot(--write)] = ring[slot(--unmoved)];
      else ring[slot(--write)] = dealt[--left];
    }
  }
  const std::size_t busiest = ring[slot(sms - 1)].sm;
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

inline Demand list_schedule(const std::vector<CtaClass>& classes, const GpuSpec& gpu, double tensor_rate,
                            double resident_ctas_per_sm) {
  return list_schedule(classes, {}, gpu, tensor_rate, resident_ctas_per_sm);
}

}  // namespace pipeweave::detail
