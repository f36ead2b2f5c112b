#pragma once
// Measured kernels: from the raw records of `pipeweave-collect` (cuda_kernels/) to the
// measurement CSV files that training and evaluation read (format in docs/formats.md).
//
// Plain C++, so that the conversion is tested without a GPU and can be re-run on saved raw
// files anywhere.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pipeweave/ops/gemm.hpp"

namespace pipeweave {

// The configuration cuBLAS's Hopper kernels carry in their names, e.g.
// `nvjet_sm90_tst_128x144_64x6_2x1_v_bz_splitK_TNT`: a 128x144 tile, 64 elements of K per
// stage, 6 stages, a 2x1 cluster, raster order v, split-K. Dimensions are cuBLAS's
// column-major ones (M along the weights' rows when a linear layer is computed as W x X^T).
struct CublasKernelName {
  int tile_m = 0, tile_n = 0, tile_k = 0, stages = 0, cluster_m = 0, cluster_n = 0;
  std::string raster;  // "v" or "h"
  bool split_k = false;
  GemmSchedule schedule = GemmSchedule::ping_pong;  // coopA: cooperative, coopB: cooperative_split_n
  bool output_transposed = false;                   // layouts ending in T (TNT): the output is written transposed
  bool operator==(const CublasKernelName&) const = default;
};

// The name's configuration, or nothing when the name is not of that form. Throws pipeweave::Error
// for a name of that form with a number past what an int holds.
std::optional<CublasKernelName> parse_cublas_kernel_name(std::string_view kernel_name);

// Converts the raw output of pipeweave-collect (JSON lines: a "device" line, then one line per
// measured configuration of a single op) into that op's measurement CSV, with a header row.
// Durations are the median of the repetitions. GEMM rows are in the library's convention
// (m = tokens, row-major): cuBLAS's tile and cluster dimensions are swapped into it.
// The `gpu` column is the catalog's name for the device line's GPU (CUDA's name when the catalog
// lacks it); for a collection confined to part of the SMs (pipeweave-collect --sms: the device
// line has sm_limit) it is sm_limited_gpu_name(that, sm_limit) (pipeweave/calibration.hpp),
// e.g. "H100-SXM-sm64", the name of the spec `pipeweave calibrate` makes of logs run the same way.
// Throws pipeweave::Error naming the line and field of anything malformed.
std::string measurements_csv_from_raw(std::string_view raw_jsonl);

// Several runs of the same list (e.g. cuda_kernels/repeat_collect.sh), pooled into one CSV:
// each configuration's duration is the median over runs of each run's median, `runs` counts
// them and `run_spread` is (max - min) / median of the runs' medians. Records are matched by
// their content (everything but the timings), so a run in reverse order pools with one in
// order; a record that is not in every run is an error naming the run and line. Rows follow
// the first run's order. `name` (a file name) labels errors; empty: "run N". Runs pool only
// when their device lines agree on the GPU and the protocol (reps, warmup, l2, rest). The
// same run passed twice counts twice: the caller keeps runs distinct (the CLI refuses a file
// given twice).
struct RawRun {
  std::string name;
  std::string jsonl;
};
std::string measurements_csv_from_raw(std::span<const RawRun> runs);

}  // namespace pipeweave
