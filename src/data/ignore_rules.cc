#include "data/ignore_rules.h"

#include <fmt/format.h>
#include <fnmatch.h>

namespace cohort::data {
namespace {

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (true) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    path.remove_prefix(slash + 1);
  }
}

// Segment by segment: "**" is any number of segments, every other one fnmatch(3) within one.
bool MatchSegments(const std::vector<std::string_view>& pattern, size_t i,
                   const std::vector<std::string_view>& path, size_t j) {
  if (i == pattern.size()) return j == path.size();
  if (pattern[i] == "**") {
    for (size_t k = j; k <= path.size(); ++k) {
      if (MatchSegments(pattern, i + 1, path, k)) return true;
    }
    return false;
  }
  if (j == path.size()) return false;
  return ::fnmatch(std::string(pattern[i]).c_str(), std::string(path[j]).c_str(), 0) == 0 &&
         MatchSegments(pattern, i + 1, path, j + 1);
}

bool Match(std::string_view pattern, std::string_view path) {
  return MatchSegments(Segments(pattern), 0, Segments(path), 0);
}

}  // namespace

StatusOr<IgnoreRules> IgnoreRules::Parse(std::string_view text) {
  IgnoreRules rules;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && line.back() == ' ' &&
           !(line.size() >= 2 && line[line.size() - 2] == '\\')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line.front() == '#') continue;
    if (line.size() > kMaxIgnorePatternBytes) {
      return Status::InvalidArgument(
          fmt::format(".cohortignore line {}: a pattern of {} bytes is longer than {}", line_number,
                      line.size(), kMaxIgnorePatternBytes));
    }
    if (rules.rules_.size() == kMaxIgnoreRules) {
      return Status::InvalidArgument(
          fmt::format(".cohortignore: more than {} patterns", kMaxIgnoreRules));
    }
    Rule rule;
    if (line.front() == '!') {
      rule.negated = true;
      line.remove_prefix(1);
    } else if (line.starts_with("\\#") || line.starts_with("\\!")) {
      line.remove_prefix(1);
    }
    if (!line.empty() && line.back() == '/') {
      rule.directory_only = true;
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    rule.anchored = line.find('/') != std::string_view::npos;
    if (line.front() == '/') line.remove_prefix(1);
    if (line.empty()) continue;
    size_t globstars = 0;
    for (std::string_view segment : Segments(line)) globstars += segment == "**";
    // Each "**" multiplies the ways to match: a few are what anyone writes.
    if (globstars > kMaxGlobstars) {
      return Status::InvalidArgument(fmt::format(
          ".cohortignore line {}: more than {} \"**\" in one pattern", line_number, kMaxGlobstars));
    }
    rule.pattern = std::string(line);
    rules.rules_.push_back(std::move(rule));
  }
  return rules;
}

bool IgnoreRules::Ignored(std::string_view path, bool directory) const {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  bool ignored = false;
  for (const Rule& rule : rules_) {
    if (rule.directory_only && !directory) continue;
    if (Match(rule.pattern, rule.anchored ? path : name)) ignored = !rule.negated;
  }
  return ignored;
}

}  // namespace cohort::data
