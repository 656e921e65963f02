// A sweep as the API answers it (docs/sweeps.md, "API"): its state and searcher, and the
// leaderboard, every trial best first with its values, state, metric, steps, GPU time and job.
#pragma once

#include "master/master.h"
#include "model/json.h"

namespace cohort::api {

Json SweepJson(const master::Master& master, const master::Sweep& sweep);

}  // namespace cohort::api
