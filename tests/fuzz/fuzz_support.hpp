#pragma once
// What every fuzz target shares: the input as text, pipeweave::Error (the documented answer to
// bad input) accepted where its message is one short line, anything else a finding. libFuzzer
// and the sanitizers report crashes, hangs (-timeout) and huge allocations (-rss_limit_mb,
// -malloc_limit_mb) themselves.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "pipeweave/error.hpp"

namespace pipeweave_fuzz {

[[noreturn]] inline void finding(const char* what, const char* detail = "") {
  std::fprintf(stderr, "pipeweave fuzz finding: %s %s\n", what, detail);
  std::abort();
}

// A prediction or time the library returned: it must be a positive, finite number.
inline void require_positive_finite(double value, const char* what) {
  if (!(value > 0) || !std::isfinite(value)) {
    char text[64];
    std::snprintf(text, sizeof text, "= %g", value);
    finding(what, text);
  }
}

inline constexpr std::size_t kMostMessageBytes = 1024;

template <typename Body>
int run(const std::uint8_t* data, std::size_t size, Body&& body) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    body(text);
  } catch (const pipeweave::Error& error) {
    // Bad input, said so: in one short line of valid text, however long or binary the input
    // (a value is quoted as pipeweave::detail::printable shows it).
    const std::string_view message = error.what();
    if (message.empty() || message.size() > kMostMessageBytes || pipeweave::detail::printable(message, message.size()) != message)
      finding("pipeweave::Error message is empty, longer than 1024 bytes, or not printable UTF-8:",
              pipeweave::detail::printable(message, 300).c_str());
  } catch (const std::exception& error) {
    finding("exception other than pipeweave::Error:", error.what());
  } catch (...) {
    finding("exception of an unknown type");
  }
  return 0;
}

}  // namespace pipeweave_fuzz
