// Reservations and holds (docs/scheduler.md, "Backfill and reservations"): a job that cannot
// start now is given the earliest time its resources will be free, from the known ends of what
// runs, and holds them from now on, so that only jobs that end before then may use them. A job
// that waits for victims to stop holds what it will use the same way (a claim).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/plan.h"
#include "scheduler/pass_state.h"

namespace cohort::scheduler {

// Resources that come back at a known time (for reservations). Tasks and placement are a running
// job's in the snapshot, or kept by the pass (Reservations::placements_).
struct Release {
  Timestamp at;
  const std::vector<TaskRequest>* tasks;
  const std::vector<TaskPlacement>* placement;
  bool reserved = false;  // the end of a job reserved this pass
  size_t seq = 0;         // the order it was added in (Reserve sorts by time, then this)
  // Where in Reservations::release_nodes_ its tasks' node indices begin; kUnknown until a
  // reservation first needs them.
  size_t nodes = kUnknown;
  static constexpr size_t kUnknown = SIZE_MAX;
};

// Keeps the resources of `placement` that are free now for `job` only.
void Hold(PassState& s, const PendingJob& job, const std::vector<TaskPlacement>& placement);
// Holds what a job that waits for stopping jobs will use. It starts as soon as they have
// stopped: only jobs that end now may use what it holds (as for a reservation at once), in this
// pass and in the decisions until the next (incremental.h). Otherwise a short job took the
// GPUs it counted on, it chose new victims, and its first ones restarted: one 64-GPU gang of
// the ITP trace preempted the same borrowed jobs 25 times.
void Claim(PassState& s, const PendingJob& job, const std::vector<TaskPlacement>& placement);
// In a what-if of s.guaranteed: what is held for the job's own team beyond its guarantee. A job
// within its team's guarantee still leaves that alone: the team's order stands, and in a
// cluster of one team (whose guarantee is all of it) reservations keep working.
void TakeOwnHolds(PassState& s, const PendingJob& job);

class Reservations {
 public:
  // Reads the known ends of what runs.
  explicit Reservations(PassState& state);

  // `job` started this pass with `placement`: its end, if known, is a release.
  void Started(const PendingJob& job, const std::vector<TaskPlacement>& placement);

  // With backfill: gives `job`, which cannot start now, a reservation if it may have one; true
  // if it did (the job waits then, with its reason). Beyond SchedulerConfig::reservations, a
  // job within its team's guarantee reserves under the default policy, as long as the team's
  // reservations fit in the guarantee with it.
  bool TryReserve(const PendingJob& job);

  // The earliest time the job fits, from the known ends of what runs; it holds those resources
  // from now on, so that nothing that would still run then can take them. The job waits.
  // `counted`: the reservation counts against SchedulerConfig::reservations.
  void Reserve(const PendingJob& job, bool counted = true);

  // Reservations made this pass that count against SchedulerConfig::reservations.
  int counted() const { return reservations_; }
  // Whether something runs with no known end.
  bool unknown_ends() const { return unknown_ends_; }

 private:
  // Releases are kept in time order (ties in the order they were added) from the first
  // reservation of the pass on; before that, in the order they were added.
  void AddRelease(const Release& r);
  void SortReleases();
  // The indices of a release's nodes, found the first time a reservation walks past it.
  const int* NodesOf(Release& r);
  void FindNodes(Release& r);
  // Whether an earlier reservation of this pass will use the GPU on node `node` (an index).
  bool Reserved(int node, int gpu) const;
  bool AnyReserved(const Release& r) const;
  // In a what-if of s_.unreserved: gives back what `r` releases, but for what earlier
  // reservations will use.
  void GiveBack(Release& r);
  // Where and when the job fits first, as the releases come back in time order.
  std::optional<std::vector<TaskPlacement>> EarliestFit(const PendingJob& job, Timestamp& at);
  void HoldFrom(const PendingJob& job, const std::vector<TaskPlacement>& placement, Timestamp at);
  // Holds for the job the nodes closest to fitting it, when some of what runs has no known end.
  void HoldClosestNodes(const PendingJob& job);

  PassState& s_;
  int reservations_ = 0;
  // By team: GPUs reserved for its jobs within its guarantee (beyond the count of reservations).
  std::map<std::string, int64_t> guaranteed_reservations_;
  int guaranteed_reservation_count_ = 0;
  std::vector<Release> releases_;
  bool releases_sorted_ = false;
  std::vector<int> release_nodes_;  // node indices of the releases' tasks (Release::nodes)
  std::deque<std::vector<TaskPlacement>> placements_;  // of releases this pass adds
  // GPUs of this pass's reservations, by node index (empty until the first).
  std::vector<std::vector<int>> reserved_gpus_;
  bool unknown_ends_ = false;  // something runs with no known end
  bool drained_ = false;       // a job holds the nodes closest to fitting it
};

}  // namespace cohort::scheduler
