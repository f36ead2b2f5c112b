#pragma once
// Order statistics the compiled part shares: the median of a measurement's repetitions, of
// calibration logs, and of a serving run's iteration and request times.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace pipeweave::detail {

// The middle value of ascending values, the mean of the two middle ones for an even count.
inline double median_of_sorted(const std::vector<double>& sorted) {
  const std::size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}
// The same, of values in any order (at least one).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return median_of_sorted(values);
}
// The value at the middle rank (the upper of the two middle ones for an even count, no mean),
// selected in place, in linear time; `values` is left partly reordered. At least one value.
inline double upper_middle(std::vector<double>& values) {
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace pipeweave::detail
