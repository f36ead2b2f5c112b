#pragma once
// The exceptions pipeweave throws, and the helpers that build their messages. Every message
// about input names the offending field and the value it held, so a user can fix the input
// without reading the source.

#include <array>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace pipeweave {

// Everything pipeweave throws: a file that cannot be read or written, a tool that failed, a
// training run that diverged, and (as InvalidInput) input that is wrong.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Input that is wrong: a malformed file, a value out of range, an unknown name, options that do
// not go together. Retrying cannot help; changing the input does.
class InvalidInput : public Error {
 public:
  using Error::Error;
};

namespace detail {

// Throws `message` as the same kind of error as `error` (input at fault or not): for a caller
// that adds where the error arose (a file name, a line) to a message from below.
[[noreturn]] inline void rethrow_as(const Error& error, const std::string& message) {
  if (dynamic_cast<const InvalidInput*>(&error)) throw InvalidInput(message);
  throw Error(message);
}

// Whether a well-formed 2- or 3-byte sequence is a control that would change how a message reads:
// a C1 control (U+0080-U+009F, which some terminals act on), the line and paragraph separators
// (U+2028, U+2029: a second line), a mark that reorders the text around it (U+061C, U+200E,
// U+200F, U+202A-U+202E, U+2066-U+2069), or one that shows as nothing (U+00AD, U+200B-U+200D,
// U+2060-U+206F, U+FEFF): a name that displays as another.
inline bool is_format_control(unsigned lead, unsigned second, unsigned third) {
  if (lead == 0xC2) return second <= 0x9F || second == 0xAD;
  if (lead == 0xD8) return second == 0x9C;
  if (lead == 0xEF) return second == 0xBB && third == 0xBF;
  if (lead != 0xE2) return false;
  if (second == 0x80) return (third >= 0x8B && third <= 0x8F) || (third >= 0xA8 && third <= 0xAE);
  return second == 0x81 && third >= 0xA0 && third <= 0xAF;
}

// The length of the printable character that starts at text[at]: a well-formed UTF-8 sequence
// (Unicode table 3-7) that is not a control character (nor a format control, above); 0 where
// there is none.
inline std::size_t printable_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t index) { return index < text.size() ? static_cast<unsigned char>(text[index]) : 0u; };
  const unsigned lead = byte(at);
  std::size_t length = 1;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4;
  if (length == 1) return lead >= 0x20 && lead != 0x7F && lead < 0x80 ? 1 : 0;
  const unsigned second = byte(at + 1);
  const unsigned low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const unsigned high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  bool valid = second >= low && second <= high;
  for (std::size_t k = 2; k < length; ++k) valid = valid && byte(at + k) >= 0x80 && byte(at + k) <= 0xBF;
  if (valid && length <= 3 && is_format_control(lead, second, length == 3 ? byte(at + 2) : 0)) return 0;
  return valid ? length : 0;
}

// Whether every byte of the text is part of a printable character (printable() shows it as it is).
inline bool is_printable(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = printable_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

// Text from the input as a message shows it: at most `most` bytes of it (then how long it was),
// each control character and byte that is not part of valid UTF-8 escaped (\x0a), so that one bad
// value makes one short line of valid text however long or binary it was.
inline std::string printable(std::string_view text, std::size_t most = 120) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && i < most) {
    if (const std::size_t length = printable_length(text, i); length > 0) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      const unsigned lead = static_cast<unsigned char>(text[i]);
      out += {'\\', 'x', kHex[lead >> 4], kHex[lead & 15]};
      i += 1;
    }
  }
  if (i < text.size()) {
    out.append("... (");
    out.append(std::to_string(text.size()));
    out.append(" bytes)");
  }
  return out;
}
// The same in double quotes. Appended rather than concatenated: GCC 12 reads `"\"" + string` inlined
// here as a possibly overlapping memcpy (a false -Werror=restrict).
inline std::string quoted(std::string_view text, std::size_t most = 120) {
  std::string out(1, '"');
  out.append(printable(text, most));
  out.push_back('"');
  return out;
}

// "FIELD REQUIREMENT, got VALUE". Text from the input goes in as quoted() (or, from JSON, excerpt())
// shows it; the field and value are still shown as printable() shows them, at most 300 and 600
// bytes, so that no value, however it came, makes a message of more than a line. A floating-point
// value shows the shortest digits that read back as it (a stream's six would show 2.0000001 as 2,
// beside a requirement of at most 2).
template <typename Value>
[[noreturn]] void fail_field(std::string_view field, const Value& value, std::string_view requirement) {
  std::string shown;
  if constexpr (std::is_floating_point_v<Value>) {
    std::array<char, 64> digits{};
    shown.assign(digits.data(), std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr);
  } else {
    std::ostringstream stream;
    stream << value;
    shown = stream.str();
  }
  throw InvalidInput(printable(field, 300) + " " + std::string(requirement) + ", got " + printable(shown, 600));
}

// Positive and finite: the rule for every dimension, rate and bandwidth.
template <typename Value>
void require_positive(std::string_view field, Value value) {
  if (!(value > 0) || !std::isfinite(static_cast<double>(value))) fail_field(field, value, "must be positive and finite");
}

template <typename Value>
void require_non_negative(std::string_view field, Value value) {
  if (!(value >= 0) || !std::isfinite(static_cast<double>(value))) fail_field(field, value, "must be >= 0 and finite");
}

// A whole number past what any real input holds (a size, a count), `why` saying what bounds it.
template <typename Value>
void require_at_most(std::string_view field, Value value, long long most, std::string_view why = {}) {
  if (value > most)
    fail_field(field, value, "must be at most " + std::to_string(most) + (why.empty() ? "" : " (" + std::string(why) + ")"));
}

// The most elements a dimension of a kernel may have (tokens, rows, widths, lengths): 2^30, past
// any model's layer or context, and the bound workload files hold theirs to. A product of two
// such dimensions stays within int64, and the demand models work in doubles past that.
inline constexpr long long kMostDimension = 1LL << 30;
template <typename Value>
void require_dimension(std::string_view field, Value value) {
  require_positive(field, value);
  require_at_most(field, value, kMostDimension, "2^30, past any model's");
}

}  // namespace detail
}  // namespace pipeweave
