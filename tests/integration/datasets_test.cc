// Datasets read by jobs (docs/data.md, "Datasets"), against a real master, two agents and the
// directory store: every task sees its job's datasets read-only at $COHORT_DATA_DIR/NAME, pulled
// once into its node's cache; a job keeps the version it was submitted with; a version in use
// cannot be deleted; the cache keeps to its bound, evicting only what no task reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

int CachedVersions(const LocalCluster& cluster, const std::string& agent) {
  int count = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(cluster.AgentDir(agent) + "/cache/versions", ec);
       !ec && it != fs::end(it); it.increment(ec)) {
    ++count;
  }
  return count;
}

TEST(DatasetsInJobs, EveryTaskReadsItsPinnedVersionFromItsNodesCacheWhichKeepsItsBound) {
  LocalCluster cluster("datasets");
  cluster.StartMaster();
  // A cache of 1 byte: every version no task reads is evicted as soon as a task trims it.
  cluster.StartAgent("agent-0", 0, {"--dataset-cache-size", "1"});
  cluster.StartAgent("agent-1", 0, {"--dataset-cache-size", "1"});
  const fs::path dir = fs::path(cluster.dir()) / "digits";
  fs::create_directories(dir / "train");
  std::ofstream(dir / "labels.txt") << "version one\n";
  std::ofstream(dir / "train" / "shard-0") << std::string(50'000, 'x');
  auto put = cluster.Cohort({"data", "put", dir.string(), "digits"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  ASSERT_EQ(put.out, "digits:1\n");

  // Two tasks, one per node (each asks for all of a node's CPUs), both reading the dataset;
  // the files are not theirs to change.
  // (The tests' tasks run as root, who may write anything: the modes say what an account may.)
  const std::string read =
      "cat $COHORT_DATA_DIR/digits/labels.txt; wc -c < $COHORT_DATA_DIR/digits/train/shard-0; "
      "stat -L -c 'modes %a %U' $COHORT_DATA_DIR/digits $COHORT_DATA_DIR/digits/labels.txt; ";
  JobId first = cluster.Submit(
      "name: reader\ndatasets: [digits]\n"
      "tasks: [{role: w, replicas: 2, resources: {cpus: 16}, command: [sh, -c, \"" +
      read + "while [ ! -f $COHORT_DATA_DIR/../../../stop-1 ]; do sleep 0.1; done\"]}]\n");
  Job running =
      cluster.WaitForJob(first, [](const Job& j) { return j.state == JobState::kRunning; });
  ASSERT_EQ(running.state, JobState::kRunning) << running.message;
  ASSERT_EQ(running.spec.datasets.size(), 1u);
  EXPECT_EQ(FormatDatasetRef(running.spec.datasets[0]), "default/digits:1")
      << "pinned to the version that was the latest when it was submitted";

  auto status = cluster.Cohort({"status", std::to_string(first)});
  EXPECT_THAT(status.out, HasSubstr("Datasets:   default/digits:1 (at $COHORT_DATA_DIR/NAME)"));

  // A new version meanwhile: the running job keeps reading version 1, which cannot be deleted.
  std::ofstream(dir / "labels.txt") << "version two\n";
  auto second_put = cluster.Cohort({"data", "put", dir.string(), "digits"});
  ASSERT_EQ(second_put.exit_code, 0) << second_put.err;
  EXPECT_EQ(second_put.out, "digits:2\n");
  auto refused = cluster.Cohort({"data", "rm", "digits:1"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("dataset default/digits:1 is in use by job " +
                                     std::to_string(first) + " (reader)"));

  // Let it end.
  for (const auto& agent : {"agent-0", "agent-1"}) {
    std::ofstream(cluster.AgentDir(agent) + "/stop-1") << "";
  }
  Job done = cluster.WaitForState(first, JobState::kSucceeded);
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.message;
  std::string logs = cluster.Logs(first);
  EXPECT_THAT(logs, HasSubstr("[w/0] version one\n[w/0] 50000\n"));
  EXPECT_THAT(logs, HasSubstr("[w/1] version one\n[w/1] 50000\n"));
  EXPECT_THAT(logs, HasSubstr("modes 555 root\n"));
  EXPECT_THAT(logs, HasSubstr("modes 444 root\n"));
  EXPECT_THAT(logs, HasSubstr("cohort: dataset default/digits:1 is at $COHORT_DATA_DIR/digits"));
  // Pulling is not GPU time: the job was held back, its GPUs free, while both nodes fetched the
  // dataset; its tasks then found it in their nodes' caches.
  const std::string events = cluster.EventsText(first);
  EXPECT_THAT(events, HasSubstr("datasets: waits while nodes agent-"));
  EXPECT_THAT(events, HasSubstr("fetch its datasets (no GPU is held meanwhile)"));
  EXPECT_THAT(events, HasSubstr("datasets: its datasets are on the nodes chosen for it"));
  EXPECT_THAT(logs,
              HasSubstr("[w/0] cohort: dataset default/digits:1 is at $COHORT_DATA_DIR/digits ("));
  EXPECT_THAT(logs, HasSubstr("from this node's cache)"));
  EXPECT_THAT(logs, Not(HasSubstr("fetched in")));
  EXPECT_EQ(CachedVersions(cluster, "agent-0"), 1);
  EXPECT_EQ(CachedVersions(cluster, "agent-1"), 1);

  // Once the job has ended, version 1 may go.
  auto rm = cluster.Cohort({"data", "rm", "digits:1"});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;

  // The next job reads the latest, version 2; fetching it evicts version 1 from the full cache.
  JobId next = cluster.Submit(
      "name: next\ndatasets: [digits]\n"
      "tasks: [{role: w, replicas: 2, resources: {cpus: 16}, command: [sh, -c, \"" +
      read + "\"]}]\n");
  Job next_done = cluster.WaitForState(next, JobState::kSucceeded);
  ASSERT_EQ(next_done.state, JobState::kSucceeded) << next_done.message;
  EXPECT_THAT(cluster.Logs(next), HasSubstr("[w/0] version two\n[w/0] 50000\n"));
  EXPECT_EQ(CachedVersions(cluster, "agent-0"), 1);
  EXPECT_EQ(CachedVersions(cluster, "agent-1"), 1);

  // A third reads version 2 again: from the cache this time, where the same node has it.
  JobId third = cluster.Submit(
      "name: third\ndatasets: [digits:2]\n"
      "tasks: [{role: w, replicas: 2, resources: {cpus: 16}, command: [sh, -c, \"" +
      read + "\"]}]\n");
  ASSERT_EQ(cluster.WaitForState(third, JobState::kSucceeded).state, JobState::kSucceeded);
  EXPECT_THAT(cluster.Logs(third), HasSubstr("from this node's cache"));

  // Datasets that do not exist, or that the submitter may not read, are refused at submission.
  auto missing = cluster.client().Submit(
      "name: x\ndatasets: [nope]\ntasks: [{role: w, command: [\"true\"]}]\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("datasets[0]: no dataset default/nope"));
}

// Many small files put as shards (`cohort data put --pack`): a task reads them as samples, with
// the stdlib reader (python/cohort_shards.py), from its node's cache.
TEST(DatasetsInJobs, PackedSmallFilesAreReadAsSamplesFromTheNodesCache) {
  LocalCluster cluster("datasetspack");
  cluster.StartMaster();
  cluster.StartAgent("agent-0", 0);
  const fs::path dir = fs::path(cluster.dir()) / "digits";
  for (int i = 0; i < 300; ++i) {
    fs::create_directories(dir / "train");
    std::ofstream(dir / "train" / fmt::format("{:04}.png", i)) << std::string(100, 'p');
    std::ofstream(dir / "train" / fmt::format("{:04}.cls", i)) << i % 10;
  }
  auto put = cluster.Cohort(
      {"data", "put", "--pack", "--shard-size", "16Ki", dir.string(), "digits", "-o", "json"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_THAT(put.err, HasSubstr("packed 600 files into"));
  auto files = cluster.Cohort({"data", "ls", "digits:1"});
  ASSERT_EQ(files.exit_code, 0) << files.err;
  EXPECT_THAT(files.out, HasSubstr("index.json"));
  EXPECT_THAT(files.out, HasSubstr("shard-000000.tar"));
  EXPECT_THAT(files.out, Not(HasSubstr("0001.png"))) << "stored as shards, not as files";

  const std::string read = fmt::format(
      "import os, sys; sys.path.insert(0, '{}/python'); import cohort_shards; "
      "s = list(cohort_shards.Shards(os.environ['COHORT_DATA_DIR'] + '/digits', verify=True)); "
      "print('samples', len(s), s[7]['__key__'], s[7]['cls'].decode())",
      SourceDir());
  JobId id = cluster.Submit(
      "name: reader\ndatasets: [digits]\ntasks: [{role: w, command: [/usr/bin/python3, -c, " +
      Json(read).dump() + "]}]\n");
  Job done = cluster.WaitForState(id, JobState::kSucceeded);
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.message << cluster.Logs(id);
  EXPECT_THAT(cluster.Logs(id), HasSubstr("samples 300 train/0007 7"));
}

}  // namespace
}  // namespace cohort::testing
