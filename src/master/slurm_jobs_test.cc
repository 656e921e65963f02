// Slurm jobs in the master (docs/slurm.md, "How the job runs"): one task per node, each serving
// srun with the batch script's variables and Slurm's tools, the first running the script; the
// script's success is the job's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

class SlurmJobsTest : public MasterTest {
 protected:
  JobId SubmitSlurm() {
    JobSpec spec;
    spec.name = "train";
    spec.framework = Framework::kSlurm;
    TaskGroupSpec node;
    node.role = "node";
    node.replicas = 2;
    node.distinct_nodes = true;
    node.resources = Resources{.gpus = 2, .milli_cpus = 2000, .memory_bytes = 1LL << 30};
    spec.tasks = {node};
    spec.restart.on = {RestartCause::kNodeLost, RestartCause::kPreempted};
    SlurmSection slurm;
    slurm.script = "#!/bin/bash\nsrun hostname\n";
    slurm.args = {"fast"};
    slurm.submit_dir = "/home/ada";
    slurm.tasks_per_node = {2, 2};
    spec.slurm = slurm;
    auto job = master_->Submit(spec, "ada");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }

  std::vector<TaskLaunch> Launches(JobId id) { return LaunchesOf(id, {"a", "b"}); }
};

TEST_P(SlurmJobsTest, TheFirstNodeRunsTheScriptAndEveryNodeServesSrunWithSlurmsTools) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId id = SubmitSlurm();
  RunPosted();
  ASSERT_NE(GetJob(id).state, JobState::kPending) << GetJob(id).message;
  auto launches = Launches(id);
  ASSERT_EQ(launches.size(), 2u) << "one task per node";
  for (const auto& l : launches) {
    SCOPED_TRACE(l.id.ToString());
    EXPECT_TRUE(l.tools && l.slurm_tools && l.exec_service);
    EXPECT_EQ(l.env.at("SLURM_JOB_ID"), std::to_string(id));
    EXPECT_EQ(l.env.at("SLURM_TASKS_PER_NODE"), "2(x2)");
    EXPECT_EQ(l.env.at("COHORT_JOB_CREDENTIAL").size(), 64u);
  }
  EXPECT_EQ(launches[0].command, (std::vector<std::string>{"cohort-exec", "batch", "--", "fast"}));
  ASSERT_EQ(launches[0].files.size(), 1u);
  EXPECT_EQ(launches[0].files[0].content, "#!/bin/bash\nsrun hostname\n");
  EXPECT_EQ(launches[0].env.at("COHORT_SLURM_OUTPUT"), fmt::format("slurm-{}.out", id))
      << "relative to the task's workdir, here its own directory";
  EXPECT_TRUE(launches[1].command.empty()) << "the other node only serves";
  EXPECT_TRUE(launches[1].files.empty());
  EXPECT_EQ(launches[0].env.at("COHORT_JOB_CREDENTIAL"),
            launches[1].env.at("COHORT_JOB_CREDENTIAL"));
}

TEST_P(SlurmJobsTest, TheScriptsSuccessIsTheJobsAndTheOtherNodesAreStopped) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId id = SubmitSlurm();
  RunPosted();
  Report("a", TaskState::kRunning);
  Report("b", TaskState::kRunning);
  ASSERT_EQ(GetJob(id).state, JobState::kRunning);
  const std::string first_node = GetJob(id).tasks[0].node_id;
  AgentReport report = ReportOf(first_node, TaskState::kRunning);
  for (auto& t : report.tasks) {
    if (t.id.job == id && t.id.index == 0) {
      t.state = TaskState::kSucceeded;
      t.exit_code = 0;
      t.finished_at = clock_.Now();
    }
  }
  ASSERT_TRUE(master_->nodes().Sync(first_node, report).ok());
  EXPECT_EQ(GetJob(id).state, JobState::kStopping);
  EXPECT_EQ(GetJob(id).message, "the batch script succeeded; stopping the job's other nodes");
  EXPECT_TRUE(Launches(id).empty()) << "the other node is told to stop";
}

INSTANTIATE_TEST_SUITE_P(BothModes, SlurmJobsTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
