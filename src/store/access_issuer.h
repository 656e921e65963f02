// How an agent gets to reach the object store for one job's keys (docs/security.md, "The object
// store"): at once and the same for every job for a directory store or an S3 store without a
// role; for an S3 store with a role, short-lived credentials that reach only the job's prefix,
// issued off the caller's thread (store/s3_access_issuer.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "model/store_access.h"

namespace cohort::store {

class StoreAccessIssuer {
 public:
  virtual ~StoreAccessIssuer() = default;
  // The access to the keys under `key_prefix` ("jobs/7"), or nothing yet: it is being issued,
  // and the caller asks again later (an agent's upload waits for its next report). Never
  // blocks.
  virtual std::optional<StoreAccess> For(const std::string& key_prefix) = 0;
};

// `access` for every job.
std::unique_ptr<StoreAccessIssuer> FixedStoreAccess(StoreAccess access);

}  // namespace cohort::store
