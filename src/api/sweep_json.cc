#include "api/sweep_json.h"

#include <fmt/format.h>

#include "model/job_run_time.h"

namespace cohort::api {

namespace {

Json OrNull(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json AllowedActions(const master::Sweep& sweep, const auth::Principal& caller) {
  Json actions = Json::array();
  if (!auth::CanChangeJob(caller, sweep.user, sweep.team())) return actions;
  if (sweep.state == master::SweepState::kRunning) actions.push_back("pause");
  if (sweep.state == master::SweepState::kPaused) actions.push_back("resume");
  if (sweep.state == master::SweepState::kRunning || sweep.state == master::SweepState::kPaused) {
    actions.push_back("kill");
  }
  return actions;
}

}  // namespace

Json SweepJson(const master::Master& master, const master::Sweep& sweep,
               const auth::Principal& caller) {
  const master::Sweeps& sweeps = master.sweeps();
  const sweep::SearcherSpec& searcher = sweep.spec.searcher;
  const Timestamp now = master.Now();
  Json trials = Json::array();
  double gpu_seconds_total = 0;
  for (const master::SweepTrial* t : sweeps.Leaderboard(sweep)) {
    double gpu_seconds = 0;
    Json job_id = nullptr;
    if (t->job_id != 0) {
      job_id = t->job_id;
      if (auto job = master.GetJob(t->job_id); job.ok()) {
        gpu_seconds = static_cast<double>(TotalRunTime(**job, now).count()) / 1e6 *
                      static_cast<double>((*job)->spec.TotalResources().gpus);
      }
    }
    gpu_seconds_total += gpu_seconds;
    master::TrialState state = sweeps.StateOf(*t);
    Json trial{{"id", t->id},
               {"job_id", job_id},
               {"state", master::TrialStateName(state)},
               {"hparams", t->hparams},
               {"metric", OrNull(t->best)},
               {"last", OrNull(t->last)},
               {"steps", t->steps},
               {"points", t->points},
               {"gpu_seconds", gpu_seconds}};
    // A trial that ended without a single point of the metric is said to be so, not left
    // looking as if it were still to report.
    if (t->ended && t->points == 0) {
      trial["note"] = fmt::format("never reported {}", searcher.metric);
    }
    trials.push_back(std::move(trial));
  }
  auto best = sweeps.BestTrial(sweep);
  return Json{{"id", sweep.id},
              {"name", sweep.name()},
              {"team", sweep.team()},
              {"user", sweep.user},
              {"state", master::SweepStateName(sweep.state)},
              {"message", sweep.message},
              {"created_at", FormatTimestamp(sweep.created_at)},
              {"finished_at",
               sweep.finished_at ? Json(FormatTimestamp(*sweep.finished_at)) : Json(nullptr)},
              {"searcher", Json{{"name", NameOf(sweep::kSearcherNames, searcher.name)},
                                {"metric", searcher.metric},
                                {"mode", searcher.mode == sweep::MetricMode::kMax ? "max" : "min"},
                                {"max_trials", searcher.max_trials},
                                {"max_concurrent_trials", searcher.max_concurrent_trials}}},
              {"best_trial", best ? Json(*best) : Json(nullptr)},
              {"trials_made", sweep.trials.size()},
              {"gpu_seconds", gpu_seconds_total},
              {"version", sweep.version},
              {"allowed_actions", AllowedActions(sweep, caller)},
              {"trials", std::move(trials)}};
}

}  // namespace cohort::api
