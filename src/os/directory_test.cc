#include "os/directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort {
namespace {

namespace fs = std::filesystem;

class EnsureDirectoryTest : public ::testing::Test {
 protected:
  EnsureDirectoryTest()
      : dir_(fs::temp_directory_path() /
             ("cohort-dir-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~EnsureDirectoryTest() override { fs::remove_all(dir_); }

  struct stat Stat(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
  }

  fs::path dir_;
};

TEST_F(EnsureDirectoryTest, CreatesWithParentsAndTheExactModeWhateverTheUmask) {
  mode_t old = ::umask(077);
  fs::path path = dir_ / "jobs" / "7" / "outputs";
  Status s = EnsureDirectory(path, 0750, std::nullopt);
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Stat(path).st_mode & 07777, 0750u);
  EXPECT_EQ(Stat(path).st_uid, ::geteuid());
}

TEST_F(EnsureDirectoryTest, GivesTheDirectoryToItsOwnerAndIsIdempotent) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing an owner needs root";
  fs::path path = dir_ / "checkpoints";
  fs::create_directories(path);
  fs::permissions(path, fs::perms::all);  // 0777: a directory the master made, say
  std::ofstream(path / "step-10.pt") << "weights";
  for (int round = 0; round < 2; ++round) {
    Status s = EnsureDirectory(path, 0700, Owner{65534, 65534});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(Stat(path).st_mode & 07777, 0700u);
    EXPECT_EQ(Stat(path).st_uid, 65534u);
    EXPECT_EQ(Stat(path).st_gid, 65534u);
  }
  EXPECT_TRUE(fs::exists(path / "step-10.pt")) << "what was there stays";
}

TEST_F(EnsureDirectoryTest, WithoutAnOwnerLeavesAnotherOwnersDirectoryAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a directory of another owner needs root";
  fs::path path = dir_ / "logs";
  fs::create_directories(path);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  ASSERT_TRUE(EnsureDirectory(path, 0700, std::nullopt).ok());
  EXPECT_EQ(Stat(path).st_mode & 07777, 0755u);
  EXPECT_EQ(Stat(path).st_uid, 65534u);
}

TEST_F(EnsureDirectoryTest, NeverFollowsASymbolicLinkAndRefusesAFile) {
  fs::path target = dir_ / "elsewhere";
  fs::create_directories(target);
  fs::permissions(target, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  fs::create_directory_symlink(target, dir_ / "link");
  Status s = EnsureDirectory(dir_ / "link", 0700, std::nullopt);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), (dir_ / "link").string() + ": is a symbolic link, not a directory");
  EXPECT_EQ(Stat(target).st_mode & 07777, 0755u) << "the link's target is untouched";

  std::ofstream(dir_ / "file") << "x";
  s = EnsureDirectory(dir_ / "file", 0700, std::nullopt);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), (dir_ / "file").string() + ": is something else, not a directory");
}

TEST_F(EnsureDirectoryTest, SaysWhichCallFailed) {
  std::ofstream(dir_ / "file") << "x";
  Status s = EnsureDirectory(dir_ / "file" / "sub", 0700, std::nullopt);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find((dir_ / "file" / "sub").string() + ": creating "), std::string::npos)
      << s.message();
}

TEST_F(EnsureDirectoryTest, EmptiesADirectoryAsItsAccountWithoutFollowingLinks) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another account needs root";
  fs::path scratch = dir_ / "work";
  fs::create_directories(scratch / "a" / "b");
  std::ofstream(scratch / "a" / "b" / "f") << "x";
  fs::path outside = dir_ / "precious";
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, scratch / "link");
  fs::create_directory_symlink(dir_, scratch / "dirlink");
  for (const auto& entry : fs::recursive_directory_iterator(scratch)) {
    ASSERT_EQ(::lchown(entry.path().c_str(), 65534, 65534), 0);
  }
  ASSERT_EQ(::chown(scratch.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown(outside.c_str(), 65534, 65534), 0);  // the account could delete it, by name

  Status s = EmptyDirectoryAs(scratch, Owner{65534, 65534});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(fs::is_empty(scratch));
  EXPECT_TRUE(fs::exists(outside)) << "a link is deleted, never followed";

  // What the account cannot delete is left, and said.
  fs::create_directories(scratch / "roots");
  std::ofstream(scratch / "roots" / "f") << "x";
  s = EmptyDirectoryAs(scratch, Owner{65534, 65534});
  EXPECT_EQ(s.message(), "emptying " + scratch.string() + " as uid 65534: find exited with 1");
  EXPECT_TRUE(fs::exists(scratch / "roots" / "f"));
}

// An empty directory needs no process: here one as the account could not even read it (root's,
// 0700), so only the fast path succeeds.
TEST_F(EnsureDirectoryTest, AnEmptyDirectoryIsLeftAsItIsWithoutAProcess) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another account needs root";
  fs::path scratch = dir_ / "empty";
  fs::create_directories(scratch);
  fs::permissions(scratch, fs::perms::owner_all);
  Status s = EmptyDirectoryAs(scratch, Owner{65534, 65534});
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(fs::is_directory(scratch));
  // With an entry, find runs as the account, and cannot.
  std::ofstream(scratch / "f") << "x";
  EXPECT_FALSE(EmptyDirectoryAs(scratch, Owner{65534, 65534}).ok());
}

}  // namespace
}  // namespace cohort
