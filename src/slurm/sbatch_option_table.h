// sbatch's options, one row each (sbatch(1)'s OPTIONS, SchedMD/slurm @ 284c3b9): what each takes
// and what Cohort does with it. Internal to sbatch_options.cc and its test.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "slurm/sbatch_options.h"

namespace cohort::slurm {

enum class OptionArgument {
  kNone,      // a flag
  kRequired,  // --opt=value, --opt value, -Xvalue, -X value
  kOptional,  // only as --opt=value (getopt's optional_argument)
};

enum class OptionHandling {
  kApply,        // sets a field of SbatchOptions; with a note, also warns
  kIgnore,       // accepted and warned about: it means nothing on Cohort
  kUnsupported,  // listed as unknown, with the note as the reason
};

// Sets the option's field from its value (empty for a flag); on a bad value, the reason only.
using ApplyOption = Status (*)(std::string_view value, SbatchOptions& options);

struct SbatchOptionSpec {
  std::string_view name;  // the long name, without "--"
  char short_name = 0;    // 0: none
  OptionArgument argument = OptionArgument::kRequired;
  OptionHandling handling = OptionHandling::kApply;
  ApplyOption apply = nullptr;  // kApply only
  std::string_view note;        // why it is warned about, or not supported
};

std::span<const SbatchOptionSpec> SbatchOptionTable();
const SbatchOptionSpec* FindLongOption(std::string_view name);
const SbatchOptionSpec* FindShortOption(char name);
// The long names that start with `prefix` ("job" -> "job-name"), for an abbreviated option.
std::vector<std::string_view> LongOptionsStartingWith(std::string_view prefix);

}  // namespace cohort::slurm
