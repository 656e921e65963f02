// Sweeps on a real cluster (docs/sweeps.md), with examples/sweep-digits' real PyTorch training:
// trials start as GPUs free up, ASHA stops bad ones early, a trial reclaimed for another team's
// job resumes from its checkpoint, a sweep pauses and resumes, and a master restart mid-sweep
// loses no trial and starts none twice.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "model/json.h"
#include "os/durable_file.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Replace(std::string& text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << "not in the spec: " << from;
  text.replace(at, from.size(), to);
}

Json SweepStatus(LocalCluster& cluster, int64_t id) {
  auto status = cluster.Cohort({"sweep", "status", std::to_string(id), "-o", "json"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  auto doc = ParseJson(status.out);
  EXPECT_TRUE(doc.ok()) << status.out;
  return doc.ok() ? *doc : Json::object();
}

Json WaitForSweep(LocalCluster& cluster, int64_t id, const std::function<bool(const Json&)>& done,
                  std::chrono::seconds timeout = std::chrono::seconds(180)) {
  Json last;
  WaitFor(
      [&] {
        last = SweepStatus(cluster, id);
        return done(last);
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  return last;
}

const Json* TrialOf(const Json& sweep, int trial) {
  for (const auto& t : sweep["trials"]) {
    if (t["id"] == trial) return &t;
  }
  return nullptr;
}

int64_t SubmitSweep(LocalCluster& cluster, const std::string& spec, const std::string& name) {
  const std::string path = cluster.dir() + "/" + name + ".yaml";
  EXPECT_TRUE(WriteFileAtomically(path, spec).ok());
  auto submitted = cluster.Cohort({"sweep", "submit", path});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  return std::stoll(std::string(Trim(submitted.out)));
}

// examples/sweep-digits/sweep.yaml as shipped, made small enough for a test: 6 trials of at most
// 9 epochs (rungs at 1, 3 and 9), two GPUs for three trials at once.
TEST(SweepTest, TheDigitsExampleStopsBadTrialsEarlyAndStartsTrialsAsGpusFreeUp) {
  LocalCluster cluster("sweep-digits");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  const std::string dir = SourceDir() + "/examples/sweep-digits";
  std::string spec = ReadText(dir + "/sweep.yaml");
  Replace(spec, "max_trials: 32", "max_trials: 6");
  Replace(spec, "max_concurrent_trials: 4", "max_concurrent_trials: 3");
  Replace(spec, "epochs: 27", "epochs: 9");
  Replace(spec, "max_time: 27", "max_time: 9");
  Replace(spec, "max_rungs: 4", "max_rungs: 3");
  Replace(spec, "workdir: .", "workdir: " + dir);

  // What the searcher will make is known before anything runs.
  const std::string path = cluster.dir() + "/sweep.yaml";
  ASSERT_TRUE(WriteFileAtomically(path, spec).ok());
  auto preview =
      cluster.Cohort({"sweep", "submit", path, "--dry-run", "--trials", "6", "-o", "json"});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  auto planned = ParseJson(preview.out);
  ASSERT_TRUE(planned.ok()) << preview.out;
  ASSERT_EQ((*planned)["trials"].size(), 6u);

  int64_t id = SubmitSweep(cluster, spec, "digits");
  Json done = WaitForSweep(cluster, id, [](const Json& s) { return s["state"] != "RUNNING"; });
  ASSERT_EQ(done["state"], "COMPLETED") << done.dump(2);
  ASSERT_EQ(done["trials"].size(), 6u) << done.dump(2);
  // Each trial ran with the values the dry run showed.
  for (const auto& t : done["trials"]) {
    EXPECT_EQ(t["hparams"], (*planned)["trials"][t["id"].get<int>() - 1]["hparams"]) << t.dump();
  }
  // The leaderboard is best first, and the best trial reached a good accuracy.
  const Json& best = done["trials"][0];
  EXPECT_EQ(done["best_trial"], best["id"]);
  ASSERT_TRUE(best["metric"].is_number()) << done.dump(2);
  double previous = 2;
  for (const auto& t : done["trials"]) {
    if (!t["metric"].is_number()) continue;
    EXPECT_LE(t["metric"].get<double>(), previous);
    previous = t["metric"].get<double>();
  }
  // ASHA stopped some trials early; every trial ended one way or another, none failed.
  std::multiset<std::string> states;
  for (const auto& t : done["trials"]) states.insert(t["state"].get<std::string>());
  EXPECT_GE(states.count("STOPPED_EARLY"), 1u) << done.dump(2);
  EXPECT_GE(states.count("COMPLETED"), 1u) << done.dump(2);
  EXPECT_EQ(states.count("FAILED"), 0u) << done.dump(2);
  for (const auto& t : done["trials"]) {
    if (t["state"] != "STOPPED_EARLY") continue;
    // Stopped by a rung's verdict, not for reaching max_time, and killed before it ended on its
    // own. (Its points may reach epoch 9 all the same: they come in batches, and the verdict
    // follows the batch that crossed the rung, which on a fast machine already holds them all.)
    EXPECT_LE(t["steps"].get<int64_t>(), 9) << t.dump();
    Job job = *cluster.client().GetJob(t["job_id"].get<int64_t>());
    EXPECT_EQ(job.state, JobState::kKilled);
    EXPECT_THAT(cluster.EventsText(job.id), HasSubstr("stopped early by sweep"));
    EXPECT_THAT(cluster.EventsText(job.id), HasSubstr("is not in the top 1/"));
  }
  // Incremental: two GPUs, so trial 3 was placed only once trial 1 or 2 had ended.
  auto job_of = [&](int trial) {
    return *cluster.client().GetJob((*TrialOf(done, trial))["job_id"].get<int64_t>());
  };
  Job first = job_of(1), second = job_of(2), third = job_of(3);
  ASSERT_TRUE(third.history.size() >= 1 && third.history[0].started_at);
  Timestamp first_end = std::min(*first.finished_at, *second.finished_at);
  EXPECT_GE(*third.history[0].started_at, first_end);
  // The trial's values reached it all three ways.
  EXPECT_THAT(cluster.Logs(first.id), HasSubstr("epoch"));
  auto list = cluster.Cohort({"sweep", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("COMPLETED"));
  auto table = cluster.Cohort({"sweep", "status", std::to_string(id)});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("STOPPED_EARLY"));
}

// A grid of two long trials in a team that only borrows: a job of a team within its guarantee
// reclaims their GPUs, and they resume from their checkpoints; the sweep pauses and resumes; the
// master restarts in the middle; the sweep ends with its two trials and no third.
// A sweep submitted from a project directory: each trial starts in its own copy of the code
// (docs/data.md, "Code"), with no workdir and no shared file system.
TEST(SweepTest, EveryTrialStartsInTheCodeTheSweepWasSubmittedFrom) {
  LocalCluster cluster("sweep-code");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  const std::string proj = cluster.dir() + "/proj";
  std::filesystem::create_directories(proj);
  ASSERT_TRUE(WriteFileAtomically(proj + "/train.sh",
                                  "echo trial $1 in $(basename $(pwd)) with $(cat lr.txt)\n"
                                  "echo cohort-metric step=1 acc=$1\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomically(proj + "/lr.txt", "lr-from-code\n").ok());
  ASSERT_TRUE(WriteFileAtomically(proj + "/sweep.yaml", R"(
name: code
trial:
  tasks:
    - role: worker
      resources: {gpus: 1}
      command: [sh, train.sh, "${hp.x}"]
hyperparameters:
  x: {type: categorical, vals: [1, 2]}
searcher: {name: grid, metric: acc, mode: max, max_concurrent_trials: 2}
)")
                  .ok());
  auto submitted = cluster.Cohort({"sweep", "submit", "sweep.yaml"}, proj);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_THAT(submitted.err, HasSubstr("code: 3 files"));
  int64_t id = std::stoll(std::string(Trim(submitted.out)));
  Json done = WaitForSweep(
      cluster, id, [](const Json& s) { return s["state"] != "RUNNING"; }, std::chrono::seconds(60));
  ASSERT_EQ(done["state"], "COMPLETED") << done.dump(2);
  ASSERT_EQ(done["trials"].size(), 2u) << done.dump(2);
  std::string logs;
  for (const auto& t : done["trials"]) logs += cluster.Logs(t["job_id"].get<JobId>());
  EXPECT_THAT(logs, HasSubstr("trial 1 in work with lr-from-code"));
  EXPECT_THAT(logs, HasSubstr("trial 2 in work with lr-from-code"));
}

TEST(SweepTest, ReclaimedTrialsResumeFromCheckpointsAndASweepSurvivesPauseAndRestart) {
  LocalCluster cluster("sweep-reclaim");
  // Trials may be reclaimed a second after they start (the default waits a minute).
  const std::vector<std::string> master_flags = {"--preemption-min-runtime", "1s"};
  cluster.StartMaster(master_flags);
  cluster.StartAgent("node-a", 2);
  ASSERT_EQ(cluster.Cohort({"team", "set", "research", "--gpus", "0"}).exit_code, 0);
  ASSERT_EQ(cluster.Cohort({"team", "set", "prod", "--gpus", "2"}).exit_code, 0);
  const std::string dir = SourceDir() + "/examples/sweep-digits";
  int64_t id = SubmitSweep(cluster,
                           fmt::format(R"(
name: reclaim
team: research
trial:
  tasks:
    - role: worker
      resources: {{gpus: 1, cpus: 1, memory: 1Gi}}
      command: [/usr/bin/python3, train.py, --epoch-seconds, "0.4"]
      workdir: {}
  grace_period: 10s
hyperparameters:
  lr: {{type: categorical, vals: [0.001, 0.003]}}
  epochs: 80
searcher: {{name: grid, metric: val_acc, mode: max, max_concurrent_trials: 2}}
)",
                                       dir),
                           "reclaim");
  auto epoch_of = [&](const Json& sweep, int trial) {
    const Json* t = TrialOf(sweep, trial);
    return t ? (*t)["steps"].get<int64_t>() : 0;
  };
  Json running = WaitForSweep(cluster, id, [&](const Json& s) {
    return s["trials"].size() == 2 && epoch_of(s, 1) >= 3 && epoch_of(s, 2) >= 3;
  });
  ASSERT_GE(epoch_of(running, 1), 3) << running.dump(2);

  // A prod job within its guarantee needs both GPUs: the trials are reclaimed, not failed.
  JobId prod = cluster.Submit(R"(
name: prod
team: prod
tasks:
  - role: worker
    resources: {gpus: 2, cpus: 1, memory: 1Gi}
    command: [sleep, "3"]
)");
  Json reclaimed = WaitForSweep(cluster, id, [](const Json& s) {
    return (*TrialOf(s, 1))["state"] == "PAUSED" && (*TrialOf(s, 2))["state"] == "PAUSED";
  });
  ASSERT_EQ((*TrialOf(reclaimed, 1))["state"], "PAUSED") << reclaimed.dump(2);
  EXPECT_EQ(cluster.WaitForState(prod, JobState::kSucceeded).state, JobState::kSucceeded);
  // Back on the GPUs, from the checkpoint: attempt 2 starts at a later epoch than 0.
  Json resumed = WaitForSweep(cluster, id, [&](const Json& s) {
    return (*TrialOf(s, 1))["state"] == "RUNNING" && epoch_of(s, 1) > epoch_of(reclaimed, 1);
  });
  ASSERT_EQ((*TrialOf(resumed, 1))["state"], "RUNNING") << resumed.dump(2);
  JobId trial1 = (*TrialOf(resumed, 1))["job_id"].get<int64_t>();
  std::string attempts = ReadText(
      fmt::format("{}/master/storage/jobs/{}/outputs/attempts.log", cluster.dir(), trial1));
  size_t at = attempts.find("attempt=2 start_epoch=");
  ASSERT_NE(at, std::string::npos) << attempts;
  EXPECT_GE(std::atoi(attempts.c_str() + at + std::string("attempt=2 start_epoch=").size()), 3)
      << attempts;
  Job job1 = *cluster.client().GetJob(trial1);
  EXPECT_EQ(job1.failures, 0);
  EXPECT_GE(job1.preemptions, 1);

  // Paused by hand: its trials stop and wait; resumed, they go on.
  auto pause = cluster.Cohort({"sweep", "pause", std::to_string(id)});
  ASSERT_EQ(pause.exit_code, 0) << pause.err;
  EXPECT_THAT(pause.out, HasSubstr("PAUSED"));
  Json paused = WaitForSweep(cluster, id, [](const Json& s) {
    for (const auto& t : s["trials"]) {
      if (t["state"] != "PAUSED") return false;
    }
    return true;
  });
  EXPECT_EQ(paused["state"], "PAUSED");
  auto why = cluster.Cohort({"why", std::to_string(trial1)});
  EXPECT_THAT(why.out, HasSubstr("held")) << why.out << why.err;

  // The master restarts while the sweep is paused, and again once it runs.
  cluster.StopMaster();
  cluster.StartMaster(master_flags);
  EXPECT_EQ(SweepStatus(cluster, id)["state"], "PAUSED");
  ASSERT_EQ(cluster.Cohort({"sweep", "resume", std::to_string(id)}).exit_code, 0);
  Json again = WaitForSweep(cluster, id, [&](const Json& s) {
    return (*TrialOf(s, 1))["state"] == "RUNNING" && epoch_of(s, 1) > epoch_of(paused, 1);
  });
  ASSERT_EQ((*TrialOf(again, 1))["state"], "RUNNING") << again.dump(2);
  cluster.StopMaster();
  cluster.StartMaster(master_flags);

  Json done = WaitForSweep(
      cluster, id, [](const Json& s) { return s["state"] != "RUNNING"; },
      std::chrono::seconds(240));
  ASSERT_EQ(done["state"], "COMPLETED") << done.dump(2);
  ASSERT_EQ(done["trials"].size(), 2u);
  for (const auto& t : done["trials"]) {
    EXPECT_EQ(t["state"], "COMPLETED") << t.dump();
    EXPECT_EQ(t["steps"], 80) << t.dump();
  }
  // No trial was started twice: the sweep's jobs are its two trials' jobs.
  int trial_jobs = 0;
  auto jobs = cluster.client().ListJobs();
  ASSERT_TRUE(jobs.ok());
  for (const auto& j : *jobs) trial_jobs += j.trial && j.trial->sweep == id ? 1 : 0;
  EXPECT_EQ(trial_jobs, 2);
}

}  // namespace
}  // namespace cohort::testing
