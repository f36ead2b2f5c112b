#pragma once
// Plain SVG charts for the CLI's reports: no plotting dependency, readable in any browser.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <string>
#include <vector>

namespace pipeweave::cli::svg {

inline std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A document's opening: a white page of width x height with the title, and a framed plot area.
inline std::string open_plot(const std::string& title, int width, int height, int left, int top, int plot_width, int plot_height) {
  return fmt::format(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"14\">{}</text>\n",
             width, height, escape(title)) +
         fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", left, top, plot_width,
                     plot_height);
}

struct Bar {
  std::string label;
  double value;
  std::string note;  // printed after the bar
};

// Horizontal bars on a linear axis from 0, with a dashed reference line (e.g. 1.0 = the peak).
inline std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, double reference) {
  constexpr int kLabelWidth = 190, kPlotWidth = 420, kNoteWidth = 330, kRow = 26, kTop = 44;
  double axis_max = reference;
  for (const Bar& bar : bars) axis_max = std::max(axis_max, bar.value);
  axis_max *= 1.05;
  const int height = kTop + kRow * static_cast<int>(bars.size()) + 30;
  const int width = kLabelWidth + kPlotWidth + kNoteWidth;
  auto x = [&](double value) { return kLabelWidth + value / axis_max * kPlotWidth; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"14\">{}</text>\n",
      width, height, escape(title));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& bar = bars[i];
    const int y = kTop + kRow * static_cast<int>(i);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8, y + 15, escape(bar.label));
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"18\" fill=\"#4878a8\"/>\n", kLabelWidth, y + 2,
                       x(bar.value) - kLabelWidth);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>\n", x(bar.value) + 6, y + 15, escape(bar.note));
  }
  const int bottom = kTop + kRow * static_cast<int>(bars.size());
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#c03030\" stroke-dasharray=\"4 3\"/>\n",
                     x(reference), kTop - 4, bottom + 4);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#c03030\">{:g}</text>\n", x(reference),
                     bottom + 20, reference);
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", kLabelWidth, kTop - 4, bottom + 4);
  return out + "</svg>\n";
}

}  // namespace pipeweave::cli::svg

namespace pipeweave::cli::svg {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0
};

// Log-log scatter of y against x with the y = x diagonal, one colour per series.
inline std::string scatter_log_log(const std::string& title, const std::string& x_label, const std::string& y_label,
                                   const std::vector<Series>& series) {
  constexpr int kSize = 520, kLeft = 70, kTop = 40, kLegend = 180;
  constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  double low = 1e300, high = 0;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) low = std::min({low, x, y}), high = std::max({high, x, y});
  if (!(high > 0)) low = 1, high = 10;
  const double log_low = std::floor(std::log10(low)), log_high = std::max(log_low + 1, std::ceil(std::log10(high)));
  auto at = [&](double value) { return (std::log10(value) - log_low) / (log_high - log_low) * kSize; };
  std::string out = open_plot(title, kLeft + kSize + kLegend, kTop + kSize + 50, kLeft, kTop, kSize, kSize);
  for (double decade = log_low; decade <= log_high; ++decade) {
    const double p = (decade - log_low) / (log_high - log_low) * kSize;
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n", kLeft + p, kTop, kTop + kSize);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n", kLeft, kTop + kSize - p, kLeft + kSize);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">1e{:g}</text>\n", kLeft + p, kTop + kSize + 16, decade);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{:g}</text>\n", kLeft - 4, kTop + kSize - p + 4, decade);
  }
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n", kLeft, kTop + kSize,
                     kLeft + kSize, kTop);
  for (std::size_t s = 0; s < series.size(); ++s) {
    const char* colour = kColours[s % std::size(kColours)];
    for (const auto& [x, y] : series[s].points)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"1.6\" fill=\"{}\" fill-opacity=\"0.5\"/>\n", kLeft + at(x),
                         kTop + kSize - at(y), colour);
    out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{} ({} rows)</text>\n",
                       kLeft + kSize + 20, kTop + 20 + 20 * s, colour, kLeft + kSize + 30, kTop + 24 + 20 * s,
                       escape(series[s].name), series[s].points.size());
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + kSize / 2, kTop + kSize + 36, escape(x_label));
  out += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
                     kTop + kSize / 2, kTop + kSize / 2, escape(y_label));
  return out + "</svg>\n";
}

// Points of y (log scale) against a linear x, one colour per series: e.g. each iteration's time.
inline std::string timeline(const std::string& title, const std::string& x_label, const std::string& y_label,
                            const std::vector<Series>& series) {
  constexpr int kWidth = 720, kHeight = 360, kLeft = 70, kTop = 40, kLegend = 140;
  constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  double x_high = 1, y_low = 1e300, y_high = 0;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) x_high = std::max(x_high, x), y_low = std::min(y_low, y), y_high = std::max(y_high, y);
  if (!(y_high > 0)) y_low = 1, y_high = 10;
  const double log_low = std::floor(std::log10(y_low)), log_high = std::max(log_low + 1, std::ceil(std::log10(y_high)));
  auto px = [&](double x) { return kLeft + x / x_high * kWidth; };
  auto py = [&](double y) { return kTop + kHeight - (std::log10(y) - log_low) / (log_high - log_low) * kHeight; };
  std::string out = open_plot(title, kLeft + kWidth + kLegend, kTop + kHeight + 50, kLeft, kTop, kWidth, kHeight);
  for (double decade = log_low; decade <= log_high; ++decade) {
    const double y = py(std::pow(10.0, decade));
    out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kLeft, y, kLeft + kWidth, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{:g}</text>\n", kLeft - 4, y + 4, decade);
  }
  for (int tick = 0; tick <= 4; ++tick) {
    const double x = x_high * tick / 4;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f}</text>\n", px(x), kTop + kHeight + 16, x);
  }
  for (std::size_t s = 0; s < series.size(); ++s) {
    const char* colour = kColours[s % std::size(kColours)];
    for (const auto& [x, y] : series[s].points)
      if (y > 0) out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2\" fill=\"{}\"/>\n", px(x), py(y), colour);
    out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{} ({})</text>\n", kLeft + kWidth + 20,
                       kTop + 20 + 20 * s, colour, kLeft + kWidth + 30, kTop + 24 + 20 * s, escape(series[s].name),
                       series[s].points.size());
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + kWidth / 2, kTop + kHeight + 36, escape(x_label));
  out += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
                     kTop + kHeight / 2, kTop + kHeight / 2, escape(y_label));
  return out + "</svg>\n";
}

}  // namespace pipeweave::cli::svg
