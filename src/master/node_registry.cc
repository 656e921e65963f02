#include "master/node_registry.h"

#include <algorithm>

#include "common/status.h"

namespace cohort::master {

NodeRegistry::Entry* NodeRegistry::Find(const std::string& id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

const NodeRegistry::Entry* NodeRegistry::Find(const std::string& id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

NodeRegistry::Entry& NodeRegistry::At(const std::string& id) {
  Entry* entry = Find(id);
  COHORT_CHECK(entry != nullptr);
  return *entry;
}

NodeRegistry::Entry& NodeRegistry::Put(Node node, MonoTime heard_at) {
  auto topology = std::make_shared<GpuTopology>(node.info.Topology());
  std::string id = node.info.id;
  auto [it, inserted] = entries_.try_emplace(id);
  Entry& entry = it->second;
  if (inserted) entry.version = next_version_++;
  entry.node = std::move(node);
  entry.topology = std::move(topology);
  entry.heard_at = heard_at;
  return entry;
}

bool NodeRegistry::Remove(const std::string& id) { return entries_.erase(id) > 0; }

uint64_t NodeRegistry::Bump(const std::string& id) {
  Entry* entry = Find(id);
  if (!entry) return 0;
  entry->version = next_version_++;
  return entry->version;
}

void NodeRegistry::VersionsAbove(uint64_t version) {
  next_version_ = std::max(next_version_, version + 1);
}

std::vector<std::string> NodeRegistry::SilentFor(Duration timeout, MonoTime now) const {
  std::vector<std::string> silent;
  for (const auto& [id, entry] : entries_) {
    if (entry.node.state == NodeState::kLost) continue;
    if (now - entry.heard_at > timeout) silent.push_back(id);
  }
  return silent;
}

void NodeRegistry::RestartSilences(MonoTime now) {
  for (auto& [id, entry] : entries_) entry.heard_at = std::max(entry.heard_at, now);
}

int NodeRegistry::AssignPort(Entry& entry, const std::set<int>& used) {
  const PortRange& range = entry.node.info.ports;
  int size = range.last - range.first + 1;
  for (int i = 0; i < size; ++i) {
    int port = range.first + (entry.next_port_offset + i) % size;
    if (!used.count(port)) {
      entry.next_port_offset = (port - range.first + 1) % size;
      return port;
    }
  }
  return 0;
}

}  // namespace cohort::master
