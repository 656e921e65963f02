// A Slurm job as Cohort runs it (docs/slurm.md): the job spec `cohort sbatch` submits, whose
// `slurm` section (model/slurm_section.h) carries the script and what sbatch's options decide
// beyond the spec, and the SLURM_* facts that section gives the job's tasks. One place for each
// direction: sbatch's options to the section here, the section to the variables here, so that
// what `cohort sbatch` decides and what the tasks see cannot drift apart.
#pragma once

#include <map>
#include <string>

#include "model/job_spec.h"
#include "model/slurm_section.h"
#include "slurm/sbatch_job.h"
#include "slurm/slurm_environment.h"

namespace cohort::slurm {

// The section of `job`, with the script's text and arguments, and the host it was submitted from.
SlurmSection SlurmSectionOf(const SbatchJob& job, const SbatchScriptInfo& script,
                            std::string script_text, std::string submit_host);

// The spec `cohort sbatch` submits: `job.spec` as a job of framework slurm, the section, the
// script's working directory, and the variables --export names (`submit_env` is the submitter's
// environment, for the names --export gives without a value). Slurm's default, ALL, copies the
// submitter's whole environment; Cohort does not (a task starts with its node's environment,
// docs/slurm.md): only the variables --export names.
JobSpec SlurmJobSpec(const SbatchJob& job, SlurmSection section,
                     const std::map<std::string, std::string>& submit_env);

// The job's SLURM_* facts that its section holds. The caller sets the rest when the job runs:
// job_id, job_name (when the section's is empty), nodes and what each holds, the array's
// array_job_id, task_id and count, and start_time.
SlurmJobInfo SlurmJobInfoOf(const SlurmSection& section, const JobSpec& spec);

}  // namespace cohort::slurm
