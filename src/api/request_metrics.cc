#include "api/request_metrics.h"

#include <fmt/format.h>

#include <array>

namespace cohort::api {
namespace {

constexpr std::string_view kFamily = "cohort_api_request_duration_seconds";

// A method as labelled: one of HTTP's, else "other" (a client may send any token as a method).
std::string_view MethodLabel(std::string_view method) {
  static constexpr std::array<std::string_view, 9> kMethods = {
      "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"};
  for (std::string_view known : kMethods) {
    if (method == known) return known;
  }
  return "other";
}

// "2xx"; a status outside 100-599 cannot come from the API, but would still be one label.
std::string StatusClass(int status) {
  if (status < 100 || status > 599) return "other";
  return fmt::format("{}xx", status / 100);
}

}  // namespace

const std::vector<double>& RequestBucketsSeconds() {
  static const std::vector<double> buckets = [] {
    std::vector<double> b = kLatencyBucketsSeconds;
    b.push_back(30);
    b.push_back(60);
    return b;
  }();
  return buckets;
}

void RequestMetrics::Observe(std::string_view route, std::string_view method, int status,
                             Duration took) {
  auto key =
      std::make_tuple(std::string(route), std::string(MethodLabel(method)), StatusClass(status));
  auto it = by_label_.find(key);
  if (it == by_label_.end()) it = by_label_.emplace(key, Histogram(RequestBucketsSeconds())).first;
  it->second.Observe(took);
}

void RequestMetrics::Write(PrometheusText& out) const {
  out.Family(kFamily, MetricType::kHistogram,
             "Time from a request's arrival at the API to the start of its answer, by route "
             "pattern, method and status class.");
  for (const auto& [key, histogram] : by_label_) {
    const auto& [route, method, code] = key;
    out.HistogramSamples(kFamily, {{"route", route}, {"method", method}, {"code", code}},
                         histogram);
  }
}

}  // namespace cohort::api
