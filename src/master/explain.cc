// Why a job is where it is (cohort why): what it needs, what is free, its team, its rank (level,
// estimate, promotion), and who is ahead of it in the policy's own order.
#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "common/strings.h"
#include "common/units.h"
#include "master/job_views.h"
#include "scheduler/job_order.h"

namespace cohort::master {
namespace {

// What preempting a job that holds resources would lose, as its checkpoints tell.
std::string CheckpointText(const Job& job, Timestamp now) {
  auto ago = [&](Timestamp t) {
    return FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(now - std::min(t, now)));
  };
  Timestamp start = job.placed_at.value_or(job.submitted_at);
  if (job.last_checkpoint_at && *job.last_checkpoint_at >= start) {
    return fmt::format("last checkpoint {} ago: a preemption would lose the work since then",
                       ago(*job.last_checkpoint_at));
  }
  std::string earlier = job.last_checkpoint_at
                            ? fmt::format(" (the last, {} ago, was before this attempt)",
                                          ago(*job.last_checkpoint_at))
                            : "";
  return fmt::format(
      "no checkpoint reported in this attempt{}: a preemption would lose the work since it "
      "started {} ago",
      earlier, ago(start));
}

// The drained nodes that could hold one of the job's tasks, its constraints met, with why they
// were drained: when no schedulable node can hold it, what an admin would undrain.
std::vector<std::string> DrainedNodesFor(const Job& job, const NodeRegistry& nodes) {
  std::vector<std::string> found;
  for (const auto& [id, entry] : nodes.all()) {
    const Node& n = entry.node;
    if (!n.drained || n.state != NodeState::kReady) continue;
    const Constraints c = PlacementConstraints(job.spec);
    bool eligible = std::all_of(n.info.gpus.begin(), n.info.gpus.end(), [&](const Gpu& g) {
      return c.gpu_model.empty() || g.model == c.gpu_model;
    });
    eligible = eligible && (c.gpu_model.empty() || !n.info.gpus.empty());
    for (const auto& [key, value] : c.labels) {
      auto it = n.info.labels.find(key);
      eligible = eligible && it != n.info.labels.end() && it->second == value;
    }
    bool holds_a_task =
        std::any_of(job.spec.tasks.begin(), job.spec.tasks.end(),
                    [&](const auto& g) { return g.resources.FitsIn(n.info.Capacity()); });
    if (!eligible || !holds_a_task) continue;
    found.push_back(n.drain_reason.empty() ? fmt::format("{} (drained)", id)
                                           : fmt::format("{} (drained: {})", id, n.drain_reason));
  }
  return found;
}

}  // namespace

StatusOr<Explanation> Master::Explain(JobId id) const {
  COHORT_ASSIGN_OR_RETURN(const Job* found, jobs_.Get(id));
  const Job& job = *found;
  Explanation e;
  e.state = job.state;
  e.summary = job.message;
  auto& d = e.details;
  Resources need = job.spec.TotalResources();
  if (job.trial) {
    // What holds a trial is its sweep's too (docs/sweeps.md): how many of its trials may run.
    if (auto sweep = sweeps_.Get(job.trial->sweep); sweep.ok()) {
      const Sweep& s = **sweep;
      d.push_back(fmt::format(
          "it is trial {} of sweep {} ({}, {}): at most {} of its trials run at once; beyond "
          "its team's guarantee a trial is the first job reclaimed, and it resumes from its "
          "checkpoint",
          job.trial->trial, s.id, s.name(), SweepStateName(s.state),
          s.spec.searcher.max_concurrent_trials));
    }
  }
  if (job.state == JobState::kPending && !job.hold.empty()) {
    e.summary = "held: " + job.hold;
    d.push_back("it is not offered to the scheduler until it is released (cohort sweep resume)");
    return e;
  }
  if (job.state != JobState::kPending) {
    if (IsTerminal(job.state)) {
      d.push_back(fmt::format("it ended {}: {}", JobStateName(job.state), job.message));
    } else {
      std::set<std::string> nodes;
      for (const auto& t : job.tasks) nodes.insert(t.node_id);
      d.push_back(fmt::format("it is {} (attempt {}) on {}", JobStateName(job.state), job.attempt,
                              Join(std::vector<std::string>(nodes.begin(), nodes.end()), ", ")));
      d.push_back(CheckpointText(job, clock_.Now()));
      for (const Advice& a : advice_.For(id)) d.push_back("advice: " + a.text);
    }
    return e;
  }
  Timestamp now = clock_.Now();
  if (SchedulingLoop::BackingOff(job, now)) {
    e.summary = fmt::format(
        "restart backoff after failure {} of at most {}: the next attempt "
        "starts in {} at the earliest",
        job.failures, job.spec.restart.max_attempts, FormatDuration(*job.not_before - now));
    d.push_back(
        fmt::format("it is not offered to the scheduler before {} (restart.backoff {}, "
                    "doubling with each failure up to {})",
                    FormatTimestamp(*job.not_before), FormatDuration(job.spec.restart.backoff),
                    FormatDuration(job.spec.restart.max_backoff)));
    return e;
  }
  if (auto waits = scheduling_.WaitsForOthers(job)) {
    e.summary = *waits;
    for (const Dependency& on : job.spec.depends_on) {
      const Job* dep = jobs_.Find(on.job);
      d.push_back(fmt::format("depends on job {} ({}): it is {}", on.job,
                              DependencyConditionName(on.on),
                              dep ? JobStateName(dep->state) : "gone"));
    }
    if (job.array && job.array->max_parallel > 0) {
      d.push_back(fmt::format("array {} runs at most {} of its {} jobs at once; {} run now",
                              job.array->id, job.array->max_parallel, job.array->count,
                              jobs_.ArrayActive(job.array->id)));
    }
    return e;
  }
  if (scheduling_.staging().HeldBack(id)) {
    e.summary = job.message;
    d.push_back(fmt::format(
        "it is not offered to the scheduler until those nodes hold its datasets, one of them "
        "cannot fetch them, or {} have passed; then it starts where it is placed "
        "(docs/data.md, \"Placement and the pull\")",
        FormatDuration(DatasetStaging::kLimit)));
    return e;
  }
  if (!job.spec.datasets.empty()) {
    std::set<std::string> holding = scheduling_.staging().PreferredNodes(job);
    d.push_back(holding.empty()
                    ? std::string("no node's cache holds its datasets yet")
                    : fmt::format("placement prefers the nodes that hold its datasets: {}",
                                  Join({holding.begin(), holding.end()}, ", ")));
  }
  if (job.spec.UsesImages()) {
    std::vector<std::string> runtimes;
    for (const auto& [id, entry] : nodes_.all()) {
      auto it = entry.node.info.labels.find(std::string(kRuntimeLabel));
      if (it != entry.node.info.labels.end() && it->second == kPodmanRuntime)
        runtimes.push_back(id);
    }
    std::set<std::string> images;
    for (const auto& g : job.spec.tasks) {
      if (!g.image.empty()) images.insert(g.image);
    }
    d.push_back(fmt::format(
        "its tasks run in image {}: only nodes whose agent runs containers ({}={}, cohortd agent "
        "--runtime podman) can hold them: {}",
        Join({images.begin(), images.end()}, ", "), kRuntimeLabel, kPodmanRuntime,
        runtimes.empty() ? std::string("none has registered") : Join(runtimes, ", ")));
    std::set<std::string> holding = scheduling_.NodesHoldingImages(job);
    d.push_back(holding.empty()
                    ? std::string("no node holds its images yet: the first pull holds its GPUs")
                    : fmt::format("placement prefers the nodes that hold its images: {}",
                                  Join({holding.begin(), holding.end()}, ", ")));
  }
  for (const auto& [node, until] : job.excluded_nodes) {
    if (until <= now) continue;
    if (until == kExcludedForGood) {
      d.push_back(
          fmt::format("it is kept off node {} for good: a task of it could not start there", node));
      continue;
    }
    d.push_back(fmt::format(
        "it is kept off node {} until {}: it left its GPUs there idle, and the master reclaimed "
        "them (--reclaim-idle-gpus)",
        node, FormatTimestamp(until)));
  }
  // What it asks for, in the shape a placement needs.
  std::vector<std::string> shape;
  for (const auto& g : job.spec.tasks) {
    shape.push_back(fmt::format("{} x {} ({} GPU{}, {} CPUs, {} each)", g.replicas, g.role,
                                g.resources.gpus, g.resources.gpus == 1 ? "" : "s",
                                FormatMilliCpus(g.resources.milli_cpus),
                                FormatByteSizeApprox(g.resources.memory_bytes)));
  }
  d.push_back(fmt::format("it needs {}{}: {}", need.ToString(),
                          job.spec.TotalReplicas() > 1 ? ", all tasks started together" : "",
                          Join(shape, "; ")));
  const cluster::ClusterState& core = scheduling_.cluster();
  if (const PendingReason* reason = scheduling_.ReasonFor(id)) {
    e.unschedulable = reason->unschedulable;
    e.reserved_start = reason->reserved_start;
    d.push_back("the scheduler says: " + reason->reason);
    std::vector<std::string> drained =
        e.unschedulable ? DrainedNodesFor(job, nodes_) : std::vector<std::string>();
    if (!drained.empty()) {
      // Not "if such a node joins": such nodes are there, an admin set them aside.
      d.push_back(fmt::format(
          "only drained nodes could hold it: {}; it starts once an admin undrains one (cohort "
          "node undrain NODE), or change the spec (cohort kill, then submit a smaller job)",
          Join(drained, ", ")));
    } else if (e.unschedulable && core.Snapshot().nodes.empty()) {
      // Right after a master restart every agent is on its way back: no advice to shrink the
      // job, which any of them may hold.
      d.push_back(
          "no node is ready: agents register within seconds of starting, and again after a "
          "master restart; if none does, check that cohortd agent runs on each machine and "
          "reaches the master (cohort nodes)");
    } else if (e.unschedulable) {
      d.push_back(
          "no node of the cluster as it stands can hold it; it starts if such a node "
          "joins, or change the spec (cohort kill, then submit a smaller job)");
    }
  }
  // Free capacity, node by node.
  int64_t free_gpus = 0;
  int ready = 0;
  std::vector<std::pair<int64_t, std::string>> blocks;
  for (const auto& n : core.Snapshot().nodes) {
    ++ready;
    free_gpus += n.free.gpus;
    blocks.emplace_back(n.free.gpus, n.node_id);
  }
  std::sort(blocks.begin(), blocks.end(), std::greater<>());
  std::vector<std::string> largest;
  for (size_t i = 0; i < blocks.size() && i < 3; ++i) {
    largest.push_back(fmt::format("{} on {}", blocks[i].first, blocks[i].second));
  }
  d.push_back(fmt::format("{} ready node{}, {} GPU{} free; largest free blocks: {}", ready,
                          ready == 1 ? "" : "s", free_gpus, free_gpus == 1 ? "" : "s",
                          largest.empty() ? "none" : Join(largest, ", ")));
  // Its team.
  for (const auto& t : teams_.List()) {
    if (t.quota.name != job.spec.team) continue;
    std::string limit = t.quota.max_gpus ? fmt::format("may hold at most {}", *t.quota.max_gpus)
                                         : std::string("may borrow idle GPUs without limit");
    bool within = t.held.gpus + need.gpus <= t.quota.guaranteed_gpus;
    d.push_back(fmt::format(
        "team {} holds {} of its {} guaranteed GPUs and {}; with this job it would be {}",
        t.quota.name, t.held.gpus, t.quota.guaranteed_gpus, limit,
        within ? "within its guarantee (it may reclaim GPUs that other teams borrow)"
               : "borrowing (it waits for idle GPUs)"));
  }
  // Who is ahead of it: the policy's own order, not a guess at it.
  std::vector<PendingJob> pending;
  pending.reserve(jobs_.pending().size());
  size_t self = 0;
  for (JobId other : jobs_.pending()) {
    if (other == id) self = pending.size();
    pending.push_back(scheduling_.PendingOf(jobs_.At(other)));
    pending.back().preempted_for_it = core.Claimed(other);
  }
  const scheduler::SchedulerConfig& config = scheduling_.config();
  std::vector<size_t> order = scheduler::ConsiderationOrder(config, core.Snapshot(), pending, now);
  size_t ahead = 0, ahead_in_team = 0;
  for (size_t i : order) {
    if (i == self) break;
    ++ahead;
    ahead_in_team += pending[i].team == job.spec.team;
  }
  e.ahead = ahead;
  e.rank = RankOfJob(config, pending[self], now);
  if (e.rank) {
    for (auto& line : DescribeRank(*e.rank, config, now)) d.push_back(std::move(line));
  }
  d.push_back(
      fmt::format("policy {} ({}): {} of the {} waiting job{} come{} before it, {} of "
                  "them of team {}",
                  scheduler::PolicyName(config.policy), scheduler::DescribeOrder(config.policy),
                  ahead, pending.size(), pending.size() == 1 ? "" : "s", ahead == 1 ? "s" : "",
                  ahead_in_team, job.spec.team));
  if (e.reserved_start) {
    d.push_back(
        fmt::format("it holds a reservation and starts by {} at the latest (from the "
                    "max_runtime of the jobs running now)",
                    FormatTimestamp(*e.reserved_start)));
  }
  return e;
}

}  // namespace cohort::master
