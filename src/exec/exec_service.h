// A task's exec service, `cohort-exec serve` (docs/job-spec.md, "MPI"): what stands in for sshd
// in an MPI job's workers. It runs as the task's own command, so everything it starts is inside
// the task: its account, GPUs, memory limit, environment and log, and nothing it starts outlives
// the task (its supervisor sees to that). On the task's port it takes one request per connection
// (exec/exec_request.h), runs it once the caller has shown the job's credential
// ($COHORT_JOB_CREDENTIAL, auth/job_credential.h), and answers with how it ended; its output goes
// to the task's log, or back to the caller as it comes when the request streams it (srun). A
// caller that hangs up ends its command.
//
// Why a process per connection and plain sockets: the service runs inside every worker of every
// MPI job and starts a handful of commands (one mpirun daemon per worker), so it must start fast
// and link little, like cohort-run-task; a forked handler keeps one caller's command, and its
// failure, from every other's.
#pragma once

#include <string>
#include <vector>

#include "common/time.h"

namespace cohort::exec {

struct ServeOptions {
  int port = 0;  // 0: $COHORT_TASK_PORT
  // The task's own command, run beside the service; the service ends with it, with its status.
  // Empty: it serves until it is stopped.
  std::vector<std::string> command;
  // How long a caller may take to send its request.
  Duration request_timeout = std::chrono::seconds(10);
  // How long a command whose caller hung up has between SIGTERM and SIGKILL.
  Duration hangup_grace = std::chrono::seconds(5);
  // At most this many commands at once; a caller past it is answered with an error.
  int max_sessions = 256;
};

// The main of `cohort-exec serve`: its exit status.
int Serve(const ServeOptions& options);

}  // namespace cohort::exec
