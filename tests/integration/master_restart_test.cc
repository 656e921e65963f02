// (e) A master stopped and started again on the same data directory knows every job, and its
// agents, whose tasks kept running meanwhile, reconcile with it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

TEST(MasterRestart, KnowsEveryJobAndTheRunningOnesKeepRunning) {
  LocalCluster cluster("restart");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  JobId done = cluster.Submit(R"(
name: done
tasks: [{role: main, command: [echo, finished]}]
)");
  cluster.WaitForState(done, JobState::kSucceeded);
  JobId running = cluster.Submit(R"(
name: long
tasks: [{role: main, resources: {gpus: 1}, command: [sh, -c, 'echo before; sleep 3; echo after']}]
)");
  Job before = cluster.WaitForJob(
      running, [](const Job& j) { return j.state == JobState::kRunning && j.tasks[0].pid != 0; });
  JobId pending = cluster.Submit(R"(
name: too-big
tasks: [{role: main, resources: {gpus: 8}, command: ["true"]}]
)");
  JobId killed = cluster.Submit(R"(
name: killed
tasks: [{role: main, resources: {gpus: 8}, command: ["true"]}]
)");
  ASSERT_TRUE(cluster.client().Kill(killed).ok());

  cluster.StopMaster();
  cluster.StartMaster();

  auto jobs = cluster.client().ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*jobs)[0].spec.name, "done");
  EXPECT_EQ((*jobs)[2].state, JobState::kPending);
  EXPECT_EQ((*jobs)[3].state, JobState::kKilled);
  Job after = *cluster.client().GetJob(running);
  EXPECT_EQ(after.tasks.at(0).pid, before.tasks.at(0).pid);
  // The agent reconnects, and the task that ran through the restart finishes normally, with
  // its whole output.
  Job finished = cluster.WaitForState(running, JobState::kSucceeded, std::chrono::seconds(20));
  EXPECT_EQ(finished.attempt, 1) << "the attempt must not run twice";
  EXPECT_EQ(cluster.Logs(running), "before\nafter\n");
  EXPECT_EQ(cluster.client().GetJob(pending)->state, JobState::kPending);
  auto events = cluster.client().Events(running);
  ASSERT_TRUE(events.ok());
  EXPECT_GE(events->size(), 4u);
}

// The master as an admin would start it by hand: its exit code and what it said, or 124 if it was
// still running after 10 s (it started).
CommandResult StartMasterBriefly(LocalCluster& cluster, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"/usr/bin/timeout", "10",         BinDir() + "/cohortd",
                                   "master",           "--data-dir", cluster.dir() + "/master",
                                   "--listen",         "127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunCommand(args, {});
}

TEST(MasterRestart, ALostDatabaseIsRestoredFromABackupNeverSilentlyReplaced) {
  namespace fs = std::filesystem;
  LocalCluster cluster("backup");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(R"(
name: kept
tasks: [{role: main, resources: {gpus: 1}, command: [sleep, "300"]}]
)");
  cluster.WaitForState(id, JobState::kRunning);
  // A backup of the running master.
  std::string backup = cluster.dir() + "/backup";
  auto copied = RunCommand(
      {BinDir() + "/cohortd", "backup", "--data-dir", cluster.dir() + "/master", "--to", backup},
      {});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  ASSERT_TRUE(fs::exists(backup + "/cohort.db"));

  // The database is lost: the master refuses to start a new, empty cluster over the old one.
  cluster.StopMaster();
  std::string db = cluster.dir() + "/master/cohort.db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  auto refused = StartMasterBriefly(cluster);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_THAT(refused.err, ::testing::HasSubstr("holds an earlier cluster"));
  EXPECT_THAT(refused.err, ::testing::HasSubstr("--init"));
  EXPECT_FALSE(fs::exists(db)) << "nothing was created";
  std::string admin_token = ReadFileOrEmpty(cluster.dir() + "/master/admin-token");

  // Restored from the backup, the master knows the job again, and the admin's token still works.
  fs::copy_file(backup + "/cohort.db", db);
  cluster.StartMaster();
  EXPECT_EQ(ReadFileOrEmpty(cluster.dir() + "/master/admin-token"), admin_token);
  auto job = cluster.client().GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.name, "kept");

  // A damaged database is not written to either.
  cluster.StopMaster();
  {
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(2 * 4096);
    file << std::string(4096, '\xff');
  }
  auto damaged = StartMasterBriefly(cluster);
  EXPECT_EQ(damaged.exit_code, 1) << damaged.err;
  EXPECT_THAT(damaged.err, ::testing::HasSubstr("integrity check"));
  // --init never replaces a database, damaged or not.
  auto init = StartMasterBriefly(cluster, {"--init"});
  EXPECT_EQ(init.exit_code, 1) << init.err;
  EXPECT_THAT(init.err, ::testing::HasSubstr("move that directory away"));
}

TEST(MasterRestart, InitStartsANewClusterOverALostOnesTraces) {
  namespace fs = std::filesystem;
  LocalCluster cluster("init");
  cluster.StartMaster();
  std::string old_token = ReadFileOrEmpty(cluster.dir() + "/master/admin-token");
  cluster.StopMaster();
  std::string db = cluster.dir() + "/master/cohort.db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  auto started = StartMasterBriefly(cluster, {"--init"});
  EXPECT_EQ(started.exit_code, 124) << "it ran until stopped: " << started.err;
  EXPECT_TRUE(fs::exists(db));
  EXPECT_NE(ReadFileOrEmpty(cluster.dir() + "/master/admin-token"), old_token)
      << "a new cluster, a new admin token";
}

}  // namespace
}  // namespace cohort::testing
