// The node's dataset cache against a real directory store and real locks: a version is fetched
// once and found after, never evicted while a task holds it, and the bound is kept.
#include "agent/dataset_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "os/process.h"
#include "store/chunked_files_testing.h"
#include "store/directory_store.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using store::testing::PutChunkedFile;
using store::testing::PutManifest;

class DatasetCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dataset_cache_test_" + std::to_string(::getpid()));
    Remove();
    auto opened = store::OpenDirectoryStore((root_ / "store").string());
    ASSERT_TRUE(opened.ok());
    store_ = std::move(*opened);
    // Three versions of 100 bytes each.
    for (const char* v : {"1", "2", "3"}) {
      std::string content(100, v[0]);
      ASSERT_TRUE(PutManifest(*store_, Key(v),
                              {PutChunkedFile(*store_, "shard-0", content, 64),
                               PutChunkedFile(*store_, "sub/labels.txt", "")})
                      .ok());
    }
  }
  void TearDown() override { Remove(); }
  void Remove() { store::testing::RemoveReadOnlyTree(root_); }
  static std::string Key(const std::string& v) { return "datasets/vision/digits/" + v + ".json"; }
  std::string cache_dir() const { return (root_ / "cache").string(); }

  fs::path root_;
  std::unique_ptr<store::ObjectStore> store_;
};

TEST_F(DatasetCacheTest, AVersionIsFetchedOnceReadOnlyAndFoundAfter) {
  DatasetCache cache(cache_dir(), 1 << 20);
  std::pair<int64_t, int64_t> told;
  auto first = cache.Acquire(*store_, Key("1"), [&](int64_t done, int64_t total) {
    told = {done, total};
  });
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->fetched);
  EXPECT_EQ(told, std::make_pair(int64_t{100}, int64_t{100})) << "the last chunk: all of it";
  EXPECT_EQ(first->bytes, 100);
  EXPECT_EQ(ReadFileOrEmpty(first->path + "/shard-0"), std::string(100, '1'));
  struct stat st {};
  ASSERT_EQ(::stat((first->path + "/shard-0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  ASSERT_EQ(::stat(first->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
  ASSERT_EQ(::stat((cache_dir() + "/versions").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u) << "reached by accounts, never listed";

  // Another task: found, not fetched, even with the chunks gone from the store.
  auto blobs = store_->List("blobs/", "", 1000);
  ASSERT_TRUE(blobs.ok());
  for (const auto& object : blobs->objects) ASSERT_TRUE(store_->Delete(object.key).ok());
  auto second = cache.Acquire(*store_, Key("1"));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(second->fetched);
  EXPECT_EQ(second->path, first->path);
  ::close(first->lock_fd);
  ::close(second->lock_fd);

  // A version whose chunks are gone fails, and leaves nothing half made behind.
  auto lost = cache.Acquire(*store_, Key("2"));
  EXPECT_EQ(lost.status().code(), StatusCode::kNotFound) << lost.status().ToString();
  EXPECT_TRUE(fs::is_empty(cache_dir() + "/staging"));
  auto bytes = cache.Bytes();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 100);
}

TEST_F(DatasetCacheTest, TheLeastRecentlyUsedGoFirstAndAHeldVersionNever) {
  DatasetCache cache(cache_dir(), 150);
  auto v1 = cache.Acquire(*store_, Key("1"));
  ASSERT_TRUE(v1.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto v2 = cache.Acquire(*store_, Key("2"));
  ASSERT_TRUE(v2.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto v3 = cache.Acquire(*store_, Key("3"));
  ASSERT_TRUE(v3.ok());
  // All three held: over the bound, and nothing may go.
  auto none = cache.Trim();
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0);
  EXPECT_EQ(*cache.Bytes(), 300);

  // Version 1's task ends; version 2's too, but 1 was used longest ago: 1 goes, then 2.
  ::close(v1->lock_fd);
  ::close(v2->lock_fd);
  auto evicted = cache.Trim();
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, 200);
  EXPECT_FALSE(fs::exists(v1->path));
  EXPECT_FALSE(fs::exists(v2->path));
  EXPECT_TRUE(fs::exists(v3->path)) << "held: never evicted, even over the bound";
  EXPECT_EQ(*cache.Bytes(), 100);

  // Used again: fetched again, and the least recent (3, once released) goes instead.
  ::close(v3->lock_fd);
  auto again = cache.Acquire(*store_, Key("1"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->fetched);
  auto trimmed = cache.Trim();
  ASSERT_TRUE(trimmed.ok());
  EXPECT_EQ(*trimmed, 100);
  EXPECT_TRUE(fs::exists(again->path));
  EXPECT_FALSE(fs::exists(v3->path));
  ::close(again->lock_fd);
}

TEST_F(DatasetCacheTest, AFetchLeftHalfDoneIsClearedOnceNoOneIsFetchingIt) {
  DatasetCache cache(cache_dir(), 1 << 20);
  ASSERT_TRUE(cache.Trim().ok());  // makes the directories
  // A supervisor killed mid-fetch left this, and its lock is free.
  fs::create_directories(cache_dir() + "/staging/" + std::string(32, 'a') + "-0011223344556677/x");
  auto trimmed = cache.Trim();
  ASSERT_TRUE(trimmed.ok());
  EXPECT_TRUE(fs::is_empty(cache_dir() + "/staging"));
}

}  // namespace
}  // namespace cohort::agent
