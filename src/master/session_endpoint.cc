// Master::SessionEndpointOf: where a session's task serves its person (docs/runtimes.md, "Shells"
// and "Notebooks").
#include <fmt/format.h>

#include "auth/job_credential.h"
#include "master/master.h"

namespace cohort::master {
namespace {

// "cohort shell", "cohort notebook": what starts a session of the kind.
std::string StartCommand(SessionKind kind) {
  return fmt::format("cohort {}", SessionKindName(kind));
}

// "a terminal", "a notebook": what a session of the kind serves.
std::string_view Serves(SessionKind kind) {
  return kind == SessionKind::kShell ? "a terminal" : "a notebook";
}

}  // namespace

StatusOr<SessionEndpoint> Master::SessionEndpointOf(JobId id, SessionKind kind) const {
  COHORT_ASSIGN_OR_RETURN(const Job* job, jobs_.Get(id));
  if (!job->spec.session || job->spec.session->kind != kind) {
    return Status::FailedPrecondition(
        fmt::format("job {} is not a {} session: it has no {} ({} starts one)", id,
                    SessionKindName(kind), Serves(kind).substr(2), StartCommand(kind)));
  }
  if (IsTerminal(job->state)) {
    return Status::FailedPrecondition(
        fmt::format("session {} has ended ({}): start another with {}", id,
                    JobStateName(job->state), StartCommand(kind)));
  }
  // Not framework::ActiveTasks: a pending session has no tasks at all.
  for (const Task& task : job->tasks) {
    if (!task.scaled_down && task.state == TaskState::kRunning && task.port > 0) {
      return SessionEndpoint{
          job->user, task.node_id, task.host, task.port,
          auth::JobCredential(config_.job_credential_key, job->id, job->attempt)};
    }
  }
  return Status::Unavailable(
      fmt::format("session {} is {}: {} is served once its task runs; try again then", id,
                  JobStateName(job->state), Serves(kind)));
}

}  // namespace cohort::master
