#pragma once
// One typed parser for every command's flags (as google/benchmark's commandlineflags and
// nvbench's option_parser): a command declares each flag once, with where its value goes and
// what it must be; parsing, the error for a bad value, the unknown-flag check and the test
// that the help lists every flag all read that one declaration.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace pipeweave::cli {

class FlagParser {
 public:
  // `command` names the command in messages ("unknown option --fast for predict").
  explicit FlagParser(std::string command) : command_(std::move(command)) {}

  // --name: no value; sets `target` to true.
  FlagParser& flag(std::string name, bool& target);
  // --name TEXT, at most once; texts() collects every one given (each a different text).
  // Every flag but a list is taken once: a second --gpu or --json is an error, not a value that
  // silently replaces the first (a careless script's repeated flag would otherwise go unseen).
  // No value may be empty ("--out ''" names no file).
  FlagParser& text(std::string name, std::string& target);
  FlagParser& texts(std::string name, std::vector<std::string>& target);
  // --name N: a whole number from `low` to `high` ("must be a whole number from 1 to 100").
  FlagParser& whole(std::string name, int& target, int low, int high);
  FlagParser& whole(std::string name, std::int64_t& target, std::int64_t low,
                    std::int64_t high = std::numeric_limits<std::int64_t>::max());
  // --name X: a finite number for which `accept` holds; `requirement` says which ("must be a
  // factor from 1 to 10").
  FlagParser& number(std::string name, double& target, std::function<bool(double)> accept, std::string requirement);
  FlagParser& number(std::string name, std::optional<double>& target, std::function<bool(double)> accept,
                     std::string requirement);
  // --name WORD: one of `words`, each standing for a value of T.
  template <typename T>
  FlagParser& choice(std::string name, T& target, std::vector<std::pair<std::string, std::type_identity_t<T>>> words) {
    return custom(name, [name, &target, words = std::move(words)](const std::string& text) { target = chosen(name, words, text); });
  }
  template <typename T>
  FlagParser& choice(std::string name, std::optional<T>& target,
                     std::vector<std::pair<std::string, std::type_identity_t<T>>> words) {
    return custom(name, [name, &target, words = std::move(words)](const std::string& text) { target = chosen(name, words, text); });
  }
  // --name VALUE handed to `apply`, which checks it (a list, a pair, a GPU=FILE); customs():
  // as often as given, each a different text.
  FlagParser& custom(std::string name, std::function<void(const std::string&)> apply);
  FlagParser& customs(std::string name, std::function<void(const std::string&)> apply);
  // Arguments that are not flags go to `target`; without this call they are refused.
  FlagParser& positional(std::vector<std::string>& target);

  // Reads argv[first..argc): `--name value` or `--name=value`. Throws InvalidInput for an
  // unknown flag, a missing or bad value, or a positional argument where none is taken.
  void parse(int argc, const char* const* argv, int first);

  // Whether --name was on the command line (for flags that only go with others).
  bool given(std::string_view name) const;
  // Every flag declared, in declaration order ("--gpu", "--json", ...).
  std::vector<std::string> names() const;
  const std::string& command() const { return command_; }

  // "NAME must be REQUIREMENT, got "TEXT"": the one wording of a bad flag value.
  [[noreturn]] static void fail(std::string_view name, std::string_view text, std::string_view requirement);

 private:
  struct Declared {
    std::string name;
    bool takes_value = true;
    bool repeatable = false;  // a list: given as often as wanted
    std::function<void(const std::string&)> apply;
    std::vector<std::string> values;  // the texts given so far (a list's repeats are refused)
  };
  FlagParser& declare(std::string name, bool takes_value, std::function<void(const std::string&)> apply,
                      bool repeatable = false);
  // Hands `value` to the flag after the checks every flag shares.
  void take(Declared& declared, const std::string& value);
  // The value `text` names among `words`, or the error listing them.
  template <typename T>
  static const T& chosen(const std::string& name, const std::vector<std::pair<std::string, T>>& words, const std::string& text) {
    for (const auto& [word, value] : words)
      if (word == text) return value;
    std::string listed;
    for (std::size_t i = 0; i < words.size(); ++i)
      listed += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i].first;
    fail(name, text, "must be " + listed);
  }

  std::string command_;
  std::vector<Declared> declared_;
  std::vector<std::string>* positional_ = nullptr;
  std::vector<std::string> given_;
};

// A number: the whole text, finite; nothing otherwise (the caller names the flag and what it
// must be).
std::optional<double> parse_number(const std::string& text);
// A whole number: the whole text, optional sign and digits, within int64; nothing otherwise.
std::optional<std::int64_t> parse_whole(const std::string& text);

}  // namespace pipeweave::cli
