// Bounding a task's output on a real file: the oldest bytes are punched out, the length and
// every offset stay, and the agent can tell where the kept bytes start.
#include "agent/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kMi = 1 << 20;

class OutputFileTest : public ::testing::Test {
 protected:
  OutputFileTest()
      : path_(fs::temp_directory_path() /
              ("cohort-output-file-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  }
  ~OutputFileTest() override {
    ::close(fd_);
    fs::remove(path_);
  }
  // Appends `n` bytes of `c`, as a task writing through its O_APPEND descriptor.
  void Write(int64_t n, char c) {
    std::string block(static_cast<size_t>(n), c);
    ASSERT_EQ(::write(fd_, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  }
  int64_t Size() const {
    struct stat st {};
    ::fstat(fd_, &st);
    return st.st_size;
  }
  int64_t DiskBytes() const {
    ::fsync(fd_);  // delayed allocation: blocks are counted once they are on disk
    struct stat st {};
    ::fstat(fd_, &st);
    return static_cast<int64_t>(st.st_blocks) * 512;
  }
  char ByteAt(int64_t offset) const {
    char c = '?';
    EXPECT_EQ(::pread(fd_, &c, 1, offset), 1);
    return c;
  }

  fs::path path_;
  int fd_ = -1;
};

TEST_F(OutputFileTest, KeepsTheLastBytesAndEveryOffset) {
  ASSERT_GE(fd_, 0);
  EXPECT_EQ(FirstKeptByte(fd_, 0), 0);
  Write(5 * kMi, 'a');
  Write(kMi / 2, 'b');
  int64_t trimmed = 0;
  Status s = TrimOutput(fd_, 2 * kMi, &trimmed);
  if (s.code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.ToString();
  // 5.5 MiB, keep 2: the first 3 whole MiB go.
  EXPECT_EQ(trimmed, 3 * kMi);
  EXPECT_EQ(Size(), 5 * kMi + kMi / 2) << "the length stays";
  EXPECT_EQ(FirstKeptByte(fd_, Size()), 3 * kMi);
  EXPECT_EQ(ByteAt(3 * kMi), 'a');
  EXPECT_EQ(ByteAt(5 * kMi), 'b');
  EXPECT_EQ(ByteAt(0), '\0') << "punched bytes read as zeros";
  EXPECT_LE(DiskBytes(), 2 * kMi + kMi / 2 + 64 * 1024);

  // Nothing new to punch: nothing changes. The task writes on at the end, offsets unchanged.
  ASSERT_TRUE(TrimOutput(fd_, 2 * kMi, &trimmed).ok());
  EXPECT_EQ(trimmed, 3 * kMi);
  Write(2 * kMi, 'c');
  ASSERT_TRUE(TrimOutput(fd_, 2 * kMi, &trimmed).ok());
  EXPECT_EQ(trimmed, 5 * kMi);
  EXPECT_EQ(FirstKeptByte(fd_, Size()), 5 * kMi);
  EXPECT_EQ(ByteAt(5 * kMi + kMi / 2), 'c');
}

TEST_F(OutputFileTest, ASmallOutputIsLeftAlone) {
  Write(100, 'a');
  int64_t trimmed = 0;
  ASSERT_TRUE(TrimOutput(fd_, 2 * kMi, &trimmed).ok());
  EXPECT_EQ(trimmed, 0);
  EXPECT_EQ(FirstKeptByte(fd_, Size()), 0);
  EXPECT_EQ(ByteAt(0), 'a');
}

}  // namespace
}  // namespace cohort::agent
