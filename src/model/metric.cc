#include "model/metric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/json.h"

namespace cohort {

std::string MetricBatchToJson(const std::vector<TaggedPoint>& points) {
  Json list = Json::array();
  for (const TaggedPoint& p : points) {
    list.push_back(Json{{"tag", p.tag},
                        {"step", p.point.step},
                        {"time", p.point.wall_time},
                        {"value", p.point.value}});
  }
  return Json{{"points", list}}.dump();
}

StatusOr<std::vector<TaggedPoint>> ParseMetricBatch(std::string_view body) {
  COHORT_ASSIGN_OR_RETURN(Json doc, ParseJson(body));
  if (!doc.is_object()) return Status::InvalidArgument("body: must be an object with `points`");
  for (const auto& [key, value] : doc.items()) {
    if (key != "points") {
      return Status::InvalidArgument(fmt::format("{}: unknown field (only `points`)", key));
    }
  }
  if (!doc.contains("points") || !doc["points"].is_array()) {
    return Status::InvalidArgument("points: required, a list");
  }
  const Json& list = doc["points"];
  if (list.size() > kMaxMetricBatchPoints) {
    return Status::InvalidArgument(fmt::format("points: {} of them, more than the {} of a batch",
                                               list.size(), kMaxMetricBatchPoints));
  }
  std::vector<TaggedPoint> points;
  points.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& p = list[i];
    auto field = [&](const char* name) { return fmt::format("points[{}].{}", i, name); };
    if (!p.is_object()) return Status::InvalidArgument(fmt::format("points[{}]: not an object", i));
    for (const auto& [key, value] : p.items()) {
      if (key != "tag" && key != "step" && key != "time" && key != "value") {
        return Status::InvalidArgument(
            fmt::format("{}: unknown field (tag, step, time, value)", field(key.c_str())));
      }
    }
    TaggedPoint point;
    if (!p.contains("tag") || !p["tag"].is_string()) {
      return Status::InvalidArgument(field("tag") + ": required, a string");
    }
    point.tag = p["tag"].get<std::string>();
    if (!p.contains("step") || !p["step"].is_number_integer()) {
      return Status::InvalidArgument(field("step") + ": required, an integer");
    }
    point.point.step = p["step"].get<int64_t>();
    for (const char* name : {"time", "value"}) {
      if (!p.contains(name) || !p[name].is_number()) {
        return Status::InvalidArgument(field(name) + ": required, a number");
      }
    }
    point.point.wall_time = p["time"].get<double>();
    point.point.value = p["value"].get<double>();
    points.push_back(std::move(point));
  }
  return points;
}

ChartShare ShareChart(size_t tasks, size_t max_points) {
  ChartShare share;
  share.lines = std::min(tasks, kMaxChartLines);
  share.points_per_line = std::max<size_t>(1, max_points);
  if (share.lines > 0) {
    share.points_per_line = std::min(share.points_per_line, kMaxChartPoints / share.lines);
  }
  return share;
}

}  // namespace cohort
