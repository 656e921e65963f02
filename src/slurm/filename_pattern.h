// sbatch's filename patterns, for --output, --error and --input (sbatch(1), "FILENAME PATTERN",
// and src/common/print_fields.c, expand_stdio_fields, SchedMD/slurm @ 284c3b9, read for
// behaviour only). A '%' and a letter stand for a field of the job:
//
//   %%  a '%'                         %j  the job's id
//   %A  the array's id (the job's own when it is not in an array)
//   %a  the array index               %b  the array index modulo 10
//   %J  jobid.stepid ("128.0"; the batch script's is the job id alone)
//   %s  the step id ("batch" for the batch script)
//   %x  the job's name                %u  the user's name
//   %N  the short name of the node that writes the file
//   %n  the node's index in the job   %t  the task's rank
//   %r  how often the job was requeued
//
// A number between '%' and the letter pads a numeric field with zeros to that width (at most
// 10): "%4j" is "0128". A '%' before any other letter stays as it is ("%S", Slurm's SLUID, which
// Cohort has not, included). A pattern holding a backslash is taken as it is, backslashes
// removed, with nothing expanded. As in Slurm, %a of a job that is not in an array is
// 4294967294 (Slurm's NO_VAL), and a '%' that ends the pattern is dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cohort::slurm {

// What %a prints for a job that is not in an array: Slurm's NO_VAL.
inline constexpr int64_t kSlurmNoValue = 4294967294;

struct FilenameFields {
  int64_t job_id = 0;
  std::optional<int64_t> array_job_id;  // the array's, when the job is one of an array's
  std::optional<int> array_task_id;
  std::string job_name;
  std::string user;
  std::string node_name;  // %N is cut at its first '.'
  int node_index = 0;
  int task_id = 0;
  std::optional<int> step_id;  // none: the batch script
  int restart_count = 0;
  std::string work_dir;  // where a relative result lies: it is put before it; empty: nowhere
};

std::string ExpandFilenamePattern(std::string_view pattern, const FilenameFields& fields);

// Where the batch script's output goes when --output is not given: "slurm-%j.out", and
// "slurm-%A_%a.out" for a job of an array.
std::string DefaultOutputPattern(bool array);

}  // namespace cohort::slurm
