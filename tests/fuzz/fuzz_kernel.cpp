// Kernel strings (parse_kernel). One that parses must read back from its to_string as the same
// kernel, and the bundled models must predict it as a positive, finite time on the default GPU
// (the models' own) and on an Ampere and a Blackwell card (outside their training; an Error where
// the card cannot run it).
#include <string>

#include "fuzz_support.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/predictor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeweave::Predictor predictor;
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const pipeweave::Kernel kernel = pipeweave::parse_kernel(text);
    const std::string written = pipeweave::to_string(kernel);
    try {
      if (pipeweave::parse_kernel(written) != kernel) pipeweave_fuzz::finding("reads back as another kernel:", written.c_str());
    } catch (const pipeweave::Error& error) {
      pipeweave_fuzz::finding("to_string wrote what parse_kernel refuses:", error.what());
    }
    pipeweave_fuzz::require_positive_finite(predictor.predict(kernel, pipeweave::default_gpu()).latency_us, "latency_us");
    for (const char* other : {"A100-SXM", "RTX-PRO-6000-Blackwell-Server"}) {
      try {
        pipeweave_fuzz::require_positive_finite(predictor.predict(kernel, pipeweave::find_gpu(other)).latency_us, "latency_us");
      } catch (const pipeweave::Error&) {
        // a kernel this card cannot run (FlashAttention-3 off Hopper, fp8 on Ampere, a tile past its shared memory)
      }
    }
  });
}
