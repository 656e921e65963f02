// The simulator's cluster spec (sim/cluster_spec.h): the YAML file and the --teams flag. Bad
// input is an error naming the field, never a crash, and what is accepted is within the bounds
// the simulator relies on.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sim/cluster_spec.h"

namespace cohort::sim {
namespace {

void CheckTeams(const std::vector<TeamQuota>& teams) {
  for (const auto& t : teams) {
    FUZZ_CHECK(t.guaranteed_gpus >= 0);
    if (t.max_gpus) FUZZ_CHECK(*t.max_gpus >= t.guaranteed_gpus);
  }
}

}  // namespace
}  // namespace cohort::sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = cohort::sim::ParseClusterSpec(text, "cluster.yaml");
  if (spec.ok()) {
    FUZZ_CHECK(spec->nodes >= 1 && spec->gpus_per_node >= 0 && spec->racks >= 1);
    FUZZ_CHECK(spec->milli_cpus >= 0 && spec->memory_bytes >= 0);
    cohort::sim::CheckTeams(spec->teams);
    std::string team = cohort::sim::TeamFor(*spec, std::string(text.substr(0, 16)));
    FUZZ_CHECK(!team.empty() || !spec->teams.empty());
  }
  auto teams = cohort::sim::ParseTeams(text);
  if (teams.ok()) cohort::sim::CheckTeams(*teams);
  return 0;
}
