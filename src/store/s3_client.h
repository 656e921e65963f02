// How the S3 backend talks to an S3-compatible server (store/s3_store.h) and its STS
// (store/s3_sts.h): one curl handle, SigV4-signed requests, retries with backoff and jitter,
// bounded answers. Internal to the store module.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/s3_config.h"

namespace cohort::store {

// A listing of 1,000 keys of up to 1 KiB each, with their XML around them.
inline constexpr size_t kS3MaxXmlBody = 16 << 20;

struct S3Options {
  // Puts larger than this are multipart uploads.
  size_t multipart_threshold = size_t{64} << 20;
  // The size of each part but the last; S3 refuses parts under 5 MiB. Raised as needed to keep
  // an upload within S3's 10,000 parts.
  size_t part_size = size_t{16} << 20;
  // Tries per request (1: no retry), and the wait before the first retry (doubled each retry, at
  // most max_backoff).
  int attempts = 5;
  std::chrono::milliseconds first_backoff{200};
  std::chrono::milliseconds max_backoff{10'000};
  std::chrono::milliseconds connect_timeout{5'000};
  // A transfer that moves no byte for this long is cut off (and retried): a paused or wedged
  // server cannot hang a caller.
  std::chrono::seconds stall_timeout{30};
  // For tests: called after part `part` (from 1) of a multipart upload is stored, e.g. to change
  // the source under the upload.
  std::function<void(int part)> after_part;
};

// Where an upload's bytes come from: a buffer, or `length` bytes of an open file from `offset`.
struct S3Source {
  std::string_view data;
  int fd = -1;
  int64_t offset = 0;
  int64_t length = 0;
  std::string path;  // the file's, for messages
};

// `length` bytes of `whole` from `offset`.
S3Source S3SourceRange(const S3Source& whole, int64_t offset, int64_t length);

// One request; the fields that apply are set.
struct S3Call {
  std::string method;  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  std::string what;                  // "PUT s3://bucket/prefix/key", for messages
  const S3Source* upload = nullptr;  // a POST's is a buffer
  std::string content_type;
  // Where a 2xx answer's body goes: a string of at most `into_max` bytes, or a file.
  std::string* into = nullptr;
  size_t into_max = 0;
  int into_fd = -1;
  std::string into_path;
  // A GET of part of the object: "bytes=FIRST-LAST" (the Range header), answered 206.
  std::string range;
};

// A call with nothing to send and no body wanted; set the rest.
S3Call NewS3Call(std::string method, std::string url, std::string what);

struct S3Answer {
  long status = 0;
  std::string error_body;  // a non-2xx answer's body (S3 error XML), cut at kS3MaxErrorBody
  std::string etag;
  int64_t content_length = -1;
};

inline bool S3Ok(long status) { return status >= 200 && status < 300; }

// Not thread-safe: one curl handle (and its connections) for all requests.
class S3Client {
 public:
  // `service` is what requests are signed for: "s3" or "sts".
  static StatusOr<std::unique_ptr<S3Client>> Create(S3Connection connection, S3Options options,
                                                    std::string service);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // `call`, tried again (after a backoff) while the server cannot be reached or answers that it
  // is busy. The last answer whatever its status, or why none came: kUnavailable naming the
  // endpoint, kResourceExhausted for an answer larger than the call takes, or the source's or
  // sink's file error.
  StatusOr<S3Answer> Perform(const S3Call& call);
  // `call`, whose answer must be 2xx (else S3HttpError's status).
  StatusOr<S3Answer> PerformOk(const S3Call& call);

  const S3Connection& connection() const { return connection_; }
  const S3Options& options() const { return options_; }

 private:
  S3Client(S3Connection connection, S3Options options, std::string service);
  int Try(const S3Call& call, void* transfer, char* error_buffer);

  S3Connection connection_;
  S3Options options_;
  std::string service_;
  void* curl_ = nullptr;
  const struct CurlLibrary* curl_lib_ = nullptr;  // store/curl_library.h
  std::minstd_rand random_;
};

}  // namespace cohort::store
