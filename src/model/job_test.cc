// Names and ids of jobs and tasks as they cross the API and the command line.
#include "model/job.h"

#include <gtest/gtest.h>

#include "model/job_spec.h"
#include "model/node.h"

namespace cohort {
namespace {

TEST(ParseJobId, TakesOnlyAPositiveDecimal) {
  EXPECT_EQ(*ParseJobId("17"), 17);
  for (const char* bad : {"", "0", "-3", "+3", "3x", " 3", "abc", "99999999999999999999"}) {
    auto id = ParseJobId(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(id.status().message(),
              std::string("\"") + bad + "\" is not a job id (a positive integer, e.g. 17)");
  }
}

TEST(EnumNames, EveryStateAndKindReadsBackItsName) {
  for (const auto& [value, name] : kJobStateNames) {
    EXPECT_STREQ(JobStateName(value), name);
    EXPECT_EQ(ParseJobState(name), value);
  }
  EXPECT_EQ(ParseJobState("running"), JobState::kRunning);  // job states ignore case
  for (const auto& [value, name] : kTaskStateNames) EXPECT_EQ(ParseTaskState(name), value);
  EXPECT_EQ(ParseTaskState("running"), std::nullopt);  // task states do not
  for (const auto& [value, name] : kGpuLinkTypeNames) EXPECT_EQ(ParseGpuLinkType(name), value);
  for (const auto& [value, name] : kFrameworkNames) EXPECT_EQ(ParseFramework(name), value);
  EXPECT_STREQ(NodeStateName(NodeState::kUnreachable), "UNREACHABLE");
  EXPECT_EQ(PriorityName(kPriorityHigh), "high");
  EXPECT_EQ(PriorityName(7), "7");
  EXPECT_EQ(ParsePriorityName("low"), kPriorityLow);
  EXPECT_EQ(ParsePriorityName("urgent"), std::nullopt);
}

TEST(RestartPolicy, AnAttemptThatEndsEarlySpendsTheBudgetAndOnlyAFailureBacksOff) {
  RestartPolicy policy;  // 3 attempts, every cause, 10 s doubling to 5 min
  EarlyEnd lost = policy.EndEarly(RestartCause::kNodeLost, 0);
  EXPECT_TRUE(lost.restartable);
  EXPECT_TRUE(lost.requeue);
  EXPECT_EQ(lost.failures, 1);
  EXPECT_EQ(lost.backoff, std::nullopt) << "a lost node is not the job's doing";
  EarlyEnd failed = policy.EndEarly(RestartCause::kFailure, 1);
  EXPECT_TRUE(failed.requeue);
  EXPECT_EQ(failed.failures, 2);
  EXPECT_EQ(failed.backoff, std::chrono::seconds(20));
  // The third failed attempt is the last.
  EarlyEnd last = policy.EndEarly(RestartCause::kNodeLost, 2);
  EXPECT_TRUE(last.restartable);
  EXPECT_FALSE(last.requeue);
  EXPECT_EQ(last.failures, 3);
  EXPECT_EQ(last.backoff, std::nullopt);
  // A cause restart.on leaves out ends the job without counting.
  policy.on = {RestartCause::kFailure};
  EarlyEnd refused = policy.EndEarly(RestartCause::kNodeLost, 0);
  EXPECT_FALSE(refused.restartable);
  EXPECT_FALSE(refused.requeue);
  EXPECT_EQ(refused.failures, 0);
}

}  // namespace
}  // namespace cohort
