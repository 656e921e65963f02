#include "api/api_server.h"

#include <gtest/gtest.h>

#include "api/hand_run_loop.h"
#include "model/json.h"

namespace cohort::api {
namespace {

// Found by fuzz/api_fuzzer.cc: GET /api/v1/jobs/%FF quoted the byte 0xFF in its error, and
// dump() threw on text that is not UTF-8, so the client got a bare 500 instead of the 400.
TEST(ErrorResponse, QuotesTextThatIsNotUtf8) {
  HttpResponse r = ErrorResponse(Status::InvalidArgument("\"\xff\" is not a job id"));
  EXPECT_EQ(r.status, 400);
  auto doc = ParseJson(r.body);
  ASSERT_TRUE(doc.ok()) << r.body;
  EXPECT_EQ((*doc)["error"]["message"], "\"\xEF\xBF\xBD\" is not a job id");  // U+FFFD
}

// What Handle does with every handler's answer: an error goes out as ErrorResponse would write
// it, with its status and details, and only once.
TEST(SendAnswer, AnErrorGoesOutAsItsErrorBodyWithItsHttpStatus) {
  RecordingResponder responder;
  SendAnswer(responder, Status::InvalidArgument("invalid team", {"guaranteed_gpus: required"}));
  EXPECT_EQ(responder.answers, 1);
  EXPECT_EQ(responder.response.status, 400);
  auto doc = ParseJson(responder.response.body);
  ASSERT_TRUE(doc.ok()) << responder.response.body;
  EXPECT_EQ((*doc)["error"]["code"], "invalid_argument");
  EXPECT_EQ((*doc)["error"]["message"], "invalid team");
  EXPECT_EQ((*doc)["error"]["details"], Json::array({"guaranteed_gpus: required"}));
  EXPECT_EQ(
      responder.response.body,
      ErrorResponse(Status::InvalidArgument("invalid team", {"guaranteed_gpus: required"})).body);
}

TEST(SendAnswer, AResponseGoesOutAsItIsHeadersIncluded) {
  RecordingResponder responder;
  HttpResponse created{201, "application/json", "{\"id\":7}"};
  created.headers.emplace_back("Idempotent-Replayed", "true");
  SendAnswer(responder, created);
  EXPECT_EQ(responder.answers, 1);
  EXPECT_EQ(responder.response.status, 201);
  EXPECT_EQ(responder.response.body, "{\"id\":7}");
  EXPECT_EQ(responder.response.headers, created.headers);
}

}  // namespace
}  // namespace cohort::api
