#include "model/job.h"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "common/strings.h"

namespace cohort {
namespace {

constexpr std::array<JobState, 7> kJobStates = {
    JobState::kPending,   JobState::kStarting, JobState::kRunning, JobState::kStopping,
    JobState::kSucceeded, JobState::kFailed,   JobState::kKilled};
constexpr std::array<TaskState, 6> kTaskStates = {TaskState::kAssigned,  TaskState::kRunning,
                                                  TaskState::kSucceeded, TaskState::kFailed,
                                                  TaskState::kKilled,    TaskState::kLost};

}  // namespace

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "PENDING";
    case JobState::kStarting:
      return "STARTING";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kStopping:
      return "STOPPING";
    case JobState::kSucceeded:
      return "SUCCEEDED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kKilled:
      return "KILLED";
  }
  return "UNKNOWN";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (JobState s : kJobStates) {
    std::string_view n = JobStateName(s);
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return a == std::toupper(static_cast<unsigned char>(b));
        })) {
      return s;
    }
  }
  return std::nullopt;
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kKilled;
}

const char* TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kAssigned:
      return "ASSIGNED";
    case TaskState::kRunning:
      return "RUNNING";
    case TaskState::kSucceeded:
      return "SUCCEEDED";
    case TaskState::kFailed:
      return "FAILED";
    case TaskState::kKilled:
      return "KILLED";
    case TaskState::kLost:
      return "LOST";
  }
  return "UNKNOWN";
}

std::optional<TaskState> ParseTaskState(std::string_view name) {
  for (TaskState s : kTaskStates) {
    if (name == TaskStateName(s)) return s;
  }
  return std::nullopt;
}

bool IsTerminal(TaskState s) { return s != TaskState::kAssigned && s != TaskState::kRunning; }

std::string TaskId::ToString() const {
  return fmt::format("{}.{}.{}.{}", job, attempt, role, index);
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
