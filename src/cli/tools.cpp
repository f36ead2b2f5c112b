// See tools.hpp.
#include "flags.hpp"
#include "tools.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>

#include "pipeweave/error.hpp"
#include "pipeweave/io.hpp"
#include "../json_support.hpp"

namespace pipeweave::cli {

namespace fs = std::filesystem;

fs::path find_tool(const std::string& name, const std::string& env_var) {
  if (const char* named = std::getenv(env_var.c_str()); named && *named) {
    if (!fs::exists(named)) throw InvalidInput(fmt::format("{} names {}, which does not exist", env_var, named));
    return named;
  }
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  const fs::path beside = error ? fs::path(name) : self.parent_path() / name;
  if (!fs::exists(beside))
    throw Error(fmt::format("this needs {}, one of the CUDA tools, beside this program ({}) or named by {}; it is built "
                            "when CMake finds nvcc (-DPIPEWEAVE_BUILD_CUDA=ON)",
                            name, beside.string(), env_var));
  return beside;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void run_tool(const fs::path& program, const std::string& arguments, const std::string& what_fails) {
  const std::string name = program.filename().string();
  const std::string command = shell_quote(program.string()) + " " + arguments + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw Error("cannot start " + program.string());
  const std::string error_prefix = name + ": error: ";
  std::string error_line;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) {
    std::string line(buffer);
    if (line.starts_with(error_prefix)) {
      error_line = line.substr(error_prefix.size());
      while (!error_line.empty() && (error_line.back() == '\n' || error_line.back() == '\r')) error_line.pop_back();
    } else {
      std::fputs(line.c_str(), stderr);
    }
  }
  const int status = ::pclose(pipe);
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (exit_code != 0)
    throw Error(error_line.empty() ? fmt::format("{} ({} exited with status {})", what_fails, name, exit_code)
                                   : what_fails + ": " + error_line);
}

GpuSpec spec_for_gpu(const std::string& gpu, const std::map<std::string, std::string>& named, const std::string& specs_dir,
                     std::string& source) {
  if (const auto found = named.find(gpu); found != named.end()) {
    source = found->second;
    return load_gpu_spec(found->second);
  }
  if (!specs_dir.empty()) {
    const fs::path calibrated = fs::path(specs_dir) / (gpu + ".calibrated.json");
    if (fs::exists(calibrated)) {
      source = calibrated.string();
      return load_gpu_spec(calibrated);
    }
  }
  source = "catalog";
  return find_gpu(gpu);
}

void add_named_spec(const std::string& text, std::map<std::string, std::string>& named) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    FlagParser::fail("--spec", text, "must be GPU=FILE, e.g. H100-SXM=data/gpus/H100-SXM.calibrated.json");
  const auto [where, added] = named.emplace(text.substr(0, equals), text.substr(equals + 1));
  if (!added)
    FlagParser::fail("--spec", text, fmt::format("must name each GPU once ({} is {} already)", where->first, where->second));
}

void write_text(const fs::path& path, const std::string& text) {
  write_file(path, [&](std::ostream& out) { out << text; });
}

namespace {

// The standard stream a path names, if it names one (/dev/stdout, /dev/fd/1, /proc/self/fd/1; 2
// for stderr): written through the stream the process already has, never opened again (opened
// again, a redirected file was truncated and then written over by the stream's own output).
std::ostream* standard_stream(const fs::path& path) {
  const std::string text = fs::absolute(path).lexically_normal().string();
  for (const char* out : {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
    if (text == out) return &std::cout;
  for (const char* err : {"/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"})
    if (text == err) return &std::cerr;
  return nullptr;
}

// Where a write to `path` lands: the path, or the file its symbolic links lead to (written through
// them as a shell's > would, not replaced by a file of their own), a dangling link's target included.
fs::path write_target(const fs::path& path) {
  fs::path target = path;
  std::error_code error;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, error)); ++hops) {
    if (hops == 40) throw Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(ELOOP)));
    const fs::path next = fs::read_symlink(target, error);
    if (error) throw Error(fmt::format("cannot write {}: {}", path.string(), error.message()));
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target;
}

// Opens `path` and writes it, naming the system's reason where opening or writing fails (a
// missing folder, a full disk).
void write_opened(const fs::path& path, const fs::path& shown, const std::function<void(std::ostream&)>& write) {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  const int open_error = errno;
  if (!out) throw Error(fmt::format("cannot write {}: {}", shown.string(), open_error != 0 ? std::strerror(open_error) : "cannot open it"));
  errno = 0;  // (a write that fails as the buffer fills sets it before the flush)
  write(out);
  if (!out.flush()) throw Error(fmt::format("cannot write {}: {}", shown.string(), errno != 0 ? std::strerror(errno) : "the write failed"));
}

}  // namespace

void write_file(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  if (std::ostream* stream = standard_stream(path)) {
    write(*stream);
    if (!stream->flush()) throw Error(fmt::format("cannot write {}", path.string()));
    return;
  }
  if (path.has_parent_path()) {
    std::error_code error;  // (a file where the folder should be: said as such, not as the library's exception)
    fs::create_directories(path.parent_path(), error);
    if (error) throw Error(fmt::format("cannot write {}: cannot make the folder {}: {}", path.string(), path.parent_path().string(),
                                       error.message()));
  }
  const fs::path target = write_target(path);
  std::error_code error;
  const fs::file_status status = fs::status(target, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device, a pipe or a socket (/dev/null, a FIFO): written to as it is, never replaced by a
    // file renamed over it (/dev/full as root was).
    write_opened(target, path, write);
    return;
  }
  // A file: written beside it, then renamed into place: a write that fails part way (a value the
  // JSON writer refuses, a full disk) leaves no half file, and any file there before as it was.
  fs::path partial = target;
  partial += ".partial";
  try {
    write_opened(partial, path, write);
    fs::rename(partial, target, error);
    if (error) throw Error(fmt::format("cannot write {}: {}", path.string(), error.message()));
  } catch (...) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw;
  }
}

std::string configless_place(const Mlp& model) {
  std::string place = "GEMMs without a config";
  const std::vector<DType>& dtypes = model.description().dtypes;
  for (std::size_t i = 0; i < dtypes.size(); ++i) place += (i == 0 ? " (" : ", ") + std::string(to_string(dtypes[i]));
  return dtypes.empty() ? place : place + ")";
}

std::vector<Mlp> load_models(const std::string& flag, const std::vector<std::string>& paths) {
  std::vector<Mlp> models;
  std::vector<std::pair<std::string, std::string>> taken;  // (place, the file that took it)
  for (const std::string& path : paths) {
    Mlp model = load_mlp(path);
    const MlpDescription& d = model.description();
    std::vector<std::string> places;
    if (!d.for_configless_gemm) places.push_back(std::string(to_string(d.family)) + " kernels");
    else if (d.dtypes.empty())  // (it yields to one that lists a type, the library's rule, not to another like it)
      places.push_back("GEMMs of every data type without a config");
    else
      for (DType dtype : d.dtypes) places.push_back("GEMMs of " + std::string(to_string(dtype)) + " without a config");
    for (const std::string& place : places) {
      for (const auto& [other_place, other_path] : taken)
        if (other_place == place)
          throw InvalidInput(fmt::format("{} {} and {} {} both answer for {}: give one", flag, other_path, flag, path, place));
      taken.emplace_back(place, path);
    }
    models.push_back(std::move(model));
  }
  return models;
}

// `folder` (made if missing, as write_file and the reports make theirs) is one this process can
// write in: the nearest part of it that exists is a folder, and writable.
void check_writable_folder(const std::string& flag, const std::string& given, const fs::path& folder) {
  std::error_code error;
  fs::path existing = fs::absolute(folder.empty() ? fs::path(".") : folder, error);  // ("m.json": the working folder)
  while (!existing.empty() && !fs::exists(existing, error) && existing != existing.parent_path()) existing = existing.parent_path();
  if (!fs::is_directory(existing, error))
    throw InvalidInput(fmt::format("{} {}: {} is not a folder to write into", flag, given, existing.string()));
  if (::access(existing.c_str(), W_OK) != 0) {
    const int reason = errno;  // (before anything else can set it)
    throw InvalidInput(fmt::format("{} {}: cannot write in {}: {}", flag, given, existing.string(), std::strerror(reason)));
  }
}

void check_output(const std::string& out_flag, const std::string& out,
                  const std::vector<std::pair<std::string, std::string>>& inputs) {
  if (out.empty()) return;
  std::error_code error;
  if (fs::is_directory(out, error)) throw InvalidInput(fmt::format("{} {} is a directory, not a file to write", out_flag, out));
  // The folder it goes in (made if missing) must be one this process can write in: found only when
  // written, the mistake cost a whole training run first. A device or pipe is written as it is.
  if (!standard_stream(out)) {
    const fs::path target = write_target(out);
    if (!(fs::exists(target, error) && !fs::is_regular_file(target, error))) check_writable_folder(out_flag, out, target.parent_path());
  }
  for (const auto& [flag, path] : inputs)
    if (!path.empty() && fs::equivalent(out, path, error))
      throw InvalidInput(fmt::format("{} {} is the same file as {} {}: it would be written over", out_flag, out, flag, path));
}

void check_output_folder(const std::string& flag, const std::string& folder, const std::vector<std::string>& written,
                         const std::vector<std::pair<std::string, std::string>>& inputs) {
  std::error_code error;
  if (folder.empty()) return;
  if (fs::exists(folder, error) && !fs::is_directory(folder, error))
    throw InvalidInput(fmt::format("{} {} is a file, not a folder to write into", flag, folder));
  check_writable_folder(flag, folder, folder);
  for (const std::string& name : written)
    for (const auto& [input_flag, path] : inputs)
      if (!path.empty() && fs::equivalent(fs::path(folder) / name, path, error))
        throw InvalidInput(fmt::format("{} {} would write {} over {} {}: give another folder", flag, folder, name, input_flag, path));
}

void check_specs_folder(const std::string& folder) {
  std::error_code error;
  if (!folder.empty() && !fs::is_directory(folder, error))
    FlagParser::fail("--specs", folder, "must be a folder of <GPU>.calibrated.json specs");
}

void check_named_specs_used(const std::map<std::string, std::string>& named, const std::set<std::string>& gpus) {
  for (const auto& [gpu, path] : named)
    if (!gpus.count(gpu))
      FlagParser::fail("--spec", gpu + "=" + path, fmt::format("must name a GPU the rows were measured on ({})", fmt::join(gpus, ", ")));
}

std::string read_text(const fs::path& path, const std::string& what) { return detail::read_file(path, what); }

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) FlagParser::fail(flag, text, "must list items joined by commas, none of them empty");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace pipeweave::cli
