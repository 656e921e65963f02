#include "scheduler/scheduler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/units.h"
#include "scheduler/capacity_index.h"
#include "scheduler/elastic.h"
#include "scheduler/incremental.h"
#include "scheduler/job_order.h"
#include "scheduler/levels.h"
#include "scheduler/moving.h"
#include "scheduler/pass_state.h"
#include "scheduler/reservations.h"
#include "scheduler/victims.h"

namespace cohort::scheduler {
namespace {

// One scheduling pass: the stages in order, over the state they share (pass_state.h).
class Pass {
 public:
  Pass(const SchedulerConfig& config, const SchedulingInput& in, PassResidue* residue,
       Indexes& indexes)
      : s_(config, in, residue, indexes),
        levels_(s_),
        reservations_(s_),
        victims_(s_, levels_),
        moving_(s_, victims_),
        elastic_(s_) {}

  Plan Run() {
    levels_.Read();
    while (auto i = s_.order.Next()) {
      Consider(*i);
      if (blocked_by_ && !s_.residue) {
        // Strict order, blocked: every job behind waits for the blocker, whatever its place.
        // (Decisions between passes read the waiting jobs in order: with them, all go in order.)
        for (size_t j : s_.order.Rest()) {
          s_.Wait(s_.in.pending[j], s_.in.reasons ? blocked_text_ : std::string());
        }
        break;
      }
    }
    elastic_.Grow();
    if (s_.residue) Leave(*s_.residue);
    return std::move(s_.plan);
  }

 private:
  // What decisions until the next pass need (incremental.h).
  void Leave(PassResidue& r) {
    r.config = s_.config;
    r.free = s_.free;
    r.unreserved = s_.unreserved;
    r.earliest_reservation = s_.earliest_reservation;
    r.held = std::move(s_.held);
    r.queue = std::move(s_.queue);
    r.zero_gpu_waiting = 0;
    for (const auto& w : r.queue) r.zero_gpu_waiting += w.gpus == 0;
    r.teams = s_.order.Teams();
    r.shapes = s_.shapes;
  }

  void Consider(size_t i) {
    const PendingJob& job = s_.in.pending[i];
    if (blocked_by_) return s_.Wait(job, s_.in.reasons ? blocked_text_ : std::string());
    if (auto why = Unschedulable(job)) return s_.Wait(job, *why, /*unschedulable=*/true);
    if (auto why = KeptOff(job)) return s_.Wait(job, *why);
    Resources need = TotalOf(job.tasks);
    const Usage& team = s_.order.TeamUsage(job.team);
    s_.within_guarantee = s_.Entitled(job.team) + need.gpus <= team.guaranteed_gpus;
    if (team.max_gpus && team.held.gpus + need.gpus > *team.max_gpus) {
      return s_.Wait(
          job, fmt::format("team {} holds {} of the {} it may use at most; needs {} more", job.team,
                           team.held.gpus, Gpus(*team.max_gpus), Gpus(need.gpus)));
    }
    if (auto placement = PlaceNow(job)) return Start(i, job, std::move(*placement));
    if (victims_.WaitForStopping(job)) return;
    if (elastic_.TryShrink(job)) return;
    if (victims_.TryPreemption(job)) return;
    if (moving_.TryMoving(job)) return;
    if (s_.config.backfill && reservations_.TryReserve(job)) return;
    if (!s_.config.backfill) {
      // Every job behind it waits for it: one text for all of them.
      blocked_by_ = job.job_id;
      blocked_text_ = fmt::format("waiting behind job {} (strict {} order)", job.job_id,
                                  PolicyName(s_.config.policy));
    }
    s_.Wait(job, s_.Busy(job));
  }

  // Why no node of the cluster as it stands could ever hold the job, if that is so.
  std::optional<std::string> Unschedulable(const PendingJob& job) const {
    if (s_.in.cluster.nodes.empty()) return "no nodes are ready";
    if (!job.constraints.empty()) {
      if (auto why = UnschedulableByConstraints(job)) return why;
    }
    for (const auto& t : job.tasks) {
      // Nodes come in few shapes: checking those is checking every node.
      bool fits = std::any_of(s_.shapes.begin(), s_.shapes.end(),
                              [&](const Resources& shape) { return t.resources.FitsIn(shape); });
      if (!fits) {
        return fmt::format("unschedulable: task {}/{} needs {}", t.role, t.index,
                           WhyNoNodeHolds(t.resources));
      }
    }
    Resources need = TotalOf(job.tasks);
    if (!need.FitsIn(s_.cluster_total)) {
      return fmt::format("unschedulable: needs {} in all, but the cluster has {}", need.ToString(),
                         s_.cluster_total.ToString());
    }
    if (AnyOnDistinctNodes(job.tasks)) return TooFewNodesApart(job);
    return std::nullopt;
  }

  // Unschedulable() for a job with a group whose replicas need a node each: fewer nodes could
  // ever hold one of them than it has replicas.
  std::optional<std::string> TooFewNodesApart(const PendingJob& job) const {
    Constraints lasting = job.constraints;  // nodes it is kept off for now count (KeptOff)
    lasting.excluded_nodes.clear();
    for (const DistinctGroup& g : DistinctGroupsOf(job.tasks)) {
      size_t nodes = 0;
      if (lasting.empty()) {
        // Nodes come in few shapes: counting by shape is counting every node.
        for (size_t i = 0; i < s_.shapes.size(); ++i) {
          if (g.per_replica.FitsIn(s_.shapes[i])) nodes += s_.shape_nodes[i];
        }
      } else {
        nodes = static_cast<size_t>(std::count_if(
            s_.in.cluster.nodes.begin(), s_.in.cluster.nodes.end(), [&](const NodeCapacity& n) {
              return g.per_replica.FitsIn(n.total) && Meets(n, lasting);
            }));
      }
      if (nodes >= g.replicas) continue;
      const char* which = lasting.empty() ? ""
                          : nodes == 1    ? " that meets its constraints"
                                          : " that meet its constraints";
      return fmt::format(
          "unschedulable: needs {} distinct nodes for {} (distinct_nodes: one replica on each), "
          "but only {} ready node{}{} can hold one",
          g.replicas, g.role, nodes, nodes == 1 ? "" : "s", which);
    }
    return std::nullopt;
  }

  // Why the job waits if only nodes it is kept off for now could hold it (the master's exclusion
  // ends; then it may start there): not unschedulable.
  std::optional<std::string> KeptOff(const PendingJob& job) const {
    const auto& excluded = job.constraints.excluded_nodes;
    if (excluded.empty()) return std::nullopt;
    Constraints others = job.constraints;
    others.excluded_nodes.clear();
    std::vector<std::string> kept_off;
    for (const auto& n : s_.in.cluster.nodes) {
      if (!Meets(n, others)) continue;
      if (!excluded.count(n.node_id)) return std::nullopt;
      kept_off.push_back(n.node_id);
    }
    return fmt::format("waits: it is kept off {} {} for now, and no other ready node could hold it",
                       kept_off.size() == 1 ? "node" : "nodes", fmt::join(kept_off, ", "));
  }

  // Unschedulable() for a job with constraints. Constrained jobs are few: this looks at the
  // nodes themselves.
  std::optional<std::string> UnschedulableByConstraints(const PendingJob& job) const {
    std::vector<const NodeCapacity*> eligible;
    // Nodes it is kept off for now count: the exclusion ends (KeptOff says why it waits).
    Constraints lasting = job.constraints;
    lasting.excluded_nodes.clear();
    for (const auto& n : s_.in.cluster.nodes) {
      if (Meets(n, lasting)) eligible.push_back(&n);
    }
    if (eligible.empty()) {
      std::vector<std::string> wanted;
      if (!job.constraints.gpu_model.empty()) {
        wanted.push_back("GPU model " + job.constraints.gpu_model);
      }
      for (const auto& [key, value] : job.constraints.labels) {
        wanted.push_back(fmt::format("label {}={}", key, value));
      }
      return fmt::format("unschedulable: no ready node has {}", fmt::join(wanted, " and "));
    }
    Resources eligible_total;
    for (const NodeCapacity* n : eligible) eligible_total += n->total;
    for (const auto& t : job.tasks) {
      bool fits = std::any_of(eligible.begin(), eligible.end(),
                              [&](const NodeCapacity* n) { return t.resources.FitsIn(n->total); });
      if (!fits) {
        return fmt::format(
            "unschedulable: task {}/{} needs {} on one node, and no node that "
            "meets the job's constraints has it",
            t.role, t.index, t.resources.ToString());
      }
    }
    if (!TotalOf(job.tasks).FitsIn(eligible_total)) {
      return fmt::format(
          "unschedulable: needs {} in all, but the nodes that meet its "
          "constraints have {}",
          TotalOf(job.tasks).ToString(), eligible_total.ToString());
    }
    return std::nullopt;
  }

  // What of `r`, which no node's shape holds, is beyond every node.
  std::string WhyNoNodeHolds(const Resources& r) const {
    const Resources& largest = s_.largest_node;
    if (r.gpus > largest.gpus) {
      return fmt::format("{} on one node, but the largest node has {}", Gpus(r.gpus),
                         Gpus(largest.gpus));
    }
    if (r.milli_cpus > largest.milli_cpus) {
      return fmt::format("{} CPUs on one node, but the largest node has {}",
                         FormatMilliCpus(r.milli_cpus), FormatMilliCpus(largest.milli_cpus));
    }
    if (r.memory_bytes > largest.memory_bytes) {
      return fmt::format("{} of memory on one node, but the largest node has {}",
                         FormatByteSizeApprox(r.memory_bytes),
                         FormatByteSizeApprox(largest.memory_bytes));
    }
    return fmt::format("{} on one node, and no node has all of it", r.ToString());
  }

  // Where the job may look for room: everything that is free, if it will be gone before the
  // first reservation begins; otherwise only what no reservation covers.
  // A job within its team's guarantee is not kept out by what is held for jobs beyond theirs:
  // guarantees come before borrowing, and otherwise a team below its guarantee would wait for a
  // borrower's reservation to start, or preempt to get round it.
  const CapacityIndex& RoomFor(const PendingJob& job) const {
    if (!s_.earliest_reservation) return s_.free;
    auto end = s_.ExpectedEnd(s_.in.now, job);
    if (end && *end <= *s_.earliest_reservation) return s_.free;
    return s_.within_guarantee ? s_.guaranteed : s_.unreserved;
  }

  // Where the job can start now, in RoomFor(job). A job within its team's guarantee still
  // leaves alone what is held for its own team's jobs beyond the guarantee (TakeOwnHolds).
  std::optional<std::vector<TaskPlacement>> PlaceNow(const PendingJob& job) {
    const CapacityIndex& room = RoomFor(job);
    bool own_holds = &room == &s_.guaranteed &&
                     std::any_of(s_.borrowing_holds.begin(), s_.borrowing_holds.end(),
                                 [&](const TeamHold& h) { return h.team == job.team; });
    if (!own_holds) return room.Place(job.tasks, job.constraints);
    ScopedWhatIf what_if(s_.guaranteed);
    TakeOwnHolds(s_, job);
    return s_.guaranteed.Place(job.tasks, job.constraints);
  }

  void Start(size_t i, const PendingJob& job, std::vector<TaskPlacement> placement) {
    s_.free.Take(job.tasks, placement);
    s_.unreserved.Take(job.tasks, placement, /*partial=*/true);
    s_.guaranteed.Take(job.tasks, placement, /*partial=*/true);
    s_.order.Placed(i);
    if (s_.claimants.count(job.job_id)) s_.reclaim_delta[job.team] -= TotalOf(job.tasks).gpus;
    reservations_.Started(job, placement);
    s_.plan.placements.push_back(JobPlacement{job.job_id, std::move(placement)});
  }

  PassState s_;
  Levels levels_;
  Reservations reservations_;
  VictimSearch victims_;
  Moving moving_;
  ElasticReplicas elastic_;
  std::optional<JobId> blocked_by_;
  std::string blocked_text_;  // the reason of the jobs behind it
};

class GangScheduler final : public Scheduler {
 public:
  explicit GangScheduler(SchedulerConfig config) : config_(config) {}
  Plan Schedule(const SchedulingInput& input) override {
    return Pass(config_, input, nullptr, indexes_).Run();
  }
  Plan Schedule(const SchedulingInput& input, PassResidue& residue) override {
    return Pass(config_, input, &residue, indexes_).Run();
  }
  const SchedulerConfig& config() const override { return config_; }

 private:
  SchedulerConfig config_;
  Indexes indexes_;
};

}  // namespace

const char* PolicyName(Policy p) { return NameOf(kPolicyNames, p, "default"); }

StatusOr<Policy> ParsePolicy(std::string_view name) {
  if (auto p = Parse(kPolicyNames, name)) return *p;
  return Status::InvalidArgument(
      fmt::format("\"{}\" is not a scheduling policy; use {}", name, NameList(kPolicyNames)));
}

std::unique_ptr<Scheduler> NewScheduler(SchedulerConfig config) {
  return std::make_unique<GangScheduler>(config);
}

}  // namespace cohort::scheduler
