// Fetching datasets ahead of placement, against a real directory store: on the prefetcher's own
// thread, once however often the master asks, reported in the cache's contents, and a failure
// reported for as long as the master asks (docs/data.md, "Placement and the pull").
#include "agent/dataset_prefetcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "store/chunked_files_testing.h"
#include "store/dataset_layout.h"
#include "store/directory_store.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using store::testing::PutChunkedFile;
using store::testing::PutManifest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class DatasetPrefetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dataset_prefetcher_test_" + std::to_string(::getpid()));
    store::testing::RemoveReadOnlyTree(root_);
    auto opened = store::OpenDirectoryStore((root_ / "store").string());
    ASSERT_TRUE(opened.ok());
    ASSERT_TRUE(
        PutManifest(**opened, Key("1"), {PutChunkedFile(**opened, "shard-0", "digits")}).ok());
    prefetcher_ = std::make_unique<DatasetPrefetcher>(
        (root_ / "cache").string(), 1 << 20,
        [this](const StoreAccess& access) -> StatusOr<std::unique_ptr<store::ObjectStore>> {
          ++opens_;
          return store::OpenDirectoryStore(access.directory);
        });
  }
  void TearDown() override {
    prefetcher_.reset();
    store::testing::RemoveReadOnlyTree(root_);
  }
  static std::string Key(const std::string& v) { return "datasets/vision/digits/" + v + ".json"; }
  DatasetPrefetch Ask(const std::string& v) const {
    StoreAccess access;
    access.directory = (root_ / "store").string();
    return DatasetPrefetch{"vision/digits:" + v, Key(v), access};
  }
  static std::string Id(const std::string& v) { return *store::DatasetCacheId(Key(v)); }

  fs::path root_;
  std::atomic<int> opens_{0};
  std::unique_ptr<DatasetPrefetcher> prefetcher_;
};

TEST_F(DatasetPrefetcherTest, AVersionAskedForIsFetchedOnceAndReportedUntilTheMasterHasIt) {
  AgentReport report;
  prefetcher_->Fill(report, FromMicros(0));
  ASSERT_TRUE(report.cached_datasets.has_value()) << "the first report says what the cache holds";
  EXPECT_THAT(*report.cached_datasets, IsEmpty());
  prefetcher_->Acknowledge(report, FromMicros(0));

  prefetcher_->Want({Ask("1"), Ask("1")});
  prefetcher_->Want({Ask("1")});  // asked again while queued or under way: not fetched again
  prefetcher_->Drain();
  EXPECT_EQ(opens_, 1);
  EXPECT_TRUE(fs::exists(root_ / "cache" / "versions"));

  report = {};
  prefetcher_->Fill(report, FromMicros(1'000'000));
  ASSERT_TRUE(report.cached_datasets.has_value());
  EXPECT_THAT(*report.cached_datasets, ElementsAre(Id("1")));
  EXPECT_THAT(report.prefetch_failures, IsEmpty());

  // The report was lost: the next one says it again. Once taken, unchanged, it is left out, until
  // a minute has passed.
  report = {};
  prefetcher_->Fill(report, FromMicros(2'000'000));
  ASSERT_TRUE(report.cached_datasets.has_value());
  prefetcher_->Acknowledge(report, FromMicros(2'000'000));
  report = {};
  prefetcher_->Fill(report, FromMicros(3'000'000));
  EXPECT_FALSE(report.cached_datasets.has_value());
  report = {};
  prefetcher_->Fill(report, FromMicros(2'000'000) + DatasetPrefetcher::kResendEvery);
  EXPECT_TRUE(report.cached_datasets.has_value());

  // Asked for while fetched already: the store is not asked.
  prefetcher_->Want({Ask("1")});
  prefetcher_->Drain();
  EXPECT_EQ(opens_, 1);
}

TEST_F(DatasetPrefetcherTest, AFailureIsReportedWhileAskedForAndTriedAgainWhenAskedAnew) {
  prefetcher_->Want({Ask("7")});  // not in the store
  prefetcher_->Drain();
  AgentReport report;
  prefetcher_->Fill(report, FromMicros(0));
  ASSERT_EQ(report.prefetch_failures.size(), 1u);
  EXPECT_THAT(report.prefetch_failures[Id("7")], HasSubstr("7.json"));
  prefetcher_->Want({Ask("7")});
  prefetcher_->Drain();
  EXPECT_EQ(opens_, 1) << "not tried again while the master still asks";

  prefetcher_->Want({});
  report = {};
  prefetcher_->Fill(report, FromMicros(0));
  EXPECT_THAT(report.prefetch_failures, IsEmpty()) << "no longer asked for";
  prefetcher_->Want({Ask("7")});
  prefetcher_->Drain();
  EXPECT_EQ(opens_, 2) << "asked anew: tried anew";
}

}  // namespace
}  // namespace cohort::agent
