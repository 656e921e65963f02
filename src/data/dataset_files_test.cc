// A real directory hashed for `cohort data put`: chunks of 8 MiB with their own hashes, the whole
// file's hash, chunks read back as they were hashed, links left out.
#include "data/dataset_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/content_hash.h"

namespace cohort::data {
namespace {

namespace fs = std::filesystem;

class DatasetFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cohort-dataset-files-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& path, const std::string& content) {
    std::ofstream(dir_ / path, std::ios::binary) << content;
  }
  fs::path dir_;
};

TEST_F(DatasetFilesTest, AFileOf20MiBIsThreeChunksReadBackAsHashed) {
  std::string big(20 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) >> 9);
  Write("sub/big.bin", big);
  Write("small.txt", "hello");
  Write("empty", "");
  fs::create_symlink("/etc/passwd", dir_ / "link");

  int64_t last_done = 0;
  auto scan = ScanDataset(dir_.string(), [&](int64_t done, int64_t total) {
    EXPECT_GE(done, last_done);
    EXPECT_EQ(total, static_cast<int64_t>(big.size()) + 5);
    last_done = done;
  });
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  EXPECT_EQ(last_done, static_cast<int64_t>(big.size()) + 5);
  ASSERT_EQ(scan->files.size(), 3u);
  EXPECT_EQ(scan->skipped_count, 1u);
  EXPECT_EQ(scan->bytes, static_cast<int64_t>(big.size()) + 5);

  const DatasetFile& empty = scan->files[0];
  EXPECT_EQ(empty.path, "empty");
  EXPECT_TRUE(empty.chunks.empty());
  EXPECT_EQ(empty.sha256, *store::Sha256Hex(""));

  const DatasetFile& small = scan->files[1];
  EXPECT_EQ(small.path, "small.txt");
  ASSERT_EQ(small.chunks.size(), 1u);
  EXPECT_EQ(small.chunks[0].sha256, small.sha256);

  const DatasetFile& file = scan->files[2];
  EXPECT_EQ(file.path, "sub/big.bin");
  EXPECT_EQ(file.sha256, *store::Sha256Hex(big));
  ASSERT_EQ(file.chunks.size(), 3u);
  EXPECT_EQ(file.chunks[0].size, kMaxDatasetChunkBytes);
  EXPECT_EQ(file.chunks[2].size, (20 << 20) - 2 * kMaxDatasetChunkBytes);
  std::string joined;
  for (size_t i = 0; i < file.chunks.size(); ++i) {
    auto chunk = ReadChunk(dir_.string(), file, i);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    EXPECT_EQ(*store::Sha256Hex(*chunk), file.chunks[i].sha256);
    joined += *chunk;
  }
  EXPECT_EQ(joined, big);

  // Cut short since the scan: the upload says so rather than sending less.
  Write("sub/big.bin", "short");
  auto changed = ReadChunk(dir_.string(), file, 2);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace cohort::data
