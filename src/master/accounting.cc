#include "master/accounting.h"

namespace cohort::master {

StatusOr<UsageReport> UsageReports::Compute(const UsageQuery& query) {
  return ComputeUsage(store_, query, clock_.Now());
}

void UsageReports::Compute(const UsageQuery& query,
                           std::function<void(StatusOr<UsageReport>)> done) {
  // Refused at once, on the loop, rather than after a wait: nothing to read for these.
  auto valid = UsageAccumulator::Create(query, clock_.Now());
  if (!valid.ok()) return done(valid.status());
  if (!reader_) return done(Compute(query));
  reader_->Submit(query, clock_.Now(), std::move(done));
}

void UsageReports::StartReader(std::unique_ptr<state::StateStore> store, UsageReader::Post post) {
  reader_ = std::make_unique<UsageReader>(std::move(store), std::move(post));
}

}  // namespace cohort::master
