// Several traces as one (`cohort sim concat`): e.g. the ten ITP clusters, each a team.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sim/trace.h"

namespace cohort::sim {

// A source's name: its file name without directory and extension ("a/cluster04.csv" ->
// "cluster04").
std::string SourceName(std::string_view path);

struct Source {
  std::string name;  // SourceName of its file
  Trace trace;
};

// The jobs of every source, in submission order (ties in the order of the sources): each id
// prefixed by its source's name ("cluster04-1234"), which keeps ids unique across sources, and
// each job's team its source's name unless `keep_teams`. Two sources of one name are an error.
StatusOr<std::vector<TraceJob>> Concatenate(const std::vector<Source>& sources, bool keep_teams);

}  // namespace cohort::sim
