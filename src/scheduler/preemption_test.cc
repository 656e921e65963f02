// Priority preemption and quota reclaim: who is chosen, and who never is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(PriorityPreemption, HighPreemptsLowOfItsTeamOnlyWhereItHelps) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  // n-0: two low jobs of 2 GPUs; n-1: a low job of 4 GPUs and nothing else.
  StartRunning(c, Job(10, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(5));
  StartRunning(c, Job(12, 1, 4, -100, 0, "t"), {"n-1"}, Minutes(1));
  Timestamp now = Minutes(30);
  // A high job needing 2 GPUs: one victim is enough, the cheapest: least progress lost (11).
  Plan plan = RunScheduler(c, {Job(1, 1, 2, 100, 1, "t")}, {}, now);
  EXPECT_THAT(Victims(plan), ElementsAre(11));
  EXPECT_THAT(plan.preemptions[0].reason, HasSubstr("preempted by job 1 of higher priority"));
  EXPECT_THAT(plan.placements, IsEmpty()) << "it starts once the victim has stopped";
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("preempting job 11"));
  // A gang of 4 on one node: n-1's single job (12) costs one victim, n-0 would cost two.
  Plan gang = RunScheduler(c, {Job(2, 1, 4, 100, 1, "t")}, {}, now);
  EXPECT_THAT(Victims(gang), ElementsAre(12));
}

TEST(PriorityPreemption, NeverOtherTeamsOrEqualPriorityOrYoungJobs) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  StartRunning(c, Job(10, 1, 2, -100, 0, "other"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2, 100, 0, "t"), {"n-0"}, Minutes(0));
  Plan plan = RunScheduler(c, {Job(1, 1, 2, 100, 1, "t")}, WithoutLevels(), Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());

  ClusterSnapshot young;
  AddNodes(young, "n", 1, 2);
  StartRunning(young, Job(10, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(29) + Duration(1));
  Plan too_soon = RunScheduler(young, {Job(1, 1, 2, 100, 1, "t")}, WithoutLevels(), Minutes(30));
  EXPECT_THAT(too_soon.preemptions, IsEmpty()) << "ran less than the minimum run time";
  SchedulerConfig off = WithoutLevels();
  off.priority_preemption = false;
  EXPECT_THAT(RunScheduler(young, {Job(1, 1, 2, 100, 1, "t")}, off, Minutes(90)).preemptions,
              IsEmpty());
}

TEST(QuotaReclaim, TeamBelowGuaranteeTakesBackBorrowedGpus) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  // nlp borrows all 8 GPUs (4 beyond its guarantee).
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 4, 0, 0, "nlp"), {"n-1"}, Minutes(10));
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision")}, {}, Minutes(30));
  EXPECT_THAT(Victims(plan), ElementsAre(11));  // the one that loses least progress
  EXPECT_THAT(plan.preemptions[0].reason, HasSubstr("team vision reclaims"));
}

TEST(QuotaReclaim, ASweepTrialBeyondTheGuaranteeGoesBeforeAPlainJobOfTheSameSize) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  // nlp borrows 4 GPUs. Its trial started first: by progress lost alone job 11 would go.
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0)).sweep_trial = true;
  StartRunning(c, Job(11, 1, 4, 0, 0, "nlp"), {"n-1"}, Minutes(10));
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision")}, {}, Minutes(30));
  EXPECT_THAT(Victims(plan, PreemptionCause::kQuotaReclaim), ElementsAre(10));
}

TEST(QuotaReclaim, BorrowersThatSearchInVainDoNotUseUpTheSearchesOfAGuarantee) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  AddNodes(c, "m", 1, 1);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 0, std::nullopt},
             TeamQuota{"speech", 5, std::nullopt}};
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));  // borrows all 4
  StartRunning(c, Job(11, 1, 1, 0, 0, "speech"), {"m-0"}, Minutes(0));
  StartRunning(c, Job(12, 1, 4, 9, 0, "speech"), {"n-1"}, Minutes(0));
  // 20 jobs of speech, beyond its guarantee, of higher priority than one of its running jobs:
  // each looks for victims and finds too few. They were submitted first, and vision's first job
  // (a gang of 8) borrows, so they come before vision's job of 4, which is within vision's
  // guarantee and takes nlp's GPUs back.
  std::vector<PendingJob> pending;
  for (JobId id = 100; id < 120; ++id) pending.push_back(Job(id, 1, 4, 5, id, "speech"));
  pending.push_back(Job(1, 2, 4, 9, 200, "vision"));
  pending.push_back(Job(2, 1, 4, 0, 201, "vision"));
  Plan plan = RunScheduler(c, pending, WithoutLevels(), Minutes(30));
  EXPECT_THAT(Victims(plan), ElementsAre(10));
  ASSERT_FALSE(plan.preemptions.empty());
  EXPECT_EQ(plan.preemptions[0].for_job, 2);
}

TEST(QuotaReclaim, TheBurdenRotatesInsteadOfFallingOnTheLastRestarted) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));
  // Job 11 started last (least progress lost), but it has been preempted three times already.
  RunningJob& again = StartRunning(c, Job(11, 1, 4, 0, 0, "nlp"), {"n-1"}, Minutes(10));
  again.preemptions = 3;
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision")}, {}, Minutes(30));
  EXPECT_THAT(Victims(plan), ElementsAre(10));
}

TEST(QuotaReclaim, NotBeyondTheGuaranteeAndNotFromTeamsWithinTheirs) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 4, 0, 0, "vision"), {"n-1"}, Minutes(0));
  // vision already holds its 4: another 4 would be borrowing, which never preempts.
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision")}, WithoutLevels(), Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());
  // nlp holds exactly its guarantee: nobody may reclaim from it.
  ClusterSnapshot d;
  AddNodes(d, "n", 1, 4);
  d.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  StartRunning(d, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));
  EXPECT_THAT(
      RunScheduler(d, {Job(1, 1, 4, 0, 1, "vision")}, WithoutLevels(), Minutes(30)).preemptions,
      IsEmpty());
}

TEST(QuotaReclaim, OnlyWhileTheOtherTeamStillBorrows) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 4);
  c.teams = {TeamQuota{"vision", 8, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  // nlp holds 12 of the 12 GPUs, 8 beyond its guarantee, in three jobs.
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 4, 0, 0, "nlp"), {"n-1"}, Minutes(1));
  StartRunning(c, Job(12, 1, 4, 0, 0, "nlp"), {"n-2"}, Minutes(2));
  // Two vision jobs of 4 each take back 8 GPUs, the two newest: nlp keeps its 4.
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision"), Job(2, 1, 4, 0, 2, "vision")}, {},
                           Minutes(30));
  EXPECT_THAT(Victims(plan), ElementsAre(11, 12));
  // A third would take nlp below its guarantee, and vision beyond its own.
  Plan third = RunScheduler(
      c, {Job(1, 1, 4, 0, 1, "vision"), Job(2, 1, 4, 0, 2, "vision"), Job(3, 1, 4, 0, 3, "vision")},
      {}, Minutes(30));
  EXPECT_THAT(Victims(third), ElementsAre(11, 12));
}

TEST(QuotaReclaim, VictimsOnTheirWayOutAreNotReclaimedTwice) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  StartRunning(c, Job(10, 1, 4, 0, 0, "nlp"), {"n-0"}, Minutes(0));
  RunningJob& v = StartRunning(c, Job(11, 1, 4, 0, 0, "nlp"), {"n-1"}, Minutes(10));
  v.stopping = true;
  v.stopping_for = 1;
  // Job 1's claim counts as vision's: job 2 would go beyond vision's guarantee, and nlp, its
  // victim gone, no longer borrows. Nothing more is preempted.
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision"), Job(2, 1, 4, 0, 2, "vision")}, {},
                           Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("waiting for 1 stopping job"));
}

TEST(Preemption, WhatVictimsFreeGoesToTheJobTheyStoppedFor) {
  // The victim (10, submitted first) is back in the queue and, in FIFO order, ahead of the job
  // it was preempted for; the freed GPUs still go to job 1.
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  PendingJob victim = Job(10, 1, 4, -100, 0, "t");
  PendingJob claimant = Job(1, 1, 4, 100, 5, "t");
  claimant.preempted_for_it = true;
  SchedulerConfig fifo;
  fifo.policy = Policy::kFifo;
  for (SchedulerConfig config : {SchedulerConfig{}, fifo}) {
    Plan plan = RunScheduler(c, {victim, claimant}, config, Minutes(30));
    EXPECT_THAT(PlacedIds(plan), ElementsAre(1)) << PolicyName(config.policy);
  }
}

TEST(Preemption, WaitsForVictimsAlreadyStoppingInsteadOfChoosingMore) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  RunningJob& v = StartRunning(c, Job(10, 1, 4, -100, 0, "t"), {"n-0"}, Minutes(0));
  v.stopping = true;
  v.stopping_for = 1;
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 100, 1, "t")}, {}, Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("waiting for 1 stopping job"));
}

TEST(Preemption, WhatTheVictimsAreStoppedForIsNotTakenByALaterShortJob) {
  // Job 1 preempts job 10 and will use its 2 GPUs and the 2 free ones of n-0. A short job after
  // it in the order would fit on those 2 free GPUs and end long before any reservation; it
  // must wait, or job 1 would not fit once job 10 has stopped, and choose new victims.
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 4, 100, 0, "t"), {"n-1"}, Minutes(0));
  PendingJob short_job = Job(2, 1, 1, 0, 2, "t");
  short_job.max_runtime = std::chrono::minutes(5);
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 100, 1, "t"), short_job}, WithoutLevels(), Minutes(30));
  EXPECT_THAT(Victims(plan), ElementsAre(10));
  EXPECT_THAT(plan.placements, IsEmpty()) << "n-0's free GPUs are held for job 1";
  // The same while job 10 stops: job 1 waits for it and still holds them.
  c.running[0].stopping = true;
  c.running[0].stopping_for = 1;
  PendingJob claimant = Job(1, 1, 4, 100, 1, "t");
  claimant.preempted_for_it = true;
  Plan waiting = RunScheduler(c, {claimant, short_job}, WithoutLevels(), Minutes(30));
  EXPECT_THAT(ReasonFor(waiting, 1)->reason, HasSubstr("waiting for 1 stopping job"));
  EXPECT_THAT(waiting.placements, IsEmpty());
}

TEST(Preemption, NothingWhenEvenAllCandidatesWouldNotMakeRoom) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  StartRunning(c, Job(10, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2, 100, 0, "t"), {"n-0"}, Minutes(0));
  // Needs 4; only job 10 (2 GPUs) is of lower priority.
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 100, 1, "t")}, WithoutLevels(), Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());
}

}  // namespace
}  // namespace cohort::scheduler
