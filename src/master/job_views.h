// How the scheduler sees a job the master tracks: its task requests, the GPU time it has had,
// its elastic groups. One builder each, for the passes, the cluster core and explanations.
#pragma once

#include <vector>

#include "model/job.h"
#include "model/plan.h"

namespace cohort::master {

// One request per replica of every task group, in rank order.
std::vector<TaskRequest> TaskRequestsOf(const Job& job);
// GPU time a job has received in its ended attempts (least-attained-service policy).
Duration AttainedService(const Job& job);
// Its elastic groups; indices are never reused within an attempt.
std::vector<RunningJob::ElasticGroup> ElasticGroupsOf(const Job& job);

}  // namespace cohort::master
