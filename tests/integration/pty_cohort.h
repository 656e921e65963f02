// `cohort` run on a pseudo-terminal of its own, as a person runs it: what the tests of shell
// sessions type and read.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {

// `cohort ARGS...` on a pseudo-terminal of its own, as a person runs it.
class PtyCohort {
 public:
  PtyCohort(LocalCluster& cluster, std::vector<std::string> args, const std::string& token,
            int cols = 100, int rows = 30) {
    args.insert(args.begin(), BinDir() + "/cohort");
    winsize ws{};
    ws.ws_col = static_cast<unsigned short>(cols);
    ws.ws_row = static_cast<unsigned short>(rows);
    pid_ = ::forkpty(&fd_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      ::setenv("COHORT_MASTER", cluster.url().c_str(), 1);
      ::setenv("COHORT_TOKEN", token.c_str(), 1);
      ::setenv("XDG_CONFIG_HOME", (cluster.dir() + "/config").c_str(), 1);
      ::setenv("TERM", "xterm-256color", 1);
      if (!cluster.ca_file().empty()) ::setenv("COHORT_CA_FILE", cluster.ca_file().c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~PtyCohort() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  void Type(std::string_view keys) {
    ASSERT_EQ(::write(fd_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  // Whether `text` appeared in what it wrote since the last call that found something.
  bool WaitFor(std::string_view text, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (true) {
      size_t at = seen_.find(text, from_);
      if (at != std::string::npos) {
        from_ = at + text.size();
        return true;
      }
      if (std::chrono::steady_clock::now() >= until) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        ssize_t n = ::read(fd_, buf, sizeof(buf));
        if (n > 0) seen_.append(buf, static_cast<size_t>(n));
        if (n <= 0 && errno != EAGAIN) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  void Resize(int cols, int rows) {
    winsize ws{};
    ws.ws_col = static_cast<unsigned short>(cols);
    ws.ws_row = static_cast<unsigned short>(rows);
    ::ioctl(fd_, TIOCSWINSZ, &ws);
  }
  void Kill() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Its exit status once it exits within `limit`; -1 if it does not.
  int WaitExit(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      WaitFor("\x01never\x01", std::chrono::milliseconds(
                                   50));  // keeps reading, so that it never blocks on its output
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  const std::string& seen() const { return seen_; }

 private:
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string seen_;
  size_t from_ = 0;
};

}  // namespace cohort::testing
