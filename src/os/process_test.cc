#include "os/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "os/durable_file.h"

namespace cohort {
namespace {

TEST(Process, RunsWithExtraEnvironmentAndCapturesOutput) {
  std::string out = "/tmp/cohort-process-test-" + std::to_string(::getpid());
  int rc = RunToCompletion({"/bin/sh", "-c", "echo $COHORT_X; exit 3"},
                           SpawnOptions{out, true, {{"COHORT_X", "hello"}}});
  EXPECT_EQ(rc, 3);
  EXPECT_EQ(ReadFileOrEmpty(out), "hello\n");
  ::unlink(out.c_str());
  EXPECT_EQ(RunToCompletion({"/no/such/binary"}), 127);
}

TEST(Process, RunsAsAnotherAccountWhenAsked) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another account needs root";
  std::string out = "/tmp/cohort-process-test-as-" + std::to_string(::getpid());
  SpawnOptions options{out, true, {}};
  options.as = Owner{65534, 65534};
  EXPECT_EQ(RunToCompletion({"/bin/sh", "-c", "echo $(id -u) $(id -G)"}, options), 0);
  EXPECT_EQ(ReadFileOrEmpty(out), "65534 65534\n");
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "the output is opened as the account";
  ::unlink(out.c_str());
}

TEST(Process, FindsDescendantsAndCommandLines) {
  auto pid = Spawn({"/bin/sh", "-c", "sleep 30 & sleep 31 & wait"});
  ASSERT_TRUE(pid.ok());
  // A child shows the shell's command line from its fork until its exec of sleep: wait for both
  // execs, not only both forks.
  std::vector<pid_t> kids;
  std::vector<std::string> lines;
  auto both_sleeping = [&] {
    return lines.size() == 2 && lines[0].starts_with("sleep") && lines[1].starts_with("sleep");
  };
  for (int i = 0; i < 200 && !both_sleeping(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    kids = Descendants(*pid);
    lines.clear();
    for (pid_t kid : kids) lines.push_back(CommandLine(kid));
  }
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(ParentPid(kids[0]), *pid);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines[0], "sleep 30 ");
  EXPECT_EQ(lines[1], "sleep 31 ");
  ::kill(-*pid, SIGKILL);  // its own session and process group
  ::waitpid(*pid, nullptr, 0);
  EXPECT_EQ(CommandLine(*pid), "");
}

// Found by the chaos test (scripts/chaos.py): an agent that stops a task it has just started
// sends SIGTERM to a supervisor that may not have exec'd yet. The signal must reach the child as
// the new program would take it (here SIGTERM's default: death), not run a handler the parent
// had, which would swallow it and let the task run on.
TEST(Process, ASignalSentBeforeExecIsNotSwallowedByTheParentsHandler) {
  struct sigaction handler {};
  struct sigaction old {};
  handler.sa_handler = [](int) {};
  sigemptyset(&handler.sa_mask);
  handler.sa_flags = SA_RESTART;
  ASSERT_EQ(::sigaction(SIGTERM, &handler, &old), 0);
  std::string fifo = "/tmp/cohort-process-test-fifo-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The child opens its output, a FIFO nobody reads yet, before it execs: it waits there.
  auto pid = Spawn({"/bin/sleep", "30"}, SpawnOptions{fifo, true, {}});
  ASSERT_TRUE(pid.ok());
  ::kill(*pid, SIGTERM);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // lets it go on, were it alive
  int status = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 500 && reaped == 0; ++i) {
    reaped = ::waitpid(*pid, &status, WNOHANG);
    if (reaped == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (reaped == 0) {
    ADD_FAILURE() << "the child took no notice of SIGTERM and ran sleep";
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, &status, 0);
  } else {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  }
  if (reader >= 0) ::close(reader);
  ::unlink(fifo.c_str());
  ::sigaction(SIGTERM, &old, nullptr);
}

// Atomic writes are tested in durable_file_test.cc; this is the reading side.
TEST(Process, ReadFileOrEmpty) {
  std::string path = "/tmp/cohort-read-test-" + std::to_string(::getpid());
  ASSERT_TRUE(WriteFileAtomically(path, "two").ok());
  EXPECT_EQ(ReadFileOrEmpty(path), "two");
  ::unlink(path.c_str());
  EXPECT_EQ(ReadFileOrEmpty(path), "");
}

}  // namespace
}  // namespace cohort
