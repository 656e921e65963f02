// What the state store keeps of a sweep (docs/sweeps.md): the columns it lists sweeps by, and
// the master's record of the rest (the spec, the searcher's state, the trials), which the store
// keeps as it is given.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "model/trial.h"

namespace cohort {

struct SweepRecord {
  SweepId id = 0;
  std::string name;
  std::string team;
  std::string user;
  std::string state;  // the master's name for it (master/sweeps.h)
  Timestamp created_at;
  std::optional<Timestamp> finished_at;
  nlohmann::json doc = nlohmann::json::object();
};

}  // namespace cohort
