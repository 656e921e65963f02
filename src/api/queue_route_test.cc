// GET /api/v1/queue, the dashboard's queue in one answer, and what a job's JSON says its caller
// may do (allowed_actions): the dashboard copies no rule of the server's.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/served_master_test_fixture.h"
#include "model/job_spec_parser.h"
#include "model/json.h"

namespace cohort::api {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class QueueRoute : public ServedMaster {
 protected:
  // One user queues more jobs here than the default cap allows (docs/api.md, "Queue caps").
  void Configure(master::MasterConfig& config) override { config.max_queued_per_user = 0; }

  Json Get(const std::string& path) {
    HttpResponse r = Serve("GET", path);
    EXPECT_EQ(r.status, 200) << r.body;
    auto doc = ParseJson(r.body);
    EXPECT_TRUE(doc.ok()) << r.body;
    return doc.ok() ? *doc : Json();
  }

  JobId SubmitAsAda(const std::string& name, const std::string& priority) {
    std::string spec = fmt::format(
        R"({{"name": "{}", "priority": "{}", "tasks": [{{"role": "main", "command": ["true"],
            "resources": {{"gpus": 1}}}}]}})",
        name, priority);
    HttpResponse r = Serve("POST", "/api/v1/jobs", {}, spec);
    EXPECT_EQ(r.status, 201) << r.body;
    return ParseJson(r.body).value()["id"].get<JobId>();
  }
};

// No node: every job waits. The default policy puts priority first within a team, so the order
// of the answer is not submission order; a job of a team ada has no role in comes last,
// redacted and unexplained, with nothing she may do to it (as the dashboard showed it).
TEST_F(QueueRoute, PendingJobsInThePolicysOrderWithWhyAndWhatTheCallerMayDo) {
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 2, std::nullopt}).ok());
  auto theirs = ParseJobSpec(
      R"({"name": "theirs", "team": "vision", "tasks": [{"role": "main", "command": ["true"]}]})",
      "spec");
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  auto submitted = master_->Submit(*theirs, "bob");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  JobId low = SubmitAsAda("low", "low");
  JobId high = SubmitAsAda("high", "high");
  Json queue = Get("/api/v1/queue");
  ASSERT_EQ(queue["pending"].size(), 3u) << queue.dump();
  std::vector<JobId> order;
  for (const auto& entry : queue["pending"]) order.push_back(entry["job"]["id"].get<JobId>());
  EXPECT_THAT(order, ElementsAre(high, low, 1));
  const Json& first = queue["pending"][0];
  // Bob's job is first in the policy's order (vision is below its guarantee) but ada may not
  // see why: it is listed after what she may read, and counts in her jobs' places.
  EXPECT_EQ(first["why"]["ahead"], 1);
  EXPECT_EQ(queue["pending"][1]["why"]["ahead"], 2);
  EXPECT_FALSE(first["why"]["summary"].get<std::string>().empty());
  EXPECT_THAT(first["job"]["allowed_actions"], ElementsAre("kill", "resubmit"));
  const Json& last = queue["pending"][2];
  EXPECT_EQ(last["job"]["redacted"], true);
  EXPECT_TRUE(last["why"]["ahead"].is_null());
  EXPECT_THAT(last["job"]["allowed_actions"], IsEmpty());
  // The teams as GET /teams has them, borrowing included.
  ASSERT_TRUE(queue["teams"].is_array());
  bool vision = false;
  for (const auto& t : queue["teams"]) {
    EXPECT_TRUE(t.contains("borrowed_gpus")) << t.dump();
    if (t["name"] == "vision") vision = t["borrowed_gpus"] == 0 && t["guaranteed_gpus"] == 2;
  }
  EXPECT_TRUE(vision) << queue["teams"].dump();
}

// An ended job may not be killed; its owner may still resubmit it.
TEST_F(QueueRoute, AnEndedJobAllowsOnlyResubmit) {
  JobId id = SubmitAsAda("short", "normal");
  ASSERT_EQ(Serve("POST", fmt::format("/api/v1/jobs/{}/kill", id)).status, 200);
  Json job = Get(fmt::format("/api/v1/jobs/{}", id));
  ASSERT_EQ(job["state"], "KILLED") << job.dump();
  EXPECT_THAT(job["allowed_actions"], ElementsAre("resubmit"));
  EXPECT_THAT(Get("/api/v1/queue")["pending"], IsEmpty());
}

// However many jobs wait, one answer lists at most kMaxQueueListed and says how many it left out.
TEST_F(QueueRoute, TheAnswerIsBoundedAndSaysHowManyItLeftOut) {
  const size_t total = ApiServer::kMaxQueueListed + 5;
  for (size_t i = 0; i < total; ++i) {
    auto spec =
        ParseJobSpec(R"({"name": "w", "tasks": [{"role": "main", "command": ["true"]}]})", "spec");
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(master_->Submit(*spec, "ada").ok());
  }
  Json queue = Get("/api/v1/queue");
  EXPECT_EQ(queue["pending"].size(), ApiServer::kMaxQueueListed);
  EXPECT_EQ(queue["more"], 5);
}

}  // namespace
}  // namespace cohort::api
