#pragma once
// Reading the library's small CSV inputs (request traces, all-reduce timings): a header row
// names the columns, and every cell read from a data row names its file, line and column
// when it is missing or malformed.
#include <cmath>
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
  CsvRow(const std::string& source, std::size_t line_number, const std::map<std::string, std::size_t>& columns,
         std::vector<std::string> cells)
      : source_(source), line_number_(line_number), columns_(columns), cells_(std::move(cells)) {
    if (cells_.size() > columns_.size())
      throw Error(source_ + " line " + std::to_string(line_number_) + " has " + std::to_string(cells_.size()) +
                  " cells, the header " + std::to_string(columns_.size()));
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
    if (found == columns_.end()) throw Error(source_ + ": the header has no column " + column);
    if (found->second >= cells_.size()) throw Error(where(column) + " is missing");
    return cells_[found->second];
  }
  std::int64_t integer(const std::string& column, std::int64_t minimum,
                       std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) const {
    const std::string& cell = text(column);
    std::size_t used = 0;
    long long parsed = minimum - 1;
    try {
      parsed = std::stoll(cell, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != cell.size() || parsed < minimum || parsed > maximum)
      fail_field(where(column), detail::quoted(cell),
                 maximum < std::numeric_limits<std::int64_t>::max()
                     ? "must be an integer from " + std::to_string(minimum) + " to " + std::to_string(maximum)
                 : minimum == 1 ? "must be a positive integer"
                                : "must be an integer >= " + std::to_string(minimum));
    return static_cast<std::int64_t>(parsed);
  }
  double positive(const std::string& column) const {
    const std::string& cell = text(column);
    std::size_t used = 0;
    double parsed = 0;
    try {
      parsed = std::stod(cell, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != cell.size() || !(parsed > 0) || !std::isfinite(parsed))
      fail_field(where(column), detail::quoted(cell), "must be a positive number");
    return parsed;
  }

 private:
  const std::string& source_;
  std::size_t line_number_;
  const std::map<std::string, std::size_t>& columns_;
  std::vector<std::string> cells_;
};

// Calls on_row(const CsvRow&) for each data row of `text`, after checking that the header
// holds every `required` column. Blank lines are skipped; no header is an error.
template <class OnRow>
void for_each_csv_row(std::string_view text, const std::string& source, const std::vector<std::string>& required,
                      OnRow&& on_row) {
  std::map<std::string, std::size_t> columns;
  std::size_t line_number = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string> cells = split_csv_line(line);
    if (columns.empty()) {
      for (std::size_t i = 0; i < cells.size(); ++i) columns[cells[i]] = i;
      for (const std::string& name : required)
        if (!columns.contains(name)) throw Error(source + ": the header has no column " + name);
      continue;
    }
    on_row(CsvRow(source, line_number, columns, std::move(cells)));
  }
  if (columns.empty()) throw Error(source + ": no header row");
}

}  // namespace pipeweave::detail
