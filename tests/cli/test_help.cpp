// The help (docs/cli.md, built into the program) and the README against the parser: every flag
// a command accepts is documented in its section, and every flag the help or the README shows
// for a command is one it accepts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/cli/commands.hpp"

namespace {

namespace cli = pipeweave::cli;

std::map<std::string, std::set<std::string>> accepted_flags() {
  std::map<std::string, std::set<std::string>> out;
  for (const cli::Command& command : cli::commands()) {
    const std::vector<std::string> names = command.flag_names();
    out[std::string(command.name)] = {names.begin(), names.end()};
  }
  return out;
}

bool flag_character(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

// The --flags written in `text` (a flag ends at the first character that is not a lowercase
// letter, digit or dash: "--gpu=X" and "[--json]" give --gpu and --json).
std::set<std::string> flags_in(const std::string& text) {
  std::set<std::string> out;
  for (std::size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 2)) {
    if (at > 0 && flag_character(text[at - 1])) continue;  // "a--b", or the tail of "---"
    std::size_t end = at + 2;
    while (end < text.size() && flag_character(text[end])) ++end;
    if (end > at + 2 && text[at + 2] != '-') out.insert(text.substr(at, end - at));
    at = end - 2;
  }
  return out;
}

// Each line of `text` that runs a pipeweave command, as the command's name and the rest of its
// command line (up to a pipe, `&&`, `;`, a shell comment or the line's end).
std::vector<std::pair<std::string, std::string>> command_lines(const std::string& text,
                                                               const std::map<std::string, std::set<std::string>>& accepted) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    for (std::size_t at = line.find("pipeweave "); at != std::string::npos; at = line.find("pipeweave ", at + 1)) {
      // "pipeweave e2e" or "build/pipeweave e2e"; not "pipeweave-collect" or "data/pipeweave_x".
      if (at > 0 && line[at - 1] != ' ' && line[at - 1] != '/' && line[at - 1] != '`' && line[at - 1] != '(') continue;
      std::size_t name_end = at + 10;
      while (name_end < line.size() && line[name_end] != ' ' && line[name_end] != '`') ++name_end;
      const std::string name = line.substr(at + 10, name_end - at - 10);
      if (!accepted.count(name)) continue;
      std::string rest = line.substr(name_end);
      for (const char* stop : {" | ", " && ", "; ", " # ", "`", " > ", " 2>"}) rest = rest.substr(0, rest.find(stop));
      out.emplace_back(name, rest);
    }
  }
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("help: every command has a section naming each flag it accepts, and no other", "[cli][help]") {
  const auto accepted = accepted_flags();
  REQUIRE(accepted.size() == 9);
  for (const auto& [command, flags] : accepted) {
    INFO("pipeweave " << command);
    const std::string section(cli::help_section(command));
    REQUIRE_FALSE(section.empty());
    const std::set<std::string> documented = flags_in(section);
    for (const std::string& flag : flags) {
      INFO(flag << " is accepted");
      CHECK(documented.count(flag));
    }
    for (const std::string& flag : documented) {
      INFO(flag << " is in the help");
      CHECK(flags.count(flag));
    }
  }
}

TEST_CASE("help: the overview's usage lines take only flags their command accepts", "[cli][help]") {
  const auto accepted = accepted_flags();
  const auto lines = command_lines(std::string(cli::help_overview()), accepted);
  std::set<std::string> commands_shown;
  for (const auto& [command, rest] : lines) {
    commands_shown.insert(command);
    for (const std::string& flag : flags_in(rest)) {
      INFO("pipeweave " << command << rest);
      CHECK(accepted.at(command).count(flag));
    }
  }
  CHECK(commands_shown.size() == accepted.size());
  CHECK(flags_in("[--gpu=X] --json, a--b ---c --") == std::set<std::string>{"--gpu", "--json"});
  CHECK(cli::help_section("no-such-command").empty());
  CHECK(cli::help_section("e2").empty());  // a prefix of e2e is not e2e
}

TEST_CASE("help: the README and the docs run each command only with flags it accepts", "[cli][help]") {
  const auto accepted = accepted_flags();
  const std::filesystem::path source(PIPEWEAVE_SOURCE_DIR);
  std::vector<std::filesystem::path> documents{source / "README.md", source / "data" / "README.md",
                                               source / "python" / "README.md"};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(source / "docs"))
    if (entry.path().extension() == ".md") documents.push_back(entry.path());
  std::size_t checked = 0;
  for (const std::filesystem::path& document : documents) {
    for (const auto& [command, rest] : command_lines(read_file(document), accepted)) {
      for (const std::string& flag : flags_in(rest)) {
        INFO(document.lexically_relative(source).string() << ": pipeweave " << command << rest);
        CHECK(accepted.at(command).count(flag));
        ++checked;
      }
    }
  }
  CHECK(checked > 100);  // the documents do run the commands
}
