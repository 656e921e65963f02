#include "sim/concat.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace cohort::sim {

std::string SourceName(std::string_view path) {
  return std::filesystem::path(path).stem().string();
}

StatusOr<std::vector<TraceJob>> Concatenate(const std::vector<Source>& sources, bool keep_teams) {
  std::set<std::string> names;
  std::vector<TraceJob> jobs;
  for (const auto& s : sources) {
    if (s.name.empty()) return Status::InvalidArgument("--trace: a trace file has no name");
    if (!names.insert(s.name).second) {
      return Status::InvalidArgument(fmt::format(
          "--trace: two files are named {}: their jobs' ids and teams would be mixed up", s.name));
    }
    for (TraceJob j : s.trace.jobs) {
      j.id = s.name + "-" + j.id;
      if (!keep_teams) j.team = s.name;
      jobs.push_back(std::move(j));
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

}  // namespace cohort::sim
