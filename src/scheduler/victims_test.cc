// The victim searches on their own (victims.h): who may be preempted, for which right, and what
// a search costs. preemption_test.cc tests the same rules through Scheduler::Schedule.
#include "scheduler/victims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/pass_test_fixture.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

std::vector<JobId> IdsOf(const std::vector<const RunningJob*>& jobs) {
  std::vector<JobId> ids;
  for (const RunningJob* r : jobs) ids.push_back(r->job_id);
  return ids;
}

// One node of 4 GPUs, two low-priority jobs of team t (10 started at minute 0, 11 at 5), and a
// job of team t that started half a minute ago (too young to preempt).
ClusterSnapshot LowPriority() {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 6);
  StartRunning(c, Job(10, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(5));
  StartRunning(c, Job(12, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(30) - std::chrono::seconds(30));
  return c;
}

TEST(VictimSearch, PreemptibleJobsAreByTeamAndYoungOnesApart) {
  ClusterSnapshot c = LowPriority();
  StartRunning(c, Job(20, 1, 0, 0, 0, "u"), {"n-0"}, Minutes(0)).stopping = true;
  PassHarness h(c, {Job(1, 1, 2, 100, 0, "t")}, {}, Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  std::vector<PreemptibleTeam>& teams = search.PreemptibleTeams();
  ASSERT_THAT(teams, SizeIs(1)) << "team u's only job is stopping already";
  EXPECT_EQ(teams[0].name, "t");
  ASSERT_THAT(teams[0].jobs, SizeIs(2));
  EXPECT_THAT(IdsOf(teams[0].young), ElementsAre(12));
  SortCheapestFirst(teams[0]);
  EXPECT_EQ(teams[0].jobs[0].job->job_id, 11) << "it loses least progress";
}

TEST(VictimSearch, HigherPriorityPreemptsTheCheapestJobOfItsTeamAndLooksAgainForTheYoung) {
  PassHarness h(LowPriority(), {Job(1, 1, 2, 100, 0, "t"), Job(2, 1, 2, 100, 0, "t")}, {},
                Minutes(30));
  Levels levels(h.state);
  levels.Read();
  VictimSearch search(h.state, levels);
  PreemptionRights rights = search.RightsOf(h.job(0));
  EXPECT_TRUE(rights.by_priority);
  EXPECT_FALSE(rights.by_reclaim);
  EXPECT_THAT(IdsOf(search.FindCandidates(h.job(0), rights).jobs), ElementsAre(11, 10));
  EXPECT_EQ(h.state.plan.recheck_at, Minutes(30) + std::chrono::seconds(30))
      << "when job 12 may be preempted";

  ASSERT_TRUE(search.TryPreemption(h.job(0)));
  ASSERT_THAT(h.state.plan.preemptions, SizeIs(1));
  EXPECT_EQ(h.state.plan.preemptions[0].victim, 11);
  EXPECT_EQ(h.state.plan.preemptions[0].cause, PreemptionCause::kPriority);
  EXPECT_THAT(h.state.plan.waiting[0].reason, HasSubstr("preempting job 11"));
  EXPECT_EQ(h.state.earliest_reservation, Minutes(30)) << "it claims where it will start";
  EXPECT_EQ(h.state.preemption_searches, 1);
  // A victim is chosen once: the next job looks only at the rest.
  EXPECT_THAT(IdsOf(search.FindCandidates(h.job(1), search.RightsOf(h.job(1))).jobs),
              ElementsAre(10));
}

TEST(VictimSearch, NoSearchBeyondThePassBudget) {
  PassHarness h(LowPriority(), {Job(1, 1, 2, 100, 0, "t")}, {}, Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  h.state.preemption_searches = kMaxPreemptionSearches;
  EXPECT_FALSE(search.TryPreemption(h.job(0)));
  EXPECT_THAT(h.state.plan.preemptions, IsEmpty());
}

TEST(VictimSearch, ReclaimTakesOnlyWhatABorrowerHoldsBeyondItsGuarantee) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"a", 4, std::nullopt}, TeamQuota{"b", 4, std::nullopt}};
  StartRunning(c, Job(20, 1, 2, 0, 0, "b"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(21, 1, 2, 0, 0, "b"), {"n-0"}, Minutes(5));
  StartRunning(c, Job(22, 1, 2, 0, 0, "b"), {"n-0"}, Minutes(10));
  PassHarness h(c, {Job(1, 1, 4, 0, 0, "a")}, WithoutLevels(), Minutes(30));
  EXPECT_TRUE(h.state.any_team_borrows);
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  PreemptionRights rights = search.RightsOf(h.job(0));
  EXPECT_TRUE(rights.within_guarantee);
  EXPECT_TRUE(rights.by_reclaim);
  VictimSearch::Candidates candidates = search.FindCandidates(h.job(0), rights);
  EXPECT_THAT(IdsOf(candidates.jobs), ElementsAre(22)) << "team b borrows 2 GPUs, no more";
  EXPECT_THAT(candidates.reclaimed, ElementsAre(22));

  ASSERT_TRUE(search.TryPreemption(h.job(0)));
  ASSERT_THAT(h.state.plan.preemptions, SizeIs(1));
  EXPECT_EQ(h.state.plan.preemptions[0].cause, PreemptionCause::kQuotaReclaim);
  EXPECT_EQ(h.state.plan.preemptions[0].reason, ReclaimReason(h.job(0), h.cluster.running[2]));
  EXPECT_EQ(h.state.guarantee_searches, 1) << "reclaim has searches of its own";
  EXPECT_EQ(h.state.preemption_searches, 0);
  EXPECT_EQ(h.state.Entitled("b"), 4) << "what it gives back is gone";
  EXPECT_EQ(h.state.Entitled("a"), 4) << "and the job it stops for counts as holding it";
}

// Team b borrows beyond its guarantee of 0 with a sweep trial (20, started first, so it would
// lose the most progress) and a plain job (21) of the same size; team a reclaims 4 GPUs.
TEST(VictimSearch, ReclaimTakesASweepTrialBeforeAPlainJobOfTheSameSize) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"a", 4, std::nullopt}, TeamQuota{"b", 0, std::nullopt}};
  StartRunning(c, Job(20, 1, 4, 0, 0, "b"), {"n-0"}, Minutes(0)).sweep_trial = true;
  StartRunning(c, Job(21, 1, 4, 0, 0, "b"), {"n-0"}, Minutes(5));
  PassHarness h(c, {Job(1, 1, 4, 0, 0, "a")}, WithoutLevels(), Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  PreemptionRights rights = search.RightsOf(h.job(0));
  ASSERT_TRUE(rights.by_reclaim);
  EXPECT_THAT(IdsOf(search.FindCandidates(h.job(0), rights).jobs), ElementsAre(20, 21));
  ASSERT_TRUE(search.TryPreemption(h.job(0)));
  ASSERT_THAT(h.state.plan.preemptions, SizeIs(1));
  EXPECT_EQ(h.state.plan.preemptions[0].victim, 20) << "the trial's GPUs, not the plain job's";
  EXPECT_EQ(h.state.plan.preemptions[0].cause, PreemptionCause::kQuotaReclaim);
}

// Team b runs a sweep trial within its guarantee (the newest job, so the cheapest by progress
// lost); team c borrows with a plain job. Reclaim takes only from c.
TEST(VictimSearch, ASweepTrialWithinItsTeamsGuaranteeIsNotReclaimed) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"a", 4, std::nullopt}, TeamQuota{"b", 4, std::nullopt},
             TeamQuota{"c", 0, std::nullopt}};
  StartRunning(c, Job(30, 1, 4, 0, 0, "c"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(20, 1, 4, 0, 0, "b"), {"n-0"}, Minutes(5)).sweep_trial = true;
  PassHarness h(c, {Job(1, 1, 4, 0, 0, "a")}, WithoutLevels(), Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  PreemptionRights rights = search.RightsOf(h.job(0));
  ASSERT_TRUE(rights.by_reclaim);
  EXPECT_THAT(IdsOf(search.FindCandidates(h.job(0), rights).jobs), ElementsAre(30));
  ASSERT_TRUE(search.TryPreemption(h.job(0)));
  ASSERT_THAT(h.state.plan.preemptions, SizeIs(1));
  EXPECT_EQ(h.state.plan.preemptions[0].victim, 30);
}

// Team t (guarantee 4) holds 6 GPUs: trials 10 (minute 0) and 12 (minute 2), plain job 11
// (minute 5), 2 GPUs each, all of low priority. It borrows 2 GPUs: the cheaper trial, 12, is
// what it borrows and goes first for a job of higher priority; trial 10, within the guarantee,
// keeps its place by progress lost.
TEST(VictimSearch, PriorityTakesTrialsBeyondTheGuaranteeFirstAndOnlyThose) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 6);
  c.teams = {TeamQuota{"t", 4, std::nullopt}};
  StartRunning(c, Job(10, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(0)).sweep_trial = true;
  StartRunning(c, Job(12, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(2)).sweep_trial = true;
  StartRunning(c, Job(11, 1, 2, -100, 0, "t"), {"n-0"}, Minutes(5));
  PassHarness h(c, {Job(1, 1, 2, 100, 0, "t")}, WithoutLevels(), Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  PreemptionRights rights = search.RightsOf(h.job(0));
  ASSERT_TRUE(rights.by_priority);
  EXPECT_THAT(IdsOf(search.FindCandidates(h.job(0), rights).jobs), ElementsAre(12, 11, 10));

  // Within its guarantee, none of them is beyond it: the usual order.
  c.teams = {TeamQuota{"t", 6, std::nullopt}};
  PassHarness within(c, {Job(1, 1, 2, 100, 0, "t")}, WithoutLevels(), Minutes(30));
  Levels within_levels(within.state);
  VictimSearch within_search(within.state, within_levels);
  EXPECT_THAT(
      IdsOf(
          within_search.FindCandidates(within.job(0), within_search.RightsOf(within.job(0))).jobs),
      ElementsAre(11, 12, 10));
}

TEST(VictimSearch, AJobWaitsForWhatStopsForIt) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  RunningJob& stopping = StartRunning(c, Job(10, 1, 4), {"n-0"}, Minutes(0));
  stopping.stopping = true;
  stopping.stopping_for = 1;
  PassHarness h(c, {Job(1, 1, 4), Job(2, 1, 4)}, {}, Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  EXPECT_FALSE(search.WaitForStopping(h.job(1))) << "it stops for job 1";
  EXPECT_EQ(h.state.preemption_searches, 0) << "told without a search";
  ASSERT_TRUE(search.WaitForStopping(h.job(0)));
  EXPECT_THAT(h.state.plan.waiting[0].reason, HasSubstr("waiting for 1 stopping job"));
  EXPECT_EQ(h.state.earliest_reservation, Minutes(30));
  EXPECT_EQ(h.state.preemption_searches, 1);
  EXPECT_THAT(h.state.plan.preemptions, IsEmpty());
}

}  // namespace
}  // namespace cohort::scheduler
