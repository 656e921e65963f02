#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

namespace cohort::sim {
namespace {

Timestamp At(double seconds) { return FromMicros(std::llround(seconds * 1e6)); }

enum class Phase { kWaitingToArrive, kPending, kRunning, kStopping, kDone };

struct SimJob {
  const TraceJob* trace = nullptr;
  JobId id = 0;
  std::string team;
  std::vector<TaskRequest> tasks;
  std::optional<double> max_runtime;  // per attempt, seconds
  double remaining = 0;               // seconds of work left, restart costs included
  double attained = 0;                // GPU-seconds received so far
  Phase phase = Phase::kWaitingToArrive;
  double last_start = 0;
  double queued_since = 0;
  int token = 0;  // a finish event carries the token of its attempt; a requeue changes it
  std::vector<TaskPlacement> placement;
  std::optional<JobId> stopping_for;
  int64_t gpus = 0;
};

// kWake: nothing happens but time passing makes a new decision possible (a running job becomes
// preemptible, or moves to a later least-attained-service queue): the master's periodic passes
// would notice, so the simulation runs a pass then too.
enum class EventKind { kFinish, kStopped, kWake };

struct Event {
  double time;
  uint64_t seq;
  EventKind kind;
  size_t job;
  int token;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

// A job's tasks: whole nodes' worth of GPUs each, and the rest in one more task.
std::vector<TaskRequest> TasksFor(int gpus, int per_node) {
  constexpr int64_t kGi = 1024LL * 1024 * 1024;
  std::vector<TaskRequest> tasks;
  if (gpus == 0) return {TaskRequest{"worker", 0, Resources{0, 1000, kGi}}};
  int left = gpus;
  for (int i = 0; left > 0; ++i) {
    int g = std::min(left, per_node);
    tasks.push_back(TaskRequest{"worker", i, Resources{g, 1000, kGi}});
    left -= g;
  }
  return tasks;
}

class Simulation {
 public:
  Simulation(const Trace& trace, const ClusterSpec& cluster, const SimOptions& options)
      : cluster_(cluster),
        options_(options),
        scheduler_(scheduler::NewScheduler(options.scheduler)),
        nodes_(cluster.Nodes()) {
    for (size_t i = 0; i < nodes_.size(); ++i) node_index_[nodes_[i].node_id] = i;
    result_.label = options.label;
    result_.capacity_gpus = cluster.TotalGpus();
    result_.teams = cluster.teams;
    jobs_.reserve(trace.jobs.size());
    result_.jobs.reserve(trace.jobs.size());
    for (const auto& t : trace.jobs) {
      SimJob j;
      j.trace = &t;
      j.id = static_cast<JobId>(jobs_.size() + 1);
      j.team = t.team.empty() ? TeamFor(cluster, t.id) : t.team;
      int gpus = t.min_gpus > 0 ? t.min_gpus : t.gpus;  // elastic jobs run at their minimum
      j.gpus = gpus;
      j.remaining = t.duration;
      if (t.max_runtime) {
        j.max_runtime = *t.max_runtime;
      } else if (options.runtime_estimate > 0) {
        j.max_runtime = t.duration * options.runtime_estimate;
      }
      JobRecord r;
      r.id = t.id;
      r.team = j.team;
      r.user = t.user;
      r.gpus = gpus;
      r.submit = t.submit;
      if (gpus > cluster.TotalGpus() || (gpus > 0 && cluster.gpus_per_node == 0)) {
        j.phase = Phase::kDone;
        result_.refused.emplace_back(
            t.id, fmt::format("needs {} GPUs; the cluster has {}", gpus, cluster.TotalGpus()));
      } else {
        j.tasks = TasksFor(gpus, cluster.gpus_per_node);
      }
      jobs_.push_back(std::move(j));
      result_.jobs.push_back(std::move(r));
    }
  }

  SimResult Run() {
    auto wall = std::chrono::steady_clock::now();
    size_t next_arrival = 0;
    while (true) {
      while (next_arrival < jobs_.size() && jobs_[next_arrival].phase == Phase::kDone) {
        ++next_arrival;  // refused
      }
      double next = std::numeric_limits<double>::infinity();
      if (next_arrival < jobs_.size()) next = jobs_[next_arrival].trace->submit;
      if (!events_.empty()) next = std::min(next, events_.top().time);
      if (std::isinf(next)) break;
      now_ = next;
      while (next_arrival < jobs_.size() && jobs_[next_arrival].trace->submit <= now_) {
        SimJob& j = jobs_[next_arrival++];
        if (j.phase == Phase::kDone) continue;
        Enqueue(j);
      }
      while (!events_.empty() && events_.top().time <= now_) {
        Event e = events_.top();
        events_.pop();
        Handle(e);
      }
      bool changed = Pass();
      if (!changed && events_.empty() && next_arrival >= jobs_.size() && !pending_.empty()) {
        // Nothing runs, nothing arrives, and the scheduler starts nothing: these jobs can never
        // run (they should have been refused above; this only keeps a bug from looping).
        for (const auto& p : pending_) {
          result_.refused.emplace_back(jobs_[static_cast<size_t>(p.job_id - 1)].trace->id,
                                       "stuck: the scheduler would never start it");
        }
        break;
      }
    }
    result_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return std::move(result_);
  }

 private:
  void Enqueue(SimJob& j) {
    j.phase = Phase::kPending;
    j.queued_since = now_;
    PendingJob p;
    p.job_id = j.id;
    p.team = j.team;
    p.user = j.trace->user;
    p.priority = j.trace->priority;
    p.submitted_at = At(j.trace->submit);
    p.tasks = j.tasks;
    if (j.max_runtime) p.max_runtime = At(*j.max_runtime) - FromMicros(0);
    p.attained = At(j.attained) - FromMicros(0);
    pending_index_[j.id] = pending_.size();
    pending_.push_back(std::move(p));
  }

  void Dequeue(JobId id) {
    size_t i = pending_index_.at(id);
    pending_index_.erase(id);
    if (i + 1 != pending_.size()) {
      pending_[i] = std::move(pending_.back());
      pending_index_[pending_[i].job_id] = i;
    }
    pending_.pop_back();
  }

  void Free(SimJob& j) {
    for (size_t t = 0; t < j.tasks.size(); ++t) {
      NodeCapacity& n = nodes_[node_index_.at(j.placement[t].node_id)];
      n.free += j.tasks[t].resources;
      for (int g : j.placement[t].gpus) {
        n.free_gpus.insert(std::upper_bound(n.free_gpus.begin(), n.free_gpus.end(), g), g);
      }
      used_gpus_ -= j.tasks[t].resources.gpus;
    }
    running_.erase(static_cast<size_t>(j.id - 1));
    double gpu_seconds = (now_ - j.last_start) * static_cast<double>(j.gpus);
    j.attained += gpu_seconds;
    result_.team_gpu_seconds[j.team] += gpu_seconds;
  }

  void Handle(const Event& e) {
    if (e.kind == EventKind::kWake) return;  // the pass that follows is the point
    SimJob& j = jobs_[e.job];
    JobRecord& r = result_.jobs[e.job];
    if (e.token != j.token) return;  // an earlier attempt's
    if (e.kind == EventKind::kFinish) {
      if (j.phase != Phase::kRunning && j.phase != Phase::kStopping) return;
      Free(j);
      double ran = now_ - j.last_start;
      j.phase = Phase::kDone;
      r.end = now_;
      r.failed = ran + 1e-9 < j.remaining;  // stopped by max_runtime before its work was done
      ++finished_;
      if (options_.progress && options_.progress_every &&
          finished_ % options_.progress_every == 0) {
        options_.progress(finished_, jobs_.size());
      }
      return;
    }
    // A preempted job has stopped: it loses the work since its last checkpoint, pays the restart
    // cost, and waits again with its original submission time.
    if (j.phase != Phase::kStopping) return;
    Free(j);
    double ran = now_ - j.last_start;
    double interval = options_.checkpoint_interval_seconds;
    double kept = interval > 0 ? std::floor(ran / interval) * interval : ran;
    j.remaining = std::max(0.0, j.remaining - kept) + options_.restart_cost_seconds;
    j.stopping_for.reset();
    ++j.token;
    ++r.preemptions;
    Enqueue(j);
  }

  // One scheduling pass at `now_`; returns true if it changed anything.
  bool Pass() {
    if (pending_.empty()) {
      Sample();
      return false;
    }
    ClusterSnapshot snapshot;
    snapshot.nodes = nodes_;
    snapshot.teams = cluster_.teams;
    snapshot.running.reserve(running_.size());
    for (size_t index : running_) {
      const SimJob& j = jobs_[index];
      RunningJob r;
      r.job_id = j.id;
      r.team = j.team;
      r.user = j.trace->user;
      r.priority = j.trace->priority;
      r.submitted_at = At(j.trace->submit);
      r.started_at = At(j.last_start);
      // What the master knows: the declared limit, not the work actually left.
      if (j.max_runtime) r.ends_by = At(j.last_start + *j.max_runtime);
      r.stopping = j.phase == Phase::kStopping;
      r.stopping_for = j.stopping_for;
      r.tasks = j.tasks;
      r.placement = j.placement;
      r.attained = At(j.attained) - FromMicros(0);
      r.preemptions = result_.jobs[index].preemptions;
      snapshot.running.push_back(std::move(r));
    }
    std::vector<JobId> claimed(claims_.begin(), claims_.end());
    Plan plan = scheduler_->Schedule(scheduler::SchedulingInput{snapshot, pending_, At(now_)});
    ++result_.passes;
    for (const auto& p : plan.placements) Start(static_cast<size_t>(p.job_id - 1), p.tasks);
    for (const auto& p : plan.preemptions) {
      SimJob& v = jobs_[static_cast<size_t>(p.victim - 1)];
      if (v.phase != Phase::kRunning) continue;
      v.phase = Phase::kStopping;
      v.stopping_for = p.for_job;
      auto claimant = pending_index_.find(p.for_job);
      if (claimant != pending_index_.end()) {
        pending_[claimant->second].preempted_for_it = true;
        claims_.insert(p.for_job);
      }
      Push(now_ + options_.grace_seconds, EventKind::kStopped, static_cast<size_t>(v.id - 1),
           v.token);
    }
    // As in the master: a claim lasts while victims stop for the job and for the pass after.
    std::set<JobId> awaited;
    for (const auto& r : snapshot.running) {
      if (r.stopping_for) awaited.insert(*r.stopping_for);
    }
    for (const auto& p : plan.preemptions) awaited.insert(p.for_job);
    for (JobId id : claimed) {
      if (awaited.count(id)) continue;
      claims_.erase(id);
      auto it = pending_index_.find(id);
      if (it != pending_index_.end()) pending_[it->second].preempted_for_it = false;
    }
    Sample();
    // Time alone changes a decision then: the master would notice on a tick.
    if (plan.recheck_at) {
      double at = static_cast<double>(ToMicros(*plan.recheck_at)) / 1e6;
      if (at > now_ && at != last_wake_) {
        last_wake_ = at;
        Push(at, EventKind::kWake, 0, 0);
      }
    }
    return !plan.placements.empty() || !plan.preemptions.empty();
  }

  void Start(size_t index, const std::vector<TaskPlacement>& placement) {
    SimJob& j = jobs_[index];
    JobRecord& r = result_.jobs[index];
    Dequeue(j.id);
    for (size_t t = 0; t < j.tasks.size(); ++t) {
      NodeCapacity& n = nodes_[node_index_.at(placement[t].node_id)];
      n.free -= j.tasks[t].resources;
      for (int g : placement[t].gpus) std::erase(n.free_gpus, g);
      used_gpus_ += j.tasks[t].resources.gpus;
    }
    j.placement = placement;
    j.phase = Phase::kRunning;
    j.last_start = now_;
    r.queued += now_ - j.queued_since;
    running_.insert(index);
    if (r.start < 0) {
      r.start = now_;
      result_.start_order.push_back(r.id);
    }
    ++r.attempts;
    double run = j.max_runtime ? std::min(j.remaining, *j.max_runtime) : j.remaining;
    Push(now_ + run, EventKind::kFinish, index, j.token);
  }

  void Push(double time, EventKind kind, size_t job, int token) {
    events_.push(Event{time, seq_++, kind, job, token});
  }

  void Sample() {
    if (!result_.samples.empty() && result_.samples.back().time == now_) {
      result_.samples.back() = {now_, used_gpus_, static_cast<int64_t>(pending_.size())};
      return;
    }
    result_.samples.push_back({now_, used_gpus_, static_cast<int64_t>(pending_.size())});
  }

  const ClusterSpec& cluster_;
  const SimOptions& options_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  std::vector<NodeCapacity> nodes_;
  std::unordered_map<std::string, size_t> node_index_;
  std::vector<SimJob> jobs_;
  std::vector<PendingJob> pending_;
  std::unordered_map<JobId, size_t> pending_index_;
  std::set<size_t> running_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  double last_wake_ = -1;
  std::set<JobId> claims_;  // pending jobs that running ones were preempted for
  double now_ = 0;
  int64_t used_gpus_ = 0;
  size_t finished_ = 0;
  SimResult result_;
};

}  // namespace

SimResult Simulate(const Trace& trace, const ClusterSpec& cluster, const SimOptions& options) {
  return Simulation(trace, cluster, options).Run();
}

}  // namespace cohort::sim
