// The environment injected into every task of a job (product.md, "Environment injected into
// tasks"): the COHORT_* variables, CUDA_VISIBLE_DEVICES, and the rendezvous variables of the
// job's framework. Pure: everything comes from the job's placed tasks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/agent_protocol.h"
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

// The files of `job.tasks[task]` (TaskLaunch::files): an MPI or DeepSpeed job's hostfile, named
// by COHORT_MPI_HOSTFILE (and Open MPI's default hostfile) or COHORT_DEEPSPEED_HOSTFILE; a
// Slurm job's batch script, in its first task, named by COHORT_SLURM_SCRIPT.
std::vector<TaskFile> TaskFiles(const Job& job, size_t task);

// What of Cohort's own the agent gives a task besides its environment (TaskLaunch::tools,
// slurm_tools, exec_service): an MPI job's tasks get `cohort-exec` on their PATH, and its workers
// serve the launcher's mpirun through it; a Slurm job's tasks get srun and scontrol too, and all
// of them serve srun. A session's task is the agent's terminal server (a shell's).
struct TaskTools {
  bool tools = false;
  bool slurm_tools = false;
  bool exec_service = false;
  bool terminal = false;
};
TaskTools TaskToolsOf(const Job& job, size_t task);

// The command of `job.tasks[task]`: its group's, but for a Slurm job's, whose first task runs
// the batch script (SlurmBatchCommand) and whose others only serve (none).
std::vector<std::string> TaskCommand(const Job& job, size_t task);

// Whether the tasks of jobs of this spec hold the job's credential (COHORT_JOB_CREDENTIAL), which
// their exec services (and a session's terminal server) ask of a caller: those of jobs that serve.
bool UsesJobCredential(const JobSpec& spec);

// When this task's success is the job's, while its other tasks still run (they only serve it):
// why the job stops ("the launcher succeeded; stopping the workers"); else nothing.
std::optional<std::string> SuccessEndsJob(const Job& job, const Task& task);

// At least what TaskEnvironment adds to the group's own `env` (names and values) for any one of
// `tasks`, placed as they are, and what TaskFiles writes: a few KiB of its own, and the job's
// hosts, listed in every task's COHORT_HOSTS (and TF_CONFIG, COHORT_EXEC_ENDPOINTS, a hostfile).
// What bounds a node's desired state counts it (model/limits.h).
int64_t EnvironmentBytesBound(const JobSpec& spec, const std::vector<Task>& tasks,
                              const JobDirectories& dirs);

}  // namespace cohort::framework
