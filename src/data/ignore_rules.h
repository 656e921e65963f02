// Which files of a job's code context stay behind (docs/data.md, "Code"): `.cohortignore`, in
// the rules of `.gitignore` (gitignore(5)) that a user expects from Docker, Determined and git:
//
//   - blank lines and lines starting with '#' say nothing; "\#" and "\!" start a pattern with
//     '#' or '!'; trailing blanks are dropped;
//   - a pattern ending in '/' matches directories only;
//   - a pattern with a '/' elsewhere is anchored at the context's top ("build/out", "/dist");
//     one without matches a name at any depth ("*.pyc", "__pycache__");
//   - '*' and '?' and "[a-z]" never match '/'; "**/" matches any number of directories, "/**"
//     everything inside;
//   - '!' re-includes what an earlier pattern excluded, unless a directory above it is
//     excluded: what is inside an excluded directory is never looked at;
//   - the last pattern that matches wins.
//
// Pure: a function of the rules and a path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::data {

inline constexpr size_t kMaxIgnoreRules = 10'000;
inline constexpr size_t kMaxIgnorePatternBytes = 4096;
inline constexpr size_t kMaxGlobstars = 4;  // "**" in one pattern

class IgnoreRules {
 public:
  // Parses the text of a .cohortignore; kInvalidArgument naming the line for one too long or
  // too many rules.
  static StatusOr<IgnoreRules> Parse(std::string_view text);

  // Whether `path` ('/'-separated, relative to the context's top, no leading '/') is left out.
  // `directory`: it names a directory. Callers walk from the top and do not descend into an
  // ignored directory.
  bool Ignored(std::string_view path, bool directory) const;

 private:
  struct Rule {
    std::string pattern;  // as fnmatch(3) takes it, without the leading '/' or trailing '/'
    bool negated = false;
    bool directory_only = false;
    bool anchored = false;  // matched against the whole path, else against each last name
  };
  std::vector<Rule> rules_;
};

}  // namespace cohort::data
