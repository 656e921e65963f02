// sbatch's options, from a script's #SBATCH directives and from the command line, as Slurm
// reads them (sbatch(1); src/sbatch/opt.c and src/common/slurm_opt.c, SchedMD/slurm @ 284c3b9,
// read for behaviour only):
//
// - `--opt=value`, `--opt value`, `-Xvalue`, `-X value`, and short flags together (`-WQ`); an
//   option given twice keeps its last value; on the command line the first argument that is not
//   an option is the script, and it and what follows are its arguments (`--` ends the options);
// - the command line overrides the script, option by option (MergeSbatchOptions);
// - each option is one of: applied (a field below; a few, kept only to be shown, with a warning
//   that Cohort does nothing with them: --account, --mail-*); ignored with a warning (tuning
//   that means nothing on Cohort: --hint, --mem-bind, --nice...); or not supported (it would
//   change what the job gets or when: --nodelist, --begin, --hold...), listed with the unknown
//   options, each with where it was written and why, for CheckUnknown;
// - a value that is wrong, an abbreviated option (getopt would accept a unique prefix; Cohort
//   says which option was meant instead of guessing), a script line that is not an option, and
//   two options Slurm holds mutually exclusive are errors, all of them listed in one Status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/job_array.h"
#include "model/job_dependency.h"
#include "slurm/batch_script.h"
#include "slurm/sbatch_controls.h"
#include "slurm/sbatch_resources.h"

namespace cohort::slurm {

// Where an option was written: a line of the script, or the command line.
struct Origin {
  int line = 0;               // from 1; 0: the command line, or the variable below
  std::string variable = {};  // an input variable of sbatch's: "SBATCH_PARTITION"
  static Origin CommandLine() { return Origin{}; }
  static Origin ScriptLine(int line) { return Origin{line}; }
  static Origin Variable(std::string name) { return Origin{0, std::move(name)}; }
  bool command_line() const { return line == 0 && variable.empty(); }
  std::string ToString() const;  // "line 4", "command line", "$SBATCH_PARTITION"
  bool operator==(const Origin&) const = default;
};

struct SbatchArgument {
  std::string text;
  Origin origin;
};

struct SbatchOptions {
  // What the job is, and where its files go.
  std::optional<std::string> job_name;  // -J
  std::optional<std::string> output;    // -o: a filename pattern (filename_pattern.h)
  std::optional<std::string> error;     // -e: a filename pattern
  std::optional<std::string> input;     // -i: a filename pattern
  std::optional<OpenMode> open_mode;
  std::optional<std::string> chdir;  // -D
  std::optional<ExportSpec> export_env;
  std::optional<std::string> comment;
  std::optional<std::string> wrap;  // command line only: the script is this command under sh

  // What it needs.
  std::optional<NodeRange> nodes;  // -N
  std::optional<int> ntasks;       // -n
  std::optional<int> ntasks_per_node;
  std::optional<int> cpus_per_task;  // -c
  std::optional<int> cpus_per_gpu;
  std::optional<GpuRequest> gpus;  // -G: for the whole job
  std::optional<GpuRequest> gpus_per_node;
  std::optional<GpuRequest> gpus_per_task;
  std::optional<GpuRequest> gres_gpus;    // --gres=gpu...: per node; a count of 0 for --gres=none
  std::optional<int64_t> mem;             // --mem: bytes per node; 0: all of each node's
  std::optional<int64_t> mem_per_cpu;     // bytes
  std::optional<int64_t> mem_per_gpu;     // bytes
  std::optional<TimeLimit> time;          // -t
  std::optional<std::string> exclusive;   // --exclusive: "", or "user", "mcs", "topo"
  std::optional<std::string> constraint;  // -C, as written
  std::optional<std::string> partition;   // -p
  std::optional<std::string> qos;         // -q
  std::optional<std::string> account;     // -A: kept to be shown; Cohort accounts by team

  // When and how it runs.
  std::optional<ArraySpec> array;                     // -a
  std::optional<std::string> array_text;              // -a as written (SLURM_ARRAY_TASK_STEP)
  std::optional<std::vector<Dependency>> dependency;  // -d
  std::optional<bool> kill_on_invalid_dep;
  std::optional<bool> requeue;  // --requeue: true, --no-requeue: false
  std::optional<SignalSpec> signal;
  std::optional<std::string> mail_type;  // kept to be shown; Cohort sends no mail
  std::optional<std::string> mail_user;

  // How sbatch itself behaves.
  bool wait = false;      // -W: return when the job ends, with its exit code
  bool parsable = false;  // print only the job's id
  bool quiet = false;     // -Q

  bool operator==(const SbatchOptions&) const = default;
};

// An option Cohort does not run a job with: one sbatch does not have (as far as Cohort knows),
// or one it has that Cohort cannot honour.
struct UnknownOption {
  std::string option;  // as written: "--foo=1", "-X", "--nodelist=n[1-4]"
  Origin origin;
  std::string reason;  // empty: sbatch has no such option; else why Cohort does not honour it
  bool operator==(const UnknownOption&) const = default;
};

struct SbatchParse {
  SbatchOptions options;
  std::vector<UnknownOption> unknown;
  std::vector<std::string> warnings;  // "line 3: --mail-type=END: ignored: Cohort sends no mail"
  std::vector<std::string> operands;  // the command line's script and its arguments
};

// `args`, all written at `origin`. kInvalidArgument listing every error, each naming the
// option, where it was written and why (the Status's details hold one line each).
StatusOr<SbatchParse> ParseSbatchArguments(const std::vector<std::string>& args, Origin origin);
// Arguments each with its own origin: a value may follow its option on the next #SBATCH line,
// as sbatch reads a script's directives as one list.
StatusOr<SbatchParse> ParseSbatchArguments(const std::vector<SbatchArgument>& args);
// A script's directives, its warnings (#SLURM) included.
StatusOr<SbatchParse> ParseScriptDirectives(const BatchScript& script);

// The script's options overridden, one by one, by the command line's. Memory (--mem,
// --mem-per-cpu, --mem-per-gpu), GPUs per node (--gpus-per-node, --gres) and CPUs
// (--cpus-per-task, --cpus-per-gpu) are each one request: the command line's replaces the
// script's whatever form either takes. Flags (--wait, --parsable, --quiet) are set by either.
// Unknown options and warnings of both are kept; the operands are the command line's.
SbatchParse MergeSbatchOptions(const SbatchParse& script, const SbatchParse& command_line);

// Nothing when no option is unknown. Otherwise, unless `ignore_unknown`, kInvalidArgument
// naming every one with where it was written and why, in one message: "unknown or unsupported
// sbatch options: line 4: --foo, line 7: --nodelist=n1 (Cohort chooses the nodes itself); use
// --ignore-unknown to run anyway"; with `ignore_unknown`, one warning for each.
StatusOr<std::vector<std::string>> CheckUnknown(const SbatchParse& parse, bool ignore_unknown);

}  // namespace cohort::slurm
