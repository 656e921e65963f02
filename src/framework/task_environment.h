// The environment injected into every task of a job (product.md, "Environment injected into
// tasks"): the COHORT_* variables, CUDA_VISIBLE_DEVICES, and the rendezvous variables of the
// job's framework. Pure: everything comes from the job's placed tasks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/job.h"

namespace cohort::framework {

// Where a job keeps what outlives its GPUs. Directories on storage that every node of the
// cluster sees at the same path (on a one-machine cluster, a local directory).
struct JobDirectories {
  std::string checkpoint_dir;  // kept across attempts: a restarted attempt resumes from here
  std::string output_dir;
  std::string log_dir;  // TensorBoard event files and other training logs
};

// The environment of `job.tasks[task]`: the task group's own `env` first, then Cohort's
// variables (the spec validator refuses user variables that would collide).
// REQUIRES: every task of the job is placed (node, host, port, GPUs).
std::map<std::string, std::string> TaskEnvironment(const Job& job, size_t task,
                                                   const JobDirectories& dirs);

// At least what TaskEnvironment adds to the group's own `env` (names and values) for any one of
// `tasks`, placed as they are: a few KiB of its own, and the job's hosts, listed in every task's
// COHORT_HOSTS (and TF_CONFIG). What bounds a node's desired state counts it (model/limits.h).
int64_t EnvironmentBytesBound(const JobSpec& spec, const std::vector<Task>& tasks,
                              const JobDirectories& dirs);

}  // namespace cohort::framework
