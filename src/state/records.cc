#include "state/records.h"

#include <fmt/format.h>

#include <utility>

#include "common/strings.h"
#include "model/job_spec_parser.h"
#include "model/json.h"

namespace cohort::state {
namespace {

std::string Describe(const Status& s) {
  if (s.details().empty()) return s.message();
  return fmt::format("{}: {}", s.message(), Join(s.details(), "; "));
}

Status WouldNotLoad(const std::string& what, const Status& why) {
  return Status::InvalidArgument(
      fmt::format("{} cannot be stored: it would not load back ({})", what, Describe(why)));
}

Status WouldLoadChanged(const std::string& what, const Json& given, const Json& loaded) {
  std::vector<std::string> paths;
  for (const auto& op : Json::diff(given, loaded)) paths.push_back(op.value("path", "?"));
  return Status::InvalidArgument(fmt::format(
      "{} cannot be stored: it would load back changed (at {})", what, Join(paths, ", ")));
}

}  // namespace

// Decoded the way a load will decode it, so that a job that fails here is refused rather than
// stored to stop the master's next start. Only the spec is compared once decoded: it is what
// the decoder validates and can turn down or rewrite, it is small, and encoding a whole job
// again would double the cost of every save of a large gang.
StatusOr<std::string> EncodeJobRecord(const Job& job) {
  const std::string what = fmt::format("job {}", job.id);
  Json doc = ToJson(job);
  COHORT_ASSIGN_OR_RETURN(std::string text, EncodeRecord(doc, what));
  auto back = JobFromJson(doc);
  if (!back.ok()) return WouldNotLoad(what, back.status());
  Json spec = ToJson(back->spec);
  if (spec != doc["spec"]) return WouldLoadChanged(what + " spec", doc["spec"], spec);
  return text;
}

// Nodes are saved when an agent registers, rarely: the whole node is compared.
StatusOr<std::string> EncodeNodeRecord(const NodeInfo& info) {
  const std::string what = fmt::format("node {}", info.id);
  Json doc = ToJson(info);
  COHORT_ASSIGN_OR_RETURN(std::string text, EncodeRecord(doc, what));
  auto back = NodeInfoFromJson(doc);
  if (!back.ok()) return WouldNotLoad(what, back.status());
  Json again = ToJson(*back);
  if (again != doc) return WouldLoadChanged(what, doc, again);
  return text;
}

StatusOr<Job> DecodeJobRecord(std::string_view text) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return Status::Internal("stored job is not JSON: " + doc.status().message());
  auto job = JobFromJson(*doc);
  if (!job.ok()) return Status::Internal("stored job: " + Describe(job.status()));
  return job;
}

StatusOr<NodeInfo> DecodeNodeRecord(std::string_view text) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return Status::Internal("stored node is not JSON: " + doc.status().message());
  auto info = NodeInfoFromJson(*doc);
  if (!info.ok()) return Status::Internal("stored node: " + Describe(info.status()));
  return info;
}

StatusOr<std::string> EncodeUserTeams(const User& user) {
  Json teams = Json::object();
  for (const auto& [team, role] : user.teams) teams[team] = TeamRoleName(role);
  return EncodeRecord(teams, fmt::format("the teams of user {}", user.name));
}

StatusOr<std::map<std::string, TeamRole>> DecodeUserTeams(std::string_view text) {
  auto doc = ParseJson(text);
  if (!doc.ok() || !doc->is_object()) {
    return Status::Internal(fmt::format("a stored user's teams are damaged: {}", text));
  }
  std::map<std::string, TeamRole> teams;
  for (const auto& [team, role] : doc->items()) {
    auto parsed = role.is_string() ? ParseTeamRole(role.get<std::string>()) : std::nullopt;
    if (!parsed) {
      return Status::Internal(fmt::format("a stored user's role in team {} is damaged", team));
    }
    teams[team] = *parsed;
  }
  return teams;
}

Status CheckSecret(const Secret& secret) {
  COHORT_RETURN_IF_ERROR(ValidateSecretName(secret.name, "secret"));
  if (!ParseSecretScope(SecretScopeName(secret.scope))) {
    return Status::InvalidArgument(
        fmt::format("secret {}: its scope is not user or team", secret.name));
  }
  COHORT_RETURN_IF_ERROR(
      EncodeRecord(Json(secret.owner), fmt::format("the owner of secret {}", secret.name))
          .status());
  if (secret.owner.empty()) {
    return Status::InvalidArgument(fmt::format("secret {}: it has no owner", secret.name));
  }
  return ValidateSecretValue(secret.value, fmt::format("secret {}", secret.name));
}

Status CheckEvents(JobId job, const std::vector<JobEvent>& events) {
  for (const auto& e : events) {
    if (e.job_id != job) {
      return Status::InvalidArgument(fmt::format(
          "an event of job {} ({}) was given with job {}: events are stored with their own job",
          e.job_id, e.type, job));
    }
    COHORT_RETURN_IF_ERROR(EncodeRecord(ToJson(e), fmt::format("event of job {}", job)).status());
  }
  return Status::Ok();
}

}  // namespace cohort::state
