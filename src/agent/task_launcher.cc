#include "agent/task_launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/task_supervisor.h"
#include "os/process.h"

namespace cohort::agent {

StatusOr<std::unique_ptr<ProcessTaskLauncher>> ProcessTaskLauncher::Create(
    const std::string& cohortd) {
  std::string dir = cohortd.substr(0, cohortd.rfind('/') + 1);
  std::string lean = dir + "cohort-run-task";
  if (::access(lean.c_str(), X_OK) == 0) {
    return std::unique_ptr<ProcessTaskLauncher>(new ProcessTaskLauncher({lean}));
  }
  if (::access(cohortd.c_str(), X_OK) != 0) {
    return Status::Internal(
        fmt::format("cannot execute {} or {} (needed to supervise tasks)", lean, cohortd));
  }
  return std::unique_ptr<ProcessTaskLauncher>(new ProcessTaskLauncher({cohortd, "run-task"}));
}

StatusOr<pid_t> ProcessTaskLauncher::StartSupervisor(const std::string& task_dir) {
  // Made here, 0600, so that the supervisor's output is as private as the rest of the task's
  // directory (Spawn would make it 0644).
  std::string log = task_dir + "/supervisor.log";
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || ::fchmod(fd, 0600) != 0) {
    Status s = Status::Internal(fmt::format("cannot create {}: {}", log, strerror(errno)));
    if (fd >= 0) ::close(fd);
    return s;
  }
  ::close(fd);
  std::vector<std::string> argv = command_;
  argv.insert(argv.end(), {"--task-dir", task_dir});
  // Below the agent from its first instruction: a thousand supervisors starting at once must
  // not starve the agent either (task_supervisor.h, kTaskNice).
  SpawnOptions options{log, /*new_session=*/true, {}};
  options.nice = kTaskNice;
  return Spawn(argv, options);
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

int ProcessTaskLauncher::RunCleanup(const std::vector<std::string>& argv) {
  return RunToCompletion(argv);
}

}  // namespace cohort::agent
