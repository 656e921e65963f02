#include "exec/slurm_batch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/strings.h"
#include "exec/pipe_chunk.h"

extern char** environ;

namespace cohort::exec {
namespace {

using Clock = std::chrono::steady_clock;

// The signals that stop the task (and what sbatch users send with scancel --signal): they reach
// the script's whole process group, as slurmstepd delivers them to a batch step.
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCONT};

// Set by the handlers, taken by the relay loop. The handled signals are blocked except inside
// ppoll, so none is missed between a check and the wait.
volatile sig_atomic_t g_received[NSIG] = {};
void OnForwarded(int s) { g_received[s] = 1; }
void OnChild(int) {}  // only to wake ppoll: the loop reaps

void BatchSay(const std::string& line) { fmt::print(stderr, "cohort-exec batch: {}\n", line); }

int BatchFail(const std::string& why) {
  BatchSay(why);
  return 1;
}

sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  return set;
}

// Catches what is forwarded and SIGCHLD, all blocked until the relay loop waits. A log that is
// gone (EPIPE) must not end the wrapper before the script's status is known: SIGPIPE ignored.
void CatchSignals() {
  sigset_t handled = HandledSignals();
  ::sigprocmask(SIG_BLOCK, &handled, nullptr);
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  action.sa_handler = OnForwarded;
  for (int s : kForwarded) ::sigaction(s, &action, nullptr);
  action.sa_handler = OnChild;
  action.sa_flags = SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// In the child, before exec: the script starts with default dispositions and nothing blocked. A
// signal the wrapper sent before this (--signal at 0 s) stayed pending and now acts as it would.
void ScriptDefaultSignals() {
  for (int s : kForwarded) ::signal(s, SIG_DFL);
  ::signal(SIGCHLD, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The script's first line, without its newline. The kernel reads only the first few hundred
// bytes; a line longer than 4 KiB is cut there, which no interpreter path reaches.
StatusOr<std::string> FirstLine(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::InvalidArgument(
        fmt::format("cannot read the batch script {}: {}", path, strerror(errno)));
  }
  char buffer[4096];
  size_t got = 0;
  while (got < sizeof(buffer)) {
    ssize_t n = ::read(fd, buffer + got, sizeof(buffer) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Status::InvalidArgument(
          fmt::format("cannot read the batch script {}: {}", path, strerror(err)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (std::memchr(buffer, '\n', got) != nullptr) break;
  }
  ::close(fd);
  std::string_view text(buffer, got);
  return std::string(text.substr(0, text.find('\n')));
}

// One of --output, --error and --input, opened for the script; the files it writes are created
// 0644 less the umask, as slurmstepd creates them.
StatusOr<int> OpenFile(const char* option, const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::InvalidArgument(
        fmt::format("cannot open {} file {}: {}", option, path, strerror(errno)));
  }
  return fd;
}

bool SameFile(int a, int b) {
  struct stat sa {};
  struct stat sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// A file the script's output goes to. After its first failed write it is given up (a file with
// holes in it would mislead more than one that stops, with the reason in the log), while the log
// goes on getting everything.
struct OutputFile {
  int fd = -1;
  std::string path;
  const char* option = "";
  bool failed = false;

  void Write(const char* data, size_t size) {
    if (failed || WriteAll(fd, data, size)) return;
    failed = true;
    BatchSay(
        fmt::format("cannot write to {} file {}: {}; the script's output goes on to this log only",
                    option, path, strerror(errno)));
  }
};

// One of the script's two outputs: its pipe, the file and the log it goes to.
struct Relay {
  int pipe = -1;
  OutputFile* file = nullptr;
  int log = -1;

  // One chunk of what the script wrote, whole to the file and to the log; at its end (or a read
  // error) the pipe is closed.
  void Pass() {
    char buffer[64 * 1024];
    std::string_view chunk = ReadChunk(pipe, buffer);
    if (chunk.empty()) return;
    file->Write(chunk.data(), chunk.size());
    // A log that is gone loses this chunk and no more: the file and the exit status still count.
    WriteAll(log, chunk.data(), chunk.size());
  }
};

// The script's steps: the processes of its group that are srun (by their argv[0], as the script
// ran them), each of which passes a signal on to its tasks on every node.
std::vector<pid_t> StepsOf(pid_t group) {
  std::vector<pid_t> steps;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid == group || ::getpgid(pid) != group) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string argv0;
    std::getline(cmdline, argv0, '\0');
    if (std::filesystem::path(argv0).filename() == "srun") steps.push_back(pid);
  }
  return steps;
}

int StatusOfWait(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int MillisUntil(Clock::time_point when) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

// The child: the script in a process group of its own (what --signal without B: and the
// forwarded signals reach), its stdin, and its two pipes. Never returns. `words` were made
// before the fork, so that the child only makes system calls.
[[noreturn]] void ExecScript(const std::vector<char*>& words, const std::string& script, int input,
                             int out, int err) {
  ::setpgid(0, 0);
  ::dup2(input, STDIN_FILENO);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  ScriptDefaultSignals();
  // The interpreter as written, not searched for on the PATH: what the kernel would run.
  ::execv(words[0], words.data());
  int error = errno;
  std::string_view interpreter = words[0];
  const char* hint = "";
  if (interpreter.back() == '\r') {
    hint = " (the script has DOS line endings: a carriage return ends its \"#!\" line)";
  } else if (interpreter.front() != '/') {
    hint =
        " (the kernel takes it as a path from the current directory; it is not searched for "
        "on the PATH)";
  }
  dprintf(STDERR_FILENO,
          "cohort-exec batch: cannot run %s, the interpreter that the \"#!\" line of %s names: "
          "%s%s\n",
          words[0], script.c_str(), strerror(error), hint);
  _exit(error == ENOENT ? 127 : 126);
}

// Makes sure descriptors 0, 1 and 2 are open (on /dev/null where they were not), so that no
// file or pipe opened later takes one of them and is then lost to the dup2s of ExecScript.
void HoldStandardDescriptors() {
  int fd;
  while ((fd = ::open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO) {
  }
  if (fd > STDERR_FILENO) ::close(fd);
}

}  // namespace

StatusOr<BatchSignal> ParseBatchSignal(std::string_view text) {
  auto malformed = [&] {
    return Status::InvalidArgument(fmt::format(
        "COHORT_SLURM_SIGNAL: \"{}\" is not [B:]NUMBER@SECONDS (a signal number, and the seconds "
        "after the script starts to send it)",
        text));
  };
  BatchSignal signal;
  std::string_view rest = text;
  if (rest.substr(0, 2) == "B:") {
    signal.script_only = true;
    rest.remove_prefix(2);
  }
  size_t at = rest.find('@');
  if (at == std::string_view::npos) return malformed();
  auto number = ParseInteger(rest.substr(0, at), 1, SIGRTMAX);
  // Up to a year: more than any time limit a job is given.
  auto seconds = ParseInteger(rest.substr(at + 1), 0, 366 * 24 * 3600);
  if (!number || !seconds) return malformed();
  signal.number = static_cast<int>(*number);
  signal.seconds = *seconds;
  return signal;
}

StatusOr<BatchSettings> BatchSettingsFromEnv(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  BatchSettings settings;
  settings.script = get("COHORT_SLURM_SCRIPT");
  settings.output = get("COHORT_SLURM_OUTPUT");
  for (auto [name, value] : {std::pair{"COHORT_SLURM_SCRIPT", &settings.script},
                             std::pair{"COHORT_SLURM_OUTPUT", &settings.output}}) {
    if (value->empty()) {
      return Status::InvalidArgument(
          fmt::format("{} is not set: cohort-exec batch runs the batch script of a job that "
                      "`cohort sbatch` started, with the variables Cohort gives it",
                      name));
    }
  }
  settings.error = get("COHORT_SLURM_ERROR");
  settings.input = get("COHORT_SLURM_INPUT");
  const std::string mode = get("COHORT_SLURM_OPEN_MODE");
  if (mode == "append") {
    settings.append = true;
  } else if (!mode.empty() && mode != "truncate") {
    return Status::InvalidArgument(
        fmt::format("COHORT_SLURM_OPEN_MODE: \"{}\" is neither \"append\" nor \"truncate\"", mode));
  }
  if (std::string text = get("COHORT_SLURM_SIGNAL"); !text.empty()) {
    COHORT_ASSIGN_OR_RETURN(settings.signal, ParseBatchSignal(text));
  }
  return settings;
}

StatusOr<std::vector<std::string>> ScriptCommand(std::string_view first_line,
                                                 const std::string& script,
                                                 const std::vector<std::string>& args) {
  if (first_line.substr(0, 2) != "#!") {
    return Status::InvalidArgument(fmt::format(
        "{} is not a batch script: its first line must be a \"#!\" line naming its interpreter "
        "(e.g. #!/bin/bash), as sbatch requires",
        script));
  }
  // As Linux's binfmt_script reads it: spaces and tabs separate, and all that follows the
  // interpreter is one argument, however many words it holds.
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::string_view rest = first_line.substr(2);
  while (!rest.empty() && blank(rest.front())) rest.remove_prefix(1);
  size_t end = 0;
  while (end < rest.size() && !blank(rest[end])) ++end;
  std::string_view interpreter = rest.substr(0, end);
  std::string_view argument = rest.substr(end);
  while (!argument.empty() && blank(argument.front())) argument.remove_prefix(1);
  while (!argument.empty() && blank(argument.back())) argument.remove_suffix(1);
  if (interpreter.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: its \"#!\" line names no interpreter (e.g. #!/bin/bash)", script));
  }
  std::vector<std::string> argv = {std::string(interpreter)};
  if (!argument.empty()) argv.emplace_back(argument);
  argv.push_back(script);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int RunBatch(const BatchSettings& settings, const std::vector<std::string>& args) {
  const auto started = Clock::now();
  HoldStandardDescriptors();
  auto first_line = FirstLine(settings.script);
  if (!first_line.ok()) return BatchFail(first_line.status().message());
  auto argv = ScriptCommand(*first_line, settings.script, args);
  if (!argv.ok()) return BatchFail(argv.status().message());

  // O_APPEND in both modes: when --output and --error are one file, or another writer shares
  // it, each chunk lands whole at its end.
  const int write_flags = O_WRONLY | O_CREAT | O_APPEND | (settings.append ? 0 : O_TRUNC);
  auto output_fd = OpenFile("--output", settings.output, write_flags);
  if (!output_fd.ok()) return BatchFail(output_fd.status().message());
  OutputFile output{*output_fd, settings.output, "--output"};
  OutputFile error_file{-1, settings.error, "--error"};
  OutputFile* errors = &output;
  if (!settings.error.empty()) {
    auto error_fd = OpenFile("--error", settings.error, write_flags);
    if (!error_fd.ok()) return BatchFail(error_fd.status().message());
    error_file.fd = *error_fd;
    // The same file under two names is written through one descriptor, as if --error were not
    // given: two would each truncate, and each report its own failures.
    if (SameFile(output.fd, error_file.fd)) {
      ::close(error_file.fd);
      error_file.fd = -1;
    } else {
      errors = &error_file;
    }
  }
  const std::string input_path = settings.input.empty() ? "/dev/null" : settings.input;
  auto input = OpenFile("--input", input_path, O_RDONLY);
  if (!input.ok()) return BatchFail(input.status().message());

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return BatchFail(fmt::format("cannot make pipes: {}", strerror(errno)));
  }
  BatchSay(fmt::format("running {}; output to {}{}", settings.script, settings.output,
                       errors == &error_file ? ", errors to " + settings.error : ""));
  std::vector<char*> words;
  for (auto& word : *argv) words.push_back(word.data());
  words.push_back(nullptr);
  CatchSignals();
  pid_t child = ::fork();
  if (child < 0) return BatchFail(fmt::format("cannot fork: {}", strerror(errno)));
  if (child == 0) ExecScript(words, settings.script, *input, out_pipe[1], err_pipe[1]);
  // Here too, so that a signal forwarded before the child got to it finds the group.
  ::setpgid(child, child);
  for (int fd : {out_pipe[1], err_pipe[1], *input}) ::close(fd);

  Relay relays[2] = {{out_pipe[0], &output, STDOUT_FILENO}, {err_pipe[0], errors, STDERR_FILENO}};
  sigset_t waiting;  // what ppoll lets in: everything
  sigemptyset(&waiting);
  const auto signal_at =
      started + std::chrono::seconds(settings.signal ? settings.signal->seconds : 0);
  bool signal_due = settings.signal.has_value();
  std::optional<int> result;
  Clock::time_point ended;
  while (true) {
    for (int s : kForwarded) {
      if (g_received[s] == 0) continue;
      g_received[s] = 0;
      ::kill(-child, s);
    }
    if (signal_due && Clock::now() >= signal_at) {
      signal_due = false;
      if (!result && settings.signal->script_only) {
        BatchSay(fmt::format("sending signal {} to the script (--signal=B:...)",
                             settings.signal->number));
        ::kill(child, settings.signal->number);
      } else if (!result) {
        // As Slurm: to the job's steps, not the batch shell (which B: is for).
        const std::vector<pid_t> steps = StepsOf(child);
        BatchSay(fmt::format("sending signal {} to the script's {} running srun step{} (--signal)",
                             settings.signal->number, steps.size(), steps.size() == 1 ? "" : "s"));
        for (pid_t step : steps) ::kill(step, settings.signal->number);
      }
    }
    int status;
    if (!result && ::waitpid(child, &status, WNOHANG) == child) {
      result = StatusOfWait(status);
      ended = Clock::now();
    }
    const bool open = relays[0].pipe >= 0 || relays[1].pipe >= 0;
    if (result && !open) break;
    if (result && Clock::now() >= ended + settings.drain_limit) {
      BatchSay(
          "the script has ended, but processes it started still hold its output open: no longer "
          "relaying it");
      break;
    }
    // Waits for output, a signal (the script's end among them) or the next deadline; at most a
    // second, as a guard.
    int timeout = 1000;
    if (signal_due) timeout = std::min(timeout, MillisUntil(signal_at));
    if (result) timeout = std::min(timeout, MillisUntil(ended + settings.drain_limit));
    pollfd fds[2] = {{relays[0].pipe, POLLIN, 0}, {relays[1].pipe, POLLIN, 0}};
    timespec wait{timeout / 1000, (timeout % 1000) * 1'000'000L};
    if (::ppoll(fds, 2, &wait, &waiting) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents != 0 && relays[i].pipe >= 0) relays[i].Pass();
    }
  }
  for (Relay& relay : relays) {
    if (relay.pipe >= 0) ::close(relay.pipe);
  }
  for (OutputFile* file : {&output, &error_file}) {
    // Some file systems (NFS) report a failed write only here.
    if (file->fd >= 0 && ::close(file->fd) != 0 && !file->failed) {
      BatchSay(
          fmt::format("cannot write to {} file {}: {}", file->option, file->path, strerror(errno)));
    }
  }
  return *result;
}

int BatchMain(const std::vector<std::string>& args) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals != std::string_view::npos) {
      env.emplace(text.substr(0, equals), text.substr(equals + 1));
    }
  }
  auto settings = BatchSettingsFromEnv(env);
  if (!settings.ok()) return BatchFail(settings.status().message());
  return RunBatch(*settings, args);
}

}  // namespace cohort::exec
