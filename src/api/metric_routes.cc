// The routes of training metrics (docs/api.md, "Metrics"): agents ship a task's points; users
// list a job's series and read one tag as chart lines, downsampled to a bounded number of rows.
#include <fmt/format.h>

#include "api/api_server.h"
#include "api/request_params.h"
#include "model/metric.h"
#include "model/node_validation.h"

namespace cohort::api {
namespace {

Json SeriesJson(const state::MetricSeriesInfo& s) {
  return Json{{"task", s.task},
              {"tag", s.tag},
              {"points", s.points},
              {"first_step", s.first_step},
              {"last_step", s.last_step},
              {"last_value", s.last_value},
              {"last_time", s.last_wall_time}};
}

// A row as [step, time, value, min, max, count]: a chart of 10,000 rows stays small.
Json LineJson(const state::MetricLine& line) {
  Json rows = Json::array();
  for (const MetricRow& r : line.rows) {
    rows.push_back(Json::array({r.step, r.wall_time, r.value, r.min, r.max, r.count}));
  }
  return Json{{"task", line.task}, {"level", line.level}, {"points", line.points}, {"rows", rows}};
}

}  // namespace

Status ApiServer::UploadMetrics(const Call& call) {
  const std::string& node_id = call.params.at("node");
  COHORT_RETURN_IF_ERROR(CheckNodeId(node_id));
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  COHORT_ASSIGN_OR_RETURN(auto task, ParseTaskId(call.params.at("task")));
  COHORT_ASSIGN_OR_RETURN(auto points, ParseMetricBatch(call.request.body));
  master_.AppendMetrics(node_id, task, std::move(points),
                        [responder = call.responder](StatusOr<state::MetricAppendResult> result) {
                          if (!result.ok()) return SendAnswer(*responder, result.status());
                          Json body{{"stored", result->stored},
                                    {"repeated", result->repeated},
                                    {"dropped", result->dropped}};
                          if (!result->why_dropped.empty())
                            body["why_dropped"] = result->why_dropped;
                          responder->Send(JsonResponse(200, body));
                        });
  return Status::Ok();
}

StatusOr<HttpResponse> ApiServer::JobMetrics(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(const Job* job, ReadableJob(call));
  const JobId id = job->id;
  const HttpRequest& request = call.request;
  COHORT_RETURN_IF_ERROR(
      CheckQuery(request, {"tag", "task", "min_step", "max_step", "max_points"}));
  state::MetricStore& store = master_.metrics().store();
  auto tag = request.query.find("tag");
  if (tag == request.query.end()) {
    COHORT_ASSIGN_OR_RETURN(auto series, store.Series(id));
    Json list = Json::array();
    for (const auto& s : series) list.push_back(SeriesJson(s));
    return JsonResponse(200, Json{{"job_id", id}, {"series", list}});
  }
  state::MetricQuery query;
  query.job = id;
  query.tag = tag->second;
  if (auto task = request.query.find("task"); task != request.query.end()) {
    query.task = task->second;
  }
  for (auto [name, bound] :
       {std::pair{"min_step", &query.min_step}, std::pair{"max_step", &query.max_step}}) {
    if (!request.query.count(name)) continue;
    COHORT_ASSIGN_OR_RETURN(auto v, QueryInt(request, name, 0, INT64_MIN, INT64_MAX));
    *bound = v;
  }
  COHORT_ASSIGN_OR_RETURN(auto max_points, QueryInt(request, "max_points", 1000, 1,
                                                    static_cast<int64_t>(kMaxChartPoints)));
  query.max_points = static_cast<size_t>(max_points);
  COHORT_ASSIGN_OR_RETURN(auto chart, store.Read(query));
  Json list = Json::array();
  for (const auto& line : chart.lines) list.push_back(LineJson(line));
  return JsonResponse(200, Json{{"job_id", id},
                                {"tag", query.tag},
                                {"columns", {"step", "time", "value", "min", "max", "count"}},
                                {"max_points", chart.points_per_line},
                                {"lines_left_out", chart.lines_left_out},
                                {"lines", list}});
}

}  // namespace cohort::api
