// (c) A gang that does not fit holds nothing while it waits, and starts as soon as a node with
// room for it joins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

int HeldGpus(LocalCluster& cluster) {
  auto nodes = cluster.client().Nodes();
  EXPECT_TRUE(nodes.ok());
  int held = 0;
  for (const auto& n : (*nodes)["nodes"]) {
    for (const auto& g : n["gpus"]) held += g["job_id"].is_null() ? 0 : 1;
  }
  return held;
}

TEST(Gang, WaitsHoldingNothingAndStartsWhenANodeJoins) {
  LocalCluster cluster("gang");
  cluster.StartMaster();
  cluster.StartAgent("small", 2);
  // 2 tasks x 2 GPUs = 4 GPUs; the cluster has 2.
  JobId gang = cluster.Submit(R"(
name: big-gang
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 2}
    command: [sh, -c, 'echo started on $COHORT_HOSTS']
)");
  Job waiting = cluster.WaitForJob(gang, [](const Job& j) {
    return !j.message.empty() && j.message.find("scheduler") == std::string::npos;
  });
  EXPECT_EQ(waiting.state, JobState::kPending);
  EXPECT_THAT(waiting.message, HasSubstr("needs 4 GPUs"));
  EXPECT_TRUE(waiting.tasks.empty());
  EXPECT_EQ(HeldGpus(cluster), 0) << "a pending gang holds no GPU";

  // A job that fits still runs meanwhile (the gang does not block the cluster)...
  JobId small = cluster.Submit(R"(
name: small
tasks:
  - role: main
    resources: {gpus: 1}
    command: [sleep, "30"]
)");
  cluster.WaitForState(small, JobState::kRunning);
  EXPECT_EQ(HeldGpus(cluster), 1);
  EXPECT_EQ(cluster.client().GetJob(gang)->state, JobState::kPending);

  // ...and the gang starts, whole, when a 4-GPU node joins.
  auto joined = std::chrono::steady_clock::now();
  cluster.StartAgent("big", 4);
  Job started = cluster.WaitForState(gang, JobState::kSucceeded);
  auto waited = std::chrono::steady_clock::now() - joined;
  EXPECT_LT(waited, std::chrono::seconds(10));
  ASSERT_EQ(started.tasks.size(), 2u);
  for (const auto& t : started.tasks) EXPECT_EQ(t.node_id, "big");
  EXPECT_THAT(cluster.Logs(gang), HasSubstr("started on 127.0.0.1,127.0.0.1"));
  ASSERT_TRUE(cluster.client().Kill(small).ok());
}

}  // namespace
}  // namespace cohort::testing
