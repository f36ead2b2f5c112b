#pragma once
// pipeweave: predicts how long a GPU kernel runs on a given NVIDIA GPU, without running it.
//
//   pipeweave::Predictor predictor;  // bundled models
//   auto p = predictor.predict(pipeweave::Gemm{.m = 4096, .n = 4096, .k = 4096}, pipeweave::find_gpu("H100-SXM"));
//   p.latency_us, p.lower_bound_us, p.bottleneck, p.source

#include "pipeweave/calibration.hpp"
#include "pipeweave/dataset.hpp"
#include "pipeweave/demand.hpp"
#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/io.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/measurements.hpp"
#include "pipeweave/mlp.hpp"
#include "pipeweave/pipes.hpp"
#include "pipeweave/predictor.hpp"
#include "pipeweave/training.hpp"
#include "pipeweave/types.hpp"
#include "pipeweave/version.hpp"
#include "pipeweave/workload.hpp"
