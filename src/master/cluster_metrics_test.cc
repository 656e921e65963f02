// The master's Prometheus series from a master in a known state: what each says, and that the
// text is what Prometheus reads (every sample after its family's HELP and TYPE).
#include "master/cluster_metrics.h"

#include <set>

#include "common/strings.h"
#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

// The value of the sample written exactly as `series` (name and labels), or "" if absent.
std::string ValueOf(const std::string& text, const std::string& series) {
  for (const auto& line : Split(text, '\n')) {
    if (line.starts_with(series + " ")) return line.substr(series.size() + 1);
  }
  return "";
}

// Every sample's family was declared before it, once, with a known type.
void ExpectWellFormed(const std::string& text) {
  std::set<std::string> typed;
  for (const auto& line : Split(text, '\n')) {
    if (line.empty() || line.starts_with("# HELP ")) continue;
    if (line.starts_with("# TYPE ")) {
      auto parts = Split(line, ' ');
      ASSERT_EQ(parts.size(), 4u) << line;
      EXPECT_TRUE(typed.insert(parts[2]).second) << "declared twice: " << line;
      EXPECT_TRUE(parts[3] == "gauge" || parts[3] == "counter" || parts[3] == "histogram") << line;
      continue;
    }
    std::string name = line.substr(0, line.find_first_of("{ "));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (!typed.count(name) && name.ends_with(suffix)) {
        name.resize(name.size() - std::string_view(suffix).size());
      }
    }
    EXPECT_TRUE(typed.count(name)) << "no TYPE before: " << line;
  }
}

class ClusterMetricsTest : public MasterTest {
 protected:
  std::string Scrape() {
    PrometheusText out;
    WriteClusterMetrics(*master_, out);
    ExpectWellFormed(out.text());
    return out.Take();
  }
};

TEST_P(ClusterMetricsTest, NodesTeamsJobsAndTheQueueAreWhatTheMasterHolds) {
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 2, 6}).ok());
  AddNode("a", 4);
  AddNode("b", 2);
  JobId big = Submit(1, 3, 1, "vision");
  JobId small = Submit(1, 1);
  RunPosted();
  ASSERT_EQ(GetJob(big).state, JobState::kStarting);
  ASSERT_EQ(GetJob(small).state, JobState::kStarting);
  const std::string a_or_b = GetJob(small).tasks.at(0).node_id;
  Submit(1, 4, 1, "vision");  // 3 + 4 > vision's limit of 6: it waits
  RunPosted();
  ASSERT_TRUE(master_->nodes().Drain("b", "bad fan").ok());
  clock_.Advance(std::chrono::seconds(5));  // within the node timeout: no tick makes them LOST

  std::string text = Scrape();
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus{node="a"})"), "4");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus{node="b"})"), "2");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus_allocated{node="a",team="vision"})"), "3");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus_allocated{node=")" + a_or_b + R"(",team="default"})"),
            "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus_allocated{node="b",team="vision"})"), "")
      << "no series for a team without GPUs on a node";
  EXPECT_EQ(ValueOf(text, R"(cohort_node_state{node="a",state="ready"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_state{node="a",state="lost"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_drained{node="a"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_drained{node="b"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_heartbeat_age_seconds{node="a"})"), "5");

  EXPECT_EQ(ValueOf(text, R"(cohort_team_gpus_guaranteed{team="vision"})"), "2");
  EXPECT_EQ(ValueOf(text, R"(cohort_team_gpus_limit{team="vision"})"), "6");
  EXPECT_EQ(ValueOf(text, R"(cohort_team_gpus_limit{team="default"})"), "") << "no limit";
  EXPECT_EQ(ValueOf(text, R"(cohort_team_gpus_used{team="vision"})"), "3");
  EXPECT_EQ(ValueOf(text, R"(cohort_team_gpus_borrowed{team="vision"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_team_gpus_borrowed{team="default"})"), "1");

  EXPECT_EQ(ValueOf(text, R"(cohort_jobs{team="vision",state="starting"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_jobs{team="vision",state="pending"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_jobs{team="default",state="pending"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_jobs{team="default",state="succeeded"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_queue_oldest_wait_seconds{team="vision"})"), "5");
  EXPECT_EQ(ValueOf(text, R"(cohort_queue_oldest_wait_seconds{team="default"})"), "0");

  // The manual clock stands still during a pass: every pass is in the first bucket.
  std::string passes = ValueOf(text, "cohort_scheduling_pass_seconds_count");
  ASSERT_FALSE(passes.empty());
  EXPECT_GT(std::stoi(passes), 0);
  EXPECT_EQ(ValueOf(text, R"(cohort_scheduling_pass_seconds_bucket{le="0.0001"})"), passes);
  EXPECT_EQ(ValueOf(text, R"(cohort_scheduling_pass_seconds_bucket{le="+Inf"})"), passes);
  EXPECT_EQ(ValueOf(text, R"(cohort_preemptions_total{cause="priority"})"), "0")
      << "every cause is written from the start";
}

TEST_P(ClusterMetricsTest, PreemptionsAreCountedByTheirCause) {
  AddNode("a", 2);
  Submit(1, 2, 1, "default", kPriorityLow);
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(std::chrono::minutes(5));
  Report("a", TaskState::kRunning);
  Submit(1, 2, 1, "default", kPriorityHigh);
  RunPosted();
  std::string text = Scrape();
  EXPECT_EQ(ValueOf(text, R"(cohort_preemptions_total{cause="priority"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_preemptions_total{cause="quota_reclaim"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_preemptions_total{cause="level"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_preemptions_total{cause="move"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_preemptions_total{cause="oracle"})"), "")
      << "a reference of the simulator's, never the master's";
}

TEST_P(ClusterMetricsTest, ASilentNodeIsLostAndEndedJobsAreCountedByTheirState) {
  AddNode("a", 2);
  JobId id = Submit(1, 1);
  RunPosted();
  Report("a", TaskState::kRunning);
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kSucceeded);
  clock_.Advance(std::chrono::seconds(60));
  master_->Tick();
  std::string text = Scrape();
  EXPECT_EQ(ValueOf(text, R"(cohort_jobs{team="default",state="succeeded"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_jobs{team="default",state="running"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_state{node="a",state="lost"})"), "1");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_state{node="a",state="ready"})"), "0");
  EXPECT_EQ(ValueOf(text, R"(cohort_node_heartbeat_age_seconds{node="a"})"), "60");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus_allocated{node="a",team="default"})"), "");
}

TEST_P(ClusterMetricsTest, GpuLoadOnlyForGpusWhoseFiguresAreKnown) {
  AddNode("a", 2);
  std::string text = Scrape();
  EXPECT_THAT(text, ::testing::HasSubstr("# TYPE cohort_gpu_utilization_ratio gauge"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("cohort_gpu_utilization_ratio{")))
      << "nothing sampled yet: no figure is made up";

  AgentReport report;
  report.applied_version = master_->nodes().DesiredFor("a")->version;
  report.gpu_samples = {GpuSamples{0, {GpuSample{clock_.Now(), 37, 1 << 30}}},
                        GpuSamples{1, {GpuSample{clock_.Now(), std::nullopt, 4096}}}};
  ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
  text = Scrape();
  EXPECT_EQ(ValueOf(text, R"(cohort_gpu_utilization_ratio{node="a",gpu="0"})"), "0.37");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpu_utilization_ratio{node="a",gpu="1"})"), "");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpu_memory_used_bytes{node="a",gpu="0"})"), "1073741824");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpu_memory_used_bytes{node="a",gpu="1"})"), "4096");
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus_busy{node="a",team="vision"})"), "")
      << "no team holds a GPU yet";

  // A job of vision's on both GPUs: only the one whose load is known counts as busy.
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 2, std::nullopt}).ok());
  JobId job = Submit(1, 2, 1, "vision");
  RunPosted();
  ASSERT_EQ(GetJob(job).state, JobState::kStarting);
  auto desired = master_->nodes().DesiredFor("a");
  ASSERT_TRUE(desired.ok());
  report.applied_version = desired->version;
  for (const auto& t : desired->tasks) {  // the agent runs the job's task
    report.tasks.push_back(TaskReport{t.id, TaskState::kRunning, std::nullopt, std::nullopt, 42,
                                      clock_.Now(), std::nullopt});
  }
  clock_.Advance(std::chrono::seconds(5));
  report.gpu_samples = {GpuSamples{0, {GpuSample{clock_.Now(), 50, 1 << 30}}},
                        GpuSamples{1, {GpuSample{clock_.Now(), std::nullopt, 4096}}}};
  ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
  text = Scrape();
  EXPECT_EQ(ValueOf(text, R"(cohort_gpus_busy{node="a",team="vision"})"), "0.5");
  ExpectWellFormed(text);
}

INSTANTIATE_TEST_SUITE_P(Modes, ClusterMetricsTest, ::testing::Bool());

}  // namespace
}  // namespace cohort::master
