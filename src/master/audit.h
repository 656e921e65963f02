// The audit log of state-changing API calls (docs/security.md, "Audit and accounting"): an entry
// is begun (stamped with the master's time) before a call runs and finished with its answer;
// the tick prunes those past the retention.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "state/state_store.h"

namespace cohort::master {

class AuditLog {
 public:
  AuditLog(state::StateStore& store, const Clock& clock, Duration retention)
      : store_(store), clock_(clock), retention_(retention) {}

  // Errors are the store's: the caller must not run the call if Begin fails, and must not
  // report success if Finish does.
  StatusOr<int64_t> Begin(state::AuditEntry entry);
  Status Finish(int64_t seq, int status, const std::string& target, const std::string& outcome);
  StatusOr<std::vector<state::AuditEntry>> Read(const state::AuditQuery& query);
  // Prunes entries past the retention: once an hour, in bounded batches on each tick until none
  // is left. A failure changes nothing in memory and is tried again later.
  void Prune(Timestamp now);

 private:
  state::StateStore& store_;
  const Clock& clock_;
  Duration retention_;
  std::optional<Timestamp> pruned_at_;  // the start of the last round of pruning
  bool pruning_ = false;                // a round has more to prune
};

}  // namespace cohort::master
