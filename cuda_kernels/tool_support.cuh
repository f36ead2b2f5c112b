#pragma once
// What the CUDA tools (microbench.cu, collect.cu) share: one-line errors in the form the CLI
// relays ("<tool>: error: ..."), CUDA status checks, JSON strings, the driver's version, and
// a hash for filling buffers with random data. Each tool defines kToolName before including.
#include <cuda_runtime.h>

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

}  // namespace pipeweave_tool
