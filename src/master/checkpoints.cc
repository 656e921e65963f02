// Checkpoints reported by tasks (docs/observability.md, "Checkpoint reports"): the job keeps its
// newest, the store has it with the job, and the cluster core has it for choosing victims
// (docs/scheduler.md, "Checkpoints").
#include <algorithm>

#include "master/reconciler.h"

namespace cohort::master {
namespace {

// An agent moves a task's checkpoint at most once per 5 s (agent/checkpoint_throttle.h); this
// holds the master to one write per job in that time whatever agents send, or how many tasks a
// gang has. A newer checkpoint refused here comes again with the next report: reports carry it
// until it changes.
constexpr Duration kMinCheckpointGap = std::chrono::seconds(5);

}  // namespace

bool Reconciler::NoteCheckpoint(Job& job, Timestamp at) {
  // A job that holds nothing any more has no attempt to protect (a checkpoint made in the grace
  // period comes with the task's end, while the job still holds its resources).
  if (!jobs_.IsActive(job.id)) return false;
  if (job.last_checkpoint_at && at <= *job.last_checkpoint_at) return false;
  const Timestamp now = clock_.Now();
  // Entries of jobs that hold nothing any more are dropped once they could outnumber the live
  // ones (amortised: not a scan per report); an earlier attempt's entry does not count.
  if (checkpoint_taken_at_.size() > 2 * jobs_.active().size() + 16) {
    for (auto it = checkpoint_taken_at_.begin(); it != checkpoint_taken_at_.end();) {
      it = jobs_.IsActive(it->first) ? std::next(it) : checkpoint_taken_at_.erase(it);
    }
  }
  auto taken = checkpoint_taken_at_.find(job.id);
  if (taken != checkpoint_taken_at_.end() && taken->second.first == job.attempt &&
      now - taken->second.second < kMinCheckpointGap) {
    return false;
  }
  checkpoint_taken_at_[job.id] = {job.attempt, now};
  // Kept as the agent said, so that a report of the same checkpoint is not a newer one; the
  // cluster core gets no time later than ours, so that an agent's clock ahead of the master's
  // cannot make its job look cheaper to preempt than it is.
  job.last_checkpoint_at = at;
  scheduling_.cluster().NoteCheckpoint(job.id, std::min(at, now));
  return true;
}

}  // namespace cohort::master
