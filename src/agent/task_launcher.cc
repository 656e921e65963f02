#include "agent/task_launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "os/process.h"

namespace cohort::agent {

StatusOr<std::unique_ptr<ProcessTaskLauncher>> ProcessTaskLauncher::Create(std::string cohortd) {
  if (::access(cohortd.c_str(), X_OK) != 0) {
    return Status::Internal(fmt::format("cannot execute {} (needed to supervise tasks)", cohortd));
  }
  return std::unique_ptr<ProcessTaskLauncher>(new ProcessTaskLauncher(std::move(cohortd)));
}

StatusOr<pid_t> ProcessTaskLauncher::StartSupervisor(const std::string& task_dir) {
  return Spawn({cohortd_, "run-task", "--task-dir", task_dir},
               SpawnOptions{task_dir + "/supervisor.log", /*new_session=*/true, {}});
}

void ProcessTaskLauncher::SignalSupervisor(pid_t pid, int signal) {
  if (pid > 0) ::kill(pid, signal);
}

void ProcessTaskLauncher::SignalProcessGroup(pid_t pgid, int signal) {
  if (pgid > 0) ::kill(-pgid, signal);
}

bool ProcessTaskLauncher::SupervisorExited(pid_t pid, bool adopted) {
  if (pid <= 0) return true;
  if (adopted) return ::kill(pid, 0) != 0 && errno == ESRCH;
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  // ECHILD: already reaped, or not ours after all; either way there is nothing left to wait for.
  return r == pid || (r < 0 && errno == ECHILD);
}

bool ProcessTaskLauncher::IsSupervisorOf(pid_t pid, const std::string& task_dir) {
  if (pid <= 0) return false;
  std::string cmdline = CommandLine(pid);
  return cmdline.find("run-task") != std::string::npos &&
         cmdline.find(task_dir) != std::string::npos;
}

}  // namespace cohort::agent
