// Input found by testing a local cluster, refused with a clear message naming the field, by the
// CLI, the API and the agent: a workdir that escapes, YAML tags, a directory or an oversized
// file as a spec, absurd registrations.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "client/http_client.h"
#include "model/json.h"
#include "model/limits.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<client::HttpClient> Http(const LocalCluster& cluster,
                                         const std::string& token = {}) {
  auto http = cluster.Http(token);
  EXPECT_TRUE(http.ok());
  return std::move(http).value();
}

// The error document of a refused request.
Json ErrorOf(const StatusOr<client::HttpResult>& r, int status) {
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return Json();
  EXPECT_EQ(r->status, status) << r->body;
  auto doc = ParseJson(r->body);
  EXPECT_TRUE(doc.ok()) << r->body;
  return doc.ok() ? (*doc)["error"] : Json();
}

const std::string kDotDot =
    "must not contain a '..' component: a relative workdir stays within its directory; write an "
    "absolute path to run elsewhere";

TEST(BoundedInput, AWorkdirThatEscapesIsRefusedByTheCliAndTheApi) {
  LocalCluster cluster("workdir");
  cluster.StartMaster();
  std::filesystem::create_directories(cluster.dir() + "/a/b/c");
  std::string path = cluster.dir() + "/a/b/c/job.yaml";
  std::ofstream(path) << "name: escape\ntasks:\n  - role: w\n    command: [pwd]\n"
                         "    workdir: ../../../..\n";
  auto cli = cluster.Cohort({"submit", path});
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_THAT(cli.err, HasSubstr("tasks[0].workdir: \"../../../..\" " + kDotDot));

  auto http = Http(cluster);
  auto r = http->Request("POST", "/api/v1/jobs",
                         "name: escape\ntasks: [{role: w, command: [pwd], workdir: ../../..}]\n",
                         "application/yaml");
  Json error = ErrorOf(r, 400);
  EXPECT_EQ(error["details"], Json::array({"tasks[0].workdir: \"../../..\" " + kDotDot}));
  EXPECT_TRUE(cluster.client().ListJobs()->empty());
}

TEST(BoundedInput, ARelativeWorkdirFromTheApiRunsBelowTheTasksDirectory) {
  LocalCluster cluster("relwork");
  cluster.StartMaster();
  cluster.StartAgent("agent-0", 0);
  JobId id = cluster.Submit("name: rel\ntasks: [{role: w, command: [pwd], workdir: data/run}]\n");
  Job job = cluster.WaitForState(id, JobState::kSucceeded);
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.message;
  std::string pwd = cluster.Logs(id);
  EXPECT_THAT(pwd, HasSubstr(cluster.AgentDir("agent-0") + "/tasks/"));
  EXPECT_THAT(pwd, HasSubstr("/work/data/run\n"));
}

TEST(BoundedInput, YamlTagsAreRefusedNamingTheField) {
  LocalCluster cluster("yamltag");
  cluster.StartMaster();
  constexpr const char* kTagged =
      "name: tagged\ntasks:\n  - role: w\n    command: [!!python/object:os.system x]\n";
  const std::string expected =
      "tasks[0].command[0]: the YAML tag \"!!python/object:os.system\" is not allowed; a job spec "
      "holds plain values only (tags allowed: !!str, !!int, !!float, !!bool, !!null, !!map, "
      "!!seq)";
  std::string path = cluster.dir() + "/tagged.yaml";
  std::ofstream(path) << kTagged;
  auto cli = cluster.Cohort({"submit", path});
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_THAT(cli.err, HasSubstr(expected));

  Json error =
      ErrorOf(Http(cluster)->Request("POST", "/api/v1/jobs", kTagged, "application/yaml"), 400);
  EXPECT_EQ(error["details"], Json::array({expected}));
  EXPECT_TRUE(cluster.client().ListJobs()->empty());
}

TEST(BoundedInput, TheCliSaysADirectoryIsNotASpecAndRefusesAnOversizedFile) {
  LocalCluster cluster("specfile");
  cluster.StartMaster();
  std::string dir = cluster.dir() + "/jobs";
  std::filesystem::create_directories(dir);
  auto r = cluster.Cohort({"submit", dir + "/"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "cohort submit: " + dir +
                       "/: is a directory, not a spec file; give the YAML or JSON file in it\n");

  std::string big = cluster.dir() + "/big.yaml";
  std::ofstream(big) << "name: big\ntasks: [{role: w, command: [x]}]\n#"
                     << std::string(static_cast<size_t>(kMaxSpecBytes), 'x') << "\n";
  r = cluster.Cohort({"submit", big});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, fmt::format("cohort submit: {}: {} bytes is too large; a job spec is at most "
                               "262144 bytes (256Ki)\n",
                               big, std::filesystem::file_size(big)));
  EXPECT_TRUE(cluster.client().ListJobs()->empty());

  // The API refuses the same body before reading it.
  std::ifstream in(big);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Json error =
      ErrorOf(Http(cluster)->Request("POST", "/api/v1/jobs", text, "application/yaml"), 413);
  EXPECT_EQ(error["message"], fmt::format("the request body is {} bytes; POST /api/v1/jobs takes "
                                          "at most 256 KiB",
                                          text.size()));
}

TEST(BoundedInput, AbsurdRegistrationsAndNodeIdsAreRefused) {
  LocalCluster cluster("register");
  cluster.StartMaster();
  auto http = Http(cluster, cluster.join_token());
  Json node{{"id", "../../x"},
            {"address", "127.0.0.1"},
            {"cpus", -8},
            {"memory_bytes", -1},
            {"gpus", Json::array()},
            {"gpu_links", Json::array()},
            {"gpu_source", "declared"},
            {"ports", {{"first", 30000}, {"last", 30999}}},
            {"labels", Json::object()},
            {"agent_version", "0.1.0"}};
  Json error = ErrorOf(http->Request("POST", "/api/v1/agents/register", node.dump()), 400);
  EXPECT_EQ(error["message"], "invalid node registration");
  EXPECT_EQ(error["details"],
            Json::array({"id: \"../../x\" is not a valid node id: use 1 to 64 letters, digits, "
                         "'.', '_' or '-', starting with a letter or digit",
                         "cpus: must be greater than 0 and at most 16384, got -8",
                         "memory_bytes: must be greater than 0 and at most 70368744177664 (64Ti), "
                         "got -1"}));
  node["id"] = "n1";
  node["memory_bytes"] = 1 << 30;
  node["cpus"] = 1e300;
  error = ErrorOf(http->Request("POST", "/api/v1/agents/register", node.dump()), 400);
  EXPECT_EQ(error["message"], "malformed node: cpus: 1e+300 is out of range");
  EXPECT_TRUE((*cluster.client().Nodes())["nodes"].empty());

  // A node id from the URL: "%2E%2E" is "..". No credential names such a node, so the call is
  // refused before its syntax matters.
  error = ErrorOf(http->Request("POST", "/api/v1/agents/%2E%2E/sync", R"({"tasks": []})"), 403);
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("only that node's agent may"));
}

TEST(BoundedInput, AnAgentChecksItsNodeBeforeRegistering) {
  LocalCluster cluster("agentcheck");
  cluster.StartMaster();
  auto r = RunCommand({BinDir() + "/cohortd", "agent", "--master", cluster.url(), "--name", "../x",
                       "--address", "a,b", "--gpus", "0", "--data-dir", cluster.dir() + "/agent"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("cohortd agent: invalid node registration (--name, --address, "
                               "--cpus, --memory, --label):\n"
                               "  id: \"../x\" is not a valid node id: use 1 to 64 letters, "
                               "digits, '.', '_' or '-', starting with a letter or digit\n"
                               "  address: \"a,b\" is not a host name or IP address"));
  EXPECT_TRUE((*cluster.client().Nodes())["nodes"].empty());
}

}  // namespace
}  // namespace cohort::testing
