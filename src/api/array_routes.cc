// Job arrays (docs/api.md, "Arrays"): an array's jobs in one answer, and killed at once. An array
// is as readable and as changeable as its first job, whose id is the array's.
#include <fmt/format.h>

#include <map>

#include "api/api_server.h"
#include "api/request_params.h"
#include "auth/principal.h"

namespace cohort::api {
namespace {

// The array's first job: what decides who may read or change it. kNotFound for an id that is no
// array's.
StatusOr<const Job*> ArrayHead(const master::Master& master, JobId array) {
  const std::vector<JobId>* ids = master.ArrayJobs(array);
  if (!ids || ids->empty()) return Status::NotFound(fmt::format("array {} does not exist", array));
  return master.GetJob(ids->front());
}

}  // namespace

StatusOr<HttpResponse> ApiServer::GetArray(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(const Job* head, ArrayHead(master_, id));
  COHORT_RETURN_IF_ERROR(CheckCanRead(call.caller, *head));
  std::map<std::string, int> states;
  Json jobs = Json::array();
  for (JobId job_id : *master_.ArrayJobs(id)) {
    COHORT_ASSIGN_OR_RETURN(const Job* job, master_.GetJob(job_id));
    ++states[JobStateName(job->state)];
    jobs.push_back({{"index", job->array->index},
                    {"job_id", job->id},
                    {"state", JobStateName(job->state)},
                    {"message", job->message}});
  }
  return JsonResponse(200, Json{{"id", id},
                                {"name", head->spec.name},
                                {"user", head->user},
                                {"team", head->spec.team},
                                {"count", head->array->count},
                                {"max_parallel", head->array->max_parallel},
                                {"states", states},
                                {"jobs", std::move(jobs)}});
}

StatusOr<HttpResponse> ApiServer::KillArray(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(const Job* head, ArrayHead(master_, id));
  if (!auth::CanChangeJob(call.caller, head->user, head->spec.team)) {
    return Status::PermissionDenied(fmt::format(
        "{} may not kill array {} of user {}: only its owner, an admin of team {} or a cluster "
        "admin may",
        call.caller.Describe(), id, head->user, head->spec.team));
  }
  COHORT_ASSIGN_OR_RETURN(auto killed, master_.KillArray(id, call.caller.Describe()));
  Json ids = Json::array();
  for (const Job* job : killed) ids.push_back(job->id);
  return JsonResponse(200, Json{{"array", id}, {"killed", std::move(ids)}});
}

}  // namespace cohort::api
