// The `slurm` section of a job spec (docs/slurm.md): what a job that `cohort sbatch` made holds
// besides its one task group, so that its tasks get the SLURM_* variables, the batch script and
// the files Slurm would give them. `cohort sbatch` fills it in from the script's #SBATCH lines
// and its command line (slurm/sbatch_job.h); a person rarely writes one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"

namespace cohort {

// The batch script's text: Slurm takes scripts of up to 4 MiB, but each attempt carries its
// script to its node in every answer to its syncs; real scripts are a few KiB.
inline constexpr size_t kMaxSlurmJobScriptBytes = 128 * 1024;
// The texts below that Slurm writes as it was given them (GPU requests, names).
inline constexpr size_t kMaxSlurmTextLength = 256;

// --signal: `number` this long before the time limit, to the batch script alone
// (`batch_only`, Slurm's B:) or to its whole process group.
struct SlurmSignal {
  int number = 0;  // 1 to 64
  Duration before_end = std::chrono::seconds(60);
  bool batch_only = false;
  bool operator==(const SlurmSignal&) const = default;
};

struct SlurmSection {
  std::string script;               // starts with "#!"
  std::string script_name;          // as given to sbatch, for messages
  std::vector<std::string> args;    // the script's arguments
  std::string job_name;             // SLURM_JOB_NAME and %x, as written; empty: the job's name
  std::vector<int> tasks_per_node;  // where srun puts the tasks of a step; empty: 1 per node
  bool tasks_asked = false;         // --ntasks or --ntasks-per-node was given (SLURM_NTASKS)
  std::optional<int> ntasks_per_node;
  std::optional<int> cpus_per_task;
  std::optional<int> cpus_per_gpu;
  std::optional<std::string> gpus;  // GPU requests as written: "2", "a100:2"
  std::optional<std::string> gpus_per_node;
  std::optional<std::string> gpus_per_task;
  std::optional<int64_t> mem_per_node;  // bytes
  std::optional<int64_t> mem_per_cpu;
  std::optional<int64_t> mem_per_gpu;
  std::string submit_dir;  // SLURM_SUBMIT_DIR; absolute
  std::string submit_host;
  std::string partition;  // SLURM_JOB_PARTITION; empty: not given
  std::string account;
  std::string qos;
  int array_step = 1;  // SLURM_ARRAY_TASK_STEP
  // Filename patterns (slurm/filename_pattern.h), relative to the group's workdir: the script's
  // standard output, its standard error (empty: into the output) and input (empty: /dev/null).
  std::string output = "slurm-%j.out";
  std::string error;
  std::string input;
  bool append = false;  // --open-mode=append; else the files are truncated
  std::optional<SlurmSignal> signal;
  bool operator==(const SlurmSection&) const = default;
};

// Reads the section at "slurm", appending "slurm.FIELD: reason" for each problem to `errors`.
// Unknown fields are errors.
SlurmSection ParseSlurmSection(const nlohmann::json& v, std::vector<std::string>& errors);
// The canonical form, which ParseSlurmSection reads back as it was.
nlohmann::json ToJson(const SlurmSection& section);

}  // namespace cohort
