// Accounting: what the master writes of each task's hold on its resources, and the usage report
// read back from the store (master/usage_report.h, docs/security.md "Audit and accounting").
#include <algorithm>

#include "master/master.h"
#include "master/usage_reader.h"

namespace cohort::master {

void Master::NoteHold(const Job& job, const Task& task) {
  Timestamp start = task.held_since.value_or(job.placed_at.value_or(job.submitted_at));
  std::optional<Timestamp> end;
  if (IsTerminal(task.state)) {
    // The agent's end of the task, when it says, within what the master has seen: not before
    // the hold began (another clock), not after now. A task that ended while the master was
    // down is not charged for the downtime.
    end = std::clamp(task.finished_at.value_or(clock_.Now()), start, std::max(start, clock_.Now()));
  }
  unsaved_holds_[job.id].push_back(state::TaskUsage{job.id, job.attempt, task.Name(), job.spec.team,
                                                    job.user, task.resources.gpus,
                                                    task.resources.milli_cpus, start, end});
}

StatusOr<UsageReport> Master::Usage(const UsageQuery& query) {
  return ComputeUsage(*store_, query, clock_.Now());
}

void Master::Usage(const UsageQuery& query, std::function<void(StatusOr<UsageReport>)> done) {
  // Refused at once, on the loop, rather than after a wait: nothing to read for these.
  auto valid = UsageAccumulator::Create(query, clock_.Now());
  if (!valid.ok()) return done(valid.status());
  if (!usage_reader_) return done(Usage(query));
  usage_reader_->Submit(query, clock_.Now(), std::move(done));
}

void Master::StartUsageReader(std::unique_ptr<state::StateStore> store, UsageReader::Post post) {
  usage_reader_ = std::make_unique<UsageReader>(std::move(store), std::move(post));
}

}  // namespace cohort::master
