// Fetches dataset versions into the node's cache before the jobs that read them are placed here
// (DesiredState::prefetch; docs/data.md, "Placement and the pull"), on a thread of its own: no
// GPU is held while it fetches, and neither the agent's rounds nor any task wait for the store.
//
// What the master asks for is idempotent: a version asked for again while it is queued, being
// fetched, fetched, or failed is not fetched again; once the master stops asking for it, it is
// forgotten, and a later ask fetches it again if the cache no longer holds it. A failure is told
// in every report for as long as the master asks for the version.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/checkpoint_sync.h"
#include "agent/dataset_cache.h"
#include "common/time.h"
#include "model/agent_protocol.h"

namespace cohort::agent {

class DatasetPrefetcher {
 public:
  // How often the cache's contents are reported when they have not changed: a master that
  // restarted learns them within this.
  static constexpr Duration kResendEvery = std::chrono::minutes(1);

  DatasetPrefetcher(std::string cache_dir, int64_t cache_bytes, ObjectStoreOpener open_store);
  // Waits for the fetch under way, if any, to end; starts no other.
  ~DatasetPrefetcher();
  DatasetPrefetcher(const DatasetPrefetcher&) = delete;
  DatasetPrefetcher& operator=(const DatasetPrefetcher&) = delete;

  // What the master wants fetched now (at most kMaxPrefetchesPerNode; the rest is ignored).
  void Want(const std::vector<DatasetPrefetch>& wanted);

  // What a report says: the versions the cache holds (when they changed since the last report
  // the master took, or kResendEvery after it) and why the ones still asked for failed.
  void Fill(AgentReport& report, Timestamp now);
  // The master took `report`.
  void Acknowledge(const AgentReport& report, Timestamp now);

  // Whether a fetch has ended (fetched or failed) since the last call: the master should hear
  // of it now.
  bool TakeSettled();

  // Waits until nothing is queued or being fetched (tests).
  void Drain();

 private:
  void Loop();

  DatasetCache cache_;
  ObjectStoreOpener open_store_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  bool settled_ = false;
  std::deque<DatasetPrefetch> queue_;
  std::optional<std::string> fetching_;           // manifest key
  std::set<std::string> asked_;                   // manifest keys the master asks for now
  std::set<std::string> done_;                    // fetched while asked for
  std::map<std::string, std::string> failures_;   // manifest key -> why
  std::optional<std::vector<std::string>> sent_;  // the contents the master last took
  Timestamp sent_at_;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace cohort::agent
