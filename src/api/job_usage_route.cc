// GET /api/v1/jobs/{id}/usage (docs/api.md): what the agents measured of the job's tasks in
// the last few minutes (master/resource_history.h): CPU cores and resident memory of each task
// of the current attempt, and the utilisation of its GPUs. Who may read the job may read this.
#include "api/api_server.h"
#include "api/request_params.h"
#include "api/resource_json.h"

namespace cohort::api {

StatusOr<HttpResponse> ApiServer::JobUsage(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(const Job* job, ReadableJob(call));
  const JobId id = job->id;
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  const master::ResourceHistory& history = master_.nodes().resources();
  Json tasks = Json::array();
  for (const Task& t : job->tasks) {
    std::vector<TaskSample> samples = history.Task(t.node_id, job->IdOf(t));
    Json task{{"task", t.Name()}, {"node", t.node_id},    {"state", TaskStateName(t.state)},
              {"cpus", nullptr},  {"rss_bytes", nullptr}, {"samples", TaskHistoryJson(samples)}};
    if (!samples.empty()) {
      Json latest = TaskSampleJson(samples.back());
      task["cpus"] = latest["cpus"];
      task["rss_bytes"] = latest["rss_bytes"];
    }
    Json gpus = Json::array();
    for (int index : t.gpus) {
      Json gpu{{"index", index}};
      AddLatestGpuLoad(gpu, history.LatestGpu(t.node_id, index));
      gpu["samples"] = GpuHistoryJson(history.Gpu(t.node_id, index));
      gpus.push_back(std::move(gpu));
    }
    task["gpus"] = std::move(gpus);
    tasks.push_back(std::move(task));
  }
  Json advice = Json::array();
  for (const master::Advice& a : master_.AdviceFor(id)) {
    advice.push_back(Json{{"kind", a.kind == master::AdviceKind::kIdle ? "idle" : "starved"},
                          {"text", a.text},
                          {"since", FormatTimestamp(a.since)}});
  }
  return JsonResponse(200, Json{{"job_id", id},
                                {"attempt", job->attempt},
                                {"tasks", std::move(tasks)},
                                {"advice", std::move(advice)}});
}

}  // namespace cohort::api
