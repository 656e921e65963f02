// The routes of environment secrets (docs/api.md, "Secrets"). Any user may call them (the route
// table); which secrets a caller may change is decided here. No answer, error or log line
// carries a value: not even a JSON syntax error, which would quote what it read.
#include <fmt/format.h>

#include "api/api_server.h"
#include "api/request_params.h"
#include "model/json.h"
#include "model/secret.h"

namespace cohort::api {
namespace {

constexpr std::string_view kSetShape = R"({"value": "...", "team": "T"} (team optional))";

Json SecretJson(const Secret& s) {
  return Json{{"name", s.name},
              {"scope", SecretScopeName(s.scope)},
              {"owner", s.owner},
              {"updated_at", FormatTimestamp(s.updated_at)}};
}

// Whose secret a request names: the caller's own, or `team`'s if it names one, which only the
// team's admins and cluster admins may change. kPermissionDenied, kNotFound for a team that
// does not exist.
StatusOr<std::pair<SecretScope, std::string>> OwnerFor(const auth::Principal& caller,
                                                       const std::string& team,
                                                       const master::Master& master) {
  if (team.empty()) return std::make_pair(SecretScope::kUser, caller.name);
  if (!auth::CanManageTeamSecrets(caller, team)) {
    return Status::PermissionDenied(
        fmt::format("{} may not change the secrets of team {}: its admins and cluster admins may",
                    caller.Describe(), team));
  }
  if (!master.teams().Exists(team)) {
    return Status::NotFound(fmt::format("team {} does not exist", team));
  }
  return std::make_pair(SecretScope::kTeam, team);
}

}  // namespace

StatusOr<HttpResponse> ApiServer::ListSecrets(const Call& call) {
  const auth::Principal& caller = call.caller;
  const master::Secrets& secrets = master_.secrets();
  Json list = Json::array();
  for (const Secret* s : secrets.List(SecretScope::kUser, caller.name)) {
    list.push_back(SecretJson(*s));
  }
  for (const Secret* s : secrets.ListTeams()) {
    if (auth::IsAdmin(caller) || caller.RoleIn(s->owner)) list.push_back(SecretJson(*s));
  }
  return JsonResponse(200, Json{{"secrets", list}});
}

StatusOr<HttpResponse> ApiServer::SetSecret(const Call& call) {
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(ValidateSecretName(name));
  auto doc = ParseJson(call.request.body);
  if (!doc.ok() || !doc->is_object()) {
    return Status::InvalidArgument(fmt::format("the body must be a JSON object: {}", kSetShape));
  }
  std::vector<std::string> problems;
  std::string value, team;
  for (const auto& [key, field] : doc->items()) {
    if (key == "value") {
      if (field.is_string()) {
        value = field.get<std::string>();
      } else {
        problems.push_back("value: must be a string");
      }
    } else if (key == "team") {
      if (field.is_string() && !field.get_ref<const std::string&>().empty()) {
        team = field.get<std::string>();
      } else {
        problems.push_back("team: must be a team's name");
      }
    } else {
      problems.push_back(fmt::format("{}: unknown field; expected {}", key, kSetShape));
    }
  }
  if (!doc->contains("value")) problems.push_back("value: required");
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid secret", std::move(problems));
  }
  COHORT_ASSIGN_OR_RETURN(auto owner, OwnerFor(call.caller, team, master_));
  COHORT_ASSIGN_OR_RETURN(auto saved,
                          master_.secrets().Set(owner.first, owner.second, name, std::move(value)));
  return JsonResponse(200, SecretJson(saved));
}

StatusOr<HttpResponse> ApiServer::DeleteSecret(const Call& call) {
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(ValidateSecretName(name));
  std::string team;
  if (auto it = call.request.query.find("team"); it != call.request.query.end()) {
    team = it->second;
  }
  COHORT_ASSIGN_OR_RETURN(auto owner, OwnerFor(call.caller, team, master_));
  COHORT_RETURN_IF_ERROR(master_.secrets().Delete(owner.first, owner.second, name));
  return JsonResponse(
      200,
      Json{{"deleted", name}, {"scope", SecretScopeName(owner.first)}, {"owner", owner.second}});
}

}  // namespace cohort::api
