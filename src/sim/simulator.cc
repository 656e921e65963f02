#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <queue>
#include <random>
#include <unordered_map>

#include "cluster/cluster_state.h"
#include "dispatch/dispatcher.h"
#include "scheduler/runtime_history.h"
#include "sim/sweep_rows.h"

namespace cohort::sim {
namespace {

Timestamp At(double seconds) { return FromMicros(std::llround(seconds * 1e6)); }
Duration Seconds(double seconds) { return At(seconds) - FromMicros(0); }

enum class Phase { kWaitingToArrive, kPending, kRunning, kStopping, kDone };

constexpr size_t kNoSweep = static_cast<size_t>(-1);

struct SimJob {
  const TraceJob* trace = nullptr;
  JobId id = 0;
  std::string team;
  std::vector<TaskRequest> tasks;  // of one attempt at its start (an elastic job: its minimum)
  std::vector<RunningJob::ElasticGroup> elastic;
  std::optional<double> max_runtime;  // per attempt, seconds
  // Seconds of work left at its starting size, restart costs included. An elastic job
  // progresses `live_gpus / base_gpus` times as fast (linear scaling).
  double remaining = 0;
  double remaining_at_start = 0;  // of the current attempt
  double attained = 0;            // GPU-seconds received so far
  Phase phase = Phase::kWaitingToArrive;
  double last_start = 0;
  double last_progress = 0;  // `remaining` and `attained` are accounted up to here
  double queued_since = 0;
  int64_t base_gpus = 0;  // GPUs at its starting size
  int64_t live_gpus = 0;  // GPUs its working tasks hold now
  int attempt = 0;        // events of an earlier attempt are stale
  int finish_token = 0;   // a finish event of an earlier estimate is stale
  int preemptions = 0;
  int failures = 0;  // attempts that ended early and count against restart.max_attempts
  // While stopping: whether a lost node stopped it (else a preemption), what that does to it,
  // and the work its checkpoints kept, worked out when the node was lost.
  bool node_lost = false;
  EarlyEnd early_end;
  double kept_at_loss = 0;
  bool within_guarantee = false;                     // this wait began within its team's guarantee
  std::vector<std::pair<std::string, int>> leaving;  // replicas being taken away
  std::string history_key;  // (team, user, GPUs): jobs that share it share their estimate
  size_t sweep = kNoSweep;  // a trial: its sweep (Simulation::sweeps_)
};

// kWake: nothing happens but time passing makes a new decision possible (a running job becomes
// preemptible, or moves to a later least-attained-service queue): the master's periodic passes
// would notice, so the simulation runs a pass then too. kTick: the master's next tick, when the
// full pass put off by decisions between passes runs.
// kRepair: a failed node is back (`job` is the node's index). kSweep: a sweep row's submission
// (`job` is the sweep's index).
enum class EventKind { kFinish, kStopped, kShrunk, kWake, kTick, kRepair, kSweep };

struct Event {
  double time;
  uint64_t seq;
  EventKind kind;
  size_t job;
  int token;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

constexpr int64_t kGi = 1024LL * 1024 * 1024;

// A job's tasks: whole nodes' worth of GPUs each, and the rest in one more task.
std::vector<TaskRequest> TasksFor(int gpus, int per_node) {
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
      : options_(options),
        dispatcher_(scheduler::NewScheduler(options.scheduler), options.incremental_above) {
    dispatcher_.set_reasons(false);  // a replay shows no reasons
    for (auto& n : cluster.Nodes()) {
      node_ids_.push_back(n.node_id);
      cluster_.UpsertNode(std::move(n), true);
    }
    cluster_.SetTeams(cluster.teams);
    result_.label = options.label;
    result_.capacity_gpus = cluster.TotalGpus();
    result_.teams = cluster.teams;
    for (const auto& q : cluster.teams) guarantees_[q.name] = q.guaranteed_gpus;
    // Trials point into trial_traces_: it is sized before the first one is made.
    size_t trials = 0;
    for (const auto& t : trace.jobs) trials += t.sweep ? static_cast<size_t>(t.sweep->trials) : 0;
    trial_traces_.reserve(trials);
    jobs_.reserve(trace.jobs.size() + trials);
    result_.jobs.reserve(trace.jobs.size() + trials);
    std::vector<const TraceJob*> sweep_rows;
    for (const auto& t : trace.jobs) {
      if (t.sweep) {
        sweep_rows.push_back(&t);
      } else {
        AddJob(t, cluster);
      }
    }
    arrivals_ = jobs_.size();
    for (const TraceJob* row : sweep_rows) AddSweep(*row, cluster);
  }

  SimResult Run() {
    auto wall = std::chrono::steady_clock::now();
    size_t next_arrival = 0;
    bool failing = options_.node_mtbf_seconds > 0;
    result_.node_failures_simulated = failing;
    if (failing) StartFailures();
    while (true) {
      while (next_arrival < arrivals_ && jobs_[next_arrival].phase == Phase::kDone) {
        ++next_arrival;  // refused
      }
      // Nodes fail and come back for ever: the replay ends with its jobs.
      if (failing && live_jobs_ == 0) break;
      double next = std::numeric_limits<double>::infinity();
      if (next_arrival < arrivals_) next = jobs_[next_arrival].trace->submit;
      if (!events_.empty()) next = std::min(next, events_.top().time);
      if (!failures_.empty()) next = std::min(next, failures_.top().time);
      if (std::isinf(next) && !pending_.empty() && !tick_due_) {
        // Nothing is left to happen but jobs wait (nodes that failed for good can leave them
        // so between passes): the master's next tick runs a full pass, which refuses them below
        // if it starts nothing.
        tick_due_ = true;
        dispatcher_.MarkFullPassDue();
        next = now_ + options_.tick_seconds;
        Push(next, EventKind::kTick, 0, 0);
      }
      if (std::isinf(next)) break;
      now_ = next;
      bool tick = false;
      while (next_arrival < arrivals_ && jobs_[next_arrival].trace->submit <= now_) {
        SimJob& j = jobs_[next_arrival++];
        if (j.phase == Phase::kDone) continue;
        Arrive(j);
      }
      while (!events_.empty() && events_.top().time <= now_) {
        Event e = events_.top();
        events_.pop();
        tick |= e.kind == EventKind::kTick;
        Handle(e);
      }
      while (!failures_.empty() && failures_.top().time <= now_) {
        size_t node = failures_.top().node;
        failures_.pop();
        FailNode(node);
      }
      // Decisions between passes leave the full pass to the master's next tick; otherwise every
      // change is followed by a full pass at once, as in the master.
      bool changed = false;
      if (!dispatcher_.Incremental(pending_.size()) || tick) {
        changed = Pass();
        // As in the master, an elastic job that has just started may grow at once.
        while (elastic_started_) {
          elastic_started_ = false;
          Pass();
        }
      } else if (dispatcher_.full_pass_due() && !tick_due_) {
        tick_due_ = true;
        Push(now_ + options_.tick_seconds, EventKind::kTick, 0, 0);
        Sample();
        changed = true;
      } else {
        Sample();
        changed = true;
      }
      if (!changed && events_.empty() && next_arrival >= arrivals_ && !pending_.empty()) {
        // Nothing runs, nothing arrives, and the scheduler starts nothing: these jobs can never
        // run (they should have been refused above; this only keeps a bug from looping).
        for (const auto& p : pending_) {
          result_.refused.emplace_back(jobs_[static_cast<size_t>(p.job_id - 1)].trace->id,
                                       "stuck: the scheduler would never start it");
        }
        break;
      }
    }
    for (size_t n = 0; n < node_ids_.size(); ++n) {
      if (!cluster_.IsReady(node_ids_[n])) {
        const NodeCapacity* node = cluster_.FindNode(node_ids_[n]);
        result_.down_gpus_at_end += node ? node->total.gpus : 0;
      }
    }
    RecordSweeps();
    result_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return std::move(result_);
  }

 private:
  // A sweep row being replayed.
  struct SweepRun {
    SweepRecord record;
    size_t first = 0;  // its first trial in jobs_
    int next = 0;      // trials submitted so far
  };

  SimJob& JobOf(JobId id) { return jobs_[static_cast<size_t>(id - 1)]; }

  // A job of the trace, or a sweep's trial, waiting to arrive (or refused).
  SimJob& AddJob(const TraceJob& t, const ClusterSpec& cluster) {
    SimJob j;
    j.trace = &t;
    j.id = static_cast<JobId>(jobs_.size() + 1);
    j.team = t.team.empty() ? TeamFor(cluster, t.id) : t.team;
    bool elastic = t.min_gpus > 0;
    int gpus = elastic ? t.min_gpus : t.gpus;  // an elastic job starts at its minimum
    j.remaining = t.duration;
    if (t.max_runtime) {
      j.max_runtime = *t.max_runtime;
    } else if (options_.runtime_estimate > 0) {
      j.max_runtime = t.duration * options_.runtime_estimate;
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
    } else if (elastic) {
      // One GPU per replica, from its minimum up to its maximum.
      Resources replica{1, 1000, kGi};
      for (int i = 0; i < t.min_gpus; ++i) j.tasks.push_back(TaskRequest{"worker", i, replica});
      j.elastic.push_back(RunningJob::ElasticGroup{
          "worker", t.min_gpus, std::max(t.min_gpus, t.max_gpus), replica, t.min_gpus});
    } else {
      j.tasks = TasksFor(gpus, cluster.gpus_per_node);
    }
    j.base_gpus = gpus;
    j.history_key = fmt::format("{}\x1f{}\x1f{}", j.team, t.user, gpus);
    live_jobs_ += j.phase != Phase::kDone;
    jobs_.push_back(std::move(j));
    result_.jobs.push_back(std::move(r));
    return jobs_.back();
  }

  // A sweep row: its trials, drawn now, wait after the trace's jobs until the sweep submits
  // them. A trial declares the max_runtime of a full one: no one knows where it will stop.
  void AddSweep(const TraceJob& row, const ClusterSpec& cluster) {
    const SweepShape& shape = *row.sweep;
    if (row.gpus > cluster.TotalGpus() || (row.gpus > 0 && cluster.gpus_per_node == 0)) {
      result_.refused.emplace_back(
          row.id, fmt::format("its trials need {} GPUs each; the cluster has {}", row.gpus,
                              cluster.TotalGpus()));
      return;
    }
    SweepRun w;
    w.first = jobs_.size();
    w.record.id = row.id;
    w.record.team = row.team.empty() ? TeamFor(cluster, row.id) : row.team;
    w.record.trials = shape.trials;
    w.record.concurrency = shape.concurrency;
    w.record.gpus = row.gpus;
    w.record.rungs = shape.rungs;
    w.record.submit = row.submit;
    std::optional<double> max_runtime = row.max_runtime;
    if (!max_runtime && options_.runtime_estimate > 0) {
      max_runtime = row.duration * options_.runtime_estimate;
    }
    std::vector<TrialDraw> draws = DrawTrials(shape, row.duration, row.id, options_.sweep_seed);
    for (size_t k = 0; k < draws.size(); ++k) {
      TraceJob& t = trial_traces_.emplace_back(row);
      t.id = fmt::format("{}-{}", row.id, k + 1);
      t.team = w.record.team;
      t.duration = draws[k].length;
      t.max_runtime = max_runtime;
      t.sweep.reset();
      SimJob& j = AddJob(t, cluster);
      j.sweep = sweeps_.size();
      result_.jobs.back().sweep = row.id;
      result_.jobs.back().rung = draws[k].rung;
    }
    Push(row.submit, EventKind::kSweep, sweeps_.size(), 0);
    sweeps_.push_back(std::move(w));
  }

  // The sweep is submitted: its first trials, as many as may run at once.
  void StartSweep(size_t index) {
    SweepRun& w = sweeps_[index];
    w.record.submit = now_;
    for (int i = 0; i < w.record.concurrency && w.next < w.record.trials; ++i) SubmitTrial(w);
  }

  // The sweep's next trial is submitted now.
  void SubmitTrial(SweepRun& w) {
    size_t index = w.first + static_cast<size_t>(w.next++);
    SimJob& j = jobs_[index];
    trial_traces_[index - arrivals_].submit = now_;
    result_.jobs[index].submit = now_;
    Arrive(j);
  }

  // Each sweep's figures, from its trials' records.
  void RecordSweeps() {
    for (SweepRun& w : sweeps_) {
      SweepRecord& s = w.record;
      bool all_ended = true;
      for (int k = 0; k < s.trials; ++k) {
        size_t index = w.first + static_cast<size_t>(k);
        const JobRecord& r = result_.jobs[index];
        s.gpu_seconds += jobs_[index].attained;
        s.lost_gpu_seconds += r.lost_gpu_seconds;
        s.preemptions += r.preemptions;
        if (r.end < 0) {
          all_ended = false;
          continue;
        }
        ++s.ended;
        s.completed += !r.failed && r.rung == s.rungs - 1;
        s.end = std::max(s.end, r.end);
      }
      if (!all_ended) s.end = -1;
      result_.sweeps.push_back(s);
    }
  }

  void Arrive(SimJob& j) {
    Enqueue(j);
    if (!dispatcher_.Incremental(pending_.size())) return;
    std::string reason;
    auto placement =
        dispatcher_.Arrive(cluster_, pending_[pending_index_.at(j.id)], At(now_), &reason);
    if (!placement) return;
    ++result_.started_between_passes;
    Started(j);
  }

  void Enqueue(SimJob& j) {
    j.phase = Phase::kPending;
    j.queued_since = now_;
    if (auto g = guarantees_.find(j.team); g != guarantees_.end()) {
      std::vector<SimJob*>& waiting = within_guarantee_[j.team];
      int64_t held = cluster_.team_gpus(j.team);
      for (const SimJob* w : waiting) held += w->base_gpus;
      j.within_guarantee = held + j.base_gpus <= g->second;
      if (j.within_guarantee) waiting.push_back(&j);
    }
    PendingJob p;
    p.job_id = j.id;
    p.team = j.team;
    p.user = j.trace->user;
    p.priority = j.trace->priority;
    p.submitted_at = At(j.trace->submit);
    p.tasks = j.tasks;
    if (j.max_runtime) p.max_runtime = Seconds(*j.max_runtime);
    p.attained = Seconds(j.attained);
    p.waiting_since = At(j.queued_since);
    p.estimate = EstimateFor(j);
    p.preemptions = j.preemptions;
    p.elastic = j.elastic;
    p.sweep_trial = j.sweep != kNoSweep && options_.mark_sweep_trials;
    // What only the oracle policies read (PendingJob::oracle_remaining): its true run time.
    double truly = j.remaining;
    if (j.max_runtime) truly = std::min(truly, *j.max_runtime);
    p.oracle_remaining = Seconds(truly);
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

  double Rate(const SimJob& j) const {
    if (j.base_gpus == 0) return 1;
    return static_cast<double>(j.live_gpus) / static_cast<double>(j.base_gpus);
  }

  // Accounts the work and GPU time since the last change of the job's size.
  void Progress(SimJob& j) {
    double elapsed = now_ - j.last_progress;
    j.remaining = std::max(0.0, j.remaining - elapsed * Rate(j));
    double gpu_seconds = elapsed * static_cast<double>(j.live_gpus);
    j.attained += gpu_seconds;
    result_.team_gpu_seconds[j.team] += gpu_seconds;
    j.last_progress = now_;
  }

  // When the job ends at its present size: its work done, or its max_runtime reached.
  void ScheduleFinish(size_t index) {
    SimJob& j = jobs_[index];
    double rate = Rate(j);
    double end = rate > 0 ? now_ + j.remaining / rate : std::numeric_limits<double>::infinity();
    if (j.max_runtime) end = std::min(end, j.last_start + *j.max_runtime);
    Push(end, EventKind::kFinish, index, ++j.finish_token);
  }

  // Resources that came back between passes go to the jobs the last pass had waiting.
  void Released(const std::string& team, const std::vector<TaskRequest>& tasks,
                const std::vector<TaskPlacement>& placement) {
    if (!dispatcher_.Incremental(pending_.size())) return;
    auto started = dispatcher_.Released(
        cluster_, team, tasks, placement,
        [&](JobId id) -> const PendingJob* {
          auto it = pending_index_.find(id);
          return it == pending_index_.end() ? nullptr : &pending_[it->second];
        },
        At(now_));
    result_.started_between_passes += started.size();
    for (const auto& p : started) Started(JobOf(p.job_id));
  }

  // Everything the job holds is free again.
  void Leave(SimJob& j) {
    Progress(j);
    const RunningJob* held = cluster_.FindJob(j.id);
    std::vector<TaskRequest> tasks;
    std::vector<TaskPlacement> placement;
    if (held) {
      tasks = held->tasks;
      placement = held->placement;
    }
    cluster_.ReleaseJob(j.id);
    j.live_gpus = 0;
    j.leaving.clear();
    Released(j.team, tasks, placement);
  }

  void Handle(const Event& e) {
    if (e.kind == EventKind::kWake) return;  // the pass that follows is the point
    if (e.kind == EventKind::kTick) {
      tick_due_ = false;
      return;
    }
    if (e.kind == EventKind::kRepair) {
      RepairNode(e.job);
      return;
    }
    if (e.kind == EventKind::kSweep) {
      StartSweep(e.job);
      return;
    }
    SimJob& j = jobs_[e.job];
    if (e.kind == EventKind::kFinish) {
      if (e.token != j.finish_token) return;  // an earlier estimate's
      if (j.phase != Phase::kRunning && j.phase != Phase::kStopping) return;
      Leave(j);
      // Stopped by its max_runtime before its work was done.
      End(e.job, j.remaining > 1e-6 * std::max(1.0, j.trace->duration));
      return;
    }
    if (e.token != j.attempt) return;  // an earlier attempt's
    if (e.kind == EventKind::kShrunk) {
      if (j.phase != Phase::kRunning) return;
      for (const auto& [role, index] : j.leaving) {
        const RunningJob* held = cluster_.FindJob(j.id);
        if (!held) break;
        for (size_t t = 0; t < held->tasks.size(); ++t) {
          if (held->tasks[t].role != role || held->tasks[t].index != index) continue;
          std::vector<TaskRequest> tasks = {held->tasks[t]};
          std::vector<TaskPlacement> placement = {held->placement[t]};
          cluster_.ReleaseTask(j.id, role, index);
          Released(j.team, tasks, placement);
          break;
        }
      }
      j.leaving.clear();
      return;
    }
    if (j.phase == Phase::kStopping) Stopped(e.job);
  }

  // The job leaves the cluster for good, ended at `now_` (FAILED if `failed`).
  void End(size_t index, bool failed) {
    SimJob& j = jobs_[index];
    JobRecord& r = result_.jobs[index];
    j.phase = Phase::kDone;
    --live_jobs_;
    r.end = now_;
    r.failed = failed;
    // What it cost is known now, and only now: later jobs like it are ordered by it.
    history_.Record(KeyOf(j), Seconds(j.attained));
    ++history_generation_;
    ++finished_;
    if (options_.progress && options_.progress_every && finished_ % options_.progress_every == 0) {
      options_.progress(finished_, jobs_.size());
    }
    // A trial's end is its sweep's cue to submit the next.
    if (j.sweep != kNoSweep && sweeps_[j.sweep].next < sweeps_[j.sweep].record.trials) {
      SubmitTrial(sweeps_[j.sweep]);
    }
  }

  // The work of the current attempt that its checkpoints keep, if what it did after `useful`
  // seconds of it is lost.
  double Kept(const SimJob& j, double useful) const {
    double ran = now_ - j.last_start;
    double interval = options_.checkpoint_interval_seconds;
    double done = j.remaining_at_start - j.remaining;
    if (ran <= 0) return done;
    double saved = interval > 0 ? std::floor(useful / interval) * interval : useful;
    if (saved >= ran) return done;
    return done * (saved / ran);
  }

  // A stopping job has stopped: it loses the work since its last checkpoint, pays the restart
  // cost, and waits again with its original submission time; or, when a lost node ended its
  // last allowed attempt, it ends FAILED.
  void Stopped(size_t index) {
    SimJob& j = jobs_[index];
    JobRecord& r = result_.jobs[index];
    Leave(j);
    double done = j.remaining_at_start - j.remaining;
    double kept = j.node_lost ? j.kept_at_loss : Kept(j, now_ - j.last_start);
    // A restarted attempt began by paying the restart cost; if no checkpoint got past it, it is
    // owed again once, not on top of itself.
    if (j.attempt > 0) kept = std::max(kept, options_.restart_cost_seconds);
    bool again = !j.node_lost || j.early_end.requeue;
    double restart = again ? options_.restart_cost_seconds : 0;
    double lost = (std::max(0.0, done - kept) + restart) * static_cast<double>(j.base_gpus);
    ++j.attempt;
    if (j.node_lost) {
      r.failure_lost_gpu_seconds += lost;
    } else {
      r.lost_gpu_seconds += lost;
      ++j.preemptions;
      ++r.preemptions;
    }
    j.node_lost = false;
    if (!again) {
      ++result_.out_of_attempts;
      End(index, true);
      return;
    }
    j.remaining = std::max(0.0, j.remaining_at_start - kept) + options_.restart_cost_seconds;
    Enqueue(j);
  }

  // --- Node failures ---

  void StartFailures() {
    uint64_t seed = options_.failure_seed;
    for (size_t n = 0; n < node_ids_.size(); ++n) {
      // SplitMix64 of (seed, node): well-spread, independent streams from consecutive inputs.
      uint64_t z = seed * 0x9E3779B97F4A7C15ULL + (n + 1) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      node_rng_.emplace_back(z ^ (z >> 31));
    }
    // From the first submission: before it the trace has nothing to lose.
    now_ = jobs_.empty() ? 0 : jobs_.front().trace->submit;
    for (size_t n = 0; n < node_ids_.size(); ++n) ScheduleFailure(n);
  }

  // When the node, up from now, is next noticed lost. Inverse transform of a 53-bit uniform
  // rather than std::exponential_distribution, whose draws differ between standard libraries.
  void ScheduleFailure(size_t node) {
    double u = static_cast<double>(node_rng_[node]() >> 11) * 0x1.0p-53;
    double up = -options_.node_mtbf_seconds * std::log1p(-u);
    failures_.push(Failure{now_ + up + options_.node_timeout_seconds, node});
  }

  // What the master does with a node that fell silent (master/node_health.cc): nothing new goes
  // there, and every task on it is lost.
  void FailNode(size_t node) {
    ++result_.node_failures;
    const std::string& id = node_ids_[node];
    result_.failure_log.emplace_back(now_, id);
    cluster_.SetReady(id, false);
    dispatcher_.Invalidate();
    for (JobId job : cluster_.JobsOn(id)) LoseTasks(JobOf(job), id);
    if (std::isfinite(options_.node_repair_seconds)) {
      Push(now_ + options_.node_repair_seconds, EventKind::kRepair, node, 0);
    }
  }

  void RepairNode(size_t node) {
    cluster_.SetReady(node_ids_[node], true);
    dispatcher_.Invalidate();
    ScheduleFailure(node);
  }

  // As the master applies a lost task (master/reconciler.cc): it frees what it held at once;
  // the first one of a running gang ends the attempt (RestartPolicy::EndEarly: requeued within
  // restart.max_attempts, else FAILED) and the rest of the gang stops through the grace period;
  // a job already stopping, or a replica already being taken away, only loses the task.
  void LoseTasks(SimJob& j, const std::string& node) {
    size_t index = static_cast<size_t>(j.id - 1);
    const RunningJob* held = cluster_.FindJob(j.id);
    std::vector<std::pair<std::string, int>> lost;
    bool ends_attempt = false;
    for (size_t t = 0; t < held->tasks.size(); ++t) {
      if (held->placement[t].node_id != node) continue;
      std::pair<std::string, int> task{held->tasks[t].role, held->tasks[t].index};
      ends_attempt |= std::find(j.leaving.begin(), j.leaving.end(), task) == j.leaving.end();
      lost.push_back(std::move(task));
    }
    if (j.phase == Phase::kRunning && ends_attempt) {
      Progress(j);
      // Its work stopped when the node died, a node timeout ago.
      double useful = std::max(0.0, now_ - options_.node_timeout_seconds - j.last_start);
      j.kept_at_loss = Kept(j, useful);
      j.early_end = options_.restart.EndEarly(RestartCause::kNodeLost, j.failures);
      j.failures = j.early_end.failures;
      j.node_lost = true;
      ++result_.jobs[index].node_failures;
      j.live_gpus = 0;
      ++j.finish_token;  // it will not finish this attempt
      j.phase = Phase::kStopping;
      cluster_.MarkStopping(j.id);
      Push(now_ + options_.grace_seconds, EventKind::kStopped, index, j.attempt);
    }
    bool gone = false;
    for (const auto& task : lost) {
      gone = cluster_.ReleaseTask(j.id, task.first, task.second);
      std::erase(j.leaving, task);
    }
    // Nothing left to stop: the master concludes at once.
    if (gone && j.phase == Phase::kStopping) Stopped(index);
  }

  // One full scheduling pass at `now_`; returns true if it changed anything.
  bool Pass() {
    RefreshEstimates();
    NoteCheckpoints();
    dispatch::PassResult pass = dispatcher_.FullPass(cluster_, pending_, At(now_));
    if (!pass.ran) {
      Sample();
      return false;
    }
    ++result_.passes;
    const cluster::Applied& applied = pass.applied;
    for (const auto& p : applied.placements) {
      Started(JobOf(p.job_id));
      elastic_started_ |= !JobOf(p.job_id).elastic.empty();
    }
    for (const auto& p : applied.preemptions) {
      ++result_.preemptions_by_cause[p.cause];
      SimJob& v = JobOf(p.victim);
      v.phase = Phase::kStopping;
      v.node_lost = false;
      Push(now_ + options_.grace_seconds, EventKind::kStopped, static_cast<size_t>(v.id - 1),
           v.attempt);
    }
    for (const auto& g : applied.growths) {
      SimJob& j = JobOf(g.job_id);
      Progress(j);
      for (const auto& t : g.tasks) j.live_gpus += t.resources.gpus;
      ScheduleFinish(static_cast<size_t>(j.id - 1));
    }
    for (const auto& s : applied.shrinks) {
      SimJob& j = JobOf(s.job_id);
      Progress(j);
      const RunningJob* held = cluster_.FindJob(j.id);
      for (const auto& t : held->tasks) {
        if (t.role != s.role ||
            std::find(s.indices.begin(), s.indices.end(), t.index) == s.indices.end()) {
          continue;
        }
        j.live_gpus -= t.resources.gpus;  // it stops working at once, and leaves after grace
        j.leaving.emplace_back(t.role, t.index);
      }
      ScheduleFinish(static_cast<size_t>(j.id - 1));
      Push(now_ + options_.grace_seconds, EventKind::kShrunk, static_cast<size_t>(j.id - 1),
           j.attempt);
    }
    Sample();
    // Time alone changes a decision then: the master would notice on a tick.
    if (pass.recheck_at) {
      double at = static_cast<double>(ToMicros(*pass.recheck_at)) / 1e6;
      if (at > now_ && at != last_wake_) {
        last_wake_ = at;
        Push(at, EventKind::kWake, 0, 0);
      }
    }
    return !applied.placements.empty() || !applied.preemptions.empty() ||
           !applied.growths.empty() || !applied.shrinks.empty();
  }

  // The job has just been started in the cluster.
  void Started(SimJob& j) {
    size_t index = static_cast<size_t>(j.id - 1);
    JobRecord& r = result_.jobs[index];
    Dequeue(j.id);
    j.phase = Phase::kRunning;
    j.last_start = now_;
    j.last_progress = now_;
    j.remaining_at_start = j.remaining;
    if (options_.checkpoint_interval_seconds > 0) {
      checkpoints_.push(
          Checkpoint{now_ + options_.checkpoint_interval_seconds - 1e-3, index, j.attempt});
    }
    j.live_gpus = 0;
    for (const auto& t : j.tasks) j.live_gpus += t.resources.gpus;
    r.queued += now_ - j.queued_since;
    if (j.within_guarantee) EndGuaranteedWait(j);
    // The team holds more now: its jobs waiting within its guarantee that no longer fit in it
    // have had their promise kept (the team has its GPUs, given to others of its jobs).
    if (auto g = guarantees_.find(j.team); g != guarantees_.end()) {
      std::vector<SimJob*>& waiting = within_guarantee_[j.team];
      int64_t held = cluster_.team_gpus(j.team);
      std::vector<SimJob*> kept;
      for (SimJob* w : waiting) {
        if (held + w->base_gpus <= g->second) {
          held += w->base_gpus;
          kept.push_back(w);
        } else {
          EndGuaranteedWait(*w, /*remove=*/false);
        }
      }
      waiting = std::move(kept);
    }
    if (r.start < 0) {
      r.start = now_;
      result_.start_order.push_back(r.id);
    }
    ++r.attempts;
    ScheduleFinish(index);
  }

  // The end of a wait within the team's guarantee (JobRecord::guaranteed_wait).
  void EndGuaranteedWait(SimJob& j, bool remove = true) {
    double& longest = result_.jobs[static_cast<size_t>(j.id - 1)].guaranteed_wait;
    longest = std::max(longest, now_ - j.queued_since);
    j.within_guarantee = false;
    if (remove) std::erase(within_guarantee_[j.team], &j);
  }

  scheduler::HistoryKey KeyOf(const SimJob& j) const {
    return scheduler::HistoryKey{j.team, j.trace->user, "", j.base_gpus};
  }

  // The estimate for a job from the jobs that have finished so far; estimates of one key are
  // shared until the next job finishes.
  std::optional<RuntimeEstimate> EstimateFor(const SimJob& j) {
    if (!UsesEstimates()) return std::nullopt;
    if (estimates_generation_ != history_generation_) {
      estimates_.clear();
      estimates_generation_ = history_generation_;
    }
    auto it = estimates_.find(j.history_key);
    if (it == estimates_.end()) {
      it = estimates_.emplace(j.history_key, history_.Estimate(KeyOf(j))).first;
    }
    return it->second;
  }

  // Only the default policy reads estimates (its rank within a level): the others are spared a
  // refresh of every waiting job whenever a job ends (a fifth of plain fifo's replay of a
  // 100,000-job trace, whose queue is tens of thousands deep).
  bool UsesEstimates() const {
    return options_.history && options_.scheduler.policy == scheduler::Policy::kFairShare;
  }

  void RefreshEstimates() {
    if (!UsesEstimates() || refreshed_generation_ == history_generation_) return;
    refreshed_generation_ = history_generation_;
    for (auto& p : pending_) p.estimate = EstimateFor(JobOf(p.job_id));
  }

  // Running jobs checkpoint every checkpoint interval from the start of their attempt, and say
  // so (COHORT_CHECKPOINT_DIR): the scheduler preempts those that lose least. Before every pass,
  // each job that holds resources has reported its last checkpoint up to now. Only jobs that
  // have reached their next one are looked at: `checkpoints_` holds, per attempt, when that is
  // (a millisecond early, so that rounding never lets one pass unnoticed).
  void NoteCheckpoints() {
    double interval = options_.checkpoint_interval_seconds;
    if (interval <= 0) return;
    due_checkpoints_.clear();
    while (!checkpoints_.empty() && checkpoints_.top().time <= now_) {
      due_checkpoints_.push_back(checkpoints_.top());
      checkpoints_.pop();
    }
    for (const Checkpoint& c : due_checkpoints_) {
      const SimJob& j = jobs_[c.job];
      bool holds = j.phase == Phase::kRunning || j.phase == Phase::kStopping;
      if (!holds || j.attempt != c.attempt) continue;  // ended, or of an earlier attempt
      double ran = now_ - j.last_start;
      double done = ran < interval ? 0 : std::floor(ran / interval);
      if (done > 0) cluster_.NoteCheckpoint(j.id, At(j.last_start + done * interval));
      checkpoints_.push(Checkpoint{j.last_start + (done + 1) * interval - 1e-3, c.job, c.attempt});
    }
  }

  void Push(double time, EventKind kind, size_t job, int token) {
    events_.push(Event{time, seq_++, kind, job, token});
  }

  void Sample() {
    struct Sample s {
      now_, cluster_.used_gpus(), static_cast<int64_t>(pending_.size())
    };
    if (!result_.samples.empty() && result_.samples.back().time == now_) {
      result_.samples.back() = s;
      return;
    }
    result_.samples.push_back(s);
  }

  const SimOptions& options_;
  cluster::ClusterState cluster_;
  std::vector<std::string> node_ids_;  // in the cluster spec's order
  std::vector<std::mt19937_64> node_rng_;
  struct Failure {
    double time;  // when the master notices
    size_t node;
    bool operator>(const Failure& o) const {
      return std::tie(time, node) > std::tie(o.time, o.node);
    }
  };
  std::priority_queue<Failure, std::vector<Failure>, std::greater<Failure>> failures_;
  size_t live_jobs_ = 0;  // neither refused nor ended
  dispatch::Dispatcher dispatcher_;
  std::vector<SimJob> jobs_;  // the trace's jobs in its order (arrivals_ of them), then trials
  size_t arrivals_ = 0;
  std::vector<TraceJob> trial_traces_;  // jobs_[arrivals_ + k] is trial_traces_[k]
  std::vector<SweepRun> sweeps_;
  std::vector<PendingJob> pending_;
  std::unordered_map<JobId, size_t> pending_index_;
  std::map<std::string, int64_t> guarantees_;  // GPUs, by team
  // By team, in the order they began to wait: jobs waiting within its guarantee.
  std::map<std::string, std::vector<SimJob*>> within_guarantee_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  double last_wake_ = -1;
  bool tick_due_ = false;
  bool elastic_started_ = false;
  double now_ = 0;
  size_t finished_ = 0;
  SimResult result_;
  scheduler::RuntimeHistory history_;
  uint64_t history_generation_ = 0;
  uint64_t estimates_generation_ = 0;
  uint64_t refreshed_generation_ = 0;
  std::unordered_map<std::string, std::optional<RuntimeEstimate>> estimates_;
  // When jobs that hold resources reach their next checkpoint (NoteCheckpoints).
  struct Checkpoint {
    double time;
    size_t job;
    int attempt;
    bool operator>(const Checkpoint& o) const { return time > o.time; }
  };
  std::priority_queue<Checkpoint, std::vector<Checkpoint>, std::greater<Checkpoint>> checkpoints_;
  std::vector<Checkpoint> due_checkpoints_;
};

}  // namespace

SimResult Simulate(const Trace& trace, const ClusterSpec& cluster, const SimOptions& options) {
  return Simulation(trace, cluster, options).Run();
}

}  // namespace cohort::sim
