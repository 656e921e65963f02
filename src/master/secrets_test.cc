// Environment secrets in the master (docs/security.md, "Environment secrets"): the user's own
// before the team's, references checked at submission, a secret gone before the launch, the
// bounds, and writes that fail.
#include "master/secrets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_test_fixture.h"
#include "model/json.h"
#include "model/limits.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Call = cohort::testing::FailingStateStore::Call;

class SecretsTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 0, std::nullopt}).ok());
  }

  Secrets& secrets() { return master_->secrets(); }

  void Set(SecretScope scope, const std::string& owner, const std::string& name,
           const std::string& value) {
    auto set = secrets().Set(scope, owner, name, value);
    ASSERT_TRUE(set.ok()) << set.status().ToString();
  }

  // One worker with one GPU in team vision whose WANDB_API_KEY is the secret `secret`.
  StatusOr<Job> SubmitWith(const std::string& user, const std::string& secret = "wandb") {
    JobSpec spec = MakeSpec(1, 1, 1, "vision");
    spec.tasks[0].env = {{"LR", "0.1"}};
    spec.tasks[0].env_secrets = {{"WANDB_API_KEY", secret}};
    return master_->Submit(spec, user);
  }

  // The environment of the job's task as its node's agent gets it.
  std::map<std::string, std::string> LaunchedEnv(JobId id) {
    auto desired = master_->nodes().DesiredFor("a");
    EXPECT_TRUE(desired.ok());
    for (const auto& t : desired->tasks) {
      if (t.id.job == id) return t.env;
    }
    ADD_FAILURE() << "job " << id << " has no task on a";
    return {};
  }

  std::vector<JobEvent> EventsOf(JobId id, const std::string& type) {
    std::vector<JobEvent> out;
    auto events = master_->Events(id);
    EXPECT_TRUE(events.ok());
    if (!events.ok()) return out;
    for (const auto& e : *events) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }
};

TEST_P(SecretsTest, TheUsersOwnSecretWinsOverTheTeams) {
  AddNode("a", 4);
  Set(SecretScope::kTeam, "vision", "wandb", "team-key");
  Set(SecretScope::kUser, "ada", "wandb", "ada-key");
  auto ada = SubmitWith("ada");
  auto bob = SubmitWith("bob");
  ASSERT_TRUE(ada.ok() && bob.ok());
  RunPosted();
  auto ada_env = LaunchedEnv(ada->id);
  EXPECT_EQ(ada_env["WANDB_API_KEY"], "ada-key");
  EXPECT_EQ(ada_env["LR"], "0.1");
  EXPECT_EQ(LaunchedEnv(bob->id)["WANDB_API_KEY"], "team-key");
  // The job keeps the reference, never the value.
  const Job& job = GetJob(ada->id);
  EXPECT_TRUE(job.spec.tasks[0].env.count("WANDB_API_KEY") == 0);
  EXPECT_EQ(job.spec.tasks[0].env_secrets.at("WANDB_API_KEY"), "wandb");
  std::string stored = ToJson(job).dump();
  EXPECT_EQ(stored.find("ada-key"), std::string::npos) << stored;
  EXPECT_EQ(stored.find("team-key"), std::string::npos) << stored;
  // Resolution happens at every launch: a changed value reaches the next one.
  Set(SecretScope::kUser, "ada", "wandb", "ada-key-2");
  EXPECT_EQ(LaunchedEnv(ada->id)["WANDB_API_KEY"], "ada-key-2");
  // Without the user's own, the team's.
  ASSERT_TRUE(secrets().Delete(SecretScope::kUser, "ada", "wandb").ok());
  EXPECT_EQ(LaunchedEnv(ada->id)["WANDB_API_KEY"], "team-key");
  EXPECT_TRUE(EventsOf(ada->id, "secret_left_out").empty());
}

TEST_P(SecretsTest, AMissingSecretRefusesTheSubmissionNamingTheVariable) {
  Set(SecretScope::kUser, "bob", "wandb", "bob-key");  // another user's is no help
  Set(SecretScope::kTeam, "nlp", "wandb", "nlp-key");  // nor another team's
  auto job = SubmitWith("ada");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), "job spec has 1 error");
  EXPECT_THAT(job.status().details(),
              ElementsAre("tasks[0].env.WANDB_API_KEY: secret wandb does not exist for user ada "
                          "or team vision; set it with `cohort secret set wandb` (yours), or "
                          "`cohort secret set wandb --team vision` (the team's, by one of its "
                          "admins)"));
  EXPECT_TRUE(master_->ListJobs({}).empty());
}

TEST_P(SecretsTest, ASecretDeletedBeforeTheLaunchIsLeftOutAndTheJobToldOnce) {
  AddNode("a", 4);
  Set(SecretScope::kUser, "ada", "wandb", "ada-key");
  auto job = SubmitWith("ada");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(secrets().Delete(SecretScope::kUser, "ada", "wandb").ok());
  RunPosted();
  ASSERT_EQ(GetJob(job->id).state, JobState::kStarting);
  auto env = LaunchedEnv(job->id);
  EXPECT_EQ(env.count("WANDB_API_KEY"), 0u);
  EXPECT_EQ(env["LR"], "0.1");
  EXPECT_EQ(env["COHORT_JOB_ID"], std::to_string(job->id));
  // The node's sync goes on: the task runs, and every launch built since told nothing new.
  Report("a", TaskState::kRunning);
  EXPECT_EQ(GetJob(job->id).state, JobState::kRunning);
  LaunchedEnv(job->id);
  auto told = EventsOf(job->id, "secret_left_out");
  ASSERT_EQ(told.size(), 1u);
  EXPECT_THAT(told[0].message,
              HasSubstr("attempt 1: WANDB_API_KEY is left out of the tasks' environment: secret "
                        "wandb no longer exists for user ada or team vision; set it with"));
  EXPECT_TRUE(fail_stops_.empty());
}

TEST_P(SecretsTest, TheEnvironmentsBoundCountsTheValues) {
  AddNode("a", 4);
  // Four of the largest secrets and the literal variable: past kMaxEnvBytes.
  std::string big(kMaxSecretValueBytes, 'x');
  JobSpec spec = MakeSpec(1, 1, 1, "vision");
  spec.tasks[0].env = {{"LR", "0.1"}};
  for (int i = 0; i < 4; ++i) {
    Set(SecretScope::kUser, "ada", "s" + std::to_string(i), big);
    spec.tasks[0].env_secrets["S" + std::to_string(i)] = "s" + std::to_string(i);
  }
  auto refused = master_->Submit(spec, "ada");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().details(),
              ElementsAre(HasSubstr("tasks[0].env: with the values of its secrets, names and "
                                    "values add up to 262157 bytes; at most 262144")));
  // With one of them small at the submission it fits; grown since, that one is left out of
  // the launch, with an event saying why.
  Set(SecretScope::kUser, "ada", "s3", "small");
  auto job = master_->Submit(spec, "ada");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  Set(SecretScope::kUser, "ada", "s3", big);
  RunPosted();
  auto env = LaunchedEnv(job->id);
  EXPECT_EQ(env["S0"], big);
  EXPECT_EQ(env["S2"], big);
  EXPECT_EQ(env.count("S3"), 0u);
  auto told = EventsOf(job->id, "secret_left_out");
  ASSERT_EQ(told.size(), 1u);
  EXPECT_THAT(told[0].message, HasSubstr("S3 is left out"));
  EXPECT_THAT(told[0].message, HasSubstr("secret s3 has grown since the submission"));
  EXPECT_EQ(told[0].message.find("xxxx"), std::string::npos);
}

TEST_P(SecretsTest, AnOwnerHasAtMost256Secrets) {
  for (size_t i = 0; i < kMaxSecretsPerOwner; ++i) {
    Set(SecretScope::kUser, "ada", "s" + std::to_string(i), "v");
  }
  auto more = secrets().Set(SecretScope::kUser, "ada", "one-more", "v");
  EXPECT_EQ(more.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(more.status().message(),
              HasSubstr("user ada already has 256 secrets, the most one owner may have"));
  // Replacing one is no new one; other owners have their own bound.
  EXPECT_TRUE(secrets().Set(SecretScope::kUser, "ada", "s0", "v2").ok());
  EXPECT_TRUE(secrets().Set(SecretScope::kUser, "bob", "s0", "v").ok());
  EXPECT_TRUE(secrets().Set(SecretScope::kTeam, "ada", "s0", "v").ok());
  EXPECT_EQ(secrets().List(SecretScope::kUser, "ada").size(), kMaxSecretsPerOwner);
  // And a bad value or name is refused before anything is stored.
  EXPECT_EQ(secrets()
                .Set(SecretScope::kUser, "bob", "x", std::string(kMaxSecretValueBytes + 1, 'v'))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(secrets().Set(SecretScope::kUser, "bob", "a/b", "v").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(secrets().List(SecretScope::kUser, "bob").size(), 1u);
}

TEST_P(SecretsTest, AFailedWriteChangesNothing) {
  Set(SecretScope::kUser, "ada", "wandb", "v1");
  store_->FailNextWrites(1, {Call::kSaveSecret});
  EXPECT_FALSE(secrets().Set(SecretScope::kUser, "ada", "wandb", "v2").ok());
  store_->FailNextWrites(1, {Call::kDeleteSecret});
  EXPECT_FALSE(secrets().Delete(SecretScope::kUser, "ada", "wandb").ok());
  ASSERT_NE(secrets().Resolve("ada", "vision", "wandb"), nullptr);
  EXPECT_EQ(secrets().Resolve("ada", "vision", "wandb")->value, "v1");
  EXPECT_TRUE(fail_stops_.empty());
}

TEST_P(SecretsTest, SecretsSurviveARestartAndGoWithTheirTeam) {
  Set(SecretScope::kUser, "ada", "wandb", "ada-key");
  Set(SecretScope::kTeam, "vision", "hf", "team-key");
  Start();
  ASSERT_NE(secrets().Resolve("ada", "vision", "wandb"), nullptr);
  EXPECT_EQ(secrets().Resolve("ada", "vision", "wandb")->value, "ada-key");
  EXPECT_EQ(secrets().Resolve("bob", "vision", "hf")->value, "team-key");
  // A team created again under the same name starts without the old one's secrets.
  ASSERT_TRUE(master_->teams().Delete("vision").ok());
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 0, std::nullopt}).ok());
  EXPECT_EQ(secrets().Resolve("bob", "vision", "hf"), nullptr);
  Start();
  EXPECT_EQ(secrets().Resolve("bob", "vision", "hf"), nullptr);
  EXPECT_NE(secrets().Resolve("ada", "vision", "wandb"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Scheduling, SecretsTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BetweenPasses" : "FullPasses";
                         });

}  // namespace
}  // namespace cohort::master
