// The S3 XML documents the S3 backend reads (listings, errors, multipart uploads, STS
// credentials), parsed with expat: a small SAX pass into plain structs. Entities (&amp;, &#x2F;)
// are decoded by expat; a document that is not well-formed is kInternal naming the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/object_store.h"

namespace cohort::store {

// An S3 error body: <Error><Code>NoSuchKey</Code><Message>...</Message></Error> (STS wraps
// it in <ErrorResponse>).
struct S3Error {
  std::string code;
  std::string message;
};
// The error a body holds; nothing when it is not an S3 <Error> document (or is empty).
std::optional<S3Error> ParseS3Error(std::string_view xml);

// A ListObjectsV2 answer: keys as the bucket has them (with the store's prefix).
struct S3Listing {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
};
StatusOr<S3Listing> ParseS3Listing(std::string_view xml);

// The UploadId of an InitiateMultipartUpload answer.
StatusOr<std::string> ParseS3UploadId(std::string_view xml);

// A ListMultipartUploads answer: the keys of uploads begun and neither completed nor aborted.
struct S3Upload {
  std::string key;
  std::string upload_id;
};
StatusOr<std::vector<S3Upload>> ParseS3Uploads(std::string_view xml);

// The temporary credentials of an STS AssumeRole answer.
struct S3TemporaryCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  std::string expiration;  // ISO 8601, as STS wrote it
};
StatusOr<S3TemporaryCredentials> ParseS3AssumeRole(std::string_view xml);

}  // namespace cohort::store
