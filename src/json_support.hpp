#pragma once
// JSON helpers shared by the compiled part's readers (not installed): parsing with errors that
// say what was being read, and typed field access whose errors name the field and its value.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "pipeweave/error.hpp"

namespace pipeweave::detail {

using nlohmann::json;

// No file this library reads nests deeper than a few levels (a model's weights: 5); a document
// nested deeper is refused while it is read, before any recursive walk over it could run out of
// stack.
inline constexpr int kMaxJsonDepth = 64;

// A key twice in one object is refused too: the parser would keep the last value without a word,
// so that a spec saying "sm_count" twice would be read as whichever came second.
// The reader behind parse_json: nlohmann's tree builder, with the two checks above as the document
// is read. (nlohmann's callback parser, which took these checks before, scans the enclosing
// array or object for a discarded value each time an object ends: an array of 160,000 small
// objects, 1.3 MB, took over 10 s.) Depth is the count of open arrays and objects: refused where
// one opens, or a key or a value comes, with more than kMaxJsonDepth open around it.
class CheckedJsonReader {
 public:
  CheckedJsonReader(json& result, std::string_view what) : tree_(result, true), what_(what) {}

  bool null() { return within_depth() && tree_.null(); }
  bool boolean(bool value) { return within_depth() && tree_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return within_depth() && tree_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return within_depth() && tree_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t& text) {
    return within_depth() && tree_.number_float(value, text);
  }
  bool string(json::string_t& value) { return within_depth() && tree_.string(value); }
  bool binary(json::binary_t& value) { return within_depth() && tree_.binary(value); }
  bool start_object(std::size_t elements) {
    within_depth();
    ++open_;
    open_objects_.emplace_back();
    return tree_.start_object(elements);
  }
  bool key(json::string_t& key) {
    within_depth();
    if (!open_objects_.back().insert(key).second)
      throw InvalidInput(std::string(what_) + " gives the key " + detail::quoted(key) + " twice in one object");
    return tree_.key(key);
  }
  bool end_object() {
    --open_;
    open_objects_.pop_back();
    return tree_.end_object();
  }
  bool start_array(std::size_t elements) {
    within_depth();
    ++open_;
    return tree_.start_array(elements);
  }
  bool end_array() {
    --open_;
    return tree_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& error) {
    return tree_.parse_error(position, last_token, error);  // (throws it)
  }

 private:
  bool within_depth() const {
    if (open_ > kMaxJsonDepth)
      throw InvalidInput(std::string(what_) + " nests JSON more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<json> tree_;
  std::string_view what_;
  int open_ = 0;
  std::vector<std::unordered_set<std::string>> open_objects_;  // the keys of each object being read, innermost last
};

// The most white space (spaces, tabs, line breaks) a JSON input may hold in a row. The parser keeps
// every character it reads between two tokens, and its error message shows them, each control
// character as eight ("<U+000A>"): 250 MiB of line breaks before a malformed token took 4.5 GB and
// 25 s to the error. No file this library reads or writes has a run past a few hundred bytes.
inline constexpr std::size_t kMostWhitespaceRun = std::size_t{1} << 20;

// Refuses a run of white space longer than kMostWhitespaceRun. Such a run covers at least one of
// the positions kMostWhitespaceRun / 2 apart, so only the runs through those are measured: a
// few hundred looks at a large file, not a pass over it.
inline void check_whitespace_runs(std::string_view text, std::string_view what) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  constexpr std::size_t kStride = kMostWhitespaceRun / 2;
  for (std::size_t at = 0; at < text.size(); at += kStride) {
    if (!space(text[at])) continue;
    std::size_t begin = at, end = at + 1;
    while (begin > 0 && space(text[begin - 1])) --begin;
    while (end < text.size() && space(text[end])) ++end;
    if (end - begin > kMostWhitespaceRun)
      throw InvalidInput(std::string(what) + " is not JSON this library reads: " + std::to_string(end - begin) +
                         " bytes of white space in a row at offset " + std::to_string(begin) + " (at most " +
                         std::to_string(kMostWhitespaceRun) + ")");
    at = end - end % kStride;  // (the next position past the run; the run itself measured once)
  }
}

inline json parse_json(std::string_view text, std::string_view what) {
  // The parser reads a NUL byte as the end of the input, so that whatever followed one was never
  // read (a spec with garbage after a NUL was taken for the spec before it). JSON holds none:
  // raw, a NUL is neither whitespace nor allowed inside a string.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw InvalidInput(std::string(what) + " is not valid JSON: a NUL byte at offset " + std::to_string(nul));
  check_whitespace_runs(text, what);
  json result;
  CheckedJsonReader reader(result, what);
  try {
    json::sax_parse(text, &reader);
  } catch (const json::exception& error) {  // parse_error, and out_of_range for numbers like 1e400
    // nlohmann's message ends with the token it last read, raw: shown as printable() shows text.
    throw InvalidInput(std::string(what) + " is not valid JSON: " + printable(error.what(), 300));
  }
  return result;
}

// A JSON value as an error message quotes it: at most 80 bytes of it, as printable() shows text
// (dump() leaves DEL and UTF-8 as they are, and a cut could fall inside a character).
inline std::string excerpt(const json& value) { return printable(value.dump(), 80); }

// The most an input file may hold, and a gzip-compressed one expand to: past any file this library
// reads (a workload of 20,000 requests is a few hundred megabytes, the largest measurement CSV tens),
// and a bound on what a compressed bomb or an endless stream can ask for.
inline constexpr std::size_t kMostInflatedBytes = std::size_t{1} << 30;
// Past 256 MiB, a stream may expand at most 400 times its compressed size: the committed files
// expand 4-24 times, a workload written by e2e about 10 (one of 256 identical requests 173), while
// a bomb of zeros expands a thousand times, deflate's most (a 1.2 MB file of 400 MB took a
// gigabyte before its refusal; now at most a quarter of one).
inline constexpr std::size_t kMostInflatedRatio = 400, kInflatedRatioFrom = std::size_t{1} << 28;
// The most a file of a few kilobytes' kind may hold (read_file's most_bytes): a GPU spec, a Hugging
// Face config.json; over two thousand times the largest committed one (a calibrated spec, 7.3 KB).
inline constexpr std::size_t kMostSmallFileBytes = std::size_t{16} << 20;
// A bound in words: "1 GiB", "16 MiB".
inline std::string size_text(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 30) ? std::to_string(bytes >> 30) + " GiB" : std::to_string(bytes >> 20) + " MiB";
}

// Whether `bytes` begin as a gzip stream does (its two magic bytes).
inline bool gzip_magic(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// `compressed` (a gzip stream, or several one after another; zero bytes after the last, as gzip
// pads, are ignored) inflated; errors name `path`.
inline std::string gunzip(std::string_view compressed, const std::filesystem::path& path, std::string_view what,
                          std::size_t most_bytes = kMostInflatedBytes) {
  const auto fail = [&](const std::string& why) {
    throw InvalidInput("cannot read " + std::string(what) + " file " + path.string() + " (gzip): " + why);
  };
  struct Stream {  // the inflater's state, released however the reading ends
    z_stream z{};
    ~Stream() { inflateEnd(&z); }
  } stream;
  if (inflateInit2(&stream.z, 15 + 16) != Z_OK) throw Error("cannot read " + std::string(what) + " file " + path.string() + ": zlib");
  std::string out;
  std::array<char, 1 << 16> buffer{};
  std::size_t fed = 0;  // bytes of `compressed` handed to zlib (a uInt at a time: inputs past 4 GiB)
  const auto feed = [&] {
    stream.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + fed));
    stream.z.avail_in = static_cast<uInt>(std::min<std::size_t>(compressed.size() - fed, std::numeric_limits<uInt>::max()));
    fed += stream.z.avail_in;
  };
  feed();
  while (true) {
    stream.z.next_out = reinterpret_cast<Bytef*>(buffer.data());
    stream.z.avail_out = static_cast<uInt>(buffer.size());
    const int status = inflate(&stream.z, Z_NO_FLUSH);
    const std::size_t produced = buffer.size() - stream.z.avail_out;
    if (out.size() + produced > most_bytes)  // (checked before the text grows past it)
      fail("expands past " + size_text(most_bytes));
    if (out.size() + produced > kInflatedRatioFrom && out.size() + produced > kMostInflatedRatio * compressed.size())
      fail("expands more than " + std::to_string(kMostInflatedRatio) + " times its " + std::to_string(compressed.size()) +
           " bytes (past " + std::to_string(kInflatedRatioFrom >> 20) + " MiB): a compression bomb, not a file of this library's");
    out.append(buffer.data(), produced);
    if (stream.z.avail_in == 0 && fed < compressed.size()) feed();
    if (status == Z_STREAM_END) {
      const std::size_t left = stream.z.avail_in + (compressed.size() - fed);
      if (left == 0) break;
      const std::string_view rest(compressed.data() + compressed.size() - left, left);
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;  // gzip's zero padding
      if (!gzip_magic(rest)) fail("trailing data after the compressed stream");
      inflateReset(&stream.z);  // the next member of a multi-member file
      continue;
    }
    if (status != Z_OK && !(status == Z_BUF_ERROR && stream.z.avail_in > 0))
      fail(status == Z_BUF_ERROR ? "the stream ends early" : (stream.z.msg ? stream.z.msg : "corrupt data"));
  }
  return out;
}

// A file's text, at most `most_bytes` (inflated); gzip-compressed files (known by their first
// bytes, whatever the name) inflated. Every file this library reads is text: a NUL byte in one
// that is not gzip ends the reading there (/dev/zero was read to its gigabyte before its refusal).
// Inputs of a few kilobytes (a GPU spec, a model's config.json) take a bound of their own
// (kMostSmallFileBytes): a 261 KB gzip of a spec whose free-form calibration field held 134
// million zeros inflated to 268 MB and parsed to 5.7 GB.
inline std::string read_file(const std::filesystem::path& path, std::string_view what, std::size_t most_bytes = kMostInflatedBytes) {
  // A directory opens as a stream of nothing on Linux: said as what it is, not as empty JSON
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    throw Error("cannot read " + std::string(what) + " file " + path.string() + ": Is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot open " + std::string(what) + " file " + path.string() + (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
  // Read a piece at a time, to the same bound as an inflated file (/dev/zero, or a runaway
  // pipe, once grew without one)
  std::string bytes;
  std::array<char, 1 << 16> buffer{};
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
    const std::string_view piece(buffer.data(), static_cast<std::size_t>(in.gcount()));
    if (bytes.size() + piece.size() > most_bytes)
      throw InvalidInput("cannot read " + std::string(what) + " file " + path.string() + ": longer than " + size_text(most_bytes));
    if (const std::size_t nul = piece.find('\0'); nul != std::string_view::npos && !gzip_magic(bytes.empty() ? piece : bytes))
      throw InvalidInput("cannot read " + std::string(what) + " file " + path.string() + ": a NUL byte at offset " +
                         std::to_string(bytes.size() + nul) + " (a binary file, not text)");
    bytes.append(piece);
  }
  if (gzip_magic(bytes)) return gunzip(bytes, path, what, most_bytes);
  return bytes;
}

// Whether `value` is an integer within [least, most], checked before any narrowing: an unsigned
// value past int64 would wrap negative, 4294967428 read as an int would wrap to 132.
inline bool integer_within(const json& value, std::int64_t least, std::int64_t most) {
  if (!value.is_number_integer()) return false;
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return false;
  const std::int64_t number = value.get<std::int64_t>();
  return number >= least && number <= most;
}

// Typed access to one object's fields, with messages that name the field.
class Fields {
 public:
  Fields(const json& object, std::string prefix) : object_(object), prefix_(std::move(prefix)) {
    if (!object_.is_object()) throw InvalidInput(prefix_ + " must be a JSON object, got " + excerpt(object_));
  }
  Fields(json&&, std::string) = delete;  // it keeps a reference: a temporary would dangle
  const json& get(const std::string& key) const {
    const auto found = object_.find(key);
    if (found == object_.end()) throw InvalidInput(prefix_ + key + " is missing");
    return *found;
  }
  double number(const std::string& key) const {
    const json& value = get(key);
    if (!value.is_number()) fail_field(prefix_ + key, excerpt(value), "must be a number");
    return value.get<double>();
  }
  int integer(const std::string& key) const {
    const json& value = get(key);
    if (!integer_within(value, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()))
      fail_field(prefix_ + key, excerpt(value), "must be an integer that fits in 32 bits");
    return value.get<int>();
  }
  bool has(const std::string& key) const { return object_.contains(key); }
  // A count or a size: a whole number >= minimum (64-bit, as token counts and bytes need).
  std::int64_t whole(const std::string& key, std::int64_t minimum = 1) const {
    const json& value = get(key);
    if (!integer_within(value, minimum, std::numeric_limits<std::int64_t>::max()))
      fail_field(prefix_ + key, excerpt(value),
                 minimum == 1 ? "must be a positive integer" : "must be an integer >= " + std::to_string(minimum));
    return value.get<std::int64_t>();
  }
  std::vector<std::int64_t> wholes(const std::string& key, std::int64_t minimum = 1) const {
    const json& value = get(key);
    if (!value.is_array()) fail_field(prefix_ + key, excerpt(value), "must be an array of integers");
    std::vector<std::int64_t> out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
      const json& item = value[i];
      if (!integer_within(item, minimum, std::numeric_limits<std::int64_t>::max()))
        fail_field(prefix_ + key + "[" + std::to_string(i) + "]", excerpt(item),
                   minimum == 1 ? "must be a positive integer" : "must be an integer >= " + std::to_string(minimum));
      out.push_back(item.get<std::int64_t>());
    }
    return out;
  }
  std::string text(const std::string& key) const {
    const json& value = get(key);
    if (!value.is_string()) fail_field(prefix_ + key, excerpt(value), "must be a string");
    return value.get<std::string>();
  }
  std::vector<std::string> texts(const std::string& key) const {
    const json& value = get(key);
    if (!value.is_array()) fail_field(prefix_ + key, excerpt(value), "must be an array of strings");
    std::vector<std::string> out;
    for (const json& item : value) {
      if (!item.is_string()) fail_field(prefix_ + key, excerpt(item), "must hold only strings");
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  std::vector<float> floats(const std::string& key) const {
    const json& value = get(key);
    if (!value.is_array()) fail_field(prefix_ + key, excerpt(value), "must be an array of numbers");
    std::vector<float> out;
    out.reserve(value.size());
    for (const json& item : value) {
      if (!item.is_number()) fail_field(prefix_ + key, excerpt(item), "must hold only numbers");
      // Narrowing a double outside float's range is undefined behaviour: refuse it here.
      if (!(std::abs(item.get<double>()) <= std::numeric_limits<float>::max()))
        fail_field(prefix_ + key, excerpt(item), "must hold only numbers that fit in a float");
      out.push_back(item.get<float>());
    }
    return out;
  }
  // Typos must not pass silently: every key present must be one the format knows.
  void only(const std::vector<std::string_view>& known) const {
    for (const auto& [key, value] : object_.items()) {
      bool ok = false;
      for (std::string_view name : known) ok = ok || key == name;
      if (!ok) throw InvalidInput(prefix_ + printable(key, 60) + " is not a known field");
    }
  }

 private:
  const json& object_;
  std::string prefix_;
};

// The file's "format" and "version" (1 to `newest`, which it returns).
inline int check_format(const Fields& fields, std::string_view format, std::string_view prefix, int newest = 1) {
  if (fields.text("format") != format)
    fail_field(std::string(prefix) + "format", fields.text("format"), "must be \"" + std::string(format) + "\"");
  const int version = fields.integer("version");
  if (version < 1 || version > newest)
    fail_field(std::string(prefix) + "version", version,
               newest == 1   ? std::string("must be 1")
               : newest == 2 ? std::string("must be 1 or 2")
                             : "must be 1 to " + std::to_string(newest));
  return version;
}

}  // namespace pipeweave::detail
