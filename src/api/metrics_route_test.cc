// GET /metrics as the API serves it: the format's content type, the cluster's series, and
// request latencies labelled by route pattern (never by the raw path); and the bound on a job's
// training-metric chart (GET /api/v1/jobs/{id}/metrics?tag=T) over many tasks. The real ApiServer
// and Master (with its SQLite metric store), served without a socket.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <filesystem>
#include <map>

#include "api/api_server.h"
#include "api/hand_run_loop.h"
#include "api/process_metrics.h"
#include "api/request_metrics.h"
#include "api/served_master_test_fixture.h"
#include "model/json.h"
#include "model/metric.h"
#include "scheduler/scheduler.h"
#include "testing/memory_state_store.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class MetricsRouteTest : public ServedMaster {};

TEST_F(MetricsRouteTest, AnswersTheTextFormatWithTheClusterTheApiAndTheProcess) {
  HttpResponse r = Serve("GET", "/metrics");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(r.body, HasSubstr("# TYPE cohort_gpus gauge\n"));
  EXPECT_THAT(r.body, HasSubstr("cohort_jobs{team=\"default\",state=\"pending\"} 0\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE cohort_scheduling_pass_seconds histogram\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE cohort_api_request_duration_seconds histogram\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE process_resident_memory_bytes gauge\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE process_open_fds gauge\n"));
}

TEST_F(MetricsRouteTest, RequestsAreLabelledByRoutePatternMethodAndStatusClass) {
  for (const char* path : {"/api/v1/jobs/1", "/api/v1/jobs/2", "/api/v1/jobs/x"}) {
    Serve("GET", path);  // 404, 404, 400
  }
  Serve("GET", "/api/v1/nodes");
  Serve("GET", "/no/such/path/12345");
  Serve("BREW", "/api/v1/nodes");  // a 405, with a method nobody knows
  std::string text = Serve("GET", "/metrics").body;
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(cohort_api_request_duration_seconds_count{route="/api/v1/jobs/{id}",method="GET",code="4xx"} 3)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(cohort_api_request_duration_seconds_count{route="/api/v1/nodes",method="GET",code="2xx"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(cohort_api_request_duration_seconds_count{route="other",method="GET",code="4xx"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(cohort_api_request_duration_seconds_count{route="other",method="other",code="4xx"} 1)"));
  // The manual clock did not move during those calls: all in the first bucket.
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(cohort_api_request_duration_seconds_bucket{route="/api/v1/nodes",method="GET",code="2xx",le="0.0001"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr("/api/v1/jobs/1")));
  EXPECT_THAT(text, Not(HasSubstr("12345")));
  EXPECT_THAT(text, Not(HasSubstr("BREW")));
}

// A tag that every one of a job's 1,000 tasks has (the most series a job may have): one chart
// answer carries the first kMaxChartLines lines, sharing kMaxChartPoints, and says so; any task
// can still be read whole by name.
TEST_F(MetricsRouteTest, AChartOverAThousandTasksIsBoundedAndSaysWhatItLeftOut) {
  HttpResponse submitted =
      Serve("POST", "/api/v1/jobs", {},
            R"({"name": "wide", "tasks": [{"role": "main", "replicas": 1, "command": ["true"]}]})");
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  const JobId id = (*ParseJson(submitted.body))["id"].get<JobId>();
  constexpr int kTasks = 1000;
  constexpr int kPoints = 150;
  for (int t = 0; t < kTasks; ++t) {
    std::vector<TaggedPoint> points;
    for (int step = 0; step < kPoints; ++step) {
      points.push_back(TaggedPoint{"loss", MetricPoint{step, 1e9 + step, 1.0 / (step + 1)}});
    }
    auto stored = master_->metrics().store().Append(id, fmt::format("main/{}", t), points);
    ASSERT_TRUE(stored.ok() && stored->stored == kPoints) << t;
  }
  const std::string path = fmt::format("/api/v1/jobs/{}/metrics", id);

  HttpResponse all = Serve("GET", path, {{"tag", "loss"}, {"max_points", "10000"}});
  ASSERT_EQ(all.status, 200) << all.body;
  Json chart = *ParseJson(all.body);
  EXPECT_EQ(chart["max_points"], kMaxChartPoints / kMaxChartLines);
  EXPECT_EQ(chart["lines_left_out"], kTasks - kMaxChartLines);
  ASSERT_EQ(chart["lines"].size(), kMaxChartLines);
  EXPECT_EQ(chart["lines"][0]["task"], "main/0");
  size_t rows = 0;
  for (const Json& line : chart["lines"]) {
    EXPECT_EQ(line["points"], kPoints);
    EXPECT_GT(line["level"].get<int>(), 0) << line["task"] << ": read coarser than raw";
    rows += line["rows"].size();
  }
  EXPECT_LE(rows, 2 * kMaxChartPoints + 33 * kMaxChartLines);
  EXPECT_LT(all.body.size(), 2'000'000u) << "the whole answer stays small";

  // One task by name: its line whole, nothing left out.
  HttpResponse one = Serve("GET", path, {{"tag", "loss"}, {"task", "main/999"}});
  ASSERT_EQ(one.status, 200) << one.body;
  Json single = *ParseJson(one.body);
  EXPECT_EQ(single["max_points"], 1000);
  EXPECT_EQ(single["lines_left_out"], 0);
  ASSERT_EQ(single["lines"].size(), 1u);
  EXPECT_EQ(single["lines"][0]["rows"].size(), static_cast<size_t>(kPoints));
}

TEST(RequestMetrics, TimesUntilTheAnswerStarts) {
  RequestMetrics metrics;
  metrics.Observe("/api/v1/jobs/{id}/logs", "GET", 200, std::chrono::milliseconds(40));
  metrics.Observe("/api/v1/agents/{node}/sync", "POST", 200, std::chrono::seconds(20));
  metrics.Observe("/api/v1/jobs", "POST", 507, std::chrono::milliseconds(3));
  PrometheusText out;
  metrics.Write(out);
  const std::string& text = out.text();
  // A long poll that waited 20 s lands below the 30 s bound that exists for long polls.
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(_bucket{route="/api/v1/agents/{node}/sync",method="POST",code="2xx",le="10"} 0)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(_bucket{route="/api/v1/agents/{node}/sync",method="POST",code="2xx",le="30"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(_sum{route="/api/v1/jobs/{id}/logs",method="GET",code="2xx"} 0.04)"));
  EXPECT_THAT(text, HasSubstr(R"(_count{route="/api/v1/jobs",method="POST",code="5xx"} 1)"));
}

TEST(TimedResponder, ReportsTheFirstAnswerOnly) {
  auto inner = std::make_shared<RecordingResponder>();
  std::vector<int> statuses;
  TimedResponder timed(inner, [&](int status) { statuses.push_back(status); });
  timed.StartStream(200, "text/plain");
  timed.Send(HttpResponse{500, "", ""});
  EXPECT_EQ(statuses, std::vector<int>{200});
}

TEST(ProcessMetrics, ReadsProcStatFieldsAfterTheCommandName) {
  // A command name with a space and a ')' in it; utime 250 and stime 50 ticks, start 1000 ticks
  // after boot, 8 MiB virtual, 100 pages resident.
  std::string stat =
      "4242 (we ird) x) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 3 0 1000 8388608 100 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
  auto s = ParseProcStat(stat, 100, 4096, 1'700'000'000);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);
  EXPECT_EQ(s->virtual_memory_bytes, 8388608);
  EXPECT_EQ(s->resident_memory_bytes, 100 * 4096);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'000'010.0);
  EXPECT_FALSE(ParseProcStat("", 100, 4096, 0).has_value());
  EXPECT_FALSE(ParseProcStat("1 (short) S 1 2", 100, 4096, 0).has_value());
}

}  // namespace
}  // namespace cohort::api
