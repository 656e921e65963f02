// Tasks that cannot start (docs/reliability.md, "Tasks that cannot start"): an agent's report of
// a start failure, applied by the reconciler, ends the job or moves it off the node without
// spending the restart budget.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "master/master_parts_test_fixture.h"
#include "master/reconciler.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

using CannotStartTest = MasterPartsTest;

// What the agent on `node` reports when every task it was given could not start.
AgentReport NotStartedReport(AgentReport report, StartFailure kind, const std::string& why) {
  for (auto& t : report.tasks) {
    t.exit_code = kind == StartFailure::kProgram ? 127 : 126;
    t.message = why;
    t.start_failure = kind;
  }
  return report;
}

TEST_F(CannotStartTest, AMissingProgramFailsTheJobAtOnceWithoutSpendingTheBudget) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId id = Started(GangSpec(1, 1, /*max_attempts=*/3));
  std::string node = job(id).tasks[0].node_id;
  auto desired = parts_->reconciler.Sync(
      node, NotStartedReport(ReportOf(node, TaskState::kFailed), StartFailure::kProgram,
                             "program \"trian\" not found on the task's PATH (/usr/bin:/bin)"));
  ASSERT_TRUE(desired.ok()) << desired.status().ToString();
  loop_->RunPosted();

  const Job& failed = job(id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.attempt, 1) << "not retried";
  EXPECT_EQ(failed.failures, 0) << "the restart budget is not spent";
  EXPECT_THAT(failed.message, HasSubstr("worker/0 could not start on " + node +
                                        ": program \"trian\" not found on the task's PATH"));
  EXPECT_THAT(failed.message, HasSubstr("not retried"));
  EXPECT_THAT(failed.excluded_nodes, IsEmpty()) << "a program is missing everywhere";
}

TEST_F(CannotStartTest, AMissingWorkdirFailsTheJobAtOnce) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(1, 1, /*max_attempts=*/3));
  ASSERT_TRUE(
      parts_->reconciler
          .Sync("a", NotStartedReport(ReportOf("a", TaskState::kFailed), StartFailure::kWorkdir,
                                      "cannot enter the working directory /data/x: No "
                                      "such file or directory"))
          .ok());
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kFailed);
  EXPECT_EQ(job(id).attempt, 1);
  EXPECT_EQ(job(id).failures, 0);
  EXPECT_THAT(job(id).message, HasSubstr("/data/x: No such file or directory"));
}

TEST_F(CannotStartTest, AnOrdinaryFailureIsStillRetriedWithinTheBudget) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(1, 1, /*max_attempts=*/3));
  Report("a", TaskState::kFailed, 127);  // no start failure named: the program ran and said 127
  loop_->RunPosted();
  EXPECT_EQ(job(id).attempt, 2);
  EXPECT_EQ(job(id).failures, 1);
}

TEST_F(CannotStartTest, AMissingAccountExcludesTheNodeAndPlacesTheJobElsewhere) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId id = Started(GangSpec(1, 1, /*max_attempts=*/1));
  std::string first = job(id).tasks[0].node_id;
  std::string second = first == "a" ? "b" : "a";
  ASSERT_TRUE(
      parts_->reconciler
          .Sync(first, NotStartedReport(ReportOf(first, TaskState::kFailed), StartFailure::kAccount,
                                        "no Unix account \"ada\" on " + first))
          .ok());
  loop_->RunPosted();

  const Job& moved = job(id);
  EXPECT_THAT(moved.excluded_nodes, ElementsAre(Pair(first, kExcludedForGood)));
  EXPECT_EQ(moved.failures, 0) << "the restart budget (one attempt) is not spent";
  ASSERT_EQ(moved.state, JobState::kStarting) << moved.message;
  EXPECT_EQ(moved.attempt, 2);
  ASSERT_EQ(moved.tasks.size(), 1u);
  EXPECT_EQ(moved.tasks[0].node_id, second) << "never on the excluded node again";
  ASSERT_FALSE(moved.history.empty());
  EXPECT_THAT(moved.history.back().result, HasSubstr(first + " is excluded for this job"));

  // The same on the second node: no node is left, and the job fails naming both.
  ASSERT_TRUE(parts_->reconciler
                  .Sync(second, NotStartedReport(ReportOf(second, TaskState::kFailed),
                                                 StartFailure::kAccount,
                                                 "no Unix account \"ada\" on " + second))
                  .ok());
  loop_->RunPosted();
  const Job& failed = job(id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.failures, 0);
  EXPECT_THAT(failed.message,
              HasSubstr("no node is left to try: it could not start on " + first + ", " + second));
}

TEST_F(CannotStartTest, OnlyNodesThatMeetTheConstraintsAreLeftToTry) {
  NodeInfo labelled = NodeInfoOf("a", 2, {31000, 31009});
  labelled.labels["rack"] = "r1";
  ASSERT_TRUE(parts_->reconciler.Register(labelled).ok());
  AddNode("b", 2);
  JobSpec spec = GangSpec(1, 1);
  spec.constraints.labels["rack"] = "r1";
  JobId id = Started(spec);
  ASSERT_EQ(job(id).tasks[0].node_id, "a");
  ASSERT_TRUE(parts_->reconciler
                  .Sync("a", NotStartedReport(ReportOf("a", TaskState::kFailed),
                                              StartFailure::kAccount, "no Unix account"))
                  .ok());
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kFailed) << "b does not meet the constraints";
  EXPECT_THAT(job(id).message, HasSubstr("no node is left to try: it could not start on a"));
}

TEST_F(CannotStartTest, TheExclusionSurvivesARestartOfTheMaster) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId id = Started(GangSpec(1, 1));
  std::string first = job(id).tasks[0].node_id;
  ASSERT_TRUE(parts_->reconciler
                  .Sync(first, NotStartedReport(ReportOf(first, TaskState::kFailed),
                                                StartFailure::kAccount, "no Unix account"))
                  .ok());
  loop_->RunPosted();
  auto stored = parts_->store->LoadJobs();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_THAT((*stored)[0].excluded_nodes, ElementsAre(Pair(first, kExcludedForGood)));
}

}  // namespace
}  // namespace cohort::master
