#pragma once
// Reading and writing the library's files and texts: GpuSpec and model weights as JSON,
// kernels as `op:key=value,...` strings. Declared here, defined in the compiled part of
// the library, so that including pipeweave costs no JSON parser.

#include <filesystem>
#include <string>
#include <string_view>

#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/kernel.hpp"
#include "pipeweave/mlp.hpp"

namespace pipeweave {

// GpuSpec <-> JSON. Reading validates every field and names the one that is wrong.
GpuSpec gpu_spec_from_json(std::string_view json_text);
std::string to_json(const GpuSpec& gpu);
GpuSpec load_gpu_spec(const std::filesystem::path& path);
void save_gpu_spec(const GpuSpec& gpu, const std::filesystem::path& path);

// A catalog name or CUDA device name, or the path of a spec JSON file (anything ending in .json, or .json.gz for a compressed one).
GpuSpec resolve_gpu(std::string_view name_or_path);

// Model weights <-> JSON (format "pipeweave-mlp", version 1).
Mlp mlp_from_json(std::string_view json_text);
std::string to_json(const Mlp& mlp);
Mlp load_mlp(const std::filesystem::path& path);

// Kernels as text: `gemm:m=4096,n=4096,k=4096,dtype=bf16`. Unknown ops or keys, missing
// required keys and bad values are errors naming the key. to_string writes what parse reads.
Kernel parse_kernel(std::string_view text);
std::string to_string(const Kernel& kernel);
// The implementation config a prediction assumed, e.g. "tile 128x128x64 split_k 1 stages 6 cluster 2x1 (default)".
std::string describe_config(const Kernel& kernel, const GpuSpec& gpu);

}  // namespace pipeweave
