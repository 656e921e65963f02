// The simulator and a real local cluster agree on the order in which the jobs of a 20-job trace
// start. Time is scaled: one trace second is 500 ms of real time; events of the trace are at
// least half a trace second apart, far more than what starting and stopping real processes adds.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim/simulator.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

constexpr double kScale = 0.5;  // real seconds per trace second

struct TraceRow {
  int gpus;
  double duration;  // trace seconds
};

// Two 4-GPU nodes. The first job holds all 8 GPUs while the others arrive; from then on every
// decision happens when a job ends (no two at the same moment, and no decision that a few
// milliseconds either way would change), and jobs of 1 to 8 GPUs make the scheduler reserve and
// backfill: the start order is not the submission order. Both keep the history of ended jobs
// and order waiting jobs by its estimates (the names j0..j19 are unique, so in the master, as in
// the simulator, whose traces have no names, estimates come from jobs of the same GPU count),
// and the history changes the order here.
const std::vector<TraceRow> kTrace = {
    {8, 3}, {1, 1}, {4, 4}, {2, 4.5}, {1, 5.5}, {1, 2},   {8, 6}, {8, 3}, {1, 4.5}, {8, 1},
    {8, 5}, {8, 2}, {4, 3}, {8, 4.5}, {2, 4},   {1, 3.5}, {8, 3}, {2, 3}, {1, 3},   {1, 6}};

TEST(SimulatorVsCluster, SameStartOrderForATwentyJobTrace) {
  // The simulation: all jobs submitted at time 0, in order.
  sim::Trace trace;
  for (size_t i = 0; i < kTrace.size(); ++i) {
    sim::TraceJob j;
    j.id = fmt::format("j{}", i);
    j.submit = 0;
    j.duration = kTrace[i].duration;
    j.gpus = kTrace[i].gpus;
    trace.jobs.push_back(j);
  }
  sim::ClusterSpec spec;
  spec.nodes = 2;
  spec.gpus_per_node = 4;
  sim::SimOptions options;
  options.runtime_estimate = 2.0;
  sim::SimResult simulated = sim::Simulate(trace, spec, options);
  ASSERT_EQ(simulated.start_order.size(), kTrace.size());
  // Precondition of a fair comparison: jobs end at least half a trace second apart in the
  // simulation (the real cluster would order ties by chance).
  std::vector<double> ends;
  for (const auto& j : simulated.jobs) ends.push_back(j.end);
  std::sort(ends.begin(), ends.end());
  for (size_t i = 1; i < ends.size(); ++i) {
    ASSERT_GE(ends[i] - ends[i - 1], 0.5)
        << "two jobs end at " << ends[i - 1] << " and " << ends[i];
  }

  // The real cluster: the same jobs as `sleep`, with the same max_runtime (2 x duration).
  LocalCluster cluster("simvsreal");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 4);
  cluster.StartAgent("node-b", 4);
  std::vector<JobId> ids;
  for (size_t i = 0; i < kTrace.size(); ++i) {
    double seconds = kTrace[i].duration * kScale;
    int max_ms = static_cast<int>(2 * seconds * 1000);
    // As the simulator splits it: whole nodes' worth of GPUs per task.
    int per_task = std::min(kTrace[i].gpus, 4);
    ids.push_back(cluster.Submit(fmt::format(
        "name: j{}\nmax_runtime: {}ms\ntasks: [{{role: main, replicas: {}, resources: {{gpus: "
        "{}}}, command: [sleep, '{:.3f}']}}]\n",
        i, max_ms, kTrace[i].gpus / per_task, per_task, seconds)));
  }
  std::vector<std::pair<Timestamp, std::string>> starts;
  for (size_t i = 0; i < ids.size(); ++i) {
    Job job = cluster.WaitForState(ids[i], JobState::kSucceeded, std::chrono::seconds(60));
    ASSERT_TRUE(job.placed_at.has_value());
    starts.emplace_back(*job.placed_at, fmt::format("j{}", i));
  }
  std::sort(starts.begin(), starts.end());
  // Jobs that start at one moment of the trace start within milliseconds of each other in the
  // real cluster, in an order that depends on which task of an ending gang reports first: the
  // order compared is that of these groups.
  std::vector<std::set<std::string>> real;
  for (size_t i = 0; i < starts.size(); ++i) {
    bool same_moment = i > 0 && starts[i].first - starts[i - 1].first <
                                    std::chrono::milliseconds(static_cast<int>(kScale * 250));
    if (!same_moment) real.emplace_back();
    real.back().insert(starts[i].second);
  }
  std::vector<std::set<std::string>> expected;
  double last = -1;
  for (const auto& id : simulated.start_order) {
    double at = 0;
    for (const auto& j : simulated.jobs) {
      if (j.id == id) at = j.start;
    }
    if (expected.empty() || at != last) expected.emplace_back();
    expected.back().insert(id);
    last = at;
  }
  EXPECT_EQ(real, expected);
  std::vector<std::string> submitted;
  for (size_t i = 0; i < kTrace.size(); ++i) submitted.push_back(fmt::format("j{}", i));
  EXPECT_NE(simulated.start_order, submitted) << "the trace must exercise backfill";
  sim::SimOptions without_history = options;
  without_history.history = false;
  EXPECT_NE(sim::Simulate(trace, spec, without_history).start_order, simulated.start_order)
      << "the trace must exercise the history";
}

}  // namespace
}  // namespace cohort::testing
