// cohort shell: an interactive shell on GPUs (docs/runtimes.md, "Shells"). It submits a session
// (a job with a `session` section), waits until its task runs, and attaches this terminal to the
// task's shell through the master (terminal/terminal_frame.h); `--attach JOB` attaches again
// after a dropped connection. The terminal is raw meanwhile: every key, Ctrl-C included, goes to
// the shell, and the window's size follows this one's.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "cli/cli.h"
#include "cli/session_jobs.h"
#include "terminal/terminal_frame.h"

namespace cohort::cli {
namespace {

using terminal::EncodeFrame;
using terminal::FrameReader;
using terminal::FrameType;

struct ShellOptions {
  SessionOptions session = SessionOptions::Of("shell");
  std::string attach;
};

// The write end of a pipe that SIGWINCH writes a byte to, so that the poll loop sees resizes.
int g_winch_pipe = -1;

void OnWinch(int) {
  if (g_winch_pipe >= 0) {
    char c = 1;
    ssize_t ignored = ::write(g_winch_pipe, &c, 1);
    (void)ignored;
  }
}

terminal::WindowSize CurrentSize() {
  winsize ws{};
  if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    return terminal::WindowSize{ws.ws_col, ws.ws_row};
  }
  return terminal::WindowSize{};
}

// This terminal in raw mode for as long as it lives (when stdin is one), as it was after.
class RawTerminal {
 public:
  RawTerminal() {
    if (!::isatty(STDIN_FILENO) || ::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0) active_ = true;
  }
  ~RawTerminal() { Restore(); }
  void Restore() {
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    active_ = false;
  }

 private:
  termios saved_{};
  bool active_ = false;
};

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// The relay: this terminal's keys and size to the session, its output here. The shell's exit
// status, or nothing when the connection was lost (the shell runs on).
StatusOr<std::optional<int>> Relay(client::UpgradedConnection& conn, const std::string& attached) {
  int winch[2];
  if (::pipe2(winch, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Internal(fmt::format("pipe: {}", std::strerror(errno)));
  }
  g_winch_pipe = winch[1];
  struct sigaction sa {};
  sa.sa_handler = OnWinch;
  ::sigaction(SIGWINCH, &sa, nullptr);
  RawTerminal raw;
  FrameReader reader;
  bool stdin_open = true;
  bool said_attached = false;
  std::optional<int> exit_status;
  std::optional<Status> failure;
  while (!exit_status && !failure) {
    if (!conn.HasBuffered()) {
      pollfd fds[3] = {{conn.fd(), POLLIN, 0},
                       {winch[0], POLLIN, 0},
                       {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        failure = Status::Internal(fmt::format("poll: {}", std::strerror(errno)));
        break;
      }
      if (fds[1].revents & POLLIN) {
        char drain[64];
        while (::read(winch[0], drain, sizeof(drain)) > 0) {
        }
        Status s =
            conn.Write(EncodeFrame(FrameType::kResize, terminal::FormatWindowSize(CurrentSize())));
        if (!s.ok()) break;
      }
      if (stdin_open && (fds[2].revents & (POLLIN | POLLHUP))) {
        char buf[4096];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
        if (n > 0) {
          Status s = conn.Write(EncodeFrame(FrameType::kInput, std::string_view(buf, n)));
          if (!s.ok()) break;
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          stdin_open = false;  // piped input ran out: the session's output still comes
        }
      }
      if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    }
    auto data = conn.ReadSome(16 * 1024);
    if (!data.ok() || data->empty()) break;  // lost
    reader.Append(*data);
    std::string error;
    while (auto frame = reader.Next(&error)) {
      // The master answers before it reaches the terminal: the first frame says it has.
      if (!said_attached && frame->type != FrameType::kRefused) {
        said_attached = true;
        WriteAll(STDERR_FILENO, attached + "\r\n");
      }
      switch (frame->type) {
        case FrameType::kOutput:
          WriteAll(STDOUT_FILENO, frame->payload);
          break;
        case FrameType::kNotice:
          WriteAll(STDOUT_FILENO, "\r\n[cohort] " + frame->payload + "\r\n");
          break;
        case FrameType::kExit:
          exit_status = ParseInt(frame->payload, 0, 255).value_or(1);
          break;
        case FrameType::kRefused:
          failure = Status::Unavailable(frame->payload);
          break;
        default:
          break;
      }
      if (exit_status || failure) break;
    }
    if (!error.empty()) failure = Status::Internal("the master sent " + error);
  }
  raw.Restore();
  g_winch_pipe = -1;
  ::close(winch[0]);
  ::close(winch[1]);
  if (failure) return *failure;
  return exit_status;
}

int RunShell(const GlobalOptions& g, const ShellOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("shell", c.status());
  auto running = RunningSession(**c, o.attach, o.session);
  if (!running.ok()) return Fail("shell", running.status());
  const JobId id = running->id;
  // The terminal's connection is one of its own, so that the first client stays free to ask
  // the master how the session ended.
  auto t = Connect(g);
  if (!t.ok()) return Fail("shell", t.status());
  const terminal::WindowSize size = CurrentSize();
  const char* term = std::getenv("TERM");
  StatusOr<std::unique_ptr<client::UpgradedConnection>> conn = Status::Unavailable("");
  // Its task may run before its terminal server listens: the master says so, and it is asked
  // again for a while.
  for (int tries = 0; tries < 60; ++tries) {
    conn = (*t)->AttachTerminal(id, size.cols, size.rows, term ? term : "");
    if (conn.ok() || conn.status().code() != StatusCode::kUnavailable) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (!conn.ok()) return Fail("shell", conn.status());
  auto status = Relay(
      **conn, fmt::format("attached to session {} on {}", id,
                          running->tasks.empty() ? "its node" : running->tasks.front().node_id));
  conn->reset();
  if (!status.ok()) return Fail("shell", status.status());
  if (*status) return **status;
  // The connection was lost; the shell may still run.
  auto job = (*c)->GetJob(id);
  if (job.ok() && IsTerminal(job->state)) {
    fmt::print(stderr, "\nsession {} ended ({}): {}\n", id, JobStateName(job->state), job->message);
    return 1;
  }
  fmt::print(stderr,
             "\ncohort shell: the connection to session {} was lost; its shell runs on: "
             "cohort shell --attach {}\n",
             id, id);
  return 255;
}

}  // namespace

void AddShellCommand(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<ShellOptions>();
  auto* s = app.add_subcommand(
      "shell",
      "Start an interactive shell on GPUs and attach this terminal to it, through the master\n"
      "(docs/runtimes.md). The session runs until its shell exits or it is killed (cohort kill\n"
      "JOB); a dropped connection leaves it running: cohort shell --attach JOB. Sessions whose\n"
      "GPUs sit idle with no input are warned, then ended.");
  AddSessionOptions(s, o->session);
  s->add_option("--attach", o->attach,
                "Attach to a session that runs already (after a dropped connection)");
  s->callback([&g, o] { Finish(RunShell(g, *o)); });
}

}  // namespace cohort::cli
