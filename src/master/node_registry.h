// The machines the master knows, in memory: each node's record as the store has it, the version
// of its desired state, its GPU topology (computed once per registration), and where its next
// port assignment starts. Bookkeeping only: the master writes the store, and tells the cluster
// core and its listener; nodes' credentials stay with Accounts. The home of what later issues
// add per node (e.g. liveness that survives the master's own pauses).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/time.h"
#include "model/node.h"

namespace cohort::master {

class NodeRegistry {
 public:
  struct Entry {
    Node node;
    uint64_t version = 0;  // of its desired state
    std::shared_ptr<const GpuTopology> topology;
    int next_port_offset = 0;  // ports are handed out round-robin within the range
    // When the master last heard from it (registration, sync), on its monotonic clock: what its
    // silence is measured from, whatever the wall clock does. In memory only.
    MonoTime heard_at{};
  };

  Entry* Find(const std::string& id);
  const Entry* Find(const std::string& id) const;
  // A node that must be there (one a task or a placement names).
  Entry& At(const std::string& id);
  const std::map<std::string, Entry>& all() const { return entries_; }
  size_t size() const { return entries_.size(); }

  // Adds the node, or replaces the record of one it knows (whose version and port offset stay),
  // heard from at `heard_at`. A new node's desired state gets a version of its own; either way
  // its GPU topology is computed from the record.
  Entry& Put(Node node, MonoTime heard_at);
  // False if it did not know the node.
  bool Remove(const std::string& id);

  // The node's desired state changed: a version higher than any handed out before (0 for a
  // node it does not know).
  uint64_t Bump(const std::string& id);
  // Versions from now on are above `version`: a restarted master hands out versions above
  // those of the tasks it loaded (and the clock's), so that an agent's applied version from
  // before the restart never looks newer than what it is told now.
  void VersionsAbove(uint64_t version);

  // The ids of the nodes not LOST that have been silent (heard_at) for longer than `timeout`.
  std::vector<std::string> SilentFor(Duration timeout, MonoTime now) const;
  // Every node's silence starts again at `now`: the master itself was not listening (paused,
  // stalled), and that time is not the nodes'.
  void RestartSilences(MonoTime now);

  // The next port of the node's range that is not in `used`, round-robin from the last one
  // given; 0 if every port is used.
  static int AssignPort(Entry& entry, const std::set<int>& used);

 private:
  std::map<std::string, Entry> entries_;
  uint64_t next_version_ = 1;
};

}  // namespace cohort::master
