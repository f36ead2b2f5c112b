#pragma once
// The one exception type pipeweave throws, and the helpers that build its messages.
// Every message names the offending field and the value it held, so a user can fix
// the input without reading the source.

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pipeweave {

class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

template <typename Value>
[[noreturn]] void fail_field(std::string_view field, const Value& value, std::string_view requirement) {
  std::ostringstream message;
  message << field << " " << requirement << ", got " << value;
  throw Error(message.str());
}

// Positive and finite: the rule for every dimension, rate and bandwidth.
template <typename Value>
void require_positive(std::string_view field, Value value) {
  if (!(value > 0) || !std::isfinite(static_cast<double>(value))) fail_field(field, value, "must be positive and finite");
}

template <typename Value>
void require_non_negative(std::string_view field, Value value) {
  if (!(value >= 0) || !std::isfinite(static_cast<double>(value))) fail_field(field, value, "must be >= 0 and finite");
}

// A whole number past what any real input holds (a size, a count), `why` saying what bounds it.
template <typename Value>
void require_at_most(std::string_view field, Value value, long long most, std::string_view why = {}) {
  if (value > most)
    fail_field(field, value, "must be at most " + std::to_string(most) + (why.empty() ? "" : " (" + std::string(why) + ")"));
}

}  // namespace detail
}  // namespace pipeweave
