// The pure parts of the S3 backend's requests (store/s3_store.h): how keys and query strings are
// written in a URL, which failures are worth another try and how long to wait before it, and
// what an HTTP error becomes as a Status. No I/O: unit-tested in s3_request_test.cc.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace cohort::store {

// Percent-encodes `s` as S3 and SigV4 do: A-Z a-z 0-9 - . _ ~ are kept, '/' too when
// `keep_slash` (an object key in a path), every other byte is %XX in upper case. curl signs the
// path and query as written, and the gateway re-encodes what it decoded with these rules: the two
// must agree byte for byte.
std::string S3Encode(std::string_view s, bool keep_slash);

// "ENDPOINT/BUCKET" or "ENDPOINT/BUCKET/KEY" (path style), the key encoded, then "?QUERY" if any.
std::string S3Url(std::string_view endpoint, std::string_view bucket, std::string_view object_key,
                  std::string_view query = "");

// A query string in SigV4's canonical form: sorted by name, names and values encoded, a
// valueless parameter written "name=" (curl 7.88 signs "?uploads" as "uploads" while the gateway
// signs "uploads=").
std::string S3Query(std::vector<std::pair<std::string, std::string>> params);

// Whether an HTTP answer is worth another try: 500, 502, 503, 504, 408, 429, or the gateway
// asking to slow down (SlowDown). Never another 4xx: the same request would fail the same way.
bool IsRetryableHttp(long http_status, std::string_view s3_code);

// Whether a curl result (a CURLcode) is a failure to reach the server or a transfer cut short,
// worth another try: refused, unresolved, timed out, reset, nothing answered. Not one of our own
// callbacks stopping the transfer, nor a bad URL or option.
bool IsRetryableTransport(int curl_code);

// How long to wait before try number `retry` (1: the first retry): `first`, doubled each retry,
// at most `most`, then scaled by `jitter` in [0, 1] into [half of it, all of it], so that clients
// that failed together do not come back together.
std::chrono::milliseconds S3Backoff(int retry, std::chrono::milliseconds first,
                                    std::chrono::milliseconds most, double jitter);

// What an HTTP answer that is not 2xx means, for the request `what` ("GET s3://b/p/k"), the error
// body (S3's <Error> XML, possibly empty) read for its Code and Message:
// 404 -> kNotFound (NoSuchBucket -> kFailedPrecondition: the store is misconfigured, not empty),
// 401/403 -> kPermissionDenied, 408/429/5xx -> kUnavailable, other -> kInternal; each message
// names the status, the S3 code and message, and the endpoint.
Status S3HttpError(long http_status, std::string_view body, std::string_view what,
                   std::string_view endpoint);

}  // namespace cohort::store
