// Sweeps in the master (master/sweeps.h): trials submitted as GPUs free up, stopped early by the
// searcher from the points the master ingests, paused and resumed, killed, and carried on after
// a restart. A real SQLite file, a manual clock, agents' reports written by hand.
#include "master/sweeps.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "master/master_test_fixture.h"
#include "sweep/sweep_spec.h"

namespace cohort::master {
namespace {

class SweepsTest : public MasterTest {
 protected:
  // `searcher` is the spec's searcher section, in YAML flow form.
  static sweep::SweepSpec Spec(const std::string& searcher) {
    std::string text = R"(
name: lr
trial:
  tasks:
    - role: worker
      resources: {gpus: 1, cpus: 1, memory: 1Gi}
      command: [train, --lr, "${hp.lr}"]
  restart: {max_attempts: 1, backoff: 0s}
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1, count: 5}
searcher: )" + searcher +
                       "\n";
    auto spec = sweep::ParseSweepSpec(text);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    return *spec;
  }

  SweepId SubmitSweep(const std::string& searcher) {
    auto sweep = master_->sweeps().Submit(Spec(searcher), "ada");
    EXPECT_TRUE(sweep.ok()) << sweep.status().ToString();
    return sweep.ok() ? (*sweep)->id : 0;
  }

  const Sweep& GetSweep(SweepId id) { return **master_->sweeps().Get(id); }

  JobId JobOf(SweepId sweep, int trial) {
    return GetSweep(sweep).trials.at(static_cast<size_t>(trial - 1)).job_id;
  }

  TrialState StateOf(SweepId sweep, int trial) {
    return master_->sweeps().StateOf(GetSweep(sweep).trials.at(static_cast<size_t>(trial - 1)));
  }

  // The agent on `node` reports each desired task in `states[job]`, RUNNING for any job not
  // named; exit code 0 for SUCCEEDED, 1 for FAILED.
  void ReportJobs(const std::string& node, const std::map<JobId, TaskState>& states) {
    auto desired = master_->nodes().DesiredFor(node);
    ASSERT_TRUE(desired.ok());
    AgentReport report;
    report.applied_version = desired->version;
    for (const auto& t : desired->tasks) {
      auto it = states.find(t.id.job);
      TaskState state = it == states.end() ? TaskState::kRunning : it->second;
      std::optional<int> code;
      if (state == TaskState::kSucceeded) code = 0;
      if (state == TaskState::kFailed) code = 1;
      std::optional<int> signal;
      if (state == TaskState::kKilled) signal = 15;
      std::optional<Timestamp> ended;
      if (IsTerminal(state)) ended = clock_.Now();
      report.tasks.push_back(TaskReport{t.id, state, code, signal, 100, clock_.Now(), ended});
    }
    ASSERT_TRUE(master_->nodes().Sync(node, report).ok());
  }

  // The first task of the trial's job ships points of `tag` at these steps and values.
  void Ship(JobId job_id, const std::string& tag,
            const std::vector<std::pair<int64_t, double>>& points) {
    const Job& job = GetJob(job_id);
    ASSERT_FALSE(job.tasks.empty());
    std::vector<TaggedPoint> batch;
    for (const auto& [step, value] : points) {
      batch.push_back(
          TaggedPoint{tag, MetricPoint{step, 1.7e9 + static_cast<double>(step), value}});
    }
    bool answered = false;
    master_->AppendMetrics(job.tasks[0].node_id, job.IdOf(job.tasks[0]), batch,
                           [&](StatusOr<state::MetricAppendResult> r) {
                             EXPECT_TRUE(r.ok()) << r.status().ToString();
                             answered = true;
                           });
    EXPECT_TRUE(answered);
  }

  int TrialJobs() {
    int n = 0;
    for (const Job* job : master_->ListJobs({})) n += job->trial ? 1 : 0;
    return n;
  }
};

TEST_P(SweepsTest, TrialsStartAsGpusFreeUpUpToTheConcurrencyCap) {
  AddNode("n1", 2);
  SweepId id = SubmitSweep("{name: grid, metric: loss, max_concurrent_trials: 3}");
  // Three trials are submitted at once (the cap); two GPUs take two of them.
  EXPECT_EQ(GetSweep(id).trials.size(), 3u);
  RunPosted();
  EXPECT_EQ(GetJob(JobOf(id, 1)).state, JobState::kStarting);
  EXPECT_EQ(GetJob(JobOf(id, 2)).state, JobState::kStarting);
  EXPECT_EQ(GetJob(JobOf(id, 3)).state, JobState::kPending);
  EXPECT_EQ(StateOf(id, 3), TrialState::kWaiting);
  // Each trial is its sweep's: its values in its record and command.
  const Job& first = GetJob(JobOf(id, 1));
  ASSERT_TRUE(first.trial.has_value());
  EXPECT_EQ(first.trial->sweep, id);
  EXPECT_EQ(first.trial->trial, 1);
  EXPECT_EQ(first.spec.name, "lr-1");
  EXPECT_EQ(first.spec.tasks[0].command[2], "0.001");
  const Job& second = GetJob(JobOf(id, 2));
  EXPECT_EQ(second.spec.tasks[0].command[2], FlattenHParams(second.trial->hparams).at("lr"));
  EXPECT_NE(second.spec.tasks[0].command[2], "0.001");
  // Its environment names the sweep, the trial and the value; the agent writes the file.
  auto desired = master_->nodes().DesiredFor("n1");
  ASSERT_TRUE(desired.ok());
  bool seen = false;
  for (const auto& t : desired->tasks) {
    if (t.id.job != first.id) continue;
    seen = true;
    EXPECT_EQ(t.env.at("COHORT_SWEEP_ID"), std::to_string(id));
    EXPECT_EQ(t.env.at("COHORT_TRIAL_ID"), "1");
    EXPECT_EQ(t.env.at("COHORT_HP_LR"), "0.001");
    EXPECT_EQ(Json::parse(t.hparams), Json({{"lr", 0.001}}));
  }
  EXPECT_TRUE(seen);

  // Trial 1 ends: trial 3 takes its GPU, and trial 4 is submitted in its place.
  ReportJobs("n1", {{JobOf(id, 1), TaskState::kSucceeded}});
  RunPosted();
  EXPECT_EQ(StateOf(id, 1), TrialState::kCompleted);
  EXPECT_EQ(GetSweep(id).trials.size(), 4u);
  EXPECT_EQ(GetJob(JobOf(id, 3)).state, JobState::kStarting);
  EXPECT_EQ(GetJob(JobOf(id, 4)).state, JobState::kPending);
  EXPECT_EQ(GetSweep(id).state, SweepState::kRunning);
}

TEST_P(SweepsTest, AGridSweepCompletesWhenEveryTrialHasEnded) {
  AddNode("n1", 8);
  SweepId id = SubmitSweep("{name: grid, metric: loss, max_concurrent_trials: 8}");
  EXPECT_EQ(GetSweep(id).trials.size(), 5u);  // the grid's five points
  RunPosted();
  std::map<JobId, TaskState> ends;
  for (int t = 1; t <= 5; ++t) ends[JobOf(id, t)] = TaskState::kSucceeded;
  ends[JobOf(id, 5)] = TaskState::kFailed;
  Ship(JobOf(id, 2), "loss", {{1, 0.5}, {2, 0.25}});
  Ship(JobOf(id, 3), "loss", {{1, 0.4}});
  ReportJobs("n1", ends);
  RunPosted();
  const Sweep& sweep = GetSweep(id);
  EXPECT_EQ(sweep.state, SweepState::kCompleted);
  EXPECT_TRUE(sweep.finished_at.has_value());
  EXPECT_EQ(StateOf(id, 5), TrialState::kFailed);
  EXPECT_EQ(master_->sweeps().BestTrial(sweep), std::optional<int>(2));
  auto board = master_->sweeps().Leaderboard(sweep);
  ASSERT_EQ(board.size(), 5u);
  EXPECT_EQ(board[0]->id, 2);
  EXPECT_EQ(board[1]->id, 3);
  EXPECT_EQ(sweep.trials[1].steps, 2);
  EXPECT_EQ(sweep.trials[1].last, std::optional<double>(0.25));
  EXPECT_EQ(TrialJobs(), 5);
}

TEST_P(SweepsTest, AshaStopsATrialOutsideTheTopOfItsRungAndStartsTheNext) {
  AddNode("n1", 2);
  // Rungs at steps 1, 3 and 9 (divisor 3); two trials at once.
  SweepId id = SubmitSweep(
      "{name: asha, metric: acc, mode: max, max_trials: 4, max_concurrent_trials: 2, seed: 7, "
      "max_time: 9, divisor: 3, max_rungs: 3}");
  RunPosted();
  ReportJobs("n1", {});
  // Trial 1 reaches rung 0 first: alone there, it goes on. Trial 2 comes in worse: stopped.
  Ship(JobOf(id, 1), "acc", {{1, 0.9}});
  EXPECT_EQ(GetJob(JobOf(id, 1)).state, JobState::kRunning);
  Ship(JobOf(id, 2), "acc", {{1, 0.5}});
  const Job& stopped = GetJob(JobOf(id, 2));
  EXPECT_EQ(stopped.state, JobState::kStopping);
  EXPECT_EQ(stopped.stop_target, std::optional<JobState>(JobState::kKilled));
  EXPECT_NE(stopped.message.find("stopped early"), std::string::npos) << stopped.message;
  EXPECT_EQ(StateOf(id, 2), TrialState::kStoppedEarly);
  // Its GPU is free once its task is gone, and trial 3 starts there.
  ReportJobs("n1", {{JobOf(id, 2), TaskState::kKilled}});
  RunPosted();
  EXPECT_EQ(GetJob(JobOf(id, 2)).state, JobState::kKilled);
  EXPECT_EQ(StateOf(id, 2), TrialState::kStoppedEarly);
  // How long a stopped trial ran says nothing of how long such a job takes.
  EXPECT_EQ(master_->runtime_history().size(), 0u);
  ASSERT_EQ(GetSweep(id).trials.size(), 3u);
  EXPECT_EQ(GetJob(JobOf(id, 3)).state, JobState::kStarting);
  // Trial 1 reaching max_time is complete: ended gracefully, as SUCCEEDED.
  ReportJobs("n1", {});
  Ship(JobOf(id, 1), "acc", {{3, 0.95}, {9, 0.97}});
  EXPECT_EQ(GetJob(JobOf(id, 1)).stop_target, std::optional<JobState>(JobState::kSucceeded));
  ReportJobs("n1", {{JobOf(id, 1), TaskState::kKilled}});
  RunPosted();
  EXPECT_EQ(GetJob(JobOf(id, 1)).state, JobState::kSucceeded);
  EXPECT_EQ(StateOf(id, 1), TrialState::kCompleted);
}

TEST_P(SweepsTest, ARestartLosesNoTrialStartsNoneTwiceAndKeepsTheSearchersState) {
  AddNode("n1", 2);
  SweepId id = SubmitSweep(
      "{name: asha, metric: acc, mode: max, max_trials: 6, max_concurrent_trials: 2, seed: 11, "
      "max_time: 9, divisor: 3, max_rungs: 3}");
  RunPosted();
  ReportJobs("n1", {});
  Ship(JobOf(id, 1), "acc", {{1, 0.9}});
  Json searcher_before = GetSweep(id).searcher->State();
  // A point between rungs changes nothing a verdict depends on (asha's rungs, its stream): the
  // sweep is not written again for it.
  using Call = cohort::testing::FailingStateStore::Call;
  const int64_t saves = store_->Calls(Call::kSaveSweep);
  Ship(JobOf(id, 1), "acc", {{2, 0.93}});
  EXPECT_EQ(store_->Calls(Call::kSaveSweep), saves);
  std::vector<Json> values_before;
  for (const auto& t : GetSweep(id).trials) values_before.push_back(t.hparams);
  int jobs_before = TrialJobs();

  Start();  // a new master on the same database
  AddNode("n1", 2);
  RunPosted();
  const Sweep& after = GetSweep(id);
  EXPECT_EQ(after.searcher->State(), searcher_before);
  ASSERT_EQ(after.trials.size(), values_before.size());
  for (size_t i = 0; i < values_before.size(); ++i)
    EXPECT_EQ(after.trials[i].hparams, values_before[i]);
  EXPECT_EQ(TrialJobs(), jobs_before);
  // What the leaderboard showed comes back from the metric store, the unwritten point too.
  EXPECT_EQ(after.trials[0].best, std::optional<double>(0.93));
  EXPECT_EQ(after.trials[0].last, std::optional<double>(0.93));
  EXPECT_EQ(after.trials[0].steps, 2);
  EXPECT_EQ(after.trials[0].points, 2);

  // The next trial after the restart is the one an uninterrupted searcher would have made.
  auto fresh = sweep::MakeSearcher(after.spec, &searcher_before);
  ASSERT_TRUE(fresh.ok());
  auto expected = (*fresh)->NextTrial();
  ASSERT_TRUE(expected.has_value());
  ReportJobs("n1", {{JobOf(id, 1), TaskState::kFailed}});
  RunPosted();
  ASSERT_EQ(GetSweep(id).trials.size(), 3u);
  EXPECT_EQ(GetSweep(id).trials[2].hparams, *expected);
  EXPECT_TRUE(fail_stops_.empty());
}

TEST_P(SweepsTest, PauseStopsLiveTrialsGracefullyAndResumeRunsThemAgain) {
  AddNode("n1", 1);
  SweepId id = SubmitSweep("{name: random, metric: loss, max_trials: 3, max_concurrent_trials: 2}");
  RunPosted();
  ReportJobs("n1", {});
  JobId running = JobOf(id, 1), waiting = JobOf(id, 2);
  ASSERT_EQ(GetJob(running).state, JobState::kRunning);
  ASSERT_TRUE(master_->sweeps().Pause(id, "user ada").ok());
  EXPECT_EQ(GetSweep(id).state, SweepState::kPaused);
  // The running trial stops as a preemption would; the waiting one stops waiting.
  EXPECT_EQ(GetJob(running).stop_target, std::optional<JobState>(JobState::kPending));
  EXPECT_FALSE(master_->ListJobs({}).empty());
  EXPECT_EQ(StateOf(id, 2), TrialState::kPaused);
  ReportJobs("n1", {{running, TaskState::kKilled}});
  RunPosted();
  EXPECT_EQ(GetJob(running).state, JobState::kPending);
  EXPECT_EQ(GetJob(running).failures, 0);  // no restart budget spent
  EXPECT_EQ(StateOf(id, 1), TrialState::kPaused);
  EXPECT_EQ(GetJob(waiting).state, JobState::kPending);
  EXPECT_FALSE(GetJob(waiting).placed_at.has_value());  // held: the free GPU stays free
  EXPECT_EQ(GetSweep(id).trials.size(), 2u);            // and no new trial is made
  // A paused sweep cannot be paused again.
  EXPECT_EQ(master_->sweeps().Pause(id, "user ada").status().code(),
            StatusCode::kFailedPrecondition);

  ASSERT_TRUE(master_->sweeps().Resume(id, "user ada").ok());
  RunPosted();
  EXPECT_EQ(GetSweep(id).state, SweepState::kRunning);
  EXPECT_EQ(GetJob(running).state, JobState::kStarting);
  EXPECT_EQ(GetJob(running).attempt, 2);  // its next attempt, from its checkpoint
  EXPECT_EQ(StateOf(id, 2), TrialState::kWaiting);
}

TEST_P(SweepsTest, KillEndsEveryLiveTrialAndTheSweep) {
  AddNode("n1", 1);
  SweepId id = SubmitSweep("{name: random, metric: loss, max_trials: 5, max_concurrent_trials: 2}");
  RunPosted();
  ReportJobs("n1", {});
  ASSERT_TRUE(master_->sweeps().Kill(id, "user ada").ok());
  EXPECT_EQ(GetSweep(id).state, SweepState::kKilled);
  EXPECT_EQ(GetJob(JobOf(id, 2)).state, JobState::kKilled);  // was waiting
  ReportJobs("n1", {{JobOf(id, 1), TaskState::kKilled}});
  RunPosted();
  EXPECT_EQ(GetJob(JobOf(id, 1)).state, JobState::kKilled);
  EXPECT_EQ(StateOf(id, 1), TrialState::kKilled);
  EXPECT_EQ(GetSweep(id).trials.size(), 2u);
  EXPECT_TRUE(GetSweep(id).finished_at.has_value());
  EXPECT_EQ(master_->sweeps().Kill(id, "user ada").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_P(SweepsTest, ATrialThatNeverReportsTheMetricEndsAndIsCountedAsSuch) {
  AddNode("n1", 1);
  SweepId id = SubmitSweep(
      "{name: asha, metric: acc, mode: max, max_trials: 2, max_concurrent_trials: 1, seed: 3, "
      "max_time: 9, divisor: 3, max_rungs: 3}");
  RunPosted();
  ReportJobs("n1", {});
  Ship(JobOf(id, 1), "loss", {{1, 0.3}});  // another metric: the searcher hears nothing
  ReportJobs("n1", {{JobOf(id, 1), TaskState::kSucceeded}});
  RunPosted();
  const SweepTrial& trial = GetSweep(id).trials[0];
  EXPECT_TRUE(trial.ended);
  EXPECT_EQ(trial.points, 0);
  EXPECT_FALSE(trial.best.has_value());
  // The sweep goes on: the next trial was made and started.
  ASSERT_EQ(GetSweep(id).trials.size(), 2u);
  EXPECT_EQ(GetJob(JobOf(id, 2)).state, JobState::kStarting);
}

INSTANTIATE_TEST_SUITE_P(Modes, SweepsTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
