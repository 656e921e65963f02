// How an agent gets to reach the object store for one job's keys (docs/security.md, "The object
// store"): at once and the same for every job for a directory store or an S3 store without a
// role; for an S3 store with a role, short-lived credentials that reach only the job's prefix,
// issued off the caller's thread (store/s3_access_issuer.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/store_access.h"

namespace cohort::store {

// What one job's agents may reach: every key under `prefix` ("jobs/7"), to read and write, and
// the keys in `reads` to read only (a key that ends in '/' stands for every key under it): the
// chunks and manifests of the job's datasets and code.
struct AccessScope {
  AccessScope(std::string prefix, std::vector<std::string> reads = {})  // NOLINT: implicit
      : prefix(std::move(prefix)), reads(std::move(reads)) {}
  std::string prefix;
  std::vector<std::string> reads;
  bool operator<(const AccessScope& other) const {
    return std::tie(prefix, reads) < std::tie(other.prefix, other.reads);
  }
};

class StoreAccessIssuer {
 public:
  virtual ~StoreAccessIssuer() = default;
  // The access to `scope`, or nothing yet: it is being issued, and the caller asks again later
  // (an agent's upload waits for its next report). Never blocks.
  virtual std::optional<StoreAccess> For(const AccessScope& scope) = 0;
};

// `access` for every job.
std::unique_ptr<StoreAccessIssuer> FixedStoreAccess(StoreAccess access);

}  // namespace cohort::store
