// Everything a StateStore holds, as one text: two stores hold the same iff their texts are equal.
// For tests that compare a store after a crash or a refused write with what it must hold.
#pragma once

#include <string>

#include "model/json.h"
#include "state/state_store.h"

namespace cohort::testing {

// Jobs in id order, each with its events; teams; nodes; runtime history rows. A failed load
// shows as its error.
inline std::string StoreContents(state::StateStore& store) {
  std::string out;
  auto jobs = store.LoadJobs();
  if (!jobs.ok()) return "LoadJobs: " + jobs.status().ToString();
  for (const auto& job : *jobs) {
    out += "job " + ToJson(job).dump() + "\n";
    auto events = store.LoadEvents(job.id);
    if (!events.ok()) return "LoadEvents: " + events.status().ToString();
    for (const auto& e : *events) out += "  event " + ToJson(e).dump() + "\n";
  }
  auto teams = store.LoadTeams();
  if (!teams.ok()) return "LoadTeams: " + teams.status().ToString();
  for (const auto& t : *teams) {
    out += "team " + t.name + " " + std::to_string(t.guaranteed_gpus) + " " +
           (t.max_gpus ? std::to_string(*t.max_gpus) : "-") + "\n";
  }
  auto nodes = store.LoadNodes();
  if (!nodes.ok()) return "LoadNodes: " + nodes.status().ToString();
  for (const auto& n : *nodes) {
    out += "node " + ToJson(n.info).dump() + " " + std::to_string(ToMicros(n.registered_at)) + " " +
           std::to_string(ToMicros(n.last_seen)) + "\n";
  }
  auto history = store.LoadRuntimeHistory();
  if (!history.ok()) return "LoadRuntimeHistory: " + history.status().ToString();
  for (const auto& r : *history) {
    out += "history " + r.key + " " + std::to_string(r.samples) + " " +
           std::to_string(r.mean_seconds) + " " + std::to_string(r.last_used) + "\n";
  }
  return out;
}

}  // namespace cohort::testing
