// HTTPS between the master, agents and the CLI (docs/security.md): a cluster whose master
// serves TLS with a certificate of the cluster's CA runs a job end to end; clients without the
// CA, or speaking plain HTTP, are refused with errors that say what to do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

CommandResult Cohort(std::vector<std::string> args, std::map<std::string, std::string> env) {
  args.insert(args.begin(), BinDir() + "/cohort");
  return RunCommand(args, env);
}

TEST(Tls, AClusterRunsAJobOverHttpsAndOnlyClientsWithItsCaGetIn) {
  LocalCluster cluster("tls", LocalClusterOptions{.tls = true});
  cluster.StartMaster();
  ASSERT_THAT(cluster.url(), StartsWith("https://127.0.0.1:"));
  cluster.StartAgent("node-a", 2);  // registers and long-polls over TLS

  // The task writes, waits, writes again: a follower gets both parts through one chunked
  // stream over TLS.
  JobId id = cluster.Submit(R"(
name: over-tls
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [sh, -c, "echo first; sleep 1; echo second"]
)");
  ASSERT_GT(id, 0u);
  auto follow = cluster.Cohort({"logs", "-f", std::to_string(id)});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_EQ(follow.out, "first\nsecond\n");
  cluster.WaitForState(id, JobState::kSucceeded);

  // The CLI with the CA given as a flag.
  const std::map<std::string, std::string> master = {{"COHORT_MASTER", cluster.url()},
                                                     {"COHORT_TOKEN", cluster.admin_token()}};
  auto jobs = Cohort({"--ca-file", cluster.ca_file(), "jobs"}, master);
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_THAT(jobs.out, HasSubstr("over-tls"));
  EXPECT_THAT(jobs.out, HasSubstr("SUCCEEDED"));

  // Without it, the master's certificate is of an unknown CA.
  auto stranger = Cohort({"jobs"}, master);
  EXPECT_EQ(stranger.exit_code, 1);
  EXPECT_THAT(stranger.err,
              HasSubstr("certificate verify failed for " + cluster.url() +
                        ": unknown CA (not one of the system's); pass --ca-file with the "
                        "cluster's CA (cohortd cert ca)"));
  // Plain HTTP to the TLS port is told to use https://.
  std::string plain_url = "http://" + cluster.url().substr(std::string("https://").size());
  auto plain = Cohort({"jobs"}, {{"COHORT_MASTER", plain_url}});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.err, HasSubstr("this port serves HTTPS, not plain HTTP: use an https:// "
                                   "master URL"));

  // An agent without the CA file cannot join, and its log says why.
  cluster.LaunchAgent("node-b", 1, {}, {}, /*trust_ca=*/false);
  std::string log;
  EXPECT_TRUE(WaitFor([&] {
    log = ReadFileOrEmpty(cluster.AgentLog("node-b"));
    return log.find("certificate verify failed") != std::string::npos;
  })) << log;
  EXPECT_THAT(log, HasSubstr("certificate verify failed for " + cluster.url() +
                             ": unknown CA (not one of the system's); pass --ca-file with the "
                             "cluster's CA (cohortd cert ca)"));
  auto nodes = cluster.client().Nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ((*nodes)["nodes"].size(), 1u);
  EXPECT_EQ((*nodes)["nodes"][0]["id"], "node-a");
}

TEST(Tls, UpWithTlsPrintsWhatToExportAndDownStopsIt) {
  std::string dir = "/tmp/cohort-it-up-tls-" + std::to_string(::getpid());
  fs::remove_all(dir);
  int port = 19000 + static_cast<int>(::getpid() % 1000);
  auto up = Cohort({"up", "--tls", "--agents", "1", "--gpus-per-agent", "1", "--port",
                    std::to_string(port), "--data-dir", dir},
                   {});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  std::string url = "https://127.0.0.1:" + std::to_string(port);
  std::string ca = dir + "/tls/ca.crt";
  EXPECT_EQ(up.out, "export COHORT_MASTER=" + url + "\nexport COHORT_CA_FILE=" + ca + "\n");

  auto nodes = Cohort({"nodes"}, {{"COHORT_MASTER", url}, {"COHORT_CA_FILE", ca}});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("agent-0  READY"));

  auto down = Cohort({"down", "--data-dir", dir}, {});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_THAT(down.err, HasSubstr("stopped agent-0, master"));
  // Up again keeps the CA, so that an exported COHORT_CA_FILE stays good.
  std::string first_ca = ReadFileOrEmpty(ca);
  up = Cohort({"up", "--tls", "--agents", "0", "--port", std::to_string(port), "--data-dir", dir},
              {});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(ReadFileOrEmpty(ca), first_ca);
  auto jobs = Cohort({"jobs"}, {{"COHORT_MASTER", url}, {"COHORT_CA_FILE", ca}});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  Cohort({"down", "--data-dir", dir}, {});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cohort::testing
