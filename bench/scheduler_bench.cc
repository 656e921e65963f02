// Scheduler speed at cluster scale: a full pass over a large queue on a large, busy cluster, and
// the decisions after one arrival and after one completion. Prints a table (medians over
// several runs) and the process's peak memory.
//
// The cost of the estimates the master gives waiting jobs from the runtime history is measured
// too (scheduler/estimate_cache.h).
//
//   build/bin/scheduler_bench [--nodes 10000] [--gpus 8] [--pending 100000] [--runs 5]
#include <fmt/format.h>
#include <sys/resource.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "cluster/cluster_state.h"
#include "scheduler/estimate_cache.h"
#include "scheduler/incremental.h"
#include "scheduler/runtime_history.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace {

using namespace cohort;  // NOLINT: a benchmark driver
using scheduler::Policy;
using scheduler::SchedulerConfig;

using testing::kGi;
const std::vector<std::string> kTeams = {"vision", "nlp", "speech", "rl", "infra", "research"};

// Gang sizes shaped like the ITP traces: mostly 1 GPU, some 2-8, a few 16-64.
int RandomGpus(std::mt19937_64& rng) {
  int r = std::uniform_int_distribution<int>(0, 999)(rng);
  if (r < 830) return 1;
  if (r < 890) return std::vector<int>{2, 4}[r % 2];
  if (r < 990) return 8;
  return std::vector<int>{16, 32, 64}[r % 3];
}

PendingJob RandomJob(std::mt19937_64& rng, JobId id, Timestamp submitted) {
  PendingJob j;
  j.job_id = id;
  j.team = kTeams[static_cast<size_t>(id) % kTeams.size()];
  j.user = "user" + std::to_string(id % 50);
  j.priority = std::vector<int>{-100, 0, 0, 0, 100}[static_cast<size_t>(id % 5)];
  j.submitted_at = submitted;
  int gpus = RandomGpus(rng);
  int per_task = std::min(gpus, 8);
  for (int t = 0; t < gpus / per_task; ++t) {
    j.tasks.push_back(TaskRequest{"worker", t, Resources{per_task, per_task * 4000, 32 * kGi}});
  }
  if (id % 2) j.max_runtime = std::chrono::hours(1 + id % 24);
  return j;
}

// What the runtime history files a job under: 300 job names, spread over users and teams.
scheduler::HistoryKey KeyOf(const PendingJob& j) {
  int64_t gpus = 0;
  for (const auto& t : j.tasks) gpus += t.resources.gpus;
  return scheduler::HistoryKey{j.team, j.user, "model" + std::to_string(j.job_id * 7 % 300), gpus};
}

struct World {
  // Kept for the whole run, as the master keeps its own: freeing it before the timed passes left
  // the allocator in a state that made them 20-50% slower, which a master never sees.
  cluster::ClusterState state;
  ClusterSnapshot cluster;
  std::vector<PendingJob> pending;
  // Jobs that ended before, as the master keeps them, and the estimates of the waiting jobs.
  scheduler::RuntimeHistory history;
  scheduler::EstimateCache estimates;
};

// A cluster filled by the scheduler itself to about 97% of its GPUs, and a queue behind it.
void Build(World& w, int nodes, int gpus, int pending, uint64_t seed) {
  std::mt19937_64 rng(seed);
  cluster::ClusterState& state = w.state;
  for (int i = 0; i < nodes; ++i) {
    state.UpsertNode(testing::IdleNode(fmt::format("node-{:05}", i), gpus, 128, 1024), true);
  }
  int64_t total = static_cast<int64_t>(nodes) * gpus;
  std::vector<TeamQuota> teams;
  for (const auto& team : kTeams) {
    teams.push_back(TeamQuota{team, total / static_cast<int64_t>(kTeams.size()), std::nullopt});
  }
  state.SetTeams(teams);
  // Fill: schedule batches of jobs and apply their plans, up to the placement that reaches 97%.
  SchedulerConfig fill_config;
  fill_config.policy = Policy::kFifo;
  fill_config.backfill = false;
  auto fill = scheduler::NewScheduler(fill_config);
  std::vector<PendingJob> batch;
  JobId id = 1'000'000;
  while (state.used_gpus() < total * 97 / 100) {
    batch.clear();
    for (int k = 0; k < 2000; ++k) batch.push_back(RandomJob(rng, id++, FromMicros(0)));
    ClusterSnapshot snapshot = state.Snapshot();
    Plan plan = fill->Schedule(scheduler::SchedulingInput{snapshot, batch, FromMicros(0)});
    if (plan.placements.empty()) break;
    int64_t used = state.used_gpus();
    size_t keep = 0;
    while (keep < plan.placements.size() && used < total * 97 / 100) {
      for (const auto& t : plan.placements[keep].tasks) used += static_cast<int64_t>(t.gpus.size());
      ++keep;
    }
    plan.placements.resize(keep);
    state.Apply(plan, batch, FromMicros(0));
  }
  w.cluster = state.Snapshot();
  for (int k = 0; k < pending; ++k) {
    w.pending.push_back(RandomJob(rng, k + 1, FromMicros(k)));
  }
  // 50,000 ended jobs like them (run times from minutes to days, GPU time by their size), for
  // the estimates the master gives waiting jobs.
  for (int k = 0; k < 50'000; ++k) {
    PendingJob ended = RandomJob(rng, 2'000'000 + k, FromMicros(0));
    Duration ran = std::chrono::minutes(std::uniform_int_distribution<int>(1, 4000)(rng));
    w.history.Record(KeyOf(ended), ran * static_cast<int64_t>(KeyOf(ended).gpus));
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
std::pair<double, Plan> TimeIt(int runs, F&& f) {
  std::vector<double> ms;
  Plan last;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    last = f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  return {Median(ms), std::move(last)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Scheduler speed at cluster scale"};
  int nodes = 10'000, gpus = 8, pending = 100'000, runs = 5;
  uint64_t seed = 42;
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--gpus", gpus, "GPUs per node")->capture_default_str();
  app.add_option("--pending", pending, "Pending jobs")->capture_default_str();
  app.add_option("--runs", runs, "Runs per figure (the median is printed)")->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  fmt::print(stderr, "building a {}-node cluster and {} pending jobs (seed {})...\n", nodes,
             pending, seed);
  World w;
  Build(w, nodes, gpus, pending, seed);
  int64_t free_gpus = 0;
  for (const auto& n : w.cluster.nodes) free_gpus += n.free.gpus;
  Timestamp now = FromMicros(3'600'000'000);

  fmt::print(
      "\nScheduler benchmark: {} nodes x {} GPUs, {} running jobs, {} GPUs free, {} "
      "pending jobs, {} teams\n\n",
      nodes, gpus, w.cluster.running.size(), free_gpus, w.pending.size(), kTeams.size());
  fmt::print("{:<52} {:>10} {:>10} {:>12}\n", "decision", "median ms", "placed", "placements/s");
  auto row = [&](const std::string& name, double ms, const Plan& plan) {
    double rate = ms > 0 ? static_cast<double>(plan.placements.size()) / (ms / 1000.0) : 0;
    fmt::print("{:<52} {:>10.2f} {:>10} {:>12.0f}\n", name, ms, plan.placements.size(), rate);
  };
  for (Policy policy : {Policy::kFairShare, Policy::kFifo, Policy::kLeastAttainedService}) {
    SchedulerConfig config;
    config.policy = policy;
    auto s = scheduler::NewScheduler(config);
    auto [ms, plan] = TimeIt(runs, [&] {
      return s->Schedule(scheduler::SchedulingInput{w.cluster, w.pending, now});
    });
    row(fmt::format("full pass, policy {}", scheduler::PolicyName(policy)), ms, plan);
  }
  // The master's part of a pass that the history adds: every waiting job's estimate, from the
  // cache as a pass after another finds it, after a job ended (the estimates it may change are
  // dropped), and with the cache empty (after a restart, or when the history forgot keys); then
  // the default policy's pass with them. The rows above and below are without estimates, as
  // they were measured before the master kept a history.
  {
    auto estimate_all = [&] {
      for (auto& j : w.pending) j.estimate = w.estimates.Get(w.history, KeyOf(j));
      return Plan{};
    };
    auto print = [](const std::string& name, double ms) {
      fmt::print("{:<52} {:>10.2f} {:>10} {:>12}\n", name, ms, "-", "-");
    };
    std::mt19937_64 rng(seed + 3);
    auto after_an_end = [&] {
      PendingJob ended = RandomJob(rng, 3'000'000, FromMicros(0));
      scheduler::HistoryKey key = KeyOf(ended);
      RuntimeHistoryChange change = w.history.Recorded(key, std::chrono::hours(key.gpus));
      w.history.Apply(change);
      w.estimates.Forget(key, change);
      return estimate_all();
    };
    auto from_scratch = [&] {
      w.estimates.Clear();
      return estimate_all();
    };
    print("estimates of every waiting job, cached", TimeIt(runs, estimate_all).first);
    print("estimates of every waiting job, after one end", TimeIt(runs, after_an_end).first);
    print("estimates of every waiting job, cache empty", TimeIt(runs, from_scratch).first);
    auto s = scheduler::NewScheduler();
    auto [ms, plan] = TimeIt(runs, [&] {
      return s->Schedule(scheduler::SchedulingInput{w.cluster, w.pending, now});
    });
    row("full pass, policy default, with the estimates", ms, plan);
    fmt::print("  ({} keys in the history, {} in the estimate cache)\n", w.history.size(),
               w.estimates.size());
    for (auto& j : w.pending) j.estimate.reset();
  }
  // Placements per second on an empty cluster of the same size: the placement cost alone.
  {
    ClusterSnapshot empty;
    for (const auto& n : w.cluster.nodes) {
      empty.nodes.push_back(testing::IdleNode(n.node_id, gpus, 128, 1024));
    }
    empty.teams = w.cluster.teams;
    auto s = scheduler::NewScheduler();
    auto [ms, plan] = TimeIt(runs, [&] {
      return s->Schedule(scheduler::SchedulingInput{empty, w.pending, now});
    });
    row("full pass into an empty cluster", ms, plan);
  }
  // Decisions between passes (incremental.h): after a full pass, arrivals and completions are
  // decided against its residue. Each figure is the median over 200 decisions in a row.
  {
    auto s = scheduler::NewScheduler();
    auto ms_since = [](std::chrono::steady_clock::time_point start) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
    };
    // Arrivals into the busy cluster with its 2% of free GPUs (the queue empty): most are placed.
    scheduler::PassResidue idle;
    s->Schedule(scheduler::SchedulingInput{w.cluster, {}, now}, idle);
    std::mt19937_64 rng(seed + 2);
    std::vector<double> arrival_ms;
    size_t arrivals_placed = 0;
    for (int k = 0; k < 200; ++k) {
      PendingJob job = RandomJob(rng, 900'000'000 + k, now);
      auto start = std::chrono::steady_clock::now();
      arrivals_placed += scheduler::DecideArrival(idle, job, now, nullptr).has_value();
      arrival_ms.push_back(ms_since(start));
    }
    // Completions in the busy cluster with 100,000 jobs waiting: each frees a running job's GPUs
    // and starts the first waiting jobs that fit.
    scheduler::PassResidue busy;
    s->Schedule(scheduler::SchedulingInput{w.cluster, w.pending, now}, busy);
    std::map<JobId, const PendingJob*> by_id;
    for (const auto& j : w.pending) by_id[j.job_id] = &j;
    std::vector<double> completion_ms;
    size_t completion_starts = 0;
    for (size_t k = 0; k < 200 && k < w.cluster.running.size(); ++k) {
      const RunningJob& done = w.cluster.running[k * 97 % w.cluster.running.size()];
      auto start = std::chrono::steady_clock::now();
      auto started = scheduler::DecideAfterRelease(
          busy, done.team, done.tasks, done.placement,
          [&](JobId id) -> const PendingJob* {
            auto it = by_id.find(id);
            return it == by_id.end() ? nullptr : it->second;
          },
          now);
      completion_ms.push_back(ms_since(start));
      completion_starts += started.size();
      for (const auto& p : started) by_id.erase(p.job_id);
    }
    fmt::print("{:<52} {:>10.4f} {:>10} {:>12}\n", "one arrival, between passes (200 in a row)",
               Median(arrival_ms), arrivals_placed, "-");
    fmt::print("{:<52} {:>10.4f} {:>10} {:>12}\n", "one completion, between passes (200 in a row)",
               Median(completion_ms), completion_starts, "-");
  }
  // One arrival as a pass of its own: the new job alone, against a snapshot of the cluster.
  {
    auto s = scheduler::NewScheduler();
    std::mt19937_64 rng(seed + 1);
    std::vector<PendingJob> one = {RandomJob(rng, 999'999'999, now)};
    one[0].tasks = {TaskRequest{"worker", 0, Resources{1, 4000, 32 * kGi}}};
    auto [ms, plan] = TimeIt(runs * 20, [&] {
      return s->Schedule(scheduler::SchedulingInput{w.cluster, one, now});
    });
    row("one arrival as a pass of its own (snapshot)", ms, plan);
  }

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("\npeak memory (max RSS) {:.0f} MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
}
