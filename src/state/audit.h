// The audit log as the store keeps it: one entry per state-changing API call (docs/security.md,
// "Audit and accounting"). Append-only: an entry is written before the call runs and completed
// with its answer; nothing but the retention's pruning removes one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/time.h"

namespace cohort::state {

struct AuditEntry {
  int64_t seq = 0;  // given by the store, rising
  Timestamp time;
  std::string user;    // who, as the API names the caller
  std::string remote;  // the client's address and port: "10.1.2.3:53412", "[::1]:40000"
  std::string method;
  std::string path;    // without the query
  std::string target;  // "job 12", "team vision", "node gpu-7"; empty if none
  // The answer's HTTP status and, for an error, what went wrong; no status: the call's outcome
  // was never recorded (the master stopped during the call, or could not complete the entry).
  std::optional<int> status;
  std::string outcome;
};

// Entries with since <= time < until (and of `user`, and about `target` such as "job 12", if
// not empty); the newest `limit`, oldest first.
struct AuditQuery {
  Timestamp since;
  Timestamp until;
  std::string user;
  int64_t limit = 100;
  std::string target;
};

}  // namespace cohort::state
