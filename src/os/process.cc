#include "os/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "os/priority.h"
#include "os/proc_stat.h"

extern char** environ;

namespace cohort {

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overlay) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : overlay) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return Status::InvalidArgument("nothing to run");
  std::vector<std::string> args = argv;
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (!options.env.empty()) env_strings = EnvironmentWith(options.env);
  std::vector<char*> env_ptrs;
  for (auto& e : env_strings) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  char** envp = options.env.empty() ? environ : env_ptrs.data();
  const char* output = options.output.empty() ? nullptr : options.output.c_str();
  const std::optional<Owner> as = options.as;
  const int nice = options.nice;

  // Every signal is blocked across the fork, and the child puts the handlers it inherited back to
  // their defaults before it unblocks them, as its exec would: a signal sent to the new pid at
  // once (the agent stopping a task it has just started) must reach the new program, or end the
  // child, not run this process's handler in the child and be lost.
  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  pid_t pid = ::fork();
  if (pid != 0) {
    int fork_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (pid < 0) return Status::Internal(fmt::format("fork: {}", strerror(fork_errno)));
  }
  if (pid == 0) {
    for (int s = 1; s < NSIG; ++s) {
      struct sigaction current {};
      if (::sigaction(s, nullptr, &current) != 0) continue;
      if (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN) continue;
      struct sigaction original {};
      original.sa_handler = SIG_DFL;
      sigemptyset(&original.sa_mask);
      ::sigaction(s, &original, nullptr);
    }
    if (options.new_session) ::setsid();
    if (nice > 0) (void)LowerPriority(nice);  // best effort: it runs all the same
    if (as && DropPrivileges(as->uid, as->gid) != nullptr) _exit(126);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (output) {
      int fd = ::open(output, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
      }
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execve(arg_ptrs[0], arg_ptrs.data(), envp);
    _exit(127);
  }
  return pid;
}

int RunToCompletion(const std::vector<std::string>& argv, const SpawnOptions& options) {
  auto pid = Spawn(argv, options);
  if (!pid.ok()) return 127;
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t ReadPidFile(const std::string& path) {
  return ParseInt(Trim(ReadFileOrEmpty(path)), 1).value_or(0);
}

std::string CommandLine(pid_t pid) {
  if (pid <= 0) return "";
  std::string cmdline = ReadFileOrEmpty(fmt::format("/proc/{}/cmdline", pid));
  for (char& c : cmdline) {
    if (c == '\0') c = ' ';
  }
  return cmdline;
}

pid_t ParentPid(pid_t pid) {
  auto stat = ParseProcessStat(ReadFileOrEmpty(fmt::format("/proc/{}/stat", pid)));
  return stat ? stat->ppid : -1;
}

std::vector<pid_t> Descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const ProcessStat& p : ReadProcessTable()) {
    if (p.ppid > 0) children[p.ppid].push_back(p.pid);
  }
  std::vector<pid_t> out;
  std::vector<pid_t> stack = {root};
  while (!stack.empty()) {
    pid_t p = stack.back();
    stack.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      stack.push_back(c);
    }
  }
  return out;
}

}  // namespace cohort
