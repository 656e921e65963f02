#include "master/sweeps.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "master/job_views.h"
#include "sweep/sweep_limits.h"

namespace cohort::master {

const char* SweepStateName(SweepState s) { return NameOf(kSweepStateNames, s); }
const char* TrialStateName(TrialState s) { return NameOf(kTrialStateNames, s); }

namespace {

std::optional<SweepState> ParseSweepState(std::string_view name) {
  return Parse(kSweepStateNames, name);
}

Json OptionalNumber(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::optional<double> NumberOr(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

const char* VerdictName(sweep::Verdict v) {
  switch (v) {
    case sweep::Verdict::kStop:
      return "stop";
    case sweep::Verdict::kComplete:
      return "complete";
    case sweep::Verdict::kContinue:
      break;
  }
  return "continue";
}

// Whether `a` is a better value of the metric than `b` under the searcher's mode.
bool Better(sweep::MetricMode mode, double a, double b) {
  return mode == sweep::MetricMode::kMax ? a > b : a < b;
}

std::string RequestIdOf(SweepId sweep, int trial) {
  return fmt::format("sweep-{}-trial-{}", sweep, trial);
}

}  // namespace

Sweeps::Sweeps(JobBook& jobs, JobLifecycle& lifecycle, Journal& journal,
               state::MetricStore& metrics, const Clock& clock, EventLoop& loop)
    : jobs_(jobs),
      lifecycle_(lifecycle),
      journal_(journal),
      metrics_(metrics),
      clock_(clock),
      loop_(loop) {}

Sweep* Sweeps::Find(SweepId id) {
  auto it = sweeps_.find(id);
  return it == sweeps_.end() ? nullptr : &it->second;
}

StatusOr<const Sweep*> Sweeps::Get(SweepId id) const {
  auto it = sweeps_.find(id);
  if (it == sweeps_.end()) return Status::NotFound(fmt::format("sweep {} does not exist", id));
  return &it->second;
}

std::vector<const Sweep*> Sweeps::List() const {
  std::vector<const Sweep*> out;
  out.reserve(sweeps_.size());
  for (const auto& [id, sweep] : sweeps_) out.push_back(&sweep);
  return out;
}

TrialState Sweeps::StateOf(const SweepTrial& trial) const {
  if (trial.job_id == 0) return TrialState::kSubmitting;
  const Job* job = jobs_.Find(trial.job_id);
  if (!job) return TrialState::kFailed;
  if (trial.verdict == sweep::Verdict::kStop && job->state != JobState::kFailed) {
    return TrialState::kStoppedEarly;
  }
  if (trial.verdict == sweep::Verdict::kComplete && job->state != JobState::kFailed) {
    return TrialState::kCompleted;
  }
  switch (job->state) {
    case JobState::kPending:
      // Held with its sweep, or requeued after an attempt (reclaimed for another job): it
      // waits to resume from its checkpoint.
      return job->hold.empty() && job->attempt == 0 ? TrialState::kWaiting : TrialState::kPaused;
    case JobState::kStarting:
    case JobState::kRunning:
    case JobState::kStopping:
      return job->hold.empty() ? TrialState::kRunning : TrialState::kPaused;
    case JobState::kSucceeded:
      return TrialState::kCompleted;
    case JobState::kFailed:
      return TrialState::kFailed;
    case JobState::kKilled:
      return TrialState::kKilled;
  }
  return TrialState::kFailed;
}

std::vector<const SweepTrial*> Sweeps::Leaderboard(const Sweep& sweep) const {
  std::vector<const SweepTrial*> out;
  for (const auto& t : sweep.trials) out.push_back(&t);
  sweep::MetricMode mode = sweep.spec.searcher.mode;
  std::stable_sort(out.begin(), out.end(), [&](const SweepTrial* a, const SweepTrial* b) {
    if (a->best && b->best) return Better(mode, *a->best, *b->best);
    return a->best.has_value() && !b->best.has_value();
  });
  return out;
}

std::optional<int> Sweeps::BestTrial(const Sweep& sweep) const {
  auto board = Leaderboard(sweep);
  if (board.empty() || !board.front()->best) return std::nullopt;
  return board.front()->id;
}

int Sweeps::LiveTrials(const Sweep& sweep) const {
  int live = 0;
  for (const auto& t : sweep.trials) {
    if (!t.ended) ++live;
  }
  return live;
}

SweepRecord Sweeps::RecordOf(const Sweep& sweep) const {
  Json trials = Json::array();
  for (const auto& t : sweep.trials) {
    trials.push_back(Json{{"id", t.id},
                          {"job_id", t.job_id},
                          {"hparams", t.hparams},
                          {"verdict", t.verdict ? Json(VerdictName(*t.verdict)) : Json(nullptr)},
                          {"ended", t.ended},
                          {"best", OptionalNumber(t.best)},
                          {"last", OptionalNumber(t.last)},
                          {"steps", t.steps},
                          {"points", t.points},
                          {"time", OptionalNumber(t.time)}});
  }
  Json doc{{"spec", sweep::ToJson(sweep.spec)},
           {"searcher", sweep.searcher->State()},
           {"message", sweep.message},
           {"trials", std::move(trials)}};
  return SweepRecord{
      sweep.id,         sweep.spec.name,   sweep.spec.team, sweep.user, SweepStateName(sweep.state),
      sweep.created_at, sweep.finished_at, std::move(doc)};
}

StatusOr<Sweep> Sweeps::FromRecord(const SweepRecord& record) const {
  const std::string what = fmt::format("stored sweep {}", record.id);
  Sweep sweep;
  sweep.id = record.id;
  sweep.user = record.user;
  auto state = ParseSweepState(record.state);
  if (!state) return Status::Internal(fmt::format("{}: unknown state {}", what, record.state));
  sweep.state = *state;
  sweep.created_at = record.created_at;
  sweep.finished_at = record.finished_at;
  try {
    const Json& doc = record.doc;
    auto spec = sweep::ParseSweepSpecJson(doc.at("spec"));
    if (!spec.ok()) return Status::Internal(fmt::format("{}: {}", what, spec.status().ToString()));
    sweep.spec = std::move(spec).value();
    const Json& state_doc = doc.at("searcher");
    auto searcher = sweep::MakeSearcher(sweep.spec, &state_doc);
    if (!searcher.ok()) {
      return Status::Internal(fmt::format("{}: {}", what, searcher.status().ToString()));
    }
    sweep.searcher = std::move(searcher).value();
    sweep.message = doc.value("message", "");
    for (const auto& t : doc.at("trials")) {
      SweepTrial trial;
      trial.id = t.at("id").get<int>();
      trial.job_id = t.at("job_id").get<JobId>();
      trial.hparams = t.at("hparams");
      const Json& verdict = t.at("verdict");
      if (verdict == "stop") trial.verdict = sweep::Verdict::kStop;
      if (verdict == "complete") trial.verdict = sweep::Verdict::kComplete;
      trial.ended = t.at("ended").get<bool>();
      trial.best = NumberOr(t, "best");
      trial.last = NumberOr(t, "last");
      trial.steps = t.value("steps", int64_t{0});
      trial.points = t.value("points", int64_t{0});
      trial.time = NumberOr(t, "time");
      sweep.trials.push_back(std::move(trial));
    }
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("{}: {}", what, e.what()));
  }
  return sweep;
}

void Sweeps::RefreshFromMetrics(const Sweep& sweep, SweepTrial& trial) {
  const Job* job = jobs_.Find(trial.job_id);
  if (!job || job->spec.tasks.empty()) return;
  const std::string task = job->spec.tasks.front().role + "/0";  // the voice Observe hears
  const sweep::SearcherSpec& searcher = sweep.spec.searcher;
  auto series = metrics_.Series(trial.job_id);
  if (!series.ok()) {
    spdlog::warn("sweep {} trial {}: cannot read its metrics: {}", sweep.id, trial.id,
                 series.status().ToString());
    return;
  }
  for (const auto& s : *series) {
    if (s.task != task) continue;
    if (!searcher.time_metric.empty() && s.tag == searcher.time_metric) trial.time = s.last_value;
    if (s.tag != searcher.metric || s.points <= trial.points) continue;
    trial.points = s.points;
    trial.last = s.last_value;
    trial.steps = std::max(trial.steps, s.last_step);
    // Every level of the store keeps each row's min and max: the best is exact however the
    // rows were summed up.
    auto chart = metrics_.Read(state::MetricQuery{trial.job_id, searcher.metric, task});
    if (!chart.ok()) continue;
    for (const auto& line : chart->lines) {
      for (const auto& row : line.rows) {
        double v = searcher.mode == sweep::MetricMode::kMax ? row.max : row.min;
        if (!trial.best || Better(searcher.mode, v, *trial.best)) trial.best = v;
      }
    }
  }
}

Status Sweeps::Save(Sweep& sweep) {
  ++sweep.version;
  Status s = journal_.store().SaveSweep(RecordOf(sweep));
  if (!s.ok()) {
    s = Status::Internal(fmt::format("saving sweep {}: {}", sweep.id, s.message()));
    journal_.FailStop(s);
  }
  return s;
}

Status Sweeps::Load() {
  COHORT_ASSIGN_OR_RETURN(auto records, journal_.store().LoadSweeps());
  for (const auto& record : records) {
    COHORT_ASSIGN_OR_RETURN(Sweep sweep, FromRecord(record));
    next_id_ = std::max(next_id_, sweep.id + 1);
    SweepId id = sweep.id;
    sweeps_.emplace(id, std::move(sweep));
  }
  for (auto& [id, sweep] : sweeps_) {
    for (auto& trial : sweep.trials) {
      if (!trial.ended && trial.job_id != 0) RefreshFromMetrics(sweep, trial);
    }
  }
  // What a crash may have left undone (a trial's end not yet told, the next trial not yet
  // submitted) is done now.
  // Loading writes nothing on a full disk (read-only); the tick catches up once it is writable.
  if (journal_.read_only()) return Status::Ok();
  Journal::Batch batch(journal_);
  for (auto& [id, sweep] : sweeps_) Reconcile(sweep);
  return Status::Ok();
}

StatusOr<const Sweep*> Sweeps::Submit(sweep::SweepSpec spec, std::string user) {
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  // A seed of 0 asks for one: the submission's time, kept in the record, so that the sweep's
  // stream is the same after a restart.
  if (spec.searcher.seed == 0) {
    spec.searcher.seed = (static_cast<uint64_t>(ToMicros(clock_.Now())) % sweep::kMaxSeed) | 1u;
  }
  COHORT_ASSIGN_OR_RETURN(auto searcher, sweep::MakeSearcher(spec));
  Sweep sweep;
  sweep.id = next_id_;
  sweep.user = std::move(user);
  sweep.created_at = clock_.Now();
  sweep.spec = std::move(spec);
  sweep.searcher = std::move(searcher);
  Journal::Batch batch(journal_);
  // The first trial is submitted before the sweep exists: a spec the lifecycle refuses (an
  // unknown team, a queue cap) refuses the sweep, and nothing is written.
  auto values = sweep.searcher->NextTrial();
  if (!values) return Status::InvalidArgument("the searcher makes no trial: the space is empty");
  sweep.trials.push_back(SweepTrial{1, 0, *values, std::nullopt, false, std::nullopt, std::nullopt,
                                    0, 0, std::nullopt});
  Status refused;
  if (!SubmitTrial(sweep, sweep.trials.back(), &refused)) return refused;
  ++next_id_;
  auto [it, inserted] = sweeps_.emplace(sweep.id, std::move(sweep));
  Sweep& stored = it->second;
  spdlog::info("sweep {} ({}) submitted by {}: {} searcher, at most {} trials, {} at once",
               stored.id, stored.spec.name, stored.user,
               NameOf(sweep::kSearcherNames, stored.spec.searcher.name),
               stored.spec.searcher.max_trials, stored.spec.searcher.max_concurrent_trials);
  Reconcile(stored);  // the rest of the first trials, and the record written
  if (stored.version == 0) COHORT_RETURN_IF_ERROR(Save(stored));
  return &stored;
}

bool Sweeps::SubmitTrial(Sweep& sweep, SweepTrial& trial, Status* refused) {
  auto spec = sweep::TrialSpec(sweep.spec, trial.id, trial.hparams);
  // A trial reclaimed for another job is paused and resumed from its checkpoint, never ended:
  // whatever its template says, a preemption requeues it (docs/sweeps.md).
  if (spec.ok() && !spec->restart.RestartsOn(RestartCause::kPreempted)) {
    spec->restart.on.push_back(RestartCause::kPreempted);
  }
  StatusOr<Job> job = spec.ok() ? lifecycle_.Submit(std::move(spec).value(), sweep.user,
                                                    RequestIdOf(sweep.id, trial.id), nullptr, {},
                                                    TrialRef{sweep.id, trial.id, trial.hparams})
                                : StatusOr<Job>(spec.status());
  if (!job.ok()) {
    sweep.message = fmt::format("trial {} not submitted yet: {}", trial.id, job.status().message());
    if (refused) *refused = job.status();
    return false;
  }
  trial.job_id = job->id;
  if (sweep.message.rfind("trial ", 0) == 0) sweep.message.clear();
  return true;
}

void Sweeps::Reconcile(Sweep& sweep) {
  bool changed = false;
  for (auto& trial : sweep.trials) {
    if (trial.ended || trial.job_id == 0) continue;
    const Job* job = jobs_.Find(trial.job_id);
    if (job && !IsTerminal(job->state)) continue;
    trial.ended = true;
    sweep.searcher->TrialEnded(trial.id);
    changed = true;
  }
  if (sweep.state == SweepState::kRunning) {
    for (auto& trial : sweep.trials) {
      if (trial.job_id != 0) continue;
      if (!SubmitTrial(sweep, trial)) return changed ? void(Save(sweep)) : void();
      changed = true;
    }
    const auto& searcher = sweep.spec.searcher;
    while (LiveTrials(sweep) < searcher.max_concurrent_trials) {
      auto values = sweep.searcher->NextTrial();
      if (!values) break;
      int id = static_cast<int>(sweep.trials.size()) + 1;
      sweep.trials.push_back(SweepTrial{id, 0, *values, std::nullopt, false, std::nullopt,
                                        std::nullopt, 0, 0, std::nullopt});
      changed = true;
      if (!SubmitTrial(sweep, sweep.trials.back())) break;
    }
    // With no trial live there was room for one: the searcher has made its last.
    if (LiveTrials(sweep) == 0) {
      sweep.state = SweepState::kCompleted;
      sweep.finished_at = clock_.Now();
      auto best = BestTrial(sweep);
      // The state says COMPLETED already: the message says what came of it.
      sweep.message =
          best ? fmt::format("{} trials, best trial {}", sweep.trials.size(), *best)
               : fmt::format("{} trials, none reported {}", sweep.trials.size(), searcher.metric);
      spdlog::info("sweep {}: completed: {}", sweep.id, sweep.message);
      changed = true;
    }
  }
  if (sweep.state == SweepState::kKilled && LiveTrials(sweep) == 0 && !sweep.finished_at) {
    sweep.finished_at = clock_.Now();
    changed = true;
  }
  if (changed) (void)Save(sweep);
}

StatusOr<const Sweep*> Sweeps::Kill(SweepId id, const std::string& by) {
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  Sweep* found = Find(id);
  if (!found) return Status::NotFound(fmt::format("sweep {} does not exist", id));
  Sweep& sweep = *found;
  if (sweep.state == SweepState::kCompleted || sweep.state == SweepState::kKilled) {
    return Status::FailedPrecondition(
        fmt::format("sweep {} has already ended ({})", id, SweepStateName(sweep.state)));
  }
  Journal::Batch batch(journal_);
  sweep.state = SweepState::kKilled;
  sweep.message = fmt::format("killed by {}", by);
  for (auto& trial : sweep.trials) {
    if (trial.ended) continue;
    if (trial.job_id == 0) {
      trial.ended = true;  // never submitted: nothing to stop
      sweep.searcher->TrialEnded(trial.id);
      continue;
    }
    const Job* job = jobs_.Find(trial.job_id);
    if (!job || IsTerminal(job->state)) continue;
    auto killed = lifecycle_.Kill(trial.job_id, fmt::format("{} (with sweep {})", by, id));
    if (!killed.ok()) return killed.status();
  }
  COHORT_RETURN_IF_ERROR(Save(sweep));
  Reconcile(sweep);  // the trials that ended at once
  spdlog::info("sweep {}: killed by {}", id, by);
  return &sweep;
}

StatusOr<const Sweep*> Sweeps::Pause(SweepId id, const std::string& by) {
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  Sweep* found = Find(id);
  if (!found) return Status::NotFound(fmt::format("sweep {} does not exist", id));
  Sweep& sweep = *found;
  if (sweep.state != SweepState::kRunning) {
    return Status::FailedPrecondition(
        fmt::format("sweep {} is {}, not RUNNING; only a running "
                    "sweep can be paused",
                    id, SweepStateName(sweep.state)));
  }
  Journal::Batch batch(journal_);
  sweep.state = SweepState::kPaused;
  sweep.message = fmt::format("paused by {}", by);
  COHORT_RETURN_IF_ERROR(Save(sweep));
  std::string reason = fmt::format("its sweep {} was paused by {}", id, by);
  for (auto& trial : sweep.trials) {
    if (trial.ended || trial.job_id == 0) continue;
    Job* job = jobs_.Find(trial.job_id);
    if (!job || IsTerminal(job->state)) continue;
    std::vector<JobEvent> events;
    lifecycle_.Hold(*job, reason, events);
    COHORT_RETURN_IF_ERROR(jobs_.Persist(*job, std::move(events)));
  }
  spdlog::info("sweep {}: paused by {}", id, by);
  return &sweep;
}

StatusOr<const Sweep*> Sweeps::Resume(SweepId id, const std::string& by) {
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  Sweep* found = Find(id);
  if (!found) return Status::NotFound(fmt::format("sweep {} does not exist", id));
  Sweep& sweep = *found;
  if (sweep.state != SweepState::kPaused) {
    return Status::FailedPrecondition(
        fmt::format("sweep {} is {}, not PAUSED; only a paused sweep resumes", id,
                    SweepStateName(sweep.state)));
  }
  Journal::Batch batch(journal_);
  sweep.state = SweepState::kRunning;
  sweep.message = fmt::format("resumed by {}", by);
  COHORT_RETURN_IF_ERROR(Save(sweep));
  for (auto& trial : sweep.trials) {
    if (trial.ended || trial.job_id == 0) continue;
    Job* job = jobs_.Find(trial.job_id);
    if (!job || job->hold.empty()) continue;
    std::vector<JobEvent> events;
    lifecycle_.Release(*job, events);
    COHORT_RETURN_IF_ERROR(jobs_.Persist(*job, std::move(events)));
  }
  Reconcile(sweep);
  spdlog::info("sweep {}: resumed by {}", id, by);
  return &sweep;
}

void Sweeps::Observe(const Job& job, const TaskId& task, const std::vector<TaggedPoint>& points) {
  if (!job.trial || job.spec.tasks.empty()) return;
  // One voice per trial: its first task's (rank 0), as the job's other ranks report the same
  // training.
  if (task.role != job.spec.tasks.front().role || task.index != 0) return;
  Sweep* sweep = Find(job.trial->sweep);
  if (!sweep) return;
  int index = job.trial->trial - 1;
  if (index < 0 || index >= static_cast<int>(sweep->trials.size())) return;
  SweepTrial& trial = sweep->trials[static_cast<size_t>(index)];
  if (trial.job_id != job.id) return;
  const sweep::SearcherSpec& searcher = sweep->spec.searcher;
  // Only asha's state moves with a point, and only at a rung: the searcher's state and the
  // leaderboard are written then, not for every batch (a trial may report every step).
  const std::vector<double> rungs = searcher.name == sweep::SearcherName::kAsha
                                        ? sweep::RungTimes(searcher)
                                        : std::vector<double>();
  bool changed = false;
  for (const auto& p : points) {
    const double value = p.point.value;
    if (!std::isfinite(value)) continue;
    if (!searcher.time_metric.empty() && p.tag == searcher.time_metric) trial.time = value;
    if (p.tag != searcher.metric) continue;
    ++trial.points;
    trial.last = value;
    trial.steps = std::max(trial.steps, p.point.step);
    if (!trial.best || Better(searcher.mode, value, *trial.best)) trial.best = value;
    if (trial.verdict || trial.ended || sweep->state != SweepState::kRunning) continue;
    std::optional<double> time =
        searcher.time_metric.empty() ? std::optional<double>(p.point.step) : trial.time;
    if (!time) continue;  // no time yet: nothing to place it in a rung by
    sweep::Verdict verdict = sweep->searcher->Observe(trial.id, *time, value);
    size_t reached = static_cast<size_t>(
        std::count_if(rungs.begin(), rungs.end(), [&](double r) { return r <= *time; }));
    if (reached > trial.rungs_reached) {
      trial.rungs_reached = reached;
      changed = true;
    }
    if (verdict != sweep::Verdict::kContinue) {
      changed = true;
      StopTrial(*sweep, trial, verdict);
    }
  }
  // The values between writes are shown from memory (and read back from the metric store by a
  // restarted master: RefreshFromMetrics).
  if (changed) {
    Journal::Batch batch(journal_);
    (void)Save(*sweep);
  }
}

void Sweeps::StopTrial(Sweep& sweep, SweepTrial& trial, sweep::Verdict verdict) {
  trial.verdict = verdict;
  Job* job = jobs_.Find(trial.job_id);
  if (!job || IsTerminal(job->state)) return;
  const auto& searcher = sweep.spec.searcher;
  std::string reason =
      verdict == sweep::Verdict::kComplete
          ? fmt::format("completed: reached the searcher's max_time {} (sweep {})",
                        searcher.max_time, sweep.id)
          : fmt::format(
                "stopped early by sweep {}'s searcher: {} = {} is not in the top 1/{} of "
                "its rung",
                sweep.id, searcher.metric, trial.last.value_or(0), searcher.divisor);
  spdlog::info("job {}: {}", job->id, reason);
  Journal::Batch batch(journal_);
  std::vector<JobEvent> events;
  if (job->state == JobState::kPending) {
    // Not running (requeued after a reclaim): it ends without another attempt.
    auto killed = lifecycle_.Kill(job->id, fmt::format("its sweep's searcher ({})", reason));
    (void)killed;  // a failed write has stopped the master
    return;
  }
  lifecycle_.Stop(*job,
                  verdict == sweep::Verdict::kComplete ? JobState::kSucceeded : JobState::kKilled,
                  reason, events);
  lifecycle_.FinishIfStopped(*job, events);
  jobs_.Commit(*job, std::move(events));
}

void Sweeps::TrialJobEnded(const Job& job) {
  if (!job.trial) return;
  SweepId id = job.trial->sweep;
  std::weak_ptr<bool> alive = alive_;
  loop_.Post([this, alive, id] {
    if (alive.expired()) return;
    Sweep* sweep = Find(id);
    if (!sweep || journal_.read_only() || journal_.stopped()) return;
    Journal::Batch batch(journal_);
    Reconcile(*sweep);
  });
}

void Sweeps::Tick() {
  if (journal_.read_only()) return;
  for (auto& [id, sweep] : sweeps_) {
    if (sweep.state == SweepState::kCompleted || sweep.finished_at) continue;
    // Cheap when nothing is due: a trial refused before (a queue cap), or an end not yet told
    // (a master that was read-only when it came).
    bool due = std::any_of(sweep.trials.begin(), sweep.trials.end(), [&](const SweepTrial& t) {
      if (t.job_id == 0) return sweep.state == SweepState::kRunning;
      if (t.ended) return false;
      const Job* job = jobs_.Find(t.job_id);
      return !job || IsTerminal(job->state);
    });
    if (due) Reconcile(sweep);
  }
}

}  // namespace cohort::master
