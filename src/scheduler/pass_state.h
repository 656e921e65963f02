// What the stages of one scheduling pass share (scheduler.cc runs them in order: levels.h, then
// for each waiting job placement, victims.h, elastic.h, moving.h and reservations.h, then
// elastic growth). Each stage keeps what only it needs; what one stage changes and another reads
// is here, and every stage takes it by reference. Pure, like the rest of the scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/plan.h"
#include "scheduler/capacity_index.h"
#include "scheduler/incremental.h"
#include "scheduler/job_order.h"
#include "scheduler/scheduler.h"

namespace cohort::scheduler {

// Victim searches per pass: each costs a copy of the free capacity. Jobs beyond this many wait
// for the next pass (which the victims' stopping triggers anyway).
inline constexpr int kMaxPreemptionSearches = 16;

// "1 GPU", "8 GPUs".
std::string Gpus(int64_t n);

// The capacity indexes of a pass. The scheduler keeps them from one pass to the next, so that
// each pass copies the nodes into buffers it already has; every pass starts them afresh.
struct Indexes {
  CapacityIndex free;
  CapacityIndex unreserved;
  CapacityIndex guaranteed;
};

// What is held for a waiting job (a reservation or a preemption's target), and its team.
struct TeamHold {
  const std::vector<TaskRequest>* tasks;
  std::vector<TaskPlacement> placement;
  std::string team;
};

// A group of a job whose replicas need a node each (TaskRequest::distinct_nodes).
struct DistinctGroup {
  std::string_view role;  // points into the job's tasks
  size_t replicas = 0;
  Resources per_replica;  // the most any of them needs
};
// The groups of `tasks` whose replicas need a node each, in the order of their first task; none
// for a job without distinct_nodes.
std::vector<DistinctGroup> DistinctGroupsOf(const std::vector<TaskRequest>& tasks);

// What stopping jobs will give back.
struct Coming {
  size_t jobs = 0;
  int64_t gpus = 0;
};

struct PassState {
  // Starts the indexes afresh from the snapshot, and reads what the running jobs hold.
  PassState(const SchedulerConfig& config, const SchedulingInput& in, PassResidue* residue,
            Indexes& indexes);
  PassState(const PassState&) = delete;
  PassState& operator=(const PassState&) = delete;

  // Asks for another pass at `at` (the earliest of those asked for), if it is still to come.
  void Recheck(Timestamp at);
  // GPU time a running job has had: earlier attempts plus this one so far.
  Duration AttainedNow(const RunningJob& r) const;
  // The GPUs a team counts as holding for quota reclaim: what it holds, less what is already on
  // its way out, plus what its waiting jobs will get from that. Counting plain holdings instead,
  // every pass until the victims have stopped would reclaim again, from ever more jobs, and
  // teams pushed below their guarantee would take turns preempting each other.
  int64_t Entitled(const std::string& team) const;
  // When a job started at `start` is expected to end: by its max_runtime (the oracles: by its
  // true run time), else the default run time, else never.
  std::optional<Timestamp> ExpectedEnd(Timestamp start, const PendingJob& job) const;
  // The default policy's own guarantee rules (extra reservations and victim searches for jobs
  // within their team's guarantee). The other policies are references, kept as published: las
  // and the oracles are measured against the default, and with these rules las took 15% longer
  // to replay the ITP trace and preempted more.
  bool GuaranteesFirst() const { return config.policy == Policy::kFairShare; }
  static Timestamp WaitingSince(const PendingJob& job) {
    return job.waiting_since ? *job.waiting_since : job.submitted_at;
  }

  // The job waits, for `reason`; it joins the residue's queue unless it is unschedulable.
  void Wait(const PendingJob& job, std::string reason, bool unschedulable = false,
            std::optional<Timestamp> reserved = std::nullopt);
  // "waiting for resources: ..." Formatting a line for each of 100,000 waiting jobs would cost
  // more than scheduling them: jobs of one shape share their text until capacity changes. A job
  // with a group whose replicas need a node each is also told, if so, that fewer nodes have
  // room for one of them than it has replicas.
  const std::string& Busy(const PendingJob& job);

  const SchedulerConfig& config;
  const SchedulingInput& in;
  PassResidue* residue;                    // decisions between passes need one (incremental.h)
  std::vector<const RunningJob*> running;  // every job that holds resources (RunningJobs())
  RunningTeams running_teams;              // and their teams
  JobOrder order;
  CapacityIndex& free;        // what is free now
  CapacityIndex& unreserved;  // free now and not held for a reservation or a preemption
  // Free now and not held for a job that is within its team's guarantee (Pass::RoomFor).
  CapacityIndex& guaranteed;
  Plan plan;

  // The nodes.
  std::vector<Resources> shapes;    // their distinct capacities
  std::vector<size_t> shape_nodes;  // how many nodes have each
  Resources largest_node;
  Resources cluster_total;

  bool within_guarantee = false;  // of the job being considered
  // What is held for jobs beyond their team's guarantee, by team (few: reservations and
  // preemptions).
  std::vector<TeamHold> borrowing_holds;
  std::vector<TeamHold> guarantee_holds;  // the same for jobs within their guarantee
  // Only jobs that end by then may use what is held (reservations.h).
  std::optional<Timestamp> earliest_reservation;
  // For the residue: (node, GPU) held for a waiting job, and for which; the waiting jobs in the
  // order they were considered.
  std::map<std::pair<std::string, int>, JobId> held;
  std::vector<PassResidue::Waiting> queue;

  std::set<JobId> victims;                       // preempted or moved this pass
  std::map<std::string, int64_t> reclaim_delta;  // by team: see Entitled()
  std::set<JobId> claimants;                     // waiting jobs that running ones stop for
  std::map<std::string, int> lowest_priority;    // of running jobs, by team
  bool any_team_borrows = false;                 // at the start of the pass
  std::vector<const RunningJob*> stopping;
  // What stopping jobs will give back: to anyone, and to the job they stop for.
  Coming coming_for_anyone;
  std::map<JobId, Coming> coming_for;
  int preemption_searches = 0;
  int guarantee_searches = 0;  // by jobs within their team's guarantee (victims.h, moving.h)

 private:
  void ReadNodes();
  // The lowest priority of each team's running jobs, and what stopping jobs give back.
  void ReadRunning();

  // Busy() for a job of any shape, the text cached by shape; and for a job with distinct_nodes.
  const std::string& BusyText(const PendingJob& job);
  const std::string& BusyApartText(const PendingJob& job);
  // Nodes with room now for `r` that meet `constraints`.
  size_t NodesWithRoomFor(const Resources& r, const Constraints& constraints);

  // Reason texts by job shape, valid while the free capacity they quote does not change; the
  // same for the nodes with room for one replica of a group with distinct_nodes (jobs without
  // constraints).
  std::map<std::pair<Resources, size_t>, std::string> busy_texts_;
  std::map<Resources, size_t> room_for_;
  int64_t busy_texts_free_ = -1;
  std::string apart_text_;  // Busy() of the last job with distinct_nodes
};

}  // namespace cohort::scheduler
