#include "scheduler/reservations.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

namespace cohort::scheduler {
namespace {

// Reservations a pass makes for jobs within their team's guarantee, beyond
// SchedulerConfig::reservations: each is a walk over what runs.
constexpr int kMaxGuaranteedReservations = 16;

}  // namespace

void Hold(PassState& s, const PendingJob& job, const std::vector<TaskPlacement>& placement) {
  s.unreserved.Take(job.tasks, placement, /*partial=*/true);
  if (s.within_guarantee) {
    s.guaranteed.Take(job.tasks, placement, /*partial=*/true);
    s.guarantee_holds.push_back(TeamHold{&job.tasks, placement, job.team});
  } else {
    s.borrowing_holds.push_back(TeamHold{&job.tasks, placement, job.team});
  }
  if (s.residue) {
    for (const auto& p : placement) {
      for (int g : p.gpus) s.held.emplace(std::make_pair(p.node_id, g), job.job_id);
    }
  }
}

void Claim(PassState& s, const PendingJob& job, const std::vector<TaskPlacement>& placement) {
  Hold(s, job, placement);
  s.earliest_reservation = s.in.now;
}

void TakeOwnHolds(PassState& s, const PendingJob& job) {
  for (const TeamHold& h : s.borrowing_holds) {
    if (h.team == job.team) s.guaranteed.Take(*h.tasks, h.placement, /*partial=*/true);
  }
}

Reservations::Reservations(PassState& state) : s_(state) {
  int64_t known_ends_gpus = 0;
  for (const RunningJob* job : s_.running) {
    const RunningJob& r = *job;
    std::optional<Timestamp> end = r.ends_by;
    if (IsOracle(s_.config.policy) && r.oracle_ends_at) end = r.oracle_ends_at;
    if (!end && s_.config.default_runtime) end = r.started_at + *s_.config.default_runtime;
    if (r.stopping) end = s_.in.now;
    if (end) {
      releases_.push_back(Release{std::max(*end, s_.in.now), &r.tasks, &r.placement});
      known_ends_gpus += r.Total().gpus;
    }
  }
  // GPUs in use that no known end gives back (jobs without max_runtime, or held by something
  // the snapshot does not list).
  unknown_ends_ = s_.cluster_total.gpus - s_.free.free_gpus() > known_ends_gpus;
}

void Reservations::Started(const PendingJob& job, const std::vector<TaskPlacement>& placement) {
  if (auto end = s_.ExpectedEnd(s_.in.now, job)) {
    AddRelease(Release{*end, &job.tasks, &placements_.emplace_back(placement)});
  } else {
    unknown_ends_ = true;
  }
}

bool Reservations::TryReserve(const PendingJob& job) {
  // Default policy: a job within its team's guarantee reserves beyond the limit, as long as
  // the team's reservations fit in the guarantee with it (and at most
  // kMaxGuaranteedReservations a pass): otherwise borrowers of teams that hold little take
  // every reservation, and the guaranteed job waits for nodes that smaller jobs keep filling.
  if (s_.within_guarantee && s_.GuaranteesFirst() &&
      guaranteed_reservation_count_ < kMaxGuaranteedReservations) {
    int64_t need = TotalOf(job.tasks).gpus;
    int64_t& reserved = guaranteed_reservations_[job.team];
    if (s_.Entitled(job.team) + reserved + need <= s_.order.TeamUsage(job.team).guaranteed_gpus) {
      reserved += need;
      ++guaranteed_reservation_count_;
      Reserve(job, /*counted=*/false);
      return true;
    }
  }
  if (reservations_ < s_.config.reservations) {
    Reserve(job);
    return true;
  }
  return false;
}

void Reservations::AddRelease(const Release& r) {
  if (!releases_sorted_) return releases_.push_back(r);
  auto at = std::upper_bound(releases_.begin(), releases_.end(), r,
                             [](const Release& a, const Release& b) { return a.at < b.at; });
  releases_.insert(at, r);
}

void Reservations::SortReleases() {
  if (releases_sorted_) return;
  for (size_t i = 0; i < releases_.size(); ++i) releases_[i].seq = i;
  std::sort(releases_.begin(), releases_.end(), [](const Release& a, const Release& b) {
    return std::tie(a.at, a.seq) < std::tie(b.at, b.seq);
  });
  releases_sorted_ = true;
}

const int* Reservations::NodesOf(Release& r) {
  if (r.nodes == Release::kUnknown) FindNodes(r);
  return release_nodes_.data() + r.nodes;
}

void Reservations::FindNodes(Release& r) {
  r.nodes = release_nodes_.size();
  for (const auto& p : *r.placement) release_nodes_.push_back(s_.unreserved.Find(p.node_id));
}

bool Reservations::Reserved(int node, int gpu) const {
  if (node < 0 || reserved_gpus_.empty()) return false;
  const std::vector<int>& gpus = reserved_gpus_[static_cast<size_t>(node)];
  return std::find(gpus.begin(), gpus.end(), gpu) != gpus.end();
}

bool Reservations::AnyReserved(const Release& r) const {
  if (reserved_gpus_.empty()) return false;
  for (size_t t = 0; t < r.placement->size(); ++t) {
    for (int g : (*r.placement)[t].gpus) {
      if (Reserved(release_nodes_[r.nodes + t], g)) return true;
    }
  }
  return false;
}

void Reservations::GiveBack(Release& r) {
  const int* nodes = NodesOf(r);
  if (r.reserved || !AnyReserved(r)) {
    s_.unreserved.Give(*r.tasks, *r.placement, nodes, /*partial=*/true);
    return;
  }
  // GPUs that earlier reservations will use go to them, not to this job.
  std::vector<TaskPlacement> rest = *r.placement;
  for (size_t t = 0; t < rest.size(); ++t) {
    std::erase_if(rest[t].gpus, [&](int g) { return Reserved(nodes[t], g); });
  }
  s_.unreserved.Give(*r.tasks, rest, nodes, /*partial=*/true);
}

std::optional<std::vector<TaskPlacement>> Reservations::EarliestFit(const PendingJob& job,
                                                                    Timestamp& at) {
  std::optional<std::vector<TaskPlacement>> placement;
  // What is free once the releases up to each time have come back.
  ScopedWhatIf what_if(s_.unreserved);
  for (size_t k = 0; k < releases_.size() && !placement; ++k) {
    Release& r = releases_[k];
    GiveBack(r);
    if (k + 1 < releases_.size() && releases_[k + 1].at == r.at) continue;
    placement = s_.unreserved.Place(job.tasks, job.constraints);
    at = r.at;
  }
  return placement;
}

void Reservations::Reserve(const PendingJob& job, bool counted) {
  if (counted) ++reservations_;
  SortReleases();
  Timestamp at;
  if (auto placement = EarliestFit(job, at)) return HoldFrom(job, *placement, at);
  // What runs has known ends, and earlier reservations take what it would need (or one job
  // already drains nodes): it waits its turn behind them, holding nothing.
  if (!unknown_ends_ || drained_) return s_.Wait(job, s_.Busy(job));
  drained_ = true;
  HoldClosestNodes(job);
}

namespace {

// Where a reserved job will most likely start, for whoever prepares nodes ahead of it.
void NoteReservedNodes(PendingReason& waiting, const std::vector<TaskPlacement>& placement) {
  for (const auto& p : placement) {
    if (std::find(waiting.reserved_nodes.begin(), waiting.reserved_nodes.end(), p.node_id) ==
        waiting.reserved_nodes.end()) {
      waiting.reserved_nodes.push_back(p.node_id);
    }
  }
}

}  // namespace

void Reservations::HoldFrom(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                            Timestamp at) {
  Hold(s_, job, placement);
  if (!s_.earliest_reservation || at < *s_.earliest_reservation) s_.earliest_reservation = at;
  // What it will use is not there for jobs reserved after it until it ends.
  reserved_gpus_.resize(s_.unreserved.nodes().size());
  for (const auto& p : placement) {
    std::vector<int>& reserved = reserved_gpus_[static_cast<size_t>(s_.unreserved.Find(p.node_id))];
    reserved.insert(reserved.end(), p.gpus.begin(), p.gpus.end());
  }
  if (auto end = s_.ExpectedEnd(at, job)) {
    AddRelease(Release{*end, &job.tasks, &placements_.emplace_back(placement), /*reserved=*/true});
  }
  s_.Wait(
      job,
      fmt::format("{}; reserved to start by {} at the latest", s_.Busy(job), FormatTimestamp(at)),
      false, at);
  NoteReservedNodes(s_.plan.waiting.back(), placement);
}

void Reservations::HoldClosestNodes(const PendingJob& job) {
  // Some of what runs has no known end. Hold the nodes closest to fitting anyway, so that
  // the job cannot starve behind a stream of smaller ones.
  std::vector<NodeCapacity> drained = s_.free.nodes();
  std::stable_sort(drained.begin(), drained.end(),
                   [](const auto& a, const auto& b) { return a.free.gpus > b.free.gpus; });
  for (auto& n : drained) {
    n.free = n.total;
    n.free_gpus.clear();
    for (int g = 0; g < n.total.gpus; ++g) n.free_gpus.push_back(g);
  }
  if (auto placement = CapacityIndex(std::move(drained)).Place(job.tasks, job.constraints)) {
    Hold(s_, job, *placement);
    std::set<std::string> nodes;
    for (const auto& p : *placement) nodes.insert(p.node_id);
    s_.earliest_reservation = s_.in.now;  // its end is unknown: only jobs that end now may use it
    s_.Wait(job, fmt::format("{}; holding {} for it (no start estimate: jobs there have "
                             "no max_runtime)",
                             s_.Busy(job), fmt::join(nodes, ", ")));
    s_.plan.waiting.back().reserved_nodes.assign(nodes.begin(), nodes.end());
    return;
  }
  s_.Wait(job, s_.Busy(job));
}

}  // namespace cohort::scheduler
