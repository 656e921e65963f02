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

// The safety properties of one plan against its input. Each check returns its first violation
// ("" if none); later checks count what earlier ones have seen given.
class PlanCheck {
 public:
  explicit PlanCheck(const Scenario& s) : s_(s) {
    for (const auto& n : s.cluster.nodes) nodes_[n.node_id] = &n;
    for (const auto& p : s.pending) pending_[p.job_id] = &p;
    for (const auto& r : s.cluster.running) {
      for (const auto& t : r.placement) {
        for (int g : t.gpus) held_.insert({t.node_id, g});
      }
      team_gpus_[r.team] += r.Total().gpus;
    }
  }

  std::string Placements(const Plan& plan) {
    for (const auto& p : plan.placements) {
      auto job = pending_.find(p.job_id);
      if (job == pending_.end()) return "placed a job that is not pending";
      if (!seen_.insert(p.job_id).second) return "placed a job twice";
      if (p.tasks.size() != job->second->tasks.size()) return "a gang was placed in part";
      team_gpus_[job->second->team] += 0;
      for (size_t t = 0; t < p.tasks.size(); ++t) {
        if (std::string v = Task(*job->second, job->second->tasks[t].resources, p.tasks[t]);
            !v.empty()) {
          return v;
        }
      }
    }
    return "";
  }

  std::string Growths(const Plan& plan) {
    for (const auto& g : plan.growths) {
      const RunningJob* r = RunningById(g.job_id);
      if (!r || r->elastic.empty()) return "grew a job that is not elastic";
      if (r->stopping) return "grew a stopping job";
      int current = static_cast<int>(r->tasks.size());
      if (current + static_cast<int>(g.tasks.size()) > r->elastic[0].max) {
        return "grew a job beyond its maximum";
      }
      for (size_t t = 0; t < g.tasks.size(); ++t) {
        for (int gpu : g.placement[t].gpus) {
          if (!held_.insert({g.placement[t].node_id, gpu}).second) return "grew onto a taken GPU";
          const auto& free = nodes_[g.placement[t].node_id]->free_gpus;
          if (std::find(free.begin(), free.end(), gpu) == free.end()) {
            return "grew onto a busy GPU";
          }
        }
        used_[g.placement[t].node_id] += g.tasks[t].resources;
        team_gpus_[r->team] += g.tasks[t].resources.gpus;
      }
    }
    return "";
  }

  std::string Shrinks(const Plan& plan) const {
    for (const auto& sh : plan.shrinks) {
      const RunningJob* r = RunningById(sh.job_id);
      if (!r || r->elastic.empty()) return "shrank a job that is not elastic";
      if (static_cast<int>(r->tasks.size() - sh.indices.size()) < r->elastic[0].min) {
        return "shrank a job below its minimum";
      }
      for (int index : sh.indices) {
        bool exists = std::any_of(r->tasks.begin(), r->tasks.end(),
                                  [&](const TaskRequest& t) { return t.index == index; });
        if (!exists) return "shrank a replica that does not exist";
      }
    }
    return "";
  }

  // Team limits and node capacity, over everything placed and grown.
  std::string Limits() {
    for (const auto& q : s_.cluster.teams) {
      int64_t before = 0;
      for (const auto& r : s_.cluster.running) before += r.team == q.name ? r.Total().gpus : 0;
      if (q.max_gpus && team_gpus_[q.name] > std::max(*q.max_gpus, before)) {
        return "a team went beyond its max_gpus";
      }
    }
    for (const auto& [node, r] : used_) {
      if (!r.FitsIn(nodes_[node]->free)) return "a node was given more than it has free";
    }
    return "";
  }

  std::string Reasons(const Plan& plan) {
    for (const auto& w : plan.waiting) {
      if (!pending_.count(w.job_id)) return "a reason for a job that is not pending";
      if (!seen_.insert(w.job_id).second) return "a job both placed and waiting, or twice";
      if (w.reason.empty()) return "a waiting job without a reason";
    }
    if (seen_.size() != s_.pending.size()) return "a pending job was neither placed nor explained";
    return "";
  }

  std::string Preemptions(const Plan& plan) const {
    std::set<JobId> victims;
    for (const auto& p : plan.preemptions) {
      const RunningJob* r = RunningById(p.victim);
      if (!r) return "preempted a job that is not running";
      if (r->stopping) return "preempted a job that is already stopping";
      if (s_.now - r->started_at < s_.config.min_runtime_before_preemption) {
        return "preempted a job before its minimum run time";
      }
      if (!victims.insert(p.victim).second) return "preempted a job twice";
      if (!pending_.count(p.for_job)) return "preempted for a job that is not pending";
    }
    return "";
  }

 private:
  // One task of `job`, which asks for `req`, placed at `at`.
  std::string Task(const PendingJob& job, const Resources& req, const TaskPlacement& at) {
    if (static_cast<int64_t>(at.gpus.size()) != req.gpus) return "wrong GPU count";
    if (!nodes_.count(at.node_id)) return "placed on an unknown node";
    const NodeCapacity& node = *nodes_[at.node_id];
    const Constraints& want = job.constraints;
    if (!want.gpu_model.empty() && node.gpu_model != want.gpu_model) {
      return "placed on a node of another GPU model";
    }
    for (const auto& [key, value] : want.labels) {
      auto label = node.labels.find(key);
      if (label == node.labels.end() || label->second != value) {
        return "placed on a node without a required label";
      }
    }
    for (int g : at.gpus) {
      if (!held_.insert({at.node_id, g}).second) return "a GPU was given twice";
      const auto& free = node.free_gpus;
      if (std::find(free.begin(), free.end(), g) == free.end()) return "took a busy GPU";
    }
    used_[at.node_id] += req;
    team_gpus_[job.team] += req.gpus;
    return "";
  }

  const RunningJob* RunningById(JobId id) const {
    auto r = std::find_if(s_.cluster.running.begin(), s_.cluster.running.end(),
                          [&](const RunningJob& j) { return j.job_id == id; });
    return r == s_.cluster.running.end() ? nullptr : &*r;
  }

  const Scenario& s_;
  std::map<std::string, const NodeCapacity*> nodes_;
  std::map<JobId, const PendingJob*> pending_;
  std::set<std::pair<std::string, int>> held_;  // (node, GPU) given, before the plan and by it
  std::map<std::string, Resources> used_;       // by node: what the plan gives
  std::map<std::string, int64_t> team_gpus_;
  std::set<JobId> seen_;  // placed or waiting
};

// Checks every safety property of one plan against its input; returns the first violation.
std::string Violation(const Scenario& s, const Plan& plan) {
  PlanCheck check(s);
  std::string v = check.Placements(plan);
  if (v.empty()) v = check.Growths(plan);
  if (v.empty()) v = check.Shrinks(plan);
  if (v.empty()) v = check.Limits();
  if (v.empty()) v = check.Reasons(plan);
  if (v.empty()) v = check.Preemptions(plan);
  return v;
}

// Gives what a running job holds back to its nodes.
void GiveBack(ClusterSnapshot& c, const RunningJob& r) {
  for (size_t t = 0; t < r.tasks.size(); ++t) {
    for (auto& n : c.nodes) {
      if (n.node_id != r.placement[t].node_id) continue;
      n.free += r.tasks[t].resources;
      for (int g : r.placement[t].gpus) n.free_gpus.push_back(g);
      std::sort(n.free_gpus.begin(), n.free_gpus.end());
    }
  }
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
// back to the queue, and the scheduler runs after every change.
struct Replay {
  ClusterSnapshot cluster;
  std::map<JobId, PendingJob> queue;
  std::map<JobId, Duration> work;  // remaining run time per job
  std::map<JobId, Timestamp> ends;
  Timestamp now = Minutes(0);
  size_t finished = 0;

  std::vector<PendingJob> Pending() const {
    std::vector<PendingJob> pending;
    for (const auto& [id, j] : queue) pending.push_back(j);
    return pending;
  }

  // The victim stops (here: at once) and goes back to the queue with its submission time.
  void Preempt(JobId victim) {
    auto r = std::find_if(cluster.running.begin(), cluster.running.end(),
                          [&](const RunningJob& j) { return j.job_id == victim; });
    PendingJob back = Job(r->job_id, 1, 0);
    back.tasks = r->tasks;
    back.team = r->team;
    back.user = r->user;
    back.priority = r->priority;
    back.submitted_at = r->submitted_at;
    back.max_runtime = work[r->job_id];
    GiveBack(cluster, *r);
    ends.erase(r->job_id);
    cluster.running.erase(r);
    queue[back.job_id] = back;
  }

  void Start(const JobPlacement& p) {
    std::vector<std::string> where;
    for (const auto& t : p.tasks) where.push_back(t.node_id);
    StartRunning(cluster, queue[p.job_id], where, now);
    ends[p.job_id] = now + work[p.job_id];
    queue.erase(p.job_id);
  }

  // Time moves to the next completion.
  void FinishNext() {
    auto next = std::min_element(ends.begin(), ends.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    now = next->second;
    JobId done = next->first;
    ends.erase(next);
    auto r = std::find_if(cluster.running.begin(), cluster.running.end(),
                          [&](const RunningJob& j) { return j.job_id == done; });
    GiveBack(cluster, *r);
    cluster.running.erase(r);
    ++finished;
  }
};

// Two teams sharing 1 to 6 nodes of 4 GPUs, and up to 25 jobs for them.
template <typename Uniform>
void RandomReplay(Uniform& uniform, Replay& replay) {
  ClusterSnapshot& cluster = replay.cluster;
  int per_node = 4;
  AddNodes(cluster, "n", uniform(1, 6), per_node, 64, 512);
  int total = static_cast<int>(cluster.nodes.size()) * per_node;
  cluster.teams = {TeamQuota{"vision", total / 2, std::nullopt},
                   TeamQuota{"nlp", total - total / 2, std::nullopt}};
  int jobs = uniform(1, 25);
  for (JobId id = 1; id <= jobs; ++id) {
    int gpus = uniform(0, per_node);
    int max_replicas =
        gpus == 0 ? 3
                  : std::min<int>(3, static_cast<int>(cluster.nodes.size()) * (per_node / gpus));
    PendingJob j = Job(id, uniform(1, max_replicas), gpus, uniform(-1, 1) * 100,
                       static_cast<int64_t>(id), id % 2 ? "vision" : "nlp");
    replay.work[id] = std::chrono::minutes(uniform(1, 30));
    j.max_runtime = replay.work[id];
    replay.queue[id] = j;
  }
}

// With a finite stream every job finishes, and a team that wants at most its guarantee gets it
// once victims have stopped.
TEST(SchedulerProperties, EveryJobEventuallyRunsAndGuaranteesAreHonoured) {
  uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Replay replay;
    RandomReplay(uniform, replay);
    SchedulerConfig config;
    config.policy =
        std::vector<Policy>{Policy::kFairShare, Policy::kFifo,
                            Policy::kLeastAttainedService}[static_cast<size_t>(uniform(0, 2))];
    size_t total_jobs = replay.queue.size();
    for (int step = 0; step < 10'000 && replay.finished < total_jobs; ++step) {
      std::vector<PendingJob> pending = replay.Pending();
      Plan plan = RunScheduler(replay.cluster, pending, config, replay.now);
      ASSERT_EQ(Violation(Scenario{replay.cluster, pending, config, replay.now}, plan), "")
          << "seed " << seed << ", round " << round;
      for (const auto& p : plan.preemptions) replay.Preempt(p.victim);
      for (const auto& p : plan.placements) replay.Start(p);
      if (!plan.placements.empty() || !plan.preemptions.empty()) continue;
      ASSERT_FALSE(replay.ends.empty())
          << "deadlock: jobs wait, nothing runs; seed " << seed << ", round " << round;
      replay.FinishNext();
    }
    ASSERT_EQ(replay.finished, total_jobs) << "seed " << seed << ", round " << round;
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
      GiveBack(c, r);
    }
    c.running = left;
    Plan after = RunScheduler(c, {want}, {}, Minutes(61));
    ASSERT_EQ(PlacedIds(after), std::vector<JobId>{1}) << "seed " << seed << ", round " << round;
  }
}

}  // namespace
}  // namespace cohort::scheduler
