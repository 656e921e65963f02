// The master learns what jobs cost from the jobs that end (docs/scheduler.md, "The rank of a
// job"): after a few quick jobs named "short" and slower ones named "long", a "short" job
// submitted after a "long" one starts first when the GPU frees, the estimate survives a restart
// of the master, and `cohort why` names the level and the estimate.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

std::string Spec(const std::string& name, const std::string& seconds) {
  return fmt::format(
      "name: {}\ntasks: [{{role: main, resources: {{gpus: 1}}, command: [sleep, '{}']}}]\n", name,
      seconds);
}

TEST(RuntimeHistory, AShortJobGoesFirstAndTheEstimateSurvivesARestart) {
  LocalCluster cluster("history");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  // Teach: three of each kind, one after the other on the one GPU.
  std::vector<JobId> taught;
  for (int i = 0; i < 3; ++i) {
    taught.push_back(cluster.Submit(Spec("short", "0.1")));
    taught.push_back(cluster.Submit(Spec("long", "0.8")));
  }
  for (JobId id : taught) cluster.WaitForState(id, JobState::kSucceeded);

  // The GPU is held; a long job waits, then a short one.
  JobId blocker = cluster.Submit(Spec("blocker", "300"));
  cluster.WaitForState(blocker, JobState::kRunning);
  JobId long_job = cluster.Submit(Spec("long", "0.8"));
  JobId short_job = cluster.Submit(Spec("short", "0.1"));
  std::string user = cluster.client().GetJob(short_job)->user;
  auto why = [&](JobId id) {
    CommandResult r = cluster.Cohort({"why", std::to_string(id)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  // The level, and the estimate from the three short jobs: far below the long ones'.
  EXPECT_THAT(why(short_job),
              ContainsRegex("level 0 of 0-2 \\(below 1 GPU-hour\\): no GPU time attained; "
                            "estimated [0-9.]+ GPU-seconds from 3 finished jobs named short by " +
                            user + " in team default with 1 GPU, about [0-9.]+ GPU-seconds left"));
  EXPECT_THAT(why(short_job), HasSubstr("policy default"));
  EXPECT_THAT(why(short_job), HasSubstr("0 of the 2 waiting jobs come before it"));

  cluster.StopMaster();
  cluster.StartMaster();

  // After the restart: the same estimate, in the text and in the JSON.
  EXPECT_THAT(why(long_job), HasSubstr(fmt::format("from 3 finished jobs named long by {} in team "
                                                   "default with 1 GPU",
                                                   user)));
  CommandResult json = cluster.Cohort({"why", std::to_string(short_job), "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc.ok()) << json.out;
  const Json& rank = (*doc)["rank"];
  EXPECT_EQ(rank["level"], 0);
  EXPECT_EQ(rank["levels"], 3);
  EXPECT_EQ(rank["promoted"], false);
  ASSERT_TRUE(rank["estimate"].is_object()) << json.out;
  EXPECT_EQ(rank["estimate"]["samples"], 3);
  EXPECT_EQ(rank["estimate"]["basis"],
            fmt::format("named short by {} in team default with 1 GPU", user));
  double short_hours = rank["estimate"]["gpu_hours"].get<double>();
  auto long_doc = ParseJson(cluster.Cohort({"why", std::to_string(long_job), "-o", "json"}).out);
  ASSERT_TRUE(long_doc.ok());
  double long_hours = (*long_doc)["rank"]["estimate"]["gpu_hours"].get<double>();
  EXPECT_GT(short_hours, 0);
  EXPECT_GT(long_hours, short_hours + 0.5 / 3600) << "0.8 s against 0.1 s of sleep";
  EXPECT_EQ((*doc)["ahead"], 0);

  // The GPU frees: the short job starts first, though submitted later.
  ASSERT_TRUE(cluster.client().Kill(blocker).ok());
  Job short_done = cluster.WaitForState(short_job, JobState::kSucceeded);
  Job long_done = cluster.WaitForState(long_job, JobState::kSucceeded);
  ASSERT_TRUE(short_done.placed_at && long_done.placed_at);
  EXPECT_LT(*short_done.placed_at, *long_done.placed_at);
}

}  // namespace
}  // namespace cohort::testing
