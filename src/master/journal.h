// How the master's changes reach the state store and the outside: writes grouped into batches (one
// transaction, one fsync), what the listener hears once a batch is durable, and the fail-stop
// when a write fails after memory has changed (docs/architecture.md, "Durability").
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>

#include "common/status.h"
#include "master/state_disk.h"
#include "model/job.h"
#include "state/state_store.h"

namespace cohort::master {

// Told about changes, so that waiting requests can be answered (src/api).
class MasterListener {
 public:
  virtual ~MasterListener() = default;
  virtual void OnJobChanged(JobId id) = 0;
  virtual void OnNodeChanged(const std::string& node_id) = 0;
  // A line for the people at a session's terminal (a warning before it ends): no state change,
  // so it is heard at once, whatever batch is open.
  virtual void OnSessionNotice(JobId id, const std::string& text) {
    (void)id;
    (void)text;
  }
};

class Journal {
 public:
  // `fail_stop` must not return into the master's work (a test's may); unset: log and exit 70.
  // `disk`: where the store lives; without one the master is never read-only.
  Journal(state::StateStore& store, std::function<void(const Status&)> fail_stop,
          StateDisk disk = StateDisk(nullptr, 0));

  state::StateStore& store() { return store_; }
  void SetListener(MasterListener* listener) { listener_ = listener; }
  MasterListener* listener() const { return listener_; }

  // Writes made while one lives are one transaction of the store (StateStore::BeginBatch),
  // committed with one fsync when the outermost ends: a pass that starts many jobs, or an
  // agent's report that ends many tasks, costs one fsync instead of one per job. What the
  // listener hears of those changes waits for the commit, so that no client and no agent learns
  // of a change before it is durable. A failed commit fails stop.
  class Batch {
   public:
    explicit Batch(Journal& journal);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    Journal& journal_;
  };

  // Tells the listener that a job or a node changed: now, or once the open batch has committed.
  void AnnounceJob(JobId id);
  void AnnounceNode(const std::string& node_id);

  // A write failed after memory had changed: memory and store must never disagree silently, so
  // the master stops and a restart reloads the last durable state.
  void FailStop(const Status& status);
  bool stopped() const { return stopped_; }

  // Read-only mode (master/state_disk.h): while the state disk is short of space the master
  // takes no change. Its own writers (the tick, scheduling passes, agents' reports) hold off,
  // and the API answers changes 503 with the reason.
  StateDisk& disk() { return disk_; }
  const std::optional<std::string>& read_only() const { return disk_.read_only(); }
  // Before a change the outside asks for: reads the free space now, then OK, or kUnavailable
  // with the reason the master is read-only.
  Status CheckWritable();

 private:
  state::StateStore& store_;
  std::function<void(const Status&)> fail_stop_;
  MasterListener* listener_ = nullptr;
  int depth_ = 0;         // Batch scopes open
  bool stopped_ = false;  // FailStop was called (it returns only in tests)
  StateDisk disk_;
  // What the open batch has changed, to announce once it is committed.
  std::set<JobId> unannounced_jobs_;
  std::set<std::string> unannounced_nodes_;
};

}  // namespace cohort::master
