// The simulated cluster: nodes, GPUs per node, racks, and teams with quotas. From a small YAML
// file or from flags (docs/simulator.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/plan.h"

namespace cohort::sim {

struct ClusterSpec {
  int nodes = 16;
  int gpus_per_node = 8;
  int64_t milli_cpus = 64'000;                        // per node
  int64_t memory_bytes = 512LL * 1024 * 1024 * 1024;  // per node
  int racks = 1;
  // Teams and their quotas. Jobs of a trace without teams are spread over these by a hash of
  // their id; without teams, every job belongs to "default".
  std::vector<TeamQuota> teams;
  // `teams: auto` / `--teams auto`: the teams are the trace's own, with quotas by GPU-hours
  // (sim/team_quotas.h); whoever loads the trace fills `teams` in. Jobs that name no team belong
  // to "default".
  bool teams_from_trace = false;
  uint64_t seed = 1;  // salts the hash that spreads jobs over teams

  int64_t TotalGpus() const { return static_cast<int64_t>(nodes) * gpus_per_node; }
  // The nodes, idle, named node-0000 ..., with label rack=rack-<n>.
  std::vector<NodeCapacity> Nodes() const;
};

// YAML: {nodes: 32, gpus_per_node: 8, cpus: 64, memory: 512Gi, racks: 4,
//        teams: [{name: vision, gpus: 64, max_gpus: 128}, ...]}; or `teams: auto`.
StatusOr<ClusterSpec> ParseClusterSpec(std::string_view yaml, std::string_view source);
StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path);

// "vision:64,nlp:32:48" -> teams with guarantees (and optional limits).
StatusOr<std::vector<TeamQuota>> ParseTeams(std::string_view text);

// The team of a job that names none: a stable hash of its id over the spec's teams ("default"
// without teams, or with teams from the trace).
std::string TeamFor(const ClusterSpec& spec, const std::string& job_id);

}  // namespace cohort::sim
