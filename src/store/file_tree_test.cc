#include "store/file_tree.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

class FileTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cohort-tree-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "out");
    fs::create_directories(root_ / "secret");
    Write("secret/key", "do not upload");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& content) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << content;
  }
  std::string Out() const { return (root_ / "out").string(); }
  fs::path root_;
};

TEST_F(FileTreeTest, ListsRegularFilesInByteOrderWithSizes) {
  Write("out/a.txt", "12345");
  Write("out/a/b.bin", "xy");
  Write("out/B", "");
  Write("out/z/y/x", "1");
  auto tree = ListTree(Out(), 100);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  std::vector<std::string> paths;
  for (const auto& f : tree->files) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"B", "a.txt", "a/b.bin", "z/y/x"}));
  EXPECT_EQ(tree->files[1].size, 5);
  EXPECT_EQ(tree->bytes, 8);
  EXPECT_EQ(tree->skipped_count, 0u);
}

TEST_F(FileTreeTest, LinksAndSpecialFilesAreLeftOutAndNamed) {
  Write("out/model.pt", "w");
  fs::create_symlink(root_ / "secret/key", root_ / "out/stolen");
  fs::create_directory_symlink(root_ / "secret", root_ / "out/secrets");
  ASSERT_EQ(::mkfifo((root_ / "out/pipe").c_str(), 0600), 0);
  auto tree = ListTree(Out(), 100);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  ASSERT_EQ(tree->files.size(), 1u);
  EXPECT_EQ(tree->files[0].path, "model.pt");
  EXPECT_EQ(tree->skipped_count, 3u);
  std::string skipped;
  for (const auto& s : tree->skipped) skipped += s + "\n";
  EXPECT_NE(skipped.find("stolen: a symbolic link"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("pipe: not a regular file"), std::string::npos) << skipped;
}

TEST_F(FileTreeTest, MoreFilesThanTheLimitIsAnErrorNamingIt) {
  for (int i = 0; i < 5; ++i) Write("out/f" + std::to_string(i), "x");
  auto tree = ListTree(Out(), 4);
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(tree.status().message().find("more than 4 files"), std::string::npos);
  EXPECT_NE(tree.status().message().find("`cohort data pack DIR OUT` packs many small files"),
            std::string::npos)
      << tree.status().message();
  EXPECT_TRUE(ListTree(Out(), 5).ok());
  EXPECT_EQ(ListTree((root_ / "none").string(), 5).status().code(), StatusCode::kNotFound);
}

TEST_F(FileTreeTest, OpenBeneathNeverFollowsALinkOnTheWay) {
  Write("out/d/file", "mine");
  auto file = OpenBeneath(Out(), "d/file");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::ifstream in(file->ProcPath());
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "mine");

  // Listed as a directory, then swapped for a link to a secret one before the upload opens it.
  fs::remove_all(root_ / "out/d");
  fs::create_directory_symlink(root_ / "secret", root_ / "out/d");
  Write("secret/file", "secret");
  auto swapped = OpenBeneath(Out(), "d/file");
  ASSERT_FALSE(swapped.ok());
  EXPECT_EQ(swapped.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(swapped.status().message().find("symbolic link"), std::string::npos);

  fs::create_symlink(root_ / "secret/key", root_ / "out/key");
  EXPECT_EQ(OpenBeneath(Out(), "key").status().code(), StatusCode::kPermissionDenied);
  ASSERT_EQ(::mkfifo((root_ / "out/fifo").c_str(), 0600), 0);
  EXPECT_EQ(OpenBeneath(Out(), "fifo").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(OpenBeneath(Out(), "../secret/key").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenBeneath(Out(), "missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cohort::store
