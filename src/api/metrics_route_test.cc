// GET /metrics as the API serves it: the format's content type, the cluster's series, and
// request latencies labelled by route pattern (never by the raw path). The real ApiServer and
// Master, served without a socket.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <filesystem>

#include "api/api_server.h"
#include "api/hand_run_loop.h"
#include "api/process_metrics.h"
#include "api/request_metrics.h"
#include "model/json.h"
#include "scheduler/scheduler.h"
#include "testing/memory_state_store.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class MetricsRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cohort-metrics-route-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    master::MasterConfig config;
    config.data_dir = dir_.string();
    config.fail_stop = [](const Status& s) { FAIL() << s.ToString(); };
    auto m =
        master::Master::Create(config, disk_.Reopen(), scheduler::NewScheduler(), clock_, loop_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
    api_ = std::make_unique<ApiServer>(ioc_, *master_);
    ASSERT_TRUE(master_->accounts().CreateUser(User{"ada", false, {}, {}, {}, {}}).ok());
    token_ = master_->accounts().Issue(TokenKind::kUser, "ada", "test")->token;
  }
  void TearDown() override {
    api_->Stop();
    api_.reset();
    master_.reset();
    fs::remove_all(dir_);
  }

  HttpResponse Serve(std::string method, std::string path) {
    HttpRequest request;
    request.method = std::move(method);
    request.path = std::move(path);
    request.headers["authorization"] = "Bearer " + token_;
    request.remote = "127.0.0.1:40000";
    auto recorder = std::make_shared<RecordingResponder>();
    api_->Handle(std::move(request), recorder);
    EXPECT_TRUE(loop_.Settle(ioc_));
    EXPECT_EQ(recorder->answers, 1);
    return recorder->response;
  }

  fs::path dir_;
  boost::asio::io_context ioc_;
  HandRunLoop loop_;
  ManualClock clock_;
  testing::MemoryStateStore disk_;
  std::unique_ptr<master::Master> master_;
  std::unique_ptr<ApiServer> api_;
  std::string token_;
};

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
