// The routes of users, team members and tokens (docs/api.md, "Users and tokens"). Who may call
// each is in the route table (api_server.cc) and, for what depends on the target, here.
#include <fmt/format.h>

#include "api/api_server.h"
#include "api/request_params.h"
#include "common/units.h"
#include "model/json.h"

namespace cohort::api {
namespace {

Json OptionalTime(const std::optional<Timestamp>& t) {
  return t ? Json(FormatTimestamp(*t)) : Json(nullptr);
}

Json UserJson(const User& u) {
  Json teams = Json::object();
  for (const auto& [team, role] : u.teams) teams[team] = TeamRoleName(role);
  return Json{{"name", u.name},
              {"admin", u.admin},
              {"teams", teams},
              {"uid", u.uid ? Json(*u.uid) : Json(nullptr)},
              {"gid", u.gid ? Json(*u.gid) : Json(nullptr)},
              {"default_team", u.default_team ? Json(*u.default_team) : Json(nullptr)},
              {"created_at", FormatTimestamp(u.created_at)}};
}

Json TokenJson(const TokenRecord& t, Timestamp now) {
  return Json{{"id", t.id},
              {"kind", TokenKindName(t.kind)},
              {"subject", t.subject},
              {"description", t.description},
              {"created_at", FormatTimestamp(t.created_at)},
              {"expires_at", OptionalTime(t.expires_at)},
              {"revoked_at", OptionalTime(t.revoked_at)},
              {"valid", t.ValidAt(now)}};
}

// The body as an object whose keys are all in `allowed`; InvalidArgument naming each stranger.
StatusOr<Json> ObjectBody(const HttpRequest& request,
                          std::initializer_list<std::string_view> allowed, std::string_view shape) {
  Json doc = Json::object();
  if (!request.body.empty()) {
    COHORT_ASSIGN_OR_RETURN(doc, ParseJson(request.body));
  }
  if (!doc.is_object()) {
    return Status::InvalidArgument(fmt::format("the body must be an object: {}", shape));
  }
  std::vector<std::string> problems;
  for (const auto& [key, value] : doc.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      problems.push_back(fmt::format("{}: unknown field; expected {}", key, shape));
    }
  }
  if (!problems.empty()) return Status::InvalidArgument("invalid body", problems);
  return doc;
}

// An optional Unix id field: absent, null (back to the account by name) or an integer.
Status ReadUnixId(const Json& doc, const char* key, std::optional<std::optional<int64_t>>& out) {
  auto it = doc.find(key);
  if (it == doc.end()) return Status::Ok();
  if (it->is_null()) {
    out = std::optional<int64_t>();
  } else if (it->is_number_integer()) {
    out = std::optional<int64_t>(it->get<int64_t>());
  } else {
    return Status::InvalidArgument(fmt::format("{}: must be an integer or null", key));
  }
  return Status::Ok();
}

// The default team field: absent, null (their jobs' team chosen by auth::TeamForJobs) or a team.
Status ReadDefaultTeam(const Json& doc, std::optional<std::optional<std::string>>& out) {
  auto it = doc.find("default_team");
  if (it == doc.end()) return Status::Ok();
  if (it->is_null()) {
    out = std::optional<std::string>();
  } else if (it->is_string()) {
    out = std::optional<std::string>(it->get<std::string>());
  } else {
    return Status::InvalidArgument("default_team: must be a team name or null");
  }
  return Status::Ok();
}

Status ReadBool(const Json& doc, const char* key, std::optional<bool>& out) {
  auto it = doc.find(key);
  if (it == doc.end()) return Status::Ok();
  if (!it->is_boolean())
    return Status::InvalidArgument(fmt::format("{}: must be true or false", key));
  out = it->get<bool>();
  return Status::Ok();
}

StatusOr<TeamRole> ReadRole(const Json& value, std::string_view field) {
  auto role = value.is_string() ? ParseTeamRole(value.get<std::string>()) : std::nullopt;
  if (!role) {
    return Status::InvalidArgument(
        fmt::format("{}: must be one of {}", field, NameList(kTeamRoleNames, ", ")));
  }
  return *role;
}

}  // namespace

StatusOr<HttpResponse> ApiServer::WhoAmI(const Call& call) {
  const auth::Principal& p = call.caller;
  Json teams = Json::object();
  for (const auto& [team, role] : p.teams) teams[team] = TeamRoleName(role);
  // Where a job that names no team goes, or why none would (what to ask an admin for).
  auto job_team = auth::TeamForJobs(p, master::kDefaultTeam);
  Json answer{
      {"name", p.name},
      {"admin", p.admin},
      {"teams", teams},
      {"default_team", p.default_team ? Json(*p.default_team) : Json(nullptr)},
      {"job_team", job_team.ok() ? Json(*job_team) : Json(nullptr)},
      {"job_team_problem", job_team.ok() ? Json(nullptr) : Json(job_team.status().message())},
      {"token_id", p.token_id}};
  // Called with a dashboard session: when it ends, for the page to say so.
  if (const auth::Session* session = sessions_.Find(p.token_id)) {
    answer["session_expires_at"] = FormatTimestamp(session->expires_at);
  }
  return JsonResponse(200, answer);
}

StatusOr<HttpResponse> ApiServer::ListUsers(const Call& call) {
  Json users = Json::array();
  for (const auto& u : master_.accounts().ListUsers()) users.push_back(UserJson(u));
  return JsonResponse(200, Json{{"users", users}});
}

StatusOr<HttpResponse> ApiServer::CreateUser(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(
      auto doc, ObjectBody(call.request, {"name", "admin", "teams", "uid", "gid"},
                           "{\"name\": ..., \"admin\": false, \"teams\": {\"team\": \"member\"}, "
                           "\"uid\": N, \"gid\": N}"));
  User user;
  std::vector<std::string> problems;
  if (auto it = doc.find("name"); it == doc.end() || !it->is_string()) {
    problems.push_back("name: required, a string");
  } else {
    user.name = it->get<std::string>();
  }
  std::optional<bool> admin;
  std::optional<std::optional<int64_t>> uid, gid;
  for (Status s :
       {ReadBool(doc, "admin", admin), ReadUnixId(doc, "uid", uid), ReadUnixId(doc, "gid", gid)}) {
    if (!s.ok()) problems.push_back(s.message());
  }
  user.admin = admin.value_or(false);
  if (uid) user.uid = *uid;
  if (gid) user.gid = *gid;
  if (auto it = doc.find("teams"); it != doc.end()) {
    if (!it->is_object()) {
      problems.push_back("teams: must be an object of team: role");
    } else {
      for (const auto& [team, role] : it->items()) {
        auto r = ReadRole(role, "teams." + team);
        if (!r.ok()) {
          problems.push_back(r.status().message());
        } else if (!master_.teams().Exists(team)) {
          problems.push_back(fmt::format(
              "teams.{}: no such team; an admin creates it with: cohort team set {} --gpus N", team,
              team));
        } else {
          user.teams[team] = *r;
        }
      }
    }
  } else {
    // Without teams, a new user may use the default team, as everyone could before.
    user.teams[master::kDefaultTeam] = TeamRole::kMember;
  }
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid user", problems);
  }
  COHORT_ASSIGN_OR_RETURN(auto created, master_.accounts().CreateUser(std::move(user)));
  return JsonResponse(201, UserJson(created));
}

StatusOr<HttpResponse> ApiServer::GetUser(const Call& call) {
  const std::string& name = call.params.at("name");
  if (!auth::IsAdmin(call.caller) && call.caller.name != name) {
    return Status::PermissionDenied(
        fmt::format("{} may not read user {}: users read themselves, admins everyone",
                    call.caller.Describe(), name));
  }
  const User* user = master_.accounts().FindUser(name);
  if (!user) {
    return Status::NotFound(fmt::format("user {} does not exist", name));
  }
  return JsonResponse(200, UserJson(*user));
}

StatusOr<HttpResponse> ApiServer::UpdateUser(const Call& call) {
  const std::string& name = call.params.at("name");
  COHORT_ASSIGN_OR_RETURN(auto doc,
                          ObjectBody(call.request, {"admin", "uid", "gid", "default_team"},
                                     "{\"admin\": true|false, \"uid\": N|null, \"gid\": N|null, "
                                     "\"default_team\": TEAM|null}"));
  master::UserChange change;
  std::vector<std::string> problems;
  for (Status s : {ReadBool(doc, "admin", change.admin), ReadUnixId(doc, "uid", change.uid),
                   ReadUnixId(doc, "gid", change.gid), ReadDefaultTeam(doc, change.default_team)}) {
    if (!s.ok()) problems.push_back(s.message());
  }
  if (change.default_team && *change.default_team &&
      !master_.teams().Exists(**change.default_team)) {
    problems.push_back(fmt::format(
        "default_team: no such team {}; an admin creates it with: cohort team set {} --gpus N",
        **change.default_team, **change.default_team));
  }
  if (change.admin == false && name == call.caller.name) {
    problems.push_back("admin: an admin cannot take away their own admin right");
  }
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid change", problems);
  }
  COHORT_ASSIGN_OR_RETURN(auto updated, master_.accounts().UpdateUser(name, change));
  return JsonResponse(200, UserJson(updated));
}

StatusOr<HttpResponse> ApiServer::DeleteUser(const Call& call) {
  const std::string& name = call.params.at("name");
  if (name == call.caller.name) {
    return Status::FailedPrecondition("an admin cannot delete themselves; another admin can");
  }
  // Their secrets first: a user created later under the same name must not find them.
  COHORT_RETURN_IF_ERROR(master_.secrets().DeleteAll(SecretScope::kUser, name));
  COHORT_RETURN_IF_ERROR(master_.accounts().DeleteUser(name));
  // Sessions live in memory only; a user created later under the same name must not find them.
  sessions_.RevokeUser(name, master_.Now());
  return JsonResponse(200, Json{{"deleted", name}});
}

StatusOr<HttpResponse> ApiServer::ListMembers(const Call& call) {
  const std::string& team = call.params.at("name");
  if (!master_.teams().Exists(team)) {
    return Status::NotFound(fmt::format("team {} does not exist", team));
  }
  Json members = Json::array();
  for (const auto& u : master_.accounts().ListUsers()) {
    if (auto it = u.teams.find(team); it != u.teams.end()) {
      members.push_back(Json{{"user", u.name}, {"role", TeamRoleName(it->second)}});
    }
  }
  return JsonResponse(200, Json{{"team", team}, {"members", members}});
}

StatusOr<HttpResponse> ApiServer::SetMember(const Call& call) {
  const std::string& team = call.params.at("name");
  const std::string& user = call.params.at("user");
  if (!auth::CanManageMembers(call.caller, team)) {
    return Status::PermissionDenied(
        fmt::format("{} may not change the members of team {}: its admins and cluster admins may",
                    call.caller.Describe(), team));
  }
  COHORT_ASSIGN_OR_RETURN(
      auto doc, ObjectBody(call.request, {"role"}, "{\"role\": \"viewer\"|\"member\"|\"admin\"}"));
  COHORT_ASSIGN_OR_RETURN(auto role,
                          ReadRole(doc.contains("role") ? doc["role"] : Json("member"), "role"));
  if (!master_.teams().Exists(team)) {
    return Status::NotFound(
        fmt::format("team {} does not exist; an admin creates it with: cohort team set {} --gpus N",
                    team, team));
  }
  COHORT_ASSIGN_OR_RETURN(auto updated, master_.accounts().SetTeamRole(user, team, role));
  return JsonResponse(200, UserJson(updated));
}

StatusOr<HttpResponse> ApiServer::RemoveMember(const Call& call) {
  const std::string& team = call.params.at("name");
  const std::string& user = call.params.at("user");
  if (!auth::CanManageMembers(call.caller, team)) {
    return Status::PermissionDenied(
        fmt::format("{} may not change the members of team {}: its admins and cluster admins may",
                    call.caller.Describe(), team));
  }
  COHORT_ASSIGN_OR_RETURN(auto updated, master_.accounts().SetTeamRole(user, team, std::nullopt));
  return JsonResponse(200, UserJson(updated));
}

StatusOr<HttpResponse> ApiServer::ListTokens(const Call& call) {
  Timestamp now = master_.Now();
  std::string only;  // a user's own, unless an admin asks for all (or one user's)
  if (auto it = call.request.query.find("user"); it != call.request.query.end()) only = it->second;
  if (!auth::IsAdmin(call.caller)) {
    if (!only.empty() && only != call.caller.name) {
      return Status::PermissionDenied(
          fmt::format("{} may list only their own tokens", call.caller.Describe()));
    }
    only = call.caller.name;
  }
  Json tokens = Json::array();
  for (const auto& t : master_.accounts().ListTokens()) {
    bool mine = t.kind == TokenKind::kUser && t.subject == only;
    if (only.empty() || mine) tokens.push_back(TokenJson(t, now));
  }
  return JsonResponse(200, Json{{"tokens", tokens}});
}

StatusOr<HttpResponse> ApiServer::CreateToken(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(
      auto doc, ObjectBody(call.request, {"user", "kind", "description", "expires_in"},
                           "{\"user\": ..., \"kind\": \"user\"|\"join\", \"description\": ..., "
                           "\"expires_in\": \"30d\"}"));
  std::vector<std::string> problems;
  auto text = [&](const char* key, std::string fallback) {
    auto it = doc.find(key);
    if (it == doc.end()) return fallback;
    if (!it->is_string()) {
      problems.push_back(fmt::format("{}: must be a string", key));
      return fallback;
    }
    return it->get<std::string>();
  };
  std::string user = text("user", call.caller.name);
  std::string kind_name = text("kind", "user");
  std::string description = text("description", "");
  std::string expires = text("expires_in", "");
  auto kind = ParseTokenKind(kind_name);
  if (!kind || *kind == TokenKind::kNode) {
    problems.push_back(fmt::format(
        "kind: \"{}\" is not a kind of token to make: use user or join (a node gets its "
        "credential when it joins)",
        kind_name));
  }
  std::optional<Duration> ttl;
  if (!expires.empty()) {
    auto d = ParseDuration(expires);
    if (!d.ok()) {
      problems.push_back("expires_in: " + d.status().message());
    } else {
      ttl = *d;
    }
  }
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid token", problems);
  }
  bool join = *kind == TokenKind::kJoin;
  if ((join || user != call.caller.name) && !auth::IsAdmin(call.caller)) {
    return Status::PermissionDenied(fmt::format(
        "{} may make tokens only for themselves; an admin makes join tokens and others' tokens",
        call.caller.Describe()));
  }
  COHORT_ASSIGN_OR_RETURN(auto issued, master_.accounts().Issue(*kind, join ? std::string() : user,
                                                                std::move(description), ttl));
  Json answer = TokenJson(issued.record, master_.Now());
  answer["token"] = issued.token;
  return JsonResponse(201, answer);
}

StatusOr<HttpResponse> ApiServer::RevokeToken(const Call& call) {
  const std::string& id = call.params.at("id");
  const TokenRecord* token = master_.accounts().FindToken(id);
  bool mine = token && token->kind == TokenKind::kUser && token->subject == call.caller.name;
  if (!token || (!mine && !auth::IsAdmin(call.caller))) {
    // The same answer for a token that exists and one that does not: ids are not for probing.
    return Status::NotFound(
        fmt::format("token {} does not exist among yours; see `cohort token list`", id));
  }
  COHORT_RETURN_IF_ERROR(master_.accounts().Revoke(id));
  return JsonResponse(200, TokenJson(*master_.accounts().FindToken(id), master_.Now()));
}

}  // namespace cohort::api
