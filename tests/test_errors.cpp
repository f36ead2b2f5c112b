// What kind of error each failure is: InvalidInput where the input is at fault (retrying cannot
// help), a plain Error where it is not (a file that cannot be read); both are pipeweave::Error,
// a std::runtime_error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "pipeweave/pipeweave.hpp"

namespace {

namespace pw = pipeweave;

bool is_invalid_input(const pw::Error& error) { return dynamic_cast<const pw::InvalidInput*>(&error) != nullptr; }

template <typename Call>
const char* kind_of(Call&& call) {
  try {
    call();
  } catch (const pw::Error& error) {
    return is_invalid_input(error) ? "InvalidInput" : "Error";
  }
  return "nothing";
}

}  // namespace

TEST_CASE("errors: one hierarchy, runtime_error at its root", "[errors]") {
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, pw::Error>);
  STATIC_REQUIRE(std::is_base_of_v<pw::Error, pw::InvalidInput>);
}

TEST_CASE("errors: bad input is InvalidInput, wherever it is found", "[errors]") {
  CHECK(std::string(kind_of([] { pw::parse_kernel("gemm:m=-5,n=1,k=1"); })) == "InvalidInput");
  CHECK(std::string(kind_of([] { pw::find_gpu("Voodoo5-6000"); })) == "InvalidInput");
  CHECK(std::string(kind_of([] { pw::gpu_spec_from_json("{\"format\": 3}"); })) == "InvalidInput");
  // A malformed file keeps its kind when the file's name is put before the message.
  const std::filesystem::path bad = std::filesystem::temp_directory_path() / "pipeweave_test_errors_bad_spec.json";
  std::ofstream(bad) << "{ not json";
  CHECK(std::string(kind_of([&] { pw::load_gpu_spec(bad); })) == "InvalidInput");
  std::filesystem::remove(bad);
}

TEST_CASE("errors: a file that cannot be read is an Error, not the input's fault", "[errors]") {
  const std::filesystem::path missing = std::filesystem::temp_directory_path() / "pipeweave_test_errors_no_such_file.json";
  std::filesystem::remove(missing);
  CHECK(std::string(kind_of([&] { pw::load_gpu_spec(missing); })) == "Error");
  CHECK(std::string(kind_of([&] { pw::load_mlp(missing); })) == "Error");
  try {
    pw::load_gpu_spec(missing);
  } catch (const pw::Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("cannot open GPU spec file"));  // the message as before
  }
}

TEST_CASE("errors: text from the input is printable where every byte is part of a printable UTF-8 character", "[errors]") {
  using pipeweave::detail::is_printable;
  using pipeweave::detail::printable;
  for (const std::string_view text : std::initializer_list<std::string_view>{"", "H100-SXM", "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x99\x82"}) {
    INFO(printable(text));
    CHECK(is_printable(text));
    CHECK(printable(text, text.size()) == text);
  }
  // Control characters, DEL, a lone continuation byte, an overlong form, a surrogate, a sequence cut short.
  for (const std::string_view text : std::initializer_list<std::string_view>{"a\nb", "\x7f", "\x80", "\xc0\x80", "\xed\xa0\x80", "ok\xe2\x82", std::string_view("a\0b", 3)}) {
    INFO(printable(text));
    CHECK_FALSE(is_printable(text));
    CHECK(printable(text, text.size()) != text);
  }
  // Controls that change how a message reads: C1 (U+0085, U+009F), the line and paragraph
  // separators, right-to-left marks and overrides, isolates, the Arabic letter mark, and what shows
  // as nothing (zero widths, the word joiner, a byte-order mark, a soft hyphen). Their neighbours
  // (U+00A0, U+2027, U+2030, U+205E, U+061B, U+00AE, U+FEFE, U+200A) and a dash are text.
  for (const std::string_view text : std::initializer_list<std::string_view>{"\xc2\x85", "\xc2\x9f", "a\xe2\x80\xa8" "b",
                                                                             "\xe2\x80\xa9", "\xe2\x80\x8e", "\xe2\x80\x8f",
                                                                             "H100\xe2\x80\xaeMXS", "\xe2\x80\xaa", "\xe2\x81\xa6",
                                                                             "\xe2\x81\xa9", "\xd8\x9c", "H100\xe2\x80\x8b-SXM",
                                                                             "\xe2\x80\x8d", "\xe2\x81\xa0", "\xe2\x81\xaf",
                                                                             "\xef\xbb\xbf", "\xc2\xad"}) {
    INFO(printable(text));
    CHECK_FALSE(is_printable(text));
    CHECK(printable(text, text.size()) != text);
  }
  CHECK(printable("H100\xe2\x80\xaeMXS") == "H100\\xe2\\x80\\xaeMXS");
  for (const std::string_view text : std::initializer_list<std::string_view>{"\xc2\xa0", "\xe2\x80\xa7", "\xe2\x80\xb0",
                                                                             "\xe2\x81\x9e", "\xd8\x9b", "\xe2\x80\x94",
                                                                             "\xc2\xae", "\xef\xbb\xbe", "\xe2\x80\x8a"}) {
    INFO(printable(text));
    CHECK(is_printable(text));
  }
  CHECK(printable("a\nb") == "a\\x0ab");
  CHECK(printable(std::string(300, 'x'), 4) == "xxxx... (300 bytes)");
}

TEST_CASE("errors: a number in a message shows the value it held, not six digits of it", "[errors]") {
  const auto message = [](auto value) {
    try {
      pw::detail::fail_field("field", value, "must be at most 2");
    } catch (const pw::InvalidInput& error) {
      return std::string(error.what());
    }
    return std::string("nothing thrown");
  };
  CHECK(message(2.0000001) == "field must be at most 2, got 2.0000001");
  CHECK(message(0.1 + 0.2) == "field must be at most 2, got 0.30000000000000004");
  CHECK(message(1e308) == "field must be at most 2, got 1e+308");
  CHECK(message(2.5f) == "field must be at most 2, got 2.5");
  CHECK(message(123456789) == "field must be at most 2, got 123456789");
  CHECK(message(std::string("text")) == "field must be at most 2, got text");
}
