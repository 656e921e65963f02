// Master::TerminalOf: where a shell session's terminal is served (docs/runtimes.md, "Shells").
#include <fmt/format.h>

#include "auth/job_credential.h"
#include "framework/frameworks.h"
#include "master/master.h"

namespace cohort::master {

StatusOr<SessionTerminal> Master::TerminalOf(JobId id) const {
  COHORT_ASSIGN_OR_RETURN(const Job* job, jobs_.Get(id));
  if (!job->spec.session || job->spec.session->kind != SessionKind::kShell) {
    return Status::FailedPrecondition(fmt::format(
        "job {} is not a shell session: it has no terminal (cohort shell starts one)", id));
  }
  if (IsTerminal(job->state)) {
    return Status::FailedPrecondition(
        fmt::format("session {} has ended ({}): start another with cohort shell", id,
                    JobStateName(job->state)));
  }
  for (const Task* task : framework::ActiveTasks(*job)) {
    if (task->state == TaskState::kRunning && task->port > 0) {
      return SessionTerminal{
          task->node_id, task->host, task->port,
          auth::JobCredential(config_.job_credential_key, job->id, job->attempt)};
    }
  }
  return Status::Unavailable(
      fmt::format("session {} is {}: its terminal is served once its task runs; try again then", id,
                  JobStateName(job->state)));
}

}  // namespace cohort::master
