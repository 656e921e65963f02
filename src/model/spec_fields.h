// What the parsers of specs (job specs, sweep specs) say about a field, in one voice: a value as
// the person wrote it, the known field a misspelt one meant, and the rule for names.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "model/json.h"

namespace cohort {

// A job's name and a team's name: 1 to this many characters of [A-Za-z0-9._-], starting with a
// letter or digit.
inline constexpr size_t kMaxJobNameLength = 128;
inline constexpr size_t kMaxTeamNameLength = 64;

// "tasks[0].env" and "env.NAME": the path of a field below `path` ("" for the top).
std::string ChildPath(const std::string& path, std::string_view key);
std::string IndexPath(const std::string& path, size_t i);

// The value as a person would recognise it in their file: "two", 2.5, true, null, a list.
std::string DescribeSpecValue(const Json& v);

// The name in `known` closest to `given` (case aside) within two edits, or "" if none is.
std::string_view ClosestName(std::string_view given, std::span<const std::string_view> known);

// What to say of a field `given` that is not one of `known`: "did you mean \"gpus\"?" when a
// known name is close, else "expected one of: a, b, c".
std::string UnknownFieldHint(std::string_view given, std::span<const std::string_view> known);

// Why the string `v` is not a valid `what` ("name", "team") of at most `max_length`
// characters, or nothing if it is. `v` is any value: a non-string is a problem too.
std::optional<std::string> IdentifierProblem(const Json& v, std::string_view what,
                                             size_t max_length);

}  // namespace cohort
