// Training metrics end to end (docs/observability.md): a real task prints cohort-metric lines
// through python/cohort_metrics.py and writes TensorBoard event files (the TF2 fixture of
// ../shared, and a file PyTorch's SummaryWriter wrote, appended in two pieces while the job runs)
// under $COHORT_LOG_DIR; the agent reads and ships them, the master keeps them across a restart,
// and `cohort metrics` and the API show exactly what was written, to whom the roles allow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "common/strings.h"
#include "model/json.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

const std::string kPyTorchFixture = "events.out.tfevents.1622543341.host.86862.0";
const std::string kTf2Fixture = "events.out.tfevents.1585499054.host.11684.5.v2";

struct Expected {
  int64_t step;
  double value;
};

std::vector<Expected> PyTorchPoints() {
  std::vector<Expected> points;
  auto lines = Split(ReadFileOrEmpty(SourceDir() + "/tests/fixtures/tfevents/" + kPyTorchFixture +
                                     ".expected.csv"),
                     '\n');
  for (size_t i = 1; i < lines.size(); ++i) {
    auto cells = Split(lines[i], ',');
    if (cells.size() != 3) continue;
    points.push_back({std::stoll(std::string(cells[0])), std::stod(std::string(cells[2]))});
  }
  return points;
}

Json Metrics(LocalCluster& cluster, JobId id, const std::string& query = "",
             const std::string& token = "") {
  auto http = cluster.Http(token);
  EXPECT_TRUE(http.ok());
  auto r = (*http)->Request("GET", fmt::format("/api/v1/jobs/{}/metrics{}", id, query));
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return Json();
  auto doc = ParseJson(r->body);
  EXPECT_TRUE(doc.ok()) << r->body;
  if (!doc.ok()) return Json();
  (*doc)["http_status"] = r->status;
  return *doc;
}

int64_t Points(const Json& series, const std::string& tag) {
  for (const auto& s : series["series"]) {
    if (s["tag"] == tag) return s["points"].get<int64_t>();
  }
  return 0;
}

TEST(Metrics, LinesAndEventFilesOfARealTaskReachTheMasterExactlyAndSurviveARestart) {
  LocalCluster cluster("metrics");
  cluster.StartMaster();
  cluster.StartAgent("node-1", 1);
  const std::string fixtures = SourceDir() + "/tests/fixtures/tfevents/";
  const std::string shared = SourceDir() + "/../shared/fixtures/tfevents/";
  // The PyTorch file arrives in two pieces, the first cut inside a record, a poll apart.
  const std::string script = fmt::format(
      R"(set -e
cp {tf2} "$COHORT_LOG_DIR/"
mkdir -p "$COHORT_LOG_DIR/run1"
head -c 2000 {pt} > "$COHORT_LOG_DIR/run1/{name}"
/usr/bin/python3 -c 'import sys; sys.path.insert(0, "{python}"); import cohort_metrics as m
for i in range(10): m.log(step=i, loss=1.0 / (i + 1), metrics={{"train/acc": i / 10}})'
sleep 1
tail -c +2001 {pt} >> "$COHORT_LOG_DIR/run1/{name}"
echo done)",
      fmt::arg("tf2", shared + kTf2Fixture), fmt::arg("pt", fixtures + kPyTorchFixture),
      fmt::arg("name", kPyTorchFixture), fmt::arg("python", SourceDir() + "/python"));
  JobId id = cluster.Submit(fmt::format(R"(
name: metrics
tasks:
  - role: main
    resources: {{gpus: 1}}
    command: [/bin/sh, -c, {}]
)",
                                        Json(script).dump()));
  cluster.WaitForState(id, JobState::kSucceeded);
  Json series;
  ASSERT_TRUE(WaitFor(
      [&] {
        series = Metrics(cluster, id);
        return Points(series, "run1/strict/foo") == 100 && Points(series, "my_metric") == 100 &&
               Points(series, "loss") == 10;
      },
      std::chrono::seconds(20)))
      << series.dump(2);
  ASSERT_EQ(series["series"].size(), 4u) << series.dump(2);
  EXPECT_EQ(Points(series, "train/acc"), 10);
  for (const auto& s : series["series"]) EXPECT_EQ(s["task"], "main/0");

  auto check = [&](const std::string& when) {
    Json tf2 = Metrics(cluster, id, "?tag=my_metric");
    ASSERT_EQ(tf2["lines"].size(), 1u) << when;
    const Json& rows = tf2["lines"][0]["rows"];
    ASSERT_EQ(rows.size(), 100u) << when;
    for (int64_t step = 0; step < 100; ++step) {
      EXPECT_EQ(rows[step][0].get<int64_t>(), step) << when;
      EXPECT_DOUBLE_EQ(rows[step][2].get<double>(), 0.5 * step) << when;
    }
    Json pt = Metrics(cluster, id, "?tag=run1%2Fstrict%2Ffoo");
    ASSERT_EQ(pt["lines"].size(), 1u) << when;
    auto expected = PyTorchPoints();
    ASSERT_EQ(expected.size(), 100u);
    ASSERT_EQ(pt["lines"][0]["rows"].size(), 100u) << when;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(pt["lines"][0]["rows"][i][0].get<int64_t>(), expected[i].step) << when;
      EXPECT_DOUBLE_EQ(pt["lines"][0]["rows"][i][2].get<double>(), expected[i].value) << when;
    }
    // Downsampled on request: 100 points as 25 means of 4.
    Json coarse = Metrics(cluster, id, "?tag=my_metric&max_points=25");
    ASSERT_EQ(coarse["lines"][0]["rows"].size(), 25u) << when;
    EXPECT_EQ(coarse["lines"][0]["level"], 1);
    EXPECT_DOUBLE_EQ(coarse["lines"][0]["rows"][0][2].get<double>(), 0.75) << "mean of 0..1.5";
  };
  check("before the restart");

  auto table = cluster.Cohort({"metrics", std::to_string(id)});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("my_metric"));
  EXPECT_THAT(table.out, HasSubstr("0..99"));
  EXPECT_THAT(table.out, HasSubstr("▁"));
  auto csv = cluster.Cohort({"metrics", std::to_string(id), "--tag", "loss", "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(Split(Trim(csv.out), '\n').size(), 11u) << csv.out;
  EXPECT_THAT(csv.out, HasSubstr("main/0,9,"));

  auto status = cluster.Cohort({"status", std::to_string(id)});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("Metrics (cohort metrics"));
  EXPECT_THAT(status.out, ::testing::ContainsRegex("my_metric +main/0 +99 +49.5 +100"));

  cluster.StopMaster();
  cluster.StartMaster();
  check("after the restart");

  // Another team's user sees that the job exists, not its metrics.
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  ASSERT_EQ((*http)->Request("PUT", "/api/v1/teams/other", R"({"guaranteed_gpus": 0})")->status,
            200);
  ASSERT_EQ((*http)->Request("POST", "/api/v1/users", R"({"name": "eve"})")->status, 201);
  ASSERT_EQ(
      (*http)->Request("PUT", "/api/v1/teams/other/members/eve", R"({"role": "member"})")->status,
      200);
  ASSERT_EQ((*http)->Request("DELETE", "/api/v1/teams/default/members/eve")->status, 200);
  auto token = (*http)->Request("POST", "/api/v1/tokens", R"({"user": "eve"})");
  ASSERT_TRUE(token.ok());
  std::string eve = (*ParseJson(token->body))["token"].get<std::string>();
  EXPECT_EQ(Metrics(cluster, id, "", eve)["http_status"], 403);
}

}  // namespace
}  // namespace cohort::testing
