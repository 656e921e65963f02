// How the scheduler sees a job the master tracks: its task requests, the GPU time it has had,
// its elastic groups, its key in the runtime history. One builder each, for the passes, the
// cluster core and explanations.
#pragma once

#include <string>
#include <vector>

#include "model/job.h"
#include "model/plan.h"
#include "scheduler/runtime_history.h"

namespace cohort::master {

// One request per replica of every task group, in rank order.
std::vector<TaskRequest> TaskRequestsOf(const Job& job);
// Whether the replicas of the job's group `role` each need a node of their own
// (TaskGroupSpec::distinct_nodes).
bool DistinctNodes(const Job& job, const std::string& role);
// GPU time a job has received in its ended attempts (least-attained-service policy).
Duration AttainedService(const Job& job);
// Its elastic groups; indices are never reused within an attempt.
std::vector<RunningJob::ElasticGroup> ElasticGroupsOf(const Job& job);

// What the runtime history files it under: its team, user, name, and GPUs at its start size.
scheduler::HistoryKey HistoryKeyOf(const Job& job);
// Whether its end tells the runtime history what a job like it costs: it ended (succeeded,
// failed or killed) after some task of its last attempt started (its agent reported it running,
// or its process). A job killed while pending or before its tasks started, or whose tasks could
// not start, teaches nothing (docs/scheduler.md); nor does a sweep's trial that was killed
// (stopped early by its searcher, or with its sweep).
bool TeachesRunTime(const Job& job);

}  // namespace cohort::master
