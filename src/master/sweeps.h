// Sweeps (docs/sweeps.md): a hyperparameter search as one object over jobs. Each trial is a job
// submitted through the lifecycle with the sweep's user and team, carrying its TrialRef; the
// searcher (src/sweep) chooses each trial's values and, from the metric points the master
// ingests, stops trials early. What a sweep is lives in one record (SweepRecord), written in the
// same batch as the trial jobs it creates, so a restarted master neither loses a trial nor
// starts one twice, and its searcher carries on from its saved state.
//
// Level-based like the reconciler: Reconcile looks at each trial's job and does what is due
// (tell the searcher a trial ended, submit the next trials up to max_concurrent_trials, end the
// sweep), after any trial's end, at load and on the tick; doing it twice does nothing more.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"
#include "master/event_loop.h"
#include "master/job_book.h"
#include "master/job_lifecycle.h"
#include "master/journal.h"
#include "model/metric.h"
#include "model/sweep_record.h"
#include "state/metric_store.h"
#include "sweep/searcher.h"
#include "sweep/sweep_spec.h"

namespace cohort::master {

enum class SweepState { kRunning, kPaused, kCompleted, kKilled };
inline constexpr auto kSweepStateNames = std::to_array<EnumName<SweepState>>({
    {SweepState::kRunning, "RUNNING"},
    {SweepState::kPaused, "PAUSED"},
    {SweepState::kCompleted, "COMPLETED"},
    {SweepState::kKilled, "KILLED"},
});
const char* SweepStateName(SweepState s);

// A trial as the leaderboard tells it: its job's state, and the searcher's part in its end.
enum class TrialState {
  kSubmitting,    // made by the searcher, its job not yet accepted (a queue cap, say)
  kWaiting,       // its job waits for GPUs
  kRunning,       // its job is placed or running
  kPaused,        // held while its sweep is paused, or reclaimed and waiting to resume
  kCompleted,     // ran to its end, or to the searcher's max_time
  kStoppedEarly,  // the searcher stopped it (asha)
  kFailed,
  kKilled,  // by a person, or with its sweep
};
inline constexpr auto kTrialStateNames = std::to_array<EnumName<TrialState>>({
    {TrialState::kSubmitting, "SUBMITTING"},
    {TrialState::kWaiting, "WAITING"},
    {TrialState::kRunning, "RUNNING"},
    {TrialState::kPaused, "PAUSED"},
    {TrialState::kCompleted, "COMPLETED"},
    {TrialState::kStoppedEarly, "STOPPED_EARLY"},
    {TrialState::kFailed, "FAILED"},
    {TrialState::kKilled, "KILLED"},
});
const char* TrialStateName(TrialState s);

struct SweepTrial {
  int id = 0;
  JobId job_id = 0;  // 0 until its job is accepted
  Json hparams = Json::object();
  std::optional<sweep::Verdict> verdict;  // kStop or kComplete, once the searcher said so
  bool ended = false;                     // the searcher has been told (TrialEnded)
  // The searcher's metric as the trial's first task reported it.
  std::optional<double> best;
  std::optional<double> last;
  int64_t steps = 0;  // the highest step of a point of the metric
  int64_t points = 0;
  // asha with time_metric: the trial's time, the last value of that metric.
  std::optional<double> time;
  // In memory only: asha's rungs its points have reached, to tell a point that changes the
  // searcher's state (one that reaches a new rung) from one that does not.
  size_t rungs_reached = 0;
};

struct Sweep {
  SweepId id = 0;
  std::string user;
  SweepState state = SweepState::kRunning;
  Timestamp created_at;
  std::optional<Timestamp> finished_at;
  std::string message;
  sweep::SweepSpec spec;
  std::unique_ptr<sweep::Searcher> searcher;
  std::vector<SweepTrial> trials;
  uint64_t version = 0;

  const std::string& name() const { return spec.name; }
  const std::string& team() const { return spec.team; }
};

class Sweeps {
 public:
  Sweeps(JobBook& jobs, JobLifecycle& lifecycle, Journal& journal, state::MetricStore& metrics,
         const Clock& clock, EventLoop& loop);

  // Reads every sweep from the store (after the jobs) and reconciles the running ones.
  Status Load();

  // Durable when it returns, with its first trials. The spec is validated; `team_note` as for
  // jobs. Errors as JobLifecycle::Submit's for the first trial, which is then not made.
  StatusOr<const Sweep*> Submit(sweep::SweepSpec spec, std::string user);
  // Kill: every live trial is killed, the sweep ends KILLED. Pause: no new trial starts, and the
  // live ones stop (gracefully, as a preemption would: their next attempt resumes from their
  // checkpoints) and wait, held, until Resume. kNotFound; kFailedPrecondition when the sweep is
  // not in a state that allows it.
  StatusOr<const Sweep*> Kill(SweepId id, const std::string& by);
  StatusOr<const Sweep*> Pause(SweepId id, const std::string& by);
  StatusOr<const Sweep*> Resume(SweepId id, const std::string& by);

  StatusOr<const Sweep*> Get(SweepId id) const;
  // In id order.
  std::vector<const Sweep*> List() const;
  TrialState StateOf(const SweepTrial& trial) const;
  // The trial the leaderboard puts first: the best value of the metric (its mode), or none.
  std::optional<int> BestTrial(const Sweep& sweep) const;
  // The trials best first (by the best value; trials without one last, by id).
  std::vector<const SweepTrial*> Leaderboard(const Sweep& sweep) const;

  // Points a trial's task shipped (Master::AppendMetrics): the searcher hears the first task's
  // points of its metric, and a trial it stops is stopped gracefully at once.
  void Observe(const Job& job, const TaskId& task, const std::vector<TaggedPoint>& points);
  // A trial's job was written in a terminal state: its sweep is reconciled soon (posted).
  void TrialJobEnded(const Job& job);
  // Sweeps with work left (a trial to submit again after a refusal) are reconciled.
  void Tick();

 private:
  Sweep* Find(SweepId id);
  // Trials' ends told to the searcher, trials submitted up to max_concurrent_trials, the sweep
  // ended when nothing is left; written when anything changed.
  void Reconcile(Sweep& sweep);
  // Submits trial `trial`'s job; false (and the reason in the sweep's message) if refused.
  bool SubmitTrial(Sweep& sweep, SweepTrial& trial, Status* refused = nullptr);
  // The trial's job stopped for the searcher's verdict.
  void StopTrial(Sweep& sweep, SweepTrial& trial, sweep::Verdict verdict);
  int LiveTrials(const Sweep& sweep) const;
  SweepRecord RecordOf(const Sweep& sweep) const;
  StatusOr<Sweep> FromRecord(const SweepRecord& record) const;
  // The leaderboard's figures of a live trial (best, last, steps, points, time) from the metric
  // store, which has every point the master took: the record has them only as of its last
  // write.
  void RefreshFromMetrics(const Sweep& sweep, SweepTrial& trial);
  // Writes the sweep; a failure fails stop (memory has moved on) and is returned.
  Status Save(Sweep& sweep);

  JobBook& jobs_;
  JobLifecycle& lifecycle_;
  Journal& journal_;
  state::MetricStore& metrics_;
  const Clock& clock_;
  EventLoop& loop_;
  std::map<SweepId, Sweep> sweeps_;
  SweepId next_id_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cohort::master
