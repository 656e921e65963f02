// Tasks that cannot start (docs/reliability.md, "Tasks that cannot start"), with real agents and
// real supervisors: a missing program or workdir ends the job FAILED at once, without spending
// its restart budget, with the reason in `cohort status` and `cohort why`; a node without the
// job's user's account is excluded for the job, which runs elsewhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

// The job failed at once with `reason`, which `cohort status` and `cohort why` both show.
void ExpectFailedAtOnce(LocalCluster& cluster, JobId id, const std::string& reason) {
  Job job = cluster.WaitForState(id, JobState::kFailed);
  EXPECT_EQ(job.attempt, 1) << "not retried: " << job.message;
  EXPECT_EQ(job.failures, 0) << "the restart budget is not spent";
  EXPECT_THAT(job.message, HasSubstr("worker/0 could not start on node-a: " + reason));
  EXPECT_THAT(job.message, HasSubstr("not retried"));
  auto status = cluster.Cohort({"status", std::to_string(id)});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr(reason));
  auto why = cluster.Cohort({"why", std::to_string(id)});
  EXPECT_EQ(why.exit_code, 0) << why.err;
  EXPECT_THAT(why.out, HasSubstr(reason));
}

TEST(StartFailure, AMissingProgramFailsTheJobAtOnce) {
  LocalCluster cluster("nostart-program");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(R"(
name: typo
restart: {max_attempts: 3, backoff: 1s}
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [cohort-no-such-program, --epochs, "3"]
)");
  ExpectFailedAtOnce(cluster, id,
                     "program \"cohort-no-such-program\" not found on the task's PATH "
                     "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)");
}

TEST(StartFailure, AProgramThatIsNotExecutableFailsTheJobAtOnce) {
  LocalCluster cluster("nostart-exec");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  std::string program = cluster.dir() + "/train.sh";
  ASSERT_EQ(
      RunCommand({"/bin/sh", "-c",
                  "printf '#!/bin/sh\\necho ran\\n' > " + program + " && chmod 0644 " + program})
          .exit_code,
      0);
  JobId id = cluster.Submit(fmt::format(R"(
name: not-executable
restart: {{max_attempts: 3, backoff: 1s}}
tasks:
  - role: worker
    resources: {{gpus: 1}}
    command: [{}]
)",
                                        program));
  ExpectFailedAtOnce(cluster, id, "program \"" + program + "\" is not executable by");
}

TEST(StartFailure, AMissingWorkdirFailsTheJobAtOnce) {
  LocalCluster cluster("nostart-workdir");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(R"(
name: nowhere
restart: {max_attempts: 3, backoff: 1s}
tasks:
  - role: worker
    resources: {gpus: 1}
    workdir: /nonexistent/cohort-workdir
    command: [echo, never]
)");
  ExpectFailedAtOnce(
      cluster, id,
      "cannot enter the working directory /nonexistent/cohort-workdir: No such file or directory");
}

// One machine plays a node without the account through the agent's test seam
// (COHORT_TEST_ABSENT_ACCOUNTS, agent/task_account.h): node-a behaves as if the test's account
// did not exist there. Node-b is drained while the job is submitted, so that node-a is tried
// first, whatever the scheduler would prefer.
TEST(StartFailure, ANodeWithoutTheAccountIsExcludedAndTheJobRunsElsewhere) {
  if (::geteuid() != 0) GTEST_SKIP() << "an agent that is not root runs every task as itself";
  LocalCluster cluster("nostart-account");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1, {}, {{"COHORT_TEST_ABSENT_ACCOUNTS", TestAccount()}});
  cluster.StartAgent("node-b", 1);
  ASSERT_EQ(cluster.Cohort({"node", "drain", "node-b", "--reason", "not yet"}).exit_code, 0);
  JobId id = cluster.Submit(R"(
name: moves
restart: {max_attempts: 1}
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [echo, ran]
)");
  Job excluded = cluster.WaitForJob(
      id, [](const Job& j) { return !j.excluded_nodes.empty() && j.state == JobState::kPending; });
  ASSERT_EQ(excluded.excluded_nodes.size(), 1u);
  EXPECT_EQ(excluded.excluded_nodes.begin()->first, "node-a");
  EXPECT_EQ(excluded.excluded_nodes.begin()->second, kExcludedForGood) << "kept off for good";
  EXPECT_EQ(excluded.failures, 0);
  EXPECT_THAT(cluster.EventsText(id),
              HasSubstr("worker/0 could not start on node-a: no Unix account \"" + TestAccount() +
                        "\" on node-a"));
  EXPECT_THAT(cluster.EventsText(id), HasSubstr("node-a is excluded for this job"));

  ASSERT_EQ(cluster.Cohort({"node", "undrain", "node-b"}).exit_code, 0);
  Job done = cluster.WaitForState(id, JobState::kSucceeded);
  ASSERT_EQ(done.tasks.size(), 1u);
  EXPECT_EQ(done.tasks[0].node_id, "node-b");
  EXPECT_EQ(done.failures, 0) << "a budget of one attempt was enough";
  EXPECT_EQ(done.attempt, 2);
}

}  // namespace
}  // namespace cohort::testing
