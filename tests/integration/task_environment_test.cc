// (b) Every task of a gang sees its own GPUs and the right rendezvous environment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/strings.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

// Parses "KEY=VALUE" lines of one task's output.
std::map<std::string, std::string> EnvOf(const std::string& log) {
  std::map<std::string, std::string> env;
  for (const auto& line : Split(log, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

constexpr const char* kPrintEnv =
    "[sh, -c, 'for v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT "
    "CUDA_VISIBLE_DEVICES COHORT_JOB_ID COHORT_ATTEMPT COHORT_TASK_ROLE COHORT_TASK_INDEX "
    "COHORT_HOSTS COHORT_CHECKPOINT_DIR COHORT_OUTPUT_DIR COHORT_LOG_DIR TF_CONFIG MY_SETTING; do "
    "echo \"$v=$(printenv $v)\"; done']";

TEST(TaskEnvironment, FourReplicasSeeDistinctGpusAndTheirRanks) {
  LocalCluster cluster("env");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 4);
  JobId id = cluster.Submit(std::string(R"(
name: env-check
framework: pytorch
tasks:
  - role: worker
    replicas: 4
    resources: {gpus: 1, cpus: 1, memory: 256Mi}
    env: {MY_SETTING: "42"}
    command: )") + kPrintEnv +
                            "\n");
  Job job = cluster.WaitForState(id, JobState::kSucceeded);
  std::set<std::string> gpus;
  std::set<std::string> ports;
  for (int i = 0; i < 4; ++i) {
    auto env = EnvOf(cluster.Logs(id, "worker/" + std::to_string(i)));
    SCOPED_TRACE("worker/" + std::to_string(i));
    EXPECT_EQ(env["RANK"], std::to_string(i));
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(i));
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    EXPECT_EQ(env["MASTER_PORT"], std::to_string(job.tasks[0].port));
    EXPECT_EQ(env["COHORT_JOB_ID"], std::to_string(id));
    EXPECT_EQ(env["COHORT_ATTEMPT"], "1");
    EXPECT_EQ(env["COHORT_TASK_ROLE"], "worker");
    EXPECT_EQ(env["COHORT_TASK_INDEX"], std::to_string(i));
    EXPECT_EQ(env["COHORT_HOSTS"], "127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1");
    EXPECT_THAT(env["COHORT_CHECKPOINT_DIR"],
                ::testing::EndsWith("/jobs/" + std::to_string(id) + "/checkpoints"));
    EXPECT_FALSE(env["COHORT_OUTPUT_DIR"].empty());
    EXPECT_FALSE(env["COHORT_LOG_DIR"].empty());
    EXPECT_EQ(env["MY_SETTING"], "42");
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], JoinGpus(job.tasks[i].gpus));
    gpus.insert(env["CUDA_VISIBLE_DEVICES"]);
    ports.insert(std::to_string(job.tasks[i].port));
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(ports.size(), 4u) << "every task gets its own port";
}

TEST(TaskEnvironment, TensorFlowTasksGetTfConfig) {
  LocalCluster cluster("tfenv");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  cluster.StartAgent("node-b", 2);
  JobId id = cluster.Submit(std::string(R"(
name: tf-check
framework: tensorflow
tasks:
  - role: chief
    resources: {gpus: 2}
    command: )") + kPrintEnv +
                            R"(
  - role: worker
    replicas: 2
    resources: {gpus: 1}
    command: )" + kPrintEnv +
                            "\n");
  Job job = cluster.WaitForState(id, JobState::kSucceeded);
  auto env = EnvOf(cluster.Logs(id, "worker/1"));
  auto config = nlohmann::json::parse(env["TF_CONFIG"]);
  EXPECT_EQ(config["task"]["type"], "worker");
  EXPECT_EQ(config["task"]["index"], 1);
  ASSERT_EQ(config["cluster"]["worker"].size(), 2u);
  ASSERT_EQ(config["cluster"]["chief"].size(), 1u);
  EXPECT_EQ(config["cluster"]["chief"][0], "127.0.0.1:" + std::to_string(job.tasks[0].port));
  EXPECT_EQ(config["cluster"]["worker"][1], "127.0.0.1:" + std::to_string(job.tasks[2].port));
  EXPECT_TRUE(env["RANK"].empty()) << "TensorFlow jobs get no PyTorch variables";
}

// docs/job-spec.md, "The task's environment": exactly the documented base, Cohort's variables
// and the spec's env; nothing of the agent's own environment, whatever it holds.
TEST(TaskEnvironment, IsTheDocumentedBaseAndNeverTheAgents) {
  LocalCluster cluster("cleanenv");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1, {},
                     {{"COHORT_ENV_TEST_MARKER", "from-the-agent"},
                      {"AWS_SECRET_ACCESS_KEY", "agent-secret-value"},
                      {"TZ", "Europe/Paris"}});
  JobId id = cluster.Submit(R"(
name: clean-env
tasks:
  - role: worker
    resources: {gpus: 1}
    env: {MY_SETTING: "42", LANG: en_US.UTF-8}
    command: [env]
)");
  cluster.WaitForState(id, JobState::kSucceeded);
  std::string log = cluster.Logs(id, "worker/0");
  auto env = EnvOf(log);
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("from-the-agent")));
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("agent-secret-value")));
  EXPECT_EQ(env.count("COHORT_ENV_TEST_MARKER"), 0u);
  EXPECT_EQ(env.count("AWS_SECRET_ACCESS_KEY"), 0u);
  EXPECT_EQ(env["PATH"], "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  EXPECT_EQ(env["USER"], TestAccount());
  EXPECT_EQ(env["LOGNAME"], TestAccount());
  EXPECT_FALSE(env["HOME"].empty());
  EXPECT_FALSE(env["SHELL"].empty());
  EXPECT_EQ(env["TZ"], "Europe/Paris") << "the agent's time zone is the node's";
  EXPECT_EQ(env["LANG"], "en_US.UTF-8") << "the spec's env overrides the base";
  EXPECT_EQ(env["MY_SETTING"], "42");
  EXPECT_EQ(env["COHORT_JOB_ID"], std::to_string(id));
  // Nothing beyond the base, Cohort's and the framework's variables, and the spec's.
  const std::set<std::string> expected = {"PATH",
                                          "HOME",
                                          "USER",
                                          "LOGNAME",
                                          "SHELL",
                                          "LANG",
                                          "TZ",
                                          "MY_SETTING",
                                          "CUDA_DEVICE_ORDER",
                                          "CUDA_VISIBLE_DEVICES",
                                          "MASTER_ADDR",
                                          "MASTER_PORT",
                                          "WORLD_SIZE",
                                          "RANK",
                                          "LOCAL_RANK",
                                          "LOCAL_WORLD_SIZE"};
  for (const auto& [name, value] : env) {
    bool cohorts = name.rfind("COHORT_", 0) == 0 || name.rfind("PET_", 0) == 0;
    EXPECT_TRUE(expected.count(name) || cohorts) << "unexpected " << name << "=" << value;
  }
}

}  // namespace
}  // namespace cohort::testing
