#include "sim/team_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "sim/cluster_spec.h"
#include "sim/generate.h"
#include "sim/team_quotas.h"

namespace cohort::sim {
namespace {

TEST(TeamSplit, ZipfSharesAndPicks) {
  auto equal = ZipfShares(4, 0);
  for (double s : equal) EXPECT_DOUBLE_EQ(s, 0.25);
  auto zipf = ZipfShares(3, 1);  // 1, 1/2, 1/3 of 11/6
  EXPECT_NEAR(zipf[0], 6.0 / 11, 1e-12);
  EXPECT_NEAR(zipf[2], 2.0 / 11, 1e-12);
  EXPECT_EQ(PickShare(zipf, 0), 0u);
  EXPECT_EQ(PickShare(zipf, 6.0 / 11 - 1e-9), 0u);
  EXPECT_EQ(PickShare(zipf, 6.0 / 11 + 1e-9), 1u);
  EXPECT_EQ(PickShare(zipf, 0.999999), 2u);
  EXPECT_EQ(PickShare(zipf, 1.5), 2u) << "beyond them all: the last";
}

TEST(TeamSplit, TheStableHashDoesNotChange) {
  // Every split over teams, and so every published figure, depends on these values.
  EXPECT_EQ(StableHash("", 0), 1469598103934665603ULL);
  EXPECT_EQ(StableHash("a", 0), 4953267810257967366ULL);
  EXPECT_EQ(StableHash("foobar", 0), 9870438755804841970ULL);
  EXPECT_NE(StableHash("a", 1), StableHash("a", 2));
}

TEST(TeamSplit, JobCountsFollowTheSkew) {
  std::vector<TraceJob> jobs(30000);
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = "job-" + std::to_string(i);
  SplitOverTeams(jobs, 15, 2, 3);
  std::map<std::string, int> count;
  for (const auto& j : jobs) ++count[j.team];
  ASSERT_EQ(count.size(), 15u);
  auto shares = ZipfShares(15, 2);
  // team-0 has 63% of the jobs, team-14 0.28% (84 of 30,000).
  EXPECT_NEAR(count["team-0"], 30000 * shares[0], 300);
  EXPECT_NEAR(count["team-14"], 30000 * shares[14], 30);
  EXPECT_GT(count["team-1"], count["team-5"]);
  // The same seed, the same split; another seed, another.
  auto again = jobs;
  SplitOverTeams(again, 15, 2, 3);
  EXPECT_EQ(again[123].team, jobs[123].team);
  SplitOverTeams(again, 15, 2, 4);
  int moved = 0;
  for (size_t i = 0; i < jobs.size(); ++i) moved += again[i].team != jobs[i].team;
  EXPECT_GT(moved, 5000);
}

TEST(Generate, UnequalTeamsWithTheirOwnShapes) {
  GenerateOptions g;
  g.jobs = 20000;
  g.teams = 15;
  g.team_skew = 2;
  g.team_shapes = true;
  auto jobs = GenerateTrace(g);
  std::map<std::string, int> count;
  std::map<std::string, double> gpus, multi;
  for (const auto& j : jobs) {
    ++count[j.team];
    multi[j.team] += j.gpus > 1;
  }
  ASSERT_EQ(count.size(), 15u);
  EXPECT_NEAR(count["team-0"], 20000 * ZipfShares(15, 2)[0], 300);
  EXPECT_LT(count["team-14"], 150);
  // Shapes differ between teams: the multi-GPU shares of the two largest teams (thousands of
  // jobs each) are ITP's 16.8% times factors drawn in [1/4, 4], and all the teams' vary widely.
  double lo = 1, hi = 0;
  for (const auto& [team, n] : count) {
    if (n < 500) continue;
    double share = multi[team] / n;
    lo = std::min(lo, share);
    hi = std::max(hi, share);
  }
  EXPECT_GT(hi / lo, 1.5) << lo << " " << hi;
  // Quotas from these GPU-hours are unequal too.
  Trace trace;
  trace.jobs = jobs;
  auto quotas = QuotasByGpuHours(TeamsOfTrace(trace), 1024);
  int64_t least = 1024, most = 0;
  for (const auto& q : quotas) {
    least = std::min(least, q.guaranteed_gpus);
    most = std::max(most, q.guaranteed_gpus);
  }
  EXPECT_GE(least, 1);
  EXPECT_GT(most, 20 * least);
}

TEST(Generate, WithoutSkewOrShapesASeedGivesTheTraceItAlwaysGave) {
  // `cohort sim gen --jobs 3 --seed 1 --teams 3` before teams could differ.
  GenerateOptions g;
  g.jobs = 3;
  g.teams = 3;
  EXPECT_EQ(WriteCohortTrace(GenerateTrace(g)),
            "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus\n"
            "job-000000,0,433,1,team-1,user-0,0,,,\n"
            "job-000001,26,36992,1,team-0,user-11,0,,,\n"
            "job-000002,86,225,1,team-2,user-4,0,,,\n");
}

TEST(Generate, PacedToALoad) {
  GenerateOptions g;
  g.jobs = 5000;
  g.seed = 5;
  g.teams = 15;
  g.team_skew = 2;
  g.load = 0.9;
  g.cluster_gpus = 512;
  auto jobs = GenerateTrace(g);
  EXPECT_NEAR(OfferedGpus(jobs), 0.9 * 512, 1) << "GPU-hours per hour of the submissions' span";
  // The same draws as without pacing, only the times stretched.
  GenerateOptions unpaced = g;
  unpaced.load = 0;
  auto plain = GenerateTrace(unpaced);
  EXPECT_EQ(plain[4321].duration, jobs[4321].duration);
  EXPECT_EQ(plain[4321].team, jobs[4321].team);
  EXPECT_NE(plain[4321].submit, jobs[4321].submit);
}

}  // namespace
}  // namespace cohort::sim
