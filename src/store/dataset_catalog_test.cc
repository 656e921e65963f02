// Datasets in a directory store: what the catalog commits is what a later catalog (a restarted
// master) reads; a version is never visible without its chunks, nor a number given twice.
#include "store/dataset_catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/content_hash.h"
#include "store/dataset_layout.h"
#include "store/directory_store.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

class DatasetCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cohort-datasets-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    auto store = OpenDirectoryStore(root_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override { fs::remove_all(root_); }

  // A file of `content` in one chunk, whose blob is stored when `store_blob`.
  DatasetFile File(const std::string& path, const std::string& content, bool store_blob = true) {
    std::string sha = *Sha256Hex(content);
    if (store_blob) {
      EXPECT_TRUE(store_->Put(BlobKey(sha), content).ok());
    }
    DatasetFile f{path, static_cast<int64_t>(content.size()), sha, {}};
    if (!content.empty()) f.chunks.push_back({sha, f.size});
    return f;
  }
  DatasetVersion Draft(std::vector<DatasetFile> files, std::string team = "vision") {
    DatasetVersion v;
    v.name = "cifar";
    v.team = std::move(team);
    v.user = "ada";
    v.files = std::move(files);
    return v;
  }

  fs::path root_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(DatasetCatalogTest, CommitsNumberedVersionsThatALaterCatalogReads) {
  DatasetCatalog catalog(*store_);
  auto one = catalog.Commit(Draft({File("a.txt", "hello"), File("empty", "")}), 0);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->version, 1);
  EXPECT_EQ(one->bytes, 5);
  EXPECT_EQ(one->file_count, 2);
  auto two = catalog.Commit(Draft({File("a.txt", "hello!")}), 0);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->version, 2);
  EXPECT_EQ(catalog.TeamBytes("vision"), 11);

  DatasetCatalog later(*store_);
  ASSERT_TRUE(later.Load().ok());
  auto versions = later.Versions("vision", "cifar");
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[1]->bytes, 6);
  EXPECT_EQ(versions[0]->user, "ada");
  auto manifest = later.Manifest("vision", "cifar", 1);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  ASSERT_EQ(manifest->files.size(), 2u);
  EXPECT_EQ(manifest->files[0].path, "a.txt");
}

TEST_F(DatasetCatalogTest, AMissingChunkIsNamedAndNothingIsVisible) {
  DatasetCatalog catalog(*store_);
  auto refused = catalog.Commit(Draft({File("a", "x"), File("b", "not stored", false)}), 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("files[1] (\"b\")"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(catalog.All().empty());
  auto listed = store_->List("datasets/", "", 10);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->objects.empty());
}

TEST_F(DatasetCatalogTest, ADeletedVersionsNumberIsNeverGivenAgain) {
  DatasetCatalog catalog(*store_);
  ASSERT_TRUE(catalog.Commit(Draft({File("a", "1")}), 0).ok());
  ASSERT_TRUE(catalog.Commit(Draft({File("a", "2")}), 0).ok());
  ASSERT_TRUE(catalog.Delete("vision", "cifar", 2).ok());
  EXPECT_EQ(catalog.Delete("vision", "cifar", 2).code(), StatusCode::kNotFound);
  // The chunks stay: other versions may share them.
  EXPECT_TRUE(store_->Head(BlobKey(*Sha256Hex("2"))).ok());

  DatasetCatalog later(*store_);
  auto three = later.Commit(Draft({File("a", "3")}), 0);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->version, 3);
  EXPECT_EQ(later.Versions("vision", "cifar").size(), 2u);
  EXPECT_EQ(later.Find("vision", "cifar", 2), nullptr);
}

TEST_F(DatasetCatalogTest, AVersionOverTheTeamsQuotaIsRefusedNamingUseAndLimit) {
  DatasetCatalog catalog(*store_);
  ASSERT_TRUE(catalog.Commit(Draft({File("a", std::string(60, 'a'))}), 100).ok());
  auto over = catalog.Commit(Draft({File("b", std::string(50, 'b'))}), 100);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(over.status().message().find("its datasets take 60 bytes"), std::string::npos)
      << over.status().message();
  // Another team's quota is its own.
  EXPECT_TRUE(catalog.Commit(Draft({File("b", std::string(50, 'b'))}, "nlp"), 100).ok());
}

TEST_F(DatasetCatalogTest, FilesAreCheckedBeforeAnythingIsWritten) {
  DatasetCatalog catalog(*store_);
  struct Case {
    DatasetFile file;
    const char* says;
  };
  DatasetFile good = File("a", "abc");
  DatasetFile wrong_sum = good;
  wrong_sum.size = 4;
  DatasetFile escape = good;
  escape.path = "../etc/passwd";
  DatasetFile absolute = good;
  absolute.path = "/etc/passwd";
  DatasetFile bad_hash = good;
  bad_hash.sha256 = "ABC";
  DatasetFile big_chunk = good;
  big_chunk.chunks[0].size = kMaxDatasetChunkBytes + 1;
  big_chunk.size = big_chunk.chunks[0].size;
  DatasetFile other_hash = good;
  other_hash.sha256 = std::string(64, '0');
  for (const Case& c : {Case{wrong_sum, "files[0].size"}, Case{escape, "files[0].path"},
                        Case{absolute, "files[0].path"}, Case{bad_hash, "files[0].sha256"},
                        Case{big_chunk, "files[0].chunks[0].size"},
                        Case{other_hash, "one chunk has that chunk's hash"}}) {
    auto refused = catalog.Commit(Draft({c.file}), 0);
    ASSERT_FALSE(refused.ok()) << c.says;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(c.says), std::string::npos)
        << refused.status().message();
  }
  auto twice = catalog.Commit(Draft({good, good}), 0);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("named twice"), std::string::npos);
  EXPECT_TRUE(catalog.All().empty());
}

TEST(DatasetLayoutTest, KeysReadBackAsWhatTheyName) {
  auto manifest = ParseDatasetKey(ManifestKey("vision", "cifar", 12));
  ASSERT_TRUE(manifest);
  EXPECT_EQ(manifest->kind, DatasetKey::Kind::kManifest);
  EXPECT_EQ(manifest->version, 12);
  auto summary = ParseDatasetKey(SummaryKey("vision", "cifar", 3));
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->kind, DatasetKey::Kind::kSummary);
  EXPECT_EQ(summary->name, "cifar");
  auto last = ParseDatasetKey(LastVersionKey("vision", "cifar"));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->kind, DatasetKey::Kind::kLastVersion);
  EXPECT_FALSE(ParseDatasetKey("datasets/vision/cifar/x.json"));
  EXPECT_FALSE(ParseDatasetKey("datasets/vision/cifar.json"));
  EXPECT_EQ(BlobKey(std::string(64, 'a')), "blobs/aa/" + std::string(64, 'a'));
}

}  // namespace
}  // namespace cohort::store
