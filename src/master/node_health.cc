// Node health (docs/reliability.md): nodes that fall silent are LOST with their tasks, and
// what an admin does to nodes (drain, undrain, remove).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/strings.h"
#include "common/units.h"
#include "master/master.h"

namespace cohort::master {

void Master::SetNodeState(NodeEntry& entry, NodeState state) {
  entry.node.state = state;
  cluster_.SetReady(entry.node.info.id, entry.node.Schedulable());
  InvalidateResidue();
  AnnounceNode(entry.node.info.id);
}

void Master::CheckNodeTimeouts(Timestamp now) {
  for (const auto& id : nodes_.SilentFor(config_.node_timeout, now)) {
    NodeEntry& entry = nodes_.At(id);
    std::string silent = FormatDuration(now - entry.node.last_seen);
    spdlog::warn("node {} is LOST: silent for {} (node timeout {}); its tasks are lost", id, silent,
                 FormatDuration(config_.node_timeout));
    SetNodeState(entry, NodeState::kLost);
    resources_.ForgetNode(id);  // what it measured last is no longer so
    Status s = LoseTasksOn(id, fmt::format("node {} was silent for {} (node timeout {})", id,
                                           silent, FormatDuration(config_.node_timeout)));
    if (!s.ok()) return;  // the write failed: the master has failed stop
  }
}

Status Master::LoseTasksOn(const std::string& node_id, const std::string& why) {
  WriteBatch batch(*this);  // every job that had a task there, in one commit
  TaskEnds ends;
  Timestamp now = clock_.Now();
  std::vector<JobId> active(active_.begin(), active_.end());
  for (JobId id : active) {
    Job& job = jobs_.at(id);
    for (auto& t : job.tasks) {
      if (t.node_id != node_id || IsTerminal(t.state)) continue;
      TaskReport lost{job.IdOf(t), TaskState::kLost, std::nullopt, std::nullopt,
                      0,           std::nullopt,     now};
      RecordTaskReport(ends, job, t, lost, why);
    }
  }
  return Conclude(ends);
}

StatusOr<Master::NodeEntry*> Master::ChangeNode(const std::string& node_id,
                                                const std::function<void(Node&)>& change) {
  NodeEntry* entry = nodes_.Find(node_id);
  if (!entry) return Status::NotFound(fmt::format("node {} does not exist", node_id));
  // Written first: if the store refuses, nothing in memory has changed.
  Node node = entry->node;
  change(node);
  COHORT_RETURN_IF_ERROR(store_->SaveNode(node));
  entry->node = std::move(node);
  SetNodeState(*entry, entry->node.state);
  return entry;
}

StatusOr<const Node*> Master::Drain(const std::string& node_id, std::string reason) {
  COHORT_ASSIGN_OR_RETURN(NodeEntry * entry, ChangeNode(node_id, [&](Node& node) {
                            node.drained = true;
                            node.drain_reason = std::move(reason);
                          }));
  spdlog::info("node {} drained{}", node_id,
               entry->node.drain_reason.empty() ? "" : ": " + entry->node.drain_reason);
  return &entry->node;
}

StatusOr<const Node*> Master::Undrain(const std::string& node_id) {
  COHORT_ASSIGN_OR_RETURN(NodeEntry * entry, ChangeNode(node_id, [](Node& node) {
                            node.drained = false;
                            node.drain_reason.clear();
                          }));
  spdlog::info("node {} undrained", node_id);
  return &entry->node;
}

Status Master::RemoveNode(const std::string& node_id) {
  NodeEntry* entry = nodes_.Find(node_id);
  if (!entry) return Status::NotFound(fmt::format("node {} does not exist", node_id));
  // Its credential first: a removed node must join again (with the join token) to come back.
  COHORT_RETURN_IF_ERROR(accounts_.RevokeAll(TokenKind::kNode, node_id));
  COHORT_RETURN_IF_ERROR(store_->DeleteNode(node_id));
  spdlog::info("node {} removed", node_id);
  // Nothing may be placed there while its tasks are given up.
  SetNodeState(*entry, NodeState::kLost);
  Status s = LoseTasksOn(node_id, fmt::format("node {} was removed by an admin", node_id));
  cluster_.RemoveNode(node_id);
  nodes_.Remove(node_id);
  resources_.ForgetNode(node_id);
  InvalidateResidue();
  AnnounceNode(node_id);
  return s;
}

void Master::NoteBackoff(const Job& job) {
  if (!job.not_before) return;
  if (!backoff_ends_ || *job.not_before < *backoff_ends_) backoff_ends_ = job.not_before;
}

}  // namespace cohort::master
