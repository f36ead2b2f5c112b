#pragma once
// Helpers shared by the unit tests.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <sstream>
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

// A file's whole text; fails the test if it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace pipeweave_test
