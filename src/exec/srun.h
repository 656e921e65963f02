// `srun` inside a batch script that `cohort sbatch` runs (docs/slurm.md): starts a step's tasks
// across the job's nodes through each node's exec service (exec/exec_session.h), each with its
// SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and the step's variables (slurm/slurm_environment.h),
// their output back on srun's own, its exit status the worst of theirs. What it knows of the job
// it reads from the batch script's environment: SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE,
// COHORT_EXEC_ENDPOINTS (one endpoint per node name) and COHORT_JOB_CREDENTIAL.
#pragma once

#include <string>
#include <vector>

namespace cohort::exec {

// The main of `srun ARGS...` (argv without the program): its exit status.
int RunSrun(const std::vector<std::string>& args);

// The main of `scontrol ARGS...`: `show hostnames [LIST]` (one name a line; LIST defaults to
// $SLURM_JOB_NODELIST) and `show hostlist NAMES` (the compact form), what batch scripts call.
int RunScontrol(const std::vector<std::string>& args);

}  // namespace cohort::exec
