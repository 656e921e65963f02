#include "model/job.h"

#include <fmt/format.h>

#include <limits>

#include "common/strings.h"

namespace cohort {

const char* JobStateName(JobState s) { return NameOf(kJobStateNames, s); }

std::optional<JobState> ParseJobState(std::string_view name) {
  return Parse(kJobStateNames, name, MatchCase::kIgnoreAsciiCase);
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kKilled;
}

const char* TaskStateName(TaskState s) { return NameOf(kTaskStateNames, s); }

std::optional<TaskState> ParseTaskState(std::string_view name) {
  return Parse(kTaskStateNames, name);
}

bool IsTerminal(TaskState s) { return s != TaskState::kAssigned && s != TaskState::kRunning; }

std::string TaskId::ToString() const {
  return fmt::format("{}.{}.{}.{}", job, attempt, role, index);
}

void RecordAttempt(Job& job, AttemptSummary summary) {
  job.history.push_back(std::move(summary));
  if (job.history.size() <= kMaxAttemptSummaries) return;
  auto keep = job.history.end() - static_cast<ptrdiff_t>(kMaxAttemptSummaries);
  for (auto it = job.history.begin(); it != keep; ++it) job.dropped_service += ServiceOf(job, *it);
  job.history.erase(job.history.begin(), keep);
}

Duration ServiceOf(const Job& job, const AttemptSummary& attempt) {
  if (!attempt.started_at || !attempt.finished_at) return Duration{};
  return (*attempt.finished_at - *attempt.started_at) * job.spec.TotalResources().gpus;
}

StatusOr<JobId> ParseJobId(std::string_view text) {
  if (auto id = ParseInteger(text, 1, std::numeric_limits<JobId>::max())) return *id;
  return Status::InvalidArgument(
      fmt::format("\"{}\" is not a job id (a positive integer, e.g. 17)", text));
}

StatusOr<TaskId> ParseTaskId(std::string_view text) {
  auto parts = Split(text, '.');
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format(
        "\"{}\" is not a task id (<job>.<attempt>.<role>.<index>, e.g. 12.1.worker.0)", text));
  };
  if (parts.size() != 4 || !IsValidRole(parts[2])) return bad();
  auto job = ParseInteger(parts[0], 1, std::numeric_limits<JobId>::max());
  auto attempt = ParseInteger(parts[1], 1, std::numeric_limits<int>::max());
  auto index = ParseInteger(parts[3], 0, std::numeric_limits<int>::max());
  if (!job || !attempt || !index) return bad();
  return TaskId{*job, static_cast<int>(*attempt), parts[2], static_cast<int>(*index)};
}

}  // namespace cohort
