// (a) The real PyTorch DDP example, two workers on two agents, through the whole system.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "store/directory_store.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

TEST(PyTorchDdp, TwoWorkersOnTwoAgentsTrainAndAgree) {
  ASSERT_EQ(RunCommand({"/usr/bin/python3", "-c", "import torch"}).exit_code, 0)
      << "Debian's python3-torch is needed (scripts/setup.sh installs it)";
  LocalCluster cluster("ddp");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 4);
  cluster.StartAgent("node-b", 4);
  // The example's own job spec, submitted as a user would.
  auto submitted = cluster.Cohort({"submit", SourceDir() + "/examples/pytorch-ddp/job.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  JobId id = std::stoll(submitted.out);
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(180));
  ASSERT_EQ(job.tasks.size(), 2u);
  std::set<std::string> nodes = {job.tasks[0].node_id, job.tasks[1].node_id};
  EXPECT_EQ(nodes, (std::set<std::string>{"node-a", "node-b"}));
  std::string logs = cluster.Logs(id);
  EXPECT_THAT(logs, HasSubstr("[worker/0] done: world_size=2 backend=gloo"));
  EXPECT_THAT(logs, HasSubstr("grads_averaged=ok"));
  EXPECT_THAT(logs, HasSubstr("[worker/1] step 30 rank 1 loss"));
  // Rank 0 wrote the model to its outputs, which went to the store after the job ended.
  Job stored = cluster.WaitForJob(
      id, [](const Job& j) { return j.artifacts && j.artifacts->state == UploadState::kStored; });
  ASSERT_TRUE(stored.artifacts) << cluster.EventsText(id);
  EXPECT_EQ(stored.artifacts->files_total, 2);  // model.pt and metrics.jsonl
  auto store = store::OpenDirectoryStore(cluster.dir() + "/master/store");
  ASSERT_TRUE(store.ok());
  auto model = (*store)->Head("jobs/" + std::to_string(id) + "/outputs/model.pt");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_GT(model->size, 0);
}

}  // namespace
}  // namespace cohort::testing
