#pragma once
// Helpers shared by the unit tests.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "pipeweave/error.hpp"

namespace pipeweave_test {

// The message of the pipeweave::Error that `action` throws; fails the test if it throws none.
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const pipeweave::Error& error) {
    return error.what();
  }
  FAIL("expected pipeweave::Error, nothing was thrown");
  return {};
}

}  // namespace pipeweave_test
