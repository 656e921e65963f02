// Environment secrets against real daemons (docs/security.md, "Environment secrets"): set with
// the CLI from stdin, put into the task's environment, and nowhere else: not in the job as the
// API and the CLI show it, not in the secret list, not in a daemon's log.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/strings.h"
#include "model/json.h"
#include "model/secret.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

// The CLI as the cluster's admin, through a shell: `stdin_text` is piped into it from an
// environment variable, so that it is in no command line either.
CommandResult CohortWithStdin(LocalCluster& cluster, const std::string& args,
                              const std::string& stdin_text) {
  return RunCommand({"/bin/sh", "-c", "printf '%s\\n' \"$SECRET_INPUT\" | cohort " + args},
                    {{"COHORT_MASTER", cluster.url()},
                     {"COHORT_TOKEN", cluster.admin_token()},
                     {"XDG_CONFIG_HOME", cluster.dir() + "/config"},
                     {"SECRET_INPUT", stdin_text},
                     {"PATH", BinDir() + ":/usr/bin:/bin"}});
}

TEST(Secrets, ASecretSetFromStdinReachesOnlyTheTasksEnvironment) {
  LocalCluster cluster("secrets");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  const std::string value = "wandb-7c1e0b9f4d2a-integration";

  auto set = CohortWithStdin(cluster, "secret set wandb", value);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_THAT(set.out, HasSubstr("secret wandb set for you"));
  // A file works too, and --help says where the value comes from.
  std::string file = cluster.dir() + "/hf.txt";
  std::ofstream(file) << "hf-token-from-file\n";
  auto from_file =
      cluster.Cohort({"secret", "set", "hf", "--team", "default", "--from-file", file});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  auto help = cluster.Cohort({"secret", "set", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("stdin"));

  JobId id = cluster.Submit(R"(
name: uses-secret
tasks:
  - role: worker
    resources: {gpus: 1, cpus: 1, memory: 256Mi}
    env: {WANDB_API_KEY: {secret: wandb}, HF_TOKEN: {secret: hf}, PLAIN: shown}
    command: [sh, -c, 'printf "%s|%s" "$WANDB_API_KEY" "$HF_TOKEN" > "$COHORT_OUTPUT_DIR/key"; echo done']
)");
  cluster.WaitForState(id, JobState::kSucceeded);
  std::string key =
      ReadFileOrEmpty(fmt::format("{}/master/storage/jobs/{}/outputs/key", cluster.dir(), id));
  EXPECT_EQ(key, value + "|hf-token-from-file");

  // The job as everyone sees it holds the reference, never the value.
  auto status = cluster.Cohort({"status", std::to_string(id), "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr(R"("secret": "wandb")"));
  auto jobs = cluster.Cohort({"jobs", "-o", "json"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  auto list = cluster.Cohort({"secret", "list", "-o", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(R"("name": "wandb")"));
  auto table = cluster.Cohort({"secret", "list"});
  EXPECT_THAT(table.out, HasSubstr("hf"));
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  auto secrets = (*http)->Request("GET", "/api/v1/secrets");
  ASSERT_TRUE(secrets.ok());
  EXPECT_EQ(secrets->status, 200);
  auto job = (*http)->Request("GET", "/api/v1/jobs/" + std::to_string(id));
  ASSERT_TRUE(job.ok());
  auto events = (*http)->Request("GET", "/api/v1/jobs/" + std::to_string(id) + "/events");
  ASSERT_TRUE(events.ok());
  std::map<std::string, std::string> shown = {
      {"cohort status -o json", status.out},
      {"cohort jobs -o json", jobs.out},
      {"cohort secret list -o json", list.out},
      {"cohort secret list", table.out},
      {"cohort secret set", set.out + set.err},
      {"GET /api/v1/secrets", secrets->body},
      {"GET /api/v1/jobs/ID", job->body},
      {"GET /api/v1/jobs/ID/events", events->body},
      {"the job's log", cluster.Logs(id)},
      {"master.log", ReadFileOrEmpty(cluster.dir() + "/master.log")},
      {"node-a.log", ReadFileOrEmpty(cluster.dir() + "/node-a.log")}};
  for (const auto& [where, text] : shown) {
    EXPECT_FALSE(text.empty()) << where;
    EXPECT_EQ(text.find(value), std::string::npos) << where << " shows the value";
    EXPECT_EQ(text.find("hf-token-from-file"), std::string::npos) << where << " shows the value";
  }

  // `cohort run --secret-env` names it the same way.
  auto ran = cluster.Cohort({"run", "--wait", "--secret-env", "KEY=wandb", "--env",
                             "EXPECTED_LENGTH=" + std::to_string(value.size()), "--", "sh", "-c",
                             "test ${#KEY} = $EXPECTED_LENGTH && test \"$KEY\" != wandb && "
                             "echo secret-reached-the-task"});
  EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("secret-reached-the-task"));
  EXPECT_EQ((ran.out + ran.err).find(value), std::string::npos);

  // Deleted, the secret can no longer be named; the error says how to set it.
  ASSERT_EQ(cluster.Cohort({"secret", "delete", "wandb"}).exit_code, 0);
  std::string spec_file = cluster.dir() + "/job.yaml";
  std::ofstream(spec_file) << "name: again\ntasks:\n  - role: w\n    command: [\"true\"]\n    env: "
                              "{K: {secret: wandb}}\n";
  auto missing = cluster.Cohort({"submit", spec_file});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("tasks[0].env.K: secret wandb does not exist for user"));
  EXPECT_THAT(missing.err, HasSubstr("cohort secret set wandb"));
  auto gone = cluster.Cohort({"secret", "delete", "wandb"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("has no secret wandb"));
}

TEST(Secrets, WhatCouldNotBeASecretIsRefusedByTheCliAndTheApi) {
  LocalCluster cluster("secrets-cli");
  cluster.StartMaster();
  auto empty = CohortWithStdin(cluster, "secret set wandb", "");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_THAT(empty.err, HasSubstr("the value: must not be empty"));
  auto big = CohortWithStdin(cluster, "secret set wandb", std::string(70'000, 'x'));
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_THAT(big.err, HasSubstr("longer than 65536 bytes"));
  auto name = CohortWithStdin(cluster, "secret set 'a/b'", "v");
  EXPECT_EQ(name.exit_code, 1);
  EXPECT_THAT(name.err, HasSubstr("NAME: \"a/b\" is not a secret name"));
  auto team = CohortWithStdin(cluster, "secret set wandb --team nosuch", "v");
  EXPECT_EQ(team.exit_code, 1);
  EXPECT_THAT(team.err, HasSubstr("team nosuch does not exist"));
  EXPECT_EQ(cluster.Cohort({"secret", "list"}).out, "NAME  SCOPE  OWNER  UPDATED\n");

  // The API's body limit fits the largest value however JSON escapes it, and no more.
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  std::string largest = Json{{"value", std::string(kMaxSecretValueBytes, '\x01')}}.dump();
  EXPECT_GT(largest.size(), 6 * kMaxSecretValueBytes);
  auto ok = (*http)->Request("PUT", "/api/v1/secrets/largest", largest);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto over = (*http)->Request("PUT", "/api/v1/secrets/over",
                               Json{{"value", std::string(kMaxSecretValueBytes + 1, 'v')}}.dump());
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->status, 400);
  EXPECT_THAT(over->body, HasSubstr("value: is 65537 bytes; a secret is at most 65536 bytes"));
  auto huge = (*http)->Request("PUT", "/api/v1/secrets/huge", std::string(400'000, ' '));
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->status, 413);
  EXPECT_THAT(huge->body, HasSubstr("PUT /api/v1/secrets/huge takes at most"));
}

}  // namespace
}  // namespace cohort::testing
