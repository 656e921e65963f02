// A sweep as the API answers it (docs/sweeps.md, "API"): its state and searcher, and the
// leaderboard, every trial best first with its values, state, metric, steps, GPU time and job.
#pragma once

#include "auth/principal.h"
#include "master/master.h"
#include "model/json.h"

namespace cohort::api {

// With `allowed_actions`: what `caller` may do with it now (pause, resume, kill), as the routes
// decide, so that the dashboard copies no rule of its own.
Json SweepJson(const master::Master& master, const master::Sweep& sweep,
               const auth::Principal& caller);

}  // namespace cohort::api
