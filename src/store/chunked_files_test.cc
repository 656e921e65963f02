#include "store/chunked_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "os/process.h"
#include "store/chunked_files_testing.h"
#include "store/directory_store.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;
using testing::PutChunkedFile;
using testing::PutManifest;

class ChunkedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("chunked_files_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "out");
    auto opened = OpenDirectoryStore((root_ / "store").string());
    ASSERT_TRUE(opened.ok());
    store_ = std::move(*opened);
  }
  void TearDown() override { testing::RemoveReadOnlyTree(root_); }
  std::string out() const { return (root_ / "out").string(); }
  mode_t Mode(const std::string& relative) const {
    struct stat st {};
    ::lstat((root_ / "out" / relative).c_str(), &st);
    return st.st_mode & 07777;
  }

  fs::path root_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(ChunkedFilesTest, AManifestsFilesComeOutWholeWithTheirModes) {
  DatasetFile run = PutChunkedFile(*store_, "run.sh", "#!/bin/sh\necho hi\n");
  run.executable = true;
  std::vector<DatasetFile> files = {PutChunkedFile(*store_, "a/b/data.txt", "0123456789"), run,
                                    PutChunkedFile(*store_, "empty", "")};
  ASSERT_TRUE(PutManifest(*store_, "contexts/x.json", files).ok());
  auto read = ReadFileManifest(*store_, "contexts/x.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 3u);
  EXPECT_TRUE((*read)[1].executable);
  int64_t last_progress = 0;
  ASSERT_TRUE(PullChunkedFiles(*store_, *read, out(), PullFilesOptions{.progress = [&](int64_t b) {
                last_progress = b;
              }}).ok());
  EXPECT_EQ(ReadFileOrEmpty(out() + "/a/b/data.txt"), "0123456789");
  EXPECT_EQ(ReadFileOrEmpty(out() + "/run.sh"), "#!/bin/sh\necho hi\n");
  EXPECT_TRUE(fs::exists(out() + "/empty"));
  EXPECT_EQ(last_progress, 10 + 18);
  EXPECT_EQ(Mode("a/b/data.txt"), 0444u);
  EXPECT_EQ(Mode("run.sh"), 0555u);
  EXPECT_EQ(Mode("a"), 0555u);
  EXPECT_EQ(Mode("a/b"), 0555u);
}

TEST_F(ChunkedFilesTest, ADamagedOrMissingChunkFailsNamingTheFile) {
  DatasetFile file = PutChunkedFile(*store_, "weights.bin", "abcdefgh");
  ASSERT_TRUE(store_->Put(BlobKey(file.chunks[1].sha256), "EFGH").ok());
  Status damaged = PullChunkedFiles(*store_, {file}, out(), {});
  EXPECT_EQ(damaged.code(), StatusCode::kFailedPrecondition) << damaged.ToString();
  EXPECT_NE(damaged.message().find("weights.bin: the store's copy of its chunk"), std::string::npos)
      << damaged.message();

  fs::remove_all(root_ / "out");
  fs::create_directories(root_ / "out");
  ASSERT_TRUE(store_->Delete(BlobKey(file.chunks[1].sha256)).ok());
  Status missing = PullChunkedFiles(*store_, {file}, out(), {});
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.ToString();
  EXPECT_NE(missing.message().find("is not in the store"), std::string::npos);
}

TEST_F(ChunkedFilesTest, AManifestThatIsNotOneIsRefusedAndAnAbsentOneIsNotFound) {
  EXPECT_EQ(ReadFileManifest(*store_, "contexts/none.json").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store_
                  ->Put("contexts/bad.json", R"({"files": [{"path": "../x", "size": 0,)"
                                             R"( "sha256": "00", "chunks": []}]})")
                  .ok());
  auto bad = ReadFileManifest(*store_, "contexts/bad.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bad.status().message().find("the manifest contexts/bad.json is damaged"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace cohort::store
