// Names and ids of jobs and tasks as they cross the API and the command line.
#include "model/job.h"

#include <gtest/gtest.h>

#include "model/job_spec.h"
#include "model/json.h"
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

TEST(RecordAttempt, KeepsTheLatestAndCountsTheServiceOfTheRest) {
  Job job;
  TaskGroupSpec group;
  group.role = "worker";
  group.replicas = 2;
  group.resources = Resources{2, 1000, 1LL << 30};
  job.spec.tasks.push_back(group);  // 4 GPUs
  const size_t attempts = kMaxAttemptSummaries + 5;
  Duration all{};
  for (size_t n = 1; n <= attempts; ++n) {
    Timestamp start = FromMicros(static_cast<int64_t>(n) * 1'000'000'000);
    AttemptSummary a{static_cast<int>(n), start, start + std::chrono::minutes(n), "preempted", {}};
    all += ServiceOf(job, a);
    RecordAttempt(job, a);
  }
  ASSERT_EQ(job.history.size(), kMaxAttemptSummaries);
  EXPECT_EQ(job.history.front().number, 6) << "the oldest five are dropped";
  EXPECT_EQ(job.history.back().number, static_cast<int>(attempts));
  // Attempts 1 to 5 ran 1 to 5 minutes on 4 GPUs.
  EXPECT_EQ(job.dropped_service, std::chrono::minutes(1 + 2 + 3 + 4 + 5) * 4);
  Duration kept{};
  for (const auto& a : job.history) kept += ServiceOf(job, a);
  EXPECT_EQ(job.dropped_service + kept, all) << "no GPU time is lost with the summaries";
  EXPECT_EQ(ServiceOf(job, AttemptSummary{1, std::nullopt, std::nullopt, "never started", {}}),
            Duration{});

  // The record keeps it, exactly; a record without it (written before it existed) reads 0.
  job.id = 7;
  job.spec.name = "j";
  job.spec.team = "default";
  group.command = {"true"};
  job.spec.tasks = {group};
  Json record = ToJson(job);
  auto back = JobFromJson(record);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->dropped_service, job.dropped_service);
  EXPECT_TRUE(back->excluded_nodes.empty());
  job.excluded_nodes = {{"node-a", kExcludedForGood}, {"node-b", job.submitted_at}};
  EXPECT_EQ(JobFromJson(ToJson(job))->excluded_nodes, job.excluded_nodes)
      << "nodes it is kept off, for good or until a time, are kept across master restarts";
  record.erase("excluded_nodes");
  EXPECT_TRUE(JobFromJson(record)->excluded_nodes.empty()) << "a record from before they were";
  record.erase("dropped_attempts_gpu_seconds");
  EXPECT_EQ(JobFromJson(record)->dropped_service, Duration{});
  record["dropped_attempts_gpu_seconds"] = -1;
  EXPECT_FALSE(JobFromJson(record).ok());
}

}  // namespace
}  // namespace cohort
