#pragma once
// Mapping CTAs of unequal cost onto SMs. The hardware (and FlashAttention-3's persistent
// scheduler) hands each next CTA to whichever SM frees first: list scheduling by per-SM
// load. CTAs come in classes of identical work; a class of `count` CTAs first gives every
// SM count / SMs of them in whole rounds (a uniform offset that changes no SM's rank),
// then its remainder r goes to the r least-loaded SMs, one each. That is exactly what
// dealing them one by one to the least-loaded SM does whenever the load spread is under
// one CTA's cost. SMs stay sorted by load; the remainder takes the front r, and each goes back
// to its place by insertion from the back, passing the entries it moves behind: O(r + moved
// entries) per class, with no comparison sort.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "pipeweave/pipes.hpp"

namespace pipeweave::detail {

struct CtaClass {
  PipeWork work{};  // one CTA's work on each pipe
  double count = 0;
};

// Cycles one CTA holds its SM if nothing else ran there: its slowest pipe among those with work.
// Two pipes at a time where the compiler offers vectors of two doubles (it pairs neither these
// divisions nor the maximum by itself), without a branch: a pipe without work (or with work
// that is NaN) offers 0, and a running maximum takes a quotient only where it is greater (so a
// NaN quotient is passed over); the greatest of such values is the same in any order, so the
// lanes' maxima, then the larger of the two, are the scalar walk's answer to the bit.
inline double cta_cycles(const PipeWork& work, const PipeArray& rate) {
  static_assert(kAllPipes[kPipeCount - 1] == Pipe::link, "the link is the last pipe, and no SM's");
  constexpr std::size_t sm_pipes = kPipeCount - 1;
  static_assert(sm_pipes % 2 == 0);
#if defined(__GNUC__)
  using Pair = double __attribute__((vector_size(16)));
  Pair running{0.0, 0.0};
  for (std::size_t i = 0; i < sm_pipes; i += 2) {
    Pair numerator, denominator;
    std::memcpy(&numerator, &work[i], sizeof(Pair));
    std::memcpy(&denominator, &rate[i], sizeof(Pair));
    const Pair zero{0.0, 0.0};
    const Pair quotient = numerator > zero ? numerator / denominator : zero;
    running = running < quotient ? quotient : running;
  }
  return running[0] < running[1] ? running[1] : running[0];
#else
  double cycles = 0;
  for (std::size_t i = 0; i < sm_pipes; ++i)
    if (work[i] > 0) cycles = std::max(cycles, work[i] / rate[i]);
  return cycles;
#endif
}

// sum[i] += scale * work[i] over the pipes, two at a time where the compiler offers vectors of
// two doubles (it does not pair these by itself); every lane rounds as the scalar sum would.
inline void add_scaled(PipeWork& sum, double scale, const PipeWork& work) {
#if defined(__GNUC__)
  using Pair = double __attribute__((vector_size(16)));
  std::size_t i = 0;
  for (; i + 1 < kPipeCount; i += 2) {
    Pair sums, works;
    std::memcpy(&sums, &sum[i], sizeof(Pair));
    std::memcpy(&works, &work[i], sizeof(Pair));
    sums += scale * works;
    std::memcpy(&sum[i], &sums, sizeof(Pair));
  }
  for (; i < kPipeCount; ++i) sum[i] += scale * work[i];
#else
  for (std::size_t i = 0; i < kPipeCount; ++i) sum[i] += scale * work[i];
#endif
}

// Schedules classes[order[0]], classes[order[1]], ... (every class in the order given when
// `order` is empty) and returns the demand of the whole grid.
inline Demand list_schedule(const std::vector<CtaClass>& classes, const std::vector<std::uint32_t>& order, const GpuSpec& gpu,
                            double tensor_rate, double resident_ctas_per_sm) {
  const PipeArray rate = per_sm_rates(gpu, tensor_rate);
  const std::size_t sm_count = static_cast<std::size_t>(gpu.sm_count);
  const double sm_count_value = static_cast<double>(sm_count);
  // A class's whole rounds and remainder CTAs. Classes mostly share one count (an attention
  // kernel's are all its head units times its splits): worked out again only when it changes.
  double last_count = -1, last_rounds = 0;
  std::size_t last_remainder = 0;
  const auto split_count = [&](double count) {
    if (count != last_count) {
      last_count = count;
      last_rounds = std::floor(count / sm_count_value);
      last_remainder = static_cast<std::size_t>(count - last_rounds * sm_count_value);
    }
  };
  // SMs in groups of g, g the greatest common divisor of the SM count and every remainder:
  // each remainder then takes whole groups (the SMs of a group keep equal loads and follow each
  // other in the order), so one entry stands for each group, and the schedule is the same at
  // 1/g of the work (an H100's 132 SMs under classes of 8 KV heads: 33 groups of 4).
  std::size_t group = sm_count;
  for (const CtaClass& cta_class : classes) {
    if (!(cta_class.count > 0) || cta_class.count == last_count) continue;
    split_count(cta_class.count);
    group = std::gcd(group, last_remainder);
    if (group == 1) break;
  }
  const std::size_t sms = sm_count / group;

  // The classes in schedule order, those with CTAs, each with its cost and the groups its
  // remainder takes. The costs in a loop of their own: inside the schedule's, the running maximum
  // spills to the stack and its steps wait on each other through memory.
  struct Step {
    double cost;
    std::uint32_t index;
    std::uint32_t groups;  // remainder / group
  };
  const std::size_t class_count = order.empty() ? classes.size() : order.size();
  std::vector<Step> steps(class_count);  // (written through a pointer, then cut to the classes with CTAs)
  Step* next_step = steps.data();
  std::size_t dealt_count = 0;
  double groups_count = -1;  // the count `groups` was worked out for (an integer division each: kept)
  std::uint32_t groups = 0;
  for (std::size_t c = 0; c < class_count; ++c) {
    const std::size_t index = order.empty() ? c : order[c];
    const double count = classes[index].count;
    if (!(count > 0)) continue;
    if (count != groups_count) {
      split_count(count);
      groups_count = count;
      groups = static_cast<std::uint32_t>(last_remainder / group);
    }
    *next_step++ = {0.0, static_cast<std::uint32_t>(index), groups};
    dealt_count += groups;
  }
  steps.resize(static_cast<std::size_t>(next_step - steps.data()));
  for (Step& step : steps) step.cost = cta_cycles(classes[step.index].work, rate);

  // (load, group) ascending by load, the live entries a window [head, head + sms) of a buffer
  // that slides toward its end and moves back to its start when full: the remainder leaves from
  // the window's front and its entries, each one CTA heavier, merge back from the back. Where
  // they land behind the rest (most of the time, the classes coming heaviest first), nothing else
  // moves. load counts the cycles dealt beyond the whole rounds.
  struct Entry {
    double load;
    std::uint32_t sm;
  };
  std::vector<Entry> buffer(3 * sms);
  for (std::size_t i = 0; i < sms; ++i) buffer[i] = {0.0, static_cast<std::uint32_t>(i)};
  std::size_t head = 0;
  // Which group each dealt CTA went to, in the order dealt: the busiest group's work is summed
  // from these at the end, in the same order as if every group's were kept as it went. Memory by
  // the CTAs dealt: at most the classes times the groups, 2^25 entries (128 MB) at attention's
  // cap on query tiles, where keeping every group's work as it went cost more time.
  std::vector<std::uint32_t> dealt_to(dealt_count);
  std::uint32_t* next_dealt = dealt_to.data();
  for (const Step& step : steps) {
    const std::size_t taken = step.groups;
    if (taken == 0) continue;
    if (head + sms + taken > buffer.size()) {
      std::copy(buffer.begin() + static_cast<std::ptrdiff_t>(head), buffer.begin() + static_cast<std::ptrdiff_t>(head + sms),
                buffer.begin());
      head = 0;
    }
    Entry* const front = buffer.data() + head;
    for (std::size_t k = 0; k < taken; ++k) {
      front[k].load += step.cost;
      *next_dealt++ = front[k].sm;
    }
    // Merge from the back: each dealt entry goes after every other entry of no greater load (the
    // untouched first on a tie, as a merge of the two runs would), the dealt still in order; the
    // untouched entries heavier than it move back one by one as it passes them (a binary search
    // for its place cost more: where it lands is as good as random, and every entry it passes
    // moves anyway). The writes stay ahead of the dealt entries not yet read (write = unmoved + left).
    Entry* write = front + sms + taken;
    Entry* unmoved = front + sms;
    Entry* const untouched = front + taken;
    for (std::size_t left = taken; left > 0; --left) {
      const Entry entry = front[left - 1];
      while (unmoved > untouched && (unmoved - 1)->load > entry.load) *--write = *--unmoved;
      *--write = entry;
    }
    head += taken;
  }
  const std::uint32_t busiest = buffer[head + sms - 1].sm;

  // Work is never negative, so a class with no whole round adds +0 x work = +0 to every SM's,
  // which leaves each sum's bits as they were, unless its work is not finite (0 x inf is NaN).
  // Such classes are passed over here; if any work is not finite the total shows it (a sum of
  // non-negative terms, one of them inf or NaN), and every SM's work is then summed again with them.
  PipeWork every_sm{}, total{}, busiest_work{};
  double every_sm_ctas = 0, ctas = 0, busiest_dealt_ctas = 0;
  std::size_t dealt = 0;
  for (const Step& step : steps) {
    const CtaClass& cta_class = classes[step.index];
    split_count(cta_class.count);
    if (last_rounds != 0) add_scaled(every_sm, last_rounds, cta_class.work);
    add_scaled(total, cta_class.count, cta_class.work);
    every_sm_ctas += last_rounds;
    ctas += cta_class.count;
    for (const std::size_t end = dealt + step.groups; dealt < end; ++dealt) {
      if (dealt_to[dealt] != busiest) continue;
      add_scaled(busiest_work, 1, cta_class.work);
      busiest_dealt_ctas += 1;
    }
  }
  if (!std::all_of(total.begin(), total.end(), [](double sum) { return std::isfinite(sum); })) {
    every_sm = {};
    for (const Step& step : steps) {
      split_count(classes[step.index].count);
      add_scaled(every_sm, last_rounds, classes[step.index].work);
    }
  }
  for (std::size_t i = 0; i < kPipeCount; ++i) busiest_work[i] = every_sm[i] + busiest_work[i];
  const double busiest_ctas = every_sm_ctas + busiest_dealt_ctas;

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
