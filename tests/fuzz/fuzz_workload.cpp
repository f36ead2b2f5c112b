// Workload JSON (workload_from_json). A workload that reads must read back from its to_json, and
// predict (analytical bounds, default GPU, SGLang's profile) as a finite time.
#include <cmath>
#include <string>

#include "fuzz_support.hpp"
#include "pipeweave/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeweave::Predictor analytical = pipeweave::Predictor::analytical();
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const pipeweave::Workload workload = pipeweave::workload_from_json(text);
    try {
      if (pipeweave::workload_from_json(pipeweave::to_json(workload)) != workload)
        pipeweave_fuzz::finding("to_json reads back as another workload");
    } catch (const pipeweave::Error& error) {
      pipeweave_fuzz::finding("to_json wrote what workload_from_json refuses:", error.what());
    }
    const double total = pipeweave::predict_workload(analytical, workload, pipeweave::default_gpu()).total_us;
    if (!(total >= 0) || !std::isfinite(total)) pipeweave_fuzz::finding("total_us not finite and >= 0");
  });
}
