// Replays a trace in simulated time through the production scheduler (src/scheduler): job
// arrivals, scheduling passes, starts, completions after the trace's durations, preemptions with
// a grace period and a restart cost, requeues. Event-driven: no sleeping, no wall clock; the
// same input and seed give the same result.
//
// The simulator only models what the master and the agents do (the job lifecycle); every
// decision — order, placement, reservations, preemption, growth and shrinking of elastic jobs —
// is the scheduler's own, taken through the same cluster core and dispatcher as the master's
// (src/cluster, src/dispatch).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "model/job_spec.h"
#include "scheduler/scheduler.h"
#include "sim/cluster_spec.h"
#include "sim/trace.h"

namespace cohort::sim {

struct SimOptions {
  scheduler::SchedulerConfig scheduler;
  std::string label;  // how reports name this run, e.g. "fifo+backfill"
  // Preemption costs: the time to stop (SIGTERM to gone), a fixed restart cost, and the work
  // since the last checkpoint, which is lost.
  double grace_seconds = 30;
  double restart_cost_seconds = 30;
  double checkpoint_interval_seconds = 600;  // 0: every moment is checkpointed
  // A job without max_runtime in the trace declares this multiple of its duration (users
  // overestimate); 0: no max_runtime, so it never backfills into a reservation.
  double runtime_estimate = 2.0;
  // As the master's --incremental-above: with at least this many jobs waiting, arrivals and
  // completions are decided between full passes, and the full pass runs on the next tick.
  // The default never does (every change is followed by a full pass).
  size_t incremental_above = std::numeric_limits<size_t>::max();
  double tick_seconds = 0.5;  // the master's tick
  // Keep the history of ended jobs and give waiting jobs their estimates (under the default
  // policy, the one that reads them), as the master does.
  bool history = true;
  // Node failures (docs/simulator.md). Each node stays up for a time drawn from an exponential
  // distribution of this mean, then fails; 0: nodes never fail.
  double node_mtbf_seconds = 0;
  // How long a failed node stays down once the master has noticed, before it comes back empty;
  // infinity: it never comes back.
  double node_repair_seconds = 3600;
  // Failure times come from this seed, one stream per node of their own: they change no other
  // draw, and a node's failures do not depend on how many nodes there are.
  uint64_t failure_seed = 1;
  // The master notices a silent node this long after it died (cohortd master --node-timeout);
  // what the jobs there did meanwhile is lost too.
  double node_timeout_seconds = 10;
  // Every job's restart policy: traces have none, so a job spec's default unless changed.
  RestartPolicy restart;
  // Sweep rows (sim/sweep_rows.h): their trials' rungs come from this seed. With
  // mark_sweep_trials their trials are marked as such (PendingJob::sweep_trial: beyond their
  // team's guarantee they are the first jobs reclaimed); without, they replay as plain jobs, to
  // measure that rule.
  uint64_t sweep_seed = 1;
  bool mark_sweep_trials = true;
  // Progress: called every `progress_every` simulated jobs finished (0: never).
  std::function<void(size_t finished, size_t total)> progress;
  size_t progress_every = 0;
};

struct JobRecord {
  std::string id;
  std::string team;
  std::string user;
  int gpus = 0;
  double submit = 0;
  double start = -1;  // first start; -1 if it never started
  double end = -1;    // -1 if it did not finish
  double queued = 0;  // seconds waiting: before the first start and after every preemption
  int attempts = 0;
  int preemptions = 0;
  // Ended FAILED: stopped by its max_runtime, or a lost node ended its last allowed attempt
  // (restart.max_attempts).
  bool failed = false;
  // GPU time that preemptions wasted: the work lost since the last checkpoint, and the restart
  // cost each preemption adds, times the job's GPUs (at its starting size).
  double lost_gpu_seconds = 0;
  int node_failures = 0;  // attempts that a failed node ended
  // The same for attempts that failed nodes ended (the restart cost only if it ran again).
  double failure_lost_gpu_seconds = 0;
  // The longest wait of an attempt that, when it began to wait, fit in its team's guarantee
  // beside what the team held and its other such jobs waiting before it (seconds); -1 if none
  // did. What the guarantee promises: such a job starts within about one minimum run time and
  // one grace period.
  double guaranteed_wait = -1;
  // A trial of a sweep row: the row's id (its own is "<sweep>-<n>"), and the rung it stops at
  // (TrialDraw::rung; the sweep's rungs - 1: it runs its full length). Empty, -1: a plain job.
  std::string sweep;
  int rung = -1;
};

// A sweep row as it was replayed: its trials are in SimResult::jobs too.
struct SweepRecord {
  std::string id;
  std::string team;
  int trials = 0;
  int concurrency = 0;
  int gpus = 0;  // a trial's
  int rungs = 0;
  double submit = 0;            // when its first trials were submitted
  double end = -1;              // when its last trial ended; -1 if one did not
  size_t ended = 0;             // trials that ended
  size_t completed = 0;         // of those, trials that ran their full length
  double gpu_seconds = 0;       // held by its trials, work lost to preemptions included
  double lost_gpu_seconds = 0;  // JobRecord::lost_gpu_seconds of its trials
  int preemptions = 0;
  // The sweep's makespan: from its submission to its last trial's end (-1 if unfinished).
  double Makespan() const { return end < 0 ? -1 : end - submit; }
};

struct Sample {
  double time = 0;
  int64_t used_gpus = 0;
  int64_t waiting_jobs = 0;
};

struct SimResult {
  std::string label;
  std::vector<JobRecord> jobs;           // in trace order, then each sweep's trials
  std::vector<SweepRecord> sweeps;       // in trace order
  std::vector<Sample> samples;           // after every scheduling pass
  std::vector<std::string> start_order;  // job ids in the order they first started
  std::vector<std::pair<std::string, std::string>> refused;  // (job id, why): never ran
  int64_t capacity_gpus = 0;
  std::vector<TeamQuota> teams;
  std::map<std::string, double> team_gpu_seconds;  // GPU-time each team's jobs held
  std::map<PreemptionCause, size_t> preemptions_by_cause;
  size_t passes = 0;
  bool node_failures_simulated = false;  // SimOptions::node_mtbf_seconds was set
  size_t node_failures = 0;              // every failure of every node
  // (when the master noticed, node id) of each failure: jobs-CSV rows can be checked against it.
  std::vector<std::pair<double, std::string>> failure_log;
  int64_t down_gpus_at_end = 0;       // GPUs of the nodes down when the replay ended
  size_t out_of_attempts = 0;         // jobs a lost node ended FAILED (restart.max_attempts spent)
  size_t started_between_passes = 0;  // starts decided between full passes (incremental_above)
  double wall_seconds = 0;
};

// Runs the whole trace. Jobs that could never run on this cluster (more GPUs than it has) are
// reported in `refused` instead of waiting forever. A sweep row submits its first `concurrency`
// trials at its submission time, and the next one whenever one of them ends.
SimResult Simulate(const Trace& trace, const ClusterSpec& cluster, const SimOptions& options);

}  // namespace cohort::sim
