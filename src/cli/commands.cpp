// The commands main.cpp dispatches to, and their help: docs/cli.md, built into the program
// (cmake/embed_models.cmake writes it as pipeweave::detail::embedded_cli_help()), so that
// `pipeweave --help` and the documentation are one text.
#include <span>
#include <string>
#include <string_view>

#include "commands.hpp"

namespace pipeweave::detail {
std::span<const std::string_view> embedded_cli_help();
}

namespace pipeweave::cli {

std::span<const Command> commands() {
  static constexpr Command kCommands[] = {
      {"gpus", gpus_command, gpus_flag_names},
      {"predict", predict_command, predict_flag_names},
      {"rank", rank_command, rank_flag_names},
      {"e2e", e2e_command, e2e_flag_names},
      {"calibrate", calibrate_command, calibrate_flag_names},
      {"shapes", shapes_command, shapes_flag_names},
      {"collect", collect_command, collect_flag_names},
      {"eval", eval_command, eval_flag_names},
      {"train", train_command, train_flag_names},
  };
  return kCommands;
}

std::string_view help_text() {
  const std::span<const std::string_view> files = detail::embedded_cli_help();
  return files.empty() ? std::string_view() : files.front();
}

std::string_view help_overview() {
  const std::string_view text = help_text();
  return text.substr(0, text.find("\n## "));
}

std::string_view help_section(std::string_view command) {
  const std::string_view text = help_text();
  const std::string heading = "\n## pipeweave " + std::string(command);
  std::size_t start = text.find(heading);
  // The heading is the whole line: "## pipeweave e2e", not "## pipeweave e2e-foo".
  while (start != std::string_view::npos && start + heading.size() < text.size() && text[start + heading.size()] != '\n' &&
         text[start + heading.size()] != ' ')
    start = text.find(heading, start + 1);
  if (start == std::string_view::npos) return {};
  const std::size_t end = text.find("\n## ", start + 1);
  return text.substr(start + 1, end == std::string_view::npos ? std::string_view::npos : end - start);
}

}  // namespace pipeweave::cli
