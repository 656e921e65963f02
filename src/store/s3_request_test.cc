// The pure parts of the S3 backend's requests: encoding, canonical queries, which failures are
// tried again and after how long, and what each HTTP error becomes.
#include "store/s3_request.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

namespace cohort::store {
namespace {

using std::chrono::milliseconds;

TEST(S3Request, KeysAreEncodedAsS3DoesSlashesKeptInPaths) {
  EXPECT_EQ(S3Encode("jobs/7/out-put_1.~txt", true), "jobs/7/out-put_1.~txt");
  EXPECT_EQ(S3Encode("a b+c%d", true), "a%20b%2Bc%25d");
  EXPECT_EQ(S3Encode("a/b", false), "a%2Fb");
  EXPECT_EQ(S3Encode("?#&=;:@$,'\"<>!*()[]", true),
            "%3F%23%26%3D%3B%3A%40%24%2C%27%22%3C%3E%21%2A%28%29%5B%5D");
  EXPECT_EQ(S3Encode("caf\xc3\xa9", true), "caf%C3%A9");  // UTF-8 bytes, upper-case hex
  EXPECT_EQ(S3Url("http://127.0.0.1:7480", "b", "p/a b"), "http://127.0.0.1:7480/b/p/a%20b");
  EXPECT_EQ(S3Url("http://h", "b", ""), "http://h/b");
  EXPECT_EQ(S3Url("http://h", "b", "k", "uploads="), "http://h/b/k?uploads=");
}

TEST(S3Request, QueriesAreSortedEncodedAndValuelessParametersHaveAnEqualsSign) {
  EXPECT_EQ(S3Query({{"uploads", ""}}), "uploads=");
  EXPECT_EQ(S3Query({{"uploadId", "2~x"}, {"partNumber", "10"}}), "partNumber=10&uploadId=2~x");
  EXPECT_EQ(
      S3Query(
          {{"start-after", "p/a b"}, {"prefix", "p/a+"}, {"list-type", "2"}, {"max-keys", "1000"}}),
      "list-type=2&max-keys=1000&prefix=p%2Fa%2B&start-after=p%2Fa%20b");
  EXPECT_EQ(S3Query({}), "");
}

TEST(S3Request, OnlyBusyOrUnreachableServersAreTriedAgain) {
  for (long status : {500L, 502L, 503L, 504L, 408L, 429L}) {
    EXPECT_TRUE(IsRetryableHttp(status, "")) << status;
  }
  for (long status : {400L, 401L, 403L, 404L, 409L, 411L, 412L, 416L, 501L}) {
    EXPECT_FALSE(IsRetryableHttp(status, "")) << status;
  }
  EXPECT_TRUE(IsRetryableHttp(503, "SlowDown"));
  EXPECT_TRUE(IsRetryableHttp(400, "SlowDown"));
  EXPECT_FALSE(IsRetryableHttp(403, "AccessDenied"));
  for (CURLcode rc : {CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_OPERATION_TIMEDOUT,
                      CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING}) {
    EXPECT_TRUE(IsRetryableTransport(rc)) << curl_easy_strerror(rc);
  }
  // Our own callbacks stopping a transfer (too large, a source that shrank), or a bad request.
  for (CURLcode rc : {CURLE_OK, CURLE_WRITE_ERROR, CURLE_ABORTED_BY_CALLBACK, CURLE_READ_ERROR,
                      CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL}) {
    EXPECT_FALSE(IsRetryableTransport(rc)) << curl_easy_strerror(rc);
  }
}

TEST(S3Request, BackoffDoublesUpToItsCapWithJitterInTheUpperHalf) {
  const milliseconds first(100), most(1000);
  EXPECT_EQ(S3Backoff(1, first, most, 1.0), milliseconds(100));
  EXPECT_EQ(S3Backoff(2, first, most, 1.0), milliseconds(200));
  EXPECT_EQ(S3Backoff(3, first, most, 1.0), milliseconds(400));
  EXPECT_EQ(S3Backoff(4, first, most, 1.0), milliseconds(800));
  EXPECT_EQ(S3Backoff(5, first, most, 1.0), milliseconds(1000));
  EXPECT_EQ(S3Backoff(60, first, most, 1.0), milliseconds(1000));  // no overflow
  EXPECT_EQ(S3Backoff(1, first, most, 0.0), milliseconds(50));
  EXPECT_EQ(S3Backoff(3, first, most, 0.5), milliseconds(300));
  EXPECT_EQ(S3Backoff(3, first, most, 7.0), milliseconds(400));  // clamped
}

TEST(S3Request, HttpErrorsBecomeStatusesNamingCodeMessageAndEndpoint) {
  const std::string no_key =
      "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>";
  Status missing = S3HttpError(404, no_key, "GET s3://b/k", "http://h:1");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "GET s3://b/k: HTTP 404 NoSuchKey: The specified key does not exist. (object store "
            "at http://h:1)");
  EXPECT_EQ(S3HttpError(404, "", "HEAD s3://b/k", "e").code(), StatusCode::kNotFound);
  Status bucket = S3HttpError(404, "<Error><Code>NoSuchBucket</Code></Error>", "GET", "e");
  EXPECT_EQ(bucket.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bucket.message().find("NoSuchBucket"), std::string::npos);
  Status denied = S3HttpError(
      403, "<Error><Code>SignatureDoesNotMatch</Code><Message>check your key</Message></Error>",
      "PUT s3://b/k", "http://h:1");
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(),
            "PUT s3://b/k: the object store at http://h:1 refused the credentials or this access: "
            "HTTP 403 SignatureDoesNotMatch: check your key");
  Status busy = S3HttpError(503, "<Error><Code>SlowDown</Code></Error>", "PUT", "e");
  EXPECT_EQ(busy.code(), StatusCode::kUnavailable);
  EXPECT_NE(busy.message().find("HTTP 503 SlowDown"), std::string::npos);
  EXPECT_EQ(S3HttpError(502, "<html>bad gateway</html>", "GET", "e").code(),
            StatusCode::kUnavailable);
  Status odd = S3HttpError(411, "<Error><Code>MissingContentLength</Code></Error>", "PUT", "e");
  EXPECT_EQ(odd.code(), StatusCode::kInternal);
  EXPECT_NE(odd.message().find("HTTP 411 MissingContentLength"), std::string::npos);
  // A long message (AWS puts the string to sign in some) is cut.
  Status long_one = S3HttpError(
      400, "<Error><Code>X</Code><Message>" + std::string(5000, 'm') + "</Message></Error>", "GET",
      "e");
  EXPECT_LT(long_one.message().size(), 500u);
}

}  // namespace
}  // namespace cohort::store
