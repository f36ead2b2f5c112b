// The pipeweave command-line tool: a thin layer over the public API. This file only dispatches
// (commands.cpp lists the commands); each command lives in its own file, and the help is
// docs/cli.md, built in.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"

namespace {

namespace pw = pipeweave;

bool asks_for_help(std::string_view argument) { return argument == "--help" || argument == "-h"; }

int run(int argc, const char* const* argv) {
  if (argc < 2) {
    std::fputs(std::string(pw::cli::help_overview()).c_str(), stderr);
    return 2;
  }
  const std::string_view command = argv[1];
  if (asks_for_help(command) || command == "help") {
    // pipeweave help [COMMAND]
    const std::string_view text = argc > 2 ? pw::cli::help_section(argv[2]) : pw::cli::help_overview();
    if (text.empty()) throw pw::InvalidInput(fmt::format("no help on {} (try pipeweave --help)", pw::detail::quoted(argv[2])));
    fmt::print("{}", text);
    return 0;
  }
  if (command == "--version") {
    if (argc > 2) throw pw::InvalidInput(fmt::format("--version takes no arguments, got {}", pw::detail::quoted(argv[2])));
    fmt::print("pipeweave {}\n", pw::kVersion);
    return 0;
  }
  for (const pw::cli::Command& known : pw::cli::commands()) {
    if (known.name != command) continue;
    for (int i = 2; i < argc; ++i)
      if (asks_for_help(argv[i])) {
        fmt::print("{}", pw::cli::help_section(command));
        return 0;
      }
    return known.run(argc, argv, 2);
  }
  throw pw::InvalidInput(fmt::format("unknown command {} (try pipeweave --help)", pw::detail::quoted(command)));
}

// An error as its one line shows it: every message names what it quotes in short (printable()),
// and whatever one still quotes whole (a name echoed from a file) is cut here, on a character's
// boundary, so that no input can make the error line megabytes long.
std::string error_line(std::string_view message) {
  constexpr std::size_t kMostBytes = 2000;
  if (message.size() <= kMostBytes) return std::string(message);
  std::size_t cut = kMostBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return fmt::format("{}... ({} bytes more)", message.substr(0, cut), message.size() - cut);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "pipeweave: error: {}\n", error_line(error.what()));
    return 2;
  }
}
