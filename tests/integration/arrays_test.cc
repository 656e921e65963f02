// Job arrays and dependencies on a real master and agent, through the CLI (docs/job-spec.md,
// "Arrays", "Dependencies"): every index runs once with its COHORT_ARRAY_INDEX, never more than
// max_parallel at once; the array is one row of `cohort jobs` and one `cohort kill`; a job that
// depends on another starts only after it ends, and one that never can ends FAILED saying why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

JobId IdOf(const CommandResult& run) { return std::stoll(std::string(Trim(run.out))); }

TEST(ArraysAndDependencies, EachIndexRunsOnceAtMostMaxParallelAtOnceAndDependentsWait) {
  LocalCluster cluster("arrays");
  cluster.StartMaster();
  cluster.StartAgent("agent-0", 4);
  auto run = cluster.Cohort({"run", "--name", "folds", "--array", "0-5%2", "--gpus", "1",
                             "--no-context", "--", "sh", "-c",
                             "echo index $COHORT_ARRAY_INDEX of $COHORT_ARRAY_COUNT; sleep 0.3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const JobId array = IdOf(run);
  EXPECT_THAT(run.err, HasSubstr(fmt::format("array {}: 6 jobs", array)));
  // Waits for index 5 to end, whichever way.
  auto after = cluster.Cohort({"run", "--no-context", "--depends-on",
                               fmt::format("{}:end", array + 5), "--", "echo", "after"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  // Waits for index 0 to fail, which it will not.
  auto never = cluster.Cohort({"run", "--no-context", "--depends-on",
                               fmt::format("{}:failure", array), "--", "echo", "never"});
  ASSERT_EQ(never.exit_code, 0) << never.err;

  std::vector<std::pair<Timestamp, Timestamp>> ran;
  for (JobId id = array; id < array + 6; ++id) {
    Job done = cluster.WaitForState(id, JobState::kSucceeded);
    ASSERT_EQ(done.state, JobState::kSucceeded) << done.message;
    ASSERT_TRUE(done.array.has_value());
    EXPECT_EQ(done.array->id, array);
    EXPECT_THAT(cluster.Logs(id), HasSubstr(fmt::format("index {} of 6", id - array)));
    ran.emplace_back(*done.placed_at, *done.finished_at);
  }
  // At no moment were three of them placed: at each placement, count those not yet ended.
  for (const auto& [start, end] : ran) {
    int at_once = 0;
    for (const auto& [s, e] : ran) at_once += s <= start && start < e;
    EXPECT_LE(at_once, 2);
  }
  Job dependent = cluster.WaitForState(IdOf(after), JobState::kSucceeded);
  ASSERT_EQ(dependent.state, JobState::kSucceeded) << dependent.message;
  EXPECT_GE(*dependent.placed_at, ran.back().second) << "it started after index 5 ended";
  Job failed = cluster.WaitForState(IdOf(never), JobState::kFailed);
  EXPECT_THAT(failed.message,
              HasSubstr(fmt::format("dependency never met: it waited for job {} to fail", array)));

  // One job of the array by the name sbatch would print, ARRAY_INDEX, as by its id.
  auto status = cluster.Cohort({"status", fmt::format("{}_4", array)});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr(fmt::format("{}", array + 4)));
  auto logs = cluster.Cohort({"logs", fmt::format("{}_4", array)});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("index 4 of 6"));
  auto missing = cluster.Cohort({"logs", fmt::format("{}_9", array)});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr(fmt::format("array {} has no index 9", array)));

  // One row in `cohort jobs`.
  auto jobs = cluster.Cohort({"jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_THAT(jobs.out, HasSubstr(fmt::format("{}[0-5]", array)));
  EXPECT_THAT(jobs.out, HasSubstr("6 SUCCEEDED"));

  // Killed as one: a new array whose jobs would run long, one at a time.
  auto slow = cluster.Cohort({"run", "--array", "0-3%1", "--no-context", "--", "sleep", "60"});
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  const JobId slow_id = IdOf(slow);
  cluster.WaitForState(slow_id, JobState::kRunning);
  auto one = cluster.Cohort({"kill", fmt::format("{}_3", slow_id)});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr(fmt::format("job {} ({}_3): KILLED", slow_id + 3, slow_id)));
  auto all = cluster.Cohort({"kill", std::to_string(slow_id)});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr(fmt::format("array {}: 3 jobs killed", slow_id)));
  for (JobId id = slow_id; id < slow_id + 4; ++id) {
    EXPECT_EQ(cluster.WaitForState(id, JobState::kKilled).state, JobState::kKilled) << id;
  }
}

}  // namespace
}  // namespace cohort::testing
