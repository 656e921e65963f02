// Issue 30, item 3: Slurm batch scripts run unchanged. `cohort sbatch` reads the script's
// #SBATCH lines, the master runs the script on the job's first node with the SLURM_* variables,
// and srun inside it starts the step's tasks on every node through their exec services, as real
// processes on two agents (at their own addresses, as two machines).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteScript(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The id of "Submitted batch job ID", as sbatch prints it; 0 if the line is not there.
JobId SubmittedId(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("Submitted batch job ([0-9]+)"))) return 0;
  return std::stoll(m[1]);
}

// A cluster of two agents at 127.0.0.2 and 127.0.0.3, 2 GPUs each, and a directory to submit
// from, as a login node's home on a shared file system.
class SlurmCluster {
 public:
  explicit SlurmCluster(const std::string& name) : cluster(name) {
    cluster.StartMaster();
    cluster.StartAgent("node-a", 2, {"--address", "127.0.0.2"});
    cluster.StartAgent("node-b", 2, {"--address", "127.0.0.3"});
    submit_dir = cluster.dir() + "/home";
    std::filesystem::create_directories(submit_dir);
  }
  LocalCluster cluster;
  std::string submit_dir;
};

TEST(Slurm, TheExampleTrainsOnTwoNodesWithSrunAndScontrolAsOnASlurmCluster) {
  SlurmCluster c("slurm");
  for (const char* file : {"train.sbatch", "train.py"}) {
    std::filesystem::copy_file(SourceDir() + "/examples/slurm-batch/" + file,
                               c.submit_dir + "/" + file);
  }
  auto sbatch = c.cluster.Cohort({"sbatch", "train.sbatch"}, c.submit_dir);
  ASSERT_EQ(sbatch.exit_code, 0) << sbatch.err;
  const JobId id = SubmittedId(sbatch.out);
  ASSERT_GT(id, 0) << sbatch.out;
  Job job = c.cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(180));
  ASSERT_EQ(job.state, JobState::kSucceeded) << c.cluster.EventsText(id) << c.cluster.Logs(id);
  EXPECT_EQ(job.spec.name, "ddp-slurm");
  EXPECT_EQ(job.spec.framework, Framework::kSlurm);
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_NE(job.tasks[0].node_id, job.tasks[1].node_id) << "one task per node";
  EXPECT_EQ(job.tasks[0].gpus.size(), 2u) << "--gpus-per-task=1 × --ntasks-per-node=2";

  // The script's output, in the file --output names, in the directory sbatch ran in.
  const std::string output = ReadAll(fmt::format("{}/ddp-slurm-{}.out", c.submit_dir, id));
  EXPECT_THAT(output,
              HasSubstr(fmt::format("job {} (ddp-slurm): 2 nodes [127.0.0.2 127.0.0.3], 4 tasks, "
                                    "rendezvous at 127.0.0.2:",
                                    id)));
  // srun started 2 tasks on each node, each with its rank, its node and its own GPU.
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(output, HasSubstr(fmt::format("{}: rank {}/4", rank, rank))) << output;
    EXPECT_THAT(output, HasSubstr(fmt::format("rank {}/4 on ", rank)));
  }
  EXPECT_THAT(output, HasSubstr("(node 0, local 0, GPUs 0)"));
  EXPECT_THAT(output, HasSubstr("(node 0, local 1, GPUs 1)"));
  EXPECT_THAT(output, HasSubstr("(node 1, local 0, GPUs 0)"));
  EXPECT_THAT(output, HasSubstr("(node 1, local 1, GPUs 1)"));
  EXPECT_THAT(output, HasSubstr("replicas in step, rank sum 10, ok"));
  EXPECT_THAT(output, Not(HasSubstr("WRONG")));
  EXPECT_THAT(output, HasSubstr("all 4 tasks done"));
  // The same in the job's log, and the other node served srun's tasks.
  EXPECT_THAT(c.cluster.Logs(id, "node/0"), HasSubstr("all 4 tasks done"));
  EXPECT_THAT(c.cluster.Logs(id, "node/1"), HasSubstr("cohort-exec: running for"));
  EXPECT_THAT(c.cluster.EventsText(id), HasSubstr("the batch script succeeded"));
  // The id sbatch printed is the job's everywhere.
  auto status = c.cluster.Cohort({"status", std::to_string(id)});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("ddp-slurm"));
}

TEST(Slurm, AFailingScriptFailsItsJobOnceAndWaitGivesItsExitCode) {
  SlurmCluster c("slurmfail");
  WriteScript(c.submit_dir + "/fail.sh", R"sh(#!/bin/sh
#SBATCH -J failing
#SBATCH -o out-%x-%j.txt
echo "on $SLURMD_NODENAME of $SLURM_JOB_NODELIST, in $(pwd)"
echo "to stderr" >&2
srun -N 1 sh -c 'echo step $SLURM_STEP_ID task $SLURM_PROCID'
exit 3
)sh");
  auto sbatch = c.cluster.Cohort({"sbatch", "--wait", "fail.sh"}, c.submit_dir);
  EXPECT_EQ(sbatch.exit_code, 3) << sbatch.out << sbatch.err;
  const JobId id = SubmittedId(sbatch.out);
  ASSERT_GT(id, 0) << sbatch.out;
  Job job = c.cluster.WaitForState(id, JobState::kFailed, std::chrono::seconds(60));
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.attempt, 1) << "Slurm requeues on a node's failure, never on the script's";
  const std::string output = ReadAll(fmt::format("{}/out-failing-{}.txt", c.submit_dir, id));
  EXPECT_THAT(output, HasSubstr(fmt::format("in {}", c.submit_dir)));
  // One node: the list is its name alone, either agent's address.
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(on (127\.0\.0\.[23]) of \1,)"))) << output;
  EXPECT_THAT(output, HasSubstr("to stderr")) << "no --error: both streams in one file";
  EXPECT_THAT(output, HasSubstr("step 0 task 0"));
}

TEST(Slurm, UnknownDirectivesAreListedInOneErrorUnlessIgnored) {
  SlurmCluster c("slurmunknown");
  WriteScript(c.submit_dir + "/odd.sh", R"sh(#!/bin/bash
#SBATCH --nodelist=gpu01
#SBATCH --frobnicate=3
echo ran
)sh");
  auto refused = c.cluster.Cohort({"sbatch", "odd.sh"}, c.submit_dir);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("line 2: --nodelist=gpu01"));
  EXPECT_THAT(refused.err, HasSubstr("line 3: --frobnicate"));
  EXPECT_THAT(refused.err, HasSubstr("--ignore-unknown"));
  auto jobs = c.cluster.Cohort({"jobs", "-o", "json"});
  EXPECT_THAT(jobs.out, Not(HasSubstr("odd.sh"))) << "nothing was submitted";

  auto ran = c.cluster.Cohort({"sbatch", "--ignore-unknown", "--parsable", "odd.sh"}, c.submit_dir);
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("--frobnicate"));
  const JobId id = std::stoll(ran.out);
  Job job = c.cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(60));
  EXPECT_EQ(job.state, JobState::kSucceeded) << c.cluster.EventsText(id);
  EXPECT_THAT(ReadAll(fmt::format("{}/slurm-{}.out", c.submit_dir, id)), HasSubstr("ran"));
}

TEST(Slurm, AnArrayWritesAFilePerIndexAndIsKilledByTheIdSbatchPrinted) {
  SlurmCluster c("slurmarray");
  auto sbatch = c.cluster.Cohort(
      {"sbatch", "--array=0-2", "--output=out-%A_%a.txt",
       "--wrap=echo index $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT in $SLURM_ARRAY_JOB_ID"},
      c.submit_dir);
  ASSERT_EQ(sbatch.exit_code, 0) << sbatch.err;
  const JobId array = SubmittedId(sbatch.out);
  ASSERT_GT(array, 0) << sbatch.out;
  for (int index = 0; index < 3; ++index) {
    auto wait = c.cluster.Cohort({"wait", fmt::format("{}_{}", array, index), "--timeout", "60"});
    EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
    EXPECT_THAT(ReadAll(fmt::format("{}/out-{}_{}.txt", c.submit_dir, array, index)),
                HasSubstr(fmt::format("index {} of 3 in {}", index, array)));
  }
  // A long one, killed by the id sbatch printed.
  auto sleeper = c.cluster.Cohort({"sbatch", "--parsable", "--wrap=sleep 600"}, c.submit_dir);
  ASSERT_EQ(sleeper.exit_code, 0) << sleeper.err;
  const std::string id = sleeper.out.substr(0, sleeper.out.find('\n'));
  c.cluster.WaitForState(std::stoll(id), JobState::kRunning, std::chrono::seconds(30));
  auto kill = c.cluster.Cohort({"kill", id});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  Job killed = c.cluster.WaitForState(std::stoll(id), JobState::kKilled, std::chrono::seconds(60));
  EXPECT_EQ(killed.state, JobState::kKilled);
}

// Lightning's auto-requeue pattern: --signal=USR1@T reaches the steps' tasks on every node
// (through srun) T seconds before the time limit, and not the batch shell.
TEST(Slurm, SignalReachesEveryTaskOfTheRunningStepBeforeTheTimeLimit) {
  SlurmCluster c("slurmsignal");
  WriteScript(c.submit_dir + "/warned.sh", R"sh(#!/bin/bash
#SBATCH --nodes=2 --time=1 --signal=USR1@57
trap 'echo the batch shell got USR1' USR1
srun --label sh -c 'trap "echo warned on $SLURMD_NODENAME; exit 0" USR1; while :; do sleep 0.1; done'
echo "step ended: $?"
)sh");
  auto sbatch = c.cluster.Cohort({"sbatch", "--parsable", "warned.sh"}, c.submit_dir);
  ASSERT_EQ(sbatch.exit_code, 0) << sbatch.err;
  const JobId id = std::stoll(sbatch.out);
  Job job = c.cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(40));
  ASSERT_EQ(job.state, JobState::kSucceeded) << c.cluster.EventsText(id) << c.cluster.Logs(id);
  const std::string output = ReadAll(fmt::format("{}/slurm-{}.out", c.submit_dir, id));
  EXPECT_THAT(output, HasSubstr("0: warned on 127.0.0."));
  EXPECT_THAT(output, HasSubstr("1: warned on 127.0.0."));
  EXPECT_THAT(output, HasSubstr("step ended: 0"));
  EXPECT_THAT(output, Not(HasSubstr("the batch shell got USR1")));
  EXPECT_THAT(c.cluster.Logs(id, "node/0"), HasSubstr("sending signal 10 to the script's 1"));
}

}  // namespace
}  // namespace cohort::testing
