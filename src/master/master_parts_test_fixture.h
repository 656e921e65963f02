// The fixture of the tests of the master's parts (job_lifecycle_test.cc, reconciler_test.cc,
// scheduling_loop_test.cc): the classes the Master facade owns, wired as master.cc wires them,
// over an in-memory state store behind a FailingStateStore, a manual clock and an event loop
// run by hand. No Master: each test drives one part directly.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "master/accounts.h"
#include "master/event_loop.h"
#include "master/job_book.h"
#include "master/job_lifecycle.h"
#include "master/journal.h"
#include "master/master_config.h"
#include "master/node_registry.h"
#include "master/reconciler.h"
#include "master/scheduling_loop.h"
#include "master/secrets.h"
#include "master/task_secrets.h"
#include "master/teams.h"
#include "scheduler/scheduler.h"
#include "testing/failing_state_store.h"
#include "testing/memory_state_store.h"

namespace cohort::master {

// An event loop run by hand that counts what was posted to it (the parts' tests check that many
// requests cost one pass). RunAfter work is kept and never run.
class HandLoop final : public EventLoop {
 public:
  void Post(std::function<void()> work) override {
    ++posts_;
    queue_.push_back(std::move(work));
  }
  void RunAfter(Duration, std::function<void()> work) override { later_.push_back(work); }

  // Runs what was posted, and what that posts, until nothing is left.
  void RunPosted() {
    while (!queue_.empty()) {
      auto work = std::move(queue_.front());
      queue_.pop_front();
      work();
    }
  }
  size_t waiting() const { return queue_.size(); }
  int posts() const { return posts_; }

 private:
  std::deque<std::function<void()>> queue_;
  std::vector<std::function<void()>> later_;
  int posts_ = 0;
};

// A node's record as an agent registers it: `gpus` H100s, 32 CPUs, 128 GiB, ports 31000-31009.
inline NodeInfo NodeInfoOf(const std::string& id, int gpus, PortRange ports = {31000, 31009}) {
  NodeInfo info;
  info.id = id;
  info.instance = "first";
  info.address = "10.0.0." + std::to_string(id.size());
  info.milli_cpus = 32000;
  info.memory_bytes = 128LL << 30;
  for (int i = 0; i < gpus; ++i) {
    info.gpus.push_back(Gpu{i, "GPU-" + id + std::to_string(i), "H100", 80LL << 30, "", 0});
  }
  info.ports = ports;
  return info;
}

// A gang of `replicas` workers with `gpus` each, in `team`; no restart backoff.
inline JobSpec GangSpec(int replicas, int gpus, int max_attempts = 1,
                        const std::string& team = kDefaultTeam) {
  JobSpec spec;
  spec.name = "gang";
  spec.team = team;
  spec.framework = Framework::kPyTorch;
  spec.restart.max_attempts = max_attempts;
  spec.restart.backoff = Duration::zero();
  spec.restart.max_backoff = Duration::zero();
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = replicas;
  g.resources = Resources{gpus, 1000, 1LL << 30};
  g.command = {"train"};
  spec.tasks.push_back(g);
  return spec;
}

// The parts of a master, wired as Master's constructor wires them (master.cc), and loaded from
// an empty store as Master::Load loads them.
struct MasterParts {
  MasterParts(MasterConfig c, const Clock& clock, EventLoop& loop)
      : config(std::move(c)),
        store(std::make_unique<cohort::testing::FailingStateStore>(
            std::make_unique<cohort::testing::MemoryStateStore>())),
        journal(*store, config.fail_stop),
        accounts(*store, clock),
        secrets(*store, clock),
        jobs(journal, clock, config.history_max_keys),
        scheduling(jobs, journal, clock, loop, scheduler::NewScheduler(), config.incremental_above),
        teams(*store, jobs, secrets, scheduling),
        task_secrets(secrets, jobs),
        lifecycle(config, jobs, nodes, scheduling, journal, teams, task_secrets, clock),
        artifacts(config, jobs, nullptr),
        reconciler(config, jobs, nodes, scheduling, lifecycle, journal, accounts, task_secrets,
                   artifacts, clock) {
    config.storage_root = StorageRootOf(config);
    scheduling.SetDecisionTaker(&lifecycle);
  }

  Status Load(Timestamp now) {
    COHORT_RETURN_IF_ERROR(accounts.Load());
    COHORT_RETURN_IF_ERROR(secrets.Load());
    COHORT_ASSIGN_OR_RETURN(uint64_t max_version, jobs.Load());
    COHORT_RETURN_IF_ERROR(teams.Load());
    return reconciler.Load(std::max(max_version, static_cast<uint64_t>(ToMicros(now))));
  }

  MasterConfig config;
  std::unique_ptr<cohort::testing::FailingStateStore> store;
  Journal journal;
  Accounts accounts;
  Secrets secrets;
  JobBook jobs;
  NodeRegistry nodes;
  SchedulingLoop scheduling;
  Teams teams;
  TaskSecrets task_secrets;
  JobLifecycle lifecycle;
  Artifacts artifacts;
  Reconciler reconciler;
};

// Every change is scheduled by a full pass (posted, run by RunPosted), as in a small cluster.
class MasterPartsTest : public ::testing::Test {
 protected:
  void SetUp() override { Wire(MasterConfig{}); }
  // Nothing here fails a write after memory changed unless a test means it to.
  void TearDown() override {
    for (const auto& s : fail_stops_) ADD_FAILURE() << "fail-stop: " << s.ToString();
  }

  // (Re)builds the parts with `config` over an empty store; the fail-stop handler records.
  void Wire(MasterConfig config) {
    parts_.reset();
    loop_ = std::make_unique<HandLoop>();
    config.data_dir = "/nonexistent/cohort-parts-test";
    config.incremental_above = dispatch::kNeverIncremental;
    config.fail_stop = [this](const Status& s) { fail_stops_.push_back(s); };
    parts_ = std::make_unique<MasterParts>(std::move(config), clock_, *loop_);
    Status loaded = parts_->Load(clock_.Now());
    ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  }

  // The node as the reconciler keeps it, registered by its agent (READY).
  void AddNode(const std::string& id, int gpus, PortRange ports = {31000, 31009}) {
    auto desired = parts_->reconciler.Register(NodeInfoOf(id, gpus, ports));
    ASSERT_TRUE(desired.ok()) << desired.status().ToString();
  }

  JobId Submit(JobSpec spec, const std::string& user = "ada") {
    auto job = parts_->lifecycle.Submit(std::move(spec), user, {}, nullptr);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }

  // Submits the gang and runs the pass that places it: STARTING on the nodes it fits.
  JobId Started(JobSpec spec) {
    JobId id = Submit(std::move(spec));
    loop_->RunPosted();
    EXPECT_EQ(job(id).state, JobState::kStarting) << job(id).message;
    return id;
  }

  Job& job(JobId id) { return parts_->jobs.At(id); }

  // The job's events, one "type: message" line each.
  std::string EventsText(JobId id) {
    std::string text;
    auto events = parts_->jobs.Events(id);
    EXPECT_TRUE(events.ok());
    if (!events.ok()) return text;
    for (const auto& e : *events) text += e.type + ": " + e.message + "\n";
    return text;
  }

  // What the agent on `node` reports with every task it should run in `state`, having applied
  // the desired version.
  AgentReport ReportOf(const std::string& node, TaskState state,
                       std::optional<int> exit_code = std::nullopt) {
    auto desired = parts_->reconciler.DesiredFor(node);
    EXPECT_TRUE(desired.ok()) << desired.status().ToString();
    AgentReport report;
    if (!desired.ok()) return report;
    report.applied_version = desired->version;
    for (const auto& t : desired->tasks) {
      std::optional<Timestamp> ended;
      if (IsTerminal(state)) ended = clock_.Now();
      report.tasks.push_back(
          TaskReport{t.id, state, exit_code, std::nullopt, 100, clock_.Now(), ended});
    }
    return report;
  }

  // The agent on `node` reports every task it should run in `state`.
  void Report(const std::string& node, TaskState state,
              std::optional<int> exit_code = std::nullopt) {
    auto next = parts_->reconciler.Sync(node, ReportOf(node, state, exit_code));
    ASSERT_TRUE(next.ok()) << next.status().ToString();
  }

  ManualClock clock_;
  std::unique_ptr<HandLoop> loop_;
  std::vector<Status> fail_stops_;
  std::unique_ptr<MasterParts> parts_;
};

}  // namespace cohort::master
