// (f) A bad spec is refused, every problem named by its field, by the CLI and by the API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "client/http_client.h"
#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kBadSpec = R"(name: bad
tasks:
  - role: worker
    replicas: 2
    resouces: {gpus: 1}
    resources: {memory: 32GB}
    command: [python3, train.py]
)";

TEST(BadSpec, CliNamesTheFieldsAndSubmitsNothing) {
  LocalCluster cluster("badspec");
  cluster.StartMaster();
  std::string path = cluster.dir() + "/bad.yaml";
  std::ofstream(path) << kBadSpec;
  auto r = cluster.Cohort({"submit", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("tasks[0].resources.memory: \"32GB\" is not a size; use e.g. 32Gi"));
  EXPECT_THAT(r.err, HasSubstr("tasks[0].resouces: unknown field; did you mean \"resources\"?"));
  EXPECT_TRUE(cluster.client().ListJobs()->empty());
}

TEST(BadSpec, ApiAnswers400WithEveryDetail) {
  LocalCluster cluster("badspecapi");
  cluster.StartMaster();
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  auto r = (*http)->Request("POST", "/api/v1/jobs", kBadSpec, "application/yaml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  auto doc = ParseJson(r->body);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["error"]["code"], "invalid_argument");
  EXPECT_EQ((*doc)["error"]["details"].size(), 2u);
  // Other errors: unknown job, bad id, unknown route, malformed query.
  EXPECT_EQ((*http)->Request("GET", "/api/v1/jobs/42")->status, 404);
  EXPECT_EQ((*http)->Request("GET", "/api/v1/jobs/abc")->status, 400);
  EXPECT_EQ((*http)->Request("GET", "/api/v2/jobs")->status, 404);
  EXPECT_EQ((*http)->Request("GET", "/api/v1/jobs?state=DANCING")->status, 400);
  auto join = cluster.Http(cluster.join_token());
  ASSERT_TRUE(join.ok());
  EXPECT_EQ((*join)->Request("POST", "/api/v1/agents/register", "{\"id\": 3}")->status, 400);
  // Only a node's own credential syncs it; no other token gets as far as looking for the node.
  EXPECT_EQ((*http)->Request("POST", "/api/v1/agents/ghost/sync", R"({"tasks": []})")->status, 403);
  EXPECT_EQ((*http)->Request("POST", "/api/v1/jobs", "not: [valid")->status, 400);
  EXPECT_TRUE(cluster.client().ListJobs()->empty());
}

}  // namespace
}  // namespace cohort::testing
