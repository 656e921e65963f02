#include "os/proc_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort {
namespace {

namespace fs = std::filesystem;

TEST(ParseProcessIo, ReadsRcharAndSyscr) {
  auto io = ParseProcessIo(
      "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\n"
      "cancelled_write_bytes: 0\n");
  ASSERT_TRUE(io.has_value());
  EXPECT_EQ(io->read_bytes, 6976);
  EXPECT_EQ(io->read_calls, 10);
  EXPECT_FALSE(ParseProcessIo("").has_value());
  EXPECT_FALSE(ParseProcessIo("rchar: 1\n").has_value()) << "no syscr";
  EXPECT_FALSE(ParseProcessIo("rchar: -1\nsyscr: 1\n").has_value());
  EXPECT_FALSE(ParseProcessIo("rchar: x\nsyscr: 1\n").has_value());
}

// Every read of a small file is one call more and its bytes more, as the kernel counts them.
TEST(ReadProcessIo, OwnReadsMoveItsCounters) {
  const fs::path dir = fs::temp_directory_path() / ("cohort-proc-io-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "small") << std::string(1000, 'x');
  auto before = ReadProcessIo("/proc", ::getpid());
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  char buf[4096];
  for (int i = 0; i < 100; ++i) {
    int fd = ::open((dir / "small").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::read(fd, buf, sizeof(buf)), 1000);
    ::close(fd);
  }
  auto after = ReadProcessIo("/proc", ::getpid());
  fs::remove_all(dir);
  ASSERT_TRUE(after.ok());
  // The reads of the io file itself count too: a few calls and some hundred bytes.
  EXPECT_GE(after->read_calls - before->read_calls, 100);
  EXPECT_LT(after->read_calls - before->read_calls, 110);
  EXPECT_GE(after->read_bytes - before->read_bytes, 100 * 1000);
  EXPECT_LT(after->read_bytes - before->read_bytes, 100 * 1000 + 4096);
}

// What the task sampler's sums rest on: a child's figures move into its parent's when the parent
// reaps it, so a tree's total does not drop when one of its processes ends.
TEST(ReadProcessIo, AReapedChildsReadsBecomeItsParents) {
  const fs::path file = fs::temp_directory_path() / ("cohort-proc-io-" + std::to_string(getpid()));
  std::ofstream(file) << std::string(1000, 'x');
  auto before = ReadProcessIo("/proc", ::getpid());
  ASSERT_TRUE(before.ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char buf[4096];
    for (int i = 0; i < 500; ++i) {
      int fd = ::open(file.c_str(), O_RDONLY);
      if (fd < 0 || ::read(fd, buf, sizeof(buf)) != 1000) ::_exit(1);
      ::close(fd);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(status, 0);
  auto after = ReadProcessIo("/proc", ::getpid());
  fs::remove(file);
  ASSERT_TRUE(after.ok());
  EXPECT_GE(after->read_calls - before->read_calls, 500);
  EXPECT_GE(after->read_bytes - before->read_bytes, 500 * 1000);
}

TEST(ReadProcessIo, AProcessThatIsGoneIsNotFoundAndAFileWithoutCountsIsAnError) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_EQ(ReadProcessIo("/proc", child).status().code(), StatusCode::kNotFound);

  const fs::path root = fs::temp_directory_path() / ("cohort-fake-io-" + std::to_string(getpid()));
  fs::create_directories(root / "42");
  std::ofstream(root / "42" / "io") << "wchar: 5\n";
  auto bad = ReadProcessIo(root.string(), 42);
  fs::remove_all(root);
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("rchar"), std::string::npos);
}

// Where this machine refuses another process's figures (pid 1's, to a process without the right
// to trace it: a container's root without CAP_SYS_PTRACE, or any other account), the refusal is
// told apart from a process that is gone.
TEST(ReadProcessIo, ARefusalIsPermissionDenied) {
  int fd = ::open("/proc/1/io", O_RDONLY);
  char c;
  bool refused = fd < 0 ? errno == EACCES : ::read(fd, &c, 1) < 0 && errno == EACCES;
  if (fd >= 0) ::close(fd);
  if (!refused) GTEST_SKIP() << "this process may read /proc/1/io";
  EXPECT_EQ(ReadProcessIo("/proc", 1).status().code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace cohort
