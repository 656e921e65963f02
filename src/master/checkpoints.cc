// Checkpoints reported by tasks (docs/observability.md, "Checkpoint reports"): the job keeps its
// newest, the store has it with the job, and the cluster core has it for choosing victims
// (docs/scheduler.md, "Checkpoints").
#include <algorithm>

#include "master/master.h"

namespace cohort::master {
namespace {

// An agent moves a task's checkpoint at most once per 5 s (agent/checkpoint_throttle.h); this
// holds the master to one write per job in that time whatever agents send, or how many tasks a
// gang has. A newer checkpoint refused here comes again with the next report: reports carry it
// until it changes.
constexpr Duration kMinCheckpointGap = std::chrono::seconds(5);

}  // namespace

bool Master::NoteCheckpoint(Job& job, Timestamp at) {
  // A job that holds nothing any more has no attempt to protect (a checkpoint made in the grace
  // period comes with the task's end, while the job still holds its resources).
  if (!active_.count(job.id)) return false;
  if (job.last_checkpoint_at && at <= *job.last_checkpoint_at) return false;
  const Timestamp now = clock_.Now();
  auto taken = checkpoint_taken_at_.find(job.id);
  if (taken != checkpoint_taken_at_.end() && now - taken->second < kMinCheckpointGap) return false;
  checkpoint_taken_at_[job.id] = now;
  // Kept as the agent said, so that a report of the same checkpoint is not a newer one; the
  // cluster core gets no time later than ours, so that an agent's clock ahead of the master's
  // cannot make its job look cheaper to preempt than it is.
  job.last_checkpoint_at = at;
  cluster_.NoteCheckpoint(job.id, std::min(at, now));
  return true;
}

}  // namespace cohort::master
