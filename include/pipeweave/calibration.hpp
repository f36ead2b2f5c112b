#pragma once
// Calibration: from the raw timings of the CUDA microbenchmarks (`pipeweave-microbench`,
// cuda_kernels/) to a GpuSpec whose figures are what kernels sustain on the GPU in hand.
// Spec sheets give peaks at a boost clock; under a tensor-core load the clock drops and the
// memory system delivers less than its pin rate, and the analytical bound should say so.
//
// Everything here is plain C++ (no CUDA): `pipeweave calibrate` runs the microbenchmarks
// and calls calibrate(); the same code re-derives a spec from saved logs on any machine.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pipeweave/gpu_spec.hpp"

namespace pipeweave {

// ---- The microbenchmarks' log (format "pipeweave-microbench", version 1) ---------------------

struct MicrobenchRun {
  double seconds = 0;    // one timed launch (CUDA events)
  double clock_mhz = 0;  // SM clock sustained during it (median over CTAs); 0 where not read
};

struct MicrobenchResult {
  std::string name;         // "tensor_bf16", "dram_read", ...: see microbench_figures()
  std::string instruction;  // what was measured, for the record
  std::string unit;         // what `work` counts: "flop", "op", "byte" or "launch"
  double work = 0;          // units of work one run performs
  std::vector<MicrobenchRun> runs;
};

// What the CUDA runtime reports about the device the log was taken on.
struct MeasuredDevice {
  std::string name;  // CUDA device name, e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int sm_count = 0;  // the SMs the benchmarks ran on: the device's, or sm_limit's
  // pipeweave-microbench --sms N: every kernel confined to a green context of sm_limit SMs (N
  // rounded up to the hardware's granularity; equal to sm_count) of the device's device_sm_count.
  // 0 (both): the whole GPU, and the log has neither key.
  int sm_limit = 0;
  int device_sm_count = 0;
  double max_clock_mhz = 0;
  double dram_peak_gb_s = 0;  // memory clock x bus width
  double l2_bytes = 0;
  double memory_bytes = 0;
  double smem_bytes_per_sm = 0;
  int registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int max_ctas_per_sm = 0;
  std::string driver;    // kernel driver version, e.g. "580.159.04"
  int cuda_runtime = 0;  // e.g. 13000
};

struct MicrobenchLog {
  MeasuredDevice device;
  bool quick = false;
  std::vector<MicrobenchResult> benchmarks;
};

// The name of a GPU whose kernels ran confined to `sm_count` of its SMs (pipeweave-microbench and
// pipeweave-collect --sms): `gpu` (the catalog's name, or CUDA's for a GPU not in the catalog)
// plus "-sm<count>", e.g. "H100-SXM-sm64". The calibrated spec of such logs has this name, and so
// has the `gpu` column of measurement rows collected that way (measurements_csv_from_raw), so that
// training finds the spec beside the rows (--specs DIR: DIR/H100-SXM-sm64.calibrated.json).
std::string sm_limited_gpu_name(std::string_view gpu, int sm_count);

// Reads a log; every malformed or missing field is an error naming it.
MicrobenchLog microbench_log_from_json(std::string_view json_text);
MicrobenchLog load_microbench_log(const std::string& path);

// ---- What the logs mean ----------------------------------------------------------------------

// How one benchmark's figure is read and which GpuSpec field it sets.
struct MicrobenchFigure {
  std::string_view benchmark;   // name in the log
  std::string_view label;       // for tables
  std::string_view display_unit;  // "TFLOP/s", "TOP/s", "Gop/s", "GB/s", "us"
  std::string_view spec_field;  // GpuSpec field it calibrates; empty for figures kept for the record
};
// Every benchmark the logs may hold, in table order. A log naming any other is refused.
std::span<const MicrobenchFigure> microbench_figures();

struct CalibratedFigure {
  MicrobenchFigure figure;
  double measured = 0;           // median over every run of every log, in figure.display_unit
  double spread = 0;             // (max - min) / median over those runs
  double run_to_run_spread = 0;  // (max - min) / median of each log's median; 0 with one log
  int runs = 0;
  int logs = 0;
  double clock_mhz = 0;          // median SM clock over the runs; 0 where the kernel does not read it
  // The spec sheet's figure at the measured clock (per-clock peak x clock x SMs; DRAM: the
  // catalog's bandwidth), in display_unit; 0 where there is none (L2, launch, unknown GPUs).
  double peak_at_clock = 0;
  double catalog = 0;  // the catalog entry's figure at its own clock, in display_unit; 0: none
  double fraction_of_peak() const { return peak_at_clock > 0 ? measured / peak_at_clock : 0; }
};

// ---- The link: bandwidth and latency from measured all-reduces ------------------------------

// One all-reduce timed on `ranks` GPUs of one host (cuda_kernels/measure_allreduce.py).
struct AllReduceMeasurement {
  int ranks = 0;
  double bytes = 0;  // each rank's buffer
  // "graph": per call inside a CUDA graph (the GPU's time); "eager": one launch; "stream": after
  // a GEMM writing its buffer, in a CUDA graph, less the GEMM (kept for the record; not fitted)
  std::string mode;
  double measured_us = 0;
};

// Reads measure_allreduce.py's CSV (columns ranks, bytes, mode, measured_us; others ignored);
// a missing column or a malformed cell is an error naming the file, line and column, and so is
// a file with no row timed in a CUDA graph (mode graph), the rows the link fit uses.
std::vector<AllReduceMeasurement> allreduce_measurements_from_csv(std::string_view csv_text, const std::string& source);
std::vector<AllReduceMeasurement> load_allreduce_measurements(const std::string& path);

struct LinkFit {
  double link_bandwidth_gb_s = 0;
  double link_latency_us = 0;
  int rows = 0;                 // measurements fitted (mode "graph")
  double mape_pct = 0;          // mean |predicted - measured| / measured with the fitted figures
  double mape_pct_before = 0;   // the same with the spec's own link figures,
  double bandwidth_before_gb_s = 0, latency_before_us = 0;  // which were these
};

// The link figures under which the collective model (ops/collective.hpp) best reproduces the
// all-reduces measured in CUDA graphs: the bandwidth and per-step latency minimising the mean
// relative error, found by a search over both in log space. Eager rows are left out (their
// time includes the host's launch, which a CUDA-graph serving engine does not pay), and so are
// stream rows (a difference of two timings, and below the graph rows: see docs/experiments/tensor-parallelism.md).
// Throws pipeweave::Error when no row was measured in a CUDA graph.
LinkFit fit_link(std::span<const AllReduceMeasurement> measurements, const GpuSpec& gpu);

// The sustained-load figures measured: the same GEMMs timed one at a time after an idle flush
// (as the training data is) and run back to back until the board sits at its power limit
// (pipeweave-collect --reps 2000 --warmup 200 --l2 warm; docs/experiments/sustained-load.md).
// Over the shapes in both (cuBLAS's first choice of each), the slowdown is the summed back-to-back
// time over the summed isolated time, and the utilisation it applies from is the GEMMs' tensor
// work at `gpu`'s rate over their isolated time. Sets gpu.sustained_clock_mhz (max_clock_mhz over
// the slowdown) and gpu.sustained_utilization.
struct SustainedProbe {
  std::size_t shapes = 0;
  double slowdown = 1;
  double tensor_utilization = 0;
};
struct Calibration {
  MeasuredDevice device;
  std::optional<GpuSpec> catalog;  // the data-sheet entry the device name finds, if any (find_gpu_datasheet)
  GpuSpec spec;                    // the calibrated spec, validated
  std::vector<CalibratedFigure> figures;
  int logs = 0;
  std::optional<LinkFit> link;  // when all-reduce measurements were given
  std::optional<SustainedProbe> sustained;  // when measure_sustained_load set the spec's sustained figures
};

// Pools the runs of one or more logs taken on the same GPU (several invocations give the
// run-to-run spread) and derives the spec:
// - throughputs per SM per clock (tensor per dtype, FP32, XU, shared memory) = median rate /
//   (SM count x the clock measured during that benchmark): what one SM sustains per cycle;
// - sm_clock_mhz = the clock sustained under the bf16 tensor load, the clock GEMMs see;
//   max_clock_mhz = the device's highest clock; the sustained-load figures estimated from the
//   first's loss against the second (estimate_sustained_load; measure_sustained_load replaces them);
// - DRAM bandwidth = the read figure; L2 bandwidth = the L2 read figure;
// - SM count, compute capability, L2, memory, shared memory, registers, thread and CTA limits
//   from the device query; name, aliases, architecture and link figures from the catalog entry
//   (a GPU not in the catalog is named as CUDA names it and gets PCIe 4 x16 link figures, and
//   its `source` says so). A figure the logs lack keeps the catalog's value and `source` says so.
// - Logs confined to part of the SMs (device.sm_limit, --sms) give a GPU of that many SMs and the
//   device's memory system: sm_count is the limit, the name sm_limited_gpu_name(...) and the
//   aliases none (the CUDA names are the whole GPU's); peaks at the clock and catalog figures count
//   those SMs. (`source` says so.)
// Throws pipeweave::Error when there is no log, the logs are of different GPUs (or SM limits), a benchmark is
// unknown, or a GPU not in the catalog lacks a figure the spec needs.
// With `allreduce` measurements (taken on several of this GPU), the link figures are fitted to
// them (fit_link) instead of taken from the catalog, and `source` says so; `allreduce_source`
// (where they came from: a file name), when given, begins the fit's errors.
Calibration calibrate(std::span<const MicrobenchLog> logs, std::span<const AllReduceMeasurement> allreduce = {},
                      std::string_view allreduce_source = {});

struct MeasuredKernel;  // pipeweave/dataset.hpp
SustainedProbe measure_sustained_load(GpuSpec& gpu, std::span<const MeasuredKernel> isolated,
                                      std::span<const MeasuredKernel> sustained);

// The spec file `pipeweave calibrate --out` writes: the GpuSpec (format "pipeweave-gpu") plus a
// free-form `calibration` record of every figure, its spread and clock, and the device.
std::string to_json(const Calibration& calibration);

}  // namespace pipeweave
