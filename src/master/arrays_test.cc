// Job arrays and dependencies in the master (docs/job-spec.md, "Arrays", "Dependencies"): an
// array is one job per index, at most max_parallel of them placed at once, killed as one; a job
// waits for its dependencies to end the way it says, and ends FAILED, saying why, when they never
// can.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ArraysTest : public MasterTest {
 protected:
  StatusOr<Job> SubmitArray(const std::string& indices, int max_parallel) {
    JobSpec spec = MakeSpec(1, 1);
    spec.array = ArraySpec{*ParseArrayIndices(indices, "indices"), max_parallel};
    return master_->Submit(spec, "ada");
  }
  JobId SubmitAfter(std::vector<Dependency> deps) {
    JobSpec spec = MakeSpec(1, 1);
    spec.depends_on = std::move(deps);
    auto job = master_->Submit(spec, "ada");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }
  int Placed(const std::vector<JobId>& ids) {
    int n = 0;
    for (JobId id : ids) n += GetJob(id).state != JobState::kPending;
    return n;
  }
};

TEST_P(ArraysTest, AnArrayIsOneJobPerIndexAtMostMaxParallelPlacedAndKilledAsOne) {
  AddNode("a", 8);
  auto first = SubmitArray("0-9:2", 2);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->array.has_value());
  EXPECT_EQ(first->array->id, first->id) << "the first job's id is the array's";
  const std::vector<JobId>* ids = master_->ArrayJobs(first->id);
  ASSERT_NE(ids, nullptr);
  ASSERT_EQ(ids->size(), 5u);
  std::vector<int> indices;
  for (JobId id : *ids) {
    indices.push_back(GetJob(id).array->index);
    EXPECT_EQ(GetJob(id).array->id, first->id);
    EXPECT_EQ(GetJob(id).array->count, 5);
  }
  EXPECT_THAT(indices, ElementsAre(0, 2, 4, 6, 8));

  RunPosted();
  EXPECT_EQ(Placed(*ids), 2) << "8 GPUs free, but max_parallel is 2";
  EXPECT_THAT(GetJob(ids->back()).message, HasSubstr("2 jobs of array"));
  // The desired state carries the index in each task's environment.
  DesiredState desired = *master_->nodes().DesiredFor("a");
  ASSERT_EQ(desired.tasks.size(), 2u);
  EXPECT_EQ(desired.tasks[0].env.at("COHORT_ARRAY_INDEX"), "0");
  EXPECT_EQ(desired.tasks[1].env.at("COHORT_ARRAY_INDEX"), "2");

  // Two end: the next two start.
  Report("a", TaskState::kRunning);
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  EXPECT_EQ(GetJob((*ids)[0]).state, JobState::kSucceeded);
  EXPECT_EQ(Placed(*ids), 4);

  // Killed as one: every job that has not ended.
  auto killed = master_->KillArray(first->id, "user ada");
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  EXPECT_EQ(killed->size(), 3u);
  RunPosted();
  Report("a", TaskState::kKilled);
  for (JobId id : *ids) EXPECT_TRUE(IsTerminal(GetJob(id).state)) << id;
  EXPECT_FALSE(master_->KillArray(first->id, "user ada").ok()) << "nothing left to kill";
  EXPECT_EQ(master_->ArrayJobs(ids->back()), nullptr) << "only the first id names the array";

  // The whole array must fit the queue caps: 1,000 jobs waiting fill ada's.
  ASSERT_TRUE(SubmitArray("0-999", 1).ok());  // at most one of them leaves the queue
  auto too_many = SubmitArray("0-1", 0);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::kTooManyRequests);
}

TEST_P(ArraysTest, AnArraySurvivesARestart) {
  AddNode("a", 8);
  auto first = SubmitArray("0-3", 1);
  ASSERT_TRUE(first.ok());
  RunPosted();
  Start();  // the master restarts, from its store
  AddNode("a", 8);
  const std::vector<JobId>* ids = master_->ArrayJobs(first->id);
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->size(), 4u);
  RunPosted();
  EXPECT_EQ(Placed(*ids), 1) << "max_parallel still holds";
}

TEST_P(ArraysTest, AJobWaitsForItsDependenciesAndStartsWhenTheyEndAsItSays) {
  AddNode("a", 1);
  JobId first = Submit(1, 1);
  JobId on_success = SubmitAfter({{first, DependencyCondition::kSuccess}});
  JobId on_failure = SubmitAfter({{first, DependencyCondition::kFailure}});
  JobId on_end = SubmitAfter({{first, DependencyCondition::kEnd}});
  RunPosted();
  EXPECT_EQ(GetJob(first).state, JobState::kStarting);
  EXPECT_EQ(GetJob(on_success).state, JobState::kPending);
  EXPECT_THAT(GetJob(on_success).message, HasSubstr("waits for job 1 to succeed"));
  auto why = master_->Explain(on_success);
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(why->summary, HasSubstr("waits for job 1 to succeed"));

  Report("a", TaskState::kRunning);
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  EXPECT_EQ(GetJob(on_failure).state, JobState::kFailed) << "job 1 can no longer fail";
  EXPECT_THAT(GetJob(on_failure).message,
              HasSubstr("dependency never met: it waited for job 1 to fail, and job 1 ended "
                        "SUCCEEDED"));
  // One GPU: the two that may start take turns.
  EXPECT_EQ(Placed({on_success, on_end}), 1);

  // A dependency on a job that does not exist, or that can never be met, is refused.
  JobSpec spec = MakeSpec(1, 1);
  spec.depends_on = {{999, DependencyCondition::kSuccess}};
  auto missing = master_->Submit(spec, "ada");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().details(), ElementsAre("depends_on[0]: job 999 does not exist"));
  spec.depends_on = {{first, DependencyCondition::kFailure}};
  auto never = master_->Submit(spec, "ada");
  ASSERT_FALSE(never.ok());
  EXPECT_THAT(never.status().details()[0], HasSubstr("job 1 already ended SUCCEEDED"));
}

TEST_P(ArraysTest, AKilledDependencyFailsTheJobsThatWaitForItsSuccess) {
  AddNode("a", 1);
  JobId first = Submit(1, 1);
  JobId after = SubmitAfter({{first, DependencyCondition::kSuccess}});
  ASSERT_TRUE(master_->Kill(first, "user ada").ok());  // pending: KILLED at once
  RunPosted();
  EXPECT_EQ(GetJob(after).state, JobState::kFailed);
  EXPECT_THAT(GetJob(after).message, HasSubstr("job 1 ended KILLED"));
}

INSTANTIATE_TEST_SUITE_P(Modes, ArraysTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
