// The fixture of the master's tests: a real SQLite file behind a FailingStateStore, a manual
// clock, the event loop run by hand, and hand-written agent reports.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <tuple>

#include "master/master.h"
#include "master/master_parts_test_fixture.h"
#include "testing/failing_state_store.h"
#include "testing/master_deps.h"

namespace cohort::master {

// The master's event loop, run by hand: posted work waits in a queue; the periodic tick is
// not run by itself (tests call Tick).
class QueueLoop final : public EventLoop {
 public:
  explicit QueueLoop(std::deque<std::function<void()>>& queue) : queue_(queue) {}
  void Post(std::function<void()> work) override { queue_.push_back(std::move(work)); }
  void RunAfter(Duration, std::function<void()> work) override { later_.push_back(work); }
  std::vector<std::function<void()>> later_;

 private:
  std::deque<std::function<void()>>& queue_;
};

// Every test runs twice: every change scheduled by a full pass at once (the default for small
// queues), and decisions between passes with the full pass on the next tick.
class MasterTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cohort-master-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Start();
  }
  void TearDown() override {
    master_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start() {
    master_.reset();
    posted_.clear();  // work posted by a master that is gone must not run on its successor
    loop_.later_.clear();
    auto sqlite = state::OpenSqliteStateStore((dir_ / "cohort.db").string());
    ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    auto store = std::make_unique<cohort::testing::FailingStateStore>(std::move(sqlite).value());
    store_ = store.get();
    MasterConfig config;
    config.data_dir = dir_.string();
    config.incremental_above = GetParam() ? 0 : 1'000'000;
    config.fail_stop = [this](const Status& s) { fail_stops_.push_back(s); };
    config.node_timeout = node_timeout_;
    config.history_max_keys = history_max_keys_;
    config.store_quota_per_team = store_quota_;
    config.stage_datasets = stage_datasets_;
    config.job_credential_key = job_credential_key_;
    MasterDeps deps = cohort::testing::TestMasterDeps(config.data_dir, std::move(store),
                                                      scheduler::NewScheduler(scheduler_config_));
    auto state_disk = std::make_unique<FixedDiskSpace>(state_disk_free_, dir_.string());
    state_disk_ = state_disk.get();
    deps.state_disk = std::move(state_disk);
    auto m = Master::Create(config, std::move(deps), clock_, loop_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
  }

  // Runs whatever the master posted (scheduling passes), like its event loop would, and a tick
  // (which runs a full pass that was put off).
  void RunPosted() {
    for (int round = 0; round < 2; ++round) {
      while (!posted_.empty()) {
        auto f = posted_.front();
        posted_.pop_front();
        f();
      }
      master_->Tick();
    }
  }

  // `instance`: the agent's data directory (another one is an agent that lost its memory).
  void AddNode(const std::string& id, int gpus, const std::string& instance = "first") {
    NodeInfo info;
    info.instance = instance;
    info.id = id;
    info.address = "127.0.0.1";
    info.milli_cpus = 32000;
    info.memory_bytes = 128LL << 30;
    for (int i = 0; i < gpus; ++i)
      info.gpus.push_back(Gpu{i, "GPU-" + id + std::to_string(i), "H100", 80LL << 30, "", 0});
    info.ports = PortRange{31000, 31009};
    ASSERT_TRUE(master_->nodes().Register(info).ok());
  }

  JobId Submit(int replicas, int gpus, int max_attempts = 1, const std::string& team = "default",
               int priority = 0) {
    auto job = master_->Submit(MakeSpec(replicas, gpus, max_attempts, team, priority), "ada");
    EXPECT_TRUE(job.ok());
    return job->id;
  }

  // A gang of `replicas` workers with `gpus` each; no restart backoff (GangSpec).
  static JobSpec MakeSpec(int replicas, int gpus, int max_attempts = 1,
                          const std::string& team = "default", int priority = 0) {
    JobSpec spec = GangSpec(replicas, gpus, max_attempts, team);
    spec.name = "test";
    spec.priority = priority;
    spec.tasks[0].command = {"true"};
    return spec;
  }

  // The master's periodic tick, as its loop would run it when due (it asks for the next one).
  void RunTickTimer() {
    ASSERT_EQ(loop_.later_.size(), 1u);
    auto tick = loop_.later_.back();
    loop_.later_.clear();
    tick();
  }

  const Job& GetJob(JobId id) { return **master_->GetJob(id); }

  // Every launch of the job in the desired states of `nodes`, in task order.
  std::vector<TaskLaunch> LaunchesOf(JobId id, const std::vector<std::string>& nodes) {
    std::vector<TaskLaunch> out;
    for (const auto& node : nodes) {
      auto desired = master_->nodes().DesiredFor(node);
      EXPECT_TRUE(desired.ok());
      for (const auto& t : desired->tasks) {
        if (t.id.job == id) out.push_back(t);
      }
    }
    std::sort(out.begin(), out.end(), [](const TaskLaunch& a, const TaskLaunch& b) {
      return std::tie(a.id.role, a.id.index) < std::tie(b.id.role, b.id.index);
    });
    return out;
  }

  // What the agent on `node` reports with every desired task in `state` (and the desired
  // version applied).
  AgentReport ReportOf(const std::string& node, TaskState state,
                       std::optional<int> exit_code = std::nullopt,
                       std::optional<Timestamp> ended_at = std::nullopt) {
    auto desired = master_->nodes().DesiredFor(node);
    EXPECT_TRUE(desired.ok());
    AgentReport report;
    report.applied_version = desired->version;
    for (const auto& t : desired->tasks) {
      report.tasks.push_back(
          TaskReport{t.id, state, exit_code, std::nullopt, 100, clock_.Now(), ended_at});
    }
    return report;
  }

  // The agent on `node` reports every desired task in `state` (and applies the desired version).
  DesiredState Report(const std::string& node, TaskState state,
                      std::optional<int> exit_code = std::nullopt) {
    AgentReport report = ReportOf(node, state, exit_code);
    auto next = master_->nodes().Sync(node, report);
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    return *next;
  }

  std::filesystem::path dir_;
  cohort::testing::FailingStateStore* store_ = nullptr;  // owned by the master
  // The free space the master sees on its state disk (owned by the master), and what the next
  // Start gives it.
  FixedDiskSpace* state_disk_ = nullptr;
  uint64_t state_disk_free_ = 1ULL << 40;
  std::vector<Status> fail_stops_;
  scheduler::SchedulerConfig scheduler_config_;
  Duration node_timeout_ = std::chrono::seconds(10);
  size_t history_max_keys_ = scheduler::RuntimeHistory::kMaxKeys;
  int64_t store_quota_ = kDefaultStoreQuotaPerTeam;
  bool stage_datasets_ = true;
  std::string job_credential_key_;  // empty: each Start makes its own
  ManualClock clock_;
  std::deque<std::function<void()>> posted_;
  QueueLoop loop_{posted_};
  std::unique_ptr<Master> master_;
};

}  // namespace cohort::master
