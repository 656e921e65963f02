// The order of jobs under each policy, and teams' quotas and limits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/job_order.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(FairShare, TeamBelowItsGuaranteeGoesFirst) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 2);
  c.teams = {TeamQuota{"vision", 2, std::nullopt}, TeamQuota{"nlp", 2, std::nullopt}};
  // vision submitted first but already holds 3 GPUs elsewhere (over its guarantee of 2).
  AddNodes(c, "busy", 1, 3);
  StartRunning(c, Job(90, 1, 3, 0, 0, "vision"), {"busy-0"}, FromMicros(0));
  Plan plan = RunScheduler(c, {Job(1, 1, 2, 0, 1, "vision"), Job(2, 1, 2, 0, 2, "nlp")});
  EXPECT_THAT(PlacedIds(plan), ElementsAre(2));
}

TEST(FairShare, AJobBeyondItsTeamsGuaranteeDoesNotGoFirst) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  c.teams = {TeamQuota{"small", 1, std::nullopt}, TeamQuota{"big", 4, std::nullopt}};
  // small holds nothing, so it is the furthest below its guarantee, but its job of 4 GPUs would
  // borrow 3; big's job of 3 fits in what is left of big's guarantee, and goes first.
  AddNodes(c, "busy", 1, 1);
  StartRunning(c, Job(90, 1, 1, 0, 0, "big"), {"busy-0"}, FromMicros(0));
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "small"), Job(2, 1, 3, 0, 2, "big")});
  EXPECT_THAT(PlacedIds(plan), ElementsAre(2));
}

TEST(FairShare, AlternatesBetweenTeamsByShare) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  c.teams = {TeamQuota{"a", 2, std::nullopt}, TeamQuota{"b", 2, std::nullopt}};
  // Team a submitted all of its jobs first; fair share still gives b half the GPUs.
  Plan plan =
      RunScheduler(c, {Job(1, 1, 1, 0, 1, "a"), Job(2, 1, 1, 0, 2, "a"), Job(3, 1, 1, 0, 3, "a"),
                       Job(4, 1, 1, 0, 4, "b"), Job(5, 1, 1, 0, 5, "b"), Job(6, 1, 1, 0, 6, "b")});
  std::vector<JobId> placed = PlacedIds(plan);
  std::sort(placed.begin(), placed.end());
  EXPECT_THAT(placed, ElementsAre(1, 2, 4, 5));
}

PendingJob Estimated(PendingJob job, int gpu_minutes) {
  job.estimate = RuntimeEstimate{Minutes(gpu_minutes) - Minutes(0), 5, "of team t"};
  return job;
}

TEST(FairShare, WithinATeamPriorityThenLevelThenEstimateThenSubmission) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  PendingJob served = Estimated(Job(5, 1, 1, 0, 0, "t"), 10);
  served.attained = std::chrono::hours(2);  // level 1: after every level-0 job
  Plan plan = RunScheduler(
      c,
      {
          served, Estimated(Job(1, 1, 1, 0, 1, "t"), 600), Estimated(Job(2, 1, 1, 0, 2, "t"), 60),
          Estimated(Job(3, 1, 1, 100, 3, "t"), 900),
          Job(4, 1, 1, 0, 4, "t"),  // nothing to go by: after estimates
      },
      {}, Minutes(1));
  // Priority first (3); then level 0 by expected GPU time (2, 1), then the unknown (4).
  EXPECT_THAT(PlacedIds(plan), ElementsAre(3, 2, 1, 4));
}

TEST(FairShare, BeyondGuaranteesTheBestRankedJobOfAnyTeam) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 3);
  AddNodes(c, "busy", 1, 4);
  c.teams = {TeamQuota{"a", 2, std::nullopt}, TeamQuota{"b", 2, std::nullopt}};
  StartRunning(c, Job(90, 1, 2, 0, 0, "a"), {"busy-0"}, Minutes(0));
  StartRunning(c, Job(91, 1, 2, 0, 0, "b"), {"busy-0"}, Minutes(0));
  // Both teams hold their guarantee: the shortest expected jobs go first, whatever the team.
  Plan plan =
      RunScheduler(c,
                   {Estimated(Job(1, 1, 1, 0, 1, "a"), 600), Estimated(Job(2, 1, 1, 0, 2, "a"), 30),
                    Estimated(Job(3, 1, 1, 0, 3, "b"), 60), Estimated(Job(4, 1, 1, 0, 4, "b"), 20)},
                   {}, Minutes(1));
  EXPECT_THAT(PlacedIds(plan), ElementsAre(4, 2, 3));
}

TEST(FairShare, AJobThatWaitedTooLongIsPromoted) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 1);
  SchedulerConfig config;  // promoted after 2 hours, or twice the time it has run
  PendingJob old_long = Estimated(Job(1, 1, 1, 0, 0, "t"), 6000);
  PendingJob fresh_short = Estimated(Job(2, 1, 1, 0, ToMicros(Minutes(100)), "t"), 10);
  EXPECT_THAT(PlacedIds(RunScheduler(c, {old_long, fresh_short}, config, Minutes(119))),
              ElementsAre(2));
  EXPECT_THAT(PlacedIds(RunScheduler(c, {old_long, fresh_short}, config, Minutes(120))),
              ElementsAre(1));
  // A job that ran 3 hours before it was preempted at minute 200 waits 6 hours, not 2.
  PendingJob ran = Estimated(Job(3, 1, 1, 0, 0, "t"), 6000);
  ran.attained = std::chrono::hours(3);
  ran.waiting_since = Minutes(200);
  PendingJob level1 = Estimated(Job(4, 1, 1, 0, 0, "t"), 3000);  // less left: first if equal
  level1.attained = std::chrono::hours(2);
  level1.waiting_since = Minutes(560);
  EXPECT_THAT(PlacedIds(RunScheduler(c, {ran, level1}, config, Minutes(559))), ElementsAre(4));
  EXPECT_THAT(PlacedIds(RunScheduler(c, {ran, level1}, config, Minutes(560))), ElementsAre(3));
  // Whatever it ran, it is promoted after max_wait (24 hours).
  ran.attained = std::chrono::hours(100);
  level1.waiting_since = Minutes(200 + 24 * 60 - 10);
  EXPECT_THAT(PlacedIds(RunScheduler(c, {ran, level1}, config, Minutes(200 + 24 * 60))),
              ElementsAre(3));
}

TEST(FairShare, PreemptsItsTeamsJobsOfALaterLevelOnlyAndLeastLostWorkFirst) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 2);
  c.teams = {TeamQuota{"t", 2, std::nullopt}, TeamQuota{"other", 2, std::nullopt}};
  // Three hours on 1 GPU each: 3 GPU-hours, level 1. Job 11 checkpointed at minute 170.
  StartRunning(c, Job(10, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(0));
  RunningJob& checkpointed = StartRunning(c, Job(11, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(0));
  checkpointed.last_checkpoint_at = Minutes(170);
  StartRunning(c, Job(20, 1, 2, 0, 0, "other"), {"n-1"}, Minutes(0));
  SchedulerConfig config;
  config.min_victim_level = 1;  // the default spares jobs below 16 GPU-hours
  // The waiting job has waited 40 minutes: longer than the level preemption delay.
  EXPECT_TRUE(RunScheduler(c, {Job(1, 1, 1, 0, ToMicros(Minutes(140)), "t")}, {}, Minutes(180))
                  .preemptions.empty());
  Plan plan = RunScheduler(c, {Job(1, 1, 1, 0, ToMicros(Minutes(140)), "t")}, config, Minutes(180));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].victim, 11) << "loses 10 minutes of work, job 10 three hours";
  // Another team's job of a later level is not preempted for a level: only quota reclaim can.
  Plan other =
      RunScheduler(c, {Job(2, 1, 2, 0, ToMicros(Minutes(140)), "t")}, config, Minutes(180));
  for (const auto& p : other.preemptions) EXPECT_NE(p.victim, 20);
}

TEST(FairShare, AJobPreemptsForItsLevelOnlyAfterWaitingTheDelay) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 2);
  // 20 hours on 2 GPUs: 40 GPU-hours, level 2.
  StartRunning(c, Job(10, 1, 2, 0, 0, "t"), {"n-0"}, Minutes(0));
  Timestamp now = Minutes(1200);
  PendingJob fresh = Job(1, 1, 1, 0, ToMicros(Minutes(1180)), "t");
  Plan early = RunScheduler(c, {fresh}, {}, now);
  EXPECT_TRUE(early.preemptions.empty()) << "GPUs may free up soon without a preemption";
  ASSERT_TRUE(early.recheck_at.has_value());
  EXPECT_LE(*early.recheck_at, Minutes(1210)) << "looks again when the delay is over";
  EXPECT_EQ(RunScheduler(c, {fresh}, {}, Minutes(1210)).preemptions.size(), 1u);
  // The delay counts from when the job last began to wait, not from its submission.
  PendingJob requeued = Job(2, 1, 1, 0, 0, "t");
  requeued.waiting_since = Minutes(1195);
  EXPECT_TRUE(RunScheduler(c, {requeued}, {}, now).preemptions.empty());
}

TEST(FairShare, APromotedJobIsProtectedUntilItsQuantumOrACheckpoint) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  // Submitted at 0, started at minute 300 (promoted after 2 hours of waiting), 4 GPUs: at
  // minute 330 it has had 2 GPU-hours (level 1).
  RunningJob& promoted = StartRunning(c, Job(10, 1, 4, 0, 0, "t"), {"n-0"}, Minutes(300));
  SchedulerConfig config;
  config.min_victim_level = 1;
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "t")}, config, Minutes(330));
  EXPECT_TRUE(plan.preemptions.empty()) << "protected for an hour";
  ASSERT_TRUE(plan.recheck_at.has_value());
  EXPECT_LE(*plan.recheck_at, Minutes(360));
  EXPECT_EQ(RunScheduler(c, {Job(1, 1, 4, 0, 1, "t")}, config, Minutes(360)).preemptions.size(),
            1u);
  promoted.last_checkpoint_at = Minutes(320);
  EXPECT_EQ(RunScheduler(c, {Job(1, 1, 4, 0, 1, "t")}, config, Minutes(330)).preemptions.size(), 1u)
      << "a checkpoint ends the protection";
}

TEST(Fifo, SubmissionOrderOnlyAndStrictWithoutBackfill) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  SchedulerConfig config;
  config.policy = Policy::kFifo;
  config.backfill = false;
  Plan plan =
      RunScheduler(c, {Job(1, 1, 2, 0, 1), Job(2, 1, 4, 100, 2), Job(3, 1, 1, 0, 3)}, config);
  // 1 starts; 2 (priority ignored by fifo) does not fit and blocks 3, which would fit.
  EXPECT_THAT(PlacedIds(plan), ElementsAre(1));
  ASSERT_NE(ReasonFor(plan, 3), nullptr);
  EXPECT_THAT(ReasonFor(plan, 3)->reason, HasSubstr("waiting behind job 2"));
}

TEST(Fifo, EveryJobBehindABlockedHeadWaitsForIt) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(90, 1, 1, 0, 0), {"n-0"}, Minutes(0));
  SchedulerConfig config;
  config.policy = Policy::kFifo;
  config.backfill = false;
  // Listed out of order: 50 small jobs that would fit, behind a gang of 8 that does not fit
  // beside the running job (submitted first). None starts, and each says whom it waits for.
  std::vector<PendingJob> pending;
  for (JobId id = 60; id > 10; --id) pending.push_back(Job(id, 1, 1, 0, id));
  pending.push_back(Job(5, 2, 4, 0, 5));
  Plan plan = RunScheduler(c, pending, config);
  EXPECT_THAT(plan.placements, IsEmpty());
  ASSERT_EQ(plan.waiting.size(), pending.size());
  for (JobId id = 11; id <= 60; ++id) {
    ASSERT_NE(ReasonFor(plan, id), nullptr) << id;
    EXPECT_THAT(ReasonFor(plan, id)->reason, HasSubstr("waiting behind job 5")) << id;
  }
}

TEST(JobOrder, NextInOrderThenTheRestInAnyOrder) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  std::vector<PendingJob> pending;
  for (JobId id : {7, 3, 9, 1, 5}) pending.push_back(Job(id, 1, 1, 0, id));
  std::vector<const RunningJob*> running = RunningJobs(c, nullptr);
  RunningTeams teams = TeamsOf(running);
  SchedulerConfig config;
  config.policy = Policy::kFifo;
  JobOrder order(config, c, running, teams, pending, Minutes(0));
  EXPECT_EQ(pending[*order.Next()].job_id, 1);
  EXPECT_EQ(pending[*order.Next()].job_id, 3);
  std::vector<JobId> rest;
  for (size_t i : order.Rest()) rest.push_back(pending[i].job_id);
  EXPECT_THAT(rest, UnorderedElementsAre(5, 7, 9));
  EXPECT_FALSE(order.Next().has_value());
  EXPECT_THAT(order.Rest(), IsEmpty());
}

TEST(Reasons, OffGivesTheSameDecisionsWithoutTheTexts) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(90, 1, 3, 0, 0), {"n-0"}, Minutes(0), Minutes(60));
  std::vector<PendingJob> pending = {Job(1, 2, 4, 0, 1), Job(2, 1, 1, 0, 2), Job(3, 1, 4, 0, 3),
                                     Job(4, 1, 2, 0, 4)};
  for (Policy policy : {Policy::kFifo, Policy::kFairShare}) {
    SchedulerConfig config;
    config.policy = policy;
    config.backfill = policy != Policy::kFifo;
    auto with = scheduler::NewScheduler(config)->Schedule({c, pending, Minutes(10)});
    auto without = scheduler::NewScheduler(config)->Schedule(
        {c, pending, Minutes(10), nullptr, /*reasons=*/false});
    EXPECT_THAT(PlacedIds(without), ElementsAreArray(PlacedIds(with)));
    ASSERT_EQ(without.waiting.size(), with.waiting.size());
    ASSERT_FALSE(with.waiting.empty());
    for (size_t i = 0; i < with.waiting.size(); ++i) {
      EXPECT_EQ(without.waiting[i].job_id, with.waiting[i].job_id);
      EXPECT_EQ(without.waiting[i].reserved_start, with.waiting[i].reserved_start);
      EXPECT_FALSE(with.waiting[i].reason.empty());
      EXPECT_TRUE(without.waiting[i].reason.empty());
    }
  }
}

TEST(LeastAttainedService, LeastServedFirst) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 1);
  SchedulerConfig config;
  config.policy = Policy::kLeastAttainedService;
  PendingJob veteran = Job(1, 1, 1, 0, 1);
  veteran.attained = std::chrono::hours(5);
  PendingJob fresh = Job(2, 1, 1, 0, 2);
  Plan plan = RunScheduler(c, {veteran, fresh}, config);
  EXPECT_THAT(PlacedIds(plan), ElementsAre(2));
}

TEST(TeamLimit, NeverBeyondMaxGpus) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"small", 1, 3}};
  Plan plan = RunScheduler(
      c, {Job(1, 1, 2, 0, 1, "small"), Job(2, 1, 2, 0, 2, "small"), Job(3, 1, 1, 0, 3, "small")});
  EXPECT_THAT(PlacedIds(plan), ElementsAre(1, 3));
  ASSERT_NE(ReasonFor(plan, 2), nullptr);
  EXPECT_THAT(ReasonFor(plan, 2)->reason,
              HasSubstr("team small holds 2 of the 3 GPUs it may use at most"));
}

TEST(Policy, ParsesNames) {
  EXPECT_EQ(*ParsePolicy("default"), Policy::kFairShare);
  EXPECT_EQ(*ParsePolicy("fifo"), Policy::kFifo);
  EXPECT_EQ(*ParsePolicy("las"), Policy::kLeastAttainedService);
  EXPECT_FALSE(ParsePolicy("random").ok());
}

}  // namespace
}  // namespace cohort::scheduler

namespace cohort::scheduler {
namespace {

using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(LeastAttainedService, NewJobsPreemptJobsThatHadMoreGpuTime) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  // Running for 2 hours on 4 GPUs: 8 GPU-hours, queue 1 (threshold 1 GPU-hour).
  StartRunning(c, Job(10, 1, 4), {"n-0"}, Minutes(0));
  SchedulerConfig config;
  config.policy = Policy::kLeastAttainedService;
  Plan plan = RunScheduler(c, {Job(1, 1, 2, 0, 1)}, config, Minutes(120));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].victim, 10);
  EXPECT_THAT(plan.preemptions[0].reason, ::testing::HasSubstr("least attained service"));
  // Another policy, or a pending job that has had as much: no preemption.
  SchedulerConfig fifo;
  fifo.policy = Policy::kFifo;
  EXPECT_TRUE(RunScheduler(c, {Job(1, 1, 2, 0, 1)}, fifo, Minutes(120)).preemptions.empty());
  PendingJob served = Job(2, 1, 2, 0, 1);
  served.attained = std::chrono::hours(3);
  EXPECT_TRUE(RunScheduler(c, {served}, config, Minutes(120)).preemptions.empty());
}

TEST(LeastAttainedService, TakesFromAnotherTeamOnlyWhatItHoldsBeyondItsGuarantee) {
  SchedulerConfig config;
  config.policy = Policy::kLeastAttainedService;
  // nlp has no guarantee, so its new job (queue 0) never reclaims; it may only take by level.
  std::vector<TeamQuota> teams = {TeamQuota{"vision", 4, std::nullopt},
                                  TeamQuota{"nlp", 0, std::nullopt}};
  // vision holds exactly its guarantee, with a job of queue 1. Taking it would put vision below
  // its guarantee, and vision would reclaim from nlp at once: the two would take turns.
  ClusterSnapshot within;
  AddNodes(within, "n", 1, 4);
  within.teams = teams;
  StartRunning(within, Job(10, 1, 4, 0, 0, "vision"), {"n-0"}, Minutes(0));
  EXPECT_TRUE(
      RunScheduler(within, {Job(1, 1, 4, 0, 1, "nlp")}, config, Minutes(120)).preemptions.empty());
  // Beyond its guarantee, one of vision's jobs is fair game, and only one.
  ClusterSnapshot borrowing;
  AddNodes(borrowing, "n", 2, 4);
  borrowing.teams = teams;
  StartRunning(borrowing, Job(10, 1, 4, 0, 0, "vision"), {"n-0"}, Minutes(0));
  StartRunning(borrowing, Job(12, 1, 4, 0, 0, "vision"), {"n-1"}, Minutes(0));
  Plan plan = RunScheduler(borrowing, {Job(1, 1, 4, 0, 1, "nlp"), Job(2, 1, 4, 0, 2, "nlp")},
                           config, Minutes(120));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_THAT(plan.preemptions[0].reason, ::testing::HasSubstr("least attained service"));
}

}  // namespace
}  // namespace cohort::scheduler

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

PendingJob Lasting(PendingJob job, int minutes) {
  job.oracle_remaining = Minutes(minutes) - Minutes(0);
  return job;
}

TEST(SjfOracle, LeastTrueGpuTimeFirstAndNoPreemptionForIt) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  StartRunning(c, Lasting(Job(10, 1, 2), 600), {"n-0"}, Minutes(0));
  SchedulerConfig config;
  config.policy = Policy::kSjfOracle;
  // 2 GPUs free. Job 1: 2 GPUs x 60 min = 120 GPU-minutes; job 2: 1 GPU x 100 min; job 3: 1 GPU
  // x 30 min. Shortest GPU time first: 3, then 2; 1 no longer fits, and nothing is preempted
  // although job 10 has far more left.
  Plan plan = RunScheduler(c,
                           {Lasting(Job(1, 1, 2, 0, 1), 60), Lasting(Job(2, 1, 1, 0, 2), 100),
                            Lasting(Job(3, 1, 1, 0, 3), 30)},
                           config, Minutes(5));
  EXPECT_THAT(PlacedIds(plan), ElementsAre(3, 2));
  EXPECT_TRUE(plan.preemptions.empty());
}

TEST(SrtfOracle, PreemptsOnlyJobsWithMoreGpuTimeLeft) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  // Both started at 0 on 2 GPUs: at minute 10, job 10 has 2 x 590 GPU-minutes left, job 11 has
  // 2 x 50.
  StartRunning(c, Lasting(Job(10, 1, 2), 600), {"n-0"}, Minutes(0));
  StartRunning(c, Lasting(Job(11, 1, 2), 60), {"n-0"}, Minutes(0));
  SchedulerConfig config;
  config.policy = Policy::kSrtfOracle;
  Plan plan = RunScheduler(c, {Lasting(Job(1, 1, 2, 0, 1), 120)}, config, Minutes(10));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].victim, 10);
  EXPECT_THAT(plan.preemptions[0].reason, ::testing::HasSubstr("srtf-oracle"));
  // A job with more left than either waits.
  EXPECT_TRUE(RunScheduler(c, {Lasting(Job(2, 1, 2, 0, 1), 1000)}, config, Minutes(10))
                  .preemptions.empty());
}

TEST(SrtfOracle, TakesFromAnotherTeamOnlyWhatItHoldsBeyondItsGuarantee) {
  SchedulerConfig config;
  config.policy = Policy::kSrtfOracle;
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 0, std::nullopt}};
  StartRunning(c, Lasting(Job(10, 1, 4, 0, 0, "vision"), 600), {"n-0"}, Minutes(0));
  // nlp's job has far less left, but vision holds only its guarantee: taken below it, vision
  // would reclaim at once, and the replay would never end.
  EXPECT_TRUE(RunScheduler(c, {Lasting(Job(1, 1, 4, 0, 1, "nlp"), 60)}, config, Minutes(10))
                  .preemptions.empty());
}

TEST(Oracle, ReservationsUseTrueEnds) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 2);
  // Declares 10 hours but truly ends at minute 30.
  StartRunning(c, Lasting(Job(10, 1, 2), 30), {"n-0"}, Minutes(0), Minutes(600));
  SchedulerConfig config;
  config.policy = Policy::kSjfOracle;
  Plan plan = RunScheduler(c, {Lasting(Job(1, 1, 2, 0, 1), 60)}, config, Minutes(0));
  ASSERT_NE(ReasonFor(plan, 1), nullptr);
  ASSERT_TRUE(ReasonFor(plan, 1)->reserved_start);
  EXPECT_EQ(*ReasonFor(plan, 1)->reserved_start, Minutes(30));
  config.policy = Policy::kFairShare;  // a real policy only knows the declared 10 hours
  plan = RunScheduler(c, {Lasting(Job(1, 1, 2, 0, 1), 60)}, config, Minutes(0));
  EXPECT_EQ(*ReasonFor(plan, 1)->reserved_start, Minutes(600));
}

TEST(Oracle, NamesAreReferences) {
  EXPECT_EQ(*ParsePolicy("sjf-oracle"), Policy::kSjfOracle);
  EXPECT_EQ(*ParsePolicy("srtf-oracle"), Policy::kSrtfOracle);
  EXPECT_TRUE(IsOracle(Policy::kSjfOracle));
  EXPECT_FALSE(IsOracle(Policy::kFairShare));
  EXPECT_FALSE(IsOracle(Policy::kLeastAttainedService));
}

}  // namespace
}  // namespace cohort::scheduler
