// `cohort-exec batch` (docs/slurm.md): runs the batch script of a Slurm job that `cohort sbatch`
// started, on the job's first node, as slurmstepd runs a batch step. The agent starts it as the
// command beside the node's exec service (`cohort-exec serve -- cohort-exec batch [-- ARGS...]`),
// so it runs inside the task: its account, GPUs, limits and log.
//
// What it does, from the variables Cohort's master sets (BatchSettingsFromEnv):
//   - runs the script as the kernel runs a "#!" script, though the agent wrote it 0644 and not as
//     the task's user: [interpreter, optional argument, script, ARGS...] (ScriptCommand);
//   - sends its standard output to --output and its standard error to --error (or --output), and
//     also to the task's log, where `cohort logs` shows them;
//   - sends --signal's signal when its time comes, and forwards the signals that stop the task
//     (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCONT) to the script's process group;
//   - ends with the script's exit status (128 + the signal that killed it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace cohort::exec {

// sbatch --signal=[B:]NUMBER@SECONDS.
struct BatchSignal {
  int number = 0;
  int64_t seconds = 0;       // after the wrapper started
  bool script_only = false;  // "B:": the script's process, not its whole process group
};

struct BatchSettings {
  std::string script;                 // COHORT_SLURM_SCRIPT
  std::string output;                 // COHORT_SLURM_OUTPUT
  std::string error;                  // COHORT_SLURM_ERROR; empty: into the output file
  std::string input;                  // COHORT_SLURM_INPUT; empty: /dev/null
  bool append = false;                // COHORT_SLURM_OPEN_MODE=append; else the files are truncated
  std::optional<BatchSignal> signal;  // COHORT_SLURM_SIGNAL
  // Once the script has exited, how long what it started may keep its output open before the
  // wrapper stops reading and ends (a background process that outlives it).
  Duration drain_limit = std::chrono::seconds(2);
};

// The settings the variables in `env` give; an error names the variable that is missing or
// malformed.
StatusOr<BatchSettings> BatchSettingsFromEnv(const std::map<std::string, std::string>& env);

// "[B:]NUMBER@SECONDS", as COHORT_SLURM_SIGNAL holds it.
StatusOr<BatchSignal> ParseBatchSignal(std::string_view text);

// The argv that runs `script` whose first line is `first_line` (without its newline), as Linux
// runs a "#!" script: the interpreter is the first word after "#!" (spaces and tabs before it
// skipped), the rest of the line, trimmed, one optional argument. An error when the line does
// not start with "#!" or names no interpreter.
StatusOr<std::vector<std::string>> ScriptCommand(std::string_view first_line,
                                                 const std::string& script,
                                                 const std::vector<std::string>& args);

// Runs the script with `args` and relays its output until it ends: its exit status, or 1 when
// it could not be started (the reason on stderr).
int RunBatch(const BatchSettings& settings, const std::vector<std::string>& args);

// The main of `cohort-exec batch [-- ARGS...]`: the settings from this process's environment,
// then RunBatch.
int BatchMain(const std::vector<std::string>& args);

}  // namespace cohort::exec
