#pragma once
// Plain SVG charts for the CLI's reports: no plotting dependency, readable in any browser.
#include <fmt/format.h>

#include <algorithm>
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
