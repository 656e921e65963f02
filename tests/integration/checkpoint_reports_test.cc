// Checkpoint reports on a real cluster: two equal low-priority jobs fill it, the one started
// first reports a checkpoint (a cohort-checkpoint line, or a file renamed into its
// COHORT_CHECKPOINT_DIR), and a high-priority job that needs one of them preempts that one.
// Without the report the victim would be the other: of two equal jobs the one started last loses
// least (docs/scheduler.md; CheckpointsTest.WithoutACheckpointTheJobStartedLastIsTheVictim shows
// that order in the master).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

bool HasEvent(LocalCluster& cluster, JobId id, const std::string& type) {
  auto events = cluster.client().Events(id);
  if (!events.ok()) return false;
  for (const auto& e : *events) {
    if (e.type == type) return true;
  }
  return false;
}

// `checkpoint`: the shell that reports the checkpoint, run once the test creates `go`.
void TheJobThatCheckpointedIsPreempted(const std::string& name, const std::string& checkpoint) {
  LocalCluster cluster(name);
  cluster.StartMaster({"--preemption-min-runtime", "0s"});
  cluster.StartAgent("node-a", 2, {"--sample-interval", "1s"});
  const std::string go = cluster.dir() + "/go";
  JobId first = cluster.Submit(fmt::format(R"(
name: first
priority: low
grace_period: 1s
tasks:
  - role: worker
    resources: {{gpus: 1}}
    command: [sh, -c, 'echo waiting; while [ ! -e {} ]; do sleep 0.05; done; {}; sleep 300']
)",
                                           go, checkpoint));
  cluster.WaitForState(first, JobState::kRunning);
  JobId second = cluster.Submit(R"(
name: second
priority: low
grace_period: 1s
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [sh, -c, 'sleep 300']
)");
  Job running = cluster.WaitForState(second, JobState::kRunning);
  ASSERT_TRUE(running.placed_at);
  ASSERT_GT(*running.placed_at, *cluster.client().GetJob(first)->placed_at);

  std::ofstream(go) << "go";
  Job reported =
      cluster.WaitForJob(first, [](const Job& j) { return j.last_checkpoint_at.has_value(); });
  ASSERT_TRUE(reported.last_checkpoint_at) << cluster.Logs(first);
  EXPECT_GT(*reported.last_checkpoint_at, *running.placed_at);
  EXPECT_FALSE(cluster.client().GetJob(second)->last_checkpoint_at);
  auto why = cluster.Cohort({"why", std::to_string(first)});
  EXPECT_THAT(why.out, HasSubstr("last checkpoint"));
  EXPECT_THAT(why.out, HasSubstr("ago: a preemption would lose the work since then"));
  auto status = cluster.Cohort({"status", std::to_string(first)});
  EXPECT_THAT(status.out,
              HasSubstr("Checkpoint: " + FormatTimestamp(*reported.last_checkpoint_at)));

  JobId high = cluster.Submit(R"(
name: high
priority: high
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [sh, -c, 'echo high ran']
)");
  cluster.WaitForState(high, JobState::kSucceeded);
  EXPECT_TRUE(HasEvent(cluster, first, "preempted"));
  Job other = *cluster.client().GetJob(second);
  EXPECT_EQ(other.preemptions, 0);
  EXPECT_EQ(other.state, JobState::kRunning);
  EXPECT_FALSE(HasEvent(cluster, second, "preempted"));
  EXPECT_EQ(cluster.client().GetJob(first)->preemptions, 1);
  ASSERT_TRUE(cluster.client().Kill(first).ok());
  ASSERT_TRUE(cluster.client().Kill(second).ok());
  cluster.WaitForState(first, JobState::kKilled);
  cluster.WaitForState(second, JobState::kKilled);
}

TEST(CheckpointReports, ALineOnStandardOutputMakesItsJobTheVictim) {
  TheJobThatCheckpointedIsPreempted("ckpt-line", "echo cohort-checkpoint step=1");
}

TEST(CheckpointReports, AFileRenamedIntoTheCheckpointDirectoryMakesItsJobTheVictim) {
  TheJobThatCheckpointedIsPreempted(
      "ckpt-file",
      "echo weights > $COHORT_CHECKPOINT_DIR/model.pt.tmp && "
      "mv $COHORT_CHECKPOINT_DIR/model.pt.tmp $COHORT_CHECKPOINT_DIR/model.pt");
}

}  // namespace
}  // namespace cohort::testing
