// The typed flag parser every command uses (src/cli/flags.hpp).
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../src/cli/flags.hpp"
#include "pipeweave/error.hpp"

namespace {

using pipeweave::InvalidInput;
using pipeweave::cli::FlagParser;

// Parses `arguments` as if typed after the command name.
void parse(FlagParser& flags, std::vector<const char*> arguments) {
  arguments.insert(arguments.begin(), {"pipeweave", "test"});
  flags.parse(static_cast<int>(arguments.size()), arguments.data(), 2);
}

std::string parse_error(FlagParser& flags, std::vector<const char*> arguments) {
  try {
    parse(flags, std::move(arguments));
  } catch (const InvalidInput& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("flags: text, repeated text, switches and positional arguments, with a space or =", "[cli][flags]") {
  std::string gpu;
  std::vector<std::string> models, positional;
  bool json = false;
  FlagParser flags("predict");
  flags.text("--gpu", gpu).texts("--model", models).flag("--json", json).positional(positional);
  parse(flags, {"--gpu", "H100-SXM", "gemm:m=1,n=1,k=1", "--model=a.json", "--json", "--model", "b.json", "x"});
  CHECK(gpu == "H100-SXM");
  CHECK(models == std::vector<std::string>{"a.json", "b.json"});
  CHECK(json);
  CHECK(positional == std::vector<std::string>{"gemm:m=1,n=1,k=1", "x"});
  CHECK(flags.given("--model"));
  CHECK_FALSE(flags.given("--kernels"));
  CHECK(flags.names() == std::vector<std::string>{"--gpu", "--model", "--json"});
}

TEST_CASE("flags: a value that starts with a dash is still the flag's value", "[cli][flags]") {
  int top = 10;
  FlagParser flags("rank");
  flags.whole("--top", top, 0, 100);
  CHECK(parse_error(flags, {"--top", "-2"}) == "--top must be a whole number from 0 to 100, got \"-2\"");
}

TEST_CASE("flags: whole numbers are checked whole, in range and within int64", "[cli][flags]") {
  int runs = 1;
  std::int64_t tokens = 0;
  FlagParser flags("calibrate");
  flags.whole("--runs", runs, 1, 100).whole("--tokens", tokens, 1);
  parse(flags, {"--runs", "7", "--tokens=+9000000000"});
  CHECK(runs == 7);
  CHECK(tokens == 9000000000);
  const std::string range = "--runs must be a whole number from 1 to 100, got ";
  CHECK(parse_error(flags, {"--runs", "0"}) == range + "\"0\"");
  CHECK(parse_error(flags, {"--runs", "101"}) == range + "\"101\"");
  CHECK(parse_error(flags, {"--runs", "2.5"}) == range + "\"2.5\"");
  CHECK(parse_error(flags, {"--runs", "3x"}) == range + "\"3x\"");
  CHECK(parse_error(flags, {"--runs", ""}) == range + "\"\"");
  CHECK(parse_error(flags, {"--runs", "+-3"}) == range + "\"+-3\"");
  CHECK(parse_error(flags, {"--runs", "4294967297"}) == range + "\"4294967297\"");  // would wrap to 1 as an int
  CHECK(parse_error(flags, {"--tokens", "99999999999999999999"}) ==
        "--tokens must be a whole number >= 1, got \"99999999999999999999\"");
}

TEST_CASE("flags: numbers must be finite and pass the flag's own check", "[cli][flags]") {
  double lr = 0.001;
  std::optional<double> slowdown;
  FlagParser flags("train");
  flags
      .number(
          "--lr", lr, [](double x) { return x > 0 && x < 1; }, "must be a fraction between 0 and 1")
      .number(
          "--slowdown", slowdown, [](double x) { return x >= 1; }, "must be a factor >= 1");
  parse(flags, {"--lr", "2e-4"});
  CHECK(lr == 2e-4);
  CHECK_FALSE(slowdown);
  parse(flags, {"--slowdown=1.5"});
  CHECK(slowdown == 1.5);
  CHECK(parse_error(flags, {"--lr", "nan"}) == "--lr must be a fraction between 0 and 1, got \"nan\"");
  CHECK(parse_error(flags, {"--lr", "1e999"}) == "--lr must be a fraction between 0 and 1, got \"1e999\"");
  CHECK(parse_error(flags, {"--slowdown", "0.5"}) == "--slowdown must be a factor >= 1, got \"0.5\"");
}

TEST_CASE("flags: a number is the whole text, in decimal", "[cli][flags]") {
  using pipeweave::cli::parse_number;
  CHECK(parse_number("5") == 5.0);
  CHECK(parse_number("+5") == 5.0);
  CHECK(parse_number("-2.5") == -2.5);
  CHECK(parse_number(".5") == 0.5);
  CHECK(parse_number("1e-3") == 1e-3);
  // stod took the first two and refused the third: none is a number here
  for (const char* text : {" 5", "0x1p4", "5 ", "", "+", "+-5", "inf", "nan", "1e400", "5,0"}) {
    INFO(text);
    CHECK_FALSE(parse_number(text).has_value());
  }
}

TEST_CASE("flags: a choice names the words it takes", "[cli][flags]") {
  enum class Impl { flash2, flash3 };
  std::optional<Impl> impl;
  int head_dim = 128;
  FlagParser flags("e2e");
  flags.choice("--impl", impl, {{"flash2", Impl::flash2}, {"flash3", Impl::flash3}})
      .choice("--head-dim", head_dim, {{"64", 64}, {"128", 128}, {"256", 256}});
  parse(flags, {"--impl", "flash3", "--head-dim", "256"});
  CHECK(impl == Impl::flash3);
  CHECK(head_dim == 256);
  CHECK(parse_error(flags, {"--impl", "flash4"}) == "--impl must be flash2 or flash3, got \"flash4\"");
  CHECK(parse_error(flags, {"--head-dim", "96"}) == "--head-dim must be 64, 128 or 256, got \"96\"");
}

TEST_CASE("flags: unknown flags, missing values and stray arguments are refused by name", "[cli][flags]") {
  bool quick = false;
  std::string out;
  FlagParser flags("calibrate");
  flags.flag("--quick", quick).text("--out", out);
  CHECK(parse_error(flags, {"--fast"}) == "unknown option --fast for calibrate (pipeweave calibrate --help lists its options)");
  CHECK(parse_error(flags, {"--fast=1"}) == "unknown option --fast for calibrate (pipeweave calibrate --help lists its options)");
  CHECK(parse_error(flags, {"--out"}) == "--out needs a value");
  CHECK(parse_error(flags, {"--quick=yes"}) == "--quick takes no value, got \"--quick=yes\"");
  CHECK(parse_error(flags, {"spec.json"}) == "calibrate takes no positional arguments, got \"spec.json\"");
  // A value that is not text a terminal shows comes back escaped and cut short.
  const std::string long_flag = "--" + std::string(500, 'x');
  CHECK(parse_error(flags, {long_flag.c_str()}).size() < 250);
}

TEST_CASE("flags: a flag of one value given twice, a list's value repeated or an empty text is refused", "[cli][flags]") {
  std::string gpu;
  std::vector<std::string> models, specs;
  bool json = false;
  int top = 10;
  FlagParser flags("rank");
  flags.text("--gpu", gpu).texts("--model", models).flag("--json", json).whole("--top", top, 0, 100);
  flags.customs("--spec", [&specs](const std::string& text) { specs.push_back(text); });
  // The first value would otherwise be dropped without a word.
  CHECK(parse_error(flags, {"--gpu", "H100-SXM", "--gpu=A100-SXM4-80GB"}) ==
        "--gpu given twice (\"H100-SXM\" and \"A100-SXM4-80GB\"): it takes one value");
  CHECK(parse_error(flags, {"--top", "1", "--top", "1"}) == "--top given twice (\"1\" and \"1\"): it takes one value");
  CHECK(parse_error(flags, {"--json", "--json"}) == "--json given twice");
  // A list takes each value once: the same file twice would count its rows twice.
  CHECK(parse_error(flags, {"--model", "a.json", "--model", "a.json"}) == "--model given \"a.json\" twice");
  CHECK(parse_error(flags, {"--spec", "H100=a.json", "--spec", "H100=a.json"}) == "--spec given \"H100=a.json\" twice");
  CHECK(parse_error(flags, {"--gpu", ""}) == "--gpu needs a value, got an empty one");
  CHECK(parse_error(flags, {"--model="}) == "--model needs a value, got an empty one");
  // (a typed flag says what it takes, of an empty value as of any other)
  CHECK(parse_error(flags, {"--top="}) == "--top must be a whole number from 0 to 100, got \"\"");
  // Each parse is a command line of its own: what the one before gave does not count.
  parse(flags, {"--gpu", "H100-SXM", "--model", "a.json", "--model", "b.json", "--spec", "H100=a.json", "--spec", "H200=b.json"});
  models.clear(), specs.clear();
  parse(flags, {"--gpu", "H200-SXM", "--model", "a.json", "--json"});
  CHECK(gpu == "H200-SXM");
  CHECK(models == std::vector<std::string>{"a.json"});
  CHECK(json);
}
