#pragma once
// Reading the library's CSV inputs. for_each_csv_line is the one reader: it splits a text into
// lines and each line into cells (split_csv_line), the first line that is not blank being the
// header. Over it, the small inputs (request traces, all-reduce timings, measured iterations)
// read through for_each_csv_row, where every cell read from a data row names its file, line and
// column when it is missing or malformed; measurement files (measurements_from_csv) keep their
// own row type, whose cells parse into kernels.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipeweave/dataset.hpp"
#include "pipeweave/error.hpp"

namespace pipeweave::detail {

class CsvRow {
 public:
  // header_cells: the header's cells, empty names included (which `columns` does not hold).
  CsvRow(const std::string& source, std::size_t line_number, const std::map<std::string, std::size_t>& columns,
         std::vector<std::string> cells, std::size_t header_cells)
      : source_(source), line_number_(line_number), columns_(columns), cells_(std::move(cells)) {
    if (cells_.size() > header_cells)
      throw InvalidInput(source_ + " line " + std::to_string(line_number_) + " has " + std::to_string(cells_.size()) +
                  " cells, the header " + std::to_string(header_cells));
  }
  // It refers to the reader's header and file name: it lives only inside for_each_csv_row.
  CsvRow(const CsvRow&) = delete;
  CsvRow& operator=(const CsvRow&) = delete;

  // "<source> line N column NAME", the field name errors carry.
  std::string where(const std::string& column) const {
    return source_ + " line " + std::to_string(line_number_) + " column " + column;
  }
  const std::string& text(const std::string& column) const {
    const auto found = columns_.find(column);
    if (found == columns_.end()) throw InvalidInput(source_ + ": the header has no column " + column);
    if (found->second >= cells_.size()) throw InvalidInput(where(column) + " is missing");
    return cells_[found->second];
  }
  std::int64_t integer(const std::string& column, std::int64_t minimum,
                       std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) const {
    // from_chars, not stoll: a cell's number is the whole cell (" 5" and "+4" are not numbers
    // here, as in kernel strings and measurement files).
    const std::string& cell = text(column);
    std::int64_t parsed = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), parsed);
    if (error != std::errc() || end != cell.data() + cell.size() || cell.empty() || parsed < minimum || parsed > maximum)
      fail_field(where(column), detail::quoted(cell),
                 maximum < std::numeric_limits<std::int64_t>::max()
                     ? "must be an integer from " + std::to_string(minimum) + " to " + std::to_string(maximum)
                 : minimum == 1 ? "must be a positive integer"
                                : "must be an integer >= " + std::to_string(minimum));
    return static_cast<std::int64_t>(parsed);
  }
  double positive(const std::string& column) const {
    const std::string& cell = text(column);
    double parsed = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), parsed);
    if (error != std::errc() || end != cell.data() + cell.size() || cell.empty() || !(parsed > 0) || !std::isfinite(parsed))
      fail_field(where(column), detail::quoted(cell), "must be a positive number");
    return parsed;
  }
  // A measured time in microseconds: within what a timer reads of one kernel or iteration, the
  // bounds a measurement file's duration_us keeps (a time of 1e-300 us makes an error percentage
  // of 300 digits, one of 1e308 an infinite one).
  double measured_us(const std::string& column) const {
    const double value = positive(column);
    if (value < kLeastMeasuredUs || value > kMostMeasuredUs)
      fail_field(where(column), detail::quoted(text(column)), kMeasuredUsRequirement);
    return value;
  }
  static constexpr double kLeastMeasuredUs = 1e-3, kMostMeasuredUs = 1e11;
  static constexpr const char* kMeasuredUsRequirement = "must be within [0.001, 1e11] us";

 private:
  const std::string& source_;
  std::size_t line_number_;
  const std::map<std::string, std::size_t>& columns_;
  std::vector<std::string> cells_;
};

// Which lines a reader takes as blank, and how it treats a line's end. The small inputs take one
// trailing '\r' off and skip empty lines (a line of spaces is a row, whose cells fail to read);
// measurement files split the line as it is (split_csv_line drops a '\r' outside quotes) and
// skip lines of nothing but spaces and '\r's.
enum class CsvLines : std::uint8_t { trim_cr_skip_empty, skip_spaces };

// Calls on_header(std::vector<std::string>& cells, std::size_t line_number) for the first line
// that is not blank and on_record(std::vector<std::string>&& cells, std::size_t line_number) for
// every later one (line numbers count from 1, blank lines included), a leading UTF-8 byte-order
// mark passed over. Returns whether there was a header. Inlined into each caller: measurement
// files run to millions of lines.
// The most lines a CSV input (or a raw JSON-lines file) may hold, line breaks counted and blank
// lines included, and the bytes one line may: 2^21 lines is twenty times the largest measurement
// file (96,283 rows), and no row of any of these files is near a mebibyte. Past them a file is
// refused before any row is read (a 1.2 MB compressed file of 400 MB of rows took 7 GB and 52 s;
// one line of a gigabyte of NUL bytes 3 GB).
inline constexpr std::size_t kMostCsvLines = std::size_t{1} << 21, kMostCsvLineBytes = std::size_t{1} << 20;

// How a collector timed the kernels (a CSV row's l2, the raw device line's): after an L2 flush
// (cold), without one (warm), or back to back each call on its own weights (served).
inline bool is_l2_protocol(std::string_view l2) { return l2 == "cold" || l2 == "warm" || l2 == "served"; }

// "<subject> holds N lines, more than the 2097152 <allowed>" past kMostCsvLines.
inline void check_line_count(std::string_view text, const std::string& subject, std::string_view allowed) {
  if (const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); lines > kMostCsvLines)
    throw InvalidInput(subject + " holds " + std::to_string(lines) + " lines, more than the " + std::to_string(kMostCsvLines) + " " +
                       std::string(allowed));
}
// "<at>line N is B bytes long, more than the 1048576 <allowed>" past kMostCsvLineBytes (`at` ends
// with its own separator: "rows.csv ", or "run 2: ").
inline void check_line_length(std::string_view line, std::size_t line_number, std::string_view at, std::string_view allowed) {
  if (line.size() > kMostCsvLineBytes)
    throw InvalidInput(std::string(at) + "line " + std::to_string(line_number) + " is " + std::to_string(line.size()) +
                       " bytes long, more than the " + std::to_string(kMostCsvLineBytes) + " " + std::string(allowed));
}

template <class OnHeader, class OnRecord>
bool for_each_csv_line(std::string_view text, std::string_view source, CsvLines rule, OnHeader&& on_header, OnRecord&& on_record) {
  // A byte-order mark (spreadsheets write one before UTF-8) is no part of the first column's name.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  check_line_count(text, std::string(source), "a CSV input may: split it");
  bool header_seen = false;
  std::size_t line_number = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.size() > kMostCsvLineBytes) check_line_length(line, line_number, std::string(source) + " ", "a CSV line may");  // (the name built only then)
    if (rule == CsvLines::trim_cr_skip_empty) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
    } else if (line.find_first_not_of(" \r") == std::string_view::npos) {
      continue;
    }
    std::vector<std::string> cells = split_csv_line(line);
    if (!header_seen) {
      header_seen = true;
      on_header(cells, line_number);
    } else {
      on_record(std::move(cells), line_number);
    }
  }
  return header_seen;
}

// A header's column names, each to its index; `where` (the file and line) names a column given
// twice, which would leave the rows' cells to whichever copy a reader happened to take.
inline std::map<std::string, std::size_t> csv_columns(const std::vector<std::string>& header, std::string_view where) {
  std::map<std::string, std::size_t> columns;
  for (std::size_t i = 0; i < header.size(); ++i)  // (empty names, a spreadsheet's trailing columns, are no column)
    if (!columns.emplace(header[i], i).second && !header[i].empty())
      throw InvalidInput(std::string(where) + ": the header names the column " + detail::quoted(header[i]) + " twice");
  return columns;
}

// Calls on_row(const CsvRow&) for each data row of `text`, after checking that the header
// holds every `required` column. Blank lines are skipped; no header is an error.
template <class OnRow>
void for_each_csv_row(std::string_view text, const std::string& source, const std::vector<std::string>& required,
                      OnRow&& on_row) {
  std::map<std::string, std::size_t> columns;
  std::size_t header_cells = 0;
  const bool header_seen = for_each_csv_line(
      text, source, CsvLines::trim_cr_skip_empty,
      [&](const std::vector<std::string>& header, std::size_t line_number) {
        columns = csv_columns(header, source + ":" + std::to_string(line_number));
        header_cells = header.size();
        for (const std::string& name : required)
          if (!columns.contains(name)) throw InvalidInput(source + ": the header has no column " + name);
      },
      [&](std::vector<std::string>&& cells, std::size_t line_number) {
        on_row(CsvRow(source, line_number, columns, std::move(cells), header_cells));
      });
  if (!header_seen) throw InvalidInput(source + ": no header row");
}

}  // namespace pipeweave::detail
