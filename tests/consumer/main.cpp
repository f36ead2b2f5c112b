// Prints one prediction; the packaging test checks that it ran and what it printed.
#include <cstdio>
#include <pipeweave/pipeweave.hpp>

int main() {
  const pipeweave::Predictor predictor;
  const pipeweave::Prediction prediction =
      predictor.predict(pipeweave::Gemm{.m = 4096, .n = 4096, .k = 4096}, pipeweave::default_gpu());
  std::printf("consumer: gemm 4096^3 on %s: %.2f us (%s)\n", pipeweave::default_gpu().name.c_str(),
              prediction.latency_us, std::string(pipeweave::to_string(prediction.source)).c_str());
  return prediction.latency_us > 0 ? 0 : 1;
}
