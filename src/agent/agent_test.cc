// The agent's rules (docs/architecture.md, "Reconciliation between agent and master") against a
// fake master and fake supervisors, on one thread and a manual clock: no processes, no sockets.
// Only the task directories are real, in a temporary directory.
#include "agent/agent.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/fake_task_launcher.h"
#include "agent/output_file.h"
#include "model/json.h"
#include "os/credentials.h"
#include "os/process.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The master's side of the protocol in memory: a desired state per node, every report, every
// byte of shipped output, and errors on demand.
class FakeMaster final : public MasterClient {
 public:
  StatusOr<DesiredState> Register(const NodeInfo& info) override {
    std::lock_guard lock(mu_);
    ++registrations_;
    if (!register_error_.ok()) return register_error_;
    registered_.insert(info.id);
    last_registration_ = info;
    return desired_[info.id];
  }

  StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report,
                              uint64_t wait_version, Duration wait) override {
    std::lock_guard lock(mu_);
    if (!registered_.count(node_id)) return Status::NotFound("no node " + node_id);
    if (!sync_error_.ok()) return sync_error_;
    reports_.push_back(report);
    if (next_answer_) {
      DesiredState answer = std::move(*next_answer_);
      next_answer_.reset();
      return answer;
    }
    return desired_[node_id];
  }

  // As the master's log store: idempotent by offset; bytes an agent skipped read as '#'.
  StatusOr<MetricUploadResult> ShipMetrics(const std::string& node_id, const TaskId& task,
                                           const std::vector<TaggedPoint>& points) override {
    std::lock_guard lock(mu_);
    if (!metric_error_.ok()) return metric_error_;
    auto& kept = metrics_[task];
    kept.insert(kept.end(), points.begin(), points.end());
    return MetricUploadResult{static_cast<int64_t>(points.size()), 0, ""};
  }
  std::vector<TaggedPoint> Metrics(const TaskId& task) {
    std::lock_guard lock(mu_);
    return metrics_[task];
  }
  void FailMetrics(Status s) {
    std::lock_guard lock(mu_);
    metric_error_ = std::move(s);
  }

  StatusOr<LogUploadResult> ShipLog(const std::string& node_id, const TaskId& task,
                                    const LogUpload& upload, int64_t* resume_at) override {
    std::lock_guard lock(mu_);
    uploads_.push_back(Upload{task, upload.offset, static_cast<int64_t>(upload.data.size()),
                              upload.skip, upload.end});
    if (!ship_error_.ok()) return ship_error_;
    std::string& log = logs_[task];
    int64_t size = static_cast<int64_t>(log.size());
    if (upload.offset > size) {
      if (!upload.skip) {
        if (resume_at) *resume_at = size;
        return Status::FailedPrecondition("offset mismatch");
      }
      log.append(static_cast<size_t>(upload.offset - size), '#');
    }
    int64_t known = static_cast<int64_t>(log.size()) - upload.offset;
    if (known < static_cast<int64_t>(upload.data.size())) {
      log.append(upload.data.substr(static_cast<size_t>(known)));
    }
    if (upload.end) ends_[task] = *upload.end;
    return LogUploadResult{static_cast<int64_t>(log.size()), limit_};
  }

  void CancelCalls() override {}  // nothing here ever waits

  // The master's side, set by the test.
  void Want(const std::string& node, DesiredState desired) { desired_[node] = std::move(desired); }
  // Answers the next Sync with `answer` instead of the node's desired state once (an answer
  // that crossed a newer one on the other connection).
  void AnswerNextSyncWith(DesiredState answer) { next_answer_ = std::move(answer); }
  NodeInfo last_registration() {
    std::lock_guard lock(mu_);
    return last_registration_;
  }
  void ForgetNodes() { registered_.clear(); }  // as a master that restarted without them
  void FailRegister(Status s) { register_error_ = std::move(s); }
  void FailSync(Status s) { sync_error_ = std::move(s); }
  void FailShipping(Status s) { ship_error_ = std::move(s); }
  void HoldLog(const TaskId& task, std::string bytes) { logs_[task] = std::move(bytes); }
  void SetLogLimit(int64_t limit) { limit_ = limit; }

  // One upload as the master saw it.
  struct Upload {
    TaskId task;
    int64_t offset;
    int64_t bytes;
    bool skip;
    std::optional<int64_t> end;
  };
  const std::vector<Upload>& uploads() const { return uploads_; }
  std::optional<int64_t> end(const TaskId& task) const {
    auto it = ends_.find(task);
    return it == ends_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }

  int registrations() const { return registrations_; }
  const std::vector<AgentReport>& reports() const { return reports_; }
  std::string log(const TaskId& task) const {
    auto it = logs_.find(task);
    return it == logs_.end() ? "" : it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, DesiredState> desired_;
  std::optional<DesiredState> next_answer_;
  std::set<std::string> registered_;
  NodeInfo last_registration_;
  Status register_error_ = Status::Ok();
  Status sync_error_ = Status::Ok();
  Status ship_error_ = Status::Ok();
  Status metric_error_ = Status::Ok();
  std::map<TaskId, std::vector<TaggedPoint>> metrics_;
  int registrations_ = 0;
  std::vector<AgentReport> reports_;
  std::map<TaskId, std::string> logs_;
  std::map<TaskId, int64_t> ends_;
  std::vector<Upload> uploads_;
  int64_t limit_ = 0;  // 0: the answers do not say
};

// GPUs whose load the test sets; a GPU without a load set is one of which nothing is known.
class FakeGpuSampler final : public GpuSampler {
 public:
  std::map<int, GpuSample> Sample(Timestamp at) override {
    std::map<int, GpuSample> out;
    for (int index = 0; index < 2; ++index) {
      out[index] = loads_.count(index) ? loads_[index] : GpuSample{};
      out[index].at = at;
    }
    return out;
  }
  void SetLoad(int index, int percent, int64_t memory) {
    loads_[index] = GpuSample{{}, percent, memory};
  }

 private:
  std::map<int, GpuSample> loads_;
};

// Every task it is asked about uses one core and 4 KiB.
class FakeTaskSampler final : public TaskSampler {
 public:
  std::map<TaskId, TaskSample> Sample(const std::map<TaskId, pid_t>& supervisors,
                                      Timestamp now) override {
    asked_ = supervisors;
    std::map<TaskId, TaskSample> out;
    for (const auto& [id, pid] : supervisors) out[id] = TaskSample{now, 1000, 4096};
    return out;
  }
  const std::map<TaskId, pid_t>& asked() const { return asked_; }

 private:
  std::map<TaskId, pid_t> asked_;
};

constexpr const char* kNode = "node-1";

TaskId Id(JobId job, int index = 0) { return TaskId{job, 1, "worker", index}; }

// The account running the test: the tasks of these tests run as it (root in CI, where the
// fixture's agents allow root tasks).
std::string Self() {
  auto self = AccountOfUid(::geteuid());
  return self.ok() ? self->name : std::to_string(::geteuid());
}

TaskLaunch Launch(const TaskId& id, Duration grace = seconds(30)) {
  TaskLaunch l;
  l.id = id;
  l.run_as.user = Self();
  l.command = {"/bin/sh", "-c", "echo hi"};
  l.env = {{"COHORT_JOB_ID", std::to_string(id.job)}};
  l.grace_period = grace;
  return l;
}

DesiredState Desired(uint64_t version, std::vector<TaskLaunch> tasks,
                     std::vector<TaskId> forget = {}) {
  return DesiredState{version, std::move(tasks), std::move(forget)};
}

class AgentTest : public ::testing::Test {
 protected:
  AgentTest()
      : dir_(fs::temp_directory_path() /
             ("cohort-agent-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        launcher_(clock_) {
    fs::remove_all(dir_);
    config_.allow_root_tasks = true;
  }
  ~AgentTest() override { fs::remove_all(dir_); }

  // A new agent on the same data directory, machine (launcher) and master: a restart.
  std::unique_ptr<Agent> NewAgent() {
    AgentConfig config = config_;
    config.data_dir = dir_.string();
    config.node.id = kNode;
    auto agent = std::make_unique<Agent>(
        config, GpuInventory{{}, {}, "declared"},
        AgentDeps{clock_, launcher_, master_, &gpu_sampler_, &task_sampler_});
    EXPECT_TRUE(agent->Start().ok());
    return agent;
  }

  std::string TaskDir(const TaskId& id) const { return (dir_ / "tasks" / id.ToString()).string(); }
  pid_t Supervisor(const TaskId& id) const { return launcher_.SupervisorOf(TaskDir(id)); }

  // The task as the agent last reported it; fails the test if it was not in the report.
  TaskReport Reported(const TaskId& id) const {
    EXPECT_FALSE(master_.reports().empty());
    if (master_.reports().empty()) return {};
    for (const auto& t : master_.reports().back().tasks) {
      if (t.id == id) return t;
    }
    ADD_FAILURE() << id.ToString() << " is not in the last report";
    return {};
  }
  bool InLastReport(const TaskId& id) const {
    for (const auto& t : master_.reports().back().tasks) {
      if (t.id == id) return true;
    }
    return false;
  }
  int SignalsSent(pid_t pid, bool group, int signal) const {
    int n = 0;
    for (const auto& s : launcher_.signals())
      n += s == FakeTaskLauncher::Signal{pid, group, signal};
    return n;
  }

  fs::path dir_;
  AgentConfig config_;  // what NewAgent starts from
  ManualClock clock_;
  FakeTaskLauncher launcher_;
  FakeMaster master_;
  FakeGpuSampler gpu_sampler_;
  FakeTaskSampler task_sampler_;
};

TEST_F(AgentTest, ShipsMetricLinesOfTheOutputOnceEvenAcrossAFailureAndARestart) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  launcher_.StartCommand(Supervisor(a), 4242);
  launcher_.WriteOutput(Supervisor(a),
                        "epoch 1\ncohort-metric step=1 time=100 loss=0.5 acc=0.25\n"
                        "cohort-metric step=2 time=101 loss=nan\ncohort-metric step=3 lo");
  ASSERT_TRUE(agent->Step().ok());
  auto got = master_.Metrics(a);
  ASSERT_EQ(got.size(), 2u) << "nan is not shipped; the unfinished line waits";
  EXPECT_EQ(got[0].tag, "loss");
  EXPECT_EQ(got[0].point.step, 1);
  EXPECT_DOUBLE_EQ(got[0].point.wall_time, 100);
  EXPECT_DOUBLE_EQ(got[0].point.value, 0.5);
  EXPECT_EQ(got[1].tag, "acc");

  // The master is away: the points wait, and go once it is back.
  master_.FailMetrics(Status::Unavailable("down"));
  launcher_.WriteOutput(Supervisor(a), "ss=0.25 time=102\n");
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.Metrics(a).size(), 2u);
  master_.FailMetrics(Status::Ok());
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(master_.Metrics(a).size(), 3u);
  EXPECT_EQ(master_.Metrics(a)[2].point.step, 3);

  // A new agent reads on from where this one was: nothing is shipped twice.
  agent.reset();
  agent = NewAgent();
  launcher_.WriteOutput(Supervisor(a), "cohort-metric step=4 time=103 loss=0.2\n");
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(master_.Metrics(a).size(), 4u);
  EXPECT_EQ(master_.Metrics(a)[3].point.step, 4);
}

TEST_F(AgentTest, SamplesEveryIntervalAndReportsEachSampleUntilTheMasterHasIt) {
  config_.sample_interval = seconds(5);
  gpu_sampler_.SetLoad(0, 40, 1 << 20);  // GPU 1: nothing known
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  const Timestamp t0 = clock_.Now();
  ASSERT_TRUE(agent->Step().ok());  // samples the GPUs, registers, starts the task

  ASSERT_TRUE(agent->Step().ok());  // no new sample yet: the GPUs' first one is sent
  const AgentReport& first = master_.reports().back();
  ASSERT_EQ(first.gpu_samples.size(), 1u) << "a GPU of which nothing is known sends nothing";
  EXPECT_EQ(first.gpu_samples[0].index, 0);
  ASSERT_EQ(first.gpu_samples[0].samples.size(), 1u);
  EXPECT_EQ(first.gpu_samples[0].samples[0].at, t0);
  EXPECT_EQ(first.gpu_samples[0].samples[0].utilization_percent, 40);
  EXPECT_TRUE(Reported(a).samples.empty()) << "the task started after the sample";

  ASSERT_TRUE(agent->Step().ok());
  EXPECT_TRUE(master_.reports().back().gpu_samples.empty()) << "the master has it already";

  clock_.Advance(seconds(5));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(task_sampler_.asked().at(a), Supervisor(a));
  ASSERT_EQ(Reported(a).samples.size(), 1u);
  EXPECT_EQ(Reported(a).samples[0].at, t0 + seconds(5));
  EXPECT_EQ(Reported(a).samples[0].milli_cpus, 1000);

  // While the master is away, samples wait; the newest kMaxSamplesPerReport are sent.
  master_.FailSync(Status::Unavailable("away"));
  const size_t waited = kMaxSamplesPerReport + 3;
  for (size_t i = 0; i < waited; ++i) {
    clock_.Advance(seconds(5));
    EXPECT_FALSE(agent->Step().ok());
  }
  master_.FailSync(Status::Ok());
  ASSERT_TRUE(agent->Step().ok());
  const auto& kept = Reported(a).samples;
  ASSERT_EQ(kept.size(), kMaxSamplesPerReport);
  EXPECT_EQ(kept.back().at, clock_.Now());
  EXPECT_EQ(kept.front().at, clock_.Now() - seconds(5) * (kMaxSamplesPerReport - 1));
  EXPECT_EQ(master_.reports().back().gpu_samples[0].samples.size(), kMaxSamplesPerReport);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_TRUE(Reported(a).samples.empty());

  // An ended task is no longer sampled.
  launcher_.Exit(Supervisor(a), 0);
  clock_.Advance(seconds(5));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(task_sampler_.asked().count(a), 0u);
}

// A burst of starts or exits is spread over rounds, so that a round (and the lock the sync thread
// needs) stays short; the master is told the new version only once all its tasks exist.
TEST_F(AgentTest, StartsAThousandTasksAFewARoundAndReportsTheirVersionOnceAllExist) {
  std::vector<TaskLaunch> launches;
  for (int i = 0; i < 100; ++i) launches.push_back(Launch(Id(7, i)));
  master_.Want(kNode, Desired(2, launches));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());  // registers, and starts the first 32
  EXPECT_EQ(launcher_.starts().size(), 32u);
  for (size_t started : {64u, 96u, 100u}) {
    const size_t before = launcher_.starts().size();
    ASSERT_TRUE(agent->Step().ok());
    EXPECT_EQ(master_.reports().back().applied_version, 0u)
        << "tasks not yet started would be judged lost";
    EXPECT_EQ(master_.reports().back().tasks.size(), before);
    EXPECT_EQ(launcher_.starts().size(), started);
  }
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.reports().back().applied_version, 2u);
  EXPECT_EQ(master_.reports().back().tasks.size(), 100u);
}

TEST_F(AgentTest, ATaskStoppedBeforeItsTurnToStartNeverStartsAndEndsKilled) {
  std::vector<TaskLaunch> launches;
  for (int i = 0; i < 40; ++i) launches.push_back(Launch(Id(7, i)));
  master_.Want(kNode, Desired(2, launches));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.starts().size(), 32u);
  master_.Want(kNode, Desired(3, {}));  // the job was killed
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(launcher_.starts().size(), 32u) << "the other 8 never start";
  EXPECT_EQ(master_.reports().back().applied_version, 3u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(Reported(Id(7, i)).state, TaskState::kKilled) << i;
}

TEST_F(AgentTest, ReadsTheExitsOfABurstAFewARoundAndReportsThemAll) {
  std::vector<TaskLaunch> launches;
  for (int i = 0; i < 96; ++i) launches.push_back(Launch(Id(7, i)));
  master_.Want(kNode, Desired(2, launches));
  auto agent = NewAgent();
  for (int round = 0; round < 4; ++round) ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.starts().size(), 96u);
  for (int i = 0; i < 96; ++i) launcher_.Exit(Supervisor(Id(7, i)), 0);
  auto ended = [&] {
    size_t n = 0;
    for (const auto& t : master_.reports().back().tasks) n += t.state == TaskState::kSucceeded;
    return n;
  };
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(ended(), 64u);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(ended(), 96u);
}

TEST_F(AgentTest, ReportsACheckpointLineAtOnceAndAChattyTaskAtMostOncePerInterval) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  launcher_.StartCommand(Supervisor(a), 4242);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).checkpoint_at, std::nullopt) << "no checkpoint yet";

  launcher_.WriteOutput(Supervisor(a), "saving\ncohort-checkpoint step=10\n");
  const Timestamp first = clock_.Now();
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).checkpoint_at, first) << "the time the line was read";

  // A line every 100 ms for 9.9 s: the report moves once more (5 s after the first), not 99
  // times.
  std::set<Timestamp> reported;
  for (int i = 1; i < 100; ++i) {
    clock_.Advance(milliseconds(100));
    launcher_.WriteOutput(Supervisor(a), "cohort-checkpoint\n");
    ASSERT_TRUE(agent->Step().ok());
    reported.insert(*Reported(a).checkpoint_at);
  }
  EXPECT_EQ(reported, (std::set<Timestamp>{first, first + seconds(5)}));
  // The newest goes once the interval is over, and a bad line changes nothing.
  launcher_.WriteOutput(Supervisor(a), "cohort-checkpoint step=oops\n");
  clock_.Advance(seconds(5));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).checkpoint_at, first + milliseconds(9900));
}

TEST_F(AgentTest, RankZeroReportsAFileWrittenIntoTheCheckpointDirectory) {
  config_.sample_interval = seconds(5);
  const fs::path checkpoints = dir_ / "storage" / "jobs" / "7" / "checkpoints";
  fs::create_directories(checkpoints);
  std::ofstream(checkpoints / "from-attempt-0.pt") << "known";
  // Older than the task: an earlier attempt's (the real clock's time would be this test's future).
  fs::last_write_time(checkpoints / "from-attempt-0.pt",
                      fs::file_time_type::clock::now() - std::chrono::hours(24 * 365 * 10));
  TaskLaunch rank0 = Launch(Id(7, 0));
  TaskLaunch rank1 = Launch(Id(7, 1));
  rank0.env["COHORT_TASK_RANK"] = "0";
  rank1.env["COHORT_TASK_RANK"] = "1";
  for (auto* l : {&rank0, &rank1}) l->env["COHORT_CHECKPOINT_DIR"] = checkpoints.string();
  master_.Want(kNode, Desired(1, {rank0, rank1}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());  // launches both
  clock_.Advance(seconds(5));
  ASSERT_TRUE(agent->Step().ok());  // the first look: what is there is known
  EXPECT_EQ(Reported(rank0.id).checkpoint_at, std::nullopt);

  std::ofstream(checkpoints / "step-100.pt") << "weights";
  clock_.Advance(seconds(5));
  const Timestamp seen = clock_.Now();
  ASSERT_TRUE(agent->Step().ok());  // new: it may still be written
  EXPECT_EQ(Reported(rank0.id).checkpoint_at, std::nullopt);
  clock_.Advance(seconds(1));
  ASSERT_TRUE(agent->Step().ok());  // not looked at again before the interval
  EXPECT_EQ(Reported(rank0.id).checkpoint_at, std::nullopt);
  clock_.Advance(seconds(4));
  ASSERT_TRUE(agent->Step().ok());  // unchanged for one look: a checkpoint
  // Its modification time is the real clock's, later than this test's: the look bounds it.
  EXPECT_EQ(Reported(rank0.id).checkpoint_at, seen);
  EXPECT_EQ(Reported(rank1.id).checkpoint_at, std::nullopt) << "rank 0 watches for the job";
}

TEST_F(AgentTest, LaunchesADesiredTaskOnceAndReportsItsPidOnceKnown) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a, seconds(12))}));
  auto agent = NewAgent();

  ASSERT_TRUE(agent->Step().ok());  // registers; the answer starts the task
  ASSERT_EQ(launcher_.starts(), std::vector<std::string>{TaskDir(a)});
  auto spec = ParseJson(ReadFileOrEmpty(TaskDir(a) + "/spec.json"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ((*spec)["command"], Json({"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ((*spec)["env"]["COHORT_JOB_ID"], "7");
  EXPECT_EQ((*spec)["grace_period_ms"], 12000);
  EXPECT_EQ(ReadFileOrEmpty(TaskDir(a) + "/supervisor.pid"), std::to_string(Supervisor(a)));

  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kRunning);
  EXPECT_EQ(Reported(a).pid, 0) << "the command has not started yet";
  EXPECT_EQ(master_.reports().back().applied_version, 1u);

  launcher_.StartCommand(Supervisor(a), 4242);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kRunning);
  EXPECT_EQ(Reported(a).pid, 4242);
  EXPECT_EQ(Reported(a).started_at, clock_.Now());
  EXPECT_EQ(launcher_.starts().size(), 1u) << "a task that runs is never started again";
}

TEST_F(AgentTest, ATaskThatCannotStartIsReportedFailed) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  launcher_.FailNextStart(Status::Internal("fork: out of memory"));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kFailed);
  EXPECT_EQ(Reported(a).exit_code, 126);
  EXPECT_EQ(Reported(a).start_failure, std::nullopt) << "a fork may work next time";
  EXPECT_EQ(launcher_.starts().size(), 1u);
}

// docs/reliability.md, "Tasks that cannot start": what the supervisor classified reaches the
// master with its kind, for it to end the job without spending the restart budget.
TEST_F(AgentTest, AStartFailureTheSupervisorNamesIsReportedWithItsKind) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  launcher_.FailToStart(Supervisor(a), StartFailure::kProgram,
                        "program \"trian\" not found on the task's PATH (/usr/bin)");
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kFailed);
  EXPECT_EQ(Reported(a).start_failure, StartFailure::kProgram);
  EXPECT_EQ(Reported(a).message, "program \"trian\" not found on the task's PATH (/usr/bin)");
}

// Defence in depth: the master refuses such a workdir, but an agent never runs a task outside
// its own directory through "..", whatever it is sent.
TEST_F(AgentTest, RefusesAWorkdirThatEscapesTheTaskDirectoryAndReportsTheTaskFailed) {
  TaskId a = Id(7);
  TaskLaunch escaping = Launch(a);
  escaping.workdir = "../../../..";
  TaskId b = Id(8);
  TaskLaunch inside = Launch(b);
  inside.workdir = "data/run";
  master_.Want(kNode, Desired(1, {escaping, inside}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(launcher_.starts(), std::vector<std::string>{TaskDir(b)}) << "a is never started";
  EXPECT_EQ(Reported(a).state, TaskState::kFailed);
  EXPECT_EQ(Reported(a).exit_code, 126);
  EXPECT_EQ(master_.log(a),
            "cohort: the agent refused to start the task: workdir \"../../../..\" must not "
            "contain a '..' component: a relative workdir stays within its directory; write an "
            "absolute path to run elsewhere\n");
  EXPECT_EQ(Reported(b).state, TaskState::kRunning);
}

// docs/security.md: only the task's account reaches its scratch directory; the files the agent
// acts on are its own and no one else's.
TEST_F(AgentTest, KeepsItsDataDirectoryAndEveryTaskFilePrivate) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  auto mode = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode(dir_.string()), 0711u);
  EXPECT_EQ(mode(dir_ / "tasks"), 0711u);
  EXPECT_EQ(mode(dir_ / "instance"), 0600u);
  EXPECT_EQ(mode(TaskDir(a)), 0711u);
  EXPECT_EQ(mode(TaskDir(a) + "/spec.json"), 0600u);
  EXPECT_EQ(mode(TaskDir(a) + "/supervisor.pid"), 0600u);
  // The spec names the account the supervisor makes the command.
  auto spec = ParseJson(ReadFileOrEmpty(TaskDir(a) + "/spec.json"));
  ASSERT_TRUE(spec.ok());
  auto self = AccountOfUid(::geteuid());
  ASSERT_TRUE(self.ok());
  EXPECT_EQ((*spec)["uid"], self->uid);
  EXPECT_EQ((*spec)["gid"], self->gid);
  EXPECT_EQ((*spec)["user"], self->name);
  EXPECT_EQ((*spec)["home"], self->home);
}

// An MPI job's tasks (framework/): their hostfile written and named, the task tools first on
// their PATH, and a worker's command run under the exec service.
TEST_F(AgentTest, WritesATasksFilesAndServesThroughItsToolsWhereItsLaunchSaysSo) {
  TaskId launcher{7, 1, "launcher", 0};
  TaskId worker{7, 1, "worker", 0};
  TaskLaunch l = Launch(launcher);
  l.files = {TaskFile{"mpi-hostfile",
                      "cohort-job7-worker-0 slots=2\n",
                      {"COHORT_MPI_HOSTFILE", "OMPI_MCA_orte_default_hostfile"}}};
  l.tools = true;
  TaskLaunch w = Launch(worker);
  w.command.clear();
  w.exec_service = true;
  master_.Want(kNode, Desired(1, {l, w}));
  config_.tools_dir = "/opt/cohort/tools";
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());

  auto spec = ParseJson(ReadFileOrEmpty(TaskDir(launcher) + "/spec.json"));
  ASSERT_TRUE(spec.ok());
  const std::string hostfile = TaskDir(launcher) + "/mpi-hostfile";
  EXPECT_EQ(ReadFileOrEmpty(hostfile), "cohort-job7-worker-0 slots=2\n");
  EXPECT_EQ((*spec)["env"]["COHORT_MPI_HOSTFILE"], hostfile);
  EXPECT_EQ((*spec)["env"]["OMPI_MCA_orte_default_hostfile"], hostfile);
  EXPECT_EQ((*spec)["path_prefix"], "/opt/cohort/tools");
  EXPECT_EQ((*spec)["command"], Json(l.command)) << "the launcher serves nothing";

  auto served = ParseJson(ReadFileOrEmpty(TaskDir(worker) + "/spec.json"));
  ASSERT_TRUE(served.ok());
  EXPECT_EQ((*served)["command"], (Json{"/opt/cohort/tools/cohort-exec", "serve"}));

  // An agent without the tools refuses such a task, saying why, rather than run it without.
  TaskId late{8, 1, "launcher", 0};
  TaskLaunch m = Launch(late);
  m.tools = true;
  master_.Want(kNode, Desired(2, {l, w, m}));
  agent.reset();
  config_.tools_dir.clear();
  auto bare = NewAgent();
  ASSERT_TRUE(bare->Step().ok());
  EXPECT_THAT(ReadFileOrEmpty(TaskDir(late) + "/output.log"),
              ::testing::HasSubstr("this agent has no task tools"));
}

// A shell session's task runs the agent's terminal server: from tools/ on the node, and mounted
// read-only at the same path into the task's image.
TEST_F(AgentTest, ASessionsTaskRunsTheTerminalServerOnTheNodeOrInItsImage) {
  const std::string tools = (fs::path(dir_) / "tools").string();
  fs::create_directories(tools);
  std::ofstream(tools + "/cohort-terminal") << "#!/bin/sh\n";
  fs::permissions(tools + "/cohort-terminal", fs::perms::owner_all);
  TaskId bare{10, 1, "shell", 0};
  TaskLaunch b = Launch(bare);
  b.command.clear();
  b.terminal = true;
  TaskId boxed{11, 1, "shell", 0};
  TaskLaunch i = Launch(boxed);
  i.command.clear();
  i.terminal = true;
  i.image = "127.0.0.1:5000/team/cuda:12";
  master_.Want(kNode, Desired(1, {b, i}));
  config_.tools_dir = tools;
  config_.containers =
      ContainerRuntime{"/usr/bin/podman", "runc", 20000, 4096, "/dev/nvidia", "", 0};
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  auto spec = ParseJson(ReadFileOrEmpty(TaskDir(bare) + "/spec.json"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ((*spec)["command"], (Json{tools + "/cohort-terminal", "serve"}));
  auto in_image = ParseJson(ReadFileOrEmpty(TaskDir(boxed) + "/spec.json"));
  ASSERT_TRUE(in_image.ok());
  EXPECT_EQ((*in_image)["command"], (Json{tools + "/cohort-terminal", "serve"}));
  auto c = ContainerTaskFromJson((*in_image)["container"]);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->mounts, ::testing::Contains(ContainerMount{tools + "/cohort-terminal", true}));

  // An agent without it refuses sessions, saying what is missing.
  TaskId late{12, 1, "shell", 0};
  TaskLaunch l = Launch(late);
  l.command.clear();
  l.terminal = true;
  master_.Want(kNode, Desired(2, {b, i, l}));
  agent.reset();
  config_.tools_dir.clear();
  auto without = NewAgent();
  ASSERT_TRUE(without->Step().ok());
  EXPECT_THAT(ReadFileOrEmpty(TaskDir(late) + "/output.log"),
              ::testing::HasSubstr("this agent has no cohort-terminal in tools/"));
}

TEST_F(AgentTest, ATaskInAnImageGetsItsContainerAndANodeWithoutARuntimeRefusesIt) {
  TaskId id{9, 1, "worker", 0};
  TaskLaunch l = Launch(id);
  l.image = "127.0.0.1:5000/team/pytorch:2.1";
  l.image_insecure = true;
  l.gpus = {1};
  l.env["CUDA_VISIBLE_DEVICES"] = "1";
  l.memory_limit_bytes = int64_t{2} << 30;
  l.workdir = "/shared/project";
  master_.Want(kNode, Desired(1, {l}));
  config_.node.labels = {{"rack", "r1"}, {"cohort.runtime", "forged"}};
  config_.containers =
      ContainerRuntime{"/usr/bin/podman", "runc", 20000, 4096, "/dev/nvidia", "", 0};
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.last_registration().labels,
            (std::map<std::string, std::string>{{"cohort.runtime", "podman"}, {"rack", "r1"}}))
      << "the runtime's label is the agent's to give";

  auto spec = ParseJson(ReadFileOrEmpty(TaskDir(id) + "/spec.json"));
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(spec->contains("container"));
  auto c = ContainerTaskFromJson((*spec)["container"]);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->image, l.image);
  EXPECT_TRUE(c->insecure);
  EXPECT_THAT(c->name, ::testing::MatchesRegex("cohort-[0-9a-f]{12}-9\\.1\\.worker\\.0"))
      << "named by the agent's instance and the task";
  EXPECT_EQ(c->oci_runtime, "runc");
  EXPECT_EQ(c->memory_bytes, int64_t{2} << 30);
  EXPECT_FALSE(spec->contains("memory")) << "podman's --memory, not the agent's cgroup";
  ASSERT_GE(c->mounts.size(), 2u);
  EXPECT_EQ(c->mounts.front(), (ContainerMount{TaskDir(id), false}));
  EXPECT_EQ(c->mounts.back(), (ContainerMount{"/shared/project", false}));
  // No GPU is known to this agent by UUID: the index stands.
  EXPECT_EQ((*spec)["env"]["CUDA_VISIBLE_DEVICES"], "1");

  // Its supervisor killed before it could remove the container: the agent removes it.
  EXPECT_TRUE(launcher_.cleanups().empty());
  launcher_.SignalSupervisor(Supervisor(id), SIGKILL);
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.cleanups().size(), 1u);
  EXPECT_EQ(launcher_.cleanups()[0], PodmanRemoveCommand(*c));

  // An agent that runs no containers refuses the task, saying why.
  TaskId later{10, 1, "worker", 0};
  TaskLaunch m = Launch(later);
  m.image = l.image;
  master_.Want(kNode, Desired(2, {l, m}));
  agent.reset();
  config_.containers.reset();
  auto bare = NewAgent();
  ASSERT_TRUE(bare->Step().ok());
  EXPECT_EQ(master_.last_registration().labels,
            (std::map<std::string, std::string>{{"rack", "r1"}}));
  EXPECT_THAT(
      ReadFileOrEmpty(TaskDir(later) + "/output.log"),
      ::testing::HasSubstr("this node runs no containers (cohortd agent --runtime podman)"));
}

TEST(ContainerRuntime, InsideAContainerGpusAreNamedByUuid) {
  std::vector<Gpu> gpus = {{0, "GPU-aaa", "A100", 0, "", -1},
                           {1, "GPU-bbb", "A100", 0, "", -1},
                           {2, "", "A100", 0, "", -1}};
  EXPECT_EQ(ContainerVisibleDevices({1, 0}, gpus), "GPU-bbb,GPU-aaa");
  EXPECT_EQ(ContainerVisibleDevices({2}, gpus), "2") << "an unknown UUID: the index";
}

TEST_F(AgentTest, RefusesADataDirectoryOthersMayWriteIn) {
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::all);
  AgentConfig config = config_;
  config.data_dir = dir_.string();
  config.node.id = kNode;
  Agent agent(config, GpuInventory{{}, {}, "declared"}, AgentDeps{clock_, launcher_, master_});
  Status s = agent.Start();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            fmt::format("data directory {} must be a directory of this agent's (uid {}) that no "
                        "one else may write in; it is owned by uid {} with mode 0777",
                        dir_.string(), ::geteuid(), ::geteuid()));
}

// What the agent of a root agent refuses fails the task alone, with the reason in its output
// and in its report (which the master puts in the job's events).
TEST_F(AgentTest, ATaskThatCannotRunAsItsUserFailsWithTheReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "an agent that is not root runs every task as itself";
  config_.allow_root_tasks = false;
  std::string missing = "cohort-t-none-" + std::to_string(::getpid());
  TaskId a = Id(7), b = Id(8), c = Id(9);
  TaskLaunch of_missing = Launch(a);
  of_missing.run_as.user = missing;
  TaskLaunch of_root = Launch(b);
  of_root.run_as.user = "root";
  TaskLaunch of_nobody = Launch(c);
  of_nobody.run_as.user = "nobody";
  master_.Want(kNode, Desired(1, {of_missing, of_root, of_nobody}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(launcher_.starts(), std::vector<std::string>{TaskDir(c)}) << "only c starts";

  const std::string no_account = "no Unix account \"" + missing +
                                 "\" on node-1: create it, or have an admin map the Cohort "
                                 "user to a uid";
  EXPECT_EQ(Reported(a).state, TaskState::kFailed);
  EXPECT_EQ(Reported(a).exit_code, 126);
  EXPECT_EQ(Reported(a).message, no_account);
  EXPECT_EQ(Reported(a).start_failure, StartFailure::kAccount) << "the node's: placed elsewhere";
  EXPECT_EQ(master_.log(a), "cohort: the agent refused to start the task: " + no_account + "\n");
  EXPECT_EQ(Reported(b).state, TaskState::kFailed);
  EXPECT_EQ(Reported(b).start_failure, std::nullopt) << "a refusal, not a missing account";
  EXPECT_EQ(Reported(b).message,
            "the task would run as root (uid 0, user \"root\") on node-1, which this agent "
            "refuses: start the agent with --allow-root-tasks to run tasks of root");
  EXPECT_EQ(Reported(c).state, TaskState::kRunning);
  EXPECT_EQ(Reported(c).message, "");
}

TEST_F(AgentTest, StopsAnUnwantedTaskWithSigtermThenKillsEverythingAfterGraceAndSlack) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a, seconds(30))}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  pid_t sup = Supervisor(a);
  launcher_.StartCommand(sup, 4242);
  launcher_.IgnoreSigterm(sup);
  ASSERT_TRUE(agent->Step().ok());

  master_.Want(kNode, Desired(2, {}));  // cohort kill
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(sup, /*group=*/false, SIGTERM), 1);
  EXPECT_EQ(Reported(a).state, TaskState::kRunning) << "still stopping";

  // The supervisor has the grace period to stop the task, and then some.
  clock_.Advance(seconds(40));  // grace 30 s + slack 10 s: not yet overdue
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(sup, /*group=*/true, SIGKILL), 0);
  EXPECT_EQ(SignalsSent(sup, /*group=*/false, SIGTERM), 1) << "SIGTERM is sent once";

  clock_.Advance(milliseconds(1));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(sup, /*group=*/true, SIGKILL), 1);
  EXPECT_EQ(SignalsSent(4242, /*group=*/true, SIGKILL), 1);

  // The supervisor died without writing exit.json: the task was stopped, so it is KILLED.
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kKilled);
  EXPECT_EQ(Reported(a).finished_at, clock_.Now());
}

TEST_F(AgentTest, ASupervisorThatObeysSigtermEndsTheTaskAsKilled) {
  TaskId a = Id(7);
  TaskId b = Id(8);
  master_.Want(kNode, Desired(1, {Launch(a), Launch(b)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());

  master_.Want(kNode, Desired(2, {Launch(b)}));
  ASSERT_TRUE(agent->Step().ok());  // sends SIGTERM; the fake supervisor writes exit.json
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(Supervisor(a), false, SIGTERM), 1);
  EXPECT_EQ(SignalsSent(Supervisor(b), false, SIGTERM), 0) << "b is still wanted";
  EXPECT_EQ(Reported(a).state, TaskState::kKilled);
  EXPECT_EQ(Reported(a).signal, SIGTERM);
  EXPECT_EQ(Reported(b).state, TaskState::kRunning);
}

TEST_F(AgentTest, AReStartedAgentAdoptsItsTasksWithoutStartingThemAgain) {
  TaskId running = Id(7);
  TaskId ended = Id(8);
  TaskId vanished = Id(9);
  master_.Want(kNode, Desired(1, {Launch(running), Launch(ended), Launch(vanished)}));
  {
    auto first = NewAgent();
    ASSERT_TRUE(first->Step().ok());
    launcher_.StartCommand(Supervisor(running), 4242);
    ASSERT_EQ(launcher_.starts().size(), 3u);
  }  // the agent stops; its supervisors do not
  launcher_.WriteOutput(Supervisor(ended), "done\n");
  launcher_.Exit(Supervisor(ended), 3);   // ends while no agent runs
  launcher_.Crash(Supervisor(vanished));  // dies without a word

  auto second = NewAgent();          // same data directory, same machine
  ASSERT_TRUE(second->Step().ok());  // registers
  ASSERT_TRUE(second->Step().ok());  // ships the ended task's output, reports
  EXPECT_EQ(master_.registrations(), 2);
  EXPECT_EQ(launcher_.starts().size(), 3u) << "adopted, not started again";
  EXPECT_EQ(Reported(running).state, TaskState::kRunning);
  EXPECT_EQ(Reported(running).pid, 4242);
  EXPECT_EQ(Reported(ended).state, TaskState::kFailed);
  EXPECT_EQ(Reported(ended).exit_code, 3);
  EXPECT_EQ(master_.log(ended), "done\n");
  EXPECT_EQ(Reported(vanished).state, TaskState::kFailed);

  // An adopted supervisor is watched like any other.
  launcher_.Exit(Supervisor(running), 0);
  ASSERT_TRUE(second->Step().ok());
  EXPECT_EQ(Reported(running).state, TaskState::kSucceeded);
  EXPECT_EQ(Reported(running).exit_code, 0);
}

TEST_F(AgentTest, ReportsAnEndedTaskOnlyOnceItsWholeOutputIsShipped) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  pid_t sup = Supervisor(a);
  launcher_.WriteOutput(sup, "hello\n");
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.log(a), "hello\n");

  master_.FailShipping(Status::Unavailable("log store is slow"));
  launcher_.WriteOutput(sup, "last words\n");
  launcher_.Exit(sup, 0);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kRunning) << "its output has not all arrived";

  master_.FailShipping(Status::Ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.log(a), "hello\nlast words\n");
  EXPECT_EQ(Reported(a).state, TaskState::kSucceeded);
  EXPECT_EQ(Reported(a).exit_code, 0);
}

TEST_F(AgentTest, ShipsOutputFromWhereTheMasterSaysItStands) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  master_.HoldLog(a, "hel");  // from an earlier agent, say
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  launcher_.WriteOutput(Supervisor(a), "hello\n");
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.log(a), "hello\n");
}

// A task that floods its output gets a bounded share of each round, so no agent drowns the
// master; the output still arrives whole, round after round.
TEST_F(AgentTest, ShipsABoundedAmountPerTaskAndRound) {
  config_.ship_per_round = 1000;
  TaskId a = Id(7);
  TaskId b = Id(8);
  master_.Want(kNode, Desired(1, {Launch(a), Launch(b)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  std::string output(4500, 'x');
  launcher_.WriteOutput(Supervisor(a), output);
  launcher_.WriteOutput(Supervisor(b), "small\n");
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.log(a).size(), 1000u);
  EXPECT_EQ(master_.log(b), "small\n") << "one busy task does not hold up the others";
  for (int round = 0; round < 4; ++round) ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.log(a), output);
  for (const auto& u : master_.uploads()) EXPECT_LE(u.bytes, 1000);
}

// The master keeps only its log limit of each task: a bigger backlog is skipped, not shipped,
// and the master is told that the bytes in between are gone.
TEST_F(AgentTest, SkipsABacklogLargerThanTheMastersLimit) {
  config_.ship_per_round = 100;
  master_.SetLogLimit(300);
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  launcher_.WriteOutput(Supervisor(a), "first\n");
  ASSERT_TRUE(agent->Step().ok());  // learns the master's limit from its answer
  std::string flood;
  for (int i = 0; i < 1000; ++i) flood += std::to_string(i % 10);
  launcher_.WriteOutput(Supervisor(a), flood);
  for (int round = 0; round < 5; ++round) ASSERT_TRUE(agent->Step().ok());
  std::string log = master_.log(a);
  ASSERT_EQ(log.size(), 6 + flood.size());
  EXPECT_EQ(log.substr(0, 6), "first\n");
  EXPECT_EQ(log.substr(6, flood.size() - 300), std::string(flood.size() - 300, '#'));
  EXPECT_EQ(log.substr(log.size() - 300), flood.substr(flood.size() - 300));
  int64_t shipped = 0;
  for (const auto& u : master_.uploads()) shipped += u.bytes;
  EXPECT_EQ(shipped, 6 + 300) << "nothing the master would drop again was shipped";
}

// Output the supervisor already trimmed off the node's disk cannot be shipped: the agent skips
// to what is left.
TEST_F(AgentTest, SkipsOutputTrimmedOffTheDisk) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  constexpr int64_t kMi = 1 << 20;
  launcher_.WriteOutput(Supervisor(a), std::string(3 * kMi, 'a') + "tail\n");
  int fd = ::open((TaskDir(a) + "/output.log").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  int64_t trimmed = 0;
  Status trim = TrimOutput(fd, 1, &trimmed);
  ::close(fd);
  if (trim.code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << trim.message();
  ASSERT_TRUE(trim.ok()) << trim.ToString();
  ASSERT_EQ(trimmed, 3 * kMi);
  ASSERT_TRUE(agent->Step().ok());
  std::string log = master_.log(a);
  ASSERT_EQ(log.size(), static_cast<size_t>(3 * kMi + 5));
  EXPECT_EQ(log.find_first_not_of('#'), static_cast<size_t>(3 * kMi));
  EXPECT_EQ(log.substr(3 * kMi), "tail\n");
}

// With much output left when a task ends, the end is reported at once with the output's final
// size, and the rest follows, even after the master has forgotten the task; the directory goes
// once everything is shipped. A restarted agent goes on shipping without reporting it again.
TEST_F(AgentTest, ReportsTheEndAtOnceAndShipsTheRestAfterwards) {
  config_.ship_per_round = 1000;
  config_.ship_before_end = 1500;
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  std::string output(5000, 'x');
  launcher_.WriteOutput(Supervisor(a), output);
  launcher_.Exit(Supervisor(a), 0);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kSucceeded);
  EXPECT_EQ(master_.end(a), 5000);
  EXPECT_EQ(master_.log(a).size(), 1000u);

  master_.Want(kNode, Desired(2, {}, {a}));  // the master recorded the end
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_FALSE(InLastReport(a));
  EXPECT_TRUE(fs::exists(TaskDir(a))) << "its output is not all shipped yet";
  master_.Want(kNode, Desired(2, {}));
  agent.reset();
  agent = NewAgent();  // a restart in the middle
  for (int round = 0; round < 4; ++round) ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.log(a), output);
  EXPECT_FALSE(InLastReport(a));
  EXPECT_FALSE(fs::exists(TaskDir(a)));
}

// A little output left: the end waits for it, so that a finished job's log is whole at once.
TEST_F(AgentTest, ShipsASmallRestBeforeReportingTheEnd) {
  config_.ship_per_round = 1000;
  config_.ship_before_end = 3000;
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  std::string output(2500, 'x');
  launcher_.WriteOutput(Supervisor(a), output);
  launcher_.Exit(Supervisor(a), 0);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kSucceeded);
  EXPECT_EQ(master_.log(a), output);
}

TEST_F(AgentTest, ForgetDeletesAnEndedTaskAndItsDirectory) {
  TaskId a = Id(7);
  TaskId b = Id(8);
  master_.Want(kNode, Desired(1, {Launch(a), Launch(b)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  launcher_.Exit(Supervisor(a), 0);
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(Reported(a).state, TaskState::kSucceeded);

  // The master recorded a's end; b is running and cannot be forgotten.
  master_.Want(kNode, Desired(2, {Launch(b)}, {a, b}));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_FALSE(fs::exists(TaskDir(a)));
  EXPECT_TRUE(fs::exists(TaskDir(b)));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_FALSE(InLastReport(a));
  EXPECT_EQ(Reported(b).state, TaskState::kRunning);
  EXPECT_EQ(launcher_.starts().size(), 2u);
}

// A supervisor killed before it took its scratch directory back leaves it to the account: the
// agent empties it as the account, so that no link the account swaps in sends root elsewhere.
TEST_F(AgentTest, DeletesAScratchDirectoryLeftToItsAccountAsThatAccount) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another account needs root";
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  fs::path work = fs::path(TaskDir(a)) / "work";
  fs::create_directories(work / "sub");
  fs::path outside = dir_ / "precious";
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, work / "sub" / "link");
  for (const fs::path& p : {work, work / "sub", work / "sub" / "link"}) {
    ASSERT_EQ(::lchown(p.c_str(), 65534, 65534), 0);
  }
  // And one in which the account cannot delete everything (root's own, there): root does not
  // finish the job, so the directory stays on disk.
  TaskId b = Id(8);
  master_.Want(kNode, Desired(2, {Launch(b)}));
  ASSERT_TRUE(agent->Step().ok());
  fs::path work_b = fs::path(TaskDir(b)) / "work";
  fs::create_directories(work_b / "roots");
  std::ofstream(work_b / "roots" / "f") << "x";
  ASSERT_EQ(::chown(work_b.c_str(), 65534, 65534), 0);

  launcher_.Crash(Supervisor(a));
  launcher_.Crash(Supervisor(b));
  ASSERT_TRUE(agent->Step().ok());
  master_.Want(kNode, Desired(3, {}, {a, b}));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_FALSE(fs::exists(TaskDir(a)));
  EXPECT_EQ(ReadFileOrEmpty(outside.string()), "keep");
  EXPECT_TRUE(fs::exists(work_b / "roots" / "f")) << "deleted as root";
}

TEST_F(AgentTest, AnOlderDesiredStateDoesNotUndoANewerOne) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(5, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.starts().size(), 1u);

  // An answer from before `a` was placed arrives late.
  master_.AnswerNextSyncWith(Desired(4, {}));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_TRUE(launcher_.signals().empty()) << "a must not be stopped";
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.reports().back().applied_version, 5u);
  EXPECT_EQ(Reported(a).state, TaskState::kRunning);

  // A newer one still applies.
  master_.Want(kNode, Desired(6, {}));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(Supervisor(a), false, SIGTERM), 1);
}

// Found by the chaos test (scripts/chaos.py): a task's end changes no version, so an answer of
// the version the agent already applied may be older than one that had it forget the task.
TEST_F(AgentTest, AnAnswerOfTheSameVersionFromBeforeATaskEndedDoesNotStartItAgain) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(5, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.starts().size(), 1u);
  launcher_.Exit(Supervisor(a), 0);
  // The master records a's end and has the agent forget it; the version stays 5.
  master_.Want(kNode, Desired(5, {}, {a}));
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_FALSE(fs::exists(TaskDir(a)));

  // The answer to the long poll, computed before a ended, arrives late on the other connection.
  master_.AnswerNextSyncWith(Desired(5, {Launch(a)}));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(launcher_.starts().size(), 1u) << "an ended task must never start again";
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_FALSE(InLastReport(a));

  // A newer version still starts what it adds.
  TaskId b = Id(8);
  master_.Want(kNode, Desired(6, {Launch(b)}));
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(launcher_.starts(), (std::vector<std::string>{TaskDir(a), TaskDir(b)}));
}

TEST_F(AgentTest, RegistersAgainWhenTheMasterNoLongerKnowsTheNode) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.registrations(), 1);
  EXPECT_TRUE(agent->registered());

  master_.ForgetNodes();  // a new master
  EXPECT_EQ(agent->Step().code(), StatusCode::kNotFound);
  EXPECT_FALSE(agent->registered());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(master_.registrations(), 2);
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(a).state, TaskState::kRunning);
  EXPECT_EQ(launcher_.starts().size(), 1u) << "the task kept running across the master's restart";
}

TEST_F(AgentTest, KeepsTasksRunningWhileTheMasterIsUnreachableOrRefuses) {
  TaskId a = Id(7);
  master_.Want(kNode, Desired(1, {Launch(a)}));
  master_.FailRegister(Status::InvalidArgument("ports overlap another node"));
  auto agent = NewAgent();
  EXPECT_EQ(agent->Step().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(agent->registered());
  EXPECT_TRUE(launcher_.starts().empty());

  master_.FailRegister(Status::Ok());
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.starts().size(), 1u);
  master_.FailSync(Status::Unavailable("connection refused"));
  EXPECT_EQ(agent->Step().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(agent->registered()) << "an unreachable master is not a forgetful one";
  EXPECT_TRUE(launcher_.signals().empty());
}

// A fenced job's task outlives the agent's last answer from the master by at most the node
// timeout (then its grace period): by then the master has declared the node lost and started
// the job's next attempt elsewhere. Other tasks keep running, as ever.
TEST_F(AgentTest, StopsAFencedTaskOnceCutOffFromTheMasterForLongerThanTheNodeTimeout) {
  TaskId fenced = Id(7);
  TaskId other = Id(8);
  TaskLaunch f = Launch(fenced);
  f.fence = true;
  DesiredState desired = Desired(1, {f, Launch(other)});
  desired.node_timeout = seconds(30);
  master_.Want(kNode, desired);
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_EQ(launcher_.starts().size(), 2u);
  launcher_.WriteOutput(Supervisor(fenced), "step 1\n");  // the supervisor made output.log

  // Answers within the node timeout keep it running, however long it runs.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(seconds(25));
    ASSERT_TRUE(agent->Step().ok());
  }
  master_.FailSync(Status::Unavailable("connection refused"));
  clock_.Advance(seconds(30));
  EXPECT_FALSE(agent->Step().ok());
  EXPECT_TRUE(launcher_.signals().empty()) << "30 s is not longer than the node timeout";

  clock_.Advance(seconds(1));
  EXPECT_FALSE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(Supervisor(fenced), false, SIGTERM), 1);
  EXPECT_EQ(SignalsSent(Supervisor(other), false, SIGTERM), 0) << "not fenced: keeps running";
  EXPECT_FALSE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(Supervisor(fenced), false, SIGTERM), 1) << "once";
  EXPECT_THAT(ReadFileOrEmpty(TaskDir(fenced) + "/output.log"),
              ::testing::HasSubstr("fenced: cut off from the master for 31s, longer than the "
                                   "node timeout of 30s"));

  // Back: the end is reported with its reason, and the other task still runs.
  master_.FailSync(Status::Ok());
  ASSERT_TRUE(agent->Step().ok());
  ASSERT_TRUE(agent->Step().ok());
  EXPECT_EQ(Reported(fenced).state, TaskState::kKilled);
  EXPECT_THAT(Reported(fenced).message, ::testing::HasSubstr("fenced: cut off from the master"));
  EXPECT_EQ(Reported(other).state, TaskState::kRunning);
}

// A restarted agent still knows which of its tasks are fenced, and counts from its own start.
TEST_F(AgentTest, AReStartedAgentStillFencesTheTasksItAdopts) {
  TaskId fenced = Id(7);
  TaskLaunch f = Launch(fenced);
  f.fence = true;
  DesiredState desired = Desired(1, {f});
  desired.node_timeout = seconds(10);
  master_.Want(kNode, desired);
  auto agent = NewAgent();
  ASSERT_TRUE(agent->Step().ok());
  agent.reset();

  clock_.Advance(seconds(60));
  master_.FailRegister(Status::Unavailable("connection refused"));
  agent = NewAgent();
  EXPECT_FALSE(agent->Step().ok());
  EXPECT_TRUE(launcher_.signals().empty()) << "the agent has only just started";
  clock_.Advance(seconds(11));
  EXPECT_FALSE(agent->Step().ok());
  EXPECT_EQ(SignalsSent(Supervisor(fenced), false, SIGTERM), 1);
}

// Where the node enforces memory requests, the supervisor learns the limit and where to put it.
TEST_F(AgentTest, PassesTheMemoryRequestToTheSupervisorOnlyWhereTheNodeEnforcesIt) {
  TaskId limited = Id(7);
  TaskLaunch l = Launch(limited);
  l.memory_limit_bytes = int64_t{64} << 20;
  master_.Want(kNode, Desired(1, {l}));
  MemoryCgroups cgroups(CgroupVersion::kV1, "/sys/fs/cgroup/memory/cohort");
  AgentConfig config = config_;
  config.data_dir = dir_.string();
  config.node.id = kNode;
  Agent agent(config, GpuInventory{{}, {}, "declared"},
              AgentDeps{clock_, launcher_, master_, nullptr, nullptr, &cgroups});
  ASSERT_TRUE(agent.Start().ok());
  ASSERT_TRUE(agent.Step().ok());
  auto spec = ParseJson(ReadFileOrEmpty(TaskDir(limited) + "/spec.json"));
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(spec->contains("memory"));
  EXPECT_EQ((*spec)["memory"]["limit_bytes"], int64_t{64} << 20);
  EXPECT_EQ((*spec)["memory"]["cgroup_version"], 1);
  EXPECT_EQ((*spec)["memory"]["cgroup_parent"], "/sys/fs/cgroup/memory/cohort");

  // Unenforced (NewAgent has no cgroups): the task runs without a limit.
  TaskId unlimited = Id(8);
  TaskLaunch u = Launch(unlimited);
  u.memory_limit_bytes = int64_t{64} << 20;
  master_.Want(kNode, Desired(2, {l, u}));
  auto other = NewAgent();
  ASSERT_TRUE(other->Step().ok());
  auto plain = ParseJson(ReadFileOrEmpty(TaskDir(unlimited) + "/spec.json"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->contains("memory"));
}

}  // namespace
}  // namespace cohort::agent
