// The supervisor of one task: `cohortd run-task --task-dir DIR`, started by the agent in its own
// session. It runs the task's command in its own process group with the task's environment and
// its output in DIR/output.log, and makes sure that when the task ends, nothing of it survives.
//
// Why a separate process: the task must outlive a restart of the agent, and someone must still
// collect its exit status and clean up after it. The supervisor is a child subreaper, so every
// process the task starts stays its descendant, even one that double-forks or calls setsid().
//
// Files in DIR:
//   spec.json        written by the agent: command, env (the master's variables, on top of the
//                    base of agent/base_environment.h), workdir, grace_period_ms,
//                    output_limit_bytes, and the account (uid, gid, user, home, shell, job_dirs);
//                    "memory" where the agent enforces the memory request (task_memory.h)
//   work/            the scratch directory, the account's (0700)
//   output.log       stdout and stderr of the task, appended, the account's (0600); with a
//                    limit, only about the last output_limit_bytes of it take space on disk
//                    (agent/output_file.h)
//   task.pid         the command's pid (also its process group id), once started
//   exit.json        written last: exit_code or signal, stopped (true if asked to stop), times,
//                    and why it could not start (message, start_failure) if it could not
// Every other file is the supervisor's (0600): the agent trusts the pids and exits in them.
//
// The supervisor stays root when the agent is: only the command's process becomes the task's
// account (os/credentials.h), so the task cannot signal, trace or outlive its supervisor, nor
// write the files the agent acts on as root.
//
// The supervisor and the task run at nice kTaskNice, below the agent (docs/reliability.md, "The
// agent outlives its own tasks"), and a root supervisor gives the task a /proc that shows only
// its own account's processes (os/proc_view.h, docs/security.md).
//
// Stopping: SIGTERM (or SIGINT) to the supervisor sends SIGTERM to every process of the task,
// waits the grace period, then sends SIGKILL to whatever is left. When the command's main process
// exits on its own, any process it left behind is killed.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"
#include "model/start_failure.h"

namespace cohort::agent {

// The nice value of every supervisor and task (their session's too, where the kernel groups by
// session): below the agent's 0, so that tasks cannot starve it (docs/reliability.md).
inline constexpr int kTaskNice = 10;

struct TaskExit {
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool stopped = false;  // the supervisor was asked to stop the task
  Timestamp started_at;
  Timestamp finished_at;
  // Why the task could not start, or why it was ended (its memory limit); empty otherwise.
  std::string message = {};
  // Set when it could not start for a cause no retry fixes (its program or workdir; the agent
  // adds its account): exit.json's "start_failure".
  std::optional<StartFailure> start_failure = {};
};

// The main of `cohortd run-task`. Returns the process exit status of the supervisor (0 once
// exit.json is written, whatever the task's own status).
int RunTaskSupervisor(const std::string& task_dir);

// Reads DIR/exit.json; kNotFound if the task has not ended (or its supervisor died first).
StatusOr<TaskExit> ReadTaskExit(const std::string& task_dir);
// Writes DIR/exit.json atomically, in the form ReadTaskExit reads; kInternal if it cannot. The
// supervisor's last act (and the fake launcher's, in tests).
Status WriteTaskExit(const std::string& task_dir, const TaskExit& exit);

}  // namespace cohort::agent
