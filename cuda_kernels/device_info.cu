// pipeweave-device-info: what the CUDA runtime reports about each visible GPU, beside
// the catalog entry its name matches, so that a user can see which spec a prediction
// for "this GPU" would use and how the catalog's figures compare with the device's own.
//
//   pipeweave-device-info [--json]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "pipeweave/error.hpp"
#include "pipeweave/gpu_spec.hpp"
#include "tool_support.cuh"

namespace {

constexpr const char* kToolName = "pipeweave-device-info";

int attribute(cudaDeviceAttr which, int device) {
  int value = 0;
  pipeweave_tool::check(kToolName, cudaDeviceGetAttribute(&value, which, device),
                        "cudaDeviceGetAttribute(" + std::to_string(static_cast<int>(which)) + ")");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // Not visible_gpu_count: this tool's message has always been without "to this process".
  if (status != cudaSuccess || count == 0)
    pipeweave_tool::fail(kToolName, std::string("no CUDA GPU is visible (") +
                                        (status == cudaSuccess ? "0 devices" : cudaGetErrorString(status)) + ")");
  if (json) std::printf("[\n");
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp prop{};
    PW_CHECK(cudaGetDeviceProperties(&prop, device));
    const int clock_khz = attribute(cudaDevAttrClockRate, device);
    const int memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
    // HBM/GDDR move two transfers per memory clock.
    const double dram_gb_s = 2.0 * memory_clock_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9;
    std::string catalog = "(not in the catalog)";
    double catalog_clock = 0, catalog_dram = 0;
    int catalog_sms = 0;
    try {
      const pipeweave::GpuSpec& spec = pipeweave::find_gpu(prop.name);
      catalog = spec.name, catalog_clock = spec.sm_clock_mhz, catalog_dram = spec.dram_bandwidth_gb_s;
      catalog_sms = spec.sm_count;
    } catch (const pipeweave::Error&) {
    }
    if (json) {
      std::printf(
          "  {\"device\": %d, \"name\": \"%s\", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, "
          "\"max_clock_mhz\": %.0f, \"memory_gb\": %.1f, \"dram_peak_gb_s\": %.0f, \"l2_bytes\": %d, "
          "\"smem_bytes_per_sm\": %zu, \"registers_per_sm\": %d, \"max_threads_per_sm\": %d, "
          "\"max_ctas_per_sm\": %d, \"catalog\": \"%s\"}%s\n",
          device, prop.name, prop.major, prop.minor, prop.multiProcessorCount, clock_khz / 1e3,
          static_cast<double>(prop.totalGlobalMem) / 1e9, dram_gb_s, prop.l2CacheSize, prop.sharedMemPerMultiprocessor,
          prop.regsPerMultiprocessor, prop.maxThreadsPerMultiProcessor, prop.maxBlocksPerMultiProcessor,
          catalog.c_str(), device + 1 < count ? "," : "");
      continue;
    }
    std::printf("GPU %d: %s (compute capability %d.%d) -> catalog %s\n", device, prop.name, prop.major, prop.minor,
                catalog.c_str());
    std::printf("  %-22s %12s %12s\n", "", "device", "catalog");
    std::printf("  %-22s %12d %12d\n", "SMs", prop.multiProcessorCount, catalog_sms);
    std::printf("  %-22s %12.0f %12.0f\n", "SM clock MHz (max)", clock_khz / 1e3, catalog_clock);
    std::printf("  %-22s %12.0f %12.0f\n", "DRAM GB/s (peak)", dram_gb_s, catalog_dram);
    std::printf("  %-22s %12.1f\n", "memory GB", static_cast<double>(prop.totalGlobalMem) / 1e9);
    std::printf("  %-22s %12d\n", "L2 bytes", prop.l2CacheSize);
    std::printf("  %-22s %12zu\n", "smem bytes per SM", prop.sharedMemPerMultiprocessor);
  }
  if (json) std::printf("]\n");
  return 0;
}
