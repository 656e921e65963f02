// The audit log of state-changing API calls (docs/security.md, "Audit and accounting"): its
// entries go through the master to its store, and the tick prunes those past the retention.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/units.h"
#include "master/master.h"

namespace cohort::master {
namespace {

// Pruning is a write on the event loop: each batch is bounded, and a backlog (the retention
// shortened, a flood of calls) is worked off one batch per tick.
constexpr int64_t kAuditPruneBatch = 5'000;
constexpr Duration kAuditPruneEvery = std::chrono::hours(1);

}  // namespace

StatusOr<int64_t> Master::BeginAudit(state::AuditEntry entry) {
  entry.time = clock_.Now();
  return store_->BeginAudit(entry);
}

Status Master::FinishAudit(int64_t seq, int status, const std::string& target,
                           const std::string& outcome) {
  return store_->FinishAudit(seq, status, target, outcome);
}

StatusOr<std::vector<state::AuditEntry>> Master::Audit(const state::AuditQuery& query) {
  return store_->LoadAudit(query);
}

void Master::PruneAudit(Timestamp now) {
  if (!audit_pruning_ && audit_pruned_at_ && now - *audit_pruned_at_ < kAuditPruneEvery) return;
  if (!audit_pruning_) audit_pruned_at_ = now;
  auto pruned = store_->PruneAudit(now - config_.audit_retention, kAuditPruneBatch);
  if (!pruned.ok()) {
    // Nothing in memory depends on it: the next round tries again.
    spdlog::error("pruning the audit log: {}", pruned.status().ToString());
    audit_pruning_ = false;
    return;
  }
  audit_pruning_ = *pruned == kAuditPruneBatch;
  if (*pruned > 0) {
    spdlog::info("audit log: pruned {} entries older than {}", *pruned,
                 FormatDuration(config_.audit_retention));
  }
}

}  // namespace cohort::master
