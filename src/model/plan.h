// The scheduler's input and output: a read-only view of free capacity, the pending jobs, and the
// plan it proposes. The master re-checks a plan against its latest state before applying it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job.h"
#include "model/resources.h"

namespace cohort {

struct NodeCapacity {
  std::string node_id;
  Resources total;
  Resources free;
  std::vector<int> free_gpus;  // indices of the GPUs nobody holds, ascending
};

struct ClusterSnapshot {
  std::vector<NodeCapacity> nodes;  // only nodes that can take work now
};

struct TaskRequest {
  std::string role;
  int index = 0;
  Resources resources;
};

struct PendingJob {
  JobId job_id = 0;
  int priority = 0;
  Timestamp submitted_at;
  std::vector<TaskRequest> tasks;  // in rank order; more than one makes it a gang
};

struct TaskPlacement {
  std::string node_id;
  std::vector<int> gpus;
};

// Every task of one job, in the job's rank order: a gang is placed whole or not at all.
struct JobPlacement {
  JobId job_id = 0;
  std::vector<TaskPlacement> tasks;
};

// A job left pending by this pass, and why, in words a user understands.
struct PendingReason {
  JobId job_id = 0;
  std::string reason;
  // No node of the cluster as it stands could ever hold it (not just busy right now).
  bool unschedulable = false;
};

struct Plan {
  std::vector<JobPlacement> placements;
  std::vector<PendingReason> waiting;
};

}  // namespace cohort
