#include "master/audit.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/units.h"

namespace cohort::master {
namespace {

// Pruning is a write on the event loop: each batch is bounded, and a backlog (the retention
// shortened, a flood of calls) is worked off one batch per tick.
constexpr int64_t kAuditPruneBatch = 5'000;
constexpr Duration kAuditPruneEvery = std::chrono::hours(1);

}  // namespace

StatusOr<int64_t> AuditLog::Begin(state::AuditEntry entry) {
  entry.time = clock_.Now();
  return store_.BeginAudit(entry);
}

Status AuditLog::Finish(int64_t seq, int status, const std::string& target,
                        const std::string& outcome) {
  return store_.FinishAudit(seq, status, target, outcome);
}

StatusOr<std::vector<state::AuditEntry>> AuditLog::Read(const state::AuditQuery& query) {
  return store_.LoadAudit(query);
}

void AuditLog::Prune(Timestamp now) {
  if (!pruning_ && pruned_at_ && now - *pruned_at_ < kAuditPruneEvery) return;
  if (!pruning_) pruned_at_ = now;
  auto pruned = store_.PruneAudit(now - retention_, kAuditPruneBatch);
  if (!pruned.ok()) {
    // Nothing in memory depends on it: the next round tries again.
    spdlog::error("pruning the audit log: {}", pruned.status().ToString());
    pruning_ = false;
    return;
  }
  pruning_ = *pruned == kAuditPruneBatch;
  if (*pruned > 0) {
    spdlog::info("audit log: pruned {} entries older than {}", *pruned, FormatDuration(retention_));
  }
}

}  // namespace cohort::master
