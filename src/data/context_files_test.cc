#include "data/context_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort::data {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ContextFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("context_files_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((dir_ / path).parent_path());
    std::ofstream(dir_ / path) << text;
  }
  std::vector<std::string> Paths(const DatasetScan& scan) {
    std::vector<std::string> paths;
    for (const auto& f : scan.files) paths.push_back(f.path + (f.executable ? "*" : ""));
    return paths;
  }
  fs::path dir_;
};

TEST_F(ContextFilesTest, TheIgnoreFileLeavesOutWhatItNamesAndKeepsExecutableBits) {
  Write("train.py", "print(1)\n");
  Write("run.sh", "#!/bin/sh\n");
  fs::permissions(dir_ / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  Write("data/big.bin", std::string(1000, 'x'));
  Write("data/keep.txt", "k");
  Write("src/model.py", "m");
  Write("src/__pycache__/model.pyc", "c");
  Write(".cohortignore", "# not the data\ndata/\n!data/keep.txt\n__pycache__/\n");
  auto scan = ScanContext(dir_.string());
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  // data/ is left out whole: what is inside an excluded directory is never looked at.
  EXPECT_THAT(Paths(*scan), ElementsAre(".cohortignore", "run.sh*", "src/model.py", "train.py"));
  EXPECT_EQ(scan->skipped_count, 0u) << "left out by the rules is not skipped";
}

TEST_F(ContextFilesTest, WithoutAnIgnoreFileGitAndPythonCachesStayBehind) {
  Write("train.py", "print(1)\n");
  Write(".git/objects/ab/cdef", "blob");
  Write("pkg/__pycache__/x.cpython-311.pyc", "c");
  Write("pkg/mod.pyc", "c");
  auto scan = ScanContext(dir_.string());
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  EXPECT_THAT(Paths(*scan), ElementsAre("train.py"));
}

TEST_F(ContextFilesTest, TooMuchCodeIsRefusedNamingWhereTheBytesAreAndWhatToDo) {
  Write("train.py", "print(1)\n");
  fs::create_directories(dir_ / "checkpoints");
  // Sparse: 101 MiB that take no disk.
  { std::ofstream(dir_ / "checkpoints" / "model.pt"); }
  fs::resize_file(dir_ / "checkpoints" / "model.pt", (101 << 20));
  auto scan = ScanContext(dir_.string());
  ASSERT_EQ(scan.status().code(), StatusCode::kResourceExhausted) << scan.status().ToString();
  EXPECT_THAT(scan.status().message(), HasSubstr("is 101Mi, more than the 100Mi"));
  EXPECT_THAT(scan.status().message(), HasSubstr("the most is in checkpoints/ (101Mi)"));
  EXPECT_THAT(scan.status().message(), HasSubstr(".cohortignore"));
  EXPECT_THAT(scan.status().message(), HasSubstr("--no-context"));

  Write(".cohortignore", "checkpoints/\n");
  EXPECT_TRUE(ScanContext(dir_.string()).ok());
  Write(".cohortignore", std::string(5000, 'x') + "\n");
  auto bad = ScanContext(dir_.string());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr(".cohortignore: "));
}

}  // namespace
}  // namespace cohort::data
