#include "sim/cluster_spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "common/strings.h"
#include "common/units.h"
#include "sim/team_split.h"

namespace cohort::sim {
namespace {

// A YAML scalar that is a decimal integer.
std::optional<int64_t> Integer(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  return ParseInteger(node.Scalar(), std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max());
}

}  // namespace

std::vector<NodeCapacity> ClusterSpec::Nodes() const {
  std::vector<NodeCapacity> out;
  out.reserve(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    NodeCapacity n;
    n.node_id = fmt::format("node-{:04}", i);
    n.total = Resources{gpus_per_node, milli_cpus, memory_bytes};
    n.free = n.total;
    for (int g = 0; g < gpus_per_node; ++g) n.free_gpus.push_back(g);
    n.labels = {{"rack", fmt::format("rack-{}", i % std::max(racks, 1))}};
    out.push_back(std::move(n));
  }
  return out;
}

StatusOr<std::vector<TeamQuota>> ParseTeams(std::string_view text) {
  std::vector<TeamQuota> teams;
  for (const auto& part : Split(text, ',')) {
    auto f = Split(part, ':');
    auto bad = [&] {
      return Status::InvalidArgument(fmt::format(
          "--teams: \"{}\" is not NAME:GPUS or NAME:GPUS:MAX_GPUS, e.g. vision:64,nlp:32:48",
          part));
    };
    if (f.size() < 2 || f.size() > 3 || f[0].empty()) return bad();
    TeamQuota t;
    t.name = f[0];
    auto guaranteed = ParseInteger(f[1], 0, std::numeric_limits<int64_t>::max());
    if (!guaranteed) return bad();
    t.guaranteed_gpus = *guaranteed;
    if (f.size() == 3) {
      t.max_gpus = ParseInteger(f[2], t.guaranteed_gpus, std::numeric_limits<int64_t>::max());
      if (!t.max_gpus) return bad();
    }
    teams.push_back(t);
  }
  return teams;
}

StatusOr<ClusterSpec> ParseClusterSpec(std::string_view yaml, std::string_view source) {
  ClusterSpec spec;
  std::vector<std::string> problems;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) {
      return Status::InvalidArgument(fmt::format("{}: a cluster spec is a mapping", source));
    }
    auto integer = [&](const char* key, int64_t lo, int64_t hi, auto* out) {
      if (!root[key]) return;
      auto v = Integer(root[key]);
      if (!v) {
        problems.push_back(fmt::format("{}: must be an integer", key));
      } else if (*v < lo || *v > hi) {
        problems.push_back(fmt::format("{}: must be from {} to {}, got {}", key, lo, hi, *v));
      } else {
        *out = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
      }
    };
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (key != "nodes" && key != "gpus_per_node" && key != "cpus" && key != "memory" &&
          key != "racks" && key != "teams") {
        problems.push_back(fmt::format(
            "{}: unknown field; expected nodes, gpus_per_node, cpus, memory, racks or teams", key));
      }
    }
    integer("nodes", 1, 1'000'000, &spec.nodes);
    integer("gpus_per_node", 0, 1024, &spec.gpus_per_node);
    integer("racks", 1, 100'000, &spec.racks);
    if (root["cpus"]) {
      auto cpus = ParseMilliCpus(root["cpus"].as<std::string>());
      if (cpus.ok()) {
        spec.milli_cpus = *cpus;
      } else {
        problems.push_back("cpus: " + cpus.status().message());
      }
    }
    if (root["memory"]) {
      auto memory = ParseByteSize(root["memory"].as<std::string>());
      if (memory.ok()) {
        spec.memory_bytes = *memory;
      } else {
        problems.push_back("memory: " + memory.status().message());
      }
    }
    if (root["teams"] && root["teams"].IsScalar() && root["teams"].Scalar() == "auto") {
      spec.teams_from_trace = true;
    } else if (root["teams"]) {
      if (!root["teams"].IsSequence()) {
        problems.push_back(
            "teams: must be a list of {name, gpus, max_gpus}, or auto (the trace's teams, "
            "quotas by GPU-hours)");
      } else {
        size_t i = 0;
        for (const auto& t : root["teams"]) {
          std::string path = fmt::format("teams[{}]", i++);
          std::string needs = path + ": needs name and gpus (integers), and optionally max_gpus";
          if (!t.IsMap()) {
            problems.push_back(needs);
            continue;
          }
          TeamQuota q;
          auto gpus = t["gpus"] ? Integer(t["gpus"]) : std::nullopt;
          auto max_gpus = t["max_gpus"] ? Integer(t["max_gpus"]) : std::nullopt;
          if (!t["name"] || !t["name"].IsScalar() || !gpus || (t["max_gpus"] && !max_gpus)) {
            problems.push_back(needs);
            continue;
          }
          q.name = t["name"].Scalar();
          q.guaranteed_gpus = *gpus;
          q.max_gpus = max_gpus;
          if (q.guaranteed_gpus < 0 || (q.max_gpus && *q.max_gpus < q.guaranteed_gpus)) {
            problems.push_back(path + ": gpus must be >= 0 and max_gpus >= gpus");
            continue;
          }
          spec.teams.push_back(q);
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}: {}", source, e.what()));
  }
  if (!problems.empty()) {
    return Status::InvalidArgument(fmt::format("{}: invalid cluster spec", source), problems);
  }
  return spec;
}

StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("cannot read the cluster spec {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseClusterSpec(ss.str(), path);
}

std::string TeamFor(const ClusterSpec& spec, const std::string& job_id) {
  if (spec.teams.empty() || spec.teams_from_trace) return "default";
  return spec.teams[StableHash(job_id, spec.seed) % spec.teams.size()].name;
}

}  // namespace cohort::sim
