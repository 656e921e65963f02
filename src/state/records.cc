#include "state/records.h"

#include <fmt/format.h>

#include <cmath>
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

StatusOr<std::string> EncodeSweepRecord(const SweepRecord& sweep) {
  const std::string what = fmt::format("sweep {}", sweep.id);
  if (sweep.id <= 0) return Status::InvalidArgument(what + ": the id must be positive");
  Json columns{sweep.name, sweep.team, sweep.user, sweep.state};
  COHORT_RETURN_IF_ERROR(EncodeRecord(columns, what).status());
  return EncodeRecord(sweep.doc, what);
}

StatusOr<Json> DecodeSweepDoc(std::string_view text) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return Status::Internal("stored sweep is not JSON: " + doc.status().message());
  return doc;
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

Status CheckUsage(JobId job, const std::vector<TaskUsage>& usage) {
  for (const auto& u : usage) {
    if (u.job_id != job) {
      return Status::InvalidArgument(fmt::format(
          "a task hold of job {} ({}) was given with job {}: holds are stored with their own job",
          u.job_id, u.task, job));
    }
    if (u.end && *u.end < u.start) {
      return Status::InvalidArgument(
          fmt::format("the hold of job {} task {} ends before it starts", job, u.task));
    }
    Json text{u.task, u.team, u.user};
    COHORT_RETURN_IF_ERROR(EncodeRecord(text, fmt::format("task hold of job {}", job)).status());
  }
  return Status::Ok();
}

Status CheckAuditEntry(const AuditEntry& entry) {
  Json text{entry.user, entry.remote, entry.method, entry.path, entry.target, entry.outcome};
  return EncodeRecord(text, "audit entry").status();
}

Status CheckHistoryChange(const RuntimeHistoryChange& change) {
  for (const auto& row : change.rows) {
    COHORT_RETURN_IF_ERROR(EncodeRecord(Json(row.key), "a runtime history key").status());
    if (row.key.empty() || row.samples <= 0 || row.last_used <= 0 ||
        !std::isfinite(row.mean_seconds) || row.mean_seconds < 0) {
      return Status::InvalidArgument(fmt::format(
          "runtime history row \"{}\" cannot be stored: it would not load back ({} samples, "
          "mean {} s, last used {})",
          row.key, row.samples, row.mean_seconds, row.last_used));
    }
  }
  return Status::Ok();
}

std::vector<TaskUsage> UsageFromRecord(const Job& job) {
  std::vector<TaskUsage> usage;
  auto add = [&](int attempt, std::string task, const Resources& r, Timestamp start,
                 std::optional<Timestamp> end) {
    if (end && *end < start) end = start;
    usage.push_back(TaskUsage{job.id, attempt, std::move(task), job.spec.team, job.user, r.gpus,
                              r.milli_cpus, start, end});
  };
  bool current_known = job.attempt > 0 && job.placed_at && !job.tasks.empty();
  for (const auto& a : job.history) {
    if (!a.started_at || !a.finished_at) continue;
    if (current_known && a.number == job.attempt) continue;  // its tasks say more
    for (const auto& g : job.spec.tasks) {
      for (int i = 0; i < g.replicas; ++i) {
        add(a.number, fmt::format("{}/{}", g.role, i), g.resources, *a.started_at, a.finished_at);
      }
    }
  }
  if (!current_known) return usage;
  // An ended task without its own end ended with its attempt.
  std::optional<Timestamp> attempt_end = job.finished_at;
  if (!job.history.empty() && job.history.back().number == job.attempt) {
    attempt_end = job.history.back().finished_at;
  }
  for (const auto& t : job.tasks) {
    Timestamp start = t.held_since.value_or(*job.placed_at);
    std::optional<Timestamp> end;
    if (IsTerminal(t.state)) end = t.finished_at ? t.finished_at : attempt_end.value_or(start);
    add(job.attempt, t.Name(), t.resources, start, end);
  }
  return usage;
}

}  // namespace cohort::state
