#include "os/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

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

TEST(Process, WritesFilesAtomically) {
  std::string path = "/tmp/cohort-atomic-test-" + std::to_string(::getpid());
  ASSERT_TRUE(WriteFileAtomically(path, "one"));
  ASSERT_TRUE(WriteFileAtomically(path, "two"));
  EXPECT_EQ(ReadFileOrEmpty(path), "two");
  ::unlink(path.c_str());
  EXPECT_EQ(ReadFileOrEmpty(path), "");
  EXPECT_FALSE(WriteFileAtomically("/no/such/dir/file", "x"));
}

}  // namespace
}  // namespace cohort
