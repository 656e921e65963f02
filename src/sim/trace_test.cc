#include "sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/cluster_spec.h"
#include "sim/generate.h"

namespace cohort::sim {
namespace {

using ::testing::HasSubstr;

TEST(Trace, ReadsItpAndSkipsBadRowsWithReasons) {
  auto t = ParseTrace(
      "job_id,submission_time,duration,num_gpu\n"
      "a,10,100,1\n"
      "b,5,200,8\n"
      "c,x,100,1\n"
      "d,20,-5,1\n"
      "e,30,100\n"
      ",40,100,1",  // no final newline, as in the ITP files
      std::nullopt);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rows, 6u);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "b") << "sorted by submission";
  EXPECT_EQ(t->jobs[0].gpus, 8);
  ASSERT_EQ(t->skipped.size(), 4u);
  EXPECT_EQ(t->skipped[0].line, 4u);
  EXPECT_THAT(t->skipped[0].reason, HasSubstr("must be numbers"));
  EXPECT_THAT(t->skipped[1].reason, HasSubstr("duration -5 is not positive"));
  EXPECT_THAT(t->skipped[2].reason, HasSubstr("expected 4 fields, got 3"));
  EXPECT_THAT(t->skipped[3].reason, HasSubstr("empty job id"));
}

// Exported traces may write GPU counts as floats; a whole one is still a count.
TEST(Trace, TakesWholeFloatCountsAndRefusesFractions) {
  auto t = ParseTrace("job_id,submission_time,duration,num_gpu\na,1,100, 4.0\nb,2,100,2.5\n",
                      std::nullopt);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].gpus, 4);
  ASSERT_EQ(t->skipped.size(), 1u);
  EXPECT_EQ(t->skipped[0].line, 3u);
}

// Found by fuzz/trace_fuzzer.cc: from_chars reads "nan" and "inf", and a NaN time passed every
// check; a count of 1e300 was converted to int64_t before its range was checked (undefined).
TEST(Trace, SkipsRowsWithNumbersThatAreNotFinite) {
  auto t = ParseTrace(
      "job_id,submission_time,duration,num_gpu\n"
      "a,nan,100,1\n"
      "b,1,inf,1\n"
      "c,1,100,1e300\n"
      "d,1,100,-inf\n"
      "e,1,100,2",
      std::nullopt);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].id, "e");
  EXPECT_EQ(t->skipped.size(), 4u);
}

TEST(Trace, ReadsTiresiasAndCohortFormats) {
  auto tiresias = ParseTrace(
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,2,30,606,vgg19,164,"
      "30\n",
      std::nullopt);
  ASSERT_TRUE(tiresias.ok());
  EXPECT_EQ(tiresias->jobs[0].gpus, 2);
  EXPECT_EQ(tiresias->jobs[0].submit, 30);
  EXPECT_EQ(tiresias->jobs[0].duration, 164);
  auto cohort = ParseTrace(
      "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus\n"
      "a,0,100,4,vision,ada,100,300,,\n"
      "b,1,100,2,,,,,1,4\n"
      "c,2,100,2,,,,,5,4\n",
      std::nullopt);
  ASSERT_TRUE(cohort.ok());
  ASSERT_EQ(cohort->jobs.size(), 2u);
  EXPECT_EQ(cohort->jobs[0].team, "vision");
  EXPECT_EQ(cohort->jobs[0].priority, 100);
  EXPECT_EQ(*cohort->jobs[0].max_runtime, 300);
  EXPECT_EQ(cohort->jobs[1].min_gpus, 1);
  EXPECT_EQ(cohort->jobs[1].max_gpus, 4);
  EXPECT_THAT(cohort->skipped[0].reason, HasSubstr("min_gpus <= max_gpus"));
}

TEST(Trace, RefusesUnknownHeadersAndMismatchedFormats) {
  auto unknown = ParseTrace("a,b,c\n1,2,3\n", std::nullopt);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("not one of the known formats"));
  auto mismatch = ParseTrace("job_id,submission_time,duration,num_gpu\n", TraceFormat::kTiresias);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.status().message(), HasSubstr("--format tiresias expects"));
  EXPECT_FALSE(ParseTrace("", std::nullopt).ok());
  EXPECT_FALSE(ParseTraceFormat("slurm").ok());
}

TEST(Trace, CohortFormatRoundTrips) {
  GenerateOptions g;
  g.jobs = 200;
  g.teams = 3;
  auto jobs = GenerateTrace(g);
  auto back = ParseTrace(WriteCohortTrace(jobs), TraceFormat::kCohort);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->jobs.size(), jobs.size());
  EXPECT_TRUE(back->skipped.empty());
  EXPECT_EQ(back->jobs[7].id, jobs[7].id);
  EXPECT_EQ(back->jobs[7].gpus, jobs[7].gpus);
  EXPECT_EQ(back->jobs[7].team, jobs[7].team);
}

TEST(Trace, ReadsSweepRowsAndSkipsBadOnesWithTheKeyAndWhy) {
  auto t = ParseTrace(
      "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus,sweep\n"
      "a,0,100,4,vision,,,,,,\n"
      "hp,5,3600,1,nlp,ada,,,,,trials=200;concurrency=16;divisor=3;rungs=4\n"
      "bad,6,3600,1,,,,,,,trials=200;concurrency=0\n"
      "elastic,7,3600,1,,,,,1,4,trials=2\n"
      "short,8,3600,1,,,,,,\n",
      std::nullopt);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_FALSE(t->jobs[0].sweep);
  ASSERT_TRUE(t->jobs[1].sweep);
  EXPECT_EQ(t->jobs[1].sweep->trials, 200);
  EXPECT_EQ(t->jobs[1].sweep->concurrency, 16);
  EXPECT_EQ(t->jobs[1].duration, 3600);
  ASSERT_EQ(t->skipped.size(), 3u);
  EXPECT_EQ(t->skipped[0].reason, "sweep: concurrency must be at least 1");
  EXPECT_THAT(t->skipped[1].reason, HasSubstr("cannot be elastic"));
  EXPECT_THAT(t->skipped[2].reason, HasSubstr("expected 11 fields, got 10"));
  // Written back with the sweep column; a trace without sweeps keeps the header it had.
  auto back = ParseTrace(WriteCohortTrace(t->jobs), TraceFormat::kCohort);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->jobs.size(), 2u);
  EXPECT_EQ(back->jobs[1].sweep, t->jobs[1].sweep);
  EXPECT_THAT(
      WriteCohortTrace({t->jobs[0]}),
      ::testing::StartsWith(
          "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus\n"));
}

TEST(Generate, SweepRowsFromTheCommandLine) {
  auto row = ParseSweepRow(
      "trials=200;concurrency=16;divisor=3;rungs=4;gpus=2;length=4h;at=10h;"
      "team=team-0;user=ada",
      "sweep-0");
  ASSERT_TRUE(row.ok()) << row.status().message();
  EXPECT_EQ(row->id, "sweep-0");
  EXPECT_EQ(row->gpus, 2);
  EXPECT_EQ(row->duration, 4 * 3600);
  EXPECT_EQ(row->submit, 10 * 3600);
  EXPECT_EQ(row->team, "team-0");
  EXPECT_EQ(row->user, "ada");
  ASSERT_TRUE(row->sweep);
  EXPECT_EQ(row->sweep->trials, 200);
  EXPECT_EQ(ParseSweepRow("trials=2", "s").status().message(),
            "--sweep: length (a trial's full length, e.g. 4h) is required");
  EXPECT_THAT(ParseSweepRow("trials=2;length=1h;rungs=0", "s").status().message(),
              HasSubstr("--sweep: rungs must be 1 to"));
  EXPECT_THAT(ParseSweepRow("trials=2;length=soon", "s").status().message(),
              HasSubstr("--sweep: length:"));

  GenerateOptions g;
  g.jobs = 50;
  auto jobs = GenerateTrace(g);
  double at = jobs[10].submit;
  TraceJob sweep = *row;
  sweep.submit = at;
  AddRows(jobs, {sweep});
  ASSERT_EQ(jobs.size(), 51u);
  auto it = std::find_if(jobs.begin(), jobs.end(), [](const TraceJob& j) { return j.sweep; });
  ASSERT_NE(it, jobs.end());
  EXPECT_TRUE(std::is_sorted(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit < b.submit;
  }));
  EXPECT_EQ((it - 1)->submit, at) << "after the jobs submitted at the same time";
}

TEST(Generate, ShapedLikeItp) {
  GenerateOptions g;
  g.jobs = 20000;
  g.seed = 7;
  auto jobs = GenerateTrace(g);
  size_t one = 0, big = 0;
  std::vector<double> durations;
  for (const auto& j : jobs) {
    one += j.gpus == 1;
    big += j.gpus > 8;
    durations.push_back(j.duration);
  }
  std::sort(durations.begin(), durations.end());
  EXPECT_NEAR(static_cast<double>(one) / 20000, 0.832, 0.01);
  EXPECT_NEAR(static_cast<double>(big) / 20000, 0.011, 0.004);
  EXPECT_NEAR(durations[10000], 10537, 600);   // median
  EXPECT_NEAR(durations[18000], 28787, 4500);  // p90 (sampling error near a steep quantile)
  // The same seed gives the same trace.
  EXPECT_EQ(WriteCohortTrace(GenerateTrace(g)), WriteCohortTrace(jobs));
}

TEST(ClusterSpec, ParsesYamlAndNamesBadFields) {
  auto spec = ParseClusterSpec(
      "nodes: 32\ngpus_per_node: 4\nracks: 4\nmemory: 256Gi\n"
      "teams: [{name: vision, gpus: 64, max_gpus: 96}, {name: nlp, gpus: 32}]\n",
      "c.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->TotalGpus(), 128);
  EXPECT_EQ(spec->teams.size(), 2u);
  EXPECT_EQ(*spec->teams[0].max_gpus, 96);
  EXPECT_EQ(spec->Nodes()[5].labels.at("rack"), "rack-1");
  auto bad = ParseClusterSpec("nodes: 0\ngpu_per_node: 8\nmemory: lots\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().details().size(), 3u);
  auto teams = ParseTeams("vision:64,nlp:32:48");
  ASSERT_TRUE(teams.ok());
  EXPECT_EQ((*teams)[1].max_gpus, 48);
  EXPECT_FALSE(ParseTeams("vision").ok());
  EXPECT_FALSE(ParseTeams("nlp:32:8").ok());
  EXPECT_FALSE(ParseTeams("nlp:32x").ok());
  EXPECT_FALSE(ParseTeams("nlp:-1").ok());
  auto bad_teams = ParseClusterSpec("nodes: many\nteams: [{name: a, gpus: 2.5}, 7]\n", "c.yaml");
  ASSERT_FALSE(bad_teams.ok());
  EXPECT_THAT(bad_teams.status().details(),
              ::testing::ElementsAre("nodes: must be an integer",
                                     "teams[0]: needs name and gpus (integers), and optionally "
                                     "max_gpus",
                                     "teams[1]: needs name and gpus (integers), and optionally "
                                     "max_gpus"));
}

TEST(ClusterSpec, TeamsFromAStableHash) {
  ClusterSpec spec;
  spec.teams = *ParseTeams("a:1,b:1,c:1");
  EXPECT_EQ(TeamFor(spec, "job-1"), TeamFor(spec, "job-1"));
  std::map<std::string, int> seen;
  for (int i = 0; i < 300; ++i) ++seen[TeamFor(spec, "job-" + std::to_string(i))];
  EXPECT_EQ(seen.size(), 3u);
  for (const auto& [team, n] : seen) EXPECT_GT(n, 60) << team;
}

}  // namespace
}  // namespace cohort::sim
