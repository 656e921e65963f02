// A job's outputs on a real cluster (docs/data.md, "Outputs"): uploaded by the agent after the job
// has ended and given its GPUs back, resumed by a restarted agent, kept when the machine that ran
// the job is wiped, and refused past the team's quota with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <thread>

#include "store/directory_store.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A one-task job that writes `files` small files (and one of 1 MiB) to its output directory,
// a link to a file outside it, and exits 0.
std::string WritingJob(int files) {
  return fmt::format(R"(
name: writes-outputs
tasks:
  - role: worker
    resources: {{gpus: 1, cpus: 1, memory: 256Mi}}
    command: [/bin/sh, -c, 'mkdir -p "$COHORT_OUTPUT_DIR/eval" && i=0 && while [ $i -lt {} ]; do echo "sample $i" > "$COHORT_OUTPUT_DIR/eval/$i.txt"; i=$((i+1)); done && head -c 1048576 /dev/urandom > "$COHORT_OUTPUT_DIR/model.bin" && ln -s /etc/passwd "$COHORT_OUTPUT_DIR/passwd"']
)",
                     files);
}

// The job's stored outputs: key (under jobs/ID/outputs/) -> size.
std::map<std::string, int64_t> Stored(LocalCluster& cluster, JobId id) {
  auto store = store::OpenDirectoryStore(cluster.dir() + "/master/store");
  EXPECT_TRUE(store.ok());
  std::map<std::string, int64_t> out;
  std::string prefix = fmt::format("jobs/{}/outputs/", id), after;
  while (store.ok()) {
    auto page = (*store)->List(prefix, after, 1000);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    for (const auto& o : page->objects) out[o.key.substr(prefix.size())] = o.size;
    if (!page->more || page->objects.empty()) break;
    after = page->objects.back().key;
  }
  return out;
}

bool IsStored(const Job& job) {
  return job.artifacts && job.artifacts->state == UploadState::kStored;
}

TEST(Artifacts, OutputsGoToTheStoreAfterTheJobHasEndedAndOutliveTheMachine) {
  LocalCluster cluster("artifacts");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(WritingJob(3));
  Job done = cluster.WaitForJob(id, IsStored, std::chrono::seconds(60));
  ASSERT_TRUE(IsStored(done)) << cluster.EventsText(id);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_EQ(done.artifacts->files_total, 4);  // the link left out
  EXPECT_EQ(done.artifacts->files_skipped, 1);
  EXPECT_EQ(done.artifacts->bytes_done, 1048576 + 3 * 9);
  // The job ended (and gave its GPU back) before its outputs were uploaded.
  std::string events = cluster.EventsText(id);
  size_t finished = events.find("finished: SUCCEEDED");
  size_t uploading = events.find(
      "artifacts: uploading its outputs: 4 files, 1Mi (1 link or special file left out)");
  ASSERT_NE(finished, std::string::npos) << events;
  ASSERT_NE(uploading, std::string::npos) << events;
  EXPECT_LT(finished, uploading) << events;
  EXPECT_THAT(
      events,
      HasSubstr("artifacts: outputs stored: 4 files, 1Mi (1 link or special file left out)"));

  auto stored = Stored(cluster, id);
  EXPECT_EQ(stored.size(), 4u);
  EXPECT_EQ(stored["model.bin"], 1048576);
  EXPECT_EQ(stored["eval/2.txt"], 9);
  EXPECT_EQ(stored.count("passwd"), 0u) << "a link out of the output directory was followed";

  // The machine is wiped: its agent, its data and the job's output directory are gone.
  cluster.KillMachine("node-a");
  fs::remove_all(cluster.AgentDir("node-a"));
  fs::remove_all(fmt::format("{}/master/storage/jobs/{}", cluster.dir(), id));
  EXPECT_EQ(Stored(cluster, id), stored);
}

TEST(Artifacts, AnAgentKilledMidUploadResumesWithoutLosingAFile) {
  LocalCluster cluster("artifacts-resume");
  cluster.StartMaster();
  // Each put waits 200 ms (a test seam of the agent's): the upload takes 8 s.
  const std::map<std::string, std::string> slow{{"COHORT_TEST_UPLOAD_DELAY", "200ms"}};
  cluster.StartAgent("node-a", 1, {}, slow);
  constexpr int kFiles = 40;
  JobId id = cluster.Submit(WritingJob(kFiles));
  Job uploading = cluster.WaitForJob(
      id,
      [](const Job& j) {
        return j.artifacts && j.artifacts->state == UploadState::kUploading &&
               j.artifacts->files_done > 0;
      },
      std::chrono::seconds(60));
  ASSERT_TRUE(uploading.artifacts) << cluster.EventsText(id);
  ASSERT_EQ(uploading.artifacts->state, UploadState::kUploading)
      << "the upload ended before the agent could be killed: " << cluster.EventsText(id);
  cluster.KillMachine("node-a");
  int64_t done_before = uploading.artifacts->files_done;
  cluster.StartAgent("node-a", 1, {}, slow);  // the same data directory
  Job done = cluster.WaitForJob(id, IsStored, std::chrono::seconds(120));
  ASSERT_TRUE(IsStored(done)) << cluster.EventsText(id);
  EXPECT_EQ(done.artifacts->files_done, kFiles + 1);
  auto stored = Stored(cluster, id);
  EXPECT_EQ(stored.size(), static_cast<size_t>(kFiles + 1));
  EXPECT_EQ(stored[fmt::format("eval/{}.txt", kFiles - 1)], 10);
  EXPECT_GT(done_before, 0);
}

TEST(Artifacts, OutputsPastTheTeamsQuotaAreRefusedWithAnEvent) {
  LocalCluster cluster("artifacts-quota");
  cluster.StartMaster({"--store-quota-per-team", "512Ki"});
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(WritingJob(1));
  Job done = cluster.WaitForJob(
      id, [](const Job& j) { return j.artifacts && j.artifacts->state == UploadState::kFailed; },
      std::chrono::seconds(60));
  ASSERT_TRUE(done.artifacts) << cluster.EventsText(id);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_THAT(done.artifacts->reason,
              HasSubstr("team default's store quota of 512Ki cannot take these 2 files (1Mi)"));
  EXPECT_THAT(cluster.EventsText(id), HasSubstr("artifacts: outputs not stored: team default"));
  EXPECT_TRUE(Stored(cluster, id).empty());
}

}  // namespace
}  // namespace cohort::testing
