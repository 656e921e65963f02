// What one submission and one user's queue may cost the master, as a client sees it over the API
// (docs/reliability.md, "Floods and hostile input"): a spec whose tasks' text is over its bound is
// a 400 naming the group and the limit; a submission beyond a queue cap is a 429 naming the cap.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/served_master_test_fixture.h"
#include "model/json.h"

namespace cohort::api {
namespace {

using ::testing::HasSubstr;

class SubmitBounds : public ServedMaster {
 protected:
  void Configure(master::MasterConfig& config) override { config.max_queued_per_user = 3; }

  HttpResponse Submit(const Json& spec) { return Serve("POST", "/api/v1/jobs", {}, spec.dump()); }

  static Json Spec(int replicas) {
    return Json{{"name", "train"},
                {"tasks", Json::array({Json{{"role", "worker"},
                                            {"replicas", replicas},
                                            {"command", {"python3", "x.py"}}}})}};
  }
};

// Issue 26's spec: 246 KB, 1,024 replicas of 240 KiB of env, once a 240 MiB desired state.
TEST_F(SubmitBounds, TheSpecOfIssue26IsRefusedNamingTheLimit) {
  Json spec = Spec(1024);
  Json env = Json::object();
  for (int i = 0; i < 8; ++i) env[fmt::format("V{}", i)] = std::string(30 * 1024, 'v');
  spec["tasks"][0]["env"] = env;
  HttpResponse r = Submit(spec);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_THAT(r.body, HasSubstr("tasks[0]: 1024 replicas × 240Ki of command, env and workdir each "
                                "is 240Mi, over the 16Mi limit of a job's tasks' text"));
  EXPECT_TRUE(master_->ListJobs({}).empty());
}

TEST_F(SubmitBounds, ASubmissionBeyondTheUsersQueueCapIs429NamingTheCap) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Submit(Spec(1)).status, 201);
  HttpResponse r = Submit(Spec(1));
  EXPECT_EQ(r.status, 429) << r.body;
  auto doc = ParseJson(r.body);
  ASSERT_TRUE(doc.ok()) << r.body;
  EXPECT_EQ((*doc)["error"]["code"], "too_many_requests") << r.body;
  EXPECT_THAT(r.body, HasSubstr("ada has 3 jobs waiting to start, the most one user may have "
                                "queued (cohortd master --max-queued-per-user 3)"));
  EXPECT_EQ(master_->ListJobs({}).size(), 3u);
}

}  // namespace
}  // namespace cohort::api
