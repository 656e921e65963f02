#include "master/task_secrets.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/units.h"
#include "model/job_size.h"
#include "model/limits.h"

namespace cohort::master {
namespace {

// What the spec's own variables take of the environment's bound (kMaxEnvBytes).
size_t LiteralBytes(const TaskGroupSpec& group) {
  size_t bytes = 0;
  for (const auto& [name, value] : group.env) bytes += name.size() + value.size();
  return bytes;
}

std::string HowToSet(const std::string& secret, const std::string& team) {
  return fmt::format(
      "set it with `cohort secret set {}` (yours), or `cohort secret set {} --team {}` (the "
      "team's, by one of its admins)",
      secret, secret, team);
}

}  // namespace

int64_t TaskSecrets::ValueBytes(const JobSpec& spec, const std::string& user,
                                const TaskGroupSpec& group) const {
  int64_t bytes = 0;
  for (const auto& [var, name] : group.env_secrets) {
    if (const Secret* secret = secrets_.Resolve(user, spec.team, name)) {
      bytes += static_cast<int64_t>(secret->value.size());
    }
  }
  return bytes;
}

Status TaskSecrets::CheckReferences(const JobSpec& spec, const std::string& user) const {
  std::vector<std::string> problems;
  std::vector<int64_t> value_bytes;  // per group
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskGroupSpec& group = spec.tasks[i];
    value_bytes.push_back(ValueBytes(spec, user, group));
    if (group.env_secrets.empty()) continue;
    size_t bytes = LiteralBytes(group);
    for (const auto& [var, name] : group.env_secrets) {
      const Secret* secret = secrets_.Resolve(user, spec.team, name);
      if (secret == nullptr) {
        problems.push_back(
            fmt::format("tasks[{}].env.{}: secret {} does not exist for user {} or "
                        "team {}; {}",
                        i, var, name, user, spec.team, HowToSet(name, spec.team)));
        continue;
      }
      bytes += var.size() + secret->value.size();
    }
    if (bytes > kMaxEnvBytes) {
      problems.push_back(fmt::format(
          "tasks[{}].env: with the values of its secrets, names and values add up to {} bytes; "
          "at most {} ({}) are allowed",
          i, bytes, kMaxEnvBytes, FormatByteSize(kMaxEnvBytes)));
    }
  }
  // The parser counted the task text without the secrets' values.
  if (problems.empty()) problems = JobSizeProblems(spec, value_bytes);
  if (problems.empty()) return Status::Ok();
  size_t n = problems.size();
  return Status::InvalidArgument(fmt::format("job spec has {} error{}", n, n == 1 ? "" : "s"),
                                 std::move(problems));
}

void TaskSecrets::Inject(const Job& job, const std::string& role,
                         std::map<std::string, std::string>& env) {
  for (const auto& group : job.spec.tasks) {
    if (group.role != role || group.env_secrets.empty()) continue;
    size_t bytes = LiteralBytes(group);
    for (const auto& [var, name] : group.env_secrets) {
      const Secret* secret = secrets_.Resolve(job.user, job.spec.team, name);
      std::string why;
      if (secret == nullptr) {
        why = fmt::format("secret {} no longer exists for user {} or team {}; {}", name, job.user,
                          job.spec.team, HowToSet(name, job.spec.team));
      } else if (bytes + var.size() + secret->value.size() > kMaxEnvBytes) {
        why = fmt::format(
            "secret {} has grown since the submission: with it, the environment's names and "
            "values would add up to more than {} bytes",
            name, kMaxEnvBytes);
      } else {
        bytes += var.size() + secret->value.size();
        env[var] = secret->value;
        continue;
      }
      // Told once per attempt and variable: the launch is built again at every sync.
      for (auto it = left_out_.begin(); it != left_out_.end();) {
        it = jobs_.IsActive(it->first) ? std::next(it) : left_out_.erase(it);
      }
      auto& [attempt, told] = left_out_[job.id];
      if (attempt != job.attempt) {
        attempt = job.attempt;
        told.clear();
      }
      if (!told.insert(var).second) continue;
      std::string message = fmt::format("attempt {}: {} is left out of the tasks' environment: {}",
                                        job.attempt, var, why);
      spdlog::warn("job {}: {}", job.id, message);
      jobs_.Commit(jobs_.At(job.id), {jobs_.Event(job, "secret_left_out", std::move(message))});
    }
  }
}

}  // namespace cohort::master
