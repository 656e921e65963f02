#include "sim/team_quotas.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "sim/cluster_spec.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace cohort::sim {
namespace {

using ::testing::ElementsAre;

TEST(LargestRemainder, WholePartsThenTheLargestRemainders) {
  // Exact shares 3.5, 2.1, 1.4: floors 3, 2, 1, and the one GPU left goes to the largest
  // remainder (.5).
  EXPECT_THAT(LargestRemainder({5, 3, 2}, 7), ElementsAre(4, 2, 1));
  // Equal remainders: the earlier parts first.
  EXPECT_THAT(LargestRemainder({1, 1, 1}, 10), ElementsAre(4, 3, 3));
  EXPECT_THAT(LargestRemainder({0, 1}, 5), ElementsAre(0, 5)) << "no weight, nothing";
  EXPECT_THAT(LargestRemainder({0, 0}, 5), ElementsAre(3, 2)) << "all zero: equal weights";
  EXPECT_THAT(LargestRemainder({2, 1}, 0), ElementsAre(0, 0));
  EXPECT_TRUE(LargestRemainder({}, 8).empty());
  // Always exactly the total, whatever the weights.
  std::vector<double> odd = {1e-9, 3.7, 12345.6, 0.3, 1.0 / 3, 7, 7, 7};
  for (int64_t total : {1, 7, 96, 1280, 99'991}) {
    auto parts = LargestRemainder(odd, total);
    EXPECT_EQ(std::accumulate(parts.begin(), parts.end(), int64_t{0}), total) << total;
  }
}

TEST(TeamQuotas, ProportionalToGpuHoursAtLeastOneEach) {
  std::vector<TraceTeam> teams = {{"big", 100, 1000}, {"tiny", 1, 1}, {"small", 2, 1}};
  // 9.98, 0.01, 0.01 of 10: big takes all 10 by largest remainder, then gives one to each other.
  auto q = QuotasByGpuHours(teams, 10);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].name, "big");
  EXPECT_EQ(q[0].guaranteed_gpus, 8);
  EXPECT_EQ(q[1].guaranteed_gpus, 1);
  EXPECT_EQ(q[2].guaranteed_gpus, 1);
  EXPECT_FALSE(q[0].max_gpus) << "no borrowing limit";
  // Fewer GPUs than teams: some keep none.
  auto few = QuotasByGpuHours({{"a", 1, 10}, {"b", 1, 10}, {"c", 1, 10}}, 2);
  EXPECT_EQ(few[0].guaranteed_gpus + few[1].guaranteed_gpus + few[2].guaranteed_gpus, 2);
  EXPECT_EQ(few[2].guaranteed_gpus, 0);
}

TEST(TeamQuotas, TeamsOfATraceByGpuHours) {
  auto trace = ParseTrace(
      "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus\n"
      "1,0,100,4,nlp,,,,,\n"
      "2,0,50,2,nlp,,,,,\n"
      "3,0,10,1,,,,,,\n"
      "4,0,100,2,vision,,,,2,8\n",
      TraceFormat::kCohort);
  ASSERT_TRUE(trace.ok());
  auto teams = TeamsOfTrace(*trace);
  ASSERT_EQ(teams.size(), 3u);
  EXPECT_EQ(teams[0].name, "default") << "jobs without a team";
  EXPECT_EQ(teams[0].gpu_seconds, 10);
  EXPECT_EQ(teams[1].name, "nlp");
  EXPECT_EQ(teams[1].jobs, 2u);
  EXPECT_EQ(teams[1].gpu_seconds, 100 * 4 + 50 * 2);
  EXPECT_EQ(teams[2].gpu_seconds, 200) << "an elastic job at its minimum";
  // 10 : 500 : 200 of 71 GPUs: 1, 50, 20.
  auto q = QuotasByGpuHours(teams, 71);
  EXPECT_EQ(q[0].guaranteed_gpus, 1);
  EXPECT_EQ(q[1].guaranteed_gpus, 50);
  EXPECT_EQ(q[2].guaranteed_gpus, 20);
}

TEST(TeamQuotas, ASweepCountsItsTrialsAtTheirExpectedLength) {
  // 10 trials of 2 GPUs, 900 s at full length; rungs 2, divisor 3, half stop at the first rung
  // (300 s): 600 s each on average.
  auto trace = ParseTrace(
      "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus,sweep\n"
      "hp,0,900,2,nlp,,,,,,trials=10;divisor=3;rungs=2;stop=0.5\n",
      TraceFormat::kCohort);
  ASSERT_TRUE(trace.ok());
  auto teams = TeamsOfTrace(*trace);
  ASSERT_EQ(teams.size(), 1u);
  EXPECT_EQ(teams[0].jobs, 10u);
  EXPECT_DOUBLE_EQ(teams[0].gpu_seconds, 10 * 600 * 2);
}

TEST(TeamQuotas, ASpecWithTeamsFromTheTraceKeepsUnnamedJobsInDefault) {
  auto spec = ParseClusterSpec("nodes: 2\nteams: auto\n", "c.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->teams_from_trace);
  auto trace = ParseTrace(
      "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus\n"
      "a,0,100,8,nlp,,,,,\n"
      "b,0,100,8,,,,,,\n"
      "c,0,100,8,,,,,,\n",
      TraceFormat::kCohort);
  ASSERT_TRUE(trace.ok());
  spec->teams = QuotasByGpuHours(TeamsOfTrace(*trace), spec->TotalGpus());
  EXPECT_EQ(TeamFor(*spec, "b"), "default") << "not hashed over the trace's teams";
  SimResult r = Simulate(*trace, *spec, SimOptions{});
  EXPECT_EQ(r.jobs[1].team, "default");
  EXPECT_EQ(r.jobs[2].team, "default");
  Figures f = Summarize(r);
  ASSERT_EQ(f.teams.size(), 2u);
  EXPECT_EQ(f.teams[0].team, "default");
  EXPECT_EQ(f.teams[0].guaranteed_gpus, 11) << "2/3 of 16 GPUs, and the remainder";
  EXPECT_EQ(f.teams[1].guaranteed_gpus, 5);
  auto bad = ParseClusterSpec("teams: automatic\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().details(), ElementsAre(::testing::HasSubstr("or auto")));
}

}  // namespace
}  // namespace cohort::sim
