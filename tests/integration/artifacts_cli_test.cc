// `cohort artifacts ls/get` and `cohort status` against a real master whose directory store
// (<data-dir>/store) holds a job's outputs, as its agent would have uploaded them: listing,
// downloading all or a directory in 8 MiB ranges with the bytes checked, and never writing
// through a symbolic link out of the download directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/json.h"
#include "state/state_store.h"
#include "store/directory_store.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ArtifactsCli, OutputsAreListedAndDownloadedWholeInsideTheDirectoryOnly) {
  LocalCluster cluster("cliartifacts");
  std::string model(20 << 20, '\0');  // three ranges: 8 + 8 + 4 MiB
  for (size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>((i * 131) >> 9);
  {
    fs::create_directories(cluster.dir() + "/master");
    auto state = state::OpenSqliteStateStore(cluster.dir() + "/master/cohort.db");
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    Job job;
    job.user = TestAccount();
    job.spec.name = "trained";
    job.spec.team = "default";
    TaskGroupSpec group;
    group.role = "main";
    group.command = {"true"};
    group.resources = Resources{0, 1000, 1LL << 30};
    job.spec.tasks.push_back(group);
    job.state = JobState::kSucceeded;
    job.submitted_at = FromMicros(1'790'000'000'000'000);
    job.artifacts = UploadProgress{.id = "1.1.main.0",
                                   .state = UploadState::kStored,
                                   .files_done = 3,
                                   .files_total = 3,
                                   .bytes_done = static_cast<int64_t>(model.size()) + 8,
                                   .bytes_total = static_cast<int64_t>(model.size()) + 8,
                                   .files_skipped = 0,
                                   .reason = "",
                                   .retry_at = std::nullopt};
    ASSERT_TRUE(
        (*state)->CreateJob(job, {JobEvent{0, job.submitted_at, "submitted", "by the test"}}).ok());
    auto objects = store::OpenDirectoryStore(cluster.dir() + "/master/store");
    ASSERT_TRUE(objects.ok());
    ASSERT_TRUE((*objects)->Put("jobs/1/outputs/ckpt/model.bin", model).ok());
    ASSERT_TRUE((*objects)->Put("jobs/1/outputs/ckpt/sub/a.txt", "a").ok());
    ASSERT_TRUE((*objects)->Put("jobs/1/outputs/metrics.json", "{\"x\":1}").ok());
  }
  cluster.StartMaster();

  auto ls = cluster.Cohort({"artifacts", "ls", "1"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("Artifacts: stored: 3 files, 20Mi"));
  EXPECT_THAT(ls.out, HasSubstr("ckpt/model.bin"));
  EXPECT_THAT(ls.out, HasSubstr("metrics.json"));
  auto json = cluster.Cohort({"artifacts", "ls", "1", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  Json doc = *ParseJson(json.out);
  EXPECT_EQ(doc["artifacts"]["state"], "stored");
  ASSERT_EQ(doc["files"].size(), 3u);
  EXPECT_EQ(doc["files"][0]["path"], "ckpt/model.bin");
  EXPECT_EQ(doc["files"][0]["size"], model.size());
  auto status = cluster.Cohort({"status", "1"});
  EXPECT_THAT(status.out, HasSubstr("Artifacts:  stored: 3 files, 20Mi"));

  const fs::path all = fs::path(cluster.dir()) / "all";
  auto get = cluster.Cohort({"artifacts", "get", "1", "-o", all.string(), "--json"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ((*ParseJson(get.out))["bytes"], model.size() + 8);
  EXPECT_TRUE(ReadAll(all / "ckpt/model.bin") == model);
  EXPECT_EQ(ReadAll(all / "ckpt/sub/a.txt"), "a");
  EXPECT_EQ(ReadAll(all / "metrics.json"), "{\"x\":1}");
  EXPECT_FALSE(fs::exists(all / "ckpt/.model.bin.cohort-part"));

  const fs::path some = fs::path(cluster.dir()) / "some";
  auto sub = cluster.Cohort({"artifacts", "get", "1", "ckpt/sub/", "-o", some.string()});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_THAT(sub.out, HasSubstr("job 1: 1 file, 1 into"));
  EXPECT_EQ(ReadAll(some / "ckpt/sub/a.txt"), "a");
  EXPECT_FALSE(fs::exists(some / "metrics.json"));
  auto none = cluster.Cohort({"artifacts", "get", "1", "ckpt/su", "-o", some.string()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("job 1 has no output ckpt/su nor any below it"));

  // A link in the download directory does not take a file out of it.
  const fs::path trap = fs::path(cluster.dir()) / "trap";
  const fs::path outside = fs::path(cluster.dir()) / "outside";
  fs::create_directories(trap);
  fs::create_directories(outside);
  fs::create_directory_symlink(outside, trap / "ckpt");
  auto linked = cluster.Cohort({"artifacts", "get", "1", "-o", trap.string()});
  EXPECT_EQ(linked.exit_code, 1);
  EXPECT_THAT(linked.err, HasSubstr("ckpt is a symbolic link or not a directory"));
  EXPECT_TRUE(fs::is_empty(outside));

  auto bad = cluster.Cohort({"artifacts", "ls", "x"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("JOB: \"x\" is not a job id"));
  auto missing = cluster.Cohort({"artifacts", "get", "7"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("job 7"));
}

}  // namespace
}  // namespace cohort::testing
