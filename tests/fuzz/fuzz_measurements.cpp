// Measurement CSV (measurements_from_csv), and the first choices a caller without configs asks of it.
#include <vector>

#include "fuzz_support.hpp"
#include "pipeweave/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const std::vector<pipeweave::MeasuredKernel> rows = pipeweave::measurements_from_csv(text);
    (void)pipeweave::configless_first_choices(rows);
  });
}
