// Per-job credentials for an S3 store whose connection file names a role (docs/security.md, "The
// object store"): each job's agents get temporary keys that reach only the job's keys
// (store/s3_sts.h), issued on a thread of their own so that the master's loop never waits on STS,
// kept until half their life has passed, and issued anew after that.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "os/worker_thread.h"
#include "store/access_issuer.h"
#include "store/s3_config.h"

namespace cohort::store {

class S3AccessIssuer final : public StoreAccessIssuer {
 public:
  S3AccessIssuer(S3Connection connection, S3Location location,
                 std::chrono::seconds lifetime = std::chrono::hours(1));
  ~S3AccessIssuer() override;
  std::optional<StoreAccess> For(const AccessScope& scope) override;

 private:
  struct Issued {
    StoreAccess access;
    std::chrono::steady_clock::time_point renew_at, expires_at;
  };
  void Issue(const AccessScope& scope);

  const S3Connection connection_;
  const S3Location location_;
  const std::chrono::seconds lifetime_;
  std::mutex mu_;
  std::map<AccessScope, Issued> issued_;
  std::set<AccessScope> pending_;
  // Failed issues are not tried again before this (per scope).
  std::map<AccessScope, std::chrono::steady_clock::time_point> failed_until_;
  WorkerThread worker_{WorkerThread::AtStop::kDropQueued};  // last: it runs Issue
};

}  // namespace cohort::store
