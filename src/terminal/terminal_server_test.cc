// The real cohort-terminal binary, started as the agent would start a session's task (its port
// and the job's credential in its environment), driven over loopback as the master drives it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <chrono>
#include <string>
#include <thread>

#include "terminal/terminal_frame.h"
#include "terminal/terminal_hello.h"
#include "testing/free_port.h"

namespace cohort::terminal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
using cohort::testing::FreePort;

constexpr const char* kCredential = "the-jobs-credential";

// The server, as a session's task: SHELL=/bin/sh, so that prompts are plain. A port another
// test took between FreePort and the server's bind makes it exit: it starts again on another.
class ServerProcess {
 public:
  ServerProcess() {
    for (int tries = 0; tries < 5; ++tries) {
      port_ = FreePort();
      pid_ = ::fork();
      if (pid_ == 0) {
        ::setenv("COHORT_TASK_PORT", std::to_string(port_).c_str(), 1);
        ::setenv("COHORT_JOB_CREDENTIAL", kCredential, 1);
        ::setenv("SHELL", "/bin/sh", 1);
        ::setenv("PS1", "$ ", 1);
        ::execl(COHORT_TERMINAL_PATH, COHORT_TERMINAL_PATH, "serve", nullptr);
        ::_exit(127);
      }
      if (Listening()) return;
    }
    ADD_FAILURE() << "cohort-terminal did not listen";
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Whether it listens on its port within 10 s; false once it has exited.
  bool Listening() {
    for (int i = 0; i < 400; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port_));
      bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      ::close(fd);
      if (connected) return true;
      std::this_thread::sleep_for(25ms);
    }
    return false;
  }
  // Its exit status, once it has exited within `limit`; -1 if it has not.
  int WaitExit(std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

// The master's side of one connection.
class Connection {
 public:
  explicit Connection(int port) {
    for (int i = 0; i < 200 && fd_ < 0; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        fd_ = fd;
      } else {
        ::close(fd);
        std::this_thread::sleep_for(25ms);
      }
    }
  }
  ~Connection() { Close(); }
  bool connected() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void Send(FrameType type, std::string_view payload) { SendRaw(EncodeFrame(type, payload)); }
  void SendRaw(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  void Hello(std::string credential = kCredential, WindowSize size = {80, 24}) {
    Send(FrameType::kHello, EncodeHello(terminal::Hello{credential, "alice", "xterm", size}));
  }
  void Type(std::string_view keys) { Send(FrameType::kInput, keys); }

  // Reads frames until the output seen so far contains `text` (true), or a frame of `stop`
  // arrives, the connection closes or `limit` passes (false).
  bool WaitFor(std::string_view text, std::chrono::milliseconds limit = 10s) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (output_.find(text) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !ReadOnce(static_cast<int>(left.count()))) return false;
    }
    return true;
  }
  // Reads until the connection closes or `limit` passes; whether it closed.
  bool WaitClosed(std::chrono::milliseconds limit = 10s) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (!ReadOnce(50) && closed_) return true;
    }
    return false;
  }
  const std::string& output() const { return output_; }
  const std::vector<Frame>& others() const { return others_; }  // frames other than output

 private:
  bool ReadOnce(int timeout_ms) {
    if (closed_) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[16384];
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    reader_.Append(std::string_view(buf, static_cast<size_t>(n)));
    while (auto f = reader_.Next()) {
      if (f->type == FrameType::kOutput) {
        output_ += f->payload;
      } else {
        others_.push_back(*f);
      }
    }
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  FrameReader reader_;
  std::string output_;
  std::vector<Frame> others_;
};

bool HasFrame(const std::vector<Frame>& frames, FrameType type, std::string_view text) {
  for (const auto& f : frames) {
    if (f.type == type && f.payload.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(TerminalServer, RunsAShellOnATerminalOfTheSizeAsked) {
  ServerProcess server;
  Connection c(server.port());
  ASSERT_TRUE(c.connected());
  c.Hello(kCredential, WindowSize{123, 45});
  c.Type("tty; stty size; echo \"term=$TERM cred=${COHORT_JOB_CREDENTIAL:-none}\"\n");
  EXPECT_TRUE(c.WaitFor("45 123")) << c.output();
  EXPECT_TRUE(c.WaitFor("term=xterm cred=none")) << c.output();
  EXPECT_THAT(c.output(), HasSubstr("/dev/pts/"));
  // A resize reaches the terminal.
  c.Send(FrameType::kResize, "100 30");
  c.Type("stty size\n");
  EXPECT_TRUE(c.WaitFor("30 100")) << c.output();
}

TEST(TerminalServer, CtrlCInterruptsTheForegroundCommandNotTheShell) {
  ServerProcess server;
  Connection c(server.port());
  c.Hello();
  c.Type("sleep 60; echo slept-$((0))\n");
  std::this_thread::sleep_for(300ms);
  auto start = std::chrono::steady_clock::now();
  c.Type("\x03");
  c.Type("echo still-$((1+1))\n");
  EXPECT_TRUE(c.WaitFor("still-2\r\n", 10s)) << c.output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_THAT(c.output(), Not(HasSubstr("slept-0")));  // the line typed says slept-$((0))
  EXPECT_EQ(server.WaitExit(100ms), -1);               // the server and its shell run on
}

TEST(TerminalServer, AReattachFindsTheSameShellAndWhatItWroteMeanwhile) {
  ServerProcess server;
  {
    Connection first(server.port());
    first.Hello();
    first.Type("X=kept-42; echo set-$((1+1))\n");
    ASSERT_TRUE(first.WaitFor("set-2\r\n")) << first.output();
    // Written while nobody is attached.
    first.Type("sleep 0.5; echo away-$((6*7))\n");
  }  // the connection drops
  std::this_thread::sleep_for(1500ms);
  Connection second(server.port());
  second.Hello();
  EXPECT_TRUE(second.WaitFor("away-42")) << second.output();
  second.Type("echo x=$X\n");
  EXPECT_TRUE(second.WaitFor("x=kept-42")) << second.output();
}

TEST(TerminalServer, ANewAttachDetachesTheOldOneAndSaysSo) {
  ServerProcess server;
  Connection first(server.port());
  first.Hello();
  first.Type("echo one-$((0+1))\n");
  ASSERT_TRUE(first.WaitFor("one-1\r\n"));
  Connection second(server.port());
  second.Hello();
  EXPECT_TRUE(first.WaitClosed());
  EXPECT_TRUE(HasFrame(first.others(), FrameType::kNotice, "attached from another terminal"));
  second.Type("echo two-$((1+1))\n");
  EXPECT_TRUE(second.WaitFor("two-2\r\n"));
}

TEST(TerminalServer, AWrongCredentialOrNoHelloIsRefusedAndGetsNoShell) {
  ServerProcess server;
  Connection wrong(server.port());
  wrong.Hello("not-the-credential");
  wrong.Type("echo leaked-$((1+1))\n");
  EXPECT_TRUE(wrong.WaitClosed());
  EXPECT_TRUE(HasFrame(wrong.others(), FrameType::kRefused, "the credential is not this job's"));
  EXPECT_THAT(wrong.output(), Not(HasSubstr("leaked")));

  Connection input_first(server.port());
  input_first.Type("echo leaked-$((1+1))\n");
  EXPECT_TRUE(input_first.WaitClosed());
  EXPECT_TRUE(HasFrame(input_first.others(), FrameType::kRefused, "first frame must be a hello"));

  Connection garbage(server.port());
  garbage.SendRaw("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(garbage.WaitClosed());
  EXPECT_TRUE(HasFrame(garbage.others(), FrameType::kRefused, "unknown type"));

  // The server still serves the holder of the credential.
  Connection right(server.port());
  right.Hello();
  right.Type("echo fine-$((1+1))\n");
  EXPECT_TRUE(right.WaitFor("fine-2\r\n"));
}

TEST(TerminalServer, AConnectionThatSaysNothingIsClosedAfterTheHelloTimeout) {
  ServerProcess server;
  Connection silent(server.port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.WaitClosed(15s));
  EXPECT_TRUE(HasFrame(silent.others(), FrameType::kRefused, "no hello within"));
}

TEST(TerminalServer, TheShellsExitEndsTheServerWithItsStatus) {
  ServerProcess server;
  Connection c(server.port());
  c.Hello();
  c.Type("echo bye-$((1+1)); exit 3\n");
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_THAT(c.output(), HasSubstr("bye-2"));
  EXPECT_TRUE(HasFrame(c.others(), FrameType::kExit, "3"));
  EXPECT_EQ(server.WaitExit(5s), 3);
}

TEST(TerminalServer, SigtermHangsUpTheShellAndEnds) {
  ServerProcess server;
  Connection c(server.port());
  c.Hello();
  c.Type("echo ready-$((1+1))\n");
  ASSERT_TRUE(c.WaitFor("ready-2\r\n"));
  ::kill(server.pid(), SIGTERM);
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(HasFrame(c.others(), FrameType::kNotice, "the session is being stopped"));
  EXPECT_EQ(server.WaitExit(5s), 128 + SIGHUP);
}

TEST(TerminalServer, RefusesToStartWithoutTheJobsCredential) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::unsetenv("COHORT_JOB_CREDENTIAL");
    ::setenv("COHORT_TASK_PORT", "1", 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDERR_FILENO);
    ::execl(COHORT_TERMINAL_PATH, COHORT_TERMINAL_PATH, "serve", nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace cohort::terminal
