// Decisions between full passes. A full pass over 100,000 waiting jobs takes a fraction of a
// second; an arrival or a completion should not. The pass leaves a residue — the free capacity
// as it left it, what it holds for reservations, and the waiting jobs in the order it
// considered them — and the master keeps that residue current while it applies small decisions:
//
//  - an arrival is placed at once if it fits where nothing is held for another job, and
//    otherwise queued behind the others;
//  - resources that come back go to the first waiting jobs, in the last pass's order, that now
//    fit (held GPUs stay held for the job they are held for).
//
// Neither preempts, reserves, grows or shrinks: those wait for the next full pass, which the
// master runs soon after. Pure, like the rest of the scheduler.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/plan.h"
#include "scheduler/capacity_index.h"
#include "scheduler/job_order.h"
#include "scheduler/scheduler.h"

namespace cohort::scheduler {

struct PassResidue {
  SchedulerConfig config;
  CapacityIndex free;        // free after the pass's placements
  CapacityIndex unreserved;  // free and not held for a waiting job
  std::optional<Timestamp> earliest_reservation;
  // (node, GPU) held for a waiting job (a reservation or a preemption's target), and for which.
  std::map<std::pair<std::string, int>, JobId> held;

  struct Waiting {
    JobId job_id = 0;
    int64_t gpus = 0;          // in all
    int64_t largest_task = 0;  // GPUs of its largest task
    bool done = false;         // placed since
  };
  std::vector<Waiting> queue;  // in the order the pass considered them
  size_t zero_gpu_waiting = 0;
  std::map<std::string, Usage> teams;
  std::vector<Resources> shapes;  // the distinct capacities of the nodes
};

// Decides one new job against the residue. Returns its placement (already taken from the
// residue) or nothing, with the reason in `reason`; a job that waits joins the residue's queue.
std::optional<std::vector<TaskPlacement>> DecideArrival(PassResidue& residue, const PendingJob& job,
                                                        Timestamp now, std::string* reason);

// What a job (or some of its tasks) held comes back. Returns the waiting jobs that now start,
// in the order of the last pass; `pending` finds a waiting job by id (nullptr if it is gone).
std::vector<JobPlacement> DecideAfterRelease(PassResidue& residue, const std::string& team,
                                             const std::vector<TaskRequest>& tasks,
                                             const std::vector<TaskPlacement>& placement,
                                             const std::function<const PendingJob*(JobId)>& pending,
                                             Timestamp now);

}  // namespace cohort::scheduler
