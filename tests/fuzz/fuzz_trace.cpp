// Trace CSV (trace_from_csv). A short trace that reads is scheduled into a workload of a small
// model, which must predict (analytical bounds) as a positive, finite time.
#include <algorithm>
#include <vector>

#include "fuzz_support.hpp"
#include "pipeweave/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeweave::Predictor analytical = pipeweave::Predictor::analytical();
  static const pipeweave::ModelParams model{.hidden_size = 1024, .num_attention_heads = 8, .num_key_value_heads = 2,
                                            .head_dim = 128, .intermediate_size = 2048, .vocab_size = 32000,
                                            .num_hidden_layers = 2};
  return pipeweave_fuzz::run(data, size, [](std::string_view text) {
    const std::vector<pipeweave::TraceRequest> trace = pipeweave::trace_from_csv(text);
    // Long traces are valid and slow to schedule by design (up to kMaxWorkloadIterations): only short ones.
    std::int64_t steps = 0;
    for (const pipeweave::TraceRequest& request : trace) steps += request.decode_tokens + request.prefill_tokens / 256 + 1;
    if (steps > 500) return;
    const pipeweave::SchedulerPolicy policy{.max_batched_tokens = 2048, .max_sequences = 64, .chunked_prefill = true};
    const pipeweave::Workload workload = pipeweave::generate_workload("fuzz", model, trace, pipeweave::Deployment{}, policy);
    pipeweave_fuzz::require_positive_finite(pipeweave::predict_workload(analytical, workload, pipeweave::default_gpu()).total_us,
                                            "total_us");
  });
}
