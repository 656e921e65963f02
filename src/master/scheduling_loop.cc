#include "master/scheduling_loop.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "master/job_views.h"

namespace cohort::master {

SchedulingLoop::SchedulingLoop(JobBook& jobs, Journal& journal, const Clock& clock, EventLoop& loop,
                               std::unique_ptr<scheduler::Scheduler> scheduler,
                               size_t incremental_above)
    : jobs_(jobs),
      journal_(journal),
      clock_(clock),
      loop_(loop),
      dispatcher_(std::move(scheduler), incremental_above) {}

SchedulingLoop::~SchedulingLoop() = default;

void SchedulingLoop::RequestSchedule() {
  if (schedule_posted_) return;
  schedule_posted_ = true;
  loop_.Post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.lock()) Schedule();
  });
}

void SchedulingLoop::Reschedule() {
  if (Incremental()) {
    dispatcher_.MarkFullPassDue();
  } else {
    RequestSchedule();
  }
}

void SchedulingLoop::InvalidateResidue() {
  dispatcher_.Invalidate();
  RequestSchedule();
}

void SchedulingLoop::NoteBackoff(const Job& job) {
  if (job.not_before) WakeAt(*job.not_before);
}

void SchedulingLoop::NoteExclusion(const Job& job) {
  Timestamp now = clock_.Now();
  for (const auto& [node, until] : job.excluded_nodes) {
    if (until > now && until != kExcludedForGood) WakeAt(until);
  }
}

void SchedulingLoop::PutNode(const NodeRegistry::Entry& entry) {
  NodeCapacity n;
  n.node_id = entry.node.info.id;
  n.total = entry.node.info.Capacity();
  n.free = n.total;
  for (const auto& g : entry.node.info.gpus) n.free_gpus.push_back(g.index);
  n.gpu_model = entry.node.info.GpuModel();
  n.labels = entry.node.info.labels;
  n.topology = entry.topology;
  cluster_.UpsertNode(std::move(n), entry.node.Schedulable());
}

void SchedulingLoop::RestoreHolding(const Job& job) {
  // As it started, with only its live tasks (some may have ended, replicas may have been added).
  PendingJob as_started = PendingOf(job);
  as_started.tasks.clear();
  std::vector<TaskPlacement> placement;
  std::vector<Timestamp> task_started;
  std::vector<bool> leaving;
  Timestamp started_at = job.placed_at.value_or(job.submitted_at);
  for (const auto& t : job.tasks) {
    if (IsTerminal(t.state)) continue;
    as_started.tasks.push_back(
        TaskRequest{t.role, t.index, t.resources, DistinctNodes(job, t.role)});
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

PendingJob SchedulingLoop::PendingOf(const Job& job) const {
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
  p.constraints = PlacementConstraints(job.spec);
  p.constraints.preferred_nodes = staging_.PreferredNodes(job);
  // A node that holds its images starts it without a pull (docs/runtimes.md).
  for (const std::string& node : NodesHoldingImages(job))
    p.constraints.preferred_nodes.insert(node);
  Timestamp now = clock_.Now();
  for (const auto& [node, until] : job.excluded_nodes) {
    if (until > now) p.constraints.excluded_nodes.insert(node);
  }
  p.preemptions = job.preemptions;
  p.elastic = ElasticGroupsOf(job);
  p.estimate = jobs_.EstimateFor(job);
  // Beyond its team's guarantee, a sweep's trial is the first job reclaimed (docs/sweeps.md).
  p.sweep_trial = job.trial.has_value();
  return p;
}

const PendingReason* SchedulingLoop::ReasonFor(JobId id) const {
  auto it = last_reasons_.find(id);
  return it == last_reasons_.end() ? nullptr : &it->second;
}

bool SchedulingLoop::HoldBackForDatasets(Job& job, const std::vector<TaskPlacement>& placement) {
  std::vector<std::string> lacking = staging_.HoldBack(job, placement, clock_.Now());
  if (lacking.empty()) return false;
  // Its GPUs go back at once: other jobs may use them while the nodes fetch.
  cluster_.ReleaseJob(job.id);
  dispatcher_.Invalidate();
  job.message = fmt::format("waits while {} {} fetch its datasets (no GPU is held meanwhile)",
                            lacking.size() == 1 ? "node" : "nodes", fmt::join(lacking, ", "));
  spdlog::info("job {}: {}", job.id, job.message);
  jobs_.Commit(job, {jobs_.Event(job, "datasets", job.message)});
  for (const auto& node : lacking) taker_->TellNode(node);
  return true;
}

void SchedulingLoop::SettleStaging() {
  auto released = staging_.Settle(clock_.Now(),
                                  [&](const std::string& node) { return cluster_.IsReady(node); });
  for (const auto& r : released) {
    Job& job = jobs_.At(r.job);
    job.message = r.why.empty() ? "its datasets are on the nodes chosen for it"
                                : "starts without waiting for its datasets: " + r.why;
    if (!r.why.empty()) spdlog::warn("job {}: {}", job.id, job.message);
    jobs_.Commit(job, {jobs_.Event(job, "datasets", job.message)});
  }
  if (!released.empty()) Reschedule();
}

void SchedulingLoop::NoteDatasets(const std::string& node_id,
                                  const std::optional<std::vector<std::string>>& cached,
                                  const std::map<std::string, std::string>& failures) {
  staging_.NoteReport(node_id, cached, failures);
  if (cached || !failures.empty()) SettleStaging();
}

void SchedulingLoop::NoteImages(const std::string& node_id,
                                const std::optional<std::vector<std::string>>& cached) {
  if (!cached) return;
  node_images_[node_id] = std::set<std::string>(cached->begin(), cached->end());
}

std::set<std::string> SchedulingLoop::NodesHoldingImages(const Job& job) const {
  std::set<std::string> images;
  for (const auto& g : job.spec.tasks) {
    if (!g.image.empty()) images.insert(g.image);
  }
  std::set<std::string> holding;
  if (images.empty()) return holding;
  for (const auto& [node, held] : node_images_) {
    if (std::includes(held.begin(), held.end(), images.begin(), images.end())) holding.insert(node);
  }
  return holding;
}

std::optional<std::string> SchedulingLoop::WaitsForOthers(const Job& job, int offered) const {
  for (const Dependency& d : job.spec.depends_on) {
    const Job* dep = jobs_.Find(d.job);
    if (dep && IsTerminal(dep->state) && DependencyMet(d.on, dep->state == JobState::kSucceeded)) {
      continue;
    }
    return fmt::format("waits for job {} to {} (it is {})", d.job,
                       d.on == DependencyCondition::kSuccess   ? "succeed"
                       : d.on == DependencyCondition::kFailure ? "fail"
                                                               : "end",
                       dep ? JobStateName(dep->state) : "gone");
  }
  if (job.array && job.array->max_parallel > 0 &&
      jobs_.ArrayActive(job.array->id) + offered >= job.array->max_parallel) {
    return fmt::format("waits: {} jobs of array {} run, its max_parallel", job.array->max_parallel,
                       job.array->id);
  }
  return std::nullopt;
}

bool SchedulingLoop::StartDecided(Job& job, const std::vector<TaskPlacement>& placement) {
  if (HoldBackForDatasets(job, placement)) return false;
  // Decisions between passes may pick several jobs of one array: none beyond its max_parallel.
  if (WaitsForOthers(job)) {
    cluster_.ReleaseJob(job.id);
    dispatcher_.Invalidate();
    return false;
  }
  Status s = taker_->Start(job, JobPlacement{job.id, placement});
  if (s.ok()) return true;
  // The cluster core took the resources; the job did not start after all. A pass at once would
  // choose the same placement and fail the same way (no free port on the node, or no room in its
  // desired state: the scheduler counts neither), forever; the next full pass runs on the tick
  // instead. The job says why, and the log says it once, not on every pass.
  std::string why = fmt::format("not started: {}", s.message());
  if (job.message != why) {
    spdlog::error("placing job {}: {}", job.id, s.ToString());
    job.message = std::move(why);
    ++job.version;
    journal_.AnnounceJob(job.id);
  }
  cluster_.ReleaseJob(job.id);
  dispatcher_.Invalidate();
  return false;
}

void SchedulingLoop::Arrive(Job& job) {
  if (!Incremental()) return RequestSchedule();
  std::string reason;
  auto placement = dispatcher_.Arrive(cluster_, PendingOf(job), clock_.Now(), &reason);
  // A placement that could not be carried out has no reason in words: the job keeps its message
  // until the full pass that follows gives it one.
  if (!placement) {
    job.message = reason;
  } else {
    StartDecided(job, *placement);
  }
  if (!Incremental()) RequestSchedule();  // the decision could not be carried out
}

void SchedulingLoop::Released(const std::vector<std::pair<JobId, Task>>& tasks) {
  if (tasks.empty()) return;
  if (!Incremental()) return RequestSchedule();
  std::map<JobId, PendingJob> looked_up;
  Timestamp now = clock_.Now();
  auto lookup = [&](JobId id) -> const PendingJob* {
    if (!jobs_.pending().count(id) || !Placeable(jobs_.At(id), now)) return nullptr;
    auto it = looked_up.find(id);
    if (it == looked_up.end()) it = looked_up.emplace(id, PendingOf(jobs_.At(id))).first;
    return &it->second;
  };
  for (const auto& [id, task] : tasks) {
    if (!Incremental()) break;  // a decision failed: a full pass follows
    const Job& job = jobs_.At(id);
    // The array's next jobs were left out of the last pass for its max_parallel: only a full
    // pass offers them.
    if (job.array && job.array->max_parallel > 0) dispatcher_.MarkFullPassDue();
    auto started = dispatcher_.Released(
        cluster_, job.spec.team, {TaskRequest{task.role, task.index, task.resources}},
        {TaskPlacement{task.node_id, task.gpus}}, lookup, clock_.Now());
    for (const auto& p : started) StartDecided(jobs_.At(p.job_id), p.tasks);
  }
  if (!Incremental()) RequestSchedule();
}

void SchedulingLoop::Schedule() {
  schedule_posted_ = false;
  // Read-only: nothing may start; the master asks for a pass once it writes again.
  if (journal_.read_only()) return;
  Journal::Batch batch(journal_);  // every job the pass starts, in one commit
  std::vector<PendingJob> pending;
  pending.reserve(jobs_.pending().size());
  Timestamp now = clock_.Now();
  std::map<JobId, int> offered;  // by array: its jobs offered to this pass
  for (JobId id : jobs_.pending()) {
    Job& job = jobs_.At(id);
    if (BackingOff(job, now) || staging_.HeldBack(job.id)) continue;
    int& from_array = offered[job.array ? job.array->id : 0];
    if (auto why = WaitsForOthers(job, job.array ? from_array : 0)) {
      if (job.message != *why) {
        job.message = std::move(*why);
        ++job.version;
        journal_.AnnounceJob(job.id);
      }
      continue;
    }
    if (job.array) ++from_array;
    pending.push_back(PendingOf(job));
  }
  dispatch::PassResult pass = dispatcher_.FullPass(cluster_, pending, clock_.Now());
  if (!pass.ran) return;
  const cluster::Applied& applied = pass.applied;
  bool consistent = applied.consistent;
  // The cluster core has re-checked every part of the plan against the state as it is now and
  // taken what it uses; what is left is to make each part real.
  for (const auto& placement : applied.placements) {
    StartDecided(jobs_.At(placement.job_id), placement.tasks);
  }
  for (const auto& preemption : applied.preemptions) {
    ++preemptions_by_cause_[preemption.cause];
    taker_->Preempt(preemption);
  }
  recheck_at_ = pass.recheck_at;
  for (const auto& growth : applied.growths) consistent &= taker_->Grow(growth);
  for (const auto& shrink : applied.shrinks) taker_->Shrink(shrink);
  if (!consistent) InvalidateResidue();
  for (const auto& waiting : pass.waiting) {
    Job& job = jobs_.At(waiting.job_id);
    last_reasons_[job.id] = waiting;
    // Its datasets are fetched ahead to where it is reserved to start.
    for (const auto& node : staging_.NoteReserved(job, waiting.reserved_nodes)) {
      taker_->TellNode(node);
    }
    if (job.message == waiting.reason) continue;
    // Reasons are recomputed on every pass; keep them in memory only and tell watchers.
    job.message = waiting.reason;
    ++job.version;
    journal_.AnnounceJob(job.id);
  }
  // From `now`, read before the pending jobs were gathered: that is part of the pass too.
  passes_.Observe(clock_.Now() - now);
}

void SchedulingLoop::OnTick(Timestamp now) {
  SettleStaging();
  // A restart backoff or an exclusion is over: the job may be scheduled again, or elsewhere.
  if (wake_at_ && now >= *wake_at_) {
    wake_at_.reset();
    for (JobId id : jobs_.pending()) {
      const Job& job = jobs_.At(id);
      if (BackingOff(job, now)) NoteBackoff(job);
      NoteExclusion(job);
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
