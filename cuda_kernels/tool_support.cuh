#pragma once
// What the CUDA tools (microbench.cu, collect.cu, device_info.cu) share: one-line errors in the
// form the CLI relays ("<tool>: error: ..."), the status checks of CUDA, cuBLAS and CUPTI calls
// (PW_CHECK), JSON strings, the driver's version, a hash for filling buffers with random data, and
// the confinement of their kernels to part of the GPU's SMs (--sms N, through a green context).
// Each tool defines kToolName, which PW_CHECK names in its errors; a tool that calls cuBLASLt or
// CUPTI includes their headers before this one, which then checks their statuses too.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace pipeweave_tool {

[[noreturn]] inline void fail(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", tool, message.c_str());
  std::exit(2);
}

// ---- Status checks ----------------------------------------------------------------------------
//
// A failed call ends the tool with exit status 2 and one line, "<tool>: error: <what>: <cause>";
// PW_CHECK(call) gives the call's own text as <what>.
inline void check(const char* tool, cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) fail(tool, what + ": " + cudaGetErrorString(status));
}
#if defined(CUBLAS_API_H_)  // cublasLt.h (through cublas_api.h) came first: the tool calls cuBLASLt
inline void check(const char* tool, cublasStatus_t status, const std::string& what) {
  if (status != CUBLAS_STATUS_SUCCESS) fail(tool, what + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}
#endif
#if defined(_CUPTI_RESULT_H_)  // cupti.h came first: the tool calls CUPTI
inline void check(const char* tool, CUptiResult status, const std::string& what) {
  if (status == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(status, &text);
  fail(tool, what + ": " + (text ? text : "CUPTI error"));
}
#endif
#define PW_CHECK(call) ::pipeweave_tool::check(kToolName, (call), #call)

// The number of GPUs this process sees; none ends the tool with one line saying why.
inline int visible_gpu_count(const char* tool) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    fail(tool, std::string("no CUDA GPU is visible to this process (") +
                   (status == cudaSuccess ? "0 devices" : cudaGetErrorString(status)) + ")");
  return count;
}

inline std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

// The kernel module's version, as nvidia-smi shows it (the CUDA API reports only the CUDA version).
inline std::string driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  std::istringstream words(line);
  for (std::string word; words >> word;)
    if (word.find('.') != std::string::npos && std::isdigit(static_cast<unsigned char>(word[0]))) return word;
  return "unknown";
}

__host__ __device__ __forceinline__ uint32_t mix(uint32_t x) {  // a 32-bit integer hash
  x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
  return x;
}

// ---- --sms N: every timed kernel confined to N SMs (a green context) -------------------------
//
// The same memory system with fewer SMs: a GPU of another compute:memory balance. The SMs are
// split off with the driver's green-context API (CUDA 12.4+): one group of at least N SMs, in
// the hardware's granularity (multiples of 8 on Hopper: --sms 66 gets 72), so the count obtained
// may exceed N; the tools record and use that count. The driver API's functions are looked up
// through the runtime (cudaGetDriverEntryPointByVersion) rather than linked: a tool linked
// against libcuda would not even start on a machine without the driver, where it must say "no
// CUDA GPU is visible" like any other. The green context is made current, so that
// the runtime API's allocations, events and module loads (cuBLASLt's too) happen in it: it is the
// device's primary context with the partition's SMs (cuCtxFromGreenCtx), memory is shared with
// it. Every launch the tools time goes to `stream`, a non-blocking stream of the green context;
// with the whole GPU `stream` is null, the legacy default stream the tools always used.
struct SmLimit {
  int requested = 0;        // --sms N; 0: the whole GPU
  int obtained = 0;         // SMs of the green context (the split's group), what the kernels run on
  int device_sm_count = 0;  // the device's full count
  int observed = 0;         // distinct SMs a probe kernel of many CTAs ran on (a check of the confinement)
  CUgreenCtx green = nullptr;
  cudaStream_t stream = nullptr;
  bool active() const { return requested > 0; }
};

// The driver functions --sms uses, as of CUDA 12.5 (cuGreenCtxStreamCreate's first version).
struct DriverApi {
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetDevResource_v12040 cuDeviceGetDevResource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 cuDevSmResourceSplitByCount = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 cuDevResourceGenerateDesc = nullptr;
  PFN_cuGreenCtxCreate_v12040 cuGreenCtxCreate = nullptr;
  PFN_cuCtxFromGreenCtx_v12040 cuCtxFromGreenCtx = nullptr;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 cuGreenCtxStreamCreate = nullptr;
};

inline DriverApi load_driver_api(const char* tool) {
  DriverApi api;
  auto load = [&](const char* symbol, auto& pointer) {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t status = cudaGetDriverEntryPointByVersion(symbol, &function, 12050, cudaEnableDefault, &found);
    if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || !function)
      fail(tool, std::string("--sms needs green contexts (CUDA 12.5 or later, runtime and driver): the driver has no ") + symbol +
                     (status != cudaSuccess ? std::string(" (") + cudaGetErrorString(status) + ")" : std::string()));
    pointer = reinterpret_cast<std::remove_reference_t<decltype(pointer)>>(function);
  };
  load("cuGetErrorName", api.cuGetErrorName);
  load("cuGetErrorString", api.cuGetErrorString);
  load("cuDeviceGet", api.cuDeviceGet);
  load("cuDeviceGetDevResource", api.cuDeviceGetDevResource);
  load("cuDevSmResourceSplitByCount", api.cuDevSmResourceSplitByCount);
  load("cuDevResourceGenerateDesc", api.cuDevResourceGenerateDesc);
  load("cuGreenCtxCreate", api.cuGreenCtxCreate);
  load("cuCtxFromGreenCtx", api.cuCtxFromGreenCtx);
  load("cuCtxSetCurrent", api.cuCtxSetCurrent);
  load("cuGreenCtxStreamCreate", api.cuGreenCtxStreamCreate);
  return api;
}

inline void check_driver(const char* tool, const DriverApi& api, CUresult status, const std::string& what) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(status, &name);
  api.cuGetErrorString(status, &text);
  fail(tool, what + ": " + (name ? std::string(name) : "CUDA driver error " + std::to_string(static_cast<int>(status))) +
                 (text ? std::string(" (") + text + ")" : std::string()));
}

// Parses --sms's value: a whole number from 1 up.
inline int parse_sms(const char* tool, const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < 1 || value > 100000)
    fail(tool, "--sms must be a positive whole number of SMs, got \"" + text + "\"");
  return static_cast<int>(value);
}

// Writes each CTA's SM id after spinning `spin_ns`, so that the CTAs spread over every SM the
// launch may use.
__global__ void sm_probe_kernel(unsigned int* smids, unsigned long long spin_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < spin_ns);
  if (threadIdx.x == 0) {
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    smids[blockIdx.x] = smid;
  }
}

// How many distinct SMs a launch of 8 CTAs per SM of the whole GPU, on `stream`, ran on.
inline int observed_sms(const char* tool, cudaStream_t stream, int device_sm_count) {
  const int ctas = 8 * device_sm_count;
  unsigned int* smids = nullptr;
  check(tool, cudaMalloc(&smids, sizeof(unsigned int) * ctas), "cudaMalloc (SM probe)");
  sm_probe_kernel<<<ctas, 128, 0, stream>>>(smids, 20000);
  check(tool, cudaGetLastError(), "SM probe launch");
  check(tool, cudaStreamSynchronize(stream), "SM probe");
  std::vector<unsigned int> host(ctas);
  check(tool, cudaMemcpy(host.data(), smids, sizeof(unsigned int) * ctas, cudaMemcpyDeviceToHost), "cudaMemcpy (SM probe)");
  check(tool, cudaFree(smids), "cudaFree (SM probe)");
  std::sort(host.begin(), host.end());
  return static_cast<int>(std::unique(host.begin(), host.end()) - host.begin());
}

// Makes a green context of (at least) `requested` SMs of device `device_index` current to this
// thread and creates its stream. Call once, before the tool's allocations; fails with one line
// when no such partition can be made.
inline SmLimit confine_to_sms(const char* tool, int device_index, int requested) {
  SmLimit limit;
  limit.requested = requested;
  // The primary context first (cuGreenCtxCreate retains it; the driver advises it be active).
  check(tool, cudaSetDevice(device_index), "cudaSetDevice");
  check(tool, cudaFree(nullptr), "initialising the primary context");
  const DriverApi api = load_driver_api(tool);
  CUdevice device;
  check_driver(tool, api, api.cuDeviceGet(&device, device_index), "cuDeviceGet");
  CUdevResource all{};
  check_driver(tool, api, api.cuDeviceGetDevResource(device, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  limit.device_sm_count = static_cast<int>(all.sm.smCount);
  const std::string granularity = " (SM partitions here: at least " + std::to_string(all.sm.minSmPartitionSize) +
                                  " SMs, in multiples of " + std::to_string(all.sm.smCoscheduledAlignment) + ")";
  if (requested > limit.device_sm_count)
    fail(tool, "--sms " + std::to_string(requested) + ": the GPU has " + std::to_string(limit.device_sm_count) + " SMs");
  CUdevResource group{}, remaining{};
  unsigned int groups = 1;
  const CUresult split =
      api.cuDevSmResourceSplitByCount(&group, &groups, &all, &remaining, 0, static_cast<unsigned int>(requested));
  if (split != CUDA_SUCCESS || groups < 1 || group.sm.smCount == 0) {
    check_driver(tool, api, split, "cannot split off a group of " + std::to_string(requested) + " SMs" + granularity);
    fail(tool, "cannot split off a group of " + std::to_string(requested) + " of the GPU's " +
                   std::to_string(limit.device_sm_count) + " SMs" + granularity);
  }
  limit.obtained = static_cast<int>(group.sm.smCount);
  CUdevResourceDesc desc = nullptr;
  check_driver(tool, api, api.cuDevResourceGenerateDesc(&desc, &group, 1), "cuDevResourceGenerateDesc");
  check_driver(tool, api, api.cuGreenCtxCreate(&limit.green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  CUcontext context = nullptr;
  check_driver(tool, api, api.cuCtxFromGreenCtx(&context, limit.green), "cuCtxFromGreenCtx");
  check_driver(tool, api, api.cuCtxSetCurrent(context), "cuCtxSetCurrent (the green context)");
  CUstream stream = nullptr;
  check_driver(tool, api, api.cuGreenCtxStreamCreate(&stream, limit.green, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate");
  limit.stream = stream;  // CUstream and cudaStream_t are one type
  limit.observed = observed_sms(tool, limit.stream, limit.device_sm_count);
  if (limit.observed > limit.obtained)
    std::fprintf(stderr, "%s: warning: a probe kernel in the green context of %d SMs ran on %d distinct SMs\n", tool,
                 limit.obtained, limit.observed);
  return limit;
}

// The device line's keys for a run confined to part of the SMs (none without --sms):
// `, "sm_limit": obtained, "sm_requested": N, "device_sm_count": full, "sm_observed": probe`.
inline std::string sm_limit_json(const SmLimit& limit) {
  if (!limit.active()) return "";
  return ", \"sm_limit\": " + std::to_string(limit.obtained) + ", \"sm_requested\": " + std::to_string(limit.requested) +
         ", \"device_sm_count\": " + std::to_string(limit.device_sm_count) + ", \"sm_observed\": " +
         std::to_string(limit.observed);
}

}  // namespace pipeweave_tool
