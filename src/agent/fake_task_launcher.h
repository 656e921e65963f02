// A TaskLauncher for tests: supervisors that exist only in memory, played by the test. It
// models the machine's processes, not one agent's children, so one FakeTaskLauncher shared by
// two Agents on the same data directory plays an agent restart: the supervisors live on.
//
// What a real supervisor writes into its task directory (task.pid, output.log, exit.json) the
// fake writes there too, in the same formats, when the test says so.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/task_launcher.h"
#include "common/time.h"
#include "model/start_failure.h"

namespace cohort::agent {

class FakeTaskLauncher final : public TaskLauncher {
 public:
  // `clock` stamps the times in exit.json.
  explicit FakeTaskLauncher(const Clock& clock) : clock_(clock) {}

  // TaskLauncher. Supervisors get pids 1000, 1001, ... A SIGTERM to a supervisor stops it as a
  // real one stops a task that obeys: it exits at once with exit.json saying "killed by SIGTERM,
  // stopped" (unless IgnoreSigterm). SIGKILL to the supervisor or its process group ends it
  // without exit.json. Every signal is recorded.
  StatusOr<pid_t> StartSupervisor(const std::string& task_dir) override;
  void SignalSupervisor(pid_t pid, int signal) override;
  void SignalProcessGroup(pid_t pgid, int signal) override;
  bool SupervisorExited(pid_t pid, bool adopted) override;
  bool IsSupervisorOf(pid_t pid, const std::string& task_dir) override;
  // Records `argv`; returns 0.
  int RunCleanup(const std::vector<std::string>& argv) override {
    cleanups_.push_back(argv);
    return 0;
  }
  const std::vector<std::vector<std::string>>& cleanups() const { return cleanups_; }

  // What the agents asked for.
  struct Signal {
    pid_t pid;  // the supervisor, or the process group
    bool group;
    int signal;
    bool operator==(const Signal&) const = default;
  };
  const std::vector<std::string>& starts() const { return starts_; }  // task dirs, in order
  const std::vector<Signal>& signals() const { return signals_; }
  // The supervisor started for `task_dir` (the latest, if several); 0 if none.
  pid_t SupervisorOf(const std::string& task_dir) const;
  bool Alive(pid_t supervisor) const;

  // Playing the supervisors.
  void FailNextStart(Status status) { fail_next_start_ = std::move(status); }
  // The supervisor has started the task's command: writes task.pid.
  void StartCommand(pid_t supervisor, pid_t command_pid);
  // The command printed `text`: appends it to output.log.
  void WriteOutput(pid_t supervisor, std::string_view text);
  // The command ended; the supervisor writes exit.json and exits.
  void Exit(pid_t supervisor, std::optional<int> exit_code, std::optional<int> signal = {});
  // The command could not start for `kind` (the supervisor found its program or workdir
  // missing): exit.json says so, with exit code 126 and `message`.
  void FailToStart(pid_t supervisor, StartFailure kind, std::string message);
  // The supervisor dies without writing exit.json.
  void Crash(pid_t supervisor);
  // SIGTERM no longer ends the supervisor (a task that ignores it, a supervisor that hangs).
  void IgnoreSigterm(pid_t supervisor);

 private:
  std::vector<std::vector<std::string>> cleanups_;
  struct Supervisor {
    std::string task_dir;
    Timestamp started_at;
    bool alive = true;
    bool ignores_sigterm = false;
    bool got_sigterm = false;
  };
  Supervisor& Get(pid_t pid);
  void End(Supervisor& s, std::optional<int> exit_code, std::optional<int> signal,
           std::optional<StartFailure> kind = std::nullopt, std::string message = {});

  const Clock& clock_;
  pid_t next_pid_ = 1000;
  std::map<pid_t, Supervisor> supervisors_;
  std::vector<std::string> starts_;
  std::vector<Signal> signals_;
  std::optional<Status> fail_next_start_;
};

}  // namespace cohort::agent
