#include "terminal/terminal_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "terminal/terminal_frame.h"
#include "terminal/terminal_hello.h"

namespace cohort::terminal {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
// While the person's connection holds this much not yet sent, the shell's output is not read:
// the shell waits for a slow reader rather than the server holding without bound.
constexpr size_t kMaxClientBacklog = 1024 * 1024;
// Input not yet taken by the terminal: past this, the person's connection is not read.
constexpr size_t kMaxPendingInput = 64 * 1024;
// After the shell ended: at most this much of its last output is still passed on, within this
// long, before the server ends.
constexpr size_t kMaxFinalOutput = 1024 * 1024;
constexpr int kFinalFlushMs = 2000;

void Say(const std::string& line) {
  std::string text = "cohort-terminal: " + line + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Compares without stopping at the first difference, so that timing tells a stranger nothing of
// the credential but its length.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool Executable(const std::string& path) {
  return !path.empty() && path[0] == '/' && ::access(path.c_str(), X_OK) == 0;
}

std::vector<std::string> DefaultShell() {
  const char* shell = std::getenv("SHELL");
  if (shell && Executable(shell)) return {shell};
  if (Executable("/bin/bash")) return {"/bin/bash"};
  return {"/bin/sh"};
}

struct Peer {
  int fd = -1;
  FrameReader reader;
  std::string out;  // not yet written
  int64_t deadline_ms = 0;
  bool open() const { return fd >= 0; }
};

class Server {
 public:
  explicit Server(const ServerOptions& options) : options_(options) {
    if (options_.credential.empty()) {
      if (const char* c = std::getenv("COHORT_JOB_CREDENTIAL")) options_.credential = c;
    }
    // The shell and what it starts never see it.
    ::unsetenv("COHORT_JOB_CREDENTIAL");
    if (options_.port == 0) {
      if (const char* p = std::getenv("COHORT_TASK_PORT")) options_.port = std::atoi(p);
    }
    if (options_.shell.empty()) options_.shell = DefaultShell();
  }

  int Run() {
    if (options_.credential.empty()) {
      Say("COHORT_JOB_CREDENTIAL is not set: the server of a session's terminal runs as a "
          "session's task, which Cohort starts (cohort shell)");
      return 2;
    }
    if (options_.port <= 0 || options_.port > 65535) {
      Say("no port to serve on: give --port, or run as a session's task ($COHORT_TASK_PORT)");
      return 2;
    }
    if (!Listen() || !WatchSignals()) return 2;
    Say("serving the session's terminal on port " + std::to_string(options_.port));
    while (true) {
      if (std::optional<int> status = Step()) return *status;
    }
  }

 private:
  bool Listen() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(options_.port));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
      Say("cannot listen on port " + std::to_string(options_.port) + ": " + std::strerror(errno));
      return false;
    }
    return true;
  }

  // SIGCHLD (the shell ended) and the signals that stop the task, read from a descriptor in the
  // poll loop instead of interrupting it.
  bool WatchSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return false;
    signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    // A write to a connection that has closed fails with EPIPE instead of killing the server.
    ::signal(SIGPIPE, SIG_IGN);
    if (signal_fd_ < 0) Say(std::string("signalfd: ") + std::strerror(errno));
    return signal_fd_ >= 0;
  }

  // One round of the loop: the server's exit status once it is done.
  std::optional<int> Step() {
    std::vector<pollfd> fds;
    fds.push_back({signal_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    const size_t pending_at = fds.size();
    int64_t next_deadline = -1;
    for (const Peer& p : pending_) {
      fds.push_back({p.fd, POLLIN, 0});
      if (next_deadline < 0 || p.deadline_ms < next_deadline) next_deadline = p.deadline_ms;
    }
    const size_t client_at = fds.size();
    if (client_.open()) {
      short events = 0;
      if (pty_input_.size() < kMaxPendingInput) events |= POLLIN;
      if (!client_.out.empty()) events |= POLLOUT;
      fds.push_back({client_.fd, events, 0});
    }
    const size_t pty_at = fds.size();
    if (pty_ >= 0) {
      short events = 0;
      if (!client_.open() || client_.out.size() < kMaxClientBacklog) events |= POLLIN;
      if (!pty_input_.empty()) events |= POLLOUT;
      fds.push_back({pty_, events, 0});
    }
    int timeout = -1;
    if (next_deadline >= 0)
      timeout = static_cast<int>(std::max<int64_t>(0, next_deadline - NowMs()));
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) {
      Say(std::string("poll: ") + std::strerror(errno));
      return 2;
    }
    if (fds[0].revents) {
      if (std::optional<int> status = OnSignals()) return status;
    }
    if (fds[1].revents & POLLIN) Accept();
    // Pending connections: the vector may change below, so they go by descriptor.
    std::vector<std::pair<int, short>> pending_events;
    for (size_t i = pending_at; i < client_at; ++i)
      pending_events.emplace_back(fds[i].fd, fds[i].revents);
    for (auto [fd, revents] : pending_events) {
      if (revents) OnPendingReadable(fd);
    }
    ExpirePending();
    if (client_at < fds.size() && client_.open() && fds[client_at].fd == client_.fd) {
      short revents = fds[client_at].revents;
      if (revents & POLLOUT) FlushClient();
      if (client_.open() && (revents & (POLLIN | POLLHUP | POLLERR))) ReadClient();
    }
    if (pty_at < fds.size() && pty_ >= 0) {
      short revents = fds[pty_at].revents;
      if (revents & POLLOUT) WritePty();
      if (pty_ >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) ReadPty();
    }
    if (shell_status_) return Finish();
    return std::nullopt;
  }

  std::optional<int> OnSignals() {
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
      if (info.ssi_signo == SIGCHLD) {
        Reap();
        continue;
      }
      // The task is being stopped: hang up the shell's terminal, as a closed terminal would.
      if (shell_pid_ <= 0) return 0;
      if (!stopping_) {
        stopping_ = true;
        Notice("the session is being stopped");
        ::kill(-shell_pid_, SIGHUP);
        ::kill(-shell_pid_, SIGCONT);
      }
    }
    return std::nullopt;
  }

  void Reap() {
    int status = 0;
    while (shell_pid_ > 0) {
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      if (pid != shell_pid_) continue;
      shell_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }

  void Accept() {
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      if (pending_.size() >= options_.max_pending) {
        ::close(fd);  // a flood of connections waits for no one's hello
        continue;
      }
      Peer p;
      p.fd = fd;
      p.deadline_ms = NowMs() + options_.hello_timeout_ms;
      pending_.push_back(std::move(p));
    }
  }

  void ExpirePending() {
    const int64_t now = NowMs();
    for (size_t i = 0; i < pending_.size();) {
      if (pending_[i].deadline_ms <= now) {
        Refuse(pending_[i].fd, "no hello within the time allowed");
        pending_.erase(pending_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }

  // Says why, as far as the socket takes it at once, and closes.
  static void Refuse(int fd, const std::string& why) {
    std::string frame = EncodeFrame(FrameType::kRefused, why);
    ssize_t ignored = ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
    ::close(fd);
  }

  void OnPendingReadable(int fd) {
    size_t i = 0;
    while (i < pending_.size() && pending_[i].fd != fd) ++i;
    if (i == pending_.size()) return;
    Peer& p = pending_[i];
    char buf[kReadChunk];
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      ::close(fd);
      pending_.erase(pending_.begin() + static_cast<long>(i));
      return;
    }
    p.reader.Append(std::string_view(buf, static_cast<size_t>(n)));
    std::string error;
    std::optional<Frame> frame = p.reader.Next(&error);
    if (!frame) {
      if (error.empty() && p.reader.buffered() <= kFrameHeaderBytes + kMaxFramePayload) return;
      Refuse(fd, error.empty() ? "the stream is not terminal frames" : error);
      pending_.erase(pending_.begin() + static_cast<long>(i));
      return;
    }
    std::optional<Hello> hello;
    if (frame->type != FrameType::kHello) {
      error = "the first frame must be a hello";
    } else {
      hello = ParseHello(frame->payload, &error);
      if (hello && !SameSecret(hello->credential, options_.credential)) {
        hello.reset();
        error = "the credential is not this job's";
      }
    }
    if (!hello) {
      Say("refused a connection: " + error);
      Refuse(fd, error);
      pending_.erase(pending_.begin() + static_cast<long>(i));
      return;
    }
    Peer attached = std::move(p);
    pending_.erase(pending_.begin() + static_cast<long>(i));
    Attach(std::move(attached), *hello);
  }

  void Attach(Peer peer, const Hello& hello) {
    if (client_.open()) {
      Notice("attached from another terminal; this one is detached");
      FlushClient();
      ::close(client_.fd);
    }
    client_ = std::move(peer);
    client_.deadline_ms = 0;
    Say("attached: " + hello.user);
    if (shell_pid_ <= 0 && !shell_status_) {
      StartShell(hello);
    } else {
      SetSize(hello.size);
      // What the shell wrote lately, so that the person sees where they left it.
      for (size_t at = 0; at < replay_.size(); at += kMaxFramePayload) {
        client_.out +=
            EncodeFrame(FrameType::kOutput, std::string_view(replay_).substr(at, kMaxFramePayload));
      }
    }
    // Anything that came after the hello in the same read.
    ProcessClientFrames();
  }

  void StartShell(const Hello& hello) {
    winsize ws{};
    ws.ws_col = static_cast<unsigned short>(hello.size.cols);
    ws.ws_row = static_cast<unsigned short>(hello.size.rows);
    int master = -1;
    pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
    if (pid < 0) {
      Notice(std::string("cannot start a shell: ") + std::strerror(errno));
      shell_status_ = 126;
      return;
    }
    if (pid == 0) {
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::signal(SIGPIPE, SIG_DFL);
      ::setenv("TERM", hello.term.empty() ? "xterm" : hello.term.c_str(), 1);
      std::vector<char*> argv;
      for (const auto& word : options_.shell) argv.push_back(const_cast<char*>(word.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::string why =
          "cohort-terminal: cannot run " + options_.shell[0] + ": " + std::strerror(errno) + "\r\n";
      ssize_t ignored = ::write(STDERR_FILENO, why.data(), why.size());
      (void)ignored;
      ::_exit(127);
    }
    ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
    ::fcntl(master, F_SETFD, FD_CLOEXEC);
    pty_ = master;
    shell_pid_ = pid;
    Say("started " + options_.shell[0]);
  }

  void SetSize(const WindowSize& size) {
    if (pty_ < 0) return;
    winsize ws{};
    ws.ws_col = static_cast<unsigned short>(size.cols);
    ws.ws_row = static_cast<unsigned short>(size.rows);
    ::ioctl(pty_, TIOCSWINSZ, &ws);
  }

  void Notice(const std::string& text) {
    if (client_.open()) client_.out += EncodeFrame(FrameType::kNotice, text);
  }

  void Detach(const std::string& why) {
    if (!client_.open()) return;
    Say("detached: " + why);
    ::close(client_.fd);
    client_ = Peer{};
  }

  void ReadClient() {
    char buf[kReadChunk];
    ssize_t n = ::read(client_.fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return Detach("the connection closed");
    client_.reader.Append(std::string_view(buf, static_cast<size_t>(n)));
    ProcessClientFrames();
  }

  void ProcessClientFrames() {
    std::string error;
    while (client_.open()) {
      std::optional<Frame> frame = client_.reader.Next(&error);
      if (!frame) break;
      if (frame->type == FrameType::kInput) {
        pty_input_ += frame->payload;
      } else if (frame->type == FrameType::kResize) {
        if (auto size = ParseWindowSize(frame->payload)) SetSize(*size);
      } else {
        error = "a frame of a kind the terminal does not take";
        break;
      }
    }
    if (!error.empty() && client_.open()) {
      client_.out += EncodeFrame(FrameType::kRefused, error);
      FlushClient();
      Detach(error);
    }
    if (!pty_input_.empty()) WritePty();
  }

  void FlushClient() {
    while (client_.open() && !client_.out.empty()) {
      ssize_t n = ::send(client_.fd, client_.out.data(), client_.out.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) return Detach("the connection failed");
      client_.out.erase(0, static_cast<size_t>(n));
    }
  }

  void WritePty() {
    while (pty_ >= 0 && !pty_input_.empty()) {
      ssize_t n = ::write(pty_, pty_input_.data(), pty_input_.size());
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) {
        pty_input_.clear();
        return;
      }
      pty_input_.erase(0, static_cast<size_t>(n));
    }
  }

  // What the shell wrote: to the person attached, and into the replay.
  void ReadPty() {
    char buf[kReadChunk];
    ssize_t n = ::read(pty_, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      // Every holder of the terminal's other side has closed it (EIO): the shell is ending.
      ::close(pty_);
      pty_ = -1;
      return;
    }
    OnOutput(std::string_view(buf, static_cast<size_t>(n)));
  }

  void OnOutput(std::string_view data) {
    replay_.append(data);
    if (replay_.size() > 2 * options_.replay_bytes) {
      replay_.erase(0, replay_.size() - options_.replay_bytes);
    }
    if (client_.open()) {
      client_.out += EncodeFrame(FrameType::kOutput, data);
      FlushClient();
    }
  }

  // The shell ended: its last output and its status to the person attached, then the end.
  int Finish() {
    size_t passed = 0;
    char buf[kReadChunk];
    while (pty_ >= 0 && passed < kMaxFinalOutput) {
      ssize_t n = ::read(pty_, buf, sizeof(buf));
      if (n <= 0) break;
      passed += static_cast<size_t>(n);
      OnOutput(std::string_view(buf, static_cast<size_t>(n)));
    }
    const int status = *shell_status_;
    Say("the shell ended with status " + std::to_string(status));
    if (client_.open()) {
      client_.out += EncodeFrame(FrameType::kExit, std::to_string(status));
      const int64_t until = NowMs() + kFinalFlushMs;
      while (client_.open() && !client_.out.empty() && NowMs() < until) {
        pollfd p{client_.fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        FlushClient();
      }
      Detach("the shell ended");
    }
    return status;
  }

  ServerOptions options_;
  int listen_fd_ = -1;
  int signal_fd_ = -1;
  std::vector<Peer> pending_;
  Peer client_;
  int pty_ = -1;
  pid_t shell_pid_ = 0;
  std::optional<int> shell_status_;
  bool stopping_ = false;
  std::string pty_input_;
  std::string replay_;
};

}  // namespace

int Serve(const ServerOptions& options) { return Server(options).Run(); }

}  // namespace cohort::terminal
