// What the line protocols (cohort-metric, cohort-checkpoint) share: words separated by blanks,
// and fields shown in errors.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort::metrics {

// Takes the next word (a run of anything but spaces and tabs) off the front of `rest`; nothing
// once only blanks are left.
std::optional<std::string_view> NextWord(std::string_view& rest);

// A field as errors show it: valid UTF-8, at most 40 bytes and "..." (lines come from tasks).
std::string Shown(std::string_view text);

}  // namespace cohort::metrics
