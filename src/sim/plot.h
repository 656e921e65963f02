// Self-contained SVG line charts for simulation reports: readable in any browser, no other tool.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/simulator.h"

namespace cohort::sim {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool step = false;  // a step function (value holds until the next point)
  int width = 900;
  int height = 480;
};

std::string LineChart(const std::vector<Series>& series, const ChartOptions& options);

// The three charts of a run, one series per policy.
std::string UtilizationChart(const std::vector<SimResult>& runs);
std::string QueueChart(const std::vector<SimResult>& runs);
std::string CompletionTimeCdf(const std::vector<SimResult>& runs);

}  // namespace cohort::sim
