#include "sim/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace cohort::sim {
namespace {

constexpr std::array<const char*, 8> kColors = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

// Round tick steps: 1, 2 or 5 times a power of ten.
double NiceStep(double range, int ticks) {
  double raw = range / std::max(ticks, 1);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string Label(double v) {
  if (std::fabs(v) >= 1000) return fmt::format("{:.0f}", v);
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

// At most `limit` points, keeping the shape of a step function.
std::vector<std::pair<double, double>> Thin(const std::vector<std::pair<double, double>>& points,
                                            size_t limit) {
  if (points.size() <= limit) return points;
  std::vector<std::pair<double, double>> out;
  double x0 = points.front().first, x1 = points.back().first;
  size_t j = 0;
  for (size_t i = 0; i < limit; ++i) {
    double x = x0 + (x1 - x0) * static_cast<double>(i) / static_cast<double>(limit - 1);
    while (j + 1 < points.size() && points[j + 1].first <= x) ++j;
    out.emplace_back(x, points[j].second);
  }
  return out;
}

}  // namespace

std::string LineChart(const std::vector<Series>& series, const ChartOptions& o) {
  const double left = 70, right = 20, top = 40, bottom = 60;
  const double w = o.width - left - right, h = o.height - top - bottom;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
  double ymin = 0, ymax = -std::numeric_limits<double>::infinity();
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (o.log_x && x <= 0) continue;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  if (std::isinf(xmin)) {
    xmin = 0;
    xmax = 1;
  }
  if (ymax <= ymin) ymax = ymin + 1;
  if (xmax <= xmin) xmax = xmin + 1;
  auto fx = [&](double x) {
    if (o.log_x) {
      return left + w * (std::log10(x) - std::log10(xmin)) / (std::log10(xmax) - std::log10(xmin));
    }
    return left + w * (x - xmin) / (xmax - xmin);
  };
  auto fy = [&](double y) { return top + h - h * (y - ymin) / (ymax - ymin); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n",
      o.width, o.height, o.width / 2, Escape(o.title));
  // Axes and grid.
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#444\"/>\n",
      left, top, w, h);
  double ystep = NiceStep(ymax - ymin, 6);
  for (double y = ymin; y <= ymax + 1e-9; y += ystep) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        left, left + w, fy(y), fy(y), left - 6, fy(y) + 4, Label(y));
  }
  if (o.log_x) {
    for (double d = std::pow(10, std::floor(std::log10(xmin))); d <= xmax * 1.0001; d *= 10) {
      if (d < xmin) continue;
      svg += fmt::format(
          "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
          fx(d), fx(d), top, top + h, fx(d), top + h + 16, Label(d));
    }
  } else {
    double xstep = NiceStep(xmax - xmin, 8);
    for (double x = std::ceil(xmin / xstep) * xstep; x <= xmax + 1e-9; x += xstep) {
      svg += fmt::format(
          "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
          fx(x), fx(x), top, top + h, fx(x), top + h + 16, Label(x));
    }
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + w / 2,
                     o.height - 18, Escape(o.x_label));
  svg += fmt::format(
      "<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
      top + h / 2, top + h / 2, Escape(o.y_label));
  // Series and legend.
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kColors[i % kColors.size()];
    std::string points;
    double last_y = 0;
    bool first = true;
    for (const auto& [x, y] : Thin(series[i].points, 2000)) {
      if (o.log_x && x <= 0) continue;
      if (o.step && !first) points += fmt::format("{:.1f},{:.1f} ", fx(x), fy(last_y));
      points += fmt::format("{:.1f},{:.1f} ", fx(x), fy(y));
      last_y = y;
      first = false;
    }
    svg +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                    color, points);
    double ly = top + 14 + 16 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>"
        "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        left + 10, left + 30, ly, ly, color, left + 36, ly + 4, Escape(series[i].name));
  }
  svg += "</svg>\n";
  return svg;
}

std::string UtilizationChart(const std::vector<SimResult>& runs) {
  std::vector<Series> series;
  for (const auto& r : runs) {
    Series s{r.label, {}};
    for (const auto& p : r.samples) {
      s.points.emplace_back(p.time / 3600, r.capacity_gpus
                                               ? 100.0 * static_cast<double>(p.used_gpus) /
                                                     static_cast<double>(r.capacity_gpus)
                                               : 0);
    }
    series.push_back(std::move(s));
  }
  return LineChart(series, ChartOptions{"GPU utilisation over time", "time (hours)",
                                        "GPUs allocated (%)", false, true});
}

std::string QueueChart(const std::vector<SimResult>& runs) {
  std::vector<Series> series;
  for (const auto& r : runs) {
    Series s{r.label, {}};
    for (const auto& p : r.samples) {
      s.points.emplace_back(p.time / 3600, static_cast<double>(p.waiting_jobs));
    }
    series.push_back(std::move(s));
  }
  return LineChart(
      series, ChartOptions{"Waiting jobs over time", "time (hours)", "jobs waiting", false, true});
}

std::string CompletionTimeCdf(const std::vector<SimResult>& runs) {
  std::vector<Series> series;
  for (const auto& r : runs) {
    std::vector<double> jct;
    for (const auto& j : r.jobs) {
      // Trials are their sweep's, not jobs of their own (Summarize).
      if (j.end >= 0 && !j.failed && j.sweep.empty()) {
        jct.push_back(std::max(1.0, j.end - j.submit) / 3600);
      }
    }
    std::sort(jct.begin(), jct.end());
    Series s{r.label, {}};
    for (size_t i = 0; i < jct.size(); ++i) {
      s.points.emplace_back(jct[i],
                            100.0 * static_cast<double>(i + 1) / static_cast<double>(jct.size()));
    }
    series.push_back(std::move(s));
  }
  return LineChart(series, ChartOptions{"Job completion time (CDF)",
                                        "completion time, submission to end (hours, log scale)",
                                        "jobs completed within (%)", true, false});
}

}  // namespace cohort::sim
