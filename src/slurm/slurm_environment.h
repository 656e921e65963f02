// The SLURM_* variables Slurm gives a batch script and each task of a step that `srun` starts,
// so that scripts and the libraries they run (PyTorch Lightning, JAX, MPI launchers) find the
// world they expect (sbatch(1) and srun(1), OUTPUT ENVIRONMENT VARIABLES; src/common/env.c,
// env_array_for_batch_job, env_array_for_step and setup_env, SchedMD/slurm @ 284c3b9, read for
// behaviour only). Pure: everything comes from the plain structs below.
//
// Node lists are in Slurm's compact form (hostlist.h); task and CPU counts per node in Slurm's
// "2(x3),1" form (two tasks on each of three nodes, then one). Variables Slurm sets only when
// the job asked for something (SLURM_NTASKS_PER_NODE, SLURM_CPUS_PER_TASK, SLURM_GPUS...) are
// set here only then too: Lightning, for one, reads their presence.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace cohort::slurm {

struct SlurmArrayInfo {
  int64_t array_job_id = 0;  // the array's id
  int task_id = 0;           // this job's index
  int count = 0;             // how many jobs the array has
  int min = 0;               // its lowest and highest index
  int max = 0;
  int step = 1;  // as Slurm: the number after the first ':' of --array as written, else 1
};

// The job, as its batch script and every step see it.
struct SlurmJobInfo {
  int64_t job_id = 0;
  std::string job_name;
  std::optional<SlurmArrayInfo> array;
  std::vector<std::string> nodes;      // in allocation order
  std::vector<int> tasks_per_node;     // the job's tasks on each node, in the order of `nodes`
  std::vector<int> cpus_per_node;      // the CPUs it holds on each node, in the order of `nodes`
  bool tasks_asked = false;            // -n or --ntasks-per-node was given: the batch script gets
                                       // SLURM_NTASKS (Slurm sets it only then)
  std::optional<int> ntasks_per_node;  // as asked
  std::optional<int> cpus_per_task;    // as asked
  std::optional<int> cpus_per_gpu;     // as asked
  std::optional<std::string> gpus;     // the GPU requests as written: "2", "a100:2"
  std::optional<std::string> gpus_per_node;
  std::optional<std::string> gpus_per_task;
  std::optional<int64_t> mem_per_node;  // bytes, as asked (--mem); given in MiB
  std::optional<int64_t> mem_per_cpu;
  std::optional<int64_t> mem_per_gpu;
  std::string submit_dir;
  std::string submit_host;
  std::string partition;  // empty: not set
  std::string cluster_name;
  std::optional<std::string> account;
  std::optional<std::string> qos;
  std::optional<Timestamp> start_time;  // SLURM_JOB_START_TIME, in Unix seconds
  std::optional<Duration> time_limit;   // with start_time: SLURM_JOB_END_TIME
};

// Where the batch script runs.
struct SlurmBatchPlace {
  int node_index = 0;    // into the job's nodes; Slurm's batch host is normally the first
  int gpus_on_node = 0;  // the GPUs it may use there
  std::optional<std::string> cuda_visible_devices;  // as given
};

// One task of a step started by srun.
struct SlurmStepTask {
  int step_id = 0;
  std::vector<std::string> nodes;   // the step's nodes, in order: some or all of the job's
  std::vector<int> tasks_per_node;  // the step's tasks on each of them
  int node_index = 0;               // into the step's nodes (SLURM_NODEID)
  int procid = 0;                   // the task's rank in the step
  int localid = 0;                  // its rank among the step's tasks on its node
  int gpus_on_node = 0;             // the GPUs it may use
  std::optional<std::string> cuda_visible_devices;  // as given
};

// The batch script's variables.
// REQUIRES: nodes, tasks_per_node and cpus_per_node are as long, and place.node_index is in them.
std::map<std::string, std::string> BatchScriptEnvironment(const SlurmJobInfo& job,
                                                          const SlurmBatchPlace& place);

// One task's variables: the job's, as the batch script has them, with the step's over them
// (SLURM_NODELIST, SLURM_NNODES, SLURM_NTASKS, SLURM_TASKS_PER_NODE are the step's, as srun sets
// them; SLURM_JOB_NODELIST and SLURM_JOB_NUM_NODES stay the job's).
// REQUIRES: as BatchScriptEnvironment; the step's nodes are the job's, as long as its
// tasks_per_node; node_index, procid and localid lie within them.
std::map<std::string, std::string> StepTaskEnvironment(const SlurmJobInfo& job,
                                                       const SlurmStepTask& task);

// What a step task's environment has over the job's, the batch script's: the step's and the
// process's variables alone (StepTaskEnvironment is the job's and these), which srun sends with
// each task to the node's exec service, whose own environment is the job's. `cpus_on_node`: the
// job's CPUs on the task's node.
// REQUIRES: as StepTaskEnvironment's for the step.
std::map<std::string, std::string> StepVariables(const SlurmStepTask& task, int cpus_on_node);

// Counts per node in Slurm's form: {2, 2, 2, 1} -> "2(x3),1".
std::string CountsPerNode(const std::vector<int>& counts);
// The counts of that form again, each from 0 to 65536, at most kMaxHostlistNames in all;
// kInvalidArgument naming the part that is not a count.
StatusOr<std::vector<int>> ParseCountsPerNode(std::string_view text);

}  // namespace cohort::slurm
