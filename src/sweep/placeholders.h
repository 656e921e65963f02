// `${hp.NAME}` in a trial template's strings: the text of hyperparameter NAME (model/trial.h,
// HParamText) once the trial's values are known.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::sweep {

inline constexpr std::string_view kPlaceholderStart = "${hp.";

// The dotted names of the placeholders in `text`, in order; kInvalidArgument for a `${hp.`
// without its closing `}`.
StatusOr<std::vector<std::string>> PlaceholderNames(std::string_view text);

// `text` with each placeholder replaced by its value in `values` (by dotted name); only for a
// text whose placeholders PlaceholderNames read and `values` has.
std::string Substitute(std::string_view text, const std::map<std::string, std::string>& values);

}  // namespace cohort::sweep
