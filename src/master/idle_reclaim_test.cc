// Idle GPUs reclaimed (cohortd master --reclaim-idle-gpus): the job ends with that reason, or,
// where restart.on includes preempted, is requeued once, kept off the nodes it left idle for a
// while; reclaimed again, it ends. Driven through JobLifecycle::ReclaimIdle on the master's parts
// (master_parts_test_fixture.h) with a manual clock.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "master/job_lifecycle.h"
#include "master/master_parts_test_fixture.h"
#include "model/json.h"

namespace cohort::master {
namespace {

using std::chrono::minutes;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr Duration kIdle = minutes(30);
constexpr char kFinding[] = "its GPU has been idle for 30m";

class IdleReclaimTest : public MasterPartsTest {
 protected:
  // What the tick does when the advisor finds the job's GPUs idle: reclaim, written with the job.
  void Reclaim(JobId id) {
    std::vector<JobEvent> events;
    parts_->lifecycle.ReclaimIdle(job(id), kFinding, kIdle, events);
    parts_->jobs.Commit(job(id), std::move(events));
  }

  // The job's tasks run on their node (RUNNING), as its agent reports.
  void Running(const std::string& node) { Report(node, TaskState::kRunning); }

  std::vector<JobEvent> Events(JobId id) {
    auto events = parts_->jobs.Events(id);
    EXPECT_TRUE(events.ok());
    return events.ok() ? *events : std::vector<JobEvent>{};
  }

  std::string NodeOf(JobId id) { return job(id).tasks.at(0).node_id; }
};

TEST_F(IdleReclaimTest, AJobWhoseRestartOnLacksPreemptedEndsWithTheReasonAndIsNotRestarted) {
  AddNode("a", 1);
  JobSpec spec = GangSpec(1, 1, /*max_attempts=*/3);
  spec.restart.on = {};
  JobId id = Started(spec);
  Running("a");

  Reclaim(id);
  EXPECT_EQ(job(id).state, JobState::kStopping);
  EXPECT_EQ(job(id).stop_target, JobState::kFailed);
  Report("a", TaskState::kKilled);
  loop_->RunPosted();

  const Job& ended = job(id);
  EXPECT_EQ(ended.state, JobState::kFailed);
  EXPECT_EQ(ended.attempt, 1) << "not started again";
  EXPECT_EQ(ended.message,
            "idle GPUs reclaimed: its GPU has been idle for 30m (the master runs with "
            "--reclaim-idle-gpus); it ends: restart.on does not include preempted");
  EXPECT_FALSE(parts_->jobs.IsActive(id));
  EXPECT_THAT(ended.excluded_nodes, IsEmpty());
  std::vector<std::string> types;
  for (const auto& e : Events(id)) types.push_back(e.type);
  EXPECT_THAT(types, Contains("reclaimed"));
  EXPECT_EQ(types.back(), "finished");
  EXPECT_EQ(std::count(types.begin(), types.end(), "placed"), 1);
  EXPECT_THAT(types, Not(Contains("requeued")));
}

TEST_F(IdleReclaimTest, ARequeuedJobGoesElsewhereNotBackOntoTheNodeItLeftIdle) {
  AddNode("a", 1);
  JobId id = Started(GangSpec(1, 1));  // restart.on includes preempted by default
  Running("a");
  AddNode("b", 1);

  Reclaim(id);
  EXPECT_EQ(job(id).stop_target, JobState::kPending);
  EXPECT_EQ(job(id).preemptions, 1);
  EXPECT_EQ(job(id).failures, 0) << "no restart budget spent";
  Timestamp until = clock_.Now() + kIdle;
  EXPECT_EQ(job(id).excluded_nodes, (std::map<std::string, Timestamp>{{"a", until}}));
  EXPECT_THAT(job(id).message,
              HasSubstr(fmt::format("; kept off node a until {}", FormatTimestamp(until))));
  EXPECT_EQ(Events(id).back().type, "reclaimed");
  Report("a", TaskState::kKilled);
  loop_->RunPosted();

  EXPECT_EQ(job(id).state, JobState::kStarting);
  EXPECT_EQ(job(id).attempt, 2);
  EXPECT_EQ(NodeOf(id), "b") << "not the GPU it left idle, though a is free";
  // Written with the job: a restarted master keeps it off a as well.
  auto round_trip = JobFromJson(ToJson(job(id)));
  ASSERT_TRUE(round_trip.ok()) << round_trip.status().ToString();
  EXPECT_EQ(round_trip->excluded_nodes, job(id).excluded_nodes);
  EXPECT_EQ(round_trip->idle_reclaims, 1);
}

// The loop of issue 27 cannot happen: a job that idles wherever it runs is reclaimed twice at
// most, and the second time it ends.
TEST_F(IdleReclaimTest, AJobReclaimedASecondTimeEnds) {
  AddNode("a", 1);
  JobId id = Started(GangSpec(1, 1));
  Running("a");
  AddNode("b", 1);
  Reclaim(id);
  Report("a", TaskState::kKilled);
  loop_->RunPosted();
  ASSERT_EQ(NodeOf(id), "b");
  Running("b");

  Reclaim(id);
  EXPECT_EQ(job(id).stop_target, JobState::kFailed);
  Report("b", TaskState::kKilled);
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kFailed);
  EXPECT_EQ(job(id).attempt, 2);
  EXPECT_THAT(job(id).message, StartsWith("idle GPUs reclaimed: its GPU has been idle for 30m"));
  EXPECT_THAT(job(id).message, HasSubstr("it ends: its idle GPUs were reclaimed before"));
}

// On a cluster of one node the requeued job waits, saying why, and starts there once the
// exclusion ends (the tick offers it again).
TEST_F(IdleReclaimTest, AJobOnlyTheNodeItLeftIdleCouldHoldWaitsUntilTheExclusionEnds) {
  AddNode("a", 1);
  JobId id = Started(GangSpec(1, 1));
  Running("a");
  Reclaim(id);
  Report("a", TaskState::kKilled);
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kPending);
  EXPECT_EQ(job(id).message,
            "waits: it is kept off node a for now, and no other ready node could hold it");

  clock_.Advance(kIdle - minutes(1));
  parts_->scheduling.OnTick(clock_.Now());
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kPending) << "not yet";

  clock_.Advance(minutes(1));
  parts_->scheduling.OnTick(clock_.Now());
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kStarting) << job(id).message;
  EXPECT_EQ(NodeOf(id), "a");
  EXPECT_THAT(job(id).excluded_nodes, IsEmpty()) << "an exclusion that has passed is dropped";
  EXPECT_EQ(job(id).idle_reclaims, 1) << "the next reclaim ends it";
}

}  // namespace
}  // namespace cohort::master
