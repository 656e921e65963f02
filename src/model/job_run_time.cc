#include "model/job_run_time.h"

namespace cohort {
namespace {

// An attempt that has been placed and has not yet been recorded in the history.
bool HoldsNodes(const Job& job) {
  return job.placed_at && (job.state == JobState::kStarting || job.state == JobState::kRunning ||
                           job.state == JobState::kStopping);
}

}  // namespace

Duration AttemptRunTime(const Job& job, Timestamp now) {
  if (HoldsNodes(job)) return now - *job.placed_at;
  if (job.state == JobState::kPending || job.history.empty()) return Duration{};
  const AttemptSummary& last = job.history.back();
  if (!last.started_at || !last.finished_at) return Duration{};
  return *last.finished_at - *last.started_at;
}

Duration TotalRunTime(const Job& job, Timestamp now) {
  Duration total{};
  for (const auto& a : job.history) {
    if (a.started_at && a.finished_at) total += *a.finished_at - *a.started_at;
  }
  if (int64_t gpus = job.spec.TotalResources().gpus; gpus > 0) total += job.dropped_service / gpus;
  if (HoldsNodes(job)) total += now - *job.placed_at;
  return total;
}

}  // namespace cohort
