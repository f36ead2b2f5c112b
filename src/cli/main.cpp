// The pipeweave command-line tool: a thin layer over the public API. This file only dispatches
// (commands.cpp lists the commands); each command lives in its own file, and the help is
// docs/cli.md, built in.
#include <fmt/format.h>

#include <cstdio>
#include <new>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "pipeweave/pipeweave.hpp"

namespace {

namespace pw = pipeweave;

bool asks_for_help(std::string_view argument) { return argument == "--help" || argument == "-h"; }

int run(int argc, const char* const* argv) {
  // (one error line, as for any other mistake: the overview is pipeweave --help's)
  if (argc < 2) throw pw::InvalidInput("no command given (pipeweave --help lists them)");
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
// and whatever one still quotes whole (a path given with a newline in it, a name echoed from a
// file) is escaped and cut here as printable() does, so that no input can make the error more than
// one line, or that line megabytes long.
std::string error_line(std::string_view message) { return pw::detail::printable(message, 2000); }

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {  // ("std::bad_alloc" alone said neither what ran out nor why)
    fmt::print(stderr, "pipeweave: error: out of memory: the inputs ask for more than this process may hold (std::bad_alloc)\n");
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "pipeweave: error: {}\n", error_line(error.what()));
    return 2;
  }
}
