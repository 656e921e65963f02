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
  std::vector<pid_t> kids;
  for (int i = 0; i < 200 && kids.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    kids = Descendants(*pid);
  }
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(ParentPid(kids[0]), *pid);
  std::vector<std::string> lines = {CommandLine(kids[0]), CommandLine(kids[1])};
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
