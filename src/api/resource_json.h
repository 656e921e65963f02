// The API's JSON of what agents measured of GPUs and tasks (docs/api.md): in GET
// /api/v1/nodes and GET /api/v1/jobs/{id}/usage. An unknown figure is null, never 0.
#pragma once

#include <optional>
#include <vector>

#include "master/resource_history.h"
#include "model/json.h"

namespace cohort::api {

// {"at", "utilization" (percent), "memory_used_bytes"}.
Json GpuSampleJson(const GpuSample& sample);
// {"at", "cpus" (cores, e.g. 0.95), "rss_bytes"}.
Json TaskSampleJson(const TaskSample& sample);
// Oldest first.
Json GpuHistoryJson(const std::vector<GpuSample>& samples);
Json TaskHistoryJson(const std::vector<TaskSample>& samples);
// Adds "utilization", "memory_used_bytes" and "sampled_at" of the newest sample (null when
// there is none) to a GPU's object.
void AddLatestGpuLoad(Json& gpu, const std::optional<GpuSample>& latest);

}  // namespace cohort::api
