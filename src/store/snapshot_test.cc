#include "store/snapshot.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "os/process.h"
#include "store/directory_store.h"
#include "store/forwarding_store.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string Read(const fs::path& path) { return ReadFileOrEmpty(path.string()); }

// A real store that fails the Put of a manifest when told to, and counts the files put.
class FailingManifests final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  bool fail_manifest = false;
  int files_put = 0;
  Status Put(const std::string& key, std::string_view data) override {
    if (fail_manifest && key.ends_with("/manifest.json")) return Status::Unavailable("down");
    return ForwardingStore::Put(key, data);
  }
  Status PutFile(const std::string& key, const std::string& path) override {
    ++files_put;
    return ForwardingStore::PutFile(key, path);
  }
};

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("snapshot_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "staging");
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    auto opened = OpenDirectoryStore((root_ / "store").string());
    ASSERT_TRUE(opened.ok());
    real_ = opened->get();
    store_ = std::make_unique<FailingManifests>(std::move(*opened));
  }
  void TearDown() override { fs::remove_all(root_); }

  StatusOr<Snapshot> Push(const Snapshot* previous, std::optional<int64_t> step = {}) {
    COHORT_ASSIGN_OR_RETURN(SnapshotPlan plan, PlanSnapshot(dir("a"), previous));
    return PushSnapshot(*store_, kPrefix, dir("a"), plan, previous, 1, step, Timestamp{});
  }
  size_t Blobs() {
    auto page = real_->List(std::string(kPrefix) + "/blobs/", "", 1000);
    return page.ok() ? page->objects.size() : 9999;
  }
  std::string dir(const char* name) { return (root_ / name).string(); }

  static constexpr const char* kPrefix = "jobs/7/checkpoints";
  fs::path root_;
  ObjectStore* real_ = nullptr;  // what store_ passes its calls to
  std::unique_ptr<FailingManifests> store_;
};

TEST_F(SnapshotTest, APushedDirectoryIsPulledWholeElsewhereAndChecked) {
  Write(root_ / "a/model.pt", std::string(100'000, 'm'));
  Write(root_ / "a/sub/optim.pt", "optimizer");
  Write(root_ / "a/copy.pt", "optimizer");  // same content: one blob
  auto pushed = Push(nullptr, 40);
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(pushed->files.size(), 3u);
  EXPECT_EQ(Blobs(), 2u);

  auto read = ReadSnapshot(*store_, kPrefix);
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ((*read)->step, 40);
  EXPECT_EQ((*read)->bytes, 100'000 + 9 + 9);
  auto pulled = PullSnapshot(*store_, kPrefix, **read, dir("b"), dir("staging"), std::nullopt);
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(pulled->files_fetched, 3u);
  EXPECT_EQ(Read(root_ / "b/model.pt"), std::string(100'000, 'm'));
  EXPECT_EQ(Read(root_ / "b/sub/optim.pt"), "optimizer");
  EXPECT_EQ(fs::status(root_ / "b/model.pt").permissions() & fs::perms::all, fs::perms(0600));

  // Pulled again, nothing is fetched: what is there is checked by its hash.
  auto again = PullSnapshot(*store_, kPrefix, **read, dir("b"), dir("staging"), std::nullopt);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->files_fetched, 0u);
  EXPECT_EQ(again->files_kept, 3u);
  // A file changed in place is fetched again.
  Write(root_ / "b/model.pt", std::string(100'000, 'x'));
  again = PullSnapshot(*store_, kPrefix, **read, dir("b"), dir("staging"), std::nullopt);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->files_fetched, 1u);
  EXPECT_EQ(Read(root_ / "b/model.pt"), std::string(100'000, 'm'));
}

TEST_F(SnapshotTest, OnlyNewContentIsSentAndReplacedBlobsGo) {
  Write(root_ / "a/model.pt", "step 1");
  Write(root_ / "a/config.json", "{}");
  auto first = Push(nullptr);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(store_->files_put, 2);

  auto plan = PlanSnapshot(dir("a"), &*first);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->changed);
  EXPECT_EQ(plan->bytes_to_send, 0);

  Write(root_ / "a/model.pt", "step 22");
  plan = PlanSnapshot(dir("a"), &*first);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->changed);
  EXPECT_EQ(plan->bytes_to_send, 7);
  auto second = Push(&*first);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(store_->files_put, 3);  // only the new model
  EXPECT_EQ(Blobs(), 2u);           // the old model's blob went
}

TEST_F(SnapshotTest, AFailedPushLeavesTheLastWholeSnapshot) {
  Write(root_ / "a/model.pt", "step 1");
  auto first = Push(nullptr, 1);
  ASSERT_TRUE(first.ok());
  Write(root_ / "a/model.pt", "step 2");
  store_->fail_manifest = true;
  EXPECT_FALSE(Push(&*first, 2).ok());
  auto read = ReadSnapshot(*store_, kPrefix);
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ((*read)->step, 1);
  ASSERT_TRUE(PullSnapshot(*store_, kPrefix, **read, dir("b"), dir("staging"), std::nullopt).ok());
  EXPECT_EQ(Read(root_ / "b/model.pt"), "step 1");
}

TEST_F(SnapshotTest, APullNeverWritesThroughALinkAndRefusesDamagedContent) {
  Write(root_ / "a/sub/model.pt", "weights");
  auto pushed = Push(nullptr);
  ASSERT_TRUE(pushed.ok());
  // The directory on the way is a link elsewhere (what a task could leave for a root restore).
  fs::create_directories(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "b/sub");
  auto pulled = PullSnapshot(*store_, kPrefix, *pushed, dir("b"), dir("staging"), std::nullopt);
  EXPECT_EQ(pulled.status().code(), StatusCode::kPermissionDenied) << pulled.status().ToString();
  EXPECT_FALSE(fs::exists(root_ / "elsewhere/model.pt"));

  fs::remove(root_ / "b/sub");
  ASSERT_TRUE(real_->Put(BlobKey(kPrefix, pushed->files[0].sha256), "tampered").ok());
  pulled = PullSnapshot(*store_, kPrefix, *pushed, dir("b"), dir("staging"), std::nullopt);
  EXPECT_EQ(pulled.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(root_ / "b/sub/model.pt"));

  ASSERT_TRUE(real_->Put(ManifestKey(kPrefix), R"({"version":1,"files":"x"})").ok());
  EXPECT_EQ(ReadSnapshot(*store_, kPrefix).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(real_->Delete(ManifestKey(kPrefix)).ok());
  auto none = ReadSnapshot(*store_, kPrefix);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace cohort::store
