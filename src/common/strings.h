// Small string helpers that the standard library lacks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cohort {

std::vector<std::string> Split(std::string_view text, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view Trim(std::string_view text);
// Quotes a string for a POSIX shell when it needs it, for showing commands to people.
std::string ShellQuote(std::string_view arg);

}  // namespace cohort
