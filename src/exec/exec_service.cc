#include "exec/exec_service.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "exec/exec_request.h"
#include "exec/pipe_chunk.h"

namespace cohort::exec {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

void Say(const std::string& line) { fmt::print(stderr, "cohort-exec: {}\n", line); }

int64_t MillisLeft(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max<int64_t>(0, left.count());
}

void CatchStops() {
  struct sigaction action {};
  action.sa_handler = OnStop;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// Signals as a new program expects them: no handler of ours, nothing blocked or ignored.
void DefaultSignals() {
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

int ListenOn(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

std::string Peer(int fd) {
  sockaddr_in addr{};
  socklen_t length = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) return "a caller";
  char text[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return fmt::format("{}:{}", text, ntohs(addr.sin_port));
}

bool SendAll(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// The request line, within the deadline and kMaxRequestBytes; "" with `why` set otherwise.
std::string ReadRequestLine(int fd, Duration timeout, std::string* why) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  char buffer[8192];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(MillisLeft(deadline)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      *why = "no request within the time allowed";
      return "";
    }
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = "the caller hung up before its request was whole";
      return "";
    }
    line.append(buffer, static_cast<size_t>(n));
    if (size_t end = line.find('\n'); end != std::string::npos) return line.substr(0, end);
    if (line.size() > kMaxRequestBytes) {
      *why = fmt::format("the request is longer than {} bytes", kMaxRequestBytes);
      return "";
    }
  }
}

// Ends what is left of a command's process group: SIGTERM, then SIGKILL after `grace`.
void EndGroup(pid_t group, Duration grace) {
  ::kill(-group, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (::kill(-group, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
    int status;
    ::waitpid(group, &status, WNOHANG);
    ::usleep(20'000);
  }
  ::kill(-group, SIGKILL);
}

// One byte more of what the caller sent while its command runs: each whole "signal N" line
// signals the command's group (srun passing on a signal); anything else, and any line longer
// than one could be, is dropped.
void PassSignal(char c, pid_t child, const std::string& peer, std::string& line) {
  if (c != '\n') {
    if (line.size() < kMaxSignalLineBytes) line.push_back(c);
    return;
  }
  if (auto number = DecodeSignal(line)) {
    Say(fmt::format("{} sends signal {} to pid {}", peer, *number, child));
    ::kill(-child, *number);
  }
  line.clear();
}

// One connection, in a process of its own: the request, the command, the answer.
[[noreturn]] void Handle(int fd, const ServeOptions& options, const std::string& tmp) {
  DefaultSignals();
  CatchStops();
  const std::string peer = Peer(fd);
  auto answer = [&](const ExecAnswer& a) {
    SendAll(fd, EncodeAnswer(a));
    ::close(fd);
    _exit(0);
  };
  std::string why;
  std::string line = ReadRequestLine(fd, options.request_timeout, &why);
  if (line.empty() && !why.empty()) {
    Say(fmt::format("refused {}: {}", peer, why));
    answer(ExecAnswer::Refused(why));
  }
  auto request = DecodeRequest(line);
  if (!request.ok()) {
    Say(fmt::format("refused {}: {}", peer, request.status().message()));
    answer(ExecAnswer::Refused(request.status().message()));
  }
  const char* expected = ::getenv("COHORT_JOB_CREDENTIAL");
  if (expected == nullptr || *expected == '\0') {
    answer(ExecAnswer::Refused("this task holds no job credential to check callers against"));
  }
  const std::string_view want(expected);
  // In time that does not depend on where they differ.
  bool matches = request->credential.size() == want.size();
  unsigned char diff = 0;
  for (size_t i = 0; matches && i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(request->credential[i] ^ want[i]);
  }
  if (!matches || diff != 0) {
    Say(fmt::format("refused {}: not this job's credential", peer));
    answer(
        ExecAnswer::Refused("credential refused: only this job's own tasks may start commands "
                            "in it"));
  }
  std::string shown =
      request->command.size() > 160 ? request->command.substr(0, 160) + "..." : request->command;
  std::optional<std::string> gpus;
  if (request->gpus) {
    const char* visible = ::getenv("CUDA_VISIBLE_DEVICES");
    auto slice = SliceGpus(visible ? visible : "", *request->gpus);
    if (!slice.ok()) answer(ExecAnswer::Refused(slice.status().message()));
    gpus = *slice;
  }
  // Streamed: the command's output comes back through pipes; else it is the task's log.
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (request->stream && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    answer(ExecAnswer::Refused(fmt::format("cannot make pipes: {}", strerror(errno))));
  }
  pid_t child = ::fork();
  if (child < 0) answer(ExecAnswer::Refused(fmt::format("cannot fork: {}", strerror(errno))));
  if (child == 0) {
    ::close(fd);
    ::setpgid(0, 0);
    DefaultSignals();
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (request->stream) {
      ::dup2(out_pipe[1], STDOUT_FILENO);
      ::dup2(err_pipe[1], STDERR_FILENO);
    }
    // Two workers on one machine are two MPI nodes: each keeps its temporary files, and Open
    // MPI its shared-memory segments, apart from the other's (docs/job-spec.md, "MPI").
    ::setenv("TMPDIR", tmp.c_str(), 1);
    ::setenv("OMPI_MCA_btl_vader_backing_directory", tmp.c_str(), 0);
    for (const auto& [name, value] : request->env) ::setenv(name.c_str(), value.c_str(), 1);
    if (gpus) ::setenv("CUDA_VISIBLE_DEVICES", gpus->c_str(), 1);
    if (!request->cwd.empty() && ::chdir(request->cwd.c_str()) != 0) {
      dprintf(STDERR_FILENO, "cohort-exec: cannot enter %s: %s\n", request->cwd.c_str(),
              strerror(errno));
      _exit(126);
    }
    ::execl("/bin/sh", "sh", "-c", request->command.c_str(), static_cast<char*>(nullptr));
    dprintf(STDERR_FILENO, "cohort-exec: cannot run /bin/sh: %s\n", strerror(errno));
    _exit(127);
  }
  ::setpgid(child, child);
  for (int end : {out_pipe[1], err_pipe[1]}) {
    if (end >= 0) ::close(end);
  }
  Say(fmt::format("running for {} (pid {}){}: {}", peer, child,
                  request->stream ? ", its output to the caller" : "", shown));
  // Relays what the command wrote on `pipe` as a frame of `kind`; closes the pipe at its end.
  bool caller_gone = false;
  auto relay = [&](int& pipe, const char* kind) {
    char buffer[64 * 1024];
    std::string_view chunk = ReadChunk(pipe, buffer);
    if (!chunk.empty() && !SendAll(fd, EncodeFrame(kind, chunk))) caller_gone = true;
  };
  auto finish = [&](const ExecAnswer& a) {
    if (!request->stream) answer(a);
    // What is already in the pipes goes first; whatever still holds them open (a process that
    // left the command's group) is not waited for.
    for (auto [pipe, kind] : {std::pair{&out_pipe[0], "out"}, std::pair{&err_pipe[0], "err"}}) {
      if (*pipe < 0) continue;
      ::fcntl(*pipe, F_SETFL, O_NONBLOCK);
      char buffer[64 * 1024];
      ssize_t n;
      while (!caller_gone && (n = ::read(*pipe, buffer, sizeof(buffer))) > 0) {
        caller_gone =
            !SendAll(fd, EncodeFrame(kind, std::string_view(buffer, static_cast<size_t>(n))));
      }
      ::close(*pipe);
      *pipe = -1;
    }
    SendAll(fd, EncodeFrame("end", EncodeAnswer(a)));
    ::close(fd);
    _exit(0);
  };
  std::string signal_line;  // what the caller has sent of its next "signal N" line
  while (true) {
    int status;
    pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) {
      ::kill(-child, SIGKILL);  // nothing it started outlives it
      ExecAnswer a;
      if (WIFEXITED(status)) a.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) a.signal = WTERMSIG(status);
      finish(a);
    }
    pollfd p[3] = {{fd, POLLIN | POLLRDHUP, 0}, {out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    bool hung_up = g_stop != 0 || caller_gone;
    if (!hung_up && ::poll(p, 3, 100) > 0) {
      if (p[1].revents != 0) relay(out_pipe[0], "out");
      if (p[2].revents != 0) relay(err_pipe[0], "err");
      if (p[0].revents != 0) {
        char received[512];
        ssize_t n = ::recv(fd, received, sizeof(received), MSG_DONTWAIT);
        hung_up = (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0 || n == 0;
        for (ssize_t i = 0; i < n; ++i) PassSignal(received[i], child, peer, signal_line);
      }
      hung_up = hung_up || caller_gone;
    }
    if (hung_up) {
      Say(fmt::format("{} went away: ending pid {}", peer, child));
      EndGroup(child, options.hangup_grace);
      ::waitpid(child, &status, 0);
      _exit(0);
    }
  }
}

// Where the commands it starts keep their temporary files, its own; removed when it ends.
std::string MakePrivateTmp() {
  const char* base = ::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/cohort-exec-XXXXXX", base && *base ? base : "/tmp");
  if (::mkdtemp(pattern.data()) == nullptr) {
    Say(fmt::format("cannot make a temporary directory in {}: {}; commands share it",
                    base && *base ? base : "/tmp", strerror(errno)));
    return base && *base ? base : "/tmp";
  }
  return pattern;
}

}  // namespace

int Serve(const ServeOptions& options) {
  int port = options.port;
  if (port == 0) {
    const char* text = ::getenv("COHORT_TASK_PORT");
    port = text ? std::atoi(text) : 0;
  }
  if (port <= 0 || port > 65535) {
    Say("no port to serve on: give --port, or run as a Cohort task ($COHORT_TASK_PORT)");
    return 2;
  }
  CatchStops();
  int listener = ListenOn(port);
  if (listener < 0) {
    Say(fmt::format("cannot listen on port {}: {}", port, strerror(errno)));
    return 1;
  }
  const std::string tmp = MakePrivateTmp();
  Say(fmt::format("serving this task's commands on port {}", port));
  pid_t main_child = -1;
  if (!options.command.empty()) {
    main_child = ::fork();
    if (main_child == 0) {
      ::close(listener);
      DefaultSignals();
      // The private TMPDIR too, as the commands the service runs: a Slurm job's srun counts
      // its steps there.
      ::setenv("TMPDIR", tmp.c_str(), 1);
      std::vector<char*> argv;
      for (const auto& word : options.command) argv.push_back(const_cast<char*>(word.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      dprintf(STDERR_FILENO, "cohort-exec: cannot run %s: %s\n", argv[0], strerror(errno));
      _exit(errno == ENOENT ? 127 : 126);
    }
  }
  std::set<pid_t> sessions;
  int result = 0;
  bool main_done = false;
  while (g_stop == 0 && !main_done) {
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) {
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0 && static_cast<int>(sessions.size()) >= options.max_sessions) {
        SendAll(fd, EncodeAnswer(ExecAnswer::Refused(fmt::format(
                        "this task already runs {} commands for callers", sessions.size()))));
        ::close(fd);
      } else if (fd >= 0) {
        pid_t handler = ::fork();
        if (handler == 0) {
          ::close(listener);
          Handle(fd, options, tmp);
        }
        ::close(fd);
        if (handler > 0) sessions.insert(handler);
      }
    }
    int status;
    pid_t done;
    while ((done = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (done == main_child) {
        main_done = true;
        result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      sessions.erase(done);
    }
  }
  ::close(listener);
  // Its sessions end their commands as if their callers had hung up.
  for (pid_t handler : sessions) ::kill(handler, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + options.hangup_grace + std::chrono::seconds(1);
  while (!sessions.empty() && std::chrono::steady_clock::now() < deadline) {
    int status;
    pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      sessions.erase(done);
      if (done == main_child && !main_done) {
        main_done = true;
        result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    } else {
      ::usleep(20'000);
    }
  }
  std::error_code ec;
  if (tmp.find("/cohort-exec-") != std::string::npos) std::filesystem::remove_all(tmp, ec);
  return result;
}

}  // namespace cohort::exec
