// SHA-256, as the store names content (checkpoint and dataset blobs, shard tables): lowercase hex
// of the whole content. One implementation, OpenSSL's, for every place that names or checks
// content by its hash.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::store {

// A SHA-256 fed piece by piece.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  // kInternal once OpenSSL fails; every later call then fails too.
  Status Update(std::string_view bytes);
  // The hash of everything given so far, in lowercase hex. Once only.
  StatusOr<std::string> Finish();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
  Status status_;
};

StatusOr<std::string> Sha256Hex(std::string_view bytes);
// The hash of what `fd` reads from its current offset to its end.
StatusOr<std::string> Sha256OfFile(int fd);
// Whether `text` could be a hash this file makes (64 lowercase hex digits).
bool IsSha256Hex(std::string_view text);

}  // namespace cohort::store
