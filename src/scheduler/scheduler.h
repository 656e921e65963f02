// The scheduler decides which pending jobs start where. It is a pure function of its input:
// (cluster snapshot, pending jobs, now, config) -> Plan. No I/O, no threads, no clock; the
// master and the simulator drive the same code.
//
// Contract (docs/architecture.md, "Scheduling"):
//  - A job is placed whole or not at all: every task of a gang gets its node and GPUs in one
//    JobPlacement, or the job appears in Plan::waiting with a reason. A waiting job holds
//    nothing.
//  - No GPU, CPU or byte of memory is given twice within one plan, nor beyond the snapshot's free
//    capacity.
//  - Jobs are considered by priority (higher first), then submission time, then id.
//  - A job spans as few nodes as it can; among equally few, it takes the nodes whose free
//    capacity it fills best, so that large free blocks stay whole for large gangs.
//  - The same input gives the same plan.
#pragma once

#include <memory>
#include <vector>

#include "common/time.h"
#include "model/plan.h"

namespace cohort::scheduler {

struct SchedulerConfig {
  // Room for the policies of later versions (queues, quotas, preemption, backfill).
};

struct SchedulingInput {
  const ClusterSnapshot& cluster;
  const std::vector<PendingJob>& pending;
  Timestamp now;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Plan Schedule(const SchedulingInput& input) = 0;
};

// Priority, then submission order; gangs all-or-nothing; fewest nodes, then best fit.
std::unique_ptr<Scheduler> NewGangScheduler(SchedulerConfig config = {});

}  // namespace cohort::scheduler
