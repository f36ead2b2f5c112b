// See flags.hpp.
#include "flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "pipeweave/error.hpp"

namespace pipeweave::cli {

void FlagParser::fail(std::string_view name, std::string_view text, std::string_view requirement) {
  throw InvalidInput(fmt::format("{} {}, got {}", name, requirement, detail::quoted(text)));
}

FlagParser& FlagParser::declare(std::string name, bool takes_value, std::function<void(const std::string&)> apply,
                                bool repeatable) {
  declared_.push_back({std::move(name), takes_value, repeatable, std::move(apply), {}});
  return *this;
}

FlagParser& FlagParser::flag(std::string name, bool& target) {
  return declare(std::move(name), false, [&target](const std::string&) { target = true; });
}

namespace {

// A text flag's value may not be empty (an empty path, list or name is no value); the typed flags
// say what they take of an empty one as of any other.
void require_text(const std::string& name, const std::string& value) {
  if (value.empty()) throw InvalidInput(fmt::format("{} needs a value, got an empty one", name));
}

}  // namespace

FlagParser& FlagParser::text(std::string name, std::string& target) {
  return declare(name, true, [name, &target](const std::string& value) { require_text(name, value), target = value; });
}

FlagParser& FlagParser::texts(std::string name, std::vector<std::string>& target) {
  return declare(
      name, true, [name, &target](const std::string& value) { require_text(name, value), target.push_back(value); }, true);
}

namespace {

// The setter of a whole-number flag: `target` is an int or an int64, the range within it.
template <typename Integer>
std::function<void(const std::string&)> whole_setter(std::string name, Integer& target, std::int64_t low, std::int64_t high) {
  return [name = std::move(name), &target, low, high](const std::string& text) {
    const std::optional<std::int64_t> value = parse_whole(text);
    if (!value || *value < low || *value > high)
      FlagParser::fail(name, text,
                       high == std::numeric_limits<std::int64_t>::max()
                           ? fmt::format("must be a whole number >= {}", low)
                           : fmt::format("must be a whole number from {} to {}", low, high));
    target = static_cast<Integer>(*value);
  };
}

// The setter of a number flag: `target` is a double or an optional one.
template <typename Target>
std::function<void(const std::string&)> number_setter(std::string name, Target& target, std::function<bool(double)> accept,
                                                      std::string requirement) {
  return [name = std::move(name), &target, accept = std::move(accept),
          requirement = std::move(requirement)](const std::string& text) {
    const std::optional<double> value = parse_number(text);
    if (!value || !accept(*value)) FlagParser::fail(name, text, requirement);
    target = *value;
  };
}

}  // namespace

FlagParser& FlagParser::whole(std::string name, std::int64_t& target, std::int64_t low, std::int64_t high) {
  return custom(name, whole_setter(name, target, low, high));
}

FlagParser& FlagParser::whole(std::string name, int& target, int low, int high) {
  return custom(name, whole_setter(name, target, low, high));
}

FlagParser& FlagParser::number(std::string name, double& target, std::function<bool(double)> accept, std::string requirement) {
  return custom(name, number_setter(name, target, std::move(accept), std::move(requirement)));
}

FlagParser& FlagParser::number(std::string name, std::optional<double>& target, std::function<bool(double)> accept,
                               std::string requirement) {
  return custom(name, number_setter(name, target, std::move(accept), std::move(requirement)));
}

FlagParser& FlagParser::custom(std::string name, std::function<void(const std::string&)> apply) {
  return declare(std::move(name), true, std::move(apply));
}

FlagParser& FlagParser::customs(std::string name, std::function<void(const std::string&)> apply) {
  return declare(std::move(name), true, std::move(apply), true);
}

void FlagParser::take(Declared& declared, const std::string& value) {
  if (!declared.values.empty() && !declared.repeatable)
    throw InvalidInput(fmt::format("{} given twice ({} and {}): it takes one value", declared.name,
                                   detail::quoted(declared.values.front()), detail::quoted(value)));
  if (std::find(declared.values.begin(), declared.values.end(), value) != declared.values.end())
    throw InvalidInput(fmt::format("{} given {} twice", declared.name, detail::quoted(value)));
  declared.values.push_back(value);
  declared.apply(value);
}

FlagParser& FlagParser::positional(std::vector<std::string>& target) {
  positional_ = &target;
  return *this;
}

void FlagParser::parse(int argc, const char* const* argv, int first) {
  given_.clear();  // one command line: nothing counts as given before it
  for (Declared& declared : declared_) declared.values.clear();
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    if (!argument.starts_with("--")) {
      if (!positional_)
        throw InvalidInput(fmt::format("{} takes no positional arguments, got {}", command_, detail::quoted(argument)));
      positional_->push_back(argument);
      continue;
    }
    // --name=value or --name value.
    const std::size_t equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    const auto found = std::find_if(declared_.begin(), declared_.end(), [&](const Declared& d) { return d.name == name; });
    if (found == declared_.end())
      throw InvalidInput(fmt::format("unknown option {} for {} (pipeweave {} --help lists its options)", detail::printable(name),
                                     command_, command_));
    given_.push_back(name);
    if (!found->takes_value) {
      if (equals != std::string::npos)
        throw InvalidInput(fmt::format("{} takes no value, got {}", name, detail::quoted(argument)));
      if (!found->values.empty()) throw InvalidInput(fmt::format("{} given twice", name));
      found->values.emplace_back();
      found->apply({});
    } else if (equals != std::string::npos) {
      take(*found, argument.substr(equals + 1));
    } else {
      if (i + 1 >= argc) throw InvalidInput(name + " needs a value");
      take(*found, argv[++i]);
    }
  }
}

bool FlagParser::given(std::string_view name) const { return std::find(given_.begin(), given_.end(), name) != given_.end(); }

std::vector<std::string> FlagParser::names() const {
  std::vector<std::string> out;
  for (const Declared& d : declared_) out.push_back(d.name);
  return out;
}

// A decimal number, the whole text (from_chars, as parse_whole: stod took " 5" and hex "0x1p4" and
// refused "5 "), an optional '+' before it, and finite.
std::optional<double> parse_number(const std::string& text) {
  double value = 0;
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(begin, end, value, std::chars_format::general);
  if (begin == end || *begin == '+' || (begin != text.data() && *begin == '-') || error != std::errc() || stop != end ||
      !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_whole(const std::string& text) {
  std::int64_t value = 0;
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(begin, end, value);
  if (begin == end || *begin == '+' || (begin != text.data() && *begin == '-') || error != std::errc() || stop != end)
    return std::nullopt;
  return value;
}

}  // namespace pipeweave::cli
