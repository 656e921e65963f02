// The process operations of the agent, behind one narrow interface: start a task's supervisor,
// signal it or a process group, and learn whether a supervisor has ended. ProcessTaskLauncher
// does them to real processes; tests use FakeTaskLauncher (fake_task_launcher.h), so that the
// agent's rules run without a single fork.
//
// A supervisor is `cohort-run-task --task-dir DIR` (task_supervisor.h; the same as `cohortd
// run-task`, in a binary that loads a few libraries instead of all of cohortd's): DIR holds
// spec.json when it starts, and the supervisor writes task.pid, output.log and finally
// exit.json there.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace cohort::agent {

// Not thread-safe: the agent makes its calls one at a time.
class TaskLauncher {
 public:
  virtual ~TaskLauncher() = default;

  // Starts the supervisor of the task prepared in `task_dir`, in its own session (so it is a
  // process group leader and outlives the agent), with its own output in DIR/supervisor.log.
  // Returns its pid; kInternal if it could not be started.
  virtual StatusOr<pid_t> StartSupervisor(const std::string& task_dir) = 0;

  // Sends `signal` to the supervisor `pid` alone; SIGTERM asks it to stop its task.
  virtual void SignalSupervisor(pid_t pid, int signal) = 0;

  // Sends `signal` to every process of the process group `pgid` (a supervisor's, or a task's
  // command's, which leads its own group).
  virtual void SignalProcessGroup(pid_t pgid, int signal) = 0;

  // Whether the supervisor `pid` has ended. One this launcher started (`adopted` false) is this
  // process's child and is reaped here; an adopted one (started by an earlier agent) can only
  // be checked for being alive.
  virtual bool SupervisorExited(pid_t pid, bool adopted) = 0;

  // Whether `pid` is alive and is the supervisor of `task_dir`. An adopted task's supervisor.pid
  // may name a process that ended while no agent was running, or whose pid has been reused.
  virtual bool IsSupervisorOf(pid_t pid, const std::string& task_dir) = 0;

  // Runs `argv` to its end: the cleanup of a task whose supervisor died before it could clean up
  // (`podman rm --force` of its container, agent/container_task.h). Returns its exit status.
  virtual int RunCleanup(const std::vector<std::string>& argv) = 0;
};

// Supervisors as real processes, children of this one.
class ProcessTaskLauncher final : public TaskLauncher {
 public:
  // `cohortd`: the cohortd binary. Supervisors run as the cohort-run-task beside it, or where
  // there is none, as `cohortd run-task` (starting cohortd cost 3.4 ms of CPU per task, the
  // small binary about a third of that). kInternal if neither can be executed.
  static StatusOr<std::unique_ptr<ProcessTaskLauncher>> Create(const std::string& cohortd);
  // The command before `--task-dir DIR`.
  const std::vector<std::string>& supervisor_command() const { return command_; }

  StatusOr<pid_t> StartSupervisor(const std::string& task_dir) override;
  void SignalSupervisor(pid_t pid, int signal) override;
  void SignalProcessGroup(pid_t pgid, int signal) override;
  bool SupervisorExited(pid_t pid, bool adopted) override;
  bool IsSupervisorOf(pid_t pid, const std::string& task_dir) override;
  int RunCleanup(const std::vector<std::string>& argv) override;

 private:
  explicit ProcessTaskLauncher(std::vector<std::string> command) : command_(std::move(command)) {}

  std::vector<std::string> command_;
};

}  // namespace cohort::agent
