// Decisions between full passes: arrivals and releases against the residue of the last pass.
#include "scheduler/incremental.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

PassResidue FullPass(const ClusterSnapshot& c, const std::vector<PendingJob>& pending,
                     Timestamp now, Plan* plan = nullptr, SchedulerConfig config = {}) {
  PassResidue residue;
  Plan p = NewScheduler(config)->Schedule(SchedulingInput{c, pending, now}, residue);
  if (plan) *plan = std::move(p);
  return residue;
}

TEST(Incremental, ArrivalTakesFreeGpusOnce) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  PassResidue r = FullPass(c, {}, Minutes(0));
  std::string reason;
  auto a = DecideArrival(r, Job(1, 1, 3), Minutes(0), &reason);
  ASSERT_TRUE(a);
  EXPECT_THAT((*a)[0].gpus, ElementsAre(0, 1, 2));
  auto b = DecideArrival(r, Job(2, 1, 2), Minutes(0), &reason);
  EXPECT_FALSE(b) << "only 1 GPU is left";
  EXPECT_THAT(reason, ::testing::HasSubstr("1 GPUs free"));
  ASSERT_EQ(r.queue.size(), 1u);
  EXPECT_EQ(r.queue[0].job_id, 2);
}

TEST(Incremental, ArrivalNeverTakesWhatIsHeldForAJobWaitingForItsVictims) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  StartRunning(c, Job(10, 1, 2, -100, 0), {"n-0"}, Minutes(0));
  Plan plan;
  PassResidue r = FullPass(c, {Job(1, 1, 4, 100, 1)}, Minutes(30), &plan, WithoutLevels());
  ASSERT_EQ(plan.preemptions.size(), 1u);
  // However short, an arrival does not take the 2 free GPUs job 1 will use once job 10 stops.
  PendingJob short_job = Job(2, 1, 1);
  short_job.max_runtime = std::chrono::minutes(1);
  EXPECT_FALSE(DecideArrival(r, short_job, Minutes(30), nullptr));
}

TEST(Incremental, ArrivalNeverTakesWhatIsHeldForAReservation) {
  ClusterSnapshot c;
  AddNodes(c, "big", 1, 8);
  AddNodes(c, "small", 1, 4);
  StartRunning(c, Job(10, 1, 6), {"big-0"}, Minutes(0), Minutes(60));
  // An 8-GPU job waits for minute 60 on big-0 and holds its 2 free GPUs meanwhile.
  Plan plan;
  PassResidue r = FullPass(c, {Job(1, 1, 8)}, Minutes(1), &plan);
  ASSERT_TRUE(ReasonFor(plan, 1)->reserved_start.has_value());
  // Endless 2-GPU jobs may only use small-0.
  for (JobId id : {2, 3}) {
    auto a = DecideArrival(r, Job(id, 1, 2), Minutes(1), nullptr);
    ASSERT_TRUE(a);
    EXPECT_EQ((*a)[0].node_id, "small-0");
  }
  EXPECT_FALSE(DecideArrival(r, Job(4, 1, 2), Minutes(1), nullptr)) << "big-0's GPUs are held";
  // A job that ends before the reservation begins may use them.
  PendingJob short_job = Job(5, 1, 2);
  short_job.max_runtime = std::chrono::minutes(30);
  auto s = DecideArrival(r, short_job, Minutes(1), nullptr);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)[0].node_id, "big-0");
}

TEST(Incremental, ReleaseStartsWaitingJobsInOrderAndKeepsHeldGpusForTheirJob) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  PendingJob running = Job(10, 1, 4);
  StartRunning(c, running, {"n-0"}, Minutes(0));
  std::vector<PendingJob> waiting = {Job(1, 1, 2, 0, 1), Job(2, 1, 1, 0, 2), Job(3, 1, 2, 0, 3)};
  PassResidue r = FullPass(c, waiting, Minutes(1));
  auto lookup = [&](JobId id) -> const PendingJob* {
    for (const auto& j : waiting) {
      if (j.job_id == id) return &j;
    }
    return nullptr;
  };
  auto started =
      DecideAfterRelease(r, "default", running.tasks, c.running[0].placement, lookup, Minutes(2));
  std::vector<JobId> ids;
  for (const auto& p : started) ids.push_back(p.job_id);
  EXPECT_THAT(ids, ElementsAre(1, 2)) << "2 + 1 of 4 GPUs; job 3 (2 GPUs) does not fit in 1";
  EXPECT_EQ(r.free.free_gpus(), 1);
  auto again = DecideAfterRelease(r, "default", {}, {}, lookup, Minutes(2));
  EXPECT_THAT(again, IsEmpty());
}

// A cluster of 1 to 6 nodes of 4 GPUs, running the random jobs (ids from `next` on) that the
// scheduler placed on it one by one.
template <typename Uniform>
ClusterSnapshot RandomBusyCluster(Uniform& uniform, JobId& next) {
  ClusterSnapshot c;
  AddNodes(c, "n", uniform(1, 6), 4);
  for (int k = 0; k < uniform(0, 8); ++k) {
    PendingJob j = Job(next++, uniform(1, 2), uniform(0, 4));
    auto placed = NewScheduler()->Schedule(SchedulingInput{c, {j}, Minutes(0)}).placements;
    if (placed.empty()) continue;
    std::vector<std::string> where;
    for (const auto& t : placed[0].tasks) where.push_back(t.node_id);
    StartRunning(c, j, where, Minutes(0));
  }
  return c;
}

// Which running job holds each GPU (node, GPU).
std::map<std::pair<std::string, int>, JobId> OwnersOf(const ClusterSnapshot& c) {
  std::map<std::pair<std::string, int>, JobId> owner;
  for (const auto& run : c.running) {
    for (const auto& p : run.placement) {
      for (int g : p.gpus) owner[{p.node_id, g}] = run.job_id;
    }
  }
  return owner;
}

// Over random clusters and random sequences of arrivals and releases, incremental decisions
// never give a GPU twice nor a busy one.
TEST(Incremental, RandomSequencesStaySafe) {
  std::mt19937_64 rng(20261122);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 300; ++round) {
    JobId next = 1;
    ClusterSnapshot c = RandomBusyCluster(uniform, next);
    std::vector<PendingJob> pending;
    for (int k = 0; k < uniform(0, 6); ++k)
      pending.push_back(Job(next++, uniform(1, 3), uniform(1, 4)));
    Plan first;
    PassResidue r = FullPass(c, pending, Minutes(1), &first);
    // Who holds each GPU, as the test sees it.
    std::map<std::pair<std::string, int>, JobId> owner = OwnersOf(c);
    std::map<JobId, std::pair<PendingJob, std::vector<TaskPlacement>>> live;
    for (const auto& run : c.running) {
      PendingJob j = Job(run.job_id, 1, 0);
      j.tasks = run.tasks;
      live[run.job_id] = {j, run.placement};
    }
    auto record = [&](JobId id, const std::vector<TaskPlacement>& p) {
      for (const auto& t : p) {
        for (int g : t.gpus) {
          ASSERT_FALSE(owner.count({t.node_id, g})) << "GPU given twice, round " << round;
          owner[{t.node_id, g}] = id;
        }
      }
    };
    std::map<JobId, PendingJob> queued;
    for (const auto& p : pending) queued[p.job_id] = p;
    for (const auto& p : first.placements) {
      record(p.job_id, p.tasks);
      live[p.job_id] = {queued[p.job_id], p.tasks};
      queued.erase(p.job_id);
    }
    for (int step = 0; step < 20; ++step) {
      if (uniform(0, 1) == 0) {
        PendingJob j = Job(next++, uniform(1, 2), uniform(0, 4));
        if (auto p = DecideArrival(r, j, Minutes(2), nullptr)) {
          record(j.job_id, *p);
          live[j.job_id] = {j, *p};
        } else {
          queued[j.job_id] = j;
        }
      } else if (!live.empty()) {
        auto it = live.begin();
        std::advance(it, uniform(0, static_cast<int>(live.size()) - 1));
        for (const auto& t : it->second.second) {
          for (int g : t.gpus) owner.erase({t.node_id, g});
        }
        auto started = DecideAfterRelease(
            r, "default", it->second.first.tasks, it->second.second,
            [&](JobId id) -> const PendingJob* {
              auto q = queued.find(id);
              return q == queued.end() ? nullptr : &q->second;
            },
            Minutes(2));
        live.erase(it);
        for (const auto& s : started) {
          record(s.job_id, s.tasks);
          live[s.job_id] = {queued[s.job_id], s.tasks};
          queued.erase(s.job_id);
        }
      }
      ASSERT_EQ(r.free.free_gpus() + static_cast<int64_t>(owner.size()),
                static_cast<int64_t>(c.nodes.size()) * 4)
          << "the residue's free GPUs and the holders disagree, round " << round;
    }
  }
}

}  // namespace
}  // namespace cohort::scheduler
