// Notebooks end to end (issue 31, item 5): `cohort notebook` starts Debian's jupyter-notebook as a
// session's task on a real agent, and a browser (notebook_client.py: a cookie jar and tornado's
// WebSocket client) opens the printed link and uses Jupyter only through the master: its tree
// page, a kernel started over REST, code run over the kernel's WebSocket. Left alone, the
// notebook is warned on its page and ended, its GPU freed. And no one else gets in.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A master whose sessions end after 20 s with no use, warned 8 s before, and one agent whose one
// fake GPU is idle.
void StartNotebookCluster(LocalCluster& cluster) {
  std::ofstream(cluster.dir() + "/gpu-load") << "0 0 1048576\n";
  cluster.StartMaster({"--max-idle-timeout", "20s", "--session-warning", "8s"});
  cluster.StartAgent(
      "nb-node", /*gpus=*/-1, {"--nvml-library", FakeNvmlLibrary(), "--sample-interval", "1s"},
      {{"FAKE_NVML_GPUS", "1"}, {"FAKE_NVML_UTILIZATION_FILE", cluster.dir() + "/gpu-load"}});
}

// `cohort notebook -o json`: the link's answer.
Json StartNotebook(LocalCluster& cluster) {
  auto started =
      cluster.Cohort({"notebook", "--gpus", "1", "--cpus", "0.5", "--no-browser", "-o", "json"});
  EXPECT_EQ(started.exit_code, 0) << started.out << started.err;
  auto link = ParseJson(started.out);
  EXPECT_TRUE(link.ok()) << started.out << started.err;
  return link.ok() ? *link : Json::object();
}

TEST(Notebooks, ALinkOpensJupyterThroughTheMasterItsKernelRunsAndAnIdleOneEnds) {
  LocalCluster cluster("notebook-open");
  StartNotebookCluster(cluster);
  const Json link = StartNotebook(cluster);
  ASSERT_TRUE(link.contains("job")) << link.dump();
  const JobId id = link["job"];
  EXPECT_EQ(link["node"], "nb-node");
  EXPECT_EQ(link["opened"], false);
  const std::string path = link["path"];
  EXPECT_THAT(path, HasSubstr(fmt::format("/api/v1/jobs/{}/notebook/?cohort_link=", id)));
  EXPECT_EQ(link["url"], cluster.url() + path);

  auto browser = RunCommand({"/usr/bin/timeout", "240", "/usr/bin/python3",
                             SourceDir() + "/tests/integration/notebook_client.py", cluster.url(),
                             path, "--watch-idle"});
  const std::string& seen = browser.out;
  EXPECT_EQ(browser.exit_code, 0) << seen << browser.err;
  EXPECT_THAT(seen, HasSubstr("before-link: 401"));
  EXPECT_THAT(seen, HasSubstr(fmt::format("link: cookie for /api/v1/jobs/{}/notebook/", id)));
  EXPECT_THAT(seen, HasSubstr("tree: 200 jupyter=True banner=True"));
  EXPECT_THAT(seen, HasSubstr("kernel: started"));
  EXPECT_THAT(seen, HasSubstr("output: 42")) << "code ran in the kernel, through the master";
  EXPECT_THAT(seen, HasSubstr("download: 200 20971520 bytes intact=True"))
      << "a file larger than an answer the master holds, relayed as it came";
  EXPECT_THAT(seen, HasSubstr("warned: idle for"));
  EXPECT_THAT(seen, HasSubstr("this session ends in"));
  EXPECT_THAT(seen, HasSubstr("ended: this session has ended (KILLED: ended: idle for 20s"));
  EXPECT_THAT(seen, HasSubstr("after-end: 409"));

  Job ended = cluster.WaitForState(id, JobState::kKilled);
  EXPECT_THAT(ended.message, HasSubstr("ended: idle for 20s (its GPU idle and no input)"));
  // The link was recorded: who let a browser into whose notebook.
  auto log = cluster.client().Audit({{"limit", "100"}});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  int links = 0;
  for (const Json& e : (*log)["entries"]) {
    if (e.value("path", "") == fmt::format("/api/v1/jobs/{}/notebook-link", id)) ++links;
  }
  EXPECT_EQ(links, 1);
  // Its GPU is free for the next job.
  JobId next = cluster.Submit(R"(
name: next
tasks: [{role: main, resources: {gpus: 1, cpus: 0.1}, command: [sh, -c, "exit 0"]}]
)");
  EXPECT_EQ(cluster.WaitForState(next, JobState::kSucceeded).state, JobState::kSucceeded);
}

TEST(Notebooks, OnlyItsOwnerGetsALinkAndJupyterHasNoOpenDoor) {
  LocalCluster cluster("notebook-owner");
  StartNotebookCluster(cluster);
  const Json link = StartNotebook(cluster);
  ASSERT_TRUE(link.contains("job")) << link.dump();
  const JobId id = link["job"];
  // Another user, with a token of their own, gets no link.
  auto created = cluster.client().CreateUser(Json{{"name", "bob"}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto token = cluster.client().CreateToken(Json{{"user", "bob"}});
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  auto bob = RunCommand(
      {BinDir() + "/cohort", "notebook", "--open", std::to_string(id)},
      {{"COHORT_MASTER", cluster.url()}, {"COHORT_TOKEN", (*token)["token"].get<std::string>()}});
  EXPECT_NE(bob.exit_code, 0);
  EXPECT_THAT(bob.err, HasSubstr("only its owner may"));
  // Jupyter itself lets in only holders of its token, which only the master and the task hold:
  // straight to the node's port, without it, is a refusal.
  Job job = cluster.WaitForState(id, JobState::kRunning);
  ASSERT_FALSE(job.tasks.empty());
  auto direct = RunCommand({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            fmt::format("http://127.0.0.1:{}/api/v1/jobs/{}/notebook/api/contents",
                                        job.tasks[0].port, id)});
  EXPECT_EQ(direct.out, "403");
  // The owner asks again: a new link, good once.
  auto again = cluster.Cohort({"notebook", "--open", std::to_string(id), "--no-browser"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr(fmt::format("/api/v1/jobs/{}/notebook/?cohort_link=cohc_", id)));
  EXPECT_THAT(again.err, HasSubstr("lets one browser in, once"));
  ASSERT_TRUE(cluster.client().Kill(id).ok());
  cluster.WaitForState(id, JobState::kKilled);
}

}  // namespace
}  // namespace cohort::testing
