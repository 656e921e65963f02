#include "agent/task_supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "agent/output_file.h"
#include "model/json.h"
#include "model/workdir.h"
#include "os/process.h"
#include "os/real_clock.h"

namespace cohort::agent {
namespace {

struct TaskSpec {
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string workdir;
  Duration grace_period = std::chrono::seconds(30);
  int64_t output_limit = 0;  // 0: the output is kept whole
};

StatusOr<TaskSpec> ReadSpec(const std::string& dir) {
  std::ifstream in(dir + "/spec.json");
  if (!in) return Status::NotFound(fmt::format("{}/spec.json: {}", dir, strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  COHORT_ASSIGN_OR_RETURN(Json doc, ParseJson(ss.str()));
  try {
    TaskSpec spec;
    spec.command = doc.at("command").get<std::vector<std::string>>();
    spec.env = doc.at("env").get<std::map<std::string, std::string>>();
    spec.workdir = doc.value("workdir", "");
    spec.grace_period = std::chrono::milliseconds(doc.value("grace_period_ms", 30000));
    spec.output_limit = doc.value("output_limit_bytes", int64_t{0});
    if (spec.command.empty()) return Status::InvalidArgument("spec.json: empty command");
    return spec;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("spec.json: {}", e.what()));
  }
}

// Keeps the task's output within its limit, as long as the file system lets it.
struct OutputTrimmer {
  int fd;
  int64_t limit;  // 0: none
  int64_t trimmed = 0;

  void Trim() {
    if (limit <= 0) return;
    Status s = TrimOutput(fd, limit, &trimmed);
    if (s.ok()) return;
    fmt::print(stderr, "run-task: the output is no longer bounded: {}\n", s.message());
    limit = 0;
  }
};

void SignalAll(int self, int main_pgid, int sig) {
  if (main_pgid > 0) ::kill(-main_pgid, sig);
  for (int pid : Descendants(self)) ::kill(pid, sig);
}

// Exec of the task's command, in the child. Only async-signal-safe calls until exec, except
// for the error path, which writes to the log and exits.
[[noreturn]] void ExecTask(const TaskSpec& spec, const std::string& dir, int log_fd,
                           const sigset_t& old_mask) {
  ::setpgid(0, 0);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  std::string workdir = ResolveWorkdir(dir + "/work", spec.workdir);
  if (::chdir(workdir.c_str()) != 0) {
    dprintf(STDERR_FILENO, "cohort: cannot enter the working directory %s: %s\n", workdir.c_str(),
            strerror(errno));
    _exit(126);
  }
  // The agent's environment (PATH, HOME, LANG, ...) with the task's on top. (The supervisor is
  // single-threaded, so the child may still allocate.)
  std::vector<std::string> env_strings = EnvironmentWith(spec.env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // execvpe searches the task's PATH, which is what the user expects from a shell.
  auto path = spec.env.find("PATH");
  if (path != spec.env.end()) ::setenv("PATH", path->second.c_str(), 1);
  if (!::getenv("PATH")) ::setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
  ::execvpe(argv[0], argv.data(), envp.data());
  dprintf(STDERR_FILENO, "cohort: cannot run \"%s\": %s\n", argv[0], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

}  // namespace

StatusOr<TaskExit> ReadTaskExit(const std::string& task_dir) {
  std::ifstream in(task_dir + "/exit.json");
  if (!in) return Status::NotFound(fmt::format("{} has not ended", task_dir));
  std::stringstream ss;
  ss << in.rdbuf();
  COHORT_ASSIGN_OR_RETURN(Json doc, ParseJson(ss.str()));
  try {
    TaskExit exit;
    if (!doc["exit_code"].is_null()) exit.exit_code = doc["exit_code"].get<int>();
    if (!doc["signal"].is_null()) exit.signal = doc["signal"].get<int>();
    exit.stopped = doc.value("stopped", false);
    exit.started_at = FromMicros(doc.value("started_at_us", int64_t{0}));
    exit.finished_at = FromMicros(doc.value("finished_at_us", int64_t{0}));
    return exit;
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("{}/exit.json: {}", task_dir, e.what()));
  }
}

Status WriteTaskExit(const std::string& task_dir, const TaskExit& exit) {
  Json doc{{"exit_code", exit.exit_code ? Json(*exit.exit_code) : Json(nullptr)},
           {"signal", exit.signal ? Json(*exit.signal) : Json(nullptr)},
           {"stopped", exit.stopped},
           {"started_at_us", ToMicros(exit.started_at)},
           {"finished_at_us", ToMicros(exit.finished_at)}};
  if (!WriteFileAtomically(task_dir + "/exit.json", doc.dump() + "\n")) {
    return Status::Internal(
        fmt::format("cannot write {}/exit.json: {}", task_dir, strerror(errno)));
  }
  return Status::Ok();
}

int RunTaskSupervisor(const std::string& dir) {
  RealClock clock;
  Timestamp started = clock.Now();
  auto finish = [&](TaskExit exit) {
    exit.started_at = started;
    exit.finished_at = clock.Now();
    Status written = WriteTaskExit(dir, exit);
    if (!written.ok()) {
      fmt::print(stderr, "run-task: {}\n", written.message());
      return 1;
    }
    return 0;
  };

  auto spec = ReadSpec(dir);
  if (!spec.ok()) {
    fmt::print(stderr, "run-task: {}\n", spec.status().ToString());
    return finish(TaskExit{126, std::nullopt, false, {}, {}});
  }
  // Orphans of the task become our children, so they can be found and killed.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::mkdir((dir + "/work").c_str(), 0755);
  if (!spec->workdir.empty() && spec->workdir[0] != '/') {
    // A relative workdir is a directory of the task's own (model/workdir.h): made here.
    std::error_code ec;
    std::filesystem::create_directories(ResolveWorkdir(dir + "/work", spec->workdir), ec);
  }
  int log_fd =
      ::open((dir + "/output.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    fmt::print(stderr, "run-task: cannot open {}/output.log: {}\n", dir, strerror(errno));
    return finish(TaskExit{126, std::nullopt, false, {}, {}});
  }

  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, s);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);

  pid_t child = ::fork();
  if (child < 0) {
    dprintf(log_fd, "cohort: cannot start the task: %s\n", strerror(errno));
    return finish(TaskExit{126, std::nullopt, false, {}, {}});
  }
  if (child == 0) ExecTask(*spec, dir, log_fd, old_mask);
  ::setpgid(child, child);  // also in the parent, so that kill(-child) works at once
  WriteFileAtomically(dir + "/task.pid", std::to_string(child) + "\n");
  // The output is bounded here, where it is written, so that it stays bounded while no agent
  // runs. A task can write a lot in one round: rounds are short while there is a limit.
  OutputTrimmer trimmer{log_fd, spec->output_limit};
  const long round_ns = spec->output_limit > 0 ? 50'000'000 : 200'000'000;

  const int self = ::getpid();
  bool stopping = false;
  std::optional<Timestamp> kill_at;
  TaskExit exit;
  bool main_done = false;
  while (!main_done) {
    trimmer.Trim();
    timespec wait{0, round_ns};
    siginfo_t info;
    int sig = ::sigtimedwait(&handled, &info, &wait);
    if ((sig == SIGTERM || sig == SIGINT) && !stopping) {
      stopping = true;
      kill_at = clock.Now() + spec->grace_period;
      SignalAll(self, child, SIGTERM);
    }
    if (kill_at && clock.Now() >= *kill_at) {
      SignalAll(self, child, SIGKILL);
      kill_at.reset();
    }
    // Reap whatever ended (the main process, or orphans of the task).
    int status;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != child) continue;
      main_done = true;
      if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
    }
  }
  // The task is over when its main process is: nothing it started may outlive it.
  for (int round = 0; round < 50; ++round) {
    SignalAll(self, child, SIGKILL);
    int status;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    if (Descendants(self).empty()) break;
    ::usleep(10'000);
  }
  trimmer.Trim();
  ::close(log_fd);
  exit.stopped = stopping;
  return finish(exit);
}

}  // namespace cohort::agent
