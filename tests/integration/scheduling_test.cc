// The scheduler's decisions carried out for real: priority preemption with a grace period and
// a second attempt, quota reclaim between teams, moving a job for a guarantee, and explanations
// that name the real reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

bool HasEvent(LocalCluster& cluster, JobId id, const std::string& type, const std::string& text) {
  auto events = cluster.client().Events(id);
  if (!events.ok()) return false;
  for (const auto& e : *events) {
    if (e.type == type && e.message.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Scheduling, HigherPriorityGangPreemptsALowerOneWhichRestartsAsAttemptTwo) {
  LocalCluster cluster("preempt");
  cluster.StartMaster({"--preemption-min-runtime", "0s"});
  cluster.StartAgent("node-a", 4);
  // The low job checkpoints on SIGTERM and resumes from its checkpoint on the next attempt.
  JobId low = cluster.Submit(R"(
name: low
priority: low
grace_period: 5s
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 2}
    command: [sh, -c, 'f=$COHORT_CHECKPOINT_DIR/step.$COHORT_TASK_INDEX;
      if [ -f $f ]; then echo resumed from $(cat $f); fi;
      trap "echo attempt $COHORT_ATTEMPT > $f; echo checkpointed; exit 0" TERM;
      echo attempt $COHORT_ATTEMPT running; sleep 300 & wait']
)");
  cluster.WaitForState(low, JobState::kRunning);
  // Both tasks have set their trap (they print after it) before anyone preempts them: a task
  // still starting its shell when SIGTERM comes dies without checkpointing.
  ASSERT_TRUE(WaitFor([&] {
    std::string logs = cluster.Logs(low);
    return logs.find("[worker/0] attempt 1 running") != std::string::npos &&
           logs.find("[worker/1] attempt 1 running") != std::string::npos;
  }));
  JobId high = cluster.Submit(R"(
name: high
priority: high
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 2}
    command: [sh, -c, 'echo high ran; sleep 1']
)");
  cluster.WaitForState(high, JobState::kSucceeded);
  EXPECT_TRUE(HasEvent(cluster, low, "preempted", "preempted by job " + std::to_string(high)));
  // The victim got SIGTERM and its grace period: it checkpointed.
  std::string first = cluster.Logs(low, "", 1);
  EXPECT_THAT(first, HasSubstr("[worker/0] checkpointed"));
  // Then it started again, as attempt 2, from its checkpoint, with its place in the queue kept.
  Job again = cluster.WaitForJob(
      low, [](const Job& j) { return j.attempt == 2 && j.state == JobState::kRunning; });
  EXPECT_EQ(again.attempt, 2);
  EXPECT_EQ(again.preemptions, 1);
  ASSERT_TRUE(WaitFor(
      [&] { return cluster.Logs(low).find("resumed from attempt 1") != std::string::npos; }));
  auto status = cluster.Cohort({"status", std::to_string(low)});
  EXPECT_THAT(status.out, HasSubstr("preempted by job " + std::to_string(high)));
  ASSERT_TRUE(cluster.client().Kill(low).ok());
}

TEST(Scheduling, TeamBelowItsGuaranteeReclaimsGpusFromABorrower) {
  LocalCluster cluster("reclaim");
  cluster.StartMaster({"--preemption-min-runtime", "0s"});
  cluster.StartAgent("node-a", 4);
  ASSERT_EQ(cluster.Cohort({"team", "set", "vision", "--gpus", "2"}).exit_code, 0);
  auto nlp = cluster.Cohort({"team", "set", "nlp", "--gpus", "2", "--max-gpus", "4"});
  ASSERT_EQ(nlp.exit_code, 0) << nlp.err;
  constexpr const char* kNlpJob = R"(
name: nlp-job
team: nlp
grace_period: 1s
tasks: [{role: main, resources: {gpus: 2}, command: [sleep, "300"]}]
)";
  // nlp fills the cluster: 2 GPUs of its own, 2 borrowed.
  JobId first = cluster.Submit(kNlpJob);
  cluster.WaitForState(first, JobState::kRunning);
  JobId second = cluster.Submit(kNlpJob);
  cluster.WaitForState(second, JobState::kRunning);
  auto list = cluster.Cohort({"team", "list"});
  EXPECT_THAT(list.out, HasSubstr("nlp"));
  // vision wants its guarantee back.
  JobId vision = cluster.Submit(R"(
name: vision-job
team: vision
tasks: [{role: main, resources: {gpus: 2}, command: [sleep, "300"]}]
)");
  cluster.WaitForState(vision, JobState::kRunning, std::chrono::seconds(20));
  // The nlp job that had run least was the one to go, and it waits for idle GPUs again.
  Job preempted = *cluster.client().GetJob(second);
  EXPECT_EQ(preempted.state, JobState::kPending);
  EXPECT_TRUE(HasEvent(cluster, second, "preempted", "team vision reclaims"));
  EXPECT_EQ(cluster.client().GetJob(first)->state, JobState::kRunning);
  auto why = cluster.Cohort({"why", std::to_string(second)});
  EXPECT_EQ(why.exit_code, 0);
  EXPECT_THAT(why.out, HasSubstr("team nlp holds 2 of its 2 guaranteed GPUs"));
  EXPECT_THAT(why.out, HasSubstr("borrowing"));
  for (JobId id : {first, second, vision}) (void)cluster.client().Kill(id);
}

TEST(Scheduling, AJobWithinItsGuaranteeMovesASmallerJobThatRestartsElsewhere) {
  LocalCluster cluster("move");
  cluster.StartMaster({"--preemption-min-runtime", "0s", "--move-after", "0s"});
  cluster.StartAgent("node-a", 4);
  cluster.StartAgent("node-b", 4);
  ASSERT_EQ(cluster.Cohort({"team", "set", "small", "--gpus", "4"}).exit_code, 0);
  ASSERT_EQ(cluster.Cohort({"team", "set", "big", "--gpus", "4"}).exit_code, 0);
  auto small_job = [](const std::string& name, int gpus) {
    return "name: " + name + "\nteam: small\ngrace_period: 1s\ntasks: [{role: main, resources: " +
           "{gpus: " + std::to_string(gpus) + "}, command: [sleep, \"300\"]}]\n";
  };
  // One 1-GPU job of team small on each node: a filler keeps the second off the first's node.
  JobId a = cluster.Submit(small_job("a", 1));
  Job a_running = cluster.WaitForState(a, JobState::kRunning);
  JobId filler = cluster.Submit(small_job("filler", 3));
  cluster.WaitForState(filler, JobState::kRunning);
  JobId b = cluster.Submit(small_job("b", 1));
  Job b_running = cluster.WaitForState(b, JobState::kRunning);
  ASSERT_NE(a_running.tasks[0].node_id, b_running.tasks[0].node_id);
  ASSERT_TRUE(cluster.client().Kill(filler).ok());
  cluster.WaitForState(filler, JobState::kKilled);
  // 6 GPUs are free, 3 on each node: big's gang of 4 fits on neither until b moves.
  JobId big = cluster.Submit(R"(
name: big
team: big
tasks: [{role: main, resources: {gpus: 4}, command: [sleep, "300"]}]
)");
  Job big_running = cluster.WaitForState(big, JobState::kRunning, std::chrono::seconds(20));
  EXPECT_EQ(big_running.tasks[0].node_id, b_running.tasks[0].node_id);
  EXPECT_TRUE(HasEvent(cluster, b, "preempted", "moved for job " + std::to_string(big)));
  // b restarts at once beside a, as its second attempt; a never stopped.
  Job b_again = cluster.WaitForJob(
      b, [](const Job& j) { return j.attempt == 2 && j.state == JobState::kRunning; });
  EXPECT_EQ(b_again.tasks[0].node_id, a_running.tasks[0].node_id);
  Job a_now = *cluster.client().GetJob(a);
  EXPECT_EQ(a_now.attempt, 1);
  EXPECT_EQ(a_now.state, JobState::kRunning);
  for (JobId id : {a, b, big}) (void)cluster.client().Kill(id);
}

TEST(Scheduling, ExplanationsNameTheRealReason) {
  LocalCluster cluster("why");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 4);
  cluster.StartAgent("node-b", 4);
  ASSERT_EQ(cluster.Cohort({"team", "set", "capped", "--gpus", "1", "--max-gpus", "2"}).exit_code,
            0);
  JobId busy = cluster.Submit(
      "name: busy\ntasks: [{role: main, resources: {gpus: 2}, command: [sleep, '300']}]\n");
  cluster.WaitForState(busy, JobState::kRunning);
  // Needs two whole 4-GPU nodes; one has 2 GPUs taken.
  JobId gang = cluster.Submit(
      "name: gang\ntasks: [{role: worker, replicas: 2, resources: {gpus: 4}, command: "
      "['true']}]\n");
  // No node has 8 GPUs.
  JobId huge = cluster.Submit(
      "name: huge\ntasks: [{role: main, resources: {gpus: 8}, command: ['true']}]\n");
  // Over its team's limit.
  JobId capped = cluster.Submit(
      "name: capped\nteam: capped\ntasks: [{role: main, resources: {gpus: 3}, command: "
      "['true']}]\n");
  auto reason_of = [&](JobId id) {
    return cluster
        .WaitForJob(id,
                    [](const Job& j) { return j.message.find("scheduler") == std::string::npos; })
        .message;
  };
  EXPECT_THAT(reason_of(gang), HasSubstr("needs 8 GPUs"));
  EXPECT_THAT(reason_of(gang), HasSubstr("the largest free block is 4 GPUs on node-"));
  EXPECT_THAT(reason_of(huge),
              HasSubstr("unschedulable: task main/0 needs 8 GPUs on one node, but the largest "
                        "node has 4"));
  EXPECT_THAT(reason_of(capped), HasSubstr("team capped holds 0 of the 2 GPUs it may use at most"));

  auto why = cluster.Cohort({"why", std::to_string(gang)});
  EXPECT_EQ(why.exit_code, 0) << why.err;
  EXPECT_THAT(why.out, HasSubstr("2 x worker (4 GPUs"));
  EXPECT_THAT(why.out, HasSubstr("all tasks started together"));
  EXPECT_THAT(why.out, HasSubstr("largest free blocks: 4 on node-"));
  auto jobs = cluster.Cohort({"jobs"});
  EXPECT_THAT(jobs.out, HasSubstr("unschedulable"));
  auto json = cluster.Cohort({"why", std::to_string(huge), "-o", "json"});
  EXPECT_THAT(json.out, HasSubstr("\"unschedulable\": true"));
  // The gang starts once the busy job goes.
  ASSERT_TRUE(cluster.client().Kill(busy).ok());
  cluster.WaitForState(gang, JobState::kSucceeded);
  // The unschedulable job starts when a node big enough joins.
  cluster.StartAgent("node-big", 8);
  cluster.WaitForState(huge, JobState::kSucceeded);
  (void)cluster.client().Kill(capped);
}

}  // namespace
}  // namespace cohort::testing

namespace cohort::testing {
namespace {

int LiveReplicas(const Job& job) {
  return static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(), [](const Task& t) {
    return !t.scaled_down && !IsTerminal(t.state);
  }));
}

TEST(Scheduling, ElasticJobGrowsIntoIdleGpusAndGivesThemBackHighestFirst) {
  LocalCluster cluster("elastic");
  cluster.StartMaster({"--preemption-min-runtime", "0s"});
  cluster.StartAgent("node-a", 4);
  JobId elastic = cluster.Submit(R"(
name: elastic
grace_period: 2s
tasks:
  - role: worker
    replicas: {min: 1, max: 4}
    resources: {gpus: 1}
    command: [sh, -c, 'echo replica $COHORT_TASK_INDEX of $COHORT_MIN_REPLICAS..$COHORT_MAX_REPLICAS; sleep 300']
)");
  Job grown = cluster.WaitForJob(elastic, [](const Job& j) {
    return j.state == JobState::kRunning && LiveReplicas(j) == 4 &&
           std::all_of(j.tasks.begin(), j.tasks.end(),
                       [](const Task& t) { return t.state == TaskState::kRunning; });
  });
  ASSERT_EQ(LiveReplicas(grown), 4) << "it grows into the idle GPUs";
  EXPECT_TRUE(HasEvent(cluster, elastic, "grown", "into idle GPUs"));
  ASSERT_TRUE(WaitFor([&] {
    return cluster.Logs(elastic).find("[worker/3] replica 3 of 1..4") != std::string::npos;
  }));
  // A job that needs 2 GPUs: the two highest replicas make room, nobody is preempted.
  JobId other = cluster.Submit(
      "name: other\ntasks: [{role: main, resources: {gpus: 2}, command: [sleep, '300']}]\n");
  cluster.WaitForState(other, JobState::kRunning, std::chrono::seconds(20));
  Job shrunk = *cluster.client().GetJob(elastic);
  EXPECT_EQ(shrunk.state, JobState::kRunning);
  EXPECT_EQ(shrunk.preemptions, 0);
  EXPECT_EQ(LiveReplicas(shrunk), 2);
  for (const auto& t : shrunk.tasks) {
    EXPECT_EQ(t.scaled_down, t.index >= 2) << t.Name();
  }
  EXPECT_TRUE(HasEvent(cluster, elastic, "shrunk", "worker/3, worker/2 stopped"));
  auto status = cluster.Cohort({"status", std::to_string(elastic)});
  EXPECT_THAT(status.out, HasSubstr("worker has 2 replicas now, 1..4 allowed"));
  EXPECT_THAT(status.out, HasSubstr("(scaled down)"));
  // When the other job ends, the elastic job grows again.
  ASSERT_TRUE(cluster.client().Kill(other).ok());
  Job regrown = cluster.WaitForJob(elastic, [](const Job& j) { return LiveReplicas(j) == 4; });
  EXPECT_EQ(LiveReplicas(regrown), 4);
  ASSERT_TRUE(cluster.client().Kill(elastic).ok());
  cluster.WaitForState(elastic, JobState::kKilled);
}

}  // namespace
// `cohort why` names who is ahead in the running policy's own order: a high-priority job waits
// behind an earlier low-priority one under fifo and las, but not under the default policy.
TEST(Scheduling, WhySaysWhoIsAheadUnderEachPolicy) {
  for (const std::string policy : {"default", "fifo", "las"}) {
    LocalCluster cluster("why-" + policy);
    cluster.StartMaster({"--policy", policy});
    cluster.StartAgent("node-a", 1);
    JobId busy = cluster.Submit(
        "name: busy\ntasks: [{role: main, resources: {gpus: 1}, command: [sleep, '300']}]\n");
    cluster.WaitForState(busy, JobState::kRunning);
    cluster.Submit(
        "name: low\npriority: low\ntasks: [{role: main, resources: {gpus: 1}, command: "
        "['true']}]\n");
    JobId high = cluster.Submit(
        "name: high\npriority: high\ntasks: [{role: main, resources: {gpus: 1}, command: "
        "['true']}]\n");
    auto why = cluster.Cohort({"why", std::to_string(high)});
    EXPECT_EQ(why.exit_code, 0) << why.err;
    EXPECT_THAT(why.out, HasSubstr("policy " + policy + " (")) << policy;
    if (policy == "default") {
      EXPECT_THAT(why.out, HasSubstr("0 of the 2 waiting jobs come before it")) << why.out;
    } else {
      EXPECT_THAT(why.out, HasSubstr("1 of the 2 waiting jobs comes before it")) << why.out;
    }
  }
}

}  // namespace cohort::testing
