#include "slurm/slurm_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::slurm {
namespace {

using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;

// Four nodes; three tasks on each of the first three, one on the last.
SlurmJobInfo Job() {
  SlurmJobInfo job;
  job.job_id = 4242;
  job.job_name = "train";
  job.nodes = {"gpu01", "gpu02", "gpu03", "login1"};
  job.tasks_per_node = {3, 3, 3, 1};
  job.cpus_per_node = {24, 24, 24, 8};
  job.submit_dir = "/home/ada/proj";
  job.submit_host = "login1";
  job.cluster_name = "cohort";
  return job;
}

TEST(CountsPerNode, IsSlurmsRunLengthForm) {
  EXPECT_EQ(CountsPerNode({2, 2, 2, 1}), "2(x3),1");
  EXPECT_EQ(CountsPerNode({4}), "4");
  EXPECT_EQ(CountsPerNode({1, 2, 1}), "1,2,1");
  EXPECT_EQ(CountsPerNode({8, 8}), "8(x2)");
  EXPECT_EQ(CountsPerNode({}), "");
}

TEST(BatchScriptEnvironment, DescribesTheJobFromItsFirstNode) {
  SlurmJobInfo job = Job();
  job.partition = "gpu";
  auto env = BatchScriptEnvironment(job, {0, 8, "0,1,2,3,4,5,6,7"});
  EXPECT_EQ(env["SLURM_JOB_ID"], "4242");
  EXPECT_EQ(env["SLURM_JOBID"], "4242");
  EXPECT_EQ(env["SLURM_JOB_NAME"], "train");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "gpu[01-03],login1");
  EXPECT_EQ(env["SLURM_NODELIST"], "gpu[01-03],login1");
  EXPECT_EQ(env["SLURM_JOB_NUM_NODES"], "4");
  EXPECT_EQ(env["SLURM_NNODES"], "4");
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "3(x3),1");
  EXPECT_EQ(env["SLURM_JOB_CPUS_PER_NODE"], "24(x3),8");
  EXPECT_EQ(env["SLURM_CPUS_ON_NODE"], "24");
  EXPECT_EQ(env["SLURM_GPUS_ON_NODE"], "8");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1,2,3,4,5,6,7");
  EXPECT_EQ(env["SLURMD_NODENAME"], "gpu01");
  EXPECT_EQ(env["SLURM_NODEID"], "0");
  EXPECT_EQ(env["SLURM_PROCID"], "0");
  EXPECT_EQ(env["SLURM_LOCALID"], "0");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], "/home/ada/proj");
  EXPECT_EQ(env["SLURM_SUBMIT_HOST"], "login1");
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "gpu");
  EXPECT_EQ(env["SLURM_CLUSTER_NAME"], "cohort");
  EXPECT_EQ(env["ENVIRONMENT"], "BATCH");
  // What the job did not ask for, Slurm does not set.
  for (const char* name :
       {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "SLURM_CPUS_PER_TASK",
        "SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK", "SLURM_MEM_PER_NODE",
        "SLURM_ARRAY_JOB_ID", "SLURM_JOB_ACCOUNT", "SLURM_JOB_END_TIME", "SLURM_STEP_ID"}) {
    EXPECT_THAT(env, Not(Contains(Key(name)))) << name;
  }
}

TEST(BatchScriptEnvironment, CarriesWhatTheJobAskedFor) {
  SlurmJobInfo job = Job();
  job.tasks_asked = true;
  job.ntasks_per_node = 3;
  job.cpus_per_task = 8;
  job.cpus_per_gpu = 6;
  job.gpus = "a100:16";
  job.gpus_per_node = "4";
  job.gpus_per_task = "1";
  job.mem_per_node = int64_t{64} << 30;
  job.mem_per_cpu = int64_t{4} << 30;
  job.mem_per_gpu = int64_t{1} << 30;
  job.account = "proj42";
  job.qos = "high";
  job.start_time = FromMicros(1'700'000'000'500'000);
  job.time_limit = std::chrono::hours(2);
  job.array = SlurmArrayInfo{4200, 7, 10, 1, 19, 2};
  auto env = BatchScriptEnvironment(job, {3, 0, std::nullopt});
  EXPECT_EQ(env["SLURM_NTASKS"], "10");
  EXPECT_EQ(env["SLURM_NPROCS"], "10");
  EXPECT_EQ(env["SLURM_NTASKS_PER_NODE"], "3");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "8");
  EXPECT_EQ(env["SLURM_CPUS_PER_GPU"], "6");
  EXPECT_EQ(env["SLURM_GPUS"], "a100:16");
  EXPECT_EQ(env["SLURM_GPUS_PER_NODE"], "4");
  EXPECT_EQ(env["SLURM_GPUS_PER_TASK"], "1");
  EXPECT_EQ(env["SLURM_MEM_PER_NODE"], "65536");
  EXPECT_EQ(env["SLURM_MEM_PER_CPU"], "4096");
  EXPECT_EQ(env["SLURM_MEM_PER_GPU"], "1024");
  EXPECT_EQ(env["SLURM_JOB_ACCOUNT"], "proj42");
  EXPECT_EQ(env["SLURM_JOB_QOS"], "high");
  EXPECT_EQ(env["SLURM_JOB_START_TIME"], "1700000000");
  EXPECT_EQ(env["SLURM_JOB_END_TIME"], "1700007200");
  EXPECT_EQ(env["SLURM_ARRAY_JOB_ID"], "4200");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_ID"], "7");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_COUNT"], "10");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MIN"], "1");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MAX"], "19");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_STEP"], "2");
  // Run from the fourth node, which has no GPU here.
  EXPECT_EQ(env["SLURMD_NODENAME"], "login1");
  EXPECT_EQ(env["SLURM_NODEID"], "3");
  EXPECT_EQ(env["SLURM_CPUS_ON_NODE"], "8");
  EXPECT_THAT(env, Not(Contains(Key("SLURM_GPUS_ON_NODE"))));
  EXPECT_THAT(env, Not(Contains(Key("CUDA_VISIBLE_DEVICES"))));
  EXPECT_THAT(env, Not(Contains(Key("SLURM_JOB_PARTITION"))));
}

TEST(StepTaskEnvironment, GivesTheStepsViewOverTheJobs) {
  SlurmJobInfo job = Job();
  job.tasks_asked = true;
  SlurmStepTask task;
  task.step_id = 2;
  task.nodes = {"gpu02", "gpu03"};  // a step on two of the job's nodes
  task.tasks_per_node = {2, 2};
  task.node_index = 1;
  task.procid = 3;
  task.localid = 1;
  task.gpus_on_node = 1;
  task.cuda_visible_devices = "5";
  auto env = StepTaskEnvironment(job, task);
  EXPECT_EQ(env["SLURM_STEP_ID"], "2");
  EXPECT_EQ(env["SLURM_STEPID"], "2");
  EXPECT_EQ(env["SLURM_STEP_NODELIST"], "gpu[02-03]");
  EXPECT_EQ(env["SLURM_NODELIST"], "gpu[02-03]");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "gpu[01-03],login1");
  EXPECT_EQ(env["SLURM_STEP_NUM_NODES"], "2");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  EXPECT_EQ(env["SLURM_JOB_NUM_NODES"], "4");
  EXPECT_EQ(env["SLURM_STEP_NUM_TASKS"], "4");
  EXPECT_EQ(env["SLURM_NTASKS"], "4");
  EXPECT_EQ(env["SLURM_NPROCS"], "4");
  EXPECT_EQ(env["SLURM_STEP_TASKS_PER_NODE"], "2(x2)");
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "2(x2)");
  EXPECT_EQ(env["SLURM_JOB_CPUS_PER_NODE"], "24(x3),8");
  EXPECT_EQ(env["SLURMD_NODENAME"], "gpu03");
  EXPECT_EQ(env["SLURM_NODEID"], "1");
  EXPECT_EQ(env["SLURM_PROCID"], "3");
  EXPECT_EQ(env["SLURM_LOCALID"], "1");
  EXPECT_EQ(env["SLURM_CPUS_ON_NODE"], "24");
  EXPECT_EQ(env["SLURM_GPUS_ON_NODE"], "1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "5");
  EXPECT_EQ(env["SLURM_JOB_ID"], "4242");
  EXPECT_THAT(env, Not(Contains(Key("ENVIRONMENT"))));
}

TEST(StepTaskEnvironmentDeathTest, RefusesATaskOutsideItsStep) {
  SlurmStepTask task;
  task.nodes = {"gpu01"};
  task.tasks_per_node = {2};
  task.procid = 2;
  EXPECT_DEATH(StepTaskEnvironment(Job(), task), "check failed");
  task.procid = 0;
  task.nodes = {"elsewhere"};
  EXPECT_DEATH(StepTaskEnvironment(Job(), task), "check failed");
}

TEST(SlurmEnvironment, CountsPerNodeReadBackAndNonsenseIsRefused) {
  for (const std::vector<int>& counts :
       {std::vector<int>{2, 2, 2, 1}, std::vector<int>{4}, std::vector<int>{1, 3, 3, 0}}) {
    auto back = ParseCountsPerNode(CountsPerNode(counts));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, counts);
  }
  for (const char* bad : {"", "x", "2(x)", "2(x3", "2(3)", "-1", "2(x0)", "2(x70000)"}) {
    EXPECT_EQ(ParseCountsPerNode(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SlurmEnvironment, AStepTasksVariablesAreTheJobsWithTheStepsOver) {
  SlurmStepTask task;
  task.step_id = 2;
  task.nodes = {"gpu1", "gpu2"};
  task.tasks_per_node = {2, 1};
  task.node_index = 1;
  task.procid = 2;
  task.localid = 0;
  auto step = StepVariables(task, 8);
  EXPECT_EQ(step.at("SLURM_PROCID"), "2");
  EXPECT_EQ(step.at("SLURM_NODEID"), "1");
  EXPECT_EQ(step.at("SLURMD_NODENAME"), "gpu2");
  EXPECT_EQ(step.at("SLURM_STEP_TASKS_PER_NODE"), "2,1");
  EXPECT_EQ(step.at("SLURM_NTASKS"), "3");
  EXPECT_EQ(step.count("SLURM_JOB_ID"), 0u) << "the job's variables are the service's own";
}

}  // namespace
}  // namespace cohort::slurm
