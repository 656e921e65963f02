#include "agent/task_supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "agent/base_environment.h"
#include "agent/checkpoint_sync.h"
#include "agent/container_task.h"
#include "agent/image_cache.h"
#include "agent/output_file.h"
#include "agent/task_inputs.h"
#include "agent/task_memory.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/json.h"
#include "model/workdir.h"
#include "os/credentials.h"
#include "os/directory.h"
#include "os/durable_file.h"
#include "os/priority.h"
#include "os/proc_view.h"
#include "os/process.h"
#include "os/real_clock.h"
#include "store/open_store.h"

namespace cohort::agent {
namespace {

struct TaskSpec {
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string workdir;
  Duration grace_period = std::chrono::seconds(30);
  int64_t output_limit = 0;  // 0: the output is kept whole
  // Who the command runs as, as the agent resolved it.
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;
  std::string home;
  std::string shell;
  std::string path_prefix;               // put first on the task's PATH: Cohort's task tools
  std::vector<std::string> job_dirs;     // must be usable by the account
  std::optional<TaskMemorySpec> memory;  // the limit the agent enforces; none: unlimited
  std::optional<CheckpointSyncSpec> checkpoints;  // where the job's checkpoints go between attempts
  std::optional<TaskInputsSpec> inputs;           // datasets and code to fetch before it starts
  std::optional<ContainerTask> container;         // runs in this image (docs/runtimes.md)
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
    spec.uid = doc.at("uid").get<uid_t>();
    spec.gid = doc.at("gid").get<gid_t>();
    spec.user = doc.at("user").get<std::string>();
    spec.home = doc.at("home").get<std::string>();
    spec.shell = doc.value("shell", "");
    spec.path_prefix = doc.value("path_prefix", "");
    spec.job_dirs = doc.value("job_dirs", std::vector<std::string>{});
    spec.memory = TaskMemorySpecFrom(doc);
    if (doc.contains("checkpoints")) {
      COHORT_ASSIGN_OR_RETURN(spec.checkpoints, CheckpointSyncSpecFromJson(doc["checkpoints"]));
    }
    if (doc.contains("inputs")) {
      COHORT_ASSIGN_OR_RETURN(spec.inputs, TaskInputsSpecFromJson(doc["inputs"]));
    }
    if (doc.contains("container")) {
      COHORT_ASSIGN_OR_RETURN(spec.container, ContainerTaskFromJson(doc["container"]));
    }
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

// Every process of the task gets `sig` once: its process group as a whole, then those that left
// it (a second SIGTERM would run a checkpoint handler twice). A container's processes are
// reached through podman, which passes the signal on to its init (`only_group`), except SIGKILL,
// which podman cannot pass on.
void SignalAll(int self, int main_pgid, int sig, bool only_group = false) {
  if (main_pgid > 0) ::kill(-main_pgid, sig);
  if (only_group) return;
  for (int pid : Descendants(self)) {
    if (main_pgid > 0 && ::getpgid(pid) == main_pgid) continue;
    ::kill(pid, sig);
  }
}

void ReapAll() {
  int status;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
}

// Whether any child, running or not yet reaped, is left.
bool HasChildren() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

// In the child: the write end of the pipe that tells the supervisor why the command could not
// be started (closed by a successful exec).
int g_setup_error_fd = -1;

// Why the command could not start, to its output and to the supervisor, which puts it in
// exit.json for the task's report: the kind's name (empty: none), a newline, the message.
[[noreturn]] void FailToStart(std::optional<StartFailure> kind, const std::string& message,
                              int exit_code) {
  dprintf(STDERR_FILENO, "cohort: %s\n", message.c_str());
  if (g_setup_error_fd >= 0) {
    std::string said = fmt::format("{}\n{}", kind ? StartFailureName(*kind) : "", message);
    (void)!::write(g_setup_error_fd, said.data(), said.size());
  }
  _exit(exit_code);
}

// A failure to set the task up, before its command runs. `kind`: set where it is one no retry
// fixes.
[[noreturn]] void Fail(const char* what, const std::string& where,
                       std::optional<StartFailure> kind = std::nullopt) {
  FailToStart(kind, fmt::format("{} {}: {}", what, where, strerror(errno)), 126);
}

// The kind of a failure to enter the task's workdir: a missing one is a start failure (it will be
// as missing on the next try); anything else (no permission, an I/O error) is not classified.
std::optional<StartFailure> WorkdirFailure(int err) {
  if (err == ENOENT || err == ENOTDIR) return StartFailure::kWorkdir;
  return std::nullopt;
}

// Why execvpe of `program` failed with `err`, in the user's terms, and whether it is a start
// failure: a program not found on the PATH, or not executable.
[[noreturn]] void FailToExec(const std::string& program, const std::string& path,
                             const std::string& user, int err) {
  bool searched = program.find('/') == std::string::npos;
  std::string message;
  std::optional<StartFailure> kind = StartFailure::kProgram;
  if (err == ENOENT && searched) {
    message = fmt::format("program \"{}\" not found on the task's PATH ({})", program, path);
  } else if (err == ENOENT) {
    message = fmt::format("program \"{}\" does not exist (or names an interpreter that does not)",
                          program);
  } else if (err == EACCES) {
    message =
        fmt::format("program \"{}\" is not executable by {}: {}", program, user, strerror(err));
  } else if (err == ENOTDIR) {
    message = fmt::format("program \"{}\": {}", program, strerror(err));
  } else {
    kind = std::nullopt;
    message = fmt::format("cannot run \"{}\": {}", program, strerror(err));
  }
  FailToStart(kind, message, err == ENOENT ? 127 : 126);
}

// Becomes the task's account for good (docs/security.md). A supervisor that is not root runs
// every task as its own account, which has nothing to give up.
void BecomeTheAccount(const TaskSpec& spec) {
  std::string who = fmt::format("as {} (uid {}, gid {})", spec.user, spec.uid, spec.gid);
  if (::geteuid() == 0) {
    if (const char* failed = DropPrivileges(spec.uid, spec.gid)) {
      Fail("cannot run the task", fmt::format("{}: {}", who, failed));
    }
    return;
  }
  if (::getuid() != spec.uid) {
    errno = EPERM;
    Fail("cannot run the task", who + ": this supervisor is not root");
  }
  if (const char* failed = ForbidNewPrivileges()) Fail("cannot run the task", failed);
}

// The task sees only its own account's processes in /proc (os/proc_view.h). Only root can
// arrange that; a supervisor that is not root runs every task as its own account, which has no
// one else's processes to hide. Not fatal: said in the supervisor's log (its stderr, not yet the
// task's output), and the task runs as it would have before.
void HideOtherAccounts() {
  if (::geteuid() != 0) return;
  if (const char* failed = HideOtherAccountsProcesses()) {
    dprintf(STDERR_FILENO, "run-task: other accounts' processes stay visible to the task: %s: %s\n",
            failed, strerror(errno));
  }
}

// Makes the relative workdir below the working directory, as the account, so that it owns it.
void MakeRelativeWorkdir(const std::string& workdir) {
  std::string path;
  for (const std::string& part : Split(workdir, '/')) {
    if (part.empty() || part == ".") continue;
    path += (path.empty() ? "" : "/") + part;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      Fail("cannot create the working directory", path);
    }
  }
}

// Exec of the task's command, in the child. Only async-signal-safe calls until exec, except
// for the error path, which writes to the log and exits. (The supervisor is single-threaded,
// so the child may still allocate.)
[[noreturn]] void ExecTask(const TaskSpec& spec, const std::string& dir, int log_fd,
                           const sigset_t& old_mask, const char* memory_cgroup) {
  ::setpgid(0, 0);
  HideOtherAccounts();
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  // As root still, and before the command allocates anything.
  if (memory_cgroup && !JoinMemoryCgroup(memory_cgroup)) {
    Fail("cannot place the task in its memory cgroup", memory_cgroup);
  }
  // The scratch directory is entered while still root: its parents (the agent's data directory)
  // need not be searchable by the account, and the directory itself is the account's.
  std::string scratch = dir + "/work";
  if (::chdir(scratch.c_str()) != 0) Fail("cannot enter the working directory", scratch);
  BecomeTheAccount(spec);
  // Everything from here on is checked with the account's rights, not root's.
  if (!spec.workdir.empty() && spec.workdir[0] != '/') MakeRelativeWorkdir(spec.workdir);
  std::string workdir = ResolveWorkdir(scratch, spec.workdir);
  // Relative to the scratch directory, or absolute.
  const char* enter = spec.workdir.empty() ? "." : spec.workdir.c_str();
  if (::chdir(enter) != 0) {
    Fail("cannot enter the working directory", workdir, WorkdirFailure(errno));
  }
  for (const auto& d : spec.job_dirs) {
    if (::access(d.c_str(), R_OK | W_OK | X_OK) != 0) {
      Fail(fmt::format("{} cannot use the job's directory", spec.user).c_str(),
           d + " (every directory above it must be searchable by the account)");
    }
  }
  // A documented base, then the master's variables: never the agent's own environment.
  const char* tz = ::getenv("TZ");
  std::map<std::string, std::string> env = TaskEnvironment(
      TaskEnvironmentInputs{spec.user, spec.home, spec.shell, tz ? tz : "", spec.env});
  if (!spec.path_prefix.empty()) env["PATH"] = spec.path_prefix + ":" + env["PATH"];
  std::vector<std::string> env_strings = EnvironmentStrings(env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // execvpe searches this process's PATH: the task's, which is what the user expects from a
  // shell.
  ::setenv("PATH", env["PATH"].c_str(), 1);
  ::execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  FailToExec(args[0], env["PATH"], spec.user, err);
}

// Exec of `podman run` for a task in a container (container_task.h), in the child. podman stays
// root, as rootful podman must; the command inside runs as the account.
[[noreturn]] void ExecContainer(const TaskSpec& spec, const std::string& dir, int log_fd,
                                const sigset_t& old_mask) {
  const ContainerTask& c = *spec.container;
  ::setpgid(0, 0);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  std::string scratch = dir + "/work";
  if (::chdir(scratch.c_str()) != 0) Fail("cannot enter the working directory", scratch);
  if (!spec.workdir.empty() && spec.workdir[0] != '/') {
    // Made as the account, which owns it, as for a bare task; podman would make it root's.
    if (::geteuid() == 0) {
      ::setfsgid(spec.gid);
      ::setfsuid(spec.uid);
    }
    MakeRelativeWorkdir(spec.workdir);
    if (::geteuid() == 0) {
      ::setfsuid(0);
      ::setfsgid(0);
    }
  }
  const std::string workdir = ResolveWorkdir(scratch, spec.workdir);
  // The base environment without the node's PATH and shell, which are the image's; HOME is the
  // scratch directory, the one home the account has inside.
  const char* tz = ::getenv("TZ");
  std::map<std::string, std::string> env = TaskEnvironment(
      TaskEnvironmentInputs{spec.user, spec.home, spec.shell, tz ? tz : "", spec.env});
  env.erase("PATH");
  env.erase("SHELL");
  env["HOME"] = scratch;
  // A file, never podman's own environment: a task's variable (CONTAINERS_CONF, say) must not
  // steer podman, which runs as root.
  auto content = ContainerEnvFile(env);
  if (!content.ok()) FailToStart(std::nullopt, content.status().message(), 126);
  const std::string env_file = dir + "/container.env";
  if (Status s = WriteFileAtomically(env_file, *content, 0600, Durability::kProcessCrash);
      !s.ok()) {
    FailToStart(std::nullopt, s.message(), 126);
  }
  std::vector<std::string> args =
      PodmanRunCommand(c, spec.uid, spec.gid, workdir, env_file, spec.command);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  FailToStart(
      std::nullopt,
      fmt::format("cannot run podman ({}) for the task's container: {}", c.podman, strerror(errno)),
      126);
}

// Runs one podman command to its end as the supervisor, its output in `output_file`; gives up
// (SIGKILL) when `stopped` says so or `limit` has passed. Returns its exit status, -1 if it
// could not be started or was given up.
int RunPodman(const std::vector<std::string>& argv, const std::string& output_file,
              const std::function<bool()>& stopped, Duration limit, const Clock& clock) {
  (void)::unlink(output_file.c_str());
  SpawnOptions options;
  options.output = output_file;
  auto pid = Spawn(argv, options);
  if (!pid.ok()) return -1;
  Timestamp give_up = clock.Now() + limit;
  while (true) {
    int status;
    pid_t done = ::waitpid(*pid, &status, WNOHANG);
    if (done == *pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0) return -1;
    if ((stopped && stopped()) || clock.Now() >= give_up) {
      ::kill(-*pid, SIGKILL);
      ::waitpid(*pid, &status, 0);
      return -1;
    }
    ::usleep(20'000);
  }
}

// The pull's state for the agent, which reports it (agent/container_task.h, ImagePull); a
// failure to write it only leaves the pull unreported.
void WritePullState(const std::string& dir, const ImagePull& pull) {
  (void)WriteFileAtomically(dir + "/" + kImagePullFile, ToJson(pull).dump(), 0644,
                            Durability::kProcessCrash);
}

// `podman pull` on a terminal of its own, the only way it says how many bytes it has: its
// lines go to the task's output (without the progress bars), its bytes to the pull state every
// second. Returns its exit status, or -1 if it could not be started or was given up (stopped, or
// over kMaxImagePull); `said` gets its lines.
int RunPull(const ContainerTask& c, const std::string& dir, int log_fd,
            const std::function<bool()>& stopped, const Clock& clock, std::string* said,
            ImagePull* pulled) {
  std::vector<std::string> args = PodmanPullCommand(c);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Wide enough that podman draws every layer's sizes rather than an ellipsis.
  winsize size{};
  size.ws_col = 200;
  size.ws_row = 50;
  int pty = -1;
  pid_t pid = ::forkpty(&pty, nullptr, nullptr, &size);
  if (pid < 0) return -1;
  if (pid == 0) {
    for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    dprintf(STDERR_FILENO, "Error: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  PullProgressReader reader;
  ImagePull pull{c.image};
  const Timestamp began = clock.Now();
  Timestamp next_state = began;
  const Timestamp give_up = began + kMaxImagePull;
  auto take_lines = [&] {
    std::string lines = reader.TakeLines();
    if (said->size() < PullProgressReader::kMaxKeptText) *said += lines;
    (void)!::write(log_fd, lines.data(), lines.size());
  };
  int status = 0;
  bool ended = false;
  bool given_up = false;
  while (!ended) {
    pollfd p{pty, POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) {
      char buf[16384];
      ssize_t n = ::read(pty, buf, sizeof(buf));
      if (n > 0) reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    take_lines();
    if (::waitpid(pid, &status, WNOHANG) == pid) ended = true;
    const Timestamp now = clock.Now();
    if (!ended && (stopped() || now >= give_up)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ended = given_up = true;
    }
    if (now >= next_state && !ended) {
      pull.done_bytes = reader.done_bytes();
      pull.total_bytes = reader.total_bytes();
      pull.took = now - began;
      WritePullState(dir, pull);
      next_state = now + std::chrono::seconds(1);
    }
  }
  // What was left in the terminal when podman exited.
  char buf[16384];
  ssize_t n;
  while ((n = ::read(pty, buf, sizeof(buf))) > 0) reader.Feed(std::string_view(buf, n));
  reader.Feed("\n");
  take_lines();
  ::close(pty);
  if (given_up) return -1;
  const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Finished only when pulled: a failed pull's reason comes with the task's end. The caller
  // writes it, once the image is in the cache's records.
  if (exit_status == 0) {
    pull.done_bytes = reader.done_bytes();
    pull.total_bytes = reader.total_bytes();
    pull.took = clock.Now() - began;
    pull.finished = true;
    *pulled = pull;
  }
  return exit_status;
}

// Keeps the node's image cache within its bound after a pull (agent/image_cache.h): the least
// recently used images Cohort pulled go, never this task's, nor one a container uses (podman
// refuses). One supervisor at a time (a lock in the cache directory). Problems go to the
// supervisor's log: the task runs all the same.
void EvictImages(const ContainerTask& c, const std::string& dir, const Clock& clock) {
  if (c.cache_dir.empty() || c.cache_bytes <= 0) return;
  int lock = ::open((c.cache_dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    fmt::print(stderr, "run-task: the image cache is not bounded now: {}: {}\n", c.cache_dir,
               strerror(errno));
    if (lock >= 0) ::close(lock);
    return;
  }
  const std::string out = dir + "/podman.log";
  std::map<std::string, int64_t> sizes;
  if (RunPodman({c.podman, "images", "--format", "json"}, out, nullptr, std::chrono::minutes(1),
                clock) == 0) {
    sizes = ImageSizesFromPodman(ReadFileOrEmpty(out));
  }
  // The names containers run, which podman would only untag where an image has several: in use.
  std::set<std::string> keep = {c.image};
  if (RunPodman({c.podman, "ps", "--all", "--format", "{{.Image}}"}, out, nullptr,
                std::chrono::minutes(1), clock) == 0) {
    for (const std::string& name : Split(ReadFileOrEmpty(out), '\n')) {
      if (!name.empty()) keep.insert(name);
    }
  } else {
    fmt::print(stderr, "run-task: the image cache is not bounded now: podman ps: {}\n",
               ReadFileOrEmpty(out));
    ::close(lock);
    return;
  }
  std::vector<CachedImage> cached = CachedImages(c.cache_dir);
  for (const CachedImage& image : cached) {
    // Removed by someone else (an admin's podman rmi): nothing left to account for.
    if (!sizes.empty() && !sizes.count(image.image)) ForgetImage(c.cache_dir, image.image);
  }
  for (const std::string& image : ImagesToEvict(cached, sizes, c.cache_bytes, keep)) {
    int status = RunPodman({c.podman, "rmi", image}, out, nullptr, std::chrono::minutes(1), clock);
    if (status == 0) {
      ForgetImage(c.cache_dir, image);
      fmt::print(stderr, "run-task: image cache over {}: removed {}\n",
                 FormatByteSizeApprox(c.cache_bytes), image);
    } else {
      fmt::print(stderr, "run-task: image cache: {} stays (in use?): {}\n", image,
                 ReadFileOrEmpty(out));
    }
  }
  ::close(lock);
}

// The task's image in the node's store before the task starts: pulled, its progress in the
// task's output and its pull state. An empty string once it is there; otherwise why not, and
// `kind` where no retry helps.
std::string PrepareImage(const ContainerTask& c, const std::string& dir, int log_fd,
                         const std::function<bool()>& stopped, const Clock& clock,
                         std::optional<StartFailure>* kind) {
  const std::string out = dir + "/podman.log";
  if (RunPodman(PodmanImageExistsCommand(c), out, stopped, std::chrono::minutes(1), clock) == 0) {
    // Used now: the last image the cache would let go.
    if (!c.cache_dir.empty()) (void)RecordImageUse(c.cache_dir, c.image, /*only_if_recorded=*/true);
    return "";
  }
  if (stopped()) return "";
  dprintf(log_fd, "cohort: pulling image %s\n", c.image.c_str());
  Timestamp began = clock.Now();
  std::string said;
  ImagePull pulled;
  int status = RunPull(c, dir, log_fd, stopped, clock, &said, &pulled);
  if (status == 0) {
    dprintf(log_fd, "cohort: pulled image %s in %s\n", c.image.c_str(),
            FormatDuration(clock.Now() - began).c_str());
    if (Status recorded = c.cache_dir.empty() ? Status::Ok() : RecordImageUse(c.cache_dir, c.image);
        !recorded.ok()) {
      fmt::print(stderr, "run-task: {}\n", recorded.message());
    }
    EvictImages(c, dir, clock);
    // Last: an agent that reads it finished lists the cache's records, which now hold the image.
    WritePullState(dir, pulled);
    return "";
  }
  if (stopped()) return "";
  if (status < 0) {
    return fmt::format("cannot pull image {}: no answer within {}", c.image,
                       FormatDuration(kMaxImagePull));
  }
  ContainerStartProblem problem = PullProblemOf(said, c);
  *kind = problem.kind;
  return problem.message;
}

// What podman and the container's init wrote before the command would have run: the start of
// the task's output from `from`.
std::string OutputFrom(const std::string& dir, off_t from) {
  int fd = ::open((dir + "/output.log").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text(8192, '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), from);
  ::close(fd);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

// The supervisor and its task (which inherits it) yield the CPU to the agent (docs/reliability.md,
// "The agent outlives its own tasks"). Not fatal: the task runs all the same.
void RunBelowTheAgent() {
  if (const char* failed = LowerPriority(kTaskNice)) {
    fmt::print(stderr, "run-task: cannot lower the task's CPU priority to nice {}: {}: {}\n",
               kTaskNice, failed, strerror(errno));
  }
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
    exit.message = doc.value("message", "");
    if (doc.contains("start_failure")) {
      exit.start_failure = ParseStartFailure(doc["start_failure"].get<std::string>());
    }
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
  if (!exit.message.empty()) doc["message"] = exit.message;
  if (exit.start_failure) doc["start_failure"] = StartFailureName(*exit.start_failure);
  return WriteFileAtomically(task_dir + "/exit.json", doc.dump() + "\n", 0600);
}

int RunTaskSupervisor(const std::string& dir) {
  RunBelowTheAgent();
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
  // The scratch directory and the output are the account's, and no one else's; the rest of the
  // task directory stays the supervisor's (docs/security.md).
  std::optional<Owner> owner;
  if (::geteuid() == 0) owner = Owner{spec->uid, spec->gid};
  if (Status work = EnsureDirectory(dir + "/work", 0700, owner); !work.ok()) {
    fmt::print(stderr, "run-task: {}\n", work.message());
    return finish(TaskExit{126, std::nullopt, false, {}, {}, work.message()});
  }
  int log_fd = ::open((dir + "/output.log").c_str(),
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log_fd < 0 || (owner && ::fchown(log_fd, owner->uid, owner->gid) != 0)) {
    fmt::print(stderr, "run-task: cannot open {}/output.log for {}: {}\n", dir, spec->user,
               strerror(errno));
    return finish(TaskExit{126, std::nullopt, false, {}, {}});
  }

  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, s);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);

  // Stopped before the command started: between tries at the store.
  auto stopped = [] {
    sigset_t pending;
    return ::sigpending(&pending) == 0 &&
           (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
  };
  auto log_line = [log_fd](const std::string& line) { dprintf(log_fd, "%s\n", line.c_str()); };
  // The job's checkpoint from its earlier attempt, before the task starts
  // (agent/checkpoint_sync.h).
  std::unique_ptr<CheckpointSync> checkpoints;
  if (spec->checkpoints) {
    checkpoints = std::make_unique<CheckpointSync>(*spec->checkpoints, dir, store::OpenStore, clock,
                                                   log_line);
    Status restored = checkpoints->Restore(owner, stopped);
    if (!restored.ok()) dprintf(log_fd, "cohort: %s\n", restored.message().c_str());
    if (!restored.ok() || stopped()) {
      ::close(log_fd);
      TaskExit exit{126, std::nullopt, stopped(), {}, {}, restored.ok() ? "" : restored.message()};
      return finish(exit);
    }
  }

  // Its datasets and code (agent/task_inputs.h); the datasets stay held until the supervisor
  // ends, the task's whole life.
  HeldInputs inputs;
  if (spec->inputs) {
    auto fetched =
        FetchTaskInputs(*spec->inputs, dir, store::OpenStore, clock, owner, stopped, log_line);
    if (!fetched.ok()) dprintf(log_fd, "cohort: %s\n", fetched.status().message().c_str());
    if (!fetched.ok() || stopped()) {
      ::close(log_fd);
      TaskExit exit{126, std::nullopt, stopped(),
                    {},  {},           fetched.ok() ? "" : fetched.status().message()};
      return finish(exit);
    }
    inputs = std::move(*fetched);
  }

  if (spec->container) {
    std::optional<StartFailure> kind;
    std::string problem = PrepareImage(*spec->container, dir, log_fd, stopped, clock, &kind);
    if (!problem.empty()) dprintf(log_fd, "cohort: %s\n", problem.c_str());
    if (!problem.empty() || stopped()) {
      ::close(log_fd);
      TaskExit exit{126, std::nullopt, stopped(), {}, {}, problem, kind};
      return finish(exit);
    }
  }

  std::string memory_warning;
  std::optional<TaskMemoryLimit> memory;
  // A container's limit is podman's (--memory).
  if (spec->memory && !spec->container)
    memory = TaskMemoryLimit::Prepare(*spec->memory, dir, &memory_warning);
  if (!memory_warning.empty()) {
    fmt::print(stderr, "run-task: the task's memory limit is not enforced: {}\n", memory_warning);
  }
  int setup_error[2];
  if (::pipe2(setup_error, O_CLOEXEC) != 0) {
    dprintf(log_fd, "cohort: cannot start the task: pipe: %s\n", strerror(errno));
    if (memory) (void)memory->Finish(false);
    return finish(TaskExit{126, std::nullopt, false, {}, {}});
  }
  const off_t output_before = ::lseek(log_fd, 0, SEEK_END);
  pid_t child = ::fork();
  if (child < 0) {
    dprintf(log_fd, "cohort: cannot start the task: %s\n", strerror(errno));
    if (memory) (void)memory->Finish(false);
    return finish(TaskExit{126, std::nullopt, false, {}, {}});
  }
  if (child == 0) {
    g_setup_error_fd = setup_error[1];
    if (spec->container) ExecContainer(*spec, dir, log_fd, old_mask);
    ExecTask(*spec, dir, log_fd, old_mask, memory ? memory->join_file() : nullptr);
  }
  ::close(setup_error[1]);
  ::setpgid(child, child);  // also in the parent, so that kill(-child) works at once
  if (checkpoints) checkpoints->Start();
  // A reboot ends the task: the pid need not survive one.
  if (Status s = WriteFileAtomically(dir + "/task.pid", std::to_string(child) + "\n", 0600,
                                     Durability::kProcessCrash);
      !s.ok()) {
    // The agent learns the pid later, or never; the task runs all the same.
    fmt::print(stderr, "run-task: {}\n", s.message());
  }
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
      SignalAll(self, child, SIGTERM, spec->container.has_value());
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
  // The task is over when its main process is: nothing it started may outlive it. As a
  // subreaper, the supervisor is the parent of every orphan of the task, so every process the
  // task left has a child of the supervisor above it: once no child is left, none is, and no
  // scan of /proc (every process's stat, two per task) is needed to know it.
  ::kill(-child, SIGKILL);
  ReapAll();
  for (int round = 0; round < 50 && HasChildren(); ++round) {
    SignalAll(self, child, SIGKILL);
    ReapAll();
    if (!HasChildren()) break;
    ::usleep(10'000);
  }
  if (spec->container) {
    // podman run --rm removes its container when it ends; one that podman could not see to its
    // end (killed after the grace period) may still be there.
    const std::string out = dir + "/podman-rm.log";
    if (int status = RunPodman(PodmanRemoveCommand(*spec->container), out, nullptr,
                               std::chrono::minutes(1), clock);
        status != 0) {
      fmt::print(stderr, "run-task: cannot remove container {} (status {}): {}\n",
                 spec->container->name, status, ReadFileOrEmpty(out));
    }
  }
  // The task's checkpoints, for its next attempt: unless it succeeded, its newest one first.
  if (checkpoints) {
    // A task stopped (preempted, paused) that exits 0 from its handler has not finished.
    bool succeeded = exit.exit_code == 0 && !exit.signal && !stopping;
    if (!checkpoints->Finish(!succeeded)) {
      (void)checkpoints.release();  // its last push still runs, and the supervisor soon exits
    }
  }
  // Every process of the task has ended: the group can tell whether the kernel killed one.
  if (memory) {
    std::string why = memory->Finish(exit.signal == SIGKILL);
    if (!why.empty()) {
      dprintf(log_fd, "cohort: %s\n", why.c_str());
      exit.message = why;
    }
  }
  trimmer.Trim();
  ::close(log_fd);
  // Nothing of the task runs any more: its scratch directory is emptied as its account, then
  // taken back, so that the agent, as root, later deletes only what the account can no longer
  // touch.
  Status emptied = EmptyDirectoryAs(dir + "/work", owner);
  if (emptied.ok() && owner)
    emptied = EnsureDirectory(dir + "/work", 0700, Owner{::geteuid(), ::getegid()});
  if (!emptied.ok()) fmt::print(stderr, "run-task: {}\n", emptied.message());
  // The child has ended, so every write end is closed: this reads what it said, or nothing.
  char why[1024];
  ssize_t n = ::read(setup_error[0], why, sizeof(why));
  if (n > 0) {
    std::string said(why, static_cast<size_t>(n));
    size_t newline = said.find('\n');
    if (newline == std::string::npos) {
      exit.message = said;
    } else {
      exit.start_failure = ParseStartFailure(said.substr(0, newline));
      exit.message = said.substr(newline + 1);
    }
  }
  ::close(setup_error[0]);
  if (spec->container && exit.message.empty() && exit.exit_code && *exit.exit_code != 0) {
    if (auto problem = ContainerStartProblemOf(*exit.exit_code, OutputFrom(dir, output_before),
                                               *spec->container, spec->command)) {
      exit.message = problem->message;
      exit.start_failure = problem->kind;
    }
  }
  exit.stopped = stopping;
  return finish(exit);
}

}  // namespace cohort::agent
