// The values of sbatch's options that steer a job rather than size it (sbatch(1), and
// src/common/proc_args.c, src/common/env.c and src/slurmctld/job_scheduler.c, SchedMD/slurm @
// 284c3b9, read for behaviour only): --signal, --dependency, --export, --open-mode and
// --kill-on-invalid-dep. Each error gives the reason only; the caller names the option and
// where it was written.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "model/job_dependency.h"

namespace cohort::slurm {

// --signal=[{R|B}:]<sig_num|sig_name>[@sig_time]: send a signal this long before the time limit.
struct SignalSpec {
  int number = 0;    // 1 to 64, Linux's numbers
  std::string name;  // "USR1" for the signals Slurm names, else the number: "35"
  Duration before_end = std::chrono::seconds(60);  // Slurm's default when @ is not given
  bool batch_shell_only = false;                   // B: the batch shell only, not the steps
  bool reservation_overlap = false;  // R: may overlap a reservation (no meaning on Cohort)
  bool operator==(const SignalSpec&) const = default;
};
// Names as Slurm takes them: HUP INT QUIT ABRT KILL ALRM TERM CHLD USR1 USR2 PIPE URG CONT STOP
// TSTP TTIN TTOU XCPU, in any case, with or without SIG; or a number. sig_time is 0 to 65535
// seconds.
StatusOr<SignalSpec> ParseSignalSpec(std::string_view text);

// -d, --dependency: "afterok:ID[:ID...]", "afternotok:...", "afterany:..." (and a bare ID,
// Slurm's old form of afterany), comma-separated: every one must be met. afterok waits for
// success, afternotok for failure, afterany for any end (model/job_dependency.h). Refused, with
// the reason: "?" (any one of them), singleton, after (start), aftercorr, afterburstbuffer,
// expand, "+time" delays, array elements (ID_INDEX) and more than kMaxJobDependencies jobs. A
// job named twice is listed once, with the stricter condition ("afterany:5,afterok:5" is afterok
// on 5); afterok and afternotok on one job are refused: they can never both be met.
StatusOr<std::vector<Dependency>> ParseDependencyList(std::string_view text);

// --export: which of the submitter's environment a job gets.
struct ExportVariable {
  std::string name;
  std::optional<std::string> value;  // none: the submitter's value of `name`, if it has one
  bool operator==(const ExportVariable&) const = default;
};
struct ExportSpec {
  enum class Base {
    kAll,   // all of it (ALL, Slurm's default); `variables` only fill in what it lacks
    kNone,  // only SLURM_* and `variables` (NONE, or a list without ALL); Slurm then loads the
            // user's login environment on the node, as --get-user-env
    kNil,   // only SLURM_* (NIL), without the login environment
  };
  Base base = Base::kAll;
  std::vector<ExportVariable> variables;
  bool operator==(const ExportSpec&) const = default;
};
// "ALL", "NONE", "NIL", or a comma-separated list of NAME and NAME=value, ALL among them or not
// (a list item wholly in quotes loses them, as in Slurm: "'A=x,y'"). NONE and NIL take no
// variables.
StatusOr<ExportSpec> ParseExportSpec(std::string_view text);

// --open-mode: append or truncate (Slurm reads the first letter).
enum class OpenMode { kAppend, kTruncate };
StatusOr<OpenMode> ParseOpenMode(std::string_view text);

// --kill-on-invalid-dep: yes or no, in any case.
StatusOr<bool> ParseYesNo(std::string_view text);

}  // namespace cohort::slurm
