// `cohort top` against a real cluster: one frame when not on a terminal, and on a real
// pseudo-terminal a screen redrawn in place until q, with the terminal given back as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>

#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

// Reads what the terminal shows until `done` says enough, or `limit` passes.
std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done,
                      std::chrono::milliseconds limit) {
  std::string seen;
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done(seen) && std::chrono::steady_clock::now() < end) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  return seen;
}

TEST(Top, ShowsEachGpuWithItsJobAndQuitsOnQ) {
  LocalCluster cluster("top");
  cluster.StartMaster();
  cluster.StartAgent("node-1", 2);
  JobId id = cluster.Submit(R"(
name: holder
tasks:
  - role: main
    resources: {gpus: 1}
    command: [sleep, "600"]
)");
  cluster.WaitForState(id, JobState::kRunning);

  auto once = cluster.Cohort({"top"});  // stdout is a pipe here: one frame
  ASSERT_EQ(once.exit_code, 0) << once.err;
  EXPECT_THAT(once.out, HasSubstr("GPUs: 1 of 2 held"));
  EXPECT_THAT(once.out, HasSubstr("jobs: 1 running, 0 pending"));
  EXPECT_THAT(once.out, HasSubstr("holder"));
  EXPECT_THAT(once.out, HasSubstr("main/0"));
  EXPECT_EQ(once.out.find("\x1b["), std::string::npos) << "no escapes into a pipe";

  int terminal = -1;
  pid_t pid = ::forkpty(&terminal, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("COHORT_MASTER", cluster.url().c_str(), 1);
    ::setenv("COHORT_TOKEN", cluster.admin_token().c_str(), 1);
    std::string cohort = BinDir() + "/cohort";
    ::execl(cohort.c_str(), cohort.c_str(), "top", "--interval", "0.2", nullptr);
    ::_exit(127);
  }
  // Two frames: it redraws in place (cursor home) rather than scrolling.
  std::string screen = ReadUntil(
      terminal,
      [](const std::string& s) {
        size_t first = s.find("holder");
        return first != std::string::npos && s.find("holder", first + 1) != std::string::npos;
      },
      std::chrono::seconds(10));
  EXPECT_THAT(screen, HasSubstr("\x1b[?1049h")) << "the alternate screen";
  EXPECT_THAT(screen, HasSubstr("\x1b[H"));
  EXPECT_THAT(screen, HasSubstr("GPUs: 1 of 2 held"));
  termios mode{};
  ASSERT_EQ(::tcgetattr(terminal, &mode), 0);
  EXPECT_EQ(mode.c_lflag & ECHO, 0u) << "keys are read, not echoed, while top runs";

  ASSERT_EQ(::write(terminal, "q", 1), 1);
  std::string rest = ReadUntil(
      terminal, [](const std::string& s) { return s.find("\x1b[?1049l") != std::string::npos; },
      std::chrono::seconds(5));
  int status = 0;
  bool exited =
      WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(5));
  if (!exited) ::kill(pid, SIGKILL);
  ASSERT_TRUE(exited) << "q did not end top";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_THAT(rest, HasSubstr("\x1b[?1049l")) << "the screen is given back";
  ASSERT_EQ(::tcgetattr(terminal, &mode), 0);
  EXPECT_NE(mode.c_lflag & ECHO, 0u) << "and echo with it";
  ::close(terminal);
}

}  // namespace
}  // namespace cohort::testing
