// Per-job credentials without a server: the session policy's exact JSON, and the requests
// refused before one is sent. (s3_store_test.cc issues real ones from Ceph's STS.)
#include "store/s3_sts.h"

#include <gtest/gtest.h>

namespace cohort::store {
namespace {

TEST(S3ScopedCredentials, TheSessionPolicyIsCompactJsonForOnePrefix) {
  EXPECT_EQ(ScopedSessionPolicy("data", "cohort/jobs/7"),
            R"({"Statement":[{"Action":["s3:*"],"Effect":"Allow","Resource":)"
            R"(["arn:aws:s3:::data/cohort/jobs/7/*"]},{"Action":["s3:ListBucket"],)"
            R"("Condition":{"StringLike":{"s3:prefix":["cohort/jobs/7/*"]}},"Effect":"Allow",)"
            R"("Resource":["arn:aws:s3:::data"]}],"Version":"2012-10-17"})");
  // Quotes in a prefix are escaped, and still no space.
  std::string odd = ScopedSessionPolicy("b", "a \"q\"");
  EXPECT_NE(odd.find(R"(arn:aws:s3:::b/a \"q\"/*)"), std::string::npos) << odd;
}

TEST(S3ScopedCredentials, ReadOnlyKeysAreAThirdStatementThatMayOnlyGetObjects) {
  EXPECT_EQ(ScopedSessionPolicy("data", "cohort/jobs/7",
                                {"cohort/blobs/", "cohort/datasets/vision/imagenet/2.json"}),
            R"({"Statement":[{"Action":["s3:*"],"Effect":"Allow","Resource":)"
            R"(["arn:aws:s3:::data/cohort/jobs/7/*"]},{"Action":["s3:ListBucket"],)"
            R"("Condition":{"StringLike":{"s3:prefix":["cohort/jobs/7/*"]}},"Effect":"Allow",)"
            R"("Resource":["arn:aws:s3:::data"]},{"Action":["s3:GetObject"],"Effect":"Allow",)"
            R"("Resource":["arn:aws:s3:::data/cohort/blobs/*",)"
            R"("arn:aws:s3:::data/cohort/datasets/vision/imagenet/2.json"]}],)"
            R"("Version":"2012-10-17"})");
}

TEST(S3ScopedCredentials, BadRequestsAreRefusedBeforeAnyIsSent) {
  S3Connection c{.endpoint = "http://127.0.0.1:1",
                 .region = "us-east-1",
                 .access_key = "A",
                 .secret_key = "S",
                 .session_token = "",
                 .role_arn = "arn:aws:iam:::role/jobs"};
  S3Location where{.bucket = "data", .prefix = "cohort"};
  const std::chrono::seconds hour(3600);
  for (const auto& [prefix, duration, code, reason] :
       std::vector<std::tuple<std::string, std::chrono::seconds, StatusCode, std::string>>{
           {"jobs/7", std::chrono::seconds(60), StatusCode::kInvalidArgument,
            "duration: 60 s; STS issues credentials for 900 to 43200 s"},
           {"jobs/7", std::chrono::seconds(86400), StatusCode::kInvalidArgument, "duration"},
           {"jobs/*", hour, StatusCode::kInvalidArgument, "holds '*', '?' or '$'"},
           {"jobs/${aws:username}", hour, StatusCode::kInvalidArgument, "holds '*', '?' or '$'"},
           {"jobs/../8", hour, StatusCode::kInvalidArgument, "key prefix: key \"jobs/../8\""},
           {"", hour, StatusCode::kInvalidArgument, "is empty"}}) {
    auto issued = IssueScopedCredentials(c, where, prefix, duration);
    ASSERT_FALSE(issued.ok()) << prefix;
    EXPECT_EQ(issued.status().code(), code) << prefix;
    EXPECT_NE(issued.status().message().find(reason), std::string::npos)
        << issued.status().message();
  }
  for (const char* read : {"blobs/*", "datasets/../x.json", "/blobs/"}) {
    auto issued = IssueScopedCredentials(c, where, "jobs/7", hour, {}, {read});
    EXPECT_EQ(issued.status().code(), StatusCode::kInvalidArgument) << read;
    EXPECT_NE(issued.status().message().find("read-only key"), std::string::npos)
        << issued.status().message();
  }
  c.role_arn.clear();
  auto no_role = IssueScopedCredentials(c, where, "jobs/7", hour);
  EXPECT_EQ(no_role.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(no_role.status().message().find("names no role_arn"), std::string::npos);
}

TEST(S3ScopedCredentials, AHolderUsesTheTemporaryKeysAndCannotIssueMore) {
  S3Connection c{.endpoint = "http://h",
                 .region = "r",
                 .access_key = "A",
                 .secret_key = "S",
                 .session_token = "",
                 .role_arn = "arn:aws:iam:::role/jobs"};
  S3Connection job = WithTemporaryCredentials(
      c, S3TemporaryCredentials{
             .access_key = "TA", .secret_key = "TS", .session_token = "TT", .expiration = "x"});
  EXPECT_EQ(job.endpoint, "http://h");
  EXPECT_EQ(job.access_key, "TA");
  EXPECT_EQ(job.secret_key, "TS");
  EXPECT_EQ(job.session_token, "TT");
  EXPECT_EQ(job.role_arn, "");
}

}  // namespace
}  // namespace cohort::store
