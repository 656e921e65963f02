#include "client/cohort_client.h"

#include <gtest/gtest.h>

namespace cohort::client {
namespace {

TEST(StatusFromErrorBody, ReadsTheApiErrorDocument) {
  Status s = StatusFromErrorBody(
      409, R"({"error":{"code":"failed_precondition","message":"busy","details":["a"]}})");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "busy");
  ASSERT_EQ(s.details().size(), 1u);
  EXPECT_EQ(s.details()[0], "a");
}

// Found by fuzz/agent_protocol_fuzzer.cc: fields of another type made Json::value throw, which
// no caller catches.
TEST(StatusFromErrorBody, FieldsOfAnotherTypeFallBackInsteadOfThrowing) {
  Status s = StatusFromErrorBody(404, R"({"error":{"code":1,"message":["x"],"details":"y"}})");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "unknown error");
  EXPECT_TRUE(s.details().empty());
  EXPECT_EQ(StatusFromErrorBody(502, "<html>bad gateway</html>").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace cohort::client
