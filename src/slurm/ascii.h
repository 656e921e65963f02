// ASCII character tests that Slurm's formats are written in, whatever the locale: Slurm reads
// them in the "C" locale, and so must Cohort.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace cohort::slurm {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), IsDigit);
}
inline char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline bool IsLetter(char c) { return Lower(c) >= 'a' && Lower(c) <= 'z'; }
inline std::string Lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), Lower);
  return out;
}
inline bool SameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return Lower(x) == Lower(y); });
}
// C's isspace in the "C" locale.
inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace cohort::slurm
