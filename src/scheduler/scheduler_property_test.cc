// Properties of the scheduler over thousands of random clusters and job mixes. The seed is
// printed; COHORT_SEED=<n> replays one.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "common/strings.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

uint64_t Seed() {
  const char* env = std::getenv("COHORT_SEED");
  if (!env) return 20261122;
  auto seed = ParseInteger(env, 0, std::numeric_limits<int64_t>::max());
  if (!seed) {
    std::fprintf(stderr, "COHORT_SEED: \"%s\" is not a seed (a non-negative integer)\n", env);
    std::abort();
  }
  return static_cast<uint64_t>(*seed);
}

const std::vector<std::string> kTeams = {"vision", "nlp", "speech"};

// A random cluster with some jobs running, some stopping, and a random queue.
struct Scenario {
  ClusterSnapshot cluster;
  std::vector<PendingJob> pending;
  SchedulerConfig config;
  Timestamp now = Minutes(100);
};

Scenario RandomScenario(std::mt19937_64& rng) {
  Scenario s;
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int nodes = uniform(1, 12);
  int gpus_per_node = std::vector<int>{2, 4, 8}[static_cast<size_t>(uniform(0, 2))];
  AddNodes(s.cluster, "n", nodes, gpus_per_node, 32, 256);
  for (auto& n : s.cluster.nodes) {
    n.gpu_model = uniform(0, 2) ? "H100" : "A100";
    n.labels = {{"rack", "r" + std::to_string(uniform(0, 2))}};
  }
  int total = nodes * gpus_per_node;
  for (const auto& team : kTeams) {
    TeamQuota q{team, uniform(0, total / 2), std::nullopt};
    if (uniform(0, 3) == 0) q.max_gpus = q.guaranteed_gpus + uniform(0, total);
    s.cluster.teams.push_back(q);
  }
  auto random_job = [&](JobId id) {
    int size = uniform(0, 9) < 7 ? 1 : uniform(2, 4);
    int gpus = std::min(gpus_per_node,
                        std::vector<int>{0, 1, 1, 2, 4, 8}[static_cast<size_t>(uniform(0, 5))]);
    PendingJob j =
        Job(id, size, gpus, std::vector<int>{-100, 0, 0, 100}[static_cast<size_t>(uniform(0, 3))],
            uniform(0, 100) * 60'000'000LL, kTeams[static_cast<size_t>(uniform(0, 2))],
            "user" + std::to_string(uniform(0, 3)));
    if (uniform(0, 1)) j.max_runtime = std::chrono::minutes(uniform(1, 120));
    j.attained = std::chrono::minutes(uniform(0, 300));
    if (uniform(0, 5) == 0) j.constraints.gpu_model = uniform(0, 1) ? "H100" : "A100";
    if (uniform(0, 5) == 0) j.constraints.labels = {{"rack", "r" + std::to_string(uniform(0, 3))}};
    return j;
  };
  // Fill part of the cluster with running jobs, placed by the scheduler itself.
  JobId next_id = 1000;
  for (int k = 0; k < uniform(0, 12); ++k) {
    PendingJob j = random_job(next_id++);
    auto placed = RunScheduler(s.cluster, {j}, {}, Minutes(uniform(0, 99))).placements;
    if (placed.empty()) continue;
    std::vector<std::string> where;
    for (const auto& t : placed[0].tasks) where.push_back(t.node_id);
    RunningJob& r = StartRunning(s.cluster, j, where, Minutes(uniform(0, 99)));
    if (j.max_runtime) r.ends_by = r.started_at + *j.max_runtime;
    r.stopping = uniform(0, 7) == 0;
    if (r.stopping && uniform(0, 1)) r.stopping_for = uniform(1, 30);  // maybe a pending job
    r.preemptions = uniform(0, 3);
    r.task_started.assign(r.tasks.size(), r.started_at);
    if (uniform(0, 3) == 0) {
      int min = uniform(1, static_cast<int>(r.tasks.size()));
      r.elastic.push_back(RunningJob::ElasticGroup{"worker", min, min + uniform(0, 6),
                                                   r.tasks[0].resources,
                                                   static_cast<int>(r.tasks.size())});
    }
  }
  for (int k = 0; k < uniform(1, 30); ++k) {
    s.pending.push_back(random_job(k + 1));
    s.pending.back().preempted_for_it = uniform(0, 9) == 0;
  }
  s.config.policy =
      std::vector<Policy>{Policy::kFairShare, Policy::kFifo,
                          Policy::kLeastAttainedService}[static_cast<size_t>(uniform(0, 2))];
  s.config.backfill = uniform(0, 3) != 0;
  s.config.priority_preemption = uniform(0, 1);
  s.config.quota_reclaim = uniform(0, 1);
  return s;
}

// Checks every safety property of one plan against its input; returns the first violation.
std::string Violation(const Scenario& s, const Plan& plan) {
  std::map<std::string, const NodeCapacity*> nodes;
  for (const auto& n : s.cluster.nodes) nodes[n.node_id] = &n;
  std::map<JobId, const PendingJob*> pending;
  for (const auto& p : s.pending) pending[p.job_id] = &p;
  std::set<std::pair<std::string, int>> held;
  for (const auto& r : s.cluster.running) {
    for (const auto& t : r.placement) {
      for (int g : t.gpus) held.insert({t.node_id, g});
    }
  }
  std::map<std::string, Resources> used;
  std::map<std::string, int64_t> team_gpus;
  for (const auto& r : s.cluster.running) team_gpus[r.team] += r.Total().gpus;
  std::set<JobId> seen;
  for (const auto& p : plan.placements) {
    auto job = pending.find(p.job_id);
    if (job == pending.end()) return "placed a job that is not pending";
    if (!seen.insert(p.job_id).second) return "placed a job twice";
    if (p.tasks.size() != job->second->tasks.size()) return "a gang was placed in part";
    team_gpus[job->second->team] += 0;
    for (size_t t = 0; t < p.tasks.size(); ++t) {
      const auto& req = job->second->tasks[t].resources;
      if (static_cast<int64_t>(p.tasks[t].gpus.size()) != req.gpus) return "wrong GPU count";
      if (!nodes.count(p.tasks[t].node_id)) return "placed on an unknown node";
      const NodeCapacity& node = *nodes[p.tasks[t].node_id];
      const Constraints& want = job->second->constraints;
      if (!want.gpu_model.empty() && node.gpu_model != want.gpu_model) {
        return "placed on a node of another GPU model";
      }
      for (const auto& [key, value] : want.labels) {
        auto label = node.labels.find(key);
        if (label == node.labels.end() || label->second != value) {
          return "placed on a node without a required label";
        }
      }
      for (int g : p.tasks[t].gpus) {
        if (!held.insert({p.tasks[t].node_id, g}).second) return "a GPU was given twice";
        const auto& free = nodes[p.tasks[t].node_id]->free_gpus;
        if (std::find(free.begin(), free.end(), g) == free.end()) return "took a busy GPU";
      }
      used[p.tasks[t].node_id] += req;
      team_gpus[job->second->team] += req.gpus;
    }
  }
  for (const auto& g : plan.growths) {
    auto r = std::find_if(s.cluster.running.begin(), s.cluster.running.end(),
                          [&](const RunningJob& j) { return j.job_id == g.job_id; });
    if (r == s.cluster.running.end() || r->elastic.empty()) return "grew a job that is not elastic";
    if (r->stopping) return "grew a stopping job";
    int current = static_cast<int>(r->tasks.size());
    if (current + static_cast<int>(g.tasks.size()) > r->elastic[0].max) {
      return "grew a job beyond its maximum";
    }
    for (size_t t = 0; t < g.tasks.size(); ++t) {
      for (int gpu : g.placement[t].gpus) {
        if (!held.insert({g.placement[t].node_id, gpu}).second) return "grew onto a taken GPU";
        const auto& free = nodes[g.placement[t].node_id]->free_gpus;
        if (std::find(free.begin(), free.end(), gpu) == free.end()) return "grew onto a busy GPU";
      }
      used[g.placement[t].node_id] += g.tasks[t].resources;
      team_gpus[r->team] += g.tasks[t].resources.gpus;
    }
  }
  for (const auto& sh : plan.shrinks) {
    auto r = std::find_if(s.cluster.running.begin(), s.cluster.running.end(),
                          [&](const RunningJob& j) { return j.job_id == sh.job_id; });
    if (r == s.cluster.running.end() || r->elastic.empty())
      return "shrank a job that is not elastic";
    if (static_cast<int>(r->tasks.size() - sh.indices.size()) < r->elastic[0].min) {
      return "shrank a job below its minimum";
    }
    for (int index : sh.indices) {
      bool exists = std::any_of(r->tasks.begin(), r->tasks.end(),
                                [&](const TaskRequest& t) { return t.index == index; });
      if (!exists) return "shrank a replica that does not exist";
    }
  }
  for (const auto& q : s.cluster.teams) {
    int64_t before = 0;
    for (const auto& r : s.cluster.running) before += r.team == q.name ? r.Total().gpus : 0;
    if (q.max_gpus && team_gpus[q.name] > std::max(*q.max_gpus, before)) {
      return "a team went beyond its max_gpus";
    }
  }
  for (const auto& [node, r] : used) {
    if (!r.FitsIn(nodes[node]->free)) return "a node was given more than it has free";
  }
  for (const auto& w : plan.waiting) {
    if (!pending.count(w.job_id)) return "a reason for a job that is not pending";
    if (!seen.insert(w.job_id).second) return "a job both placed and waiting, or twice";
    if (w.reason.empty()) return "a waiting job without a reason";
  }
  if (seen.size() != s.pending.size()) return "a pending job was neither placed nor explained";
  std::set<JobId> victims;
  for (const auto& p : plan.preemptions) {
    auto r = std::find_if(s.cluster.running.begin(), s.cluster.running.end(),
                          [&](const RunningJob& j) { return j.job_id == p.victim; });
    if (r == s.cluster.running.end()) return "preempted a job that is not running";
    if (r->stopping) return "preempted a job that is already stopping";
    if (s.now - r->started_at < s.config.min_runtime_before_preemption) {
      return "preempted a job before its minimum run time";
    }
    if (!victims.insert(p.victim).second) return "preempted a job twice";
    if (!pending.count(p.for_job)) return "preempted for a job that is not pending";
  }
  return "";
}

TEST(SchedulerProperties, SafeAndDeterministicOverRandomClusters) {
  uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  constexpr int kScenarios = 3000;
  for (int i = 0; i < kScenarios; ++i) {
    Scenario s = RandomScenario(rng);
    Plan plan = RunScheduler(s.cluster, s.pending, s.config, s.now);
    std::string violation = Violation(s, plan);
    ASSERT_EQ(violation, "") << "seed " << seed << ", scenario " << i;
    Plan again = RunScheduler(s.cluster, s.pending, s.config, s.now);
    ASSERT_EQ(PlacedIds(again), PlacedIds(plan)) << "seed " << seed << ", scenario " << i;
    for (size_t p = 0; p < plan.placements.size(); ++p) {
      for (size_t t = 0; t < plan.placements[p].tasks.size(); ++t) {
        ASSERT_EQ(again.placements[p].tasks[t].gpus, plan.placements[p].tasks[t].gpus);
        ASSERT_EQ(again.placements[p].tasks[t].node_id, plan.placements[p].tasks[t].node_id);
      }
    }
    ASSERT_EQ(again.preemptions.size(), plan.preemptions.size());
  }
  std::printf("checked %d random clusters, seed %llu\n", kScenarios,
              static_cast<unsigned long long>(seed));
}

// A small event-driven cluster: jobs arrive at once, run for their duration, preempted jobs go
// back to the queue, and the scheduler runs after every change. With a finite stream every job
// finishes, and a team that wants at most its guarantee gets it once victims have stopped.
TEST(SchedulerProperties, EveryJobEventuallyRunsAndGuaranteesAreHonoured) {
  uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ClusterSnapshot cluster;
    int per_node = 4;
    AddNodes(cluster, "n", uniform(1, 6), per_node, 64, 512);
    int total = static_cast<int>(cluster.nodes.size()) * per_node;
    cluster.teams = {TeamQuota{"vision", total / 2, std::nullopt},
                     TeamQuota{"nlp", total - total / 2, std::nullopt}};
    std::map<JobId, PendingJob> queue;
    std::map<JobId, Duration> work;  // remaining run time per job
    int jobs = uniform(1, 25);
    for (JobId id = 1; id <= jobs; ++id) {
      int gpus = uniform(0, per_node);
      int max_replicas =
          gpus == 0 ? 3
                    : std::min<int>(3, static_cast<int>(cluster.nodes.size()) * (per_node / gpus));
      PendingJob j = Job(id, uniform(1, max_replicas), gpus, uniform(-1, 1) * 100,
                         static_cast<int64_t>(id), id % 2 ? "vision" : "nlp");
      work[id] = std::chrono::minutes(uniform(1, 30));
      j.max_runtime = work[id];
      queue[id] = j;
    }
    SchedulerConfig config;
    config.policy =
        std::vector<Policy>{Policy::kFairShare, Policy::kFifo,
                            Policy::kLeastAttainedService}[static_cast<size_t>(uniform(0, 2))];
    Timestamp now = Minutes(0);
    std::map<JobId, Timestamp> ends;
    size_t finished = 0, total_jobs = queue.size();
    for (int step = 0; step < 10'000 && finished < total_jobs; ++step) {
      std::vector<PendingJob> pending;
      for (const auto& [id, j] : queue) pending.push_back(j);
      Plan plan = RunScheduler(cluster, pending, config, now);
      ASSERT_EQ(Violation(Scenario{cluster, pending, config, now}, plan), "")
          << "seed " << seed << ", round " << round;
      // Victims stop (here: at once) and go back to the queue with their submission time.
      for (const auto& p : plan.preemptions) {
        auto r = std::find_if(cluster.running.begin(), cluster.running.end(),
                              [&](const RunningJob& j) { return j.job_id == p.victim; });
        PendingJob back = Job(r->job_id, 1, 0);
        back.tasks = r->tasks;
        back.team = r->team;
        back.user = r->user;
        back.priority = r->priority;
        back.submitted_at = r->submitted_at;
        back.max_runtime = work[r->job_id];
        for (size_t t = 0; t < r->tasks.size(); ++t) {
          for (auto& n : cluster.nodes) {
            if (n.node_id != r->placement[t].node_id) continue;
            n.free += r->tasks[t].resources;
            for (int g : r->placement[t].gpus) n.free_gpus.push_back(g);
            std::sort(n.free_gpus.begin(), n.free_gpus.end());
          }
        }
        ends.erase(r->job_id);
        cluster.running.erase(r);
        queue[back.job_id] = back;
      }
      for (const auto& p : plan.placements) {
        std::vector<std::string> where;
        for (const auto& t : p.tasks) where.push_back(t.node_id);
        StartRunning(cluster, queue[p.job_id], where, now);
        ends[p.job_id] = now + work[p.job_id];
        queue.erase(p.job_id);
      }
      if (!plan.placements.empty() || !plan.preemptions.empty()) continue;
      // Nothing changed: time moves to the next completion.
      ASSERT_FALSE(ends.empty()) << "deadlock: jobs wait, nothing runs; seed " << seed << ", round "
                                 << round;
      auto next = std::min_element(ends.begin(), ends.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      });
      now = next->second;
      JobId done = next->first;
      ends.erase(next);
      auto r = std::find_if(cluster.running.begin(), cluster.running.end(),
                            [&](const RunningJob& j) { return j.job_id == done; });
      for (size_t t = 0; t < r->tasks.size(); ++t) {
        for (auto& n : cluster.nodes) {
          if (n.node_id != r->placement[t].node_id) continue;
          n.free += r->tasks[t].resources;
          for (int g : r->placement[t].gpus) n.free_gpus.push_back(g);
          std::sort(n.free_gpus.begin(), n.free_gpus.end());
        }
      }
      cluster.running.erase(r);
      ++finished;
    }
    ASSERT_EQ(finished, total_jobs) << "seed " << seed << ", round " << round;
  }
}

TEST(SchedulerProperties, GuaranteedQuotaIsReclaimedWithinOneGracePeriod) {
  uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 500; ++round) {
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ClusterSnapshot c;
    int per_node = std::vector<int>{2, 4, 8}[static_cast<size_t>(uniform(0, 2))];
    AddNodes(c, "n", uniform(2, 8), per_node, 64, 512);
    int total = static_cast<int>(c.nodes.size()) * per_node;
    int guarantee = uniform(1, total / 2);
    c.teams = {TeamQuota{"owner", guarantee, std::nullopt}, TeamQuota{"borrower", 0, std::nullopt}};
    // The borrower fills the cluster with single-node jobs.
    JobId id = 100;
    while (true) {
      PendingJob j = Job(id++, 1, uniform(1, per_node), 0, 0, "borrower");
      auto placed = RunScheduler(c, {j}).placements;
      if (placed.empty()) break;
      StartRunning(c, j, {placed[0].tasks[0].node_id}, Minutes(0));
    }
    // The owner asks for a single-node job within its guarantee.
    PendingJob want = Job(1, 1, std::min(guarantee, per_node), 0, 1, "owner");
    Plan plan = RunScheduler(c, {want}, {}, Minutes(60));
    if (!plan.placements.empty()) continue;  // there was room anyway
    ASSERT_FALSE(plan.preemptions.empty()) << "seed " << seed << ", round " << round;
    // One grace period later the victims are gone: the owner's job starts.
    for (const auto& p : plan.preemptions) {
      for (auto& r : c.running) {
        if (r.job_id == p.victim) r.stopping = true;
      }
    }
    std::vector<RunningJob> left;
    for (auto& r : c.running) {
      if (!r.stopping) {
        left.push_back(r);
        continue;
      }
      for (size_t t = 0; t < r.tasks.size(); ++t) {
        for (auto& n : c.nodes) {
          if (n.node_id != r.placement[t].node_id) continue;
          n.free += r.tasks[t].resources;
          for (int g : r.placement[t].gpus) n.free_gpus.push_back(g);
          std::sort(n.free_gpus.begin(), n.free_gpus.end());
        }
      }
    }
    c.running = left;
    Plan after = RunScheduler(c, {want}, {}, Minutes(61));
    ASSERT_EQ(PlacedIds(after), std::vector<JobId>{1}) << "seed " << seed << ", round " << round;
  }
}

}  // namespace
}  // namespace cohort::scheduler
