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

}  // namespace
}  // namespace cohort
