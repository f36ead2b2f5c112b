#pragma once
// The CLI's commands: main.cpp dispatches through commands(); each command parses its flags
// (flags.hpp) and then runs. What each does and takes is in docs/cli.md, which is also the
// text `pipeweave --help` prints.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipeweave::cli {

struct Command {
  std::string_view name;
  // Runs the command on argv[first..argc) and returns the exit status.
  int (*run)(int argc, const char* const* argv, int first);
  // Every flag the command accepts: the help test checks each is documented.
  std::vector<std::string> (*flag_names)();
};

// Every command, in the order the help lists them.
std::span<const Command> commands();

// docs/cli.md as built into this program: the overview (before its first "## " heading), and
// one command's section ("## pipeweave NAME" up to the next such heading; empty if none).
std::string_view help_text();
std::string_view help_overview();
std::string_view help_section(std::string_view command);

// Each command's run and flag_names.
int gpus_command(int argc, const char* const* argv, int first);
std::vector<std::string> gpus_flag_names();
int predict_command(int argc, const char* const* argv, int first);
std::vector<std::string> predict_flag_names();
int rank_command(int argc, const char* const* argv, int first);
std::vector<std::string> rank_flag_names();
int e2e_command(int argc, const char* const* argv, int first);
std::vector<std::string> e2e_flag_names();
int calibrate_command(int argc, const char* const* argv, int first);
std::vector<std::string> calibrate_flag_names();
int shapes_command(int argc, const char* const* argv, int first);
std::vector<std::string> shapes_flag_names();
int collect_command(int argc, const char* const* argv, int first);
std::vector<std::string> collect_flag_names();
int eval_command(int argc, const char* const* argv, int first);
std::vector<std::string> eval_flag_names();
int train_command(int argc, const char* const* argv, int first);
std::vector<std::string> train_flag_names();

}  // namespace pipeweave::cli
