// Teams for jobs that have none: unequal teams whose job counts follow a Zipf law, picked by a
// random draw (`cohort sim gen`) or by a stable hash of the job's id (`cohort sim split`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/trace.h"

namespace cohort::sim {

// A hash of `text` (FNV-1a, with an unusual offset basis: see the .cc), salted: the same on every
// machine and build, unlike std::hash.
uint64_t StableHash(std::string_view text, uint64_t salt);

// The shares of K teams (summing to 1) when team k, from 0, has weight (k + 1)^-skew: skew 0 is
// equal shares, 1 is Zipf's law, larger is more unequal.
std::vector<double> ZipfShares(int teams, double skew);

// The index k at which the running sum of `shares` first exceeds u (0 <= u < 1); the last index
// if round-off leaves u beyond them all.
size_t PickShare(const std::vector<double>& shares, double u);

// "team-<k>"
std::string TeamName(size_t k);

// Gives each job a team, team-0 .. team-(K-1), with job counts in proportion to ZipfShares: a
// stable hash of its id, salted by `seed` and mixed so that all its bits count, picks the team.
// Replaces any team the job had.
void SplitOverTeams(std::vector<TraceJob>& jobs, int teams, double skew, uint64_t seed);

}  // namespace cohort::sim
