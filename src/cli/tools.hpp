#pragma once
// Running the CUDA tools (cuda_kernels/) from the CLI: they are separate programs, so that this
// tool itself needs no CUDA, and they are found beside it (or through an environment variable).
#include <filesystem>
#include <functional>
#include <ostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeweave/gpu_spec.hpp"
#include "pipeweave/mlp.hpp"

namespace pipeweave::cli {

// The most SMs --sms may ask for: the most a GPU spec may have (gpu_spec.cpp).
constexpr int kMostSms = 4096;

// `name` as the environment variable `env_var` names it, else beside this program. Throws
// pipeweave::Error saying how to get it when it is missing.
std::filesystem::path find_tool(const std::string& name, const std::string& env_var);

// Runs `program arguments` (arguments already shell-quoted), echoing what it prints to stderr
// as it comes. Its own error line ("<name>: error: ...") becomes the message of the
// pipeweave::Error thrown when it fails, so that a failure is one line.
void run_tool(const std::filesystem::path& program, const std::string& arguments, const std::string& what_fails);

std::string shell_quote(const std::string& text);

// Which spec a measured GPU is predicted with: `named` (GPU=FILE from --spec), else
// <specs_dir>/<gpu>.calibrated.json when it exists, else the catalog. `source` says which.
GpuSpec spec_for_gpu(const std::string& gpu, const std::map<std::string, std::string>& named, const std::string& specs_dir,
                     std::string& source);
// Parses a --spec value, GPU=FILE, into `named`.
void add_named_spec(const std::string& text, std::map<std::string, std::string>& named);

// A comma-separated list's items; an empty one ("a,,b", a trailing comma) is refused, naming `flag`.
std::vector<std::string> split_list(const std::string& flag, const std::string& text);

// Writes a file (making its folder), or throws pipeweave::Error naming it.
void write_text(const std::filesystem::path& path, const std::string& text);
// The same for a file written a piece at a time (`write` given the open file).
void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);
// Refuses, before any work, an output file (the flag `out_flag` names it) that is a directory or
// one of the command's inputs (flag and path; empty paths are none): written over, the input would
// be lost (or, written before it is read, read as the output).
void check_output(const std::string& out_flag, const std::string& out,
                  const std::vector<std::pair<std::string, std::string>>& inputs);
// The model files given with `flag` (--model, --kernel-model), each in the place of its family's
// bundled model: two for one place (an op family; GEMMs without a config of one data type, both
// listing it) are refused, as the library would keep the later one without a word.
std::vector<Mlp> load_models(const std::string& flag, const std::vector<std::string>& paths);
// What a model for GEMMs without a config answers for, as an error names it: "GEMMs without a
// config" and, where it lists data types, " (bf16, fp8_e4m3)".
std::string configless_place(const Mlp& model);
// Refuses, before any work, a folder to write into (--report DIR) that is a file, or whose files
// the command writes (`written`, names in the folder) would be one of its inputs (as check_output).
void check_output_folder(const std::string& flag, const std::string& folder, const std::vector<std::string>& written = {},
                         const std::vector<std::pair<std::string, std::string>>& inputs = {});
// Refuses --specs DIR that is not a folder: a mistyped one would leave every GPU on its catalog
// spec without a word.
void check_specs_folder(const std::string& folder);
// Refuses a --spec GPU=FILE for a GPU that none of the rows was measured on: it would go unused.
void check_named_specs_used(const std::map<std::string, std::string>& named, const std::set<std::string>& gpus);
std::string read_text(const std::filesystem::path& path, const std::string& what);

}  // namespace pipeweave::cli
