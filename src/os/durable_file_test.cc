#include "os/durable_file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace cohort {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class DurableFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("durable-file-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static mode_t ModeOf(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0);
    return st.st_mode & 07777;
  }

  fs::path dir_;
};

TEST_F(DurableFileTest, WritesAndReplacesWhole) {
  std::string path = dir_ / "token";
  ASSERT_TRUE(WriteFileAtomically(path, "first\n").ok());
  EXPECT_EQ(Read(path), "first\n");
  std::string big(3 << 20, 'x');  // more than one write() may take at once on a pipe or socket
  ASSERT_TRUE(WriteFileAtomically(path, big).ok());
  EXPECT_EQ(Read(path), big);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(DurableFileTest, TheModeIsExactlyTheOneAskedForWhateverTheUmask) {
  mode_t old = ::umask(0077);
  std::string cert = dir_ / "cert.pem";
  Status s = WriteFileAtomically(cert, "cert", 0644);
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ModeOf(cert), 0644u);
  std::string key = dir_ / "key.pem";
  ASSERT_TRUE(WriteFileAtomically(key, "key", 0600).ok());
  EXPECT_EQ(ModeOf(key), 0600u);
}

TEST_F(DurableFileTest, ATemporaryFileLeftByACrashIsMadeAnew) {
  std::string path = dir_ / "key.pem";
  {
    std::ofstream left(path + ".tmp");
    left << "half a key from before the crash";
  }
  fs::permissions(path + ".tmp", fs::perms::all);
  ASSERT_TRUE(WriteFileAtomically(path, "key", 0600).ok());
  EXPECT_EQ(Read(path), "key");
  EXPECT_EQ(ModeOf(path), 0600u) << "the old temporary file's 0777 must not carry over";
}

TEST_F(DurableFileTest, AFailureNamesThePathAndLeavesTheOldFile) {
  std::string path = dir_ / "missing-dir" / "file";
  Status s = WriteFileAtomically(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("missing-dir/file.tmp"));

  // A directory in the way of the rename: the old content stays, the temporary file is gone.
  std::string blocked = dir_ / "blocked";
  fs::create_directories(blocked + "/inside");
  s = WriteFileAtomically(blocked, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("renaming"));
  EXPECT_TRUE(fs::is_directory(blocked + "/inside"));
  EXPECT_FALSE(fs::exists(blocked + ".tmp"));
}

// Without fsyncs the replace is still atomic for readers: the old content or the new, whole.
TEST_F(DurableFileTest, ProcessCrashDurabilityStillReplacesWhole) {
  std::string path = dir_ / "task.pid";
  ASSERT_TRUE(WriteFileAtomically(path, "123\n", 0600, Durability::kProcessCrash).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "4567\n", 0600, Durability::kProcessCrash).ok());
  EXPECT_EQ(Read(path), "4567\n");
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(FileError, AFullDiskIsResourceExhausted) {
  for (int err : {ENOSPC, EDQUOT, EFBIG}) {
    Status s = FileError(err, "writing /var/lib/cohort/x");
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << err;
    EXPECT_THAT(s.message(), HasSubstr("writing /var/lib/cohort/x: "));
  }
  EXPECT_EQ(FileError(EIO, "writing x").code(), StatusCode::kInternal);
}

TEST(WriteAll, WritesEveryByteToAPipeInPieces) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // A pipe takes 64 KiB at a time; a reader on another thread drains it.
  std::string data(1 << 20, 'p');
  std::string got;
  std::thread reader([&] {
    char buf[8192];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
  });
  Status s = WriteAll(fds[1], data, "a pipe");
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got.size(), data.size());
}

TEST(WriteAll, AFailureNamesThePath) {
  int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Status s = WriteAll(fd, "x", "/dev/null (read-only)");
  ::close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("writing /dev/null (read-only): "));
}

TEST_F(DurableFileTest, SyncDirectoryFailsForAMissingDirectory) {
  EXPECT_TRUE(SyncDirectory(dir_).ok());
  Status s = SyncDirectory(dir_ / "nope");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("nope"));
}

}  // namespace
}  // namespace cohort
