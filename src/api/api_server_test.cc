#include "api/api_server.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cohort::api
