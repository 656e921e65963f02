#include "api/resource_json.h"

namespace cohort::api {
namespace {

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

Json GpuSampleJson(const GpuSample& sample) {
  return Json{{"at", FormatTimestamp(sample.at)},
              {"utilization", OrNull(sample.utilization_percent)},
              {"memory_used_bytes", OrNull(sample.memory_used_bytes)}};
}

Json TaskSampleJson(const TaskSample& sample) {
  std::optional<double> cpus;
  if (sample.milli_cpus) cpus = static_cast<double>(*sample.milli_cpus) / 1000.0;
  return Json{
      {"at", FormatTimestamp(sample.at)}, {"cpus", OrNull(cpus)}, {"rss_bytes", sample.rss_bytes}};
}

Json GpuHistoryJson(const std::vector<GpuSample>& samples) {
  Json out = Json::array();
  for (const auto& s : samples) out.push_back(GpuSampleJson(s));
  return out;
}

Json TaskHistoryJson(const std::vector<TaskSample>& samples) {
  Json out = Json::array();
  for (const auto& s : samples) out.push_back(TaskSampleJson(s));
  return out;
}

void AddLatestGpuLoad(Json& gpu, const std::optional<GpuSample>& latest) {
  gpu["utilization"] = latest ? OrNull(latest->utilization_percent) : Json(nullptr);
  gpu["memory_used_bytes"] = latest ? OrNull(latest->memory_used_bytes) : Json(nullptr);
  gpu["sampled_at"] = latest ? Json(FormatTimestamp(latest->at)) : Json(nullptr);
}

}  // namespace cohort::api
