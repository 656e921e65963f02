// The environment injected into every task of a job (product.md, "Environment injected into
// tasks"): the COHORT_* variables, CUDA_VISIBLE_DEVICES, and the rendezvous variables of the
// job's framework. Pure: everything comes from the job's placed tasks.
#pragma once

#include <map>
#include <string>

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

}  // namespace cohort::framework
