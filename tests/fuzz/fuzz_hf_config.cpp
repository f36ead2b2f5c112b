// Hugging Face config.json (model_params_from_hf_config). Params that read must validate, and a
// workload of two requests generated from them must predict (analytical bounds) as a positive,
// finite time, or be refused with an Error (tp that does not divide, sizes the GPU cannot run).
#include "fuzz_support.hpp"
#include "pipeweave/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeweave::Predictor analytical = pipeweave::Predictor::analytical();
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const pipeweave::ModelParams params = pipeweave::model_params_from_hf_config(text);
    try {
      params.validate();
    } catch (const pipeweave::Error& error) {
      pipeweave_fuzz::finding("model_params_from_hf_config returned params that do not validate:", error.what());
    }
    const pipeweave::TraceRequest trace[] = {{100, 2, 3}, {20, 0, 1}};
    for (const int tp : {1, 2}) {
      const pipeweave::Workload workload =
          pipeweave::generate_workload("fuzz", params, trace, pipeweave::Deployment{.tp = tp}, pipeweave::SchedulerPolicy{});
      pipeweave_fuzz::require_positive_finite(pipeweave::predict_workload(analytical, workload, pipeweave::default_gpu()).total_us,
                                              "total_us");
    }
  });
}
