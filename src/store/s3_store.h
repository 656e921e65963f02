// The object store in an S3-compatible bucket (AWS S3, Ceph's RADOS Gateway), over libcurl with
// its built-in SigV4 signing (docs/data.md, "The S3 backend"). Objects of key K are stored as
// PREFIX/K in BUCKET (S3Location), reached with path-style URLs ENDPOINT/BUCKET/PREFIX/K.
//
// - A put up to `multipart_threshold` bytes is one PUT; a larger one is a multipart upload of
//   `part_size` parts, completed only when every part is stored (S3 shows the object then, whole)
//   and aborted on any failure, so that no parts are left behind.
// - Every request is retried with exponential backoff and jitter when the server cannot be
//   reached, times out or answers 500/502/503/504/408/429/SlowDown; never on another 4xx. A
//   server that accepts a connection and then stalls is cut off after `stall_timeout`.
// - Get never holds more than max_bytes: a larger object is refused from its Content-Length,
//   before its body is read. GetRange is a GET with a Range header (416, a range from the end on,
//   is no bytes).
//
// An S3Store is not thread-safe: it reuses one curl handle (and its connections) for all its
// requests. Use one per thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/object_store.h"
#include "store/s3_client.h"  // S3Options
#include "store/s3_config.h"

namespace cohort::store {

class S3Store final : public ObjectStore {
 public:
  // Checks the options (part_size at least 5 MiB, attempts at least 1); reaches nothing yet.
  static StatusOr<std::unique_ptr<S3Store>> Open(S3Connection connection, S3Location location,
                                                 S3Options options = {});
  // The store `--store s3://BUCKET/PREFIX` names, reached as the connection file at
  // `connection_file` says (ParseS3Location, LoadS3Connection: their errors as they give them).
  static StatusOr<std::unique_ptr<S3Store>> Open(std::string_view url,
                                                 const std::string& connection_file,
                                                 S3Options options = {});
  ~S3Store() override;
  S3Store(const S3Store&) = delete;
  S3Store& operator=(const S3Store&) = delete;

  Status Put(const std::string& key, std::string_view data) override;
  Status PutFile(const std::string& key, const std::string& path) override;
  StatusOr<std::string> Get(const std::string& key, size_t max_bytes) override;
  StatusOr<std::string> GetRange(const std::string& key, int64_t offset, size_t length) override;
  Status GetFile(const std::string& key, const std::string& path) override;
  StatusOr<ObjectInfo> Head(const std::string& key) override;
  StatusOr<ListPage> List(const std::string& prefix, const std::string& after,
                          size_t limit) override;
  Status Delete(const std::string& key) override;

  // The keys (without the store's prefix) of multipart uploads begun under `prefix` and neither
  // completed nor aborted: what a crash mid-upload leaves, which the bucket still bills for.
  StatusOr<std::vector<std::string>> PendingUploads(const std::string& prefix);
  // Makes the bucket; OK if this account has it already.
  Status CreateBucket();

 private:
  struct Impl;
  explicit S3Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::store
