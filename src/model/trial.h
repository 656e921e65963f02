// A job that is one trial of a sweep (docs/sweeps.md): which sweep, which trial, and the
// hyperparameter values it runs with. The job's record carries it; the task environment turns
// it into COHORT_SWEEP_ID, COHORT_TRIAL_ID and COHORT_HP_<NAME> variables, and the agent writes
// the values to the file COHORT_HPARAMS names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cohort {

using SweepId = int64_t;

struct TrialRef {
  SweepId sweep = 0;
  int trial = 0;  // 1-based, in the order the searcher made them
  // The values, nested as the spec's hyperparameters are: {"lr": 0.01, "model": {"depth": 4}}.
  nlohmann::json hparams = nlohmann::json::object();
  bool operator==(const TrialRef&) const = default;
};

// "COHORT_HP_MODEL_DEPTH" for "model.depth": upper case, dots as underscores.
std::string HParamEnvName(std::string_view dotted_name);

// The text of one value, as FlattenHParams gives it.
std::string HParamText(const nlohmann::json& value);

// Every leaf of `hparams` by its dotted name ("model.depth"), with its value as text: a string
// as it is, a number as the shortest text that reads back the same, true/false, null.
std::map<std::string, std::string> FlattenHParams(const nlohmann::json& hparams);

// COHORT_SWEEP_ID, COHORT_TRIAL_ID and COHORT_HP_<NAME> for each leaf (HParamEnvName).
std::map<std::string, std::string> TrialEnvironment(const TrialRef& trial);

}  // namespace cohort
