// A job's size once expanded into its tasks (docs/job-spec.md, "Limits"): every task is launched
// with its group's command, environment and workdir, so a job costs its groups' text times their
// replicas on the way to the agents, however small its spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job_spec.h"

namespace cohort {

// The text one task of the group carries: its command's arguments, its environment's names and
// values, its workdir. `secret_value_bytes`: what the values of its secret references add (the
// master knows them; the spec alone does not).
int64_t TaskTextBytes(const TaskGroupSpec& group, int64_t secret_value_bytes = 0);

// The spec's task text over all of its tasks (an elastic group at its maximum) against
// kMaxJobTaskTextBytes: "tasks[i]: ..." for each group over it alone, else "tasks: ..." when
// their sum is; empty when within. `secret_value_bytes[i]` goes with tasks[i] (empty: none).
std::vector<std::string> JobSizeProblems(const JobSpec& spec,
                                         const std::vector<int64_t>& secret_value_bytes = {});

}  // namespace cohort
