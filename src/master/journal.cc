#include "master/journal.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace cohort::master {

Journal::Journal(state::StateStore& store, std::function<void(const Status&)> fail_stop,
                 StateDisk disk)
    : store_(store), fail_stop_(std::move(fail_stop)), disk_(std::move(disk)) {}

Journal::Batch::Batch(Journal& journal) : journal_(journal) {
  if (journal_.depth_++ > 0) return;
  if (Status s = journal_.store_.BeginBatch(); !s.ok()) journal_.FailStop(s);
}

Journal::Batch::~Batch() {
  if (--journal_.depth_ > 0) return;
  Status committed = journal_.store_.CommitBatch();
  if (!committed.ok()) {
    journal_.FailStop(Status::Internal("committing a batch of writes: " + committed.message()));
  }
  std::set<JobId> jobs = std::move(journal_.unannounced_jobs_);
  std::set<std::string> nodes = std::move(journal_.unannounced_nodes_);
  journal_.unannounced_jobs_.clear();
  journal_.unannounced_nodes_.clear();
  // After a failed write the master stops (FailStop does not return but in tests): nothing it
  // did since is announced.
  if (!journal_.listener_ || journal_.stopped_) return;
  for (JobId id : jobs) journal_.listener_->OnJobChanged(id);
  for (const auto& node : nodes) journal_.listener_->OnNodeChanged(node);
}

void Journal::AnnounceJob(JobId id) {
  if (depth_ > 0) {
    unannounced_jobs_.insert(id);
  } else if (listener_) {
    listener_->OnJobChanged(id);
  }
}

void Journal::AnnounceNode(const std::string& node_id) {
  if (depth_ > 0) {
    unannounced_nodes_.insert(node_id);
  } else if (listener_) {
    listener_->OnNodeChanged(node_id);
  }
}

Status Journal::CheckWritable() {
  disk_.Check();
  if (const auto& why = disk_.read_only()) return Status::Unavailable(*why);
  return Status::Ok();
}

void Journal::FailStop(const Status& status) {
  stopped_ = true;
  spdlog::critical(
      "a write to the state store failed after the master changed its memory ({}); stopping so "
      "that a restart reloads the last durable state. Fix the store (disk space, permissions, "
      "locks) and start the master again.",
      status.ToString());
  spdlog::default_logger()->flush();
  if (fail_stop_) {
    fail_stop_(status);
  } else {
    std::_Exit(70);  // EX_SOFTWARE; no destructor may write anything more
  }
}

}  // namespace cohort::master
