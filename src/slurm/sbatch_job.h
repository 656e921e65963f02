// sbatch's options as a Cohort job (docs/slurm.md): the job spec `cohort sbatch` submits, and
// what the spec cannot hold but the job's SLURM_* variables and `srun` inside the script need.
//
// The job is one task group, role `node`, one task per node: the batch script runs in the first,
// and srun starts the script's tasks in all of them (Slurm's own shape: an allocation of nodes,
// then steps in it). Each rule below is one function of sbatch_job.cc, with its comment:
//
// - name: --job-name, else the script's name (Slurm's default). Slurm takes any text; a Cohort
//   job's name is letters, digits, '.', '_' and '-', so other characters become '-' in the
//   spec, with a warning; SLURM_JOB_NAME and %x keep the name as written.
// - team: --partition (a Slurm partition is a Cohort team); without one the spec names no team
//   (SbatchJob::names_team), and the master puts the job in the submitter's, as for `cohort run`.
// - priority: --qos low, normal or high, or an integer from kMinPriority to kMaxPriority.
// - nodes: --nodes (MIN-MAX: the minimum, with a warning); else, with --ntasks and
//   --ntasks-per-node, as many nodes as they need; else 1. --ntasks below the node count lowers
//   the node count to it, with a warning, as Slurm does.
// - tasks per node: --ntasks spread evenly over the nodes, the first ones getting one more
//   (Slurm's block layout; at most --ntasks-per-node each); else --ntasks-per-node; else 1.
//   Cohort's tasks of one group are alike: every node holds what the most tasks on one need.
// - GPUs per node: --gpus-per-node, else --gres=gpu:N, else --gpus-per-task times the tasks per
//   node, else --gpus over the nodes (evenly, or an error); at most kMaxTaskGpus. A GPU type
//   (gpu:a100:2) is constraints.gpu_model, which must be the model as `cohort nodes` shows it.
// - CPUs per node: --cpus-per-gpu times the GPUs per node, else --cpus-per-task (1 if not given)
//   times the tasks per node.
// - memory per node: --mem; else --mem-per-cpu times the CPUs per node; else --mem-per-gpu
//   times the GPUs per node; else the job spec's default, kDefaultMemoryPerNode (1Gi). Slurm's
//   "all of the node's memory" (--mem=0) is refused: Cohort places a job by what it asks for.
// - max_runtime: --time; none for UNLIMITED, or without --time.
// - restart: Slurm requeues a batch job when its node fails or it is preempted, never on its own
//   failure: restart.on is [node_lost, preempted] (also with --requeue); --no-requeue: no cause,
//   and one attempt.
// - depends_on: --dependency (afterok: success, afternotok: failure, afterany: end); array:
//   --array's indices, and %N as max_parallel.
// - warnings: each option accepted that has no effect on Cohort, once. The options whose rows in
//   the option table already warn (--account, --mail-*, the ignored ones) are warned about by
//   the parse (SbatchParse::warnings), not here again.
//
// tasks[0].command stays empty, and so does its workdir: the CLI fills in how the script runs.
// With a command, the spec passes the job spec's own validation (ParseJobSpecJson).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "model/job_spec.h"
#include "slurm/sbatch_controls.h"
#include "slurm/sbatch_options.h"
#include "slurm/sbatch_resources.h"
#include "slurm/slurm_environment.h"

namespace cohort::slurm {

// The role of the job's one task group: one task per node.
inline constexpr std::string_view kSbatchRole = "node";
// The memory of a node when no --mem* is given: the job spec's default for a task group that
// names none (model/job_spec_parser.cc; sbatch_job_test.cc holds the two equal).
inline constexpr int64_t kDefaultMemoryPerNode = int64_t{1} << 30;

struct SbatchScriptInfo {
  std::string path;  // as given to sbatch
  // The job's name when --job-name is not given: the script's file name without its directory,
  // as Slurm ("wrap" for --wrap, "sbatch" for a script read from standard input).
  std::string name;
  std::vector<std::string> args;  // the script's arguments
  std::string submit_dir;         // where sbatch ran: SLURM_SUBMIT_DIR; an absolute path
  std::string interpreter;        // the "#!" line without "#!"
};

// What the job spec cannot hold but the job's SLURM_* variables, its output files and srun need.
struct SlurmSettings {
  std::string job_name;  // Slurm's: SLURM_JOB_NAME and %x, as written

  // Where the tasks of srun go, by default: tasks_per_node[i] on the i-th node.
  int nodes = 1;
  int ntasks = 1;                        // in all
  std::vector<int> tasks_per_node;       // one count per node, the first ones the larger
  bool tasks_asked = false;              // --ntasks or --ntasks-per-node was given
  std::optional<int> ntasks_per_node;    // as asked
  std::optional<int> cpus_per_task;      // as asked
  std::optional<int> cpus_per_gpu;       // as asked
  int cpus_per_node = 1;                 // what each node holds
  int gpus_per_node = 0;                 // what each node holds
  int gpus_per_task = 0;                 // srun gives each task this many of them; 0: not asked
  std::optional<GpuRequest> asked_gpus;  // --gpus, as asked: SLURM_GPUS
  std::optional<GpuRequest> asked_gpus_per_node;  // --gpus-per-node (not --gres)
  std::optional<GpuRequest> asked_gpus_per_task;
  std::optional<int64_t> mem_per_node;  // bytes, as asked (--mem)
  std::optional<int64_t> mem_per_cpu;
  std::optional<int64_t> mem_per_gpu;
  std::optional<Duration> time_limit;  // none: unlimited

  // Where the script runs and what it reads and writes.
  std::string submit_dir;
  std::string workdir;         // --chdir (relative to submit_dir), else submit_dir
  std::string output_pattern;  // --output, else slurm-%j.out (slurm-%A_%a.out in an array)
  std::string error_pattern;   // --error; empty: standard error goes to the output file
  std::string input_pattern;   // --input; empty: /dev/null
  OpenMode open_mode = OpenMode::kTruncate;  // Slurm's default (JobFileAppend=0)
  ExportSpec export_env;                     // ALL when not given
  std::optional<SignalSpec> signal;          // sent signal.before_end ahead of the time limit

  // Kept to be shown (SLURM_JOB_PARTITION, _ACCOUNT, _QOS); empty: not given.
  std::string partition;
  std::string account;
  std::string qos;
  std::string array_text;  // --array as written; empty: not an array
  int array_step = 1;      // SLURM_ARRAY_TASK_STEP: the number after its first ':', else 1
};

struct SbatchJob {
  JobSpec spec;
  // Whether --partition named the team. If not, the CLI leaves `team` out of the spec document
  // it submits, so that the master chooses (as RunSubmit and `cohort run` do).
  bool names_team = false;
  SlurmSettings slurm;
  std::vector<std::string> warnings;  // "--nodes=2-4: ...", in the order of the rules above
};

// The job, by the rules above. kInvalidArgument listing every problem, each naming the sbatch
// option and why: "--gpus=3: 3 GPUs cannot be spread evenly over --nodes=2; use
// --gpus-per-node" (the Status's details hold one each).
StatusOr<SbatchJob> SbatchToJob(const SbatchOptions& options, const SbatchScriptInfo& script);

// The job's SLURM_* facts that sbatch's options decide, for BatchScriptEnvironment and
// StepTaskEnvironment. The caller sets the rest when the job runs: job_id, nodes, the array's
// array_job_id and task_id, submit_host, cluster_name and start_time.
SlurmJobInfo SlurmJobInfoOf(const SbatchJob& job);

}  // namespace cohort::slurm
