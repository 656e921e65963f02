// Moving jobs (docs/scheduler.md, "Moving jobs"): a job within its team's guarantee that finds
// enough GPUs free, but scattered, moves smaller jobs elsewhere instead of waiting for a node to
// drain.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/moving.h"
#include "scheduler/pass_test_fixture.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

// Two nodes of 4 GPUs, each with one 1-GPU job of team "small": 6 GPUs free, 3 on each node.
ClusterSnapshot Scattered() {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"small", 4, std::nullopt}, TeamQuota{"big", 4, std::nullopt}};
  StartRunning(c, Job(10, 1, 1, 0, 0, "small"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 1, 0, 0, "small"), {"n-1"}, Minutes(5));
  return c;
}

TEST(Moving, AJobWithinItsGuaranteeMovesASmallerJobOutOfTheWay) {
  ClusterSnapshot c = Scattered();
  Timestamp now = Minutes(30);
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "big")}, {}, now);
  ASSERT_EQ(plan.preemptions.size(), 1u) << "one move makes a node whole";
  EXPECT_EQ(plan.preemptions[0].victim, 11) << "the one that loses least progress";
  EXPECT_EQ(plan.preemptions[0].cause, PreemptionCause::kMove);
  EXPECT_THAT(plan.preemptions[0].reason, HasSubstr("moved for job 1 of team big"));
  EXPECT_THAT(plan.placements, IsEmpty()) << "it starts once the moved job has stopped";
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("moving job 11"));
}

TEST(Moving, OnlyAfterWaitingMoveAfterAndLooksAgainThen) {
  ClusterSnapshot c = Scattered();
  Timestamp now = Minutes(30);
  int64_t submitted = ToMicros(now - std::chrono::seconds(30));
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, submitted, "big")}, {}, now);
  EXPECT_THAT(plan.preemptions, IsEmpty());
  ASSERT_TRUE(plan.recheck_at.has_value());
  EXPECT_EQ(*plan.recheck_at, FromMicros(submitted) + std::chrono::minutes(1));

  SchedulerConfig never;
  never.move_after.reset();
  EXPECT_THAT(RunScheduler(c, {Job(1, 1, 4, 0, 1, "big")}, never, now).preemptions, IsEmpty());
}

TEST(Moving, NeverBeyondTheGuaranteeNorForOneGpuNorUnderOtherPolicies) {
  ClusterSnapshot c = Scattered();
  Timestamp now = Minutes(30);
  ClusterSnapshot beyond = c;
  beyond.teams[1].guaranteed_gpus = 2;
  EXPECT_THAT(RunScheduler(beyond, {Job(1, 1, 4, 0, 1, "big")}, {}, now).preemptions, IsEmpty())
      << "a job beyond its team's guarantee borrows, and borrowing never preempts";
  SchedulerConfig fifo;
  fifo.policy = Policy::kFifo;
  EXPECT_THAT(RunScheduler(c, {Job(1, 1, 4, 0, 1, "big")}, fifo, now).preemptions, IsEmpty());
  // Nodes full but for one GPU each: a 1-GPU job fits anywhere and never moves others.
  ClusterSnapshot full = c;
  Occupy(full, "n-0", 2);
  Occupy(full, "n-1", 2);
  Plan one = RunScheduler(full, {Job(1, 1, 1, 0, 1, "big")}, {}, now);
  EXPECT_THAT(one.preemptions, IsEmpty());
  EXPECT_THAT(PlacedIds(one), ElementsAre(1));
}

TEST(Moving, NotAJobThatHasNowhereElseToGo) {
  ClusterSnapshot c = Scattered();
  c.nodes[0].labels["rack"] = "a";
  c.nodes[1].labels["rack"] = "b";
  c.running[0].constraints.labels["rack"] = "a";
  c.running[1].constraints.labels["rack"] = "b";
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "big")}, {}, Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty()) << "each small job may run only where it is";
}

TEST(Moving, NeverIntoWhatIsHeldForTheMoversOwnTeam) {
  // One team, one node of 8 GPUs. Job 1 (6 GPUs, first in the order) holds the 2 free GPUs for
  // its reservation at job 12's end. Job 2 (2 GPUs) could take 10's and 11's GPUs, but the two
  // could then go only where job 1's reservation is: its team's order stands.
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"t", 8, std::nullopt}};
  StartRunning(c, Job(10, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(5));
  StartRunning(c, Job(12, 1, 4, 0, 0, "t"), {"n-0"}, Minutes(0), Minutes(90));
  Plan plan = RunScheduler(c, {Job(1, 1, 6, 0, 1, "t"), Job(2, 1, 2, 0, 2, "t")}, WithoutLevels(),
                           Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());
  EXPECT_THAT(PlacedIds(plan), IsEmpty());
}

TEST(Moving, NotJobsAsLargeAsTheMover) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"small", 4, std::nullopt}, TeamQuota{"big", 4, std::nullopt}};
  StartRunning(c, Job(10, 1, 2, 0, 0, "small"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2, 0, 0, "small"), {"n-1"}, Minutes(5));
  EXPECT_THAT(RunScheduler(c, {Job(1, 1, 2, 0, 1, "big")}, {}, Minutes(30)).preemptions, IsEmpty())
      << "fits as it is";
  ClusterSnapshot odd = c;
  Occupy(odd, "n-0", 1);
  Occupy(odd, "n-1", 1);
  // One GPU free on each node: a job of 2 could move neither job of 2.
  EXPECT_THAT(RunScheduler(odd, {Job(1, 1, 2, 0, 1, "big")}, {}, Minutes(30)).preemptions,
              IsEmpty());
}

TEST(Moving, TakesBackFromBorrowersFirstAndFindsTheMovedJobRoomTheSameWay) {
  // Three nodes of 4 GPUs. Team small holds 1 GPU on each; team lender, guaranteed 4, borrows
  // the 9 others in 1-GPU jobs, those on n-1 started last. Taking back 3 on one node leaves
  // small's job in the way: it moves, and one more borrowed GPU elsewhere makes its room.
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 4);
  c.teams = {TeamQuota{"small", 3, std::nullopt}, TeamQuota{"lender", 4, std::nullopt},
             TeamQuota{"big", 4, std::nullopt}};
  JobId id = 10;
  for (int n = 0; n < 3; ++n) {
    std::string node = "n-" + std::to_string(n);
    StartRunning(c, Job(id++, 1, 1, 0, 0, "small"), {node}, Minutes(0));
    for (int k = 0; k < 3; ++k) {
      StartRunning(c, Job(id++, 1, 1, 0, 0, "lender"), {node}, Minutes(n == 1 ? 10 + k : k));
    }
  }
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "big")}, {}, Minutes(30));
  // n-1 holds small's 14 and lender's 15, 16, 17.
  EXPECT_THAT(Victims(plan, PreemptionCause::kMove), ElementsAre(14));
  std::vector<JobId> reclaimed = Victims(plan, PreemptionCause::kQuotaReclaim);
  ASSERT_EQ(reclaimed.size(), 4u) << "n-1's three, and one for the moved job";
  EXPECT_THAT(std::vector<JobId>(reclaimed.begin(), reclaimed.begin() + 3),
              ElementsAre(15, 16, 17));
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("moving jobs"));
  for (const auto& p : plan.preemptions) {
    if (p.cause == PreemptionCause::kQuotaReclaim) {
      EXPECT_THAT(p.reason, HasSubstr("team big reclaims"));
    }
  }
}

// Four full nodes of 4 GPUs. Team lender, guaranteed 4, holds 6: a 2-GPU job (10) on n-0 beside
// team other's 2-GPU job (11), and a 4-GPU job (12) alone on n-1; other, within its guarantee,
// also holds n-2 (13), and something outside holds n-3. Team big is guaranteed 4 and holds none.
ClusterSnapshot LenderBorrowsBesideAndAlone() {
  ClusterSnapshot c;
  AddNodes(c, "n", 4, 4);
  c.teams = {TeamQuota{"lender", 4, std::nullopt}, TeamQuota{"other", 6, std::nullopt},
             TeamQuota{"big", 4, std::nullopt}};
  Occupy(c, "n-3", 4);
  StartRunning(c, Job(10, 1, 2, 0, 0, "lender"), {"n-0"}, Minutes(20));
  StartRunning(c, Job(11, 1, 2, 0, 0, "other"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(12, 1, 4, 0, 0, "lender"), {"n-1"}, Minutes(0));
  StartRunning(c, Job(13, 1, 4, 0, 0, "other"), {"n-2"}, Minutes(0));
  return c;
}

TEST(Moving, TakesBackFirstWhatLeavesANodeEmpty) {
  // Four full nodes of 4 GPUs. Team lender, guaranteed 4, holds 6: a 2-GPU job on n-0 beside
  // team other's 2-GPU job, and a 4-GPU job alone on n-1; other, within its guarantee, also
  // holds n-2, and something outside holds n-3. Big's 4-GPU job needs a whole node. Taking back
  // lender's cheapest job (the 2 on n-0, started last) would leave other's job to move, and
  // there is nowhere to move it to: what empties n-1 goes first, although it costs more.
  ClusterSnapshot c = LenderBorrowsBesideAndAlone();
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "big")}, {}, Minutes(30));
  EXPECT_THAT(Victims(plan, PreemptionCause::kQuotaReclaim), ElementsAre(12));
  EXPECT_THAT(Victims(plan, PreemptionCause::kMove), IsEmpty());
}

TEST(Moving, LooksForCandidatesAtMost16TimesAPass) {
  // 16 teams, each with a gang of 8 GPUs within its guarantee, for the two nodes of rack x,
  // which something outside holds: each looks for jobs to move (a walk over the running jobs)
  // and finds too few. Those looks use up the pass's searches: zz's job, which could move one,
  // waits for the next pass.
  ClusterSnapshot c = Scattered();
  AddNodes(c, "x", 2, 4);
  for (auto& n : c.nodes) {
    if (n.node_id.starts_with("x-")) n.labels["rack"] = "x";
  }
  Occupy(c, "x-0", 4);
  Occupy(c, "x-1", 4);
  std::vector<PendingJob> pending;
  for (int t = 0; t < 16; ++t) {
    std::string team = "t" + std::to_string(t);
    c.teams.push_back(TeamQuota{team, 8, std::nullopt});
    PendingJob gang = Job(100 + t, 2, 4, 0, 1, team);
    gang.constraints.labels["rack"] = "x";
    pending.push_back(gang);
  }
  // Teams equally behind go by name: "zz" comes after the 16.
  c.teams.push_back(TeamQuota{"zz", 4, std::nullopt});
  pending.push_back(Job(1, 1, 4, 0, 1, "zz"));
  EXPECT_THAT(RunScheduler(c, pending, {}, Minutes(30)).preemptions, IsEmpty());
  // With one gang fewer, a search is left for it.
  pending.erase(pending.begin());
  EXPECT_THAT(Victims(RunScheduler(c, pending, {}, Minutes(30)), PreemptionCause::kMove),
              ElementsAre(11));
}

// The stage's own functions (moving.h).

TEST(Moving, MayMoveOnlyWithinTheGuaranteeAfterMoveAfterAndForTwoGpusOrMore) {
  PassHarness h(Scattered(), {Job(1, 1, 4, 0, 1, "big"), Job(2, 1, 1, 0, 1, "big")}, {},
                Minutes(30));
  EXPECT_FALSE(MayMove(h.state, h.job(0))) << "not known to be within its guarantee";
  h.state.within_guarantee = true;  // as Pass::Consider finds
  EXPECT_TRUE(MayMove(h.state, h.job(0)));
  EXPECT_FALSE(MayMove(h.state, h.job(1))) << "one GPU fits anywhere";

  PassHarness soon(Scattered(), {Job(1, 1, 4, 0, ToMicros(Minutes(29) + Duration(1)), "big")}, {},
                   Minutes(30));
  soon.state.within_guarantee = true;
  EXPECT_FALSE(MayMove(soon.state, soon.job(0))) << "it has waited less than a minute";

  SchedulerConfig las;
  las.policy = Policy::kLeastAttainedService;
  PassHarness other(Scattered(), {Job(1, 1, 4, 0, 1, "big")}, las, Minutes(30));
  other.state.within_guarantee = true;
  EXPECT_FALSE(MayMove(other.state, other.job(0))) << "the default policy's rule only";
}

TEST(Moving, CandidatesAreBorrowersThatEmptyANodeThenOthersThenSmallerJobsToMove) {
  // As in TakesBackFirstWhatLeavesANodeEmpty: lender borrows 2 GPUs, in job 10 (2 GPUs beside
  // other's 11 on n-0) and job 12 (alone on n-1).
  ClusterSnapshot c = LenderBorrowsBesideAndAlone();
  PassHarness h(c, {Job(1, 1, 4, 0, 1, "big")}, {}, Minutes(30));
  Levels levels(h.state);
  VictimSearch search(h.state, levels);
  Moving moving(h.state, search);
  MoveCandidates candidates = moving.FindMoveCandidates(h.job(0), 4);
  std::vector<JobId> ids;
  for (const RunningJob* r : candidates.jobs) ids.push_back(r->job_id);
  // 12 empties n-1 and takes lender to its guarantee: 10 is not taken back. Other's 11 is
  // smaller than the mover; its 13 is not.
  EXPECT_THAT(ids, ElementsAre(12, 11));
  EXPECT_THAT(candidates.reclaimed, ElementsAre(12));
  EXPECT_EQ(candidates.reclaimed_gpus, 4);
}

TEST(Moving, RoomElsewhereOnlyWhereTheMovedJobMayRun) {
  for (bool pinned : {false, true}) {
    ClusterSnapshot c = Scattered();
    if (pinned) {
      c.nodes[1].labels["rack"] = "b";
      c.running[1].constraints.labels["rack"] = "b";
    }
    PassHarness h(c, {Job(1, 1, 4, 0, 1, "big")}, {}, Minutes(30));
    Levels levels(h.state);
    VictimSearch search(h.state, levels);
    Moving moving(h.state, search);
    const RunningJob* job11 = &h.cluster.running[1];  // on n-1
    MoveCandidates candidates;
    candidates.jobs = {job11};
    std::vector<const RunningJob*> victims = {job11};
    std::vector<TaskPlacement> n1 = {TaskPlacement{"n-1", {0, 1, 2, 3}}};
    EXPECT_EQ(moving.RoomElsewhere(h.job(0), n1, candidates, victims), !pinned)
        << (pinned ? "job 11 may run on n-1 only" : "n-0 has room for job 11");
    EXPECT_EQ(h.state.free.free_gpus(), 6) << "a what-if: nothing changed";
  }
}

}  // namespace
}  // namespace cohort::scheduler
