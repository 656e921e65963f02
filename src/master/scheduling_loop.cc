// Scheduling: the cluster core kept in step with the jobs, full passes and the decisions between
// them through the dispatcher, making their decisions real, and the tick.
#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"
#include "common/units.h"
#include "master/job_views.h"

namespace cohort::master {

NodeCapacity Master::CapacityOf(const NodeEntry& entry) const {
  NodeCapacity n;
  n.node_id = entry.node.info.id;
  n.total = entry.node.info.Capacity();
  n.free = n.total;
  for (const auto& g : entry.node.info.gpus) n.free_gpus.push_back(g.index);
  n.gpu_model = entry.node.info.GpuModel();
  n.labels = entry.node.info.labels;
  n.topology = entry.topology;
  return n;
}

void Master::RestoreHolding(const Job& job) {
  // As it started, with only its live tasks (some may have ended, replicas may have been added).
  PendingJob as_started = PendingOf(job);
  as_started.tasks.clear();
  std::vector<TaskPlacement> placement;
  std::vector<Timestamp> task_started;
  std::vector<bool> leaving;
  Timestamp started_at = job.placed_at.value_or(job.submitted_at);
  for (const auto& t : job.tasks) {
    if (IsTerminal(t.state)) continue;
    as_started.tasks.push_back(TaskRequest{t.role, t.index, t.resources});
    placement.push_back(TaskPlacement{t.node_id, t.gpus});
    task_started.push_back(t.started_at.value_or(started_at));
    leaving.push_back(t.scaled_down);
  }
  RunningJob running = cluster::RunningFrom(as_started, placement, started_at);
  running.task_started = std::move(task_started);
  running.stopping = job.state == JobState::kStopping;
  running.stopping_for = job.preempted_for;
  cluster_.Restore(std::move(running), leaving);
  // Kept only if this attempt made it (ClusterState::NoteCheckpoint).
  if (job.last_checkpoint_at) {
    cluster_.NoteCheckpoint(job.id, std::min(*job.last_checkpoint_at, clock_.Now()));
  }
}

void Master::Reschedule() {
  if (Incremental()) {
    dispatcher_.MarkFullPassDue();
  } else {
    RequestSchedule();
  }
}

void Master::InvalidateResidue() {
  dispatcher_.Invalidate();
  RequestSchedule();
}

PendingJob Master::PendingOf(const Job& job) const {
  PendingJob p;
  p.job_id = job.id;
  p.team = job.spec.team;
  p.user = job.user;
  p.priority = job.spec.priority;
  p.submitted_at = job.submitted_at;
  p.tasks = TaskRequestsOf(job);
  p.max_runtime = job.spec.max_runtime;
  p.attained = AttainedService(job);
  // It began to wait again when its last attempt ended (a preemption, a failure, a lost node).
  if (!job.history.empty() && job.history.back().finished_at) {
    p.waiting_since = *job.history.back().finished_at;
  }
  p.constraints = job.spec.constraints;
  p.preemptions = job.preemptions;
  p.elastic = ElasticGroupsOf(job);
  p.estimate = estimates_.Get(history_, HistoryKeyOf(job));
  return p;
}

bool Master::StartDecided(Job& job, const std::vector<TaskPlacement>& placement) {
  Status s = ApplyPlacement(job, JobPlacement{job.id, placement});
  if (s.ok()) return true;
  // The cluster core took the resources; the job did not start after all. A pass at once would
  // choose the same placement and fail the same way (no free port on the node: the scheduler
  // does not count ports), forever; the next full pass runs on the tick instead.
  spdlog::error("placing job {}: {}", job.id, s.ToString());
  cluster_.ReleaseJob(job.id);
  dispatcher_.Invalidate();
  return false;
}

void Master::Released(const std::vector<std::pair<JobId, Task>>& tasks) {
  std::map<JobId, PendingJob> looked_up;
  Timestamp now = clock_.Now();
  auto lookup = [&](JobId id) -> const PendingJob* {
    if (!pending_.count(id) || BackingOff(jobs_.at(id), now)) return nullptr;
    auto it = looked_up.find(id);
    if (it == looked_up.end()) it = looked_up.emplace(id, PendingOf(jobs_.at(id))).first;
    return &it->second;
  };
  for (const auto& [id, task] : tasks) {
    if (!Incremental()) break;  // a decision failed: a full pass follows
    const Job& job = jobs_.at(id);
    auto started = dispatcher_.Released(
        cluster_, job.spec.team, {TaskRequest{task.role, task.index, task.resources}},
        {TaskPlacement{task.node_id, task.gpus}}, lookup, clock_.Now());
    for (const auto& p : started) StartDecided(jobs_.at(p.job_id), p.tasks);
  }
  if (!Incremental()) RequestSchedule();
}

void Master::Schedule() {
  schedule_posted_ = false;
  WriteBatch batch(*this);  // every job the pass starts, in one commit
  std::vector<PendingJob> pending;
  pending.reserve(pending_.size());
  Timestamp now = clock_.Now();
  for (JobId id : pending_) {
    const Job& job = jobs_.at(id);
    if (!BackingOff(job, now)) pending.push_back(PendingOf(job));
  }
  dispatch::PassResult pass = dispatcher_.FullPass(cluster_, pending, clock_.Now());
  if (!pass.ran) return;
  const cluster::Applied& applied = pass.applied;
  bool consistent = applied.consistent;
  // The cluster core has re-checked every part of the plan against the state as it is now and
  // taken what it uses; what is left is to make each part real.
  for (const auto& placement : applied.placements) {
    StartDecided(jobs_.at(placement.job_id), placement.tasks);
  }
  for (const auto& preemption : applied.preemptions) {
    Job& job = jobs_.at(preemption.victim);
    std::vector<JobEvent> events;
    ++preemptions_by_cause_[preemption.cause];
    ++job.preemptions;
    job.preempted_for = preemption.for_job;
    if (job.spec.restart.RestartsOn(RestartCause::kPreempted)) {
      StopJob(job, JobState::kPending, preemption.reason, events);
    } else {
      StopJob(job, JobState::kFailed,
              preemption.reason + " (restart.on does not include preempted)", events);
    }
    events.back().type = "preempted";
    spdlog::info("job {}: {}", job.id, preemption.reason);
    FinishIfStopped(job, events);
    Commit(job, std::move(events));
  }
  recheck_at_ = pass.recheck_at;
  for (const auto& growth : applied.growths) consistent &= ApplyGrowth(growth);
  for (const auto& shrink : applied.shrinks) ApplyShrink(shrink);
  if (!consistent) InvalidateResidue();
  for (const auto& waiting : pass.waiting) {
    Job& job = jobs_.at(waiting.job_id);
    last_reasons_[job.id] = waiting;
    if (job.message == waiting.reason) continue;
    // Reasons are recomputed on every pass; keep them in memory only and tell watchers.
    job.message = waiting.reason;
    ++job.version;
    AnnounceJob(job.id);
  }
  // From `now`, read before the pending jobs were gathered: that is part of the pass too.
  scheduling_passes_.Observe(clock_.Now() - now);
}

bool Master::ApplyGrowth(const Growth& growth) {
  Job& job = jobs_.at(growth.job_id);
  std::set<std::string> nodes;
  std::vector<std::string> added;
  for (size_t i = 0; i < growth.tasks.size(); ++i) {
    NodeEntry& entry = nodes_.At(growth.placement[i].node_id);
    Task t;
    t.role = growth.tasks[i].role;
    t.index = growth.tasks[i].index;
    t.rank = static_cast<int>(job.tasks.size());
    t.resources = growth.tasks[i].resources;
    t.node_id = growth.placement[i].node_id;
    t.host = entry.node.info.address;
    t.gpus = growth.placement[i].gpus;
    t.port = AssignPort(entry);
    if (t.port == 0) {
      cluster_.ReleaseTask(job.id, t.role, t.index);  // no port for it: it does not start
      continue;
    }
    t.started_at = clock_.Now();
    t.held_since = t.started_at;
    nodes.insert(t.node_id);
    added.push_back(fmt::format("{} on {}", t.Name(), t.node_id));
    NoteHold(job, t);
    job.tasks.push_back(std::move(t));
  }
  for (const auto& n : nodes) {
    uint64_t version = BumpNode(n);
    for (auto& t : job.tasks) {
      if (t.node_id == n && t.assigned_version == 0) t.assigned_version = version;
    }
  }
  std::vector<std::string> counts;
  for (const auto& g : job.spec.tasks) {
    if (!g.elastic()) continue;
    int n = static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(), [&](const Task& t) {
      return t.role == g.role && !t.scaled_down && !IsTerminal(t.state);
    }));
    counts.push_back(fmt::format("{} {} of {}..{}", n, g.role, g.replicas, g.max_replicas));
  }
  spdlog::info("job {} grew: {}", job.id, Join(added, "; "));
  Commit(job,
         {Event(job, "grown",
                fmt::format("{} into idle GPUs; now {}", Join(added, ", "), Join(counts, ", ")))});
  return true;
}

void Master::ApplyShrink(const Shrink& shrink) {
  auto it = jobs_.find(shrink.job_id);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  if (job.state != JobState::kRunning && job.state != JobState::kStarting) return;
  std::set<std::string> nodes;
  std::vector<std::string> names;
  for (auto& t : job.tasks) {
    if (t.role != shrink.role || IsTerminal(t.state) || t.stop_requested) continue;
    if (std::find(shrink.indices.begin(), shrink.indices.end(), t.index) == shrink.indices.end()) {
      continue;
    }
    t.stop_requested = true;
    t.scaled_down = true;
    nodes.insert(t.node_id);
  }
  for (int index : shrink.indices) {  // highest first, as the scheduler chose them
    for (const auto& t : job.tasks) {
      if (t.role == shrink.role && t.index == index && t.scaled_down) names.push_back(t.Name());
    }
  }
  if (names.empty()) return;
  for (const auto& n : nodes) BumpNode(n);
  spdlog::info("job {} shrinks: {}", job.id, shrink.reason);
  Commit(job,
         {Event(job, "shrunk", fmt::format("{} stopped: {}", Join(names, ", "), shrink.reason))});
}

int Master::AssignPort(NodeEntry& entry) {
  std::set<int> used;
  for (JobId id : active_) {
    for (const auto& t : jobs_.at(id).tasks) {
      if (t.node_id == entry.node.info.id && !IsTerminal(t.state)) used.insert(t.port);
    }
  }
  return NodeRegistry::AssignPort(entry, used);
}

// --- Time ---

void Master::Tick() {
  Timestamp now = clock_.Now();
  // Outside the batch: a prune that fails (a full disk) changes nothing in memory and is tried
  // again later, and must not take the batch's job writes down with it.
  PruneAudit(now);
  WriteBatch batch(*this);
  CheckNodeTimeouts(now);
  AdviseJobs(now);
  std::vector<JobId> active(active_.begin(), active_.end());
  for (JobId id : active) {
    Job& job = jobs_.at(id);
    if (!job.spec.max_runtime || !job.placed_at) continue;
    if (job.state != JobState::kStarting && job.state != JobState::kRunning) continue;
    if (now - *job.placed_at <= *job.spec.max_runtime) continue;
    std::vector<JobEvent> events;
    StopJob(job, JobState::kFailed,
            fmt::format("exceeded its max_runtime of {}", FormatDuration(*job.spec.max_runtime)),
            events);
    FinishIfStopped(job, events);
    Commit(job, std::move(events));
  }
  // A restart backoff is over: the job may be scheduled again.
  if (backoff_ends_ && now >= *backoff_ends_) {
    backoff_ends_.reset();
    for (JobId id : pending_) {
      const Job& job = jobs_.at(id);
      if (BackingOff(job, now)) NoteBackoff(job);
    }
    Reschedule();
  }
  // Time alone changes a decision now (a minimum run time is over, say).
  if (recheck_at_ && now >= *recheck_at_) {
    recheck_at_.reset();
    dispatcher_.MarkFullPassDue();
  }
  // Between passes only small decisions were made: the full pass that was put off runs now.
  if (dispatcher_.full_pass_due() && !schedule_posted_) Schedule();
}

}  // namespace cohort::master
