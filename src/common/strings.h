// Small string helpers that the standard library lacks.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cohort {

std::vector<std::string> Split(std::string_view text, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view Trim(std::string_view text);
// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD, for text from the
// network that must be stored or served as JSON.
std::string ValidUtf8(std::string_view text);
// Quotes a string for a POSIX shell when it needs it, for showing commands to people.
std::string ShellQuote(std::string_view arg);

// The decimal integer that is the whole of `text` (an optional '-', then digits; no spaces, no
// '+', no other characters), if it lies within [min, max]. Every integer read from a user, a
// file or the network goes through here.
std::optional<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max);
// ParseInteger for a field of type int (ports, pids, counts).
std::optional<int> ParseInt(std::string_view text, int min = std::numeric_limits<int>::min(),
                            int max = std::numeric_limits<int>::max());

}  // namespace cohort
