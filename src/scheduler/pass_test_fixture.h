// Test-only: the state of one pass over a snapshot, for the tests of a single stage
// (levels_test.cc, reservations_test.cc, victims_test.cc, ...), which call the stage's own
// functions where the other tests go through Scheduler::Schedule.
#pragma once

#include <utility>
#include <vector>

#include "model/plan.h"
#include "scheduler/incremental.h"
#include "scheduler/pass_state.h"
#include "scheduler/scheduler.h"

namespace cohort::testing {

// Owns what a PassState refers to. Not movable: the state points into it.
struct PassHarness {
  PassHarness(ClusterSnapshot c, std::vector<PendingJob> p, scheduler::SchedulerConfig cfg = {},
              Timestamp now = FromMicros(0), bool with_residue = false)
      : cluster(std::move(c)),
        pending(std::move(p)),
        config(std::move(cfg)),
        input{cluster, pending, now},
        state(config, input, with_residue ? &residue : nullptr, indexes) {}
  PassHarness(const PassHarness&) = delete;
  PassHarness& operator=(const PassHarness&) = delete;

  const PendingJob& job(size_t i) const { return pending[i]; }

  ClusterSnapshot cluster;
  std::vector<PendingJob> pending;
  scheduler::SchedulerConfig config;
  scheduler::SchedulingInput input;
  scheduler::Indexes indexes;
  scheduler::PassResidue residue;
  scheduler::PassState state;
};

}  // namespace cohort::testing
