#include "agent/artifact_uploads.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/directory_store.h"
#include "store/forwarding_store.h"
#include "store/open_store.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

// The real directory store, which fails every put while `down` is set, or for good with `refuse`.
class SwitchableStore : public store::ForwardingStore {
 public:
  SwitchableStore(std::unique_ptr<store::ObjectStore> inner, const bool& down, const bool& refuse,
                  int& puts)
      : ForwardingStore(std::move(inner)), down_(down), refuse_(refuse), puts_(puts) {}
  Status Put(const std::string& key, std::string_view data) override {
    COHORT_RETURN_IF_ERROR(Check());
    return ForwardingStore::Put(key, data);
  }
  Status PutFile(const std::string& key, const std::string& path) override {
    COHORT_RETURN_IF_ERROR(Check());
    return ForwardingStore::PutFile(key, path);
  }

 private:
  Status Check() {
    if (down_) return Status::Unavailable("store at 127.0.0.1:1 is down");
    if (refuse_) return Status::PermissionDenied("AccessDenied: not yours");
    ++puts_;
    return Status::Ok();
  }
  const bool& down_;
  const bool& refuse_;
  int& puts_;
};

class ArtifactUploadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cohort-uploads-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "outputs");
    access_.directory = (root_ / "store").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<ArtifactUploads> Uploads(UploadLimits limits = {}) {
    auto uploads = std::make_unique<ArtifactUploads>(
        (root_ / "agent" / "uploads").string(), clock_,
        [this](const StoreAccess& access) -> StatusOr<std::unique_ptr<store::ObjectStore>> {
          ++opens_;
          if (down_at_open_) return Status::Unavailable("cannot reach the store");
          COHORT_ASSIGN_OR_RETURN(auto inner, store::OpenStore(access));
          return std::unique_ptr<store::ObjectStore>(
              new SwitchableStore(std::move(inner), down_, refuse_, puts_));
        },
        limits);
    EXPECT_TRUE(uploads->Load().ok());
    return uploads;
  }
  void Write(const std::string& path, const std::string& content) {
    fs::create_directories((root_ / "outputs" / path).parent_path());
    std::ofstream(root_ / "outputs" / path) << content;
  }
  UploadRequest Request(const std::string& id = "7.1.worker.0") {
    return UploadRequest{id, (root_ / "outputs").string(), "jobs/7/outputs"};
  }
  std::string Stored(const std::string& key) {
    auto store = store::OpenDirectoryStore(access_.directory);
    auto data = (*store)->Get(key, 1 << 20);
    return data.ok() ? *data : "<" + data.status().message() + ">";
  }
  static int Drain(ArtifactUploads& uploads) {
    int steps = 0;
    while (uploads.Step()) ++steps;
    return steps;
  }

  fs::path root_;
  StoreAccess access_;
  ManualClock clock_;
  bool down_ = false, refuse_ = false, down_at_open_ = false;
  int puts_ = 0, opens_ = 0;
};

TEST_F(ArtifactUploadsTest, WaitsForTheMasterThenStoresEveryFileWithItsProgress) {
  Write("model.pt", "weights");
  Write("eval/accuracy.txt", "0.97");
  auto uploads = Uploads();
  ASSERT_TRUE(uploads->Begin(Request()).ok());
  auto p = *uploads->ProgressOf("7.1.worker.0");
  EXPECT_EQ(p.state, UploadState::kWaiting);
  EXPECT_EQ(p.files_total, 2);
  EXPECT_EQ(p.bytes_total, 11);
  EXPECT_FALSE(uploads->Step());  // nothing moves before the master allows it
  EXPECT_EQ(puts_, 0);

  uploads->Allow("7.1.worker.0", access_);
  EXPECT_TRUE(uploads->Step());
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->files_done, 1);
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->state, UploadState::kUploading);
  EXPECT_FALSE(uploads->Step());
  p = *uploads->ProgressOf("7.1.worker.0");
  EXPECT_EQ(p.state, UploadState::kStored);
  EXPECT_EQ(p.files_done, 2);
  EXPECT_EQ(p.bytes_done, 11);
  EXPECT_EQ(Stored("jobs/7/outputs/model.pt"), "weights");
  EXPECT_EQ(Stored("jobs/7/outputs/eval/accuracy.txt"), "0.97");
}

TEST_F(ArtifactUploadsTest, ARestartedAgentResumesWhereTheLastStoppedWithoutSendingAgain) {
  for (int i = 0; i < 10; ++i) Write(fmt::format("f{:02}", i), std::string(100, 'a' + i));
  {
    auto uploads = Uploads(UploadLimits{.save_every = Duration{}});
    ASSERT_TRUE(uploads->Begin(Request()).ok());
    uploads->Allow("7.1.worker.0", access_);
    for (int i = 0; i < 4; ++i) uploads->Step();
    // The agent is killed here: its object goes without a word.
  }
  EXPECT_EQ(puts_, 4);
  auto uploads = Uploads();
  auto p = *uploads->ProgressOf("7.1.worker.0");
  EXPECT_EQ(p.state, UploadState::kUploading);
  EXPECT_EQ(p.files_done, 4);
  Drain(*uploads);
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->state, UploadState::kStored);
  EXPECT_EQ(puts_, 10);  // each file once
  EXPECT_EQ(Stored("jobs/7/outputs/f09"), std::string(100, 'j'));
  // Begin again (the master told it twice) changes nothing.
  ASSERT_TRUE(uploads->Begin(Request()).ok());
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->state, UploadState::kStored);
}

TEST_F(ArtifactUploadsTest, AStoreThatIsDownIsRetriedWithBackoffUntilItIsBack) {
  Write("a", "1");
  Write("b", "2");
  auto uploads = Uploads(UploadLimits{.first_backoff = std::chrono::seconds(1),
                                      .max_backoff = std::chrono::seconds(4)});
  ASSERT_TRUE(uploads->Begin(Request()).ok());
  uploads->Allow("7.1.worker.0", access_);
  down_ = true;
  std::vector<Duration> waits;
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(uploads->Step());
    auto p = *uploads->ProgressOf("7.1.worker.0");
    ASSERT_TRUE(p.retry_at);
    EXPECT_EQ(p.state, UploadState::kUploading);
    EXPECT_NE(p.reason.find("is down"), std::string::npos) << p.reason;
    waits.push_back(*p.retry_at - clock_.Now());
    EXPECT_FALSE(uploads->Step());  // not before its time
    clock_.Advance(*p.retry_at - clock_.Now());
  }
  using std::chrono::seconds;
  EXPECT_EQ(waits,
            (std::vector<Duration>{seconds(1), seconds(2), seconds(4), seconds(4), seconds(4)}));
  down_ = false;
  Drain(*uploads);
  auto p = *uploads->ProgressOf("7.1.worker.0");
  EXPECT_EQ(p.state, UploadState::kStored);
  EXPECT_TRUE(p.reason.empty());
  EXPECT_EQ(Stored("jobs/7/outputs/b"), "2");
}

TEST_F(ArtifactUploadsTest, RefusedByTheMasterOrByTheStoreForGoodItFailsSayingWhy) {
  Write("a", "1");
  auto uploads = Uploads();
  ASSERT_TRUE(uploads->Begin(Request("7.1.worker.0")).ok());
  uploads->Refuse("7.1.worker.0", "team vision's store quota of 1GiB is used");
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->state, UploadState::kFailed);
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->reason,
            "team vision's store quota of 1GiB is used");
  EXPECT_FALSE(uploads->Step());

  refuse_ = true;
  ASSERT_TRUE(uploads->Begin(Request("8.1.worker.0")).ok());
  uploads->Allow("8.1.worker.0", access_);
  uploads->Step();
  auto p = *uploads->ProgressOf("8.1.worker.0");
  EXPECT_EQ(p.state, UploadState::kFailed);
  EXPECT_EQ(p.reason, "the store refused a: AccessDenied: not yours");
  // Failed stays failed across a restart.
  EXPECT_EQ(Uploads()->ProgressOf("8.1.worker.0")->state, UploadState::kFailed);
}

TEST_F(ArtifactUploadsTest, LinksOutOfTheDirectoryAndFilesGoneMidwayAreLeftOut) {
  fs::create_directories(root_ / "secret");
  std::ofstream(root_ / "secret" / "key") << "private";
  Write("a", "1");
  Write("b", "2");
  fs::create_symlink(root_ / "secret" / "key", root_ / "outputs" / "c");
  auto uploads = Uploads();
  ASSERT_TRUE(uploads->Begin(Request()).ok());
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->files_skipped, 1);
  uploads->Allow("7.1.worker.0", access_);
  // Listed, then replaced by a link before its turn.
  fs::remove(root_ / "outputs" / "b");
  fs::create_symlink(root_ / "secret" / "key", root_ / "outputs" / "b");
  Drain(*uploads);
  auto p = *uploads->ProgressOf("7.1.worker.0");
  EXPECT_EQ(p.state, UploadState::kStored);
  EXPECT_EQ(p.files_skipped, 2);
  EXPECT_EQ(Stored("jobs/7/outputs/a"), "1");
  EXPECT_NE(Stored("jobs/7/outputs/b"), "private");
  EXPECT_NE(Stored("jobs/7/outputs/c"), "private");
}

TEST_F(ArtifactUploadsTest, ForgottenUploadsLeaveNothingAndBadStateIsSetAside) {
  auto uploads = Uploads();
  // An empty directory is no upload: nothing for the master to decide or record.
  ASSERT_TRUE(uploads->Begin(Request()).ok());
  EXPECT_FALSE(uploads->ProgressOf("7.1.worker.0"));
  Write("a", "1");
  ASSERT_TRUE(uploads->Begin(Request()).ok());
  uploads->Allow("7.1.worker.0", access_);
  Drain(*uploads);
  EXPECT_EQ(uploads->ProgressOf("7.1.worker.0")->state, UploadState::kStored);
  fs::path dir = root_ / "agent" / "uploads";
  EXPECT_TRUE(fs::exists(dir / "7.1.worker.0.json"));
  EXPECT_EQ(fs::status(dir / "7.1.worker.0.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  uploads->Forget("7.1.worker.0");
  EXPECT_FALSE(fs::exists(dir / "7.1.worker.0.json"));

  std::ofstream(dir / "9.1.worker.0.json") << "{half a record";
  auto reloaded = Uploads();
  EXPECT_TRUE(reloaded->Progress().empty());
  EXPECT_TRUE(fs::exists(dir / "9.1.worker.0.json.bad"));
}

}  // namespace
}  // namespace cohort::agent
