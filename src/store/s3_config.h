// Where an S3 backend's objects live and how to reach it (docs/data.md, "The S3 backend"): the
// location `s3://BUCKET/PREFIX` (given on the command line: it names no secret) and the
// connection file (YAML, mode 0600 or stricter: it holds the secret key).
//
// A secret (the secret key, a session token) never appears in a Status message, a log line or a
// ToString: errors name the file and the field, never a value of it.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::store {

struct S3Location {
  std::string bucket;
  // "" (the whole bucket) or a key prefix without a leading or trailing '/': the objects of key K
  // are stored as PREFIX/K.
  std::string prefix;
  // "s3://BUCKET/PREFIX", as ParseS3Location reads it back.
  std::string ToString() const;
};

// Reads "s3://BUCKET", "s3://BUCKET/" or "s3://BUCKET/PREFIX" (one trailing '/' is the same as
// none). The bucket follows S3's naming rules (3-63 lower-case letters, digits, '.' and '-',
// starting and ending with a letter or digit, not an IP address); the prefix is a key
// (store::CheckKey). kInvalidArgument naming what is wrong otherwise.
StatusOr<S3Location> ParseS3Location(std::string_view url);

struct S3Connection {
  std::string endpoint;  // "http(s)://HOST[:PORT]", without a path
  std::string region;    // "us-east-1" when the file names none
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // "" unless the credentials are temporary (STS)
  std::string role_arn;       // "" unless per-job credentials are issued (store/s3_sts.h)
  // The endpoint, region and access key; the secret key and token only as "set".
  std::string ToString() const;
};

// The fields of a connection file, from its text; `source` names it in errors. Unknown fields
// are errors naming the field (with "did you mean"), and so are missing or empty required ones
// (endpoint, access_key, secret_key).
StatusOr<S3Connection> ParseS3Connection(std::string_view yaml, std::string_view source);

// Reads the connection file at `path`, refusing one that others may read or write (its mode
// must be 0600 or stricter) or that is not a regular file.
StatusOr<S3Connection> LoadS3Connection(const std::string& path);

}  // namespace cohort::store
