#include "sim/team_split.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

namespace cohort::sim {

namespace {

// SplitMix64's finalizer: every bit of the result depends on every bit of x. FNV-1a's high bits
// barely differ between ids that differ only in their last characters ("job-17", "job-18").
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

// FNV-1a, but from 1469598103934665603 where the published offset basis is
// 14695981039346656037: the first version lost a digit, and every split over teams (and every
// figure published from one) depends on these values, so they stay.
uint64_t StableHash(std::string_view text, uint64_t salt) {
  uint64_t h = 1469598103934665603ULL ^ salt;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<double> ZipfShares(int teams, double skew) {
  std::vector<double> shares;
  for (int k = 0; k < teams; ++k) shares.push_back(std::pow(static_cast<double>(k + 1), -skew));
  double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
  for (auto& s : shares) s /= sum;
  return shares;
}

size_t PickShare(const std::vector<double>& shares, double u) {
  double running = 0;
  for (size_t k = 0; k < shares.size(); ++k) {
    running += shares[k];
    if (u < running) return k;
  }
  return shares.empty() ? 0 : shares.size() - 1;
}

std::string TeamName(size_t k) { return fmt::format("team-{}", k); }

void SplitOverTeams(std::vector<TraceJob>& jobs, int teams, double skew, uint64_t seed) {
  std::vector<double> shares = ZipfShares(teams, skew);
  for (auto& j : jobs) {
    // The top 53 bits of the hash as a fraction in [0, 1).
    double u = static_cast<double>(Mix(StableHash(j.id, seed)) >> 11) * 0x1.0p-53;
    j.team = TeamName(PickShare(shares, u));
  }
}

}  // namespace cohort::sim
