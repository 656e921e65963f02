// A Slurm batch script's #SBATCH directives, read as sbatch reads them (sbatch(1), DESCRIPTION,
// and src/sbatch/opt.c, _opt_batch_script and get_argument, and src/sbatch/sbatch.c,
// _get_script_buffer, SchedMD/slurm @ 284c3b9, read for behaviour only):
//
// - the script must start with "#!"; it may not be empty, hold only whitespace, hold a NUL byte
//   or DOS line breaks;
// - directives are the lines that start with "#SBATCH" (or the old "#SLURM", with a warning) in
//   the first column, up to the first line that is neither blank nor a comment: a directive
//   after the first command is a comment, as in Slurm;
// - the text after "#SBATCH" is split into arguments: whitespace separates them, '...' and
//   "..." group (and may be mixed inside one argument), a backslash takes the next character
//   as it is (inside quotes too), and an unquoted, unescaped '#' ends the line wherever it is,
//   even inside an argument (`--job-name=a#b` names the job "a", as Slurm does).
//
// One difference, on purpose: an empty quoted argument ("") is an empty argument. Slurm stops
// reading the line there, silently dropping what follows.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::slurm {

// Bounds on what is read: a script (Slurm's own default limit is of this order), and one
// directive line.
inline constexpr size_t kMaxBatchScriptBytes = 4 << 20;
inline constexpr size_t kMaxDirectiveLineBytes = 64 << 10;

struct BatchDirective {
  int line = 0;                        // from 1, the "#!" line's being 1
  std::vector<std::string> arguments;  // "#SBATCH -N 2 --time=1:00" -> {"-N", "2", "--time=1:00"}
  bool operator==(const BatchDirective&) const = default;
};

struct BatchScript {
  std::string interpreter;  // the "#!" line without "#!": "/bin/bash -l"
  std::vector<BatchDirective> directives;
  std::vector<std::string> warnings;  // "line 3: #SLURM is ..."
};

// The directives of `text`, in order. kInvalidArgument, naming the line where there is one:
// the script is empty, only whitespace, has no "#!" first line (in Slurm's words), holds a NUL
// byte or a DOS line break, is over kMaxBatchScriptBytes, has a directive line over
// kMaxDirectiveLineBytes or with an unmatched quote, or a heterogeneous job's separator
// ("#SBATCH hetjob", "#SBATCH :"), which Cohort does not run.
StatusOr<BatchScript> ReadBatchScript(std::string_view text);

// The arguments of one directive's text (what follows "#SBATCH"), split as described above.
// kInvalidArgument naming `line` on an unmatched quote.
StatusOr<std::vector<std::string>> SplitDirective(std::string_view text, int line);

}  // namespace cohort::slurm
