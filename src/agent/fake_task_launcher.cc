#include "agent/fake_task_launcher.h"

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "agent/task_supervisor.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::agent {
namespace {

bool SameDir(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
}

}  // namespace

StatusOr<pid_t> FakeTaskLauncher::StartSupervisor(const std::string& task_dir) {
  starts_.push_back(task_dir);
  if (fail_next_start_) {
    Status s = std::move(*fail_next_start_);
    fail_next_start_.reset();
    return s;
  }
  pid_t pid = next_pid_++;
  supervisors_[pid] = Supervisor{task_dir, clock_.Now()};
  return pid;
}

void FakeTaskLauncher::SignalSupervisor(pid_t pid, int signal) {
  signals_.push_back(Signal{pid, false, signal});
  auto it = supervisors_.find(pid);
  if (it == supervisors_.end() || !it->second.alive) return;
  Supervisor& s = it->second;
  if (signal == SIGKILL) {
    s.alive = false;
  } else if (signal == SIGTERM || signal == SIGINT) {
    s.got_sigterm = true;
    if (!s.ignores_sigterm) End(s, std::nullopt, SIGTERM);
  }
}

void FakeTaskLauncher::SignalProcessGroup(pid_t pgid, int signal) {
  signals_.push_back(Signal{pgid, true, signal});
  // A supervisor leads its own session and so its own process group.
  auto it = supervisors_.find(pgid);
  if (it != supervisors_.end() && signal == SIGKILL) it->second.alive = false;
}

bool FakeTaskLauncher::SupervisorExited(pid_t pid, bool adopted) {
  // Unknown pids are gone, as waitpid's ECHILD and kill's ESRCH say for real ones.
  auto it = supervisors_.find(pid);
  return it == supervisors_.end() || !it->second.alive;
}

bool FakeTaskLauncher::IsSupervisorOf(pid_t pid, const std::string& task_dir) {
  auto it = supervisors_.find(pid);
  return it != supervisors_.end() && it->second.alive && SameDir(it->second.task_dir, task_dir);
}

pid_t FakeTaskLauncher::SupervisorOf(const std::string& task_dir) const {
  pid_t found = 0;
  for (const auto& [pid, s] : supervisors_) {
    if (SameDir(s.task_dir, task_dir)) found = pid;
  }
  return found;
}

bool FakeTaskLauncher::Alive(pid_t supervisor) const {
  auto it = supervisors_.find(supervisor);
  return it != supervisors_.end() && it->second.alive;
}

void FakeTaskLauncher::StartCommand(pid_t supervisor, pid_t command_pid) {
  COHORT_CHECK(WriteFileAtomically(Get(supervisor).task_dir + "/task.pid",
                                   std::to_string(command_pid) + "\n")
                   .ok());
}

void FakeTaskLauncher::WriteOutput(pid_t supervisor, std::string_view text) {
  std::ofstream out(Get(supervisor).task_dir + "/output.log", std::ios::binary | std::ios::app);
  out << text;
  COHORT_CHECK(out.good());
}

void FakeTaskLauncher::Exit(pid_t supervisor, std::optional<int> exit_code,
                            std::optional<int> signal) {
  End(Get(supervisor), exit_code, signal);
}

void FakeTaskLauncher::FailToStart(pid_t supervisor, StartFailure kind, std::string message) {
  End(Get(supervisor), 126, std::nullopt, kind, std::move(message));
}

void FakeTaskLauncher::Crash(pid_t supervisor) { Get(supervisor).alive = false; }

void FakeTaskLauncher::IgnoreSigterm(pid_t supervisor) { Get(supervisor).ignores_sigterm = true; }

FakeTaskLauncher::Supervisor& FakeTaskLauncher::Get(pid_t pid) {
  auto it = supervisors_.find(pid);
  COHORT_CHECK(it != supervisors_.end());
  return it->second;
}

void FakeTaskLauncher::End(Supervisor& s, std::optional<int> exit_code, std::optional<int> signal,
                           std::optional<StartFailure> kind, std::string message) {
  COHORT_CHECK(s.alive);
  TaskExit exit{exit_code,          signal, s.got_sigterm, s.started_at, clock_.Now(),
                std::move(message), kind};
  COHORT_CHECK(WriteTaskExit(s.task_dir, exit).ok());
  s.alive = false;
}

}  // namespace cohort::agent
