// The sweep routes (docs/sweeps.md, "API"): a sweep is its team's as a job is: its owner, the
// members of its team and admins read it; its owner, an admin of its team and admins change it.
#include <fmt/format.h>

#include "api/api_server.h"
#include "api/request_params.h"
#include "api/sweep_json.h"
#include "auth/principal.h"
#include "model/dataset.h"
#include "sweep/sweep_spec.h"

namespace cohort::api {

namespace {

// A list answer carries each sweep's whole leaderboard (up to kMaxTrials trials): bounded by
// sweeps as well, newest first.
constexpr size_t kDefaultSweepPage = 20;
constexpr size_t kMaxSweepPage = 100;

StatusOr<SweepId> SweepIdParam(const std::string& text) {
  auto id = ParseJobId(text);  // the same form: a positive decimal integer
  if (!id.ok()) {
    return Status::InvalidArgument(
        fmt::format("sweep id \"{}\": must be a positive decimal integer", text));
  }
  return *id;
}

}  // namespace

Status ApiServer::SubmitSweep(const Call& call) {
  bool names_team = false;
  COHORT_ASSIGN_OR_RETURN(auto spec,
                          sweep::ParseSweepSpec(call.request.body, "sweep spec", &names_team));
  COHORT_RETURN_IF_ERROR(TeamForSubmission(call, spec.team, names_team).status());
  auto submit = [this, caller = call.caller](sweep::SweepSpec spec) -> StatusOr<HttpResponse> {
    COHORT_ASSIGN_OR_RETURN(const master::Sweep* sweep,
                            master_.sweeps().Submit(std::move(spec), caller.name));
    return JsonResponse(201, SweepJson(master_, *sweep, caller));
  };
  // The trials' datasets, pinned once for the whole sweep: every trial reads the same versions.
  std::vector<DatasetRef> refs;
  if (auto it = spec.trial.find("datasets"); it != spec.trial.end() && it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& text = (*it)[i];
      COHORT_ASSIGN_OR_RETURN(
          DatasetRef ref, ParseDatasetRef(text.is_string() ? text.get<std::string>() : text.dump(),
                                          fmt::format("trial.datasets[{}]", i)));
      refs.push_back(std::move(ref));
    }
  }
  if (refs.empty()) {
    SendAnswer(*call.responder, submit(std::move(spec)));
    return Status::Ok();
  }
  const std::string team = spec.team;
  return PinDatasets(call, std::move(refs), team,
                     [responder = call.responder, submit = std::move(submit),
                      spec = std::move(spec)](StatusOr<std::vector<DatasetRef>> pinned) mutable {
                       if (!pinned.ok()) return SendAnswer(*responder, pinned.status());
                       Json datasets = Json::array();
                       for (const DatasetRef& ref : *pinned) {
                         datasets.push_back(FormatDatasetRef(ref));
                       }
                       spec.trial["datasets"] = std::move(datasets);
                       SendAnswer(*responder, submit(std::move(spec)));
                     });
}

StatusOr<HttpResponse> ApiServer::ListSweeps(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"team", "user", "limit"}));
  COHORT_ASSIGN_OR_RETURN(size_t limit,
                          PageLimit(call.request, kDefaultSweepPage, kMaxSweepPage, "sweeps"));
  auto filter = [&](const char* name) {
    auto it = call.request.query.find(name);
    return it == call.request.query.end() ? std::string() : it->second;
  };
  const std::string team = filter("team"), user = filter("user");
  Json list = Json::array();
  bool more = false;
  // Newest first; only the sweeps the caller may read.
  auto all = master_.sweeps().List();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const master::Sweep& s = **it;
    if (!auth::CanReadJob(call.caller, s.user, s.team())) continue;
    if ((!team.empty() && s.team() != team) || (!user.empty() && s.user != user)) continue;
    if (list.size() == limit) {
      more = true;
      break;
    }
    list.push_back(SweepJson(master_, s, call.caller));
  }
  return JsonResponse(200, Json{{"sweeps", std::move(list)}, {"more", more}});
}

StatusOr<HttpResponse> ApiServer::GetSweep(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(SweepId id, SweepIdParam(call.params.at("id")));
  COHORT_ASSIGN_OR_RETURN(const master::Sweep* sweep, master_.sweeps().Get(id));
  if (!auth::CanReadJob(call.caller, sweep->user, sweep->team())) {
    return Status::PermissionDenied(
        fmt::format("{} may not read sweep {}: its owner {}, members of team {} and admins may",
                    call.caller.Describe(), id, sweep->user, sweep->team()));
  }
  return JsonResponse(200, SweepJson(master_, *sweep, call.caller));
}

StatusOr<SweepId> ApiServer::ChangeableSweep(const Call& call, const char* verb) {
  COHORT_ASSIGN_OR_RETURN(SweepId id, SweepIdParam(call.params.at("id")));
  COHORT_ASSIGN_OR_RETURN(const master::Sweep* sweep, master_.sweeps().Get(id));
  if (!auth::CanChangeJob(call.caller, sweep->user, sweep->team())) {
    return Status::PermissionDenied(fmt::format(
        "{} may not {} sweep {} of user {}: only its owner, an admin of team {} or a cluster "
        "admin may",
        call.caller.Describe(), verb, id, sweep->user, sweep->team()));
  }
  return id;
}

StatusOr<HttpResponse> ApiServer::KillSweep(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(SweepId id, ChangeableSweep(call, "kill"));
  COHORT_ASSIGN_OR_RETURN(auto sweep, master_.sweeps().Kill(id, call.caller.Describe()));
  return JsonResponse(200, SweepJson(master_, *sweep, call.caller));
}

StatusOr<HttpResponse> ApiServer::PauseSweep(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(SweepId id, ChangeableSweep(call, "pause"));
  COHORT_ASSIGN_OR_RETURN(auto sweep, master_.sweeps().Pause(id, call.caller.Describe()));
  return JsonResponse(200, SweepJson(master_, *sweep, call.caller));
}

StatusOr<HttpResponse> ApiServer::ResumeSweep(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(SweepId id, ChangeableSweep(call, "resume"));
  COHORT_ASSIGN_OR_RETURN(auto sweep, master_.sweeps().Resume(id, call.caller.Describe()));
  return JsonResponse(200, SweepJson(master_, *sweep, call.caller));
}

}  // namespace cohort::api
