// Secret references in a job spec (`env: {KEY: {secret: NAME}}`), and what a secret's name and
// value may be (docs/job-spec.md, docs/security.md "Environment secrets").
#include "model/secret.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/job_spec_parser.h"
#include "model/limits.h"

namespace cohort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string WithEnv(const std::string& env) {
  return "name: train\nteam: vision\ntasks:\n  - role: worker\n    command: [python3, train.py]\n"
         "    env: " +
         env + "\n";
}

std::vector<std::string> Errors(const std::string& text) {
  auto spec = ParseJobSpec(text);
  if (spec.ok()) return {"<no error>"};
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  return spec.status().details();
}

TEST(SecretReference, KeepsTheNameApartFromLiteralValues) {
  auto spec =
      ParseJobSpec(WithEnv("{WANDB_API_KEY: {secret: wandb}, LR: 0.1, HF: {secret: hf.token-2}}"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const TaskGroupSpec& g = spec->tasks[0];
  EXPECT_EQ(g.env, (std::map<std::string, std::string>{{"LR", "0.1"}}));
  EXPECT_EQ(g.env_secrets,
            (std::map<std::string, std::string>{{"HF", "hf.token-2"}, {"WANDB_API_KEY", "wandb"}}));
}

TEST(SecretReference, JsonFormShowsTheReferenceAndRoundTrips) {
  auto spec = ParseJobSpec(WithEnv("{WANDB_API_KEY: {secret: wandb}, LR: \"0.1\"}"));
  ASSERT_TRUE(spec.ok());
  Json doc = ToJson(*spec);
  EXPECT_EQ(doc["tasks"][0]["env"],
            Json::parse(R"({"LR": "0.1", "WANDB_API_KEY": {"secret": "wandb"}})"));
  auto back = ParseJobSpecJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tasks[0].env, spec->tasks[0].env);
  EXPECT_EQ(back->tasks[0].env_secrets, spec->tasks[0].env_secrets);
  EXPECT_EQ(ToJson(*back), doc);
  EXPECT_EQ(SpecDigest(*back), SpecDigest(*spec));
  // Only secrets: env is still written.
  auto only = ParseJobSpec(WithEnv("{K: {secret: k}}"));
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(ToJson(*only)["tasks"][0]["env"], Json::parse(R"({"K": {"secret": "k"}})"));
}

TEST(SecretReference, DigestOfASpecWithoutSecretsIsUnchanged) {
  // The digest of this spec as releases before secrets computed it: idempotent submissions
  // retried across an upgrade must still match.
  auto spec = ParseJobSpec(WithEnv("{LR: \"0.1\"}"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(SpecDigest(*spec), "a35ee467a0c22129");
  // A reference is part of what the spec means.
  auto with = ParseJobSpec(WithEnv("{LR: \"0.1\", K: {secret: k}}"));
  ASSERT_TRUE(with.ok());
  EXPECT_NE(SpecDigest(*with), SpecDigest(*spec));
}

TEST(SecretReference, ErrorsNameTheVariable) {
  const std::string shape =
      "a secret reference is {secret: NAME}, e.g. {secret: wandb} (set with `cohort secret set "
      "wandb`)";
  EXPECT_THAT(Errors(WithEnv("{K: {secret: wandb, team: x}}")),
              ElementsAre("tasks[0].env.K.team: unknown field; " + shape));
  EXPECT_THAT(Errors(WithEnv("{K: {}}")),
              ElementsAre("tasks[0].env.K: the mapping has no field secret; " + shape));
  EXPECT_THAT(Errors(WithEnv("{K: {secret: 5}}")),
              ElementsAre("tasks[0].env.K.secret: must be the secret's name, a string, got 5"));
  EXPECT_THAT(
      Errors(WithEnv("{K: {secret: [a]}}")),
      ElementsAre("tasks[0].env.K.secret: must be the secret's name, a string, got a list"));
  for (const char* bad : {"\"\"", "-x", ".x", "a/b", "\"a b\"", "ä"}) {
    auto errors = Errors(WithEnv(std::string("{K: {secret: ") + bad + "}}"));
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_THAT(errors[0], HasSubstr("tasks[0].env.K.secret: ")) << bad;
    EXPECT_THAT(errors[0], HasSubstr("is not a secret name: use 1 to 64 letters")) << bad;
  }
  EXPECT_THAT(Errors(WithEnv("{K: {secret: " + std::string(65, 'a') + "}}")),
              ElementsAre(HasSubstr("is not a secret name")));
  EXPECT_EQ(Errors(WithEnv("{K: {secret: " + std::string(64, 'a') + "}}")),
            std::vector<std::string>{"<no error>"});
  // The variable's own rules hold for references too.
  EXPECT_THAT(Errors(WithEnv("{RANK: {secret: r}}")),
              ElementsAre("tasks[0].env.RANK: is set by Cohort and cannot be set in the spec"));
  EXPECT_THAT(Errors(WithEnv("{1K: {secret: r}}")),
              ElementsAre(HasSubstr("tasks[0].env.1K: not a valid variable name")));
}

TEST(SecretReference, ReferencesCountAgainstTheEnvLimits) {
  std::string env = "{";
  for (size_t i = 0; i < kMaxEnvVars; ++i) env += "S" + std::to_string(i) + ": {secret: s},";
  EXPECT_EQ(Errors(WithEnv(env + "}")), std::vector<std::string>{"<no error>"});
  EXPECT_THAT(Errors(WithEnv(env + "ONE_MORE: x}")),
              ElementsAre("tasks[0].env: has 257 variables; at most 256 are allowed"));
}

TEST(SecretNames, FollowTheRule) {
  for (const char* good : {"wandb", "A", "9", "hf.token_2-b", "x."}) {
    EXPECT_TRUE(ValidateSecretName(good).ok()) << good;
  }
  for (const char* bad : {"", "-a", "_a", ".a", "a b", "a/b", "a\nb"}) {
    Status s = ValidateSecretName(bad, "secret");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("secret: ")) << bad;
  }
  EXPECT_TRUE(ValidateSecretName(std::string(64, 'z')).ok());
  EXPECT_FALSE(ValidateSecretName(std::string(65, 'z')).ok());
}

TEST(SecretValues, AreBoundedTextAndErrorsNeverQuoteThem) {
  EXPECT_TRUE(ValidateSecretValue("s3cr3t").ok());
  EXPECT_TRUE(ValidateSecretValue(std::string(kMaxSecretValueBytes, 'v')).ok());
  EXPECT_TRUE(ValidateSecretValue("multi\nline ünïcode").ok());
  Status big = ValidateSecretValue(std::string(kMaxSecretValueBytes + 1, 'v'));
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(big.message(), HasSubstr("value: is 65537 bytes; a secret is at most 65536 bytes"));
  EXPECT_THAT(ValidateSecretValue("").message(), HasSubstr("must not be empty"));
  Status nul = ValidateSecretValue(std::string("abc\0def", 7));
  EXPECT_THAT(nul.message(), HasSubstr("NUL"));
  Status binary = ValidateSecretValue("pass\xff\xfeword");
  EXPECT_EQ(binary.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(binary.message(), HasSubstr("not valid UTF-8"));
  for (const Status& s : {big, nul, binary}) {
    EXPECT_EQ(s.message().find("vvvv"), std::string::npos);
    EXPECT_EQ(s.message().find("pass"), std::string::npos);
    EXPECT_EQ(s.message().find("abc"), std::string::npos);
  }
}

TEST(SecretScopes, HaveNames) {
  EXPECT_STREQ(SecretScopeName(SecretScope::kUser), "user");
  EXPECT_STREQ(SecretScopeName(SecretScope::kTeam), "team");
  EXPECT_EQ(ParseSecretScope("team"), SecretScope::kTeam);
  EXPECT_FALSE(ParseSecretScope("group").has_value());
}

}  // namespace
}  // namespace cohort
