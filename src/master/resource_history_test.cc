// The master's short memory of GPU and task samples: bounded, taken once, forgotten with the
// node or task; and through Reconciler::Sync, only for GPUs and tasks the master knows there.
#include "master/resource_history.h"

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using std::chrono::seconds;

const Timestamp kT0 = FromMicros(1'700'000'000'000'000);
const TaskId kTask{1, 1, "worker", 0};

GpuSample Gpu(int s, int percent) { return GpuSample{kT0 + seconds(s), percent, 1024}; }
TaskSample Cpu(int s, int64_t milli) { return TaskSample{kT0 + seconds(s), milli, 4096}; }

TEST(ResourceHistory, KeepsTheNewestSamplesOnceEach) {
  ResourceHistory history;
  history.Record("a", {GpuSamples{0, {Gpu(0, 10), Gpu(5, 20)}}}, {{kTask, {Cpu(0, 100)}}});
  // Sent again (the agent had no answer) with one more: the repeats are not taken twice.
  history.Record("a", {GpuSamples{0, {Gpu(5, 20), Gpu(10, 30)}}}, {{kTask, {Cpu(0, 100)}}});
  auto gpu = history.Gpu("a", 0);
  ASSERT_EQ(gpu.size(), 3u);
  EXPECT_EQ(gpu.back().utilization_percent, 30);
  EXPECT_EQ(history.LatestGpu("a", 0)->at, kT0 + seconds(10));
  EXPECT_EQ(history.Task("a", kTask).size(), 1u);
  EXPECT_TRUE(history.Gpu("a", 1).empty());
  EXPECT_FALSE(history.LatestGpu("b", 0).has_value());

  for (int s = 15; s < 15 + 5 * 100; s += 5) history.Record("a", {GpuSamples{0, {Gpu(s, 50)}}}, {});
  gpu = history.Gpu("a", 0);
  ASSERT_EQ(gpu.size(), ResourceHistory::kSamplesKept);
  EXPECT_EQ(gpu.back().at, kT0 + seconds(15 + 5 * 99));
}

TEST(ResourceHistory, ForgetsTasksNoLongerReportedAndNodesThatGo) {
  ResourceHistory history;
  const TaskId other{2, 1, "worker", 0};
  history.Record("a", {GpuSamples{0, {Gpu(0, 10)}}}, {{kTask, {Cpu(0, 1)}}, {other, {Cpu(0, 1)}}});
  history.Record("b", {}, {{kTask, {Cpu(0, 1)}}});
  // Still reported without a new sample: kept. No longer reported: gone.
  history.Record("a", {}, {{kTask, {}}});
  EXPECT_EQ(history.Task("a", kTask).size(), 1u);
  EXPECT_TRUE(history.Task("a", other).empty());
  EXPECT_EQ(history.Task("b", kTask).size(), 1u) << "another node's tasks are its own";
  history.ForgetNode("a");
  EXPECT_TRUE(history.Gpu("a", 0).empty());
  EXPECT_TRUE(history.Task("a", kTask).empty());
  EXPECT_EQ(history.Task("b", kTask).size(), 1u);
}

class ResourceSamplesTest : public MasterTest {};

TEST_P(ResourceSamplesTest, SyncKeepsSamplesOfKnownGpusAndTasksUntilTheNodeIsLost) {
  AddNode("a", 2);
  JobId id = Submit(1, 1);
  RunPosted();
  auto desired = master_->nodes().DesiredFor("a");
  ASSERT_TRUE(desired.ok());
  ASSERT_EQ(desired->tasks.size(), 1u);
  const TaskId task = desired->tasks[0].id;
  AgentReport report;
  report.applied_version = desired->version;
  TaskReport running{task, TaskState::kRunning, {}, {}, 10, clock_.Now(), {}};
  running.samples = {Cpu(0, 950)};
  TaskReport stranger{TaskId{id + 100, 1, "worker", 0}, TaskState::kRunning, {}, {}, 11, {}, {}};
  stranger.samples = {Cpu(0, 5)};
  report.tasks = {running, stranger};
  report.gpu_samples = {GpuSamples{1, {Gpu(0, 77)}}, GpuSamples{7, {Gpu(0, 1)}}};
  ASSERT_TRUE(master_->nodes().Sync("a", report).ok());

  const ResourceHistory& history = master_->nodes().resources();
  ASSERT_EQ(history.Task("a", task).size(), 1u);
  EXPECT_EQ(history.Task("a", task)[0].milli_cpus, 950);
  EXPECT_TRUE(history.Task("a", stranger.id).empty()) << "not a task of the master's";
  EXPECT_EQ(history.LatestGpu("a", 1)->utilization_percent, 77);
  EXPECT_FALSE(history.LatestGpu("a", 7).has_value()) << "the node has no GPU 7";

  clock_.Advance(seconds(60));
  master_->Tick();
  ASSERT_EQ(master_->nodes().List().at(0).node->state, NodeState::kLost);
  EXPECT_FALSE(master_->nodes().resources().LatestGpu("a", 1).has_value());
  EXPECT_TRUE(master_->nodes().resources().Task("a", task).empty());
}

INSTANTIATE_TEST_SUITE_P(Scheduling, ResourceSamplesTest, ::testing::Values(false, true));

}  // namespace
}  // namespace cohort::master
