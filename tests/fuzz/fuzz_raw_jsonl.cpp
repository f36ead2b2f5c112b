// Raw collector output, JSON lines (measurements_csv_from_raw): the CSV it writes must read back.
#include <string>

#include "fuzz_support.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/measurements.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const std::string csv = pipeweave::measurements_csv_from_raw(text);
    try {
      (void)pipeweave::measurements_from_csv(csv, "measurements_csv_from_raw's output");
    } catch (const pipeweave::Error& error) {
      pipeweave_fuzz::finding("measurements_csv_from_raw wrote what measurements_from_csv refuses:", error.what());
    }
  });
}
