#include "master/master.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "common/strings.h"
#include "common/units.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

std::string DescribeExit(const Task& t) {
  if (t.state == TaskState::kLost) return fmt::format("{} was lost by its agent", t.Name());
  if (t.signal) return fmt::format("{} was killed by signal {}", t.Name(), *t.signal);
  if (t.exit_code) return fmt::format("{} exited with code {}", t.Name(), *t.exit_code);
  return fmt::format("{} ended", t.Name());
}

}  // namespace

Master::Master(MasterConfig config, std::unique_ptr<state::StateStore> store,
               std::unique_ptr<scheduler::Scheduler> scheduler, const Clock& clock, Post post)
    : config_(std::move(config)),
      logs_(config_.data_dir + "/logs"),
      store_(std::move(store)),
      scheduler_(std::move(scheduler)),
      clock_(clock),
      post_(std::move(post)) {
  if (config_.storage_root.empty()) config_.storage_root = config_.data_dir + "/storage";
}

StatusOr<std::unique_ptr<Master>> Master::Create(MasterConfig config,
                                                 std::unique_ptr<state::StateStore> store,
                                                 std::unique_ptr<scheduler::Scheduler> scheduler,
                                                 const Clock& clock, Post post) {
  std::unique_ptr<Master> m(
      new Master(std::move(config), std::move(store), std::move(scheduler), clock, post));
  COHORT_RETURN_IF_ERROR(m->Load());
  return m;
}

Status Master::Load() {
  std::error_code ec;
  fs::create_directories(config_.data_dir + "/logs", ec);
  if (ec)
    return Status::Internal(fmt::format("creating {}/logs: {}", config_.data_dir, ec.message()));
  fs::create_directories(config_.storage_root, ec);
  if (ec)
    return Status::Internal(fmt::format("creating {}: {}", config_.storage_root, ec.message()));

  COHORT_ASSIGN_OR_RETURN(auto jobs, store_->LoadJobs());
  // Versions must keep rising across restarts, so that an agent's applied version from before
  // the restart never looks newer than what this master hands out.
  uint64_t max_version = static_cast<uint64_t>(ToMicros(clock_.Now()));
  for (auto& job : jobs) {
    for (const auto& t : job.tasks) max_version = std::max(max_version, t.assigned_version);
    if (job.state == JobState::kPending) pending_.insert(job.id);
    if (job.state == JobState::kStarting || job.state == JobState::kRunning ||
        job.state == JobState::kStopping) {
      active_.insert(job.id);
    }
    JobId id = job.id;
    jobs_.emplace(id, std::move(job));
  }
  next_version_ = max_version + 1;
  COHORT_ASSIGN_OR_RETURN(teams_, store_->LoadTeams());
  COHORT_ASSIGN_OR_RETURN(auto nodes, store_->LoadNodes());
  for (auto& node : nodes) {
    std::string id = node.info.id;
    auto topology = std::make_shared<GpuTopology>(node.info.Topology());
    nodes_[id] = NodeEntry{std::move(node), next_version_++, topology, 0};
  }
  spdlog::info("state loaded: {} jobs ({} pending, {} active), {} nodes", jobs_.size(),
               pending_.size(), active_.size(), nodes_.size());
  if (!pending_.empty()) RequestSchedule();
  return Status::Ok();
}

void Master::RequestSchedule() {
  if (schedule_posted_) return;
  schedule_posted_ = true;
  post_([this] { Schedule(); });
}

uint64_t Master::BumpNode(const std::string& node_id) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return 0;
  it->second.version = next_version_++;
  if (listener_) listener_->OnNodeChanged(node_id);
  return it->second.version;
}

JobEvent Master::Event(const Job& job, std::string type, std::string message) const {
  return JobEvent{job.id, clock_.Now(), std::move(type), std::move(message)};
}

Status Master::Persist(Job& job, std::vector<JobEvent> events) {
  ++job.version;
  Status s = store_->SaveJob(job, events);
  if (!s.ok()) spdlog::error("saving job {}: {}", job.id, s.ToString());
  if (listener_) listener_->OnJobChanged(job.id);
  return s;
}

// --- Jobs ---

StatusOr<Job> Master::Submit(JobSpec spec, std::string user) {
  bool known = spec.team == kDefaultTeam ||
               std::any_of(teams_.begin(), teams_.end(),
                           [&](const TeamQuota& t) { return t.name == spec.team; });
  std::string fallback_note;
  if (!known) {
    if (config_.unknown_team_fallback.empty()) {
      std::string line = fmt::format(
          "team: \"{}\" is not a team; an admin creates it with: cohort team set {} --gpus N",
          spec.team, spec.team);
      return Status::InvalidArgument("job spec has 1 error", {line});
    }
    fallback_note = fmt::format(" (team {} does not exist: moved to team {})", spec.team,
                                config_.unknown_team_fallback);
    spec.team = config_.unknown_team_fallback;
  }
  Job job;
  job.spec = std::move(spec);
  job.user = std::move(user);
  job.state = JobState::kPending;
  job.submitted_at = clock_.Now();
  job.message = "waiting for the scheduler";
  job.version = 1;
  Resources total = job.spec.TotalResources();
  JobEvent submitted{
      0, job.submitted_at, "submitted",
      fmt::format("by {}: {} task{}, {}{}", job.user, job.spec.TotalReplicas(),
                  job.spec.TotalReplicas() == 1 ? "" : "s", total.ToString(), fallback_note)};
  COHORT_ASSIGN_OR_RETURN(Job stored, store_->CreateJob(std::move(job), {submitted}));
  last_reasons_.erase(stored.id);
  JobId id = stored.id;
  pending_.insert(id);
  auto [it, inserted] = jobs_.emplace(id, std::move(stored));
  COHORT_CHECK(inserted);
  spdlog::info("job {} ({}) submitted by {}", id, it->second.spec.name, it->second.user);
  if (IncrementalMode()) {
    std::string reason;
    auto placement =
        scheduler::DecideArrival(*residue_, PendingOf(it->second), clock_.Now(), &reason);
    if (!placement || !StartBetweenPasses(id, *placement)) it->second.message = reason;
    full_pass_due_ = true;
  } else {
    RequestSchedule();
  }
  if (listener_) listener_->OnJobChanged(id);
  return it->second;
}

std::vector<const Job*> Master::ListJobs(const JobFilter& filter) const {
  std::vector<const Job*> out;
  for (const auto& [id, job] : jobs_) {
    if (filter.state && job.state != *filter.state) continue;
    out.push_back(&job);
  }
  if (filter.limit && out.size() > filter.limit) {
    out.erase(out.begin(), out.end() - static_cast<ptrdiff_t>(filter.limit));
  }
  return out;
}

StatusOr<const Job*> Master::GetJob(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound(fmt::format("job {} does not exist", id));
  return &it->second;
}

StatusOr<const Job*> Master::Kill(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound(fmt::format("job {} does not exist", id));
  Job& job = it->second;
  if (IsTerminal(job.state)) {
    return Status::FailedPrecondition(
        fmt::format("job {} has already ended ({})", id, JobStateName(job.state)));
  }
  std::vector<JobEvent> events;
  if (job.state == JobState::kPending) {
    pending_.erase(id);
    last_reasons_.erase(id);
    job.state = JobState::kKilled;
    job.finished_at = clock_.Now();
    job.message = "killed while pending";
    events.push_back(Event(job, "killed", "killed while pending"));
  } else {
    StopJob(job, JobState::kKilled, "killed by request", events);
    FinishIfStopped(job, events);
  }
  COHORT_RETURN_IF_ERROR(Persist(job, std::move(events)));
  return &job;
}

StatusOr<std::vector<JobEvent>> Master::Events(JobId id) {
  if (!jobs_.count(id)) return Status::NotFound(fmt::format("job {} does not exist", id));
  return store_->LoadEvents(id);
}

StatusOr<Explanation> Master::Explain(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound(fmt::format("job {} does not exist", id));
  const Job& job = it->second;
  Explanation e;
  e.state = job.state;
  e.summary = job.message;
  auto& d = e.details;
  Resources need = job.spec.TotalResources();
  if (job.state != JobState::kPending) {
    if (IsTerminal(job.state)) {
      d.push_back(fmt::format("it ended {}: {}", JobStateName(job.state), job.message));
    } else {
      std::set<std::string> nodes;
      for (const auto& t : job.tasks) nodes.insert(t.node_id);
      d.push_back(fmt::format("it is {} (attempt {}) on {}", JobStateName(job.state), job.attempt,
                              Join(std::vector<std::string>(nodes.begin(), nodes.end()), ", ")));
    }
    return e;
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
  auto reason = last_reasons_.find(id);
  if (reason != last_reasons_.end()) {
    e.unschedulable = reason->second.unschedulable;
    e.reserved_start = reason->second.reserved_start;
    d.push_back("the scheduler says: " + reason->second.reason);
    if (e.unschedulable) {
      d.push_back(
          "no node of the cluster as it stands can hold it; it starts if such a node "
          "joins, or change the spec (cohort kill, then submit a smaller job)");
    }
  }
  // Free capacity, node by node.
  int64_t free_gpus = 0;
  int ready = 0;
  std::vector<std::pair<int64_t, std::string>> blocks;
  for (const auto& n : Snapshot().nodes) {
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
  for (const auto& t : ListTeams()) {
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
  // Who is ahead of it in its team.
  int higher = 0, earlier = 0;
  for (JobId other : pending_) {
    if (other == id) continue;
    const Job& o = jobs_.at(other);
    if (o.spec.team != job.spec.team) continue;
    if (o.spec.priority > job.spec.priority) {
      ++higher;
    } else if (o.spec.priority == job.spec.priority && o.submitted_at < job.submitted_at) {
      ++earlier;
    }
  }
  if (higher)
    d.push_back(fmt::format("{} pending job{} of higher priority in its team", higher,
                            higher == 1 ? " is" : "s are"));
  if (earlier)
    d.push_back(
        fmt::format("{} pending job{} of its team with the same priority "
                    "were submitted before it",
                    earlier, earlier == 1 ? "" : "s"));
  if (e.reserved_start) {
    d.push_back(
        fmt::format("it holds a reservation and starts by {} at the latest (from the "
                    "max_runtime of the jobs running now)",
                    FormatTimestamp(*e.reserved_start)));
  }
  return e;
}

void Master::StopJob(Job& job, JobState target, std::string reason, std::vector<JobEvent>& events) {
  // A kill overrides a pending requeue; a requeue never overrides a kill.
  if (job.state == JobState::kStopping && job.stop_target == JobState::kKilled) return;
  job.state = JobState::kStopping;
  job.stop_target = target;
  job.message = reason;
  std::set<std::string> nodes;
  for (auto& t : job.tasks) {
    if (IsTerminal(t.state) || t.stop_requested) continue;
    t.stop_requested = true;
    nodes.insert(t.node_id);
  }
  for (const auto& n : nodes) BumpNode(n);
  events.push_back(
      Event(job, "stopping",
            fmt::format("{}; then {}", reason,
                        target == JobState::kPending ? "requeue" : JobStateName(target))));
}

void Master::FinishIfStopped(Job& job, std::vector<JobEvent>& events) {
  if (job.state != JobState::kStopping) return;
  for (const auto& t : job.tasks) {
    if (!IsTerminal(t.state)) return;
  }
  JobState target = job.stop_target.value_or(JobState::kFailed);
  Timestamp now = clock_.Now();
  std::string result =
      target == JobState::kPending && !job.preempted_for ? "failed: " + job.message : job.message;
  job.history.push_back(AttemptSummary{job.attempt, job.placed_at, now, result});
  job.stop_target.reset();
  job.preempted_for.reset();
  active_.erase(job.id);
  if (target == JobState::kPending) {
    job.state = JobState::kPending;
    job.tasks.clear();
    job.placed_at.reset();
    job.running_at.reset();
    job.message = fmt::format("requeued after attempt {} ({})", job.attempt, result);
    pending_.insert(job.id);
    events.push_back(Event(job, "requeued", job.message));
  } else {
    job.state = target;
    job.finished_at = now;
    events.push_back(
        Event(job, "finished", fmt::format("{}: {}", JobStateName(target), job.message)));
  }
  Reschedule();
}

// --- Scheduling ---

std::vector<TaskRequest> TaskRequestsOf(const Job& job) {
  std::vector<TaskRequest> tasks;
  for (const auto& g : job.spec.tasks) {
    for (int i = 0; i < g.replicas; ++i) tasks.push_back(TaskRequest{g.role, i, g.resources});
  }
  return tasks;
}

// GPU time a job has received in its ended attempts (least-attained-service policy).
Duration AttainedService(const Job& job) {
  Duration total{};
  int64_t gpus = job.spec.TotalResources().gpus;
  for (const auto& a : job.history) {
    if (a.started_at && a.finished_at) total += (*a.finished_at - *a.started_at) * gpus;
  }
  return total;
}

ClusterSnapshot Master::Snapshot() const {
  ClusterSnapshot snapshot;
  std::map<std::string, size_t> index;
  for (const auto& [id, entry] : nodes_) {
    if (entry.node.state != NodeState::kReady) continue;
    NodeCapacity n;
    n.node_id = id;
    n.total = entry.node.info.Capacity();
    n.free = n.total;
    for (const auto& g : entry.node.info.gpus) n.free_gpus.push_back(g.index);
    n.gpu_model = entry.node.info.GpuModel();
    n.labels = entry.node.info.labels;
    n.topology = entry.topology;
    index[id] = snapshot.nodes.size();
    snapshot.nodes.push_back(std::move(n));
  }
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    RunningJob running;
    running.job_id = id;
    running.team = job.spec.team;
    running.user = job.user;
    running.priority = job.spec.priority;
    running.submitted_at = job.submitted_at;
    running.started_at = job.placed_at.value_or(job.submitted_at);
    if (job.spec.max_runtime) running.ends_by = running.started_at + *job.spec.max_runtime;
    running.stopping = job.state == JobState::kStopping;
    running.stopping_for = job.preempted_for;
    running.attained = AttainedService(job);
    running.preemptions = job.preemptions;
    running.constraints = job.spec.constraints;
    // Replicas on their way out (an elastic shrink) count as a stopping job of their own.
    RunningJob leaving = running;
    leaving.stopping = true;
    for (const auto& t : job.tasks) {
      if (IsTerminal(t.state)) continue;
      RunningJob& holder = t.scaled_down ? leaving : running;
      holder.tasks.push_back(TaskRequest{t.role, t.index, t.resources});
      holder.placement.push_back(TaskPlacement{t.node_id, t.gpus});
      holder.task_started.push_back(t.started_at.value_or(running.started_at));
      auto it = index.find(t.node_id);
      if (it == index.end()) continue;
      NodeCapacity& n = snapshot.nodes[it->second];
      n.free -= t.resources;
      for (int g : t.gpus) std::erase(n.free_gpus, g);
    }
    for (const auto& g : job.spec.tasks) {
      if (!g.elastic()) continue;
      int next = 0;
      for (const auto& t : job.tasks) {
        if (t.role == g.role) next = std::max(next, t.index + 1);
      }
      running.elastic.push_back(
          RunningJob::ElasticGroup{g.role, g.replicas, g.max_replicas, g.resources, next});
    }
    snapshot.running.push_back(std::move(running));
    if (!leaving.tasks.empty()) snapshot.running.push_back(std::move(leaving));
  }
  return snapshot;
}

// Takes the placement's resources from `free` if every one of them is still there.
bool TakeIfStillFree(const JobPlacement& p, const std::vector<TaskRequest>& tasks,
                     std::map<std::string, NodeCapacity>& free) {
  if (p.tasks.size() != tasks.size()) return false;
  std::map<std::string, NodeCapacity> changed;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string& id = p.tasks[i].node_id;
    if (!changed.count(id)) {
      auto it = free.find(id);
      if (it == free.end()) return false;
      changed[id] = it->second;
    }
    NodeCapacity& n = changed[id];
    if (static_cast<int64_t>(p.tasks[i].gpus.size()) != tasks[i].resources.gpus) return false;
    if (!tasks[i].resources.FitsIn(n.free)) return false;
    for (int g : p.tasks[i].gpus) {
      auto gpu = std::find(n.free_gpus.begin(), n.free_gpus.end(), g);
      if (gpu == n.free_gpus.end()) return false;
      n.free_gpus.erase(gpu);
    }
    n.free -= tasks[i].resources;
  }
  for (auto& [id, n] : changed) free[id] = std::move(n);
  return true;
}

bool Master::AnyElasticCanGrow() const {
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    if (job.state != JobState::kRunning && job.state != JobState::kStarting) continue;
    for (const auto& g : job.spec.tasks) {
      if (!g.elastic()) continue;
      int live =
          static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(), [&](const Task& t) {
            return t.role == g.role && !t.scaled_down && !IsTerminal(t.state);
          }));
      if (live < g.max_replicas) return true;
    }
  }
  return false;
}

void Master::Reschedule() {
  if (IncrementalMode()) {
    full_pass_due_ = true;
  } else {
    RequestSchedule();
  }
}

void Master::InvalidateResidue() {
  residue_.reset();
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
  p.constraints = job.spec.constraints;
  p.preempted_for_it = preempted_for_.count(job.id) > 0;
  return p;
}

bool Master::StartBetweenPasses(JobId id, const std::vector<TaskPlacement>& placement) {
  Job& job = jobs_.at(id);
  // What the tasks that run now leave free on the nodes this placement uses.
  std::map<std::string, NodeCapacity> free;
  for (const auto& p : placement) {
    auto node = nodes_.find(p.node_id);
    if (node == nodes_.end() || node->second.node.state != NodeState::kReady) {
      InvalidateResidue();
      return false;
    }
    if (free.count(p.node_id)) continue;
    NodeCapacity n;
    n.node_id = p.node_id;
    n.total = node->second.node.info.Capacity();
    n.free = n.total;
    for (const auto& g : node->second.node.info.gpus) n.free_gpus.push_back(g.index);
    free[p.node_id] = std::move(n);
  }
  for (JobId other : active_) {
    for (const auto& t : jobs_.at(other).tasks) {
      auto it = free.find(t.node_id);
      if (it == free.end() || IsTerminal(t.state)) continue;
      it->second.free -= t.resources;
      for (int g : t.gpus) std::erase(it->second.free_gpus, g);
    }
  }
  if (job.state != JobState::kPending ||
      !TakeIfStillFree(JobPlacement{id, placement}, TaskRequestsOf(job), free)) {
    spdlog::warn("decision for job {} between passes no longer fits; full pass", id);
    InvalidateResidue();
    return false;
  }
  Status s = ApplyPlacement(job, JobPlacement{id, placement});
  if (!s.ok()) {
    spdlog::error("placing job {}: {}", id, s.ToString());
    InvalidateResidue();
    return false;
  }
  return true;
}

void Master::Released(const std::vector<std::pair<JobId, Task>>& tasks) {
  std::map<JobId, PendingJob> looked_up;
  auto lookup = [&](JobId id) -> const PendingJob* {
    if (!pending_.count(id)) return nullptr;
    auto it = looked_up.find(id);
    if (it == looked_up.end()) it = looked_up.emplace(id, PendingOf(jobs_.at(id))).first;
    return &it->second;
  };
  for (const auto& [id, task] : tasks) {
    if (!residue_) return;  // a failed decision invalidated it: a full pass follows
    const Job& job = jobs_.at(id);
    auto started = scheduler::DecideAfterRelease(
        *residue_, job.spec.team, {TaskRequest{task.role, task.index, task.resources}},
        {TaskPlacement{task.node_id, task.gpus}}, lookup, clock_.Now());
    for (const auto& p : started) StartBetweenPasses(p.job_id, p.tasks);
  }
  full_pass_due_ = true;
}

void Master::Schedule() {
  schedule_posted_ = false;
  full_pass_due_ = false;
  residue_.reset();
  if (pending_.empty() && !AnyElasticCanGrow()) return;
  ClusterSnapshot snapshot = Snapshot();
  snapshot.teams = teams_;
  std::erase_if(preempted_for_, [&](JobId id) { return !pending_.count(id); });
  std::vector<JobId> claimed(preempted_for_.begin(), preempted_for_.end());
  std::vector<PendingJob> pending;
  pending.reserve(pending_.size());
  for (JobId id : pending_) pending.push_back(PendingOf(jobs_.at(id)));
  scheduler::PassResidue residue;
  Plan plan =
      scheduler_->Schedule(scheduler::SchedulingInput{snapshot, pending, clock_.Now()}, residue);
  bool consistent = true;

  // Propose, then commit: each placement is checked against the state as it is now, GPU by GPU.
  // Nothing else changes the state while this runs, so one snapshot, kept up to date, serves.
  std::map<std::string, NodeCapacity> free;
  for (auto& n : snapshot.nodes) free[n.node_id] = std::move(n);
  for (const auto& placement : plan.placements) {
    Job& job = jobs_.at(placement.job_id);
    if (job.state != JobState::kPending || !TakeIfStillFree(placement, TaskRequestsOf(job), free)) {
      spdlog::warn("plan for job {} no longer fits; rescheduling", job.id);
      RequestSchedule();
      consistent = false;
      continue;
    }
    Status s = ApplyPlacement(job, placement);
    if (!s.ok()) {
      spdlog::error("placing job {}: {}", job.id, s.ToString());
      consistent = false;
    }
  }
  for (const auto& preemption : plan.preemptions) {
    auto victim = jobs_.find(preemption.victim);
    if (victim == jobs_.end() || !active_.count(preemption.victim) ||
        victim->second.state == JobState::kStopping) {
      continue;
    }
    Job& job = victim->second;
    std::vector<JobEvent> events;
    ++job.preemptions;
    job.preempted_for = preemption.for_job;
    preempted_for_.insert(preemption.for_job);
    StopJob(job, JobState::kPending, preemption.reason, events);
    events.back().type = "preempted";
    spdlog::info("job {}: {}", job.id, preemption.reason);
    FinishIfStopped(job, events);
    (void)Persist(job, std::move(events));
  }
  // A claim lasts while victims stop for the job and for the pass after that: a job that could
  // not start even then goes back to its place in the order instead of staying ahead of all.
  std::set<JobId> awaited;
  for (JobId id : active_) {
    const Job& j = jobs_.at(id);
    if (j.state == JobState::kStopping && j.preempted_for) awaited.insert(*j.preempted_for);
  }
  for (JobId id : claimed) {
    if (!awaited.count(id)) preempted_for_.erase(id);
  }
  recheck_at_ = plan.recheck_at;
  for (const auto& growth : plan.growths) consistent &= ApplyGrowth(growth, free);
  for (const auto& shrink : plan.shrinks) ApplyShrink(shrink);
  if (consistent) residue_ = std::move(residue);
  for (const auto& waiting : plan.waiting) {
    Job& job = jobs_.at(waiting.job_id);
    last_reasons_[job.id] = waiting;
    if (job.message == waiting.reason) continue;
    // Reasons are recomputed on every pass; keep them in memory only and tell watchers.
    job.message = waiting.reason;
    ++job.version;
    if (listener_) listener_->OnJobChanged(job.id);
  }
}

bool Master::ApplyGrowth(const Growth& growth, std::map<std::string, NodeCapacity>& free) {
  auto it = jobs_.find(growth.job_id);
  if (it == jobs_.end()) return false;
  Job& job = it->second;
  if (job.state != JobState::kRunning && job.state != JobState::kStarting) return false;
  if (!TakeIfStillFree(JobPlacement{job.id, growth.placement}, growth.tasks, free)) {
    RequestSchedule();
    return false;
  }
  std::set<std::string> nodes;
  std::vector<std::string> added;
  for (size_t i = 0; i < growth.tasks.size(); ++i) {
    NodeEntry& entry = nodes_.at(growth.placement[i].node_id);
    Task t;
    t.role = growth.tasks[i].role;
    t.index = growth.tasks[i].index;
    t.rank = static_cast<int>(job.tasks.size());
    t.resources = growth.tasks[i].resources;
    t.node_id = growth.placement[i].node_id;
    t.host = entry.node.info.address;
    t.gpus = growth.placement[i].gpus;
    t.port = AssignPort(entry);
    if (t.port == 0) continue;
    t.started_at = clock_.Now();
    nodes.insert(t.node_id);
    added.push_back(fmt::format("{} on {}", t.Name(), t.node_id));
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
  (void)Persist(
      job,
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
  (void)Persist(
      job, {Event(job, "shrunk", fmt::format("{} stopped: {}", Join(names, ", "), shrink.reason))});
}

int Master::AssignPort(NodeEntry& entry) {
  const PortRange& range = entry.node.info.ports;
  int size = range.last - range.first + 1;
  std::set<int> used;
  for (JobId id : active_) {
    for (const auto& t : jobs_.at(id).tasks) {
      if (t.node_id == entry.node.info.id && !IsTerminal(t.state)) used.insert(t.port);
    }
  }
  for (int i = 0; i < size; ++i) {
    int port = range.first + (entry.next_port_offset + i) % size;
    if (!used.count(port)) {
      entry.next_port_offset = (port - range.first + 1) % size;
      return port;
    }
  }
  return 0;
}

framework::JobDirectories Master::DirectoriesOf(const Job& job) const {
  std::string base = fmt::format("{}/jobs/{}", config_.storage_root, job.id);
  return framework::JobDirectories{base + "/checkpoints", base + "/outputs", base + "/logs"};
}

Status Master::ApplyPlacement(Job& job, const JobPlacement& placement) {
  std::vector<TaskRequest> requests = TaskRequestsOf(job);
  std::vector<Task> tasks;
  std::set<std::string> nodes;
  for (size_t i = 0; i < requests.size(); ++i) {
    NodeEntry& entry = nodes_.at(placement.tasks[i].node_id);
    Task t;
    t.role = requests[i].role;
    t.index = requests[i].index;
    t.rank = static_cast<int>(i);
    t.resources = requests[i].resources;
    t.node_id = placement.tasks[i].node_id;
    t.host = entry.node.info.address;
    t.gpus = placement.tasks[i].gpus;
    t.port = AssignPort(entry);
    if (t.port == 0) {
      return Status::Unavailable(fmt::format("node {} has no free port in {}-{}", t.node_id,
                                             entry.node.info.ports.first,
                                             entry.node.info.ports.last));
    }
    tasks.push_back(std::move(t));
    nodes.insert(placement.tasks[i].node_id);
  }
  // Directories first: a task must find them when it starts.
  framework::JobDirectories dirs = DirectoriesOf(job);
  for (const auto& d : {dirs.checkpoint_dir, dirs.output_dir, dirs.log_dir}) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) return Status::Internal(fmt::format("creating {}: {}", d, ec.message()));
  }
  pending_.erase(job.id);
  last_reasons_.erase(job.id);
  active_.insert(job.id);
  job.attempt += 1;
  job.tasks = std::move(tasks);
  job.state = JobState::kStarting;
  job.placed_at = clock_.Now();
  job.running_at.reset();
  std::vector<std::string> where;
  for (const auto& n : nodes) {
    uint64_t version = BumpNode(n);
    for (auto& t : job.tasks) {
      if (t.node_id == n) t.assigned_version = version;
    }
  }
  for (const auto& t : job.tasks) {
    std::vector<std::string> gpus;
    for (int g : t.gpus) gpus.push_back(std::to_string(g));
    where.push_back(fmt::format("{} on {} (GPUs {}, port {})", t.Name(), t.node_id,
                                gpus.empty() ? "none" : Join(gpus, ","), t.port));
  }
  job.message = fmt::format("attempt {} starting on {}", job.attempt,
                            Join(std::vector<std::string>(nodes.begin(), nodes.end()), ", "));
  spdlog::info("job {} attempt {} placed: {}", job.id, job.attempt, Join(where, "; "));
  if (job.spec.elastic()) RequestSchedule();  // it may grow at once into what is idle
  return Persist(
      job, {Event(job, "placed", fmt::format("attempt {}: {}", job.attempt, Join(where, "; ")))});
}

// --- Teams ---

StatusOr<TeamQuota> Master::SetTeam(TeamQuota team) {
  std::vector<std::string> problems;
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  if (!std::regex_match(team.name, kName)) {
    problems.push_back(
        fmt::format("name: \"{}\" is not a team name: use 1 to 64 letters, digits, '.', '_' or '-'",
                    team.name));
  }
  if (team.guaranteed_gpus < 0) {
    problems.push_back(fmt::format("gpus: {} is negative", team.guaranteed_gpus));
  }
  if (team.max_gpus && *team.max_gpus < team.guaranteed_gpus) {
    problems.push_back(fmt::format("max_gpus: {} is below the guarantee of {} GPUs", *team.max_gpus,
                                   team.guaranteed_gpus));
  }
  if (!problems.empty()) return Status::InvalidArgument("invalid team", std::move(problems));
  COHORT_RETURN_IF_ERROR(store_->SaveTeam(team));
  auto it = std::find_if(teams_.begin(), teams_.end(),
                         [&](const TeamQuota& t) { return t.name == team.name; });
  if (it == teams_.end()) {
    teams_.push_back(team);
    std::sort(teams_.begin(), teams_.end(),
              [](const TeamQuota& a, const TeamQuota& b) { return a.name < b.name; });
  } else {
    *it = team;
  }
  spdlog::info("team {}: {} guaranteed GPUs, {}", team.name, team.guaranteed_gpus,
               team.max_gpus ? fmt::format("at most {}", *team.max_gpus) : "no limit");
  InvalidateResidue();
  return team;
}

Status Master::DeleteTeam(const std::string& name) {
  auto it = std::find_if(teams_.begin(), teams_.end(),
                         [&](const TeamQuota& t) { return t.name == name; });
  if (it == teams_.end()) return Status::NotFound(fmt::format("team {} does not exist", name));
  int live = 0;
  for (const auto& [id, job] : jobs_) live += job.spec.team == name && !IsTerminal(job.state);
  if (live > 0) {
    return Status::FailedPrecondition(
        fmt::format("team {} has {} job{} that {} not ended; kill or wait for them first", name,
                    live, live == 1 ? "" : "s", live == 1 ? "has" : "have"));
  }
  COHORT_RETURN_IF_ERROR(store_->DeleteTeam(name));
  teams_.erase(it);
  InvalidateResidue();
  return Status::Ok();
}

std::vector<TeamStatus> Master::ListTeams() const {
  std::map<std::string, TeamStatus> by_name;
  by_name[kDefaultTeam] = TeamStatus{TeamQuota{kDefaultTeam, 0, std::nullopt}, true, {}, 0, 0};
  for (const auto& t : teams_) by_name[t.name] = TeamStatus{t, false, {}, 0, 0};
  for (JobId id : pending_) {
    const Job& job = jobs_.at(id);
    auto it = by_name.find(job.spec.team);
    if (it != by_name.end()) ++it->second.pending_jobs;
  }
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    auto it = by_name.find(job.spec.team);
    if (it == by_name.end()) continue;
    ++it->second.running_jobs;
    for (const auto& t : job.tasks) {
      if (!IsTerminal(t.state)) it->second.held += t.resources;
    }
  }
  std::vector<TeamStatus> out;
  for (auto& [name, status] : by_name) out.push_back(std::move(status));
  return out;
}

// --- Agents ---

StatusOr<DesiredState> Master::Register(NodeInfo info) {
  Timestamp now = clock_.Now();
  std::string id = info.id;
  auto it = nodes_.find(id);
  if (it == nodes_.end()) {
    Node node;
    node.info = std::move(info);
    node.registered_at = now;
    it = nodes_.emplace(id, NodeEntry{std::move(node), next_version_++, nullptr, 0}).first;
    spdlog::info("node {} registered: {}", id, it->second.node.info.Capacity().ToString());
  } else {
    it->second.node.info = std::move(info);
    spdlog::info("node {} registered again", id);
  }
  it->second.topology = std::make_shared<GpuTopology>(it->second.node.info.Topology());
  it->second.node.state = NodeState::kReady;
  it->second.node.last_seen = now;
  COHORT_RETURN_IF_ERROR(store_->SaveNode(it->second.node));
  InvalidateResidue();
  return DesiredFor(id);
}

void Master::ApplyTaskReport(Job& job, Task& task, const TaskReport& report,
                             std::vector<JobEvent>& events) {
  if (IsTerminal(task.state)) return;  // already recorded
  if (report.state == TaskState::kRunning) {
    if (task.state == TaskState::kAssigned) {
      task.state = TaskState::kRunning;
      task.started_at = report.started_at.value_or(clock_.Now());
    }
    if (report.pid) task.pid = report.pid;  // the first report may come before the pid is known
    return;
  }
  if (!IsTerminal(report.state)) return;
  task.state = report.state;
  task.exit_code = report.exit_code;
  task.signal = report.signal;
  if (report.pid) task.pid = report.pid;
  task.finished_at = report.finished_at.value_or(clock_.Now());
  events.push_back(Event(job, "task_ended",
                         fmt::format("{}: {}", TaskStateName(task.state), DescribeExit(task))));
  if (job.state == JobState::kStopping) return;
  // A replica taken away from an elastic job: its end changes nothing else.
  if (task.scaled_down) return;
  if (task.state == TaskState::kSucceeded) {
    bool all_done = true;
    bool workers_done = true;  // TensorFlow: parameter servers never exit on their own
    for (const auto& t : job.tasks) {
      if (t.scaled_down) continue;
      if (t.state != TaskState::kSucceeded) {
        all_done = false;
        if (t.role != "ps") workers_done = false;
      }
    }
    if (all_done) {
      job.state = JobState::kStopping;
      job.stop_target = JobState::kSucceeded;
      job.message = "every task succeeded";
    } else if (workers_done && job.spec.framework == Framework::kTensorFlow) {
      StopJob(job, JobState::kSucceeded, "every worker succeeded; stopping parameter servers",
              events);
    }
    return;
  }
  // One task of a gang failed: the whole gang stops, and is retried within its budget.
  ++job.failures;
  bool retry = job.failures < job.spec.max_attempts;
  std::string reason = DescribeExit(task);
  if (retry) {
    reason += fmt::format(" (failure {} of at most {})", job.failures, job.spec.max_attempts);
  }
  StopJob(job, retry ? JobState::kPending : JobState::kFailed, reason, events);
}

StatusOr<DesiredState> Master::Sync(const std::string& node_id, const AgentReport& report) {
  auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) {
    return Status::NotFound(fmt::format("node {} is not registered", node_id));
  }
  NodeEntry& entry = node_it->second;
  Timestamp now = clock_.Now();
  entry.node.last_seen = now;
  if (entry.node.state != NodeState::kReady) {
    entry.node.state = NodeState::kReady;
    spdlog::info("node {} is ready", node_id);
    InvalidateResidue();
  }

  std::map<JobId, std::vector<JobEvent>> events;
  std::set<JobId> changed;
  std::set<TaskId> reported;
  std::vector<std::pair<JobId, Task>> released;
  auto apply = [&](Job& job, Task& t, const TaskReport& r) {
    TaskState before = t.state;
    int64_t pid = t.pid;
    auto& job_events = events[job.id];
    size_t count = job_events.size();
    ApplyTaskReport(job, t, r, job_events);
    if (t.state != before || t.pid != pid || job_events.size() != count) changed.insert(job.id);
    // A task that ended gave its resources back: someone may be waiting for them.
    if (!IsTerminal(before) && IsTerminal(t.state)) released.emplace_back(job.id, t);
  };
  for (const auto& r : report.tasks) {
    reported.insert(r.id);
    auto job_it = jobs_.find(r.id.job);
    if (job_it == jobs_.end()) continue;
    Job& job = job_it->second;
    if (job.attempt != r.id.attempt) continue;  // an earlier attempt's task: nothing to record
    for (auto& t : job.tasks) {
      if (t.role == r.id.role && t.index == r.id.index && t.node_id == node_id) apply(job, t, r);
    }
  }
  // Tasks this agent has applied but no longer reports: it lost them.
  for (JobId id : active_) {
    Job& job = jobs_.at(id);
    for (auto& t : job.tasks) {
      if (t.node_id != node_id || IsTerminal(t.state)) continue;
      if (t.assigned_version > report.applied_version) continue;  // not applied yet
      if (reported.count(job.IdOf(t))) continue;
      TaskReport lost{job.IdOf(t), TaskState::kLost, std::nullopt, std::nullopt,
                      0,           std::nullopt,     now};
      apply(job, t, lost);
    }
  }
  bool freed = false;
  for (JobId id : changed) {
    Job& job = jobs_.at(id);
    auto& job_events = events[id];
    if (job.state == JobState::kStarting) {
      bool all_running = std::all_of(job.tasks.begin(), job.tasks.end(), [](const Task& t) {
        return t.state == TaskState::kRunning || t.scaled_down;
      });
      if (all_running) {
        job.state = JobState::kRunning;
        job.running_at = now;
        job.message = fmt::format("attempt {} running", job.attempt);
        job_events.push_back(
            Event(job, "running", fmt::format("all {} tasks running", job.tasks.size())));
      }
    }
    FinishIfStopped(job, job_events);
    if (!active_.count(id)) freed = true;
    COHORT_RETURN_IF_ERROR(Persist(job, std::move(job_events)));
  }
  if (!released.empty()) {
    if (IncrementalMode()) {
      Released(released);
    } else {
      RequestSchedule();
    }
  }
  if (freed) Reschedule();

  COHORT_ASSIGN_OR_RETURN(DesiredState desired, DesiredFor(node_id));
  // Ended tasks are now recorded (or were never ours): the agent may forget them.
  std::set<TaskId> wanted;
  for (const auto& t : desired.tasks) wanted.insert(t.id);
  for (const auto& r : report.tasks) {
    if (IsTerminal(r.state) && !wanted.count(r.id)) desired.forget.push_back(r.id);
  }
  return desired;
}

StatusOr<DesiredState> Master::DesiredFor(const std::string& node_id) const {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) {
    return Status::NotFound(fmt::format("node {} is not registered", node_id));
  }
  DesiredState desired;
  desired.version = it->second.version;
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    framework::JobDirectories dirs = DirectoriesOf(job);
    for (size_t i = 0; i < job.tasks.size(); ++i) {
      const Task& t = job.tasks[i];
      if (t.node_id != node_id || IsTerminal(t.state) || t.stop_requested) continue;
      TaskLaunch launch;
      launch.id = job.IdOf(t);
      for (const auto& g : job.spec.tasks) {
        if (g.role != t.role) continue;
        launch.command = g.command;
        launch.workdir = g.workdir;
      }
      launch.env = framework::TaskEnvironment(job, i, dirs);
      launch.gpus = t.gpus;
      launch.grace_period = job.spec.grace_period;
      desired.tasks.push_back(std::move(launch));
    }
  }
  return desired;
}

std::vector<NodeStatus> Master::ListNodes() const {
  std::vector<NodeStatus> out;
  std::map<std::string, size_t> index;
  for (const auto& [id, entry] : nodes_) {
    index[id] = out.size();
    out.push_back(NodeStatus{&entry.node, entry.version, {}, {}});
  }
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    for (const auto& t : job.tasks) {
      if (IsTerminal(t.state)) continue;
      auto it = index.find(t.node_id);
      if (it == index.end()) continue;
      NodeStatus& n = out[it->second];
      n.allocated += t.resources;
      for (int g : t.gpus) n.gpu_holders[g] = GpuHolder{job.id, t.Name()};
    }
  }
  return out;
}

// --- Logs ---

StatusOr<int64_t> Master::AppendLog(const std::string& node_id, const TaskId& task, int64_t offset,
                                    std::string_view data) {
  const TaskId* key = &task;
  auto job_it = jobs_.find(key->job);
  if (job_it == jobs_.end())
    return Status::NotFound(fmt::format("job {} does not exist", key->job));
  if (key->attempt < 1 || key->attempt > job_it->second.attempt) {
    return Status::NotFound(fmt::format("job {} has no attempt {}", key->job, key->attempt));
  }
  // The key names a file: it must be one of the job's tasks, nothing else.
  // (Elastic replicas get ever higher indices: any index of an elastic role will do.)
  bool known = std::any_of(job_it->second.spec.tasks.begin(), job_it->second.spec.tasks.end(),
                           [&](const TaskGroupSpec& g) {
                             return g.role == key->role && key->index >= 0 &&
                                    (key->index < g.replicas || g.elastic());
                           });
  if (!known) {
    return Status::NotFound(
        fmt::format("job {} has no task {}/{}", key->job, key->role, key->index));
  }
  (void)node_id;
  return logs_.Append(task, offset, data);
}

// --- Time ---

void Master::Tick() {
  Timestamp now = clock_.Now();
  for (auto& [id, entry] : nodes_) {
    if (entry.node.state == NodeState::kReady &&
        now - entry.node.last_seen > config_.node_timeout) {
      entry.node.state = NodeState::kUnreachable;
      residue_.reset();
      full_pass_due_ = true;
      spdlog::warn("node {} missed its heartbeats for {}; no new work goes there", id,
                   FormatDuration(now - entry.node.last_seen));
    }
  }
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
    (void)Persist(job, std::move(events));
  }
  // Time alone changes a decision now (a minimum run time is over, say).
  if (recheck_at_ && now >= *recheck_at_) {
    recheck_at_.reset();
    full_pass_due_ = true;
  }
  // Between passes only small decisions were made: the full pass that was put off runs now.
  if (full_pass_due_ && !schedule_posted_) Schedule();
}

}  // namespace cohort::master
