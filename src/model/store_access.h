// How an agent reaches the object store for one job (docs/data.md): what the master hands it in
// each of the job's task launches. The directory backend is a path every node sees (a one-machine
// cluster, or a shared file system); the S3 backend an endpoint, a bucket and credentials, which
// the master makes short-lived and limited to the job's keys where the store allows.
#pragma once

#include <optional>
#include <string>

#include "common/time.h"

namespace cohort {

struct StoreAccess {
  // The directory backend's root; empty for S3.
  std::string directory;
  // The S3 backend.
  std::string endpoint;  // e.g. http://127.0.0.1:7480
  std::string region;
  std::string bucket;
  std::string prefix;  // every key is under it; empty: the whole bucket
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // with short-lived credentials
  std::optional<Timestamp> expires = {};

  bool empty() const { return directory.empty() && endpoint.empty(); }
};

}  // namespace cohort
