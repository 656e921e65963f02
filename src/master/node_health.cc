// Node health (docs/reliability.md): nodes that fall silent are LOST with their tasks, and
// what an admin does to nodes (drain, undrain, remove).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/strings.h"
#include "common/units.h"
#include "master/reconciler.h"

namespace cohort::master {

Status Reconciler::Load(uint64_t versions_above) {
  nodes_.VersionsAbove(versions_above);
  COHORT_ASSIGN_OR_RETURN(auto nodes, journal_.store().LoadNodes());
  Timestamp now = clock_.Now();
  for (auto& node : nodes) {
    // Every node gets a whole node timeout from this start to be heard from: the master's own
    // downtime is not the nodes' silence.
    node.last_seen = std::max(node.last_seen, now);
    scheduling_.PutNode(nodes_.Put(std::move(node), clock_.Monotonic()));
  }
  return Status::Ok();
}

void Reconciler::WasNotListening(Duration how_long) {
  spdlog::warn(
      "the master did not run for {} (paused, or its event loop stalled): every node gets a whole "
      "node timeout ({}) from now to be heard from before any is judged silent",
      FormatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(how_long)),
      FormatDuration(config_.node_timeout));
  nodes_.RestartSilences(clock_.Monotonic());
}

void Reconciler::SetNodeState(NodeRegistry::Entry& entry, NodeState state) {
  entry.node.state = state;
  scheduling_.cluster().SetReady(entry.node.info.id, entry.node.Schedulable());
  scheduling_.InvalidateResidue();
  journal_.AnnounceNode(entry.node.info.id);
}

void Reconciler::CheckTimeouts() {
  // On the monotonic clock: a step of the wall clock, either way, is no one's silence.
  const MonoTime now = clock_.Monotonic();
  for (const auto& id : nodes_.SilentFor(config_.node_timeout, now)) {
    NodeRegistry::Entry& entry = nodes_.At(id);
    std::string silent =
        FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(now - entry.heard_at));
    spdlog::warn("node {} is LOST: silent for {} (node timeout {}); its tasks are lost", id, silent,
                 FormatDuration(config_.node_timeout));
    SetNodeState(entry, NodeState::kLost);
    resources_.ForgetNode(id);  // what it measured last is no longer so
    Status s = LoseTasksOn(id, fmt::format("node {} was silent for {} (node timeout {})", id,
                                           silent, FormatDuration(config_.node_timeout)));
    if (!s.ok()) return;  // the write failed: the master has failed stop
  }
}

Status Reconciler::LoseTasksOn(const std::string& node_id, const std::string& why) {
  Journal::Batch batch(journal_);  // every job that had a task there, in one commit
  TaskEnds ends;
  Timestamp now = clock_.Now();
  std::vector<JobId> active(jobs_.active().begin(), jobs_.active().end());
  for (JobId id : active) {
    Job& job = jobs_.At(id);
    for (auto& t : job.tasks) {
      if (t.node_id != node_id || IsTerminal(t.state)) continue;
      TaskReport lost{job.IdOf(t), TaskState::kLost, std::nullopt, std::nullopt,
                      0,           std::nullopt,     now};
      RecordTaskReport(ends, job, t, lost, why);
    }
  }
  return Conclude(ends);
}

StatusOr<NodeRegistry::Entry*> Reconciler::ChangeNode(const std::string& node_id,
                                                      const std::function<void(Node&)>& change) {
  NodeRegistry::Entry* entry = nodes_.Find(node_id);
  if (!entry) return Status::NotFound(fmt::format("node {} does not exist", node_id));
  // Written first: if the store refuses, nothing in memory has changed.
  Node node = entry->node;
  change(node);
  COHORT_RETURN_IF_ERROR(journal_.store().SaveNode(node));
  entry->node = std::move(node);
  SetNodeState(*entry, entry->node.state);
  return entry;
}

StatusOr<const Node*> Reconciler::Drain(const std::string& node_id, std::string reason) {
  COHORT_ASSIGN_OR_RETURN(NodeRegistry::Entry * entry, ChangeNode(node_id, [&](Node& node) {
                            node.drained = true;
                            node.drain_reason = std::move(reason);
                          }));
  spdlog::info("node {} drained{}", node_id,
               entry->node.drain_reason.empty() ? "" : ": " + entry->node.drain_reason);
  return &entry->node;
}

StatusOr<const Node*> Reconciler::Undrain(const std::string& node_id) {
  COHORT_ASSIGN_OR_RETURN(NodeRegistry::Entry * entry, ChangeNode(node_id, [](Node& node) {
                            node.drained = false;
                            node.drain_reason.clear();
                          }));
  spdlog::info("node {} undrained", node_id);
  return &entry->node;
}

Status Reconciler::Remove(const std::string& node_id) {
  NodeRegistry::Entry* entry = nodes_.Find(node_id);
  if (!entry) return Status::NotFound(fmt::format("node {} does not exist", node_id));
  // Its credential first: a removed node must join again (with the join token) to come back.
  COHORT_RETURN_IF_ERROR(accounts_.RevokeAll(TokenKind::kNode, node_id));
  COHORT_RETURN_IF_ERROR(journal_.store().DeleteNode(node_id));
  spdlog::info("node {} removed", node_id);
  // Nothing may be placed there while its tasks are given up.
  SetNodeState(*entry, NodeState::kLost);
  Status s = LoseTasksOn(node_id, fmt::format("node {} was removed by an admin", node_id));
  scheduling_.cluster().RemoveNode(node_id);
  nodes_.Remove(node_id);
  resources_.ForgetNode(node_id);
  scheduling_.ForgetNodeDatasets(node_id);
  scheduling_.InvalidateResidue();
  journal_.AnnounceNode(node_id);
  return s;
}

}  // namespace cohort::master
