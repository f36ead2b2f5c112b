// pipeweave-collect: measures real kernels on the GPU in hand, for training data.
//
//   pipeweave-collect --op gemm|rmsnorm|silu_mul --shapes FILE --out FILE
//                     [--algos N] [--reps N] [--warmup N] [--l2 cold|warm|served] [--rest R] [--reverse]
//                     [--interleave] [--sms N]
//
// FILE (--shapes) is a CSV with a header row: `dtype,m,n,k` (gemm), `dtype,tokens,hidden,
// fused_residual` (rmsnorm), `dtype,tokens,dim` (silu_mul); further columns after those (a
// shape's family, say) are allowed and not read. The output is raw: one JSON object
// per line (a "device" line first, then one per measured kernel configuration) with every
// repetition's duration and the names of the kernels it launched. `pipeweave collect` runs this
// program and turns the raw lines into the documented measurement CSV (see docs/formats.md);
// that processing is plain C++, tested without a GPU.
//
// What is measured:
// - GEMM through cuBLASLt, the layout of a linear layer (row-major activations m x k times the
//   transpose of row-major weights n x k, fp32 accumulation; the only layout fp8 has): every
//   candidate the heuristic returns (up to --algos), each with its algo attributes decoded.
//   Candidate 0 is what a plain cuBLAS call would run.
// - RMSNorm (plain, and with the fused residual add) and SiLU-and-mul, written the way vLLM
//   writes them: one CTA per token, 16-byte vector loads, a block reduction for the norm,
//   min(row, 1024) threads (RMSNorm: min(row, 256) from 256 tokens on).
// - Time: CUPTI's activity records of every kernel and memset the call launched, matched to the
//   call through an external correlation id; one repetition's time runs from the first kernel's
//   start to the last one's end. Before each repetition the L2 is flushed by reading a buffer
//   twice its size (--l2 cold, the default), so weights come from DRAM as in a real model's
//   forward pass and no dirty line is left to be written back during the timed call. A GEMM's
//   candidates are timed one after another (--interleave: round-robin, rep r of each before
//   rep r+1 of any; see time_calls for what each does to the clock).
// - As a serving engine runs a GEMM (--l2 served): no flush; the calls run back to back, each on
//   another copy of the weights (as each layer of a forward pass has its own), enough copies
//   that they span twice the L2, so the weights come from DRAM and the activations stay in L2,
//   and the clock is what continuous work holds, not what an idle GPU starts at.
// - Rest (--rest R, default 0): after each configuration the GPU idles R times as long as that
//   configuration kept it busy, so that the clock a long GEMM pulled down does not carry over to
//   the next one. Without it, a shape measured after heavy ones read 5-7% slower on the H100
//   (docs/experiments/reproducibility.md).
// - Part of the GPU (--sms N): every kernel (the flush, the fills and the timed calls) runs in a
//   green context of N SMs, rounded up to the hardware's granularity (tool_support.cuh), on its
//   stream; cuBLASLt is told the count (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET), so that its
//   heuristic plans tiles and split-K as on a GPU with that many SMs. The device line then gives
//   that count as sm_count and sm_limit, and the device's own as device_sm_count.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include "tool_support.cuh"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kToolName = "pipeweave-collect";
[[noreturn]] void fail(const std::string& message) { pipeweave_tool::fail(kToolName, message); }
using pipeweave_tool::driver_version;
using pipeweave_tool::json_string;
using pipeweave_tool::mix;

#include "cublaslt_enums.inc"

// Where every kernel of the collection is launched: null (the legacy default stream, as always)
// on the whole GPU; with --sms N, the green context's stream (tool_support.cuh).
cudaStream_t g_stream = nullptr;

// ---- CUPTI: kernel and memset records, matched to repetitions -------------------------------

struct Record {
  uint64_t start, end;
  uint32_t correlation;
  std::string name;
};

std::mutex g_mutex;
std::vector<Record> g_records;
std::map<uint32_t, uint64_t> g_external;  // API correlation id -> our repetition id

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8u << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      g_records.push_back({kernel->start, kernel->end, kernel->correlationId, kernel->name ? kernel->name : "?"});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* memset = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      g_records.push_back({memset->start, memset->end, memset->correlationId, "memset"});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* external = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      g_external[external->correlationId] = external->externalId;
    }
  }
  std::free(buffer);
}

void start_cupti() {
  PW_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  PW_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  PW_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  PW_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
  // External correlation records are made for API activity records: both API kinds are on
  // (their records are dropped), since cuBLASLt launches through the driver API.
  PW_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  PW_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
}

struct Timing {
  std::vector<double> durations_us;       // one per repetition
  std::vector<std::string> kernel_names;  // of the first repetition, in launch order
};

// Evicts the L2 by reading a buffer twice its size: every line it held is replaced by a clean
// one. A write flush (a memset, used until 2026-11-22) leaves the L2 full of dirty lines whose
// write-back runs into the timed call: it made memory-bound decode GEMMs 12-23% slower than
// the same GEMMs inside a model's forward pass (docs/experiments/e2e-llama8b-stack.md).
__device__ unsigned int g_flush_sink;
__global__ void read_flush_kernel(const uint4* data, size_t count) {
  uint32_t folded = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(data + i);
    folded ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (folded == 0x9e3779b9u) atomicAdd(&g_flush_sink, 1u);  // keeps the loads; (almost) never taken
}

// Times several calls (a GEMM's candidate algorithms) together: all run --warmup times
// untimed, then --reps times each, every timed call after a flush of the L2 (outside the timed
// window) and tagged with its own external correlation id; one call's repetitions after
// another's, or round-robin (`interleave`: rep r of every call before rep r+1 of any). The
// collection's default times each candidate by itself (time_call), as the committed data were. Measured on the H100
// (docs/experiments/reproducibility.md): in order, the last of eight long GEMMs runs at a
// lower clock than the first (+-3% over 300 us); interleaved, that bias is gone, but the GPU
// idles less, its clock is lower throughout, and short kernels read 4% slower than in order
// and than inside a decode step. The collection keeps the order.
std::vector<Timing> time_calls(const std::vector<std::function<void()>>& calls, int warmup, int reps, void* flush,
                               size_t flush_bytes, bool interleave) {
  static uint64_t next_id = 1;
  const size_t count = calls.size();
  if (count == 0) return {};
  for (const auto& call : calls)
    for (int i = 0; i < warmup; ++i) call();
  PW_CHECK(cudaDeviceSynchronize());
  const uint64_t first_id = next_id;
  // id - first_id = rep * count + call (interleaved) or call * reps + rep (one call after another)
  for (size_t step = 0; step < count * static_cast<size_t>(reps); ++step) {
    const size_t which = interleave ? step % count : step / static_cast<size_t>(reps);
    if (flush) {  // on the timed calls' stream (with --sms, the same SMs): it must end before the call starts
      read_flush_kernel<<<1024, 512, 0, g_stream>>>(static_cast<const uint4*>(flush), flush_bytes / sizeof(uint4));
      PW_CHECK(cudaGetLastError());
    }
    PW_CHECK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, next_id++));
    calls[which]();
    uint64_t popped = 0;
    PW_CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped));
  }
  PW_CHECK(cudaDeviceSynchronize());
  PW_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));

  std::lock_guard<std::mutex> lock(g_mutex);
  std::map<uint64_t, std::vector<const Record*>> by_step;
  for (const Record& record : g_records) {
    const auto found = g_external.find(record.correlation);
    if (found != g_external.end() && found->second >= first_id && found->second < next_id)
      by_step[found->second - first_id].push_back(&record);
  }
  const size_t records_seen = g_records.size(), correlations_seen = g_external.size();
  std::vector<Timing> timings(count);
  for (auto& [step, records] : by_step) {
    Timing& timing = timings[interleave ? step % count : step / static_cast<size_t>(reps)];
    std::sort(records.begin(), records.end(), [](const Record* a, const Record* b) { return a->start < b->start; });
    uint64_t start = records.front()->start, end = 0;
    for (const Record* r : records) end = std::max(end, r->end);
    timing.durations_us.push_back(static_cast<double>(end - start) * 1e-3);
    if (timing.kernel_names.empty())
      for (const Record* r : records) timing.kernel_names.push_back(r->name);
  }
  g_records.clear();
  g_external.clear();
  for (const Timing& timing : timings)
    if (timing.durations_us.size() != static_cast<size_t>(reps))
      fail("CUPTI returned kernel records for " + std::to_string(timing.durations_us.size()) + " of " +
           std::to_string(reps) + " repetitions of a call (" + std::to_string(records_seen) + " kernel/memset records, " +
           std::to_string(correlations_seen) + " external correlations)");
  return timings;
}

template <typename Call>
Timing time_call(Call&& call, int warmup, int reps, void* flush, size_t flush_bytes) {
  return time_calls({std::function<void()>(call)}, warmup, reps, flush, flush_bytes, false).front();
}

// Runs `measure`, then leaves the GPU idle for `rest` times as long as it took.
template <typename Measure>
auto measured_then_rest(double rest, Measure&& measure) {
  const auto start = std::chrono::steady_clock::now();
  auto result = measure();
  if (rest > 0) std::this_thread::sleep_for((std::chrono::steady_clock::now() - start) * rest);
  return result;
}

// ---- Output -----------------------------------------------------------------------------------

std::string timing_json(const Timing& timing) {
  std::ostringstream out;
  out << "\"kernels\": [";
  for (size_t i = 0; i < timing.kernel_names.size(); ++i) out << (i ? ", " : "") << json_string(timing.kernel_names[i]);
  out << "], \"durations_us\": [";
  char number[32];
  for (size_t i = 0; i < timing.durations_us.size(); ++i) {
    std::snprintf(number, sizeof number, "%.3f", timing.durations_us[i]);
    out << (i ? ", " : "") << number;
  }
  out << "]";
  return out.str();
}

// ---- Data ---------------------------------------------------------------------------------------

// Random finite values of magnitude below 2 in every dtype used here: bf16/fp16 pairs built
// from floats in [-1, 1), e4m3 bytes with the exponent's top bit clear.
__global__ void fill_kernel(uint32_t* words, size_t count, int dtype_code, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t r = mix(static_cast<uint32_t>(i) * 2654435761u + seed);
    if (dtype_code == 2) {
      words[i] = r & 0xbfbfbfbfu;
    } else {
      const float lo = static_cast<float>(r & 0xffff) / 32768.0f - 1.0f, hi = static_cast<float>(r >> 16) / 32768.0f - 1.0f;
      if (dtype_code == 0) {
        const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
        std::memcpy(&words[i], &pair, 4);
      } else {
        const __half2 pair = __floats2half2_rn(lo, hi);
        std::memcpy(&words[i], &pair, 4);
      }
    }
  }
}

enum class DType { bf16, fp16, fp8_e4m3 };

DType parse_dtype(const std::string& text, const std::string& where) {
  if (text == "bf16") return DType::bf16;
  if (text == "fp16") return DType::fp16;
  if (text == "fp8" || text == "fp8_e4m3") return DType::fp8_e4m3;
  fail(where + ": dtype must be bf16, fp16 or fp8_e4m3, got \"" + text + "\"");
}
const char* dtype_name(DType dtype) { return dtype == DType::bf16 ? "bf16" : dtype == DType::fp16 ? "fp16" : "fp8_e4m3"; }
size_t dtype_bytes(DType dtype) { return dtype == DType::fp8_e4m3 ? 1 : 2; }

void fill(void* data, size_t bytes, DType dtype, uint32_t seed) {
  fill_kernel<<<1024, 256, 0, g_stream>>>(static_cast<uint32_t*>(data), bytes / 4, static_cast<int>(dtype), seed);
  PW_CHECK(cudaGetLastError());
}

// ---- Shape lists --------------------------------------------------------------------------------

std::vector<std::vector<std::string>> read_shapes(const std::string& path, const std::vector<std::string>& header) {
  std::ifstream in(path);
  if (!in) fail("cannot open shape list " + path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  int number = 0;
  size_t columns = header.size();
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream stream(text);
    for (std::string cell; std::getline(stream, cell, ',');) {
      while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
      cells.push_back(cell);
    }
    return cells;
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = split(line);
    if (rows.empty() && number == 1) {
      if (cells.size() < header.size() || !std::equal(header.begin(), header.end(), cells.begin())) {
        std::string expected;
        for (const std::string& h : header) expected += (expected.empty() ? "" : ",") + h;
        fail(path + ": the header row must begin with " + expected);
      }
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns)
      fail(path + ":" + std::to_string(number) + ": expected " + std::to_string(columns) + " columns");
    cells.resize(header.size());
    rows.push_back(cells);
  }
  return rows;
}

long long positive(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value <= 0) fail(where + " must be a positive integer, got \"" + text + "\"");
  return value;
}

struct Options {
  std::string op, shapes, out;
  int algos = 8, reps = 10, warmup = 3;
  bool cold = true;
  bool served = false;    // --l2 served: back to back over copies of the weights, no flush
  double rest = 0;        // idle time after each configuration, as a multiple of its measurement's
  bool reverse = false;   // measure a shape's candidates last to first (checks for order effects)
  bool interleave = false;  // a GEMM's candidates round-robin instead of one after another
  int sms = 0;              // --sms N: confine every kernel to (at least) N SMs; 0: the whole GPU
};

struct Gpu {
  cudaDeviceProp prop{};
  pipeweave_tool::SmLimit sm_limit;  // --sms: the green context; inactive on the whole GPU
  void* flush = nullptr;
  size_t flush_bytes = 0;
};

const char* l2_name(const Options& options) { return options.cold ? "cold" : options.served ? "served" : "warm"; }

void progress(size_t done, size_t total, const std::string& what) {
  if (done == total || done % 25 == 0 || total < 50)
    std::fprintf(stderr, "[%zu/%zu] %s\n", done, total, what.c_str());
}

// ---- GEMM ---------------------------------------------------------------------------------------

template <typename T>
T algo_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t which) {
  T value{};
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, which, &value, sizeof(value), &written);
  return value;
}

constexpr size_t kBufferBytes = size_t{1} << 30;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what PyTorch gives cuBLASLt on Hopper

struct GemmShape {
  DType dtype;
  long long m, n, k;
};

// An algorithm's config attributes, its tile, stages and cluster ids decoded to sizes through
// cublaslt_enums.inc (0 where an id is not listed there).
struct AlgoConfig {
  int algo_id = 0;
  uint32_t tile_id = 0, stages_id = 0;
  uint16_t cluster_id = 0;
  int tile_m = 0, tile_n = 0, tile_k = 0, stages = 0, cluster_m = 0, cluster_n = 0;
};

AlgoConfig decode(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig config;
  config.algo_id = algo_attribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  config.tile_id = algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  config.stages_id = algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  config.cluster_id = algo_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  for (const TileEntry& t : kTiles)
    if (static_cast<uint32_t>(t.id) == config.tile_id) config.tile_m = t.m, config.tile_n = t.n;
  for (const StagesEntry& s : kStages)
    if (static_cast<uint32_t>(s.id) == config.stages_id) config.tile_k = s.k, config.stages = s.stages;
  for (const ClusterEntry& c : kClusters)
    if (c.id == config.cluster_id) config.cluster_m = c.m, config.cluster_n = c.n;
  return config;
}

void write_gemm_line(std::FILE* out, const Options& options, const GemmShape& shape, int candidate, int candidates,
                     const cublasLtMatmulHeuristicResult_t& result, size_t copies, const Timing& timing) {
  const cublasLtMatmulAlgo_t& algo = result.algo;
  const AlgoConfig config = decode(algo);
  std::fprintf(out,
               "{\"op\": \"gemm\", \"dtype\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"candidate\": %d, "
               "\"candidates\": %d, \"algo_id\": %d, \"tile_id\": %u, \"tile_m\": %d, \"tile_n\": %d, \"stages_id\": %u, "
               "\"tile_k\": %d, \"stages\": %d, \"split_k\": %u, \"reduction_scheme\": %u, \"swizzle\": %u, "
               "\"custom_option\": %u, \"inner_shape_id\": %u, \"cluster_id\": %u, \"cluster_m\": %d, \"cluster_n\": %d, "
               "\"workspace_bytes\": %zu, \"waves\": %.4f, \"l2\": \"%s\", \"weight_copies\": %zu, %s}\n",
               dtype_name(shape.dtype), shape.m, shape.n, shape.k, candidate, candidates, config.algo_id, config.tile_id,
               config.tile_m, config.tile_n, config.stages_id, config.tile_k, config.stages,
               algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
               algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
               algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
               algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
               static_cast<unsigned>(algo_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)),
               static_cast<unsigned>(config.cluster_id), config.cluster_m, config.cluster_n, result.workspaceSize,
               static_cast<double>(result.wavesCount), l2_name(options), copies, timing_json(timing).c_str());
}

// How many copies of the weights the calls cycle through: one, but with --l2 served copies
// spanning twice the L2 (at least two, as the buffer allows).
size_t weight_copies(const Options& options, const Gpu& gpu, size_t weight_bytes) {
  if (!options.served) return 1;
  const size_t span = 2 * static_cast<size_t>(gpu.prop.l2CacheSize);
  // at least one: an operand past the buffer was skipped before
  return std::min(std::max<size_t>(2, (span + weight_bytes - 1) / weight_bytes), kBufferBytes / weight_bytes);
}

// The candidates' timings, in the order of `calls`.
std::vector<Timing> time_candidates(const Options& options, const Gpu& gpu, const std::vector<std::function<void()>>& calls) {
  if (options.interleave)
    return measured_then_rest(options.rest, [&] {
      return time_calls(calls, options.warmup, options.reps, gpu.flush, gpu.flush_bytes, true);
    });
  // each candidate's warm-up and repetitions by themselves, then the next (host work between)
  std::vector<Timing> timings;
  for (const auto& call : calls)
    timings.push_back(measured_then_rest(
        options.rest, [&] { return time_call(call, options.warmup, options.reps, gpu.flush, gpu.flush_bytes); }));
  return timings;
}

void collect_gemm(const Options& options, const Gpu& gpu, std::FILE* out) {
  const auto rows = read_shapes(options.shapes, {"dtype", "m", "n", "k"});
  cublasLtHandle_t handle;
  PW_CHECK(cublasLtCreate(&handle));
  void *weights, *activations, *output, *workspace;
  PW_CHECK(cudaMalloc(&weights, kBufferBytes));
  PW_CHECK(cudaMalloc(&activations, kBufferBytes));
  PW_CHECK(cudaMalloc(&output, kBufferBytes));
  PW_CHECK(cudaMalloc(&workspace, kWorkspaceBytes));

  for (size_t row = 0; row < rows.size(); ++row) {
    const std::string where = options.shapes + " row " + std::to_string(row + 1);
    const DType dtype = parse_dtype(rows[row][0], where);
    const long long m = positive(rows[row][1], where + " m"), n = positive(rows[row][2], where + " n"),
                    k = positive(rows[row][3], where + " k");
    const size_t in_bytes = dtype_bytes(dtype);
    const DType out_dtype = dtype == DType::fp8_e4m3 ? DType::bf16 : dtype;
    if (static_cast<double>(n) * k * in_bytes > kBufferBytes || static_cast<double>(m) * k * in_bytes > kBufferBytes ||
        static_cast<double>(m) * n * 2 > kBufferBytes) {
      std::fprintf(stderr, "pipeweave-collect: skipping %s: an operand exceeds 1 GiB\n", where.c_str());
      continue;
    }
    const size_t weight_bytes = static_cast<size_t>(n * k) * in_bytes;
    const size_t copies = weight_copies(options, gpu, weight_bytes);
    fill(weights, copies * weight_bytes, dtype, 1 + static_cast<uint32_t>(row));
    fill(activations, m * k * in_bytes, dtype, 7 + static_cast<uint32_t>(row));

    const cudaDataType_t in_type = dtype == DType::bf16 ? CUDA_R_16BF : dtype == DType::fp16 ? CUDA_R_16F : CUDA_R_8F_E4M3;
    const cudaDataType_t out_type = out_dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasLtMatmulDesc_t op;
    PW_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transpose = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    PW_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
    PW_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain));
    if (gpu.sm_limit.active()) {  // plan for the SMs the green context has, as cuBLAS would on such a GPU
      const int32_t sm_target = gpu.sm_limit.obtained;
      PW_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target));
    }
    // Column-major view: D (n x m) = W^T-stored (k x n, transposed) x X^T-stored (k x m).
    cublasLtMatrixLayout_t a_layout, b_layout, d_layout;
    PW_CHECK(cublasLtMatrixLayoutCreate(&a_layout, in_type, k, n, k));
    PW_CHECK(cublasLtMatrixLayoutCreate(&b_layout, in_type, k, m, k));
    PW_CHECK(cublasLtMatrixLayoutCreate(&d_layout, out_type, n, m, n));
    cublasLtMatmulPreference_t preference;
    PW_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const size_t workspace_limit = kWorkspaceBytes;
    PW_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_limit,
                                                  sizeof workspace_limit));
    std::vector<cublasLtMatmulHeuristicResult_t> results(options.algos);
    int returned = 0;
    const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(handle, op, a_layout, b_layout, d_layout, d_layout,
                                                                    preference, options.algos, results.data(), &returned);
    if (heuristic != CUBLAS_STATUS_SUCCESS || returned == 0) {
      std::fprintf(stderr, "pipeweave-collect: no cuBLASLt algorithm for %s %s m=%lld n=%lld k=%lld (status %d)\n",
                   dtype_name(dtype), where.c_str(), m, n, k, static_cast<int>(heuristic));
    }
    const float alpha = 1.0f, beta = 0.0f;
    std::vector<int> measured;  // candidate indices, in the order their calls are first made
    std::vector<std::function<void()>> calls;
    for (int position = 0; position < returned; ++position) {
      const int candidate = options.reverse ? returned - 1 - position : position;
      if (results[candidate].state != CUBLAS_STATUS_SUCCESS) continue;
      const cublasLtMatmulHeuristicResult_t* result = &results[candidate];
      measured.push_back(candidate);
      // Each call the next copy of the weights (one copy but with --l2 served)
      calls.push_back([&, result, next = std::make_shared<size_t>(0)] {
        const char* copy = static_cast<const char*>(weights) + (*next)++ % copies * weight_bytes;
        PW_CHECK(cublasLtMatmul(handle, op, &alpha, copy, a_layout, activations, b_layout, &beta, output, d_layout,
                                output, d_layout, &result->algo, workspace, result->workspaceSize, g_stream));
      });
    }
    const std::vector<Timing> timings = time_candidates(options, gpu, calls);
    for (size_t i = 0; i < measured.size(); ++i)
      write_gemm_line(out, options, GemmShape{dtype, m, n, k}, measured[i], returned, results[measured[i]], copies,
                      timings[i]);
    std::fflush(out);
    cublasLtMatmulPreferenceDestroy(preference);
    cublasLtMatrixLayoutDestroy(a_layout), cublasLtMatrixLayoutDestroy(b_layout), cublasLtMatrixLayoutDestroy(d_layout);
    cublasLtMatmulDescDestroy(op);
    progress(row + 1, rows.size(),
             std::string(dtype_name(dtype)) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                 ": " + std::to_string(returned) + " algorithms");
  }
  cudaFree(weights), cudaFree(activations), cudaFree(output), cudaFree(workspace);
  cublasLtDestroy(handle);
}

// ---- RMSNorm and SiLU-and-mul, as vLLM writes them ----------------------------------------------

constexpr int kVector = 8;  // 16 bytes of bf16/fp16

template <typename T>
struct alignas(16) Vec {
  T v[kVector];
};

__device__ __forceinline__ float block_sum(float value, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  value = lane < warps ? scratch[lane] : 0.0f;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;  // valid in warp 0
}

// out = x * rsqrt(mean(x^2) + eps) * weight, one CTA per token; hidden % 8 == 0.
template <typename T>
__global__ void rms_norm_kernel(T* __restrict__ out, const T* __restrict__ input, const T* __restrict__ weight, float epsilon,
                                int hidden) {
  __shared__ float scratch[32];
  __shared__ float inverse_rms;
  const auto* x = reinterpret_cast<const Vec<T>*>(input + static_cast<size_t>(blockIdx.x) * hidden);
  const auto* w = reinterpret_cast<const Vec<T>*>(weight);
  auto* y = reinterpret_cast<Vec<T>*>(out + static_cast<size_t>(blockIdx.x) * hidden);
  const int vectors = hidden / kVector;
  float sum = 0;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    const Vec<T> v = x[i];
#pragma unroll
    for (int j = 0; j < kVector; ++j) sum += static_cast<float>(v.v[j]) * static_cast<float>(v.v[j]);
  }
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) inverse_rms = rsqrtf(sum / hidden + epsilon);
  __syncthreads();
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    const Vec<T> v = x[i], g = w[i];
    Vec<T> r;
#pragma unroll
    for (int j = 0; j < kVector; ++j) r.v[j] = static_cast<T>(static_cast<float>(v.v[j]) * inverse_rms * static_cast<float>(g.v[j]));
    y[i] = r;
  }
}

// residual += input; input = rms_norm(residual) * weight (in place, as vLLM's fused_add_rms_norm).
template <typename T>
__global__ void fused_add_rms_norm_kernel(T* __restrict__ input, T* __restrict__ residual, const T* __restrict__ weight,
                                          float epsilon, int hidden) {
  __shared__ float scratch[32];
  __shared__ float inverse_rms;
  auto* x = reinterpret_cast<Vec<T>*>(input + static_cast<size_t>(blockIdx.x) * hidden);
  auto* res = reinterpret_cast<Vec<T>*>(residual + static_cast<size_t>(blockIdx.x) * hidden);
  const auto* w = reinterpret_cast<const Vec<T>*>(weight);
  const int vectors = hidden / kVector;
  float sum = 0;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    Vec<T> a = x[i], b = res[i];
#pragma unroll
    for (int j = 0; j < kVector; ++j) {
      const T total = static_cast<T>(static_cast<float>(a.v[j]) + static_cast<float>(b.v[j]));
      b.v[j] = total;
      sum += static_cast<float>(total) * static_cast<float>(total);
    }
    res[i] = b;
  }
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) inverse_rms = rsqrtf(sum / hidden + epsilon);
  __syncthreads();
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    const Vec<T> b = res[i], g = w[i];
    Vec<T> r;
#pragma unroll
    for (int j = 0; j < kVector; ++j) r.v[j] = static_cast<T>(static_cast<float>(b.v[j]) * inverse_rms * static_cast<float>(g.v[j]));
    x[i] = r;
  }
}

// out[t, i] = silu(in[t, i]) * in[t, dim + i], one CTA per token; dim % 8 == 0.
template <typename T>
__global__ void silu_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, int dim) {
  const auto* gate = reinterpret_cast<const Vec<T>*>(input + static_cast<size_t>(blockIdx.x) * 2 * dim);
  const auto* up = reinterpret_cast<const Vec<T>*>(input + static_cast<size_t>(blockIdx.x) * 2 * dim + dim);
  auto* y = reinterpret_cast<Vec<T>*>(out + static_cast<size_t>(blockIdx.x) * dim);
  for (int i = threadIdx.x; i < dim / kVector; i += blockDim.x) {
    const Vec<T> a = gate[i], b = up[i];
    Vec<T> r;
#pragma unroll
    for (int j = 0; j < kVector; ++j) {
      const float g = static_cast<float>(a.v[j]);
      r.v[j] = static_cast<T>(g / (1.0f + __expf(-g)) * static_cast<float>(b.v[j]));
    }
    y[i] = r;
  }
}

void collect_rows(const Options& options, const Gpu& gpu, std::FILE* out) {
  const bool norm = options.op == "rmsnorm";
  const auto rows = read_shapes(options.shapes, norm ? std::vector<std::string>{"dtype", "tokens", "hidden", "fused_residual"}
                                                     : std::vector<std::string>{"dtype", "tokens", "dim"});
  void *a, *b, *c;
  PW_CHECK(cudaMalloc(&a, kBufferBytes));
  PW_CHECK(cudaMalloc(&b, kBufferBytes));
  PW_CHECK(cudaMalloc(&c, kBufferBytes));
  bool filled_for[2] = {false, false};
  for (size_t row = 0; row < rows.size(); ++row) {
    const std::string where = options.shapes + " row " + std::to_string(row + 1);
    const DType dtype = parse_dtype(rows[row][0], where);
    if (dtype == DType::fp8_e4m3) fail(where + ": " + options.op + " is measured in bf16 or fp16");
    const long long tokens = positive(rows[row][1], where + " tokens"), width = positive(rows[row][2], where + (norm ? " hidden" : " dim"));
    const bool fused = norm && rows[row][3] == "1";
    if (width % kVector) fail(where + ": the row width must be a multiple of 8 (16-byte vectors)");
    if (static_cast<double>(tokens) * width * 2 * (norm ? 1 : 2) > kBufferBytes) {
      std::fprintf(stderr, "pipeweave-collect: skipping %s: more than 1 GiB\n", where.c_str());
      continue;
    }
    if (!filled_for[static_cast<int>(dtype)]) {  // once per dtype: the kernels only read a and c (and rewrite b)
      fill(a, kBufferBytes, dtype, 3), fill(b, kBufferBytes, dtype, 5), fill(c, kBufferBytes, dtype, 9);
      filled_for[static_cast<int>(dtype)] = true, filled_for[1 - static_cast<int>(dtype)] = false;
    }
    // vLLM's block sizes (csrc/layernorm_kernels.cu, activation_kernels.cu).
    const int threads = static_cast<int>(norm ? std::min<long long>(width, tokens < 256 ? 1024 : 256) : std::min<long long>(width, 1024));
    const int grid = static_cast<int>(tokens), w = static_cast<int>(width);
    auto call = [&] {
      if (norm && fused) {
        if (dtype == DType::bf16)
          fused_add_rms_norm_kernel<<<grid, threads, 0, g_stream>>>(
              static_cast<__nv_bfloat16*>(a), static_cast<__nv_bfloat16*>(b), static_cast<const __nv_bfloat16*>(c), 1e-6f, w);
        else
          fused_add_rms_norm_kernel<<<grid, threads, 0, g_stream>>>(static_cast<__half*>(a), static_cast<__half*>(b),
                                                                    static_cast<const __half*>(c), 1e-6f, w);
      } else if (norm) {
        if (dtype == DType::bf16)
          rms_norm_kernel<<<grid, threads, 0, g_stream>>>(static_cast<__nv_bfloat16*>(b), static_cast<const __nv_bfloat16*>(a),
                                                          static_cast<const __nv_bfloat16*>(c), 1e-6f, w);
        else
          rms_norm_kernel<<<grid, threads, 0, g_stream>>>(static_cast<__half*>(b), static_cast<const __half*>(a),
                                                          static_cast<const __half*>(c), 1e-6f, w);
      } else {
        if (dtype == DType::bf16)
          silu_and_mul_kernel<<<grid, threads, 0, g_stream>>>(static_cast<__nv_bfloat16*>(b),
                                                              static_cast<const __nv_bfloat16*>(a), w);
        else
          silu_and_mul_kernel<<<grid, threads, 0, g_stream>>>(static_cast<__half*>(b), static_cast<const __half*>(a), w);
      }
      PW_CHECK(cudaGetLastError());
    };
    const Timing timing = measured_then_rest(
        options.rest, [&] { return time_call(call, options.warmup, options.reps, gpu.flush, gpu.flush_bytes); });
    if (norm)
      std::fprintf(out, "{\"op\": \"rmsnorm\", \"dtype\": \"%s\", \"tokens\": %lld, \"hidden\": %lld, \"fused_residual\": %d, "
                        "\"threads\": %d, \"l2\": \"%s\", %s}\n",
                   dtype_name(dtype), tokens, width, fused ? 1 : 0, threads, l2_name(options),
                   timing_json(timing).c_str());
    else
      std::fprintf(out, "{\"op\": \"silu_mul\", \"dtype\": \"%s\", \"tokens\": %lld, \"dim\": %lld, \"threads\": %d, "
                        "\"l2\": \"%s\", %s}\n",
                   dtype_name(dtype), tokens, width, threads, l2_name(options), timing_json(timing).c_str());
    std::fflush(out);
    progress(row + 1, rows.size(), options.op + " " + std::to_string(tokens) + "x" + std::to_string(width));
  }
  cudaFree(a), cudaFree(b), cudaFree(c);
}

constexpr const char* kUsage =
    "usage: pipeweave-collect --op gemm|rmsnorm|silu_mul --shapes FILE --out FILE [--algos N] [--reps N] [--warmup N] "
    "[--l2 cold|warm|served] [--rest R] [--reverse] [--interleave] [--sms N]\n";

// ---- Command line and setup ---------------------------------------------------------------------

double parse_rest(const std::string& value) {
  char* end = nullptr;
  const double rest = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(rest >= 0) || rest > 100)
    fail("--rest must be a number from 0 to 100, got \"" + value + "\"");
  return rest;
}

// Takes `value` for the option `argument`; false when `argument` is no option with a value (or,
// for --l2, the value is none of its three).
bool set_option(Options& options, const std::string& argument, const std::string& value) {
  if (argument == "--op") options.op = value;
  else if (argument == "--shapes") options.shapes = value;
  else if (argument == "--out") options.out = value;
  else if (argument == "--algos") options.algos = static_cast<int>(positive(value, "--algos"));
  else if (argument == "--reps") options.reps = static_cast<int>(positive(value, "--reps"));
  // 0 warm-up calls: one call's kernel name is all a collection of cuBLAS's choices needs
  else if (argument == "--warmup") options.warmup = value == "0" ? 0 : static_cast<int>(positive(value, "--warmup"));
  else if (argument == "--sms") options.sms = pipeweave_tool::parse_sms(kToolName, value);
  else if (argument == "--l2" && (value == "cold" || value == "warm" || value == "served"))
    options.cold = value == "cold", options.served = value == "served";
  else if (argument == "--rest") options.rest = parse_rest(value);
  else return false;
  return true;
}

// The options' combinations that cannot be measured, refused before the GPU is touched.
void check_options(const Options& options) {
  if (options.op != "gemm" && options.op != "rmsnorm" && options.op != "silu_mul")
    fail("--op must be gemm, rmsnorm or silu_mul, got \"" + options.op + "\"");
  if (options.shapes.empty() || options.out.empty()) fail("--shapes and --out are required");
  if (options.served && options.op != "gemm")
    fail("--l2 served is for --op gemm (copies of a GEMM's weights), got --op " + options.op);
  // Round-robin, each candidate would run right after another on the same copy of the weights,
  // from L2: each candidate keeps its own turn through the copies
  if (options.served && options.interleave) fail("--l2 served times each candidate's calls back to back: not with --interleave");
}

// The command line's options, checked; --help prints the usage and ends the program.
Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--help" || argument == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (argument == "--reverse" || argument == "--interleave") {
      (argument == "--reverse" ? options.reverse : options.interleave) = true;
      continue;
    }
    if (i + 1 >= argc) fail("unknown argument or missing value: " + argument);
    const std::string value = argv[++i];
    if (!set_option(options, argument, value)) fail("unknown argument " + argument + " " + value);
  }
  check_options(options);
  return options;
}

// GPU 0 made ready to measure on: CUPTI's records on, the green context of --sms current (its
// stream in g_stream), the buffer that --l2 cold reads to flush the L2.
Gpu open_gpu(const Options& options) {
  pipeweave_tool::visible_gpu_count(kToolName);
  start_cupti();  // before the context exists (the first allocation makes it)
  Gpu gpu;
  PW_CHECK(cudaGetDeviceProperties(&gpu.prop, 0));
  if (options.sms > 0) {  // before any allocation: the green context is current from here on
    gpu.sm_limit = pipeweave_tool::confine_to_sms(kToolName, 0, options.sms);
    g_stream = gpu.sm_limit.stream;
  }
  if (options.cold) {
    gpu.flush_bytes = 2 * static_cast<size_t>(gpu.prop.l2CacheSize);
    PW_CHECK(cudaMalloc(&gpu.flush, gpu.flush_bytes));
    PW_CHECK(cudaMemset(gpu.flush, 0x5a, gpu.flush_bytes));
  }
  // The memset ran on the legacy default stream, which the green context's non-blocking stream
  // does not wait for.
  if (gpu.sm_limit.active()) PW_CHECK(cudaDeviceSynchronize());
  return gpu;
}

// The output's first line (the device and the settings), and the same said on stderr.
void write_device_line(std::FILE* out, const Options& options, const Gpu& gpu) {
  const int sm_count = gpu.sm_limit.active() ? gpu.sm_limit.obtained : gpu.prop.multiProcessorCount;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  std::fprintf(out, "{\"op\": \"device\", \"name\": %s, \"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"driver\": %s, "
                    "\"cuda_runtime\": %d, \"cublaslt\": %zu, \"reps\": %d, \"warmup\": %d, \"l2\": \"%s\", \"rest\": %g%s}\n",
               json_string(gpu.prop.name).c_str(), gpu.prop.major, gpu.prop.minor, sm_count,
               json_string(driver_version()).c_str(), runtime, cublasLtGetVersion(), options.reps, options.warmup,
               l2_name(options), options.rest, pipeweave_tool::sm_limit_json(gpu.sm_limit).c_str());
  std::fprintf(stderr, "pipeweave-collect: %s on %s, %d repetitions after %d warm-up, L2 %s, rest %g x\n", options.op.c_str(),
               gpu.prop.name, options.reps, options.warmup,
               options.cold ? "flushed (read) before each" : options.served ? "back to back over copies of the weights" : "warm",
               options.rest);
  if (gpu.sm_limit.active())
    std::fprintf(stderr, "pipeweave-collect: confined to %d of %d SMs (--sms %d; a probe kernel ran on %d)\n",
                 gpu.sm_limit.obtained, gpu.sm_limit.device_sm_count, options.sms, gpu.sm_limit.observed);
}

// The confinement, checked again now that cuBLASLt's modules are loaded.
void recheck_confinement(const Gpu& gpu) {
  const int seen = pipeweave_tool::observed_sms(kToolName, g_stream, gpu.sm_limit.device_sm_count);
  if (seen > gpu.sm_limit.obtained)
    std::fprintf(stderr, "pipeweave-collect: warning: after the collection a probe kernel ran on %d SMs, more than the %d of --sms\n",
                 seen, gpu.sm_limit.obtained);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const Gpu gpu = open_gpu(options);
  std::FILE* out = std::fopen(options.out.c_str(), "w");
  if (!out) fail("cannot write " + options.out);
  write_device_line(out, options, gpu);
  if (options.op == "gemm") collect_gemm(options, gpu, out);
  else collect_rows(options, gpu, out);
  if (std::fclose(out) != 0) fail("cannot write " + options.out);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (gpu.sm_limit.active()) recheck_confinement(gpu);
  return 0;
}
