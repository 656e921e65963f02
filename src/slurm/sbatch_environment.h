// sbatch's input variables (sbatch(1), "INPUT ENVIRONMENT VARIABLES"): SBATCH_PARTITION,
// SBATCH_TIMELIMIT and the like, which people set once in their shell's profile. Each stands for
// an option, between the script's directives and the command line: a variable overrides an
// #SBATCH line, and the command line overrides the variable (MergeSbatchOptions twice).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"
#include "slurm/sbatch_options.h"

namespace cohort::slurm {

// The options the SBATCH_* variables of `env` give, each written at its variable
// (Origin::Variable), read as the command line's would be: an unknown or unsupported one is
// listed with the others, a wrong value is an error naming the variable. Variables sbatch does
// not read are not looked at.
StatusOr<SbatchParse> ParseSbatchEnvironment(const std::map<std::string, std::string>& env);

// The option a variable stands for ("SBATCH_TIMELIMIT": "time"); empty for one sbatch does not
// read.
std::string_view SbatchVariableOption(std::string_view variable);

}  // namespace cohort::slurm
