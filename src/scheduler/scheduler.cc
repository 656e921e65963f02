#include "scheduler/scheduler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/units.h"
#include "scheduler/capacity_index.h"
#include "scheduler/incremental.h"
#include "scheduler/job_order.h"
#include "scheduler/preemption.h"

namespace cohort::scheduler {
namespace {

std::string Gpus(int64_t n) { return fmt::format("{} GPU{}", n, n == 1 ? "" : "s"); }

// Victim searches per pass: each costs a copy of the free capacity. Jobs beyond this many wait
// for the next pass (which the victims' stopping triggers anyway).
constexpr int kMaxPreemptionSearches = 16;
// Reservations a pass makes for jobs within their team's guarantee, beyond
// SchedulerConfig::reservations: each is a walk over what runs.
constexpr int kMaxGuaranteedReservations = 16;

// Resources that come back at a known time (for reservations). Tasks and placement are a running
// job's in the snapshot, or kept by the pass (Pass::placements_).
struct Release {
  Timestamp at;
  const std::vector<TaskRequest>* tasks;
  const std::vector<TaskPlacement>* placement;
  bool reserved = false;  // the end of a job reserved this pass
  size_t seq = 0;         // the order it was added in (Pass::Reserve sorts by time, then this)
  // Where in Pass::release_nodes_ its tasks' node indices begin; kUnknown until a reservation
  // first needs them.
  size_t nodes = kUnknown;
  static constexpr size_t kUnknown = SIZE_MAX;
};

// The capacity indexes of a pass. The scheduler keeps them from one pass to the next, so that
// each pass copies the nodes into buffers it already has; every pass starts them afresh.
struct Indexes {
  CapacityIndex free;
  CapacityIndex unreserved;
  CapacityIndex guaranteed;
};

// One scheduling pass. Holds the capacity as the pass changes it.
class Pass {
 public:
  Pass(const SchedulerConfig& config, const SchedulingInput& in, PassResidue* residue,
       Indexes& indexes)
      : residue_(residue),
        config_(config),
        in_(in),
        running_(RunningJobs(in.cluster, in.running)),
        running_teams_(TeamsOf(running_)),
        order_(config, in.cluster, running_, running_teams_, in.pending, in.now),
        free_(indexes.free),
        unreserved_(indexes.unreserved),
        guaranteed_(indexes.guaranteed) {
    free_.Reset(in.cluster.nodes);
    unreserved_.Reset(in.cluster.nodes);
    guaranteed_.Reset(in.cluster.nodes);
    plan_.waiting.reserve(in.pending.size());  // most of a deep queue waits
    for (const auto& n : in.cluster.nodes) {
      if (std::find(shapes_.begin(), shapes_.end(), n.total) == shapes_.end()) {
        shapes_.push_back(n.total);
      }
      largest_node_.gpus = std::max(largest_node_.gpus, n.total.gpus);
      largest_node_.milli_cpus = std::max(largest_node_.milli_cpus, n.total.milli_cpus);
      largest_node_.memory_bytes = std::max(largest_node_.memory_bytes, n.total.memory_bytes);
      cluster_total_ += n.total;
    }
    int64_t known_ends_gpus = 0;
    // By team (RunningTeams): the lowest priority running, and the GPUs on their way out.
    size_t teams = running_teams_.names.size();
    std::vector<std::optional<int>> lowest(teams);
    std::vector<std::optional<int64_t>> leaving(teams);
    for (size_t i = 0; i < running_.size(); ++i) {
      const RunningJob& r = *running_[i];
      uint32_t team = running_teams_.of[i];
      if (r.stopping) {
        stopping_.push_back(&r);
        leaving[team] = leaving[team].value_or(0) + r.Total().gpus;
      } else {
        lowest[team] = std::min(lowest[team].value_or(r.priority), r.priority);
      }
      std::optional<Timestamp> end = r.ends_by;
      if (IsOracle(config.policy) && r.oracle_ends_at) end = r.oracle_ends_at;
      if (!end && config.default_runtime) end = r.started_at + *config.default_runtime;
      if (r.stopping) end = in.now;
      if (end) {
        releases_.push_back(Release{std::max(*end, in.now), &r.tasks, &r.placement});
        known_ends_gpus += r.Total().gpus;
      }
    }
    for (size_t t = 0; t < teams; ++t) {
      std::string name(running_teams_.names[t]);
      if (lowest[t]) lowest_priority_.emplace(name, *lowest[t]);
      // Quota reclaim counts what is on its way out as gone (and, below, as held by the job it
      // stops for).
      if (leaving[t]) reclaim_delta_[name] -= *leaving[t];
    }
    // GPUs in use that no known end gives back (jobs without max_runtime, or held by something
    // the snapshot does not list).
    unknown_ends_ = cluster_total_.gpus - free_.free_gpus() > known_ends_gpus;
    std::set<JobId> stopped_for;
    for (const RunningJob* r : stopping_) {
      int64_t gpus = r->Total().gpus;
      if (r->stopping_for) stopped_for.insert(*r->stopping_for);
      Coming& coming = r->stopping_for ? coming_for_[*r->stopping_for] : coming_for_anyone_;
      ++coming.jobs;
      coming.gpus += gpus;
    }
    if (!stopped_for.empty()) {
      for (const auto& p : in.pending) {
        if (!stopped_for.count(p.job_id)) continue;
        reclaim_delta_[p.team] += TotalOf(p.tasks).gpus;
        claimants_.insert(p.job_id);
      }
    }
  }

  void Recheck(Timestamp at) {
    if (at > in_.now && (!plan_.recheck_at || at < *plan_.recheck_at)) plan_.recheck_at = at;
  }

  // GPU time a running job has had: earlier attempts plus this one so far.
  Duration AttainedNow(const RunningJob& r) const {
    return r.attained + (in_.now - r.started_at) * r.Total().gpus;
  }

  // Under the default policy, jobs of a team are in levels too, and may preempt their team's jobs
  // of a later level that are not protected.
  bool UsesLevels() const {
    return config_.policy == Policy::kLeastAttainedService || config_.policy == Policy::kFairShare;
  }

  Plan Run() {
    bool fair = config_.policy == Policy::kFairShare;
    if (UsesLevels()) {
      std::vector<std::optional<int>> highest(running_teams_.names.size());  // by team
      for (size_t i = 0; i < running_.size(); ++i) {
        const RunningJob& r = *running_[i];
        if (r.stopping) continue;
        Duration attained = AttainedNow(r);
        if (fair && IsProtected(config_, r, in_.now)) {
          // It may be preempted for a level once its protection ends.
          if (!in_.pending.empty()) Recheck(r.started_at + config_.protected_quantum);
          continue;
        }
        int level = LasQueue(attained, config_.las_thresholds);
        highest_las_queue_ = std::max(highest_las_queue_, level);
        std::optional<int>& team_highest = highest[running_teams_.of[i]];
        team_highest = std::max(team_highest.value_or(0), level);
        // When it moves to a later queue, waiting jobs of an earlier one may preempt it.
        int64_t gpus = r.Total().gpus;
        for (Duration t : config_.las_thresholds) {
          if (t > attained && gpus > 0 && !in_.pending.empty()) {
            Recheck(in_.now + Duration(((t - attained).count() + gpus - 1) / gpus));
            break;
          }
        }
      }
      if (fair) {
        for (size_t t = 0; t < highest.size(); ++t) {
          if (highest[t]) highest_level_.emplace(std::string(running_teams_.names[t]), *highest[t]);
        }
      }
    }
    if (config_.policy == Policy::kSrtfOracle) {
      for (const RunningJob* job : running_) {
        const RunningJob& r = *job;
        if (!r.stopping)
          most_service_left_ = std::max(most_service_left_, OracleService(r, in_.now));
      }
    }
    if (fair) {
      // A waiting job is promoted when it has waited long enough: its order changes then.
      for (const auto& p : in_.pending) {
        Timestamp since = p.waiting_since ? *p.waiting_since : p.submitted_at;
        Recheck(PromotionTime(config_, since, p.attained, TotalOf(p.tasks).gpus));
      }
    }
    for (const auto& [team, priority] : lowest_priority_) {  // every team with running jobs
      any_team_borrows_ |= Entitled(team) > order_.TeamUsage(team).guaranteed_gpus;
    }
    while (auto i = order_.Next()) {
      Consider(*i);
      if (blocked_by_ && !residue_) {
        // Strict order, blocked: every job behind waits for the blocker, whatever its place.
        // (Decisions between passes read the waiting jobs in order: with them, all go in order.)
        for (size_t j : order_.Rest())
          Wait(in_.pending[j], in_.reasons ? blocked_text_ : std::string());
        break;
      }
    }
    Grow();
    if (residue_) Leave(*residue_);
    return std::move(plan_);
  }

 private:
  // The GPUs a team counts as holding for quota reclaim: what it holds, less what is already on
  // its way out, plus what its waiting jobs will get from that. Counting plain holdings instead,
  // every pass until the victims have stopped would reclaim again, from ever more jobs, and
  // teams pushed below their guarantee would take turns preempting each other.
  int64_t Entitled(const std::string& team) const {
    auto it = reclaim_delta_.find(team);
    return order_.TeamUsage(team).held.gpus + (it == reclaim_delta_.end() ? 0 : it->second);
  }

  // When a job started at `start` is expected to end: by its max_runtime (the oracles: by its
  // true run time), else the default run time, else never.
  std::optional<Timestamp> ExpectedEnd(Timestamp start, const PendingJob& job) const {
    if (IsOracle(config_.policy) && job.oracle_remaining) return start + *job.oracle_remaining;
    if (job.max_runtime) return start + *job.max_runtime;
    if (config_.default_runtime) return start + *config_.default_runtime;
    return std::nullopt;
  }

  // What decisions until the next pass need (incremental.h).
  void Leave(PassResidue& r) {
    r.config = config_;
    r.free = free_;
    r.unreserved = unreserved_;
    r.earliest_reservation = earliest_reservation_;
    r.held = std::move(held_);
    r.queue = std::move(queue_);
    r.zero_gpu_waiting = 0;
    for (const auto& w : r.queue) r.zero_gpu_waiting += w.gpus == 0;
    r.teams = order_.Teams();
    r.shapes = shapes_;
  }

  void Wait(const PendingJob& job, std::string reason, bool unschedulable = false,
            std::optional<Timestamp> reserved = std::nullopt) {
    if (residue_ && !unschedulable) {
      PassResidue::Waiting w;
      w.job_id = job.job_id;
      for (const auto& t : job.tasks) {
        w.gpus += t.resources.gpus;
        w.largest_task = std::max(w.largest_task, t.resources.gpus);
      }
      queue_.push_back(w);
    }
    if (!in_.reasons) reason.clear();
    plan_.waiting.push_back(PendingReason{job.job_id, std::move(reason), unschedulable, reserved});
  }

  // Why no node of the cluster as it stands could ever hold the job, if that is so.
  std::optional<std::string> Unschedulable(const PendingJob& job) const {
    if (in_.cluster.nodes.empty()) return "no nodes are ready";
    if (!job.constraints.empty()) {
      // Constrained jobs are few: look at the nodes themselves.
      std::vector<const NodeCapacity*> eligible;
      for (const auto& n : in_.cluster.nodes) {
        bool ok = job.constraints.gpu_model.empty() || n.gpu_model == job.constraints.gpu_model;
        for (const auto& [key, value] : job.constraints.labels) {
          auto it = n.labels.find(key);
          ok = ok && it != n.labels.end() && it->second == value;
        }
        if (ok) eligible.push_back(&n);
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
        bool fits = std::any_of(eligible.begin(), eligible.end(), [&](const NodeCapacity* n) {
          return t.resources.FitsIn(n->total);
        });
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
    }
    for (const auto& t : job.tasks) {
      const Resources& r = t.resources;
      // Nodes come in few shapes: checking those is checking every node.
      bool fits = std::any_of(shapes_.begin(), shapes_.end(),
                              [&](const Resources& shape) { return r.FitsIn(shape); });
      if (fits) continue;
      std::string what;
      if (r.gpus > largest_node_.gpus) {
        what = fmt::format("{} on one node, but the largest node has {}", Gpus(r.gpus),
                           Gpus(largest_node_.gpus));
      } else if (r.milli_cpus > largest_node_.milli_cpus) {
        what =
            fmt::format("{} CPUs on one node, but the largest node has {}",
                        FormatMilliCpus(r.milli_cpus), FormatMilliCpus(largest_node_.milli_cpus));
      } else if (r.memory_bytes > largest_node_.memory_bytes) {
        what = fmt::format("{} of memory on one node, but the largest node has {}",
                           FormatByteSizeApprox(r.memory_bytes),
                           FormatByteSizeApprox(largest_node_.memory_bytes));
      } else {
        what = fmt::format("{} on one node, and no node has all of it", r.ToString());
      }
      return fmt::format("unschedulable: task {}/{} needs {}", t.role, t.index, what);
    }
    Resources need = TotalOf(job.tasks);
    if (!need.FitsIn(cluster_total_)) {
      return fmt::format("unschedulable: needs {} in all, but the cluster has {}", need.ToString(),
                         cluster_total_.ToString());
    }
    return std::nullopt;
  }

  // "waiting for resources: ..." Formatting a line for each of 100,000 waiting jobs would cost
  // more than scheduling them: jobs of one shape share their text until capacity changes.
  const std::string& Busy(const PendingJob& job) {
    static const std::string kNoText;
    if (!in_.reasons) return kNoText;
    if (busy_texts_free_ != free_.free_gpus()) {
      busy_texts_.clear();
      busy_texts_free_ = free_.free_gpus();
    }
    Resources need = TotalOf(job.tasks);
    auto key = std::make_pair(need, job.tasks.size());
    auto it = busy_texts_.find(key);
    if (it != busy_texts_.end()) return it->second;
    std::string gang = job.tasks.size() > 1
                           ? fmt::format("{} tasks started together", job.tasks.size())
                           : std::string("1 task");
    const NodeCapacity* largest = free_.largest_free_node();
    return busy_texts_[key] = fmt::format(
               "waiting for resources: needs {} ({}); {} free, the largest free block is {} on {}",
               need.ToString(), gang, Gpus(free_.free_gpus()), Gpus(free_.largest_free_block()),
               largest ? largest->node_id : "-");
  }

  // Where the job may look for room: everything that is free, if it will be gone before the
  // first reservation begins; otherwise only what no reservation covers.
  // A job within its team's guarantee is not kept out by what is held for jobs beyond theirs:
  // guarantees come before borrowing, and otherwise a team below its guarantee would wait for a
  // borrower's reservation to start, or preempt to get round it.
  const CapacityIndex& RoomFor(const PendingJob& job) const {
    if (!earliest_reservation_) return free_;
    auto end = ExpectedEnd(in_.now, job);
    if (end && *end <= *earliest_reservation_) return free_;
    return within_guarantee_ ? guaranteed_ : unreserved_;
  }

  // Where the job can start now, in RoomFor(job). A job within its team's guarantee still
  // leaves alone what is held for its own team's jobs beyond the guarantee: the team's order
  // stands, and in a cluster of one team (whose guarantee is all of it) reservations keep
  // working.
  std::optional<std::vector<TaskPlacement>> PlaceNow(const PendingJob& job) {
    const CapacityIndex& room = RoomFor(job);
    bool own_holds =
        &room == &guaranteed_ && std::any_of(borrowing_holds_.begin(), borrowing_holds_.end(),
                                             [&](const TeamHold& h) { return h.team == job.team; });
    if (!own_holds) return room.Place(job.tasks, job.constraints);
    ScopedWhatIf what_if(guaranteed_);
    TakeOwnHolds(job);
    return guaranteed_.Place(job.tasks, job.constraints);
  }

  // In a what-if of guaranteed_: what is held for the job's own team beyond its guarantee.
  void TakeOwnHolds(const PendingJob& job) {
    for (const TeamHold& h : borrowing_holds_) {
      if (h.team == job.team) guaranteed_.Take(*h.tasks, h.placement, /*partial=*/true);
    }
  }

  void Start(size_t i, const PendingJob& job, std::vector<TaskPlacement> placement) {
    free_.Take(job.tasks, placement);
    unreserved_.Take(job.tasks, placement, /*partial=*/true);
    guaranteed_.Take(job.tasks, placement, /*partial=*/true);
    order_.Placed(i);
    if (claimants_.count(job.job_id)) reclaim_delta_[job.team] -= TotalOf(job.tasks).gpus;
    if (auto end = ExpectedEnd(in_.now, job)) {
      AddRelease(Release{*end, &job.tasks, &placements_.emplace_back(placement)});
    } else {
      unknown_ends_ = true;
    }
    plan_.placements.push_back(JobPlacement{job.job_id, std::move(placement)});
  }

  // Keeps the resources of `placement` that are free now for this job only.
  void Hold(const PendingJob& job, const std::vector<TaskPlacement>& placement) {
    unreserved_.Take(job.tasks, placement, /*partial=*/true);
    if (within_guarantee_) {
      guaranteed_.Take(job.tasks, placement, /*partial=*/true);
      guarantee_holds_.push_back(TeamHold{&job.tasks, placement, job.team});
    } else {
      borrowing_holds_.push_back(TeamHold{&job.tasks, placement, job.team});
    }
    if (residue_) {
      for (const auto& p : placement) {
        for (int g : p.gpus) held_.emplace(std::make_pair(p.node_id, g), job.job_id);
      }
    }
  }

  // Holds what a job that waits for stopping jobs will use. It starts as soon as they have
  // stopped: only jobs that end now may use what it holds (as for a reservation at once), in this
  // pass and in the decisions until the next (incremental.h). Otherwise a short job took the
  // GPUs it counted on, it chose new victims, and its first ones restarted: one 64-GPU gang of
  // the ITP trace preempted the same borrowed jobs 25 times.
  void Claim(const PendingJob& job, const std::vector<TaskPlacement>& placement) {
    Hold(job, placement);
    earliest_reservation_ = in_.now;
  }

  void Consider(size_t i) {
    const PendingJob& job = in_.pending[i];
    if (blocked_by_) return Wait(job, in_.reasons ? blocked_text_ : std::string());
    if (auto why = Unschedulable(job)) return Wait(job, *why, /*unschedulable=*/true);
    Resources need = TotalOf(job.tasks);
    const Usage& team = order_.TeamUsage(job.team);
    within_guarantee_ = Entitled(job.team) + need.gpus <= team.guaranteed_gpus;
    if (team.max_gpus && team.held.gpus + need.gpus > *team.max_gpus) {
      return Wait(
          job, fmt::format("team {} holds {} of the {} it may use at most; needs {} more", job.team,
                           team.held.gpus, Gpus(*team.max_gpus), Gpus(need.gpus)));
    }
    if (auto placement = PlaceNow(job)) {
      return Start(i, job, std::move(*placement));
    }
    if (WaitForStopping(job)) return;
    if (TryShrink(job)) return;
    if (TryPreemption(job)) return;
    if (TryMoving(job)) return;
    if (config_.backfill) {
      // Default policy: a job within its team's guarantee reserves beyond the limit, as long as
      // the team's reservations fit in the guarantee with it (and at most
      // kMaxGuaranteedReservations a pass): otherwise borrowers of teams that hold little take
      // every reservation, and the guaranteed job waits for nodes that smaller jobs keep filling.
      if (within_guarantee_ && GuaranteesFirst() &&
          guaranteed_reservation_count_ < kMaxGuaranteedReservations) {
        int64_t& reserved = guaranteed_reservations_[job.team];
        if (Entitled(job.team) + reserved + need.gpus <= team.guaranteed_gpus) {
          reserved += need.gpus;
          ++guaranteed_reservation_count_;
          return Reserve(job, /*counted=*/false);
        }
      }
      if (reservations_ < config_.reservations) return Reserve(job);
    }
    if (!config_.backfill) {
      // Every job behind it waits for it: one text for all of them.
      blocked_by_ = job.job_id;
      blocked_text_ = fmt::format("waiting behind job {} (strict {} order)", job.job_id,
                                  PolicyName(config_.policy));
    }
    Wait(job, Busy(job));
  }

  // The default policy's own guarantee rules (extra reservations and victim searches for jobs
  // within their team's guarantee). The other policies are references, kept as published: las
  // and the oracles are measured against the default, and with these rules las took 15% longer
  // to replay the ITP trace and preempted more.
  bool GuaranteesFirst() const { return config_.policy == Policy::kFairShare; }

  // Under least attained service, victims are the jobs that have had the most GPU time, and the
  // policy preempts them on purpose, again and again: there the least progress lost decides
  // alone (rotating would preempt jobs that have run longer since their restart: more lost work,
  // and more preemptions in all).
  // The same holds for srtf-oracle, which preempts the jobs with the most work left.
  bool RotateVictims() const {
    return config_.policy != Policy::kLeastAttainedService && config_.policy != Policy::kSrtfOracle;
  }

  // A running job that may be preempted, with what victim searches ask of it.
  struct Preemptible {
    PreemptionKey key;  // cheapest first
    const RunningJob* job = nullptr;
    int64_t gpus = 0;
    int queue = 0;  // its least-attained-service queue now
  };
  // A team's preemptible jobs, sorted cheapest first when a search first needs their order,
  // and its jobs short of the minimum run time.
  struct PreemptibleTeam {
    std::string name;
    std::vector<Preemptible> jobs;
    bool sorted = false;
    std::vector<const RunningJob*> young;
  };

  // Running jobs that may be preempted at all (not stopping, past their minimum run time), by
  // team, built on first need. A search looks only at the teams it may take from, each in its
  // own order, and merges what it finds.
  std::vector<PreemptibleTeam>& PreemptibleTeams() {
    if (preemptible_) return *preemptible_;
    preemptible_.emplace(running_teams_.names.size());
    for (size_t t = 0; t < preemptible_->size(); ++t) {
      (*preemptible_)[t].name = running_teams_.names[t];
    }
    for (size_t i = 0; i < running_.size(); ++i) {
      const RunningJob& r = *running_[i];
      if (r.stopping) continue;
      PreemptibleTeam& team = (*preemptible_)[running_teams_.of[i]];
      if (in_.now - r.started_at < config_.min_runtime_before_preemption) {
        team.young.push_back(&r);
        continue;
      }
      team.jobs.push_back(Preemptible{PreemptionCost(r, RotateVictims()), &r, r.Total().gpus,
                                      LasQueue(AttainedNow(r), config_.las_thresholds)});
    }
    std::erase_if(*preemptible_,
                  [](const PreemptibleTeam& t) { return t.jobs.empty() && t.young.empty(); });
    return *preemptible_;
  }

  static void Sort(PreemptibleTeam& team) {
    if (team.sorted) return;
    std::sort(team.jobs.begin(), team.jobs.end(),
              [](const Preemptible& a, const Preemptible& b) { return a.key < b.key; });
    team.sorted = true;
  }

  // Jobs (and elastic replicas) already on their way out may be enough for `job`: then it waits
  // for them, and nothing more is preempted or taken back for it.
  bool WaitForStopping(const PendingJob& job) {
    // Jobs on their way out count for this job if they stop for it (or for no one).
    Coming coming = coming_for_anyone_;
    if (auto it = coming_for_.find(job.job_id); it != coming_for_.end()) {
      coming.jobs += it->second.jobs;
      coming.gpus += it->second.gpus;
    }
    // Cheap tests first; a look costs a what-if and shares the search budget.
    if (coming.jobs == 0 || unreserved_.free_gpus() + coming.gpus < TotalOf(job.tasks).gpus ||
        preemption_searches_ >= kMaxPreemptionSearches) {
      return false;
    }
    std::vector<const RunningJob*> stopping;
    for (const RunningJob* r : stopping_) {
      if (!r->stopping_for || *r->stopping_for == job.job_id) stopping.push_back(r);
    }
    ++preemption_searches_;
    std::optional<std::vector<TaskPlacement>> placement;
    {
      ScopedWhatIf what_if(unreserved_);
      for (const RunningJob* s : stopping) unreserved_.Give(s->tasks, s->placement);
      placement = unreserved_.Place(job.tasks, job.constraints);
    }
    if (!placement) return false;
    Claim(job, *placement);
    Wait(job, fmt::format("waiting for {} stopping job{} to free their resources", stopping.size(),
                          stopping.size() == 1 ? "" : "s"));
    return true;
  }

  // Preempts for `job` if it is entitled to: returns true if the job is dealt with (victims
  // chosen, or waiting for earlier victims to stop).
  bool TryPreemption(const PendingJob& job) {
    Resources need = TotalOf(job.tasks);
    const Usage& team = order_.TeamUsage(job.team);
    bool within_guarantee = Entitled(job.team) + need.gpus <= team.guaranteed_gpus;
    auto lowest = lowest_priority_.find(job.team);
    bool by_priority = config_.priority_preemption && lowest != lowest_priority_.end() &&
                       lowest->second < job.priority;
    bool by_reclaim =
        config_.quota_reclaim && within_guarantee && any_team_borrows_ && !MayMove(job);
    bool las = config_.policy == Policy::kLeastAttainedService;
    bool fair = config_.policy == Policy::kFairShare;
    int job_queue = 0;
    if (las) job_queue = LasQueue(job.attained, config_.las_thresholds);
    if (fair) job_queue = RankOf(config_, job, in_.now).level;
    auto highest = highest_level_.find(job.team);
    bool by_las = (las && job_queue < highest_las_queue_) ||
                  (fair && highest != highest_level_.end() && job_queue < highest->second);
    if (fair && by_las) {
      Timestamp may_preempt = (job.waiting_since ? *job.waiting_since : job.submitted_at) +
                              config_.level_preemption_delay;
      if (in_.now < may_preempt) {
        by_las = false;
        Recheck(may_preempt);
      }
    }
    bool srtf = config_.policy == Policy::kSrtfOracle;
    Duration job_service = srtf ? OracleService(job) : Duration{};
    bool by_srtf = srtf && job_service < most_service_left_;
    if (!by_priority && !by_reclaim && !by_las && !by_srtf) return false;
    // A search costs a walk over running jobs and a copy of the capacity; a pass makes only so
    // many. The rest wait for the next pass, which the victims' stopping triggers anyway. Jobs
    // within their team's guarantee have searches of their own: borrowers that look for victims
    // of a later level, and find none, must not use up the searches that keep the guarantee
    // (default policy).
    int& searches = by_reclaim && GuaranteesFirst() ? guarantee_searches_ : preemption_searches_;
    if (searches >= kMaxPreemptionSearches) return false;
    ++searches;
    // Whom it may preempt: lower priority in its own team; borrowers, if it stays within its
    // guarantee.
    std::vector<const RunningJob*> candidates;
    std::vector<JobId> reclaimed;  // candidates taken back from a team that borrows
    int64_t candidate_gpus = 0;
    // `queue`: r's least-attained-service queue now.
    auto by_other_right = [&](const RunningJob& r, int queue, bool same_team) {
      bool lower = same_team && config_.priority_preemption && r.priority < job.priority;
      bool served_more =
          by_las && queue > job_queue && (las || MayPreemptForLevel(config_, r, job, in_.now));
      bool more_left = by_srtf && OracleService(r, in_.now) > job_service;
      return lower || served_more || more_left;
    };
    // The same test for every preemptible job, with what depends on its team alone worked out
    // once per team: whether it is the job's own, and how many GPUs it may still lose to
    // reclaim (Entitled less its guarantee, less what is already among the candidates: a team is
    // reclaimed from only while it still borrows, so at most its last victim takes it below its
    // guarantee). Jobs of other teams are taken by another right only under las (a level) and
    // srtf-oracle; a team that can give nothing is not looked at.
    // A job of another team (las: by level; srtf-oracle: by service left) is taken only while
    // its team keeps its guarantee without it: one taken below would reclaim from the team that
    // took it, which would take back, and so on (las: 7.6 preemptions per job on the ITP trace
    // with 15 teams before this rule; srtf-oracle never finished a replay).
    bool other_teams_by_right = (las && by_las) || by_srtf;
    std::vector<std::pair<PreemptionKey, const RunningJob*>> found;  // a run per team
    std::vector<size_t> runs;                                        // where each begins
    for (PreemptibleTeam& team : PreemptibleTeams()) {
      bool same_team = team.name == job.team;
      bool reclaim = !same_team && config_.quota_reclaim && within_guarantee;
      bool beyond_guarantee_only = !same_team && (las || by_srtf);
      int64_t room = reclaim || beyond_guarantee_only
                         ? Entitled(team.name) - order_.TeamUsage(team.name).guaranteed_gpus
                         : 0;
      if (!(reclaim && room > 0) && !same_team && !other_teams_by_right) continue;
      if (beyond_guarantee_only && !reclaim && room <= 0) continue;
      // Jobs it could preempt but for their minimum run time: look again when the first of them
      // reaches it, if nothing else happens before.
      for (const RunningJob* r : team.young) {
        if ((reclaim && room > 0) ||
            by_other_right(*r, LasQueue(AttainedNow(*r), config_.las_thresholds), same_team)) {
          Recheck(r->started_at + config_.min_runtime_before_preemption);
        }
      }
      Sort(team);
      size_t start = found.size();
      for (const Preemptible& p : team.jobs) {
        const RunningJob& r = *p.job;
        if (!victims_.empty() && victims_.count(r.job_id)) continue;
        if (reclaim && room > 0) {
          reclaimed.push_back(r.job_id);
          room -= p.gpus;
        } else if (!by_other_right(r, p.queue, same_team)) {
          continue;
        } else if (beyond_guarantee_only) {
          if (p.gpus > room) continue;
          room -= p.gpus;
        }
        found.emplace_back(p.key, &r);
        candidate_gpus += p.gpus;
      }
      if (found.size() > start) runs.push_back(start);
    }
    // Cheapest first over all teams (keys are unique: the job id decides last).
    auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
    for (size_t i = 1; i < runs.size(); ++i) {
      auto end =
          i + 1 < runs.size() ? found.begin() + static_cast<ptrdiff_t>(runs[i + 1]) : found.end();
      std::inplace_merge(found.begin(), found.begin() + static_cast<ptrdiff_t>(runs[i]), end,
                         by_key);
    }
    candidates.reserve(found.size());
    for (const auto& [key, r] : found) candidates.push_back(r);
    // Cheap test first: even all of them together would not free enough GPUs.
    if (candidates.empty() || candidate_gpus + unreserved_.free_gpus() < need.gpus) return false;
    // Where the job will start once its victims have stopped.
    std::optional<std::vector<const RunningJob*>> victims;
    std::optional<std::vector<TaskPlacement>> placement;
    {
      ScopedWhatIf what_if(unreserved_);
      victims = ChooseVictims(unreserved_, job.tasks, job.constraints, candidates);
      if (victims) placement = unreserved_.Place(job.tasks, job.constraints);
    }
    if (!victims) return false;
    std::vector<std::string> names;
    reclaim_delta_[job.team] += need.gpus;
    for (const RunningJob* v : *victims) {
      victims_.insert(v->job_id);
      reclaim_delta_[v->team] -= v->Total().gpus;
      std::string why;
      PreemptionCause cause = PreemptionCause::kLevel;
      if (v->team == job.team && v->priority < job.priority && config_.priority_preemption) {
        cause = PreemptionCause::kPriority;
        why = fmt::format("preempted by job {} of higher priority ({} > {})", job.job_id,
                          job.priority, v->priority);
      } else if (std::find(reclaimed.begin(), reclaimed.end(), v->job_id) != reclaimed.end()) {
        cause = PreemptionCause::kQuotaReclaim;
        why = ReclaimReason(job, *v);
      } else if (by_srtf) {
        cause = PreemptionCause::kOracle;
        why = fmt::format("preempted by job {}, which has less GPU time left (srtf-oracle)",
                          job.job_id);
      } else {
        why =
            fmt::format("preempted by job {}, which has had less GPU time (least attained service)",
                        job.job_id);
      }
      plan_.preemptions.push_back(Preemption{v->job_id, job.job_id, why, cause});
      names.push_back(std::to_string(v->job_id));
    }
    if (placement) Claim(job, *placement);
    Wait(job, fmt::format("preempting job{} {} to make room; starts once they have stopped",
                          names.size() == 1 ? "" : "s", fmt::join(names, ", ")));
    return true;
  }

  static Timestamp WaitingSince(const PendingJob& job) {
    return job.waiting_since ? *job.waiting_since : job.submitted_at;
  }

  // Whether `job` may move others (TryMoving): then its search for victims to reclaim is made
  // there, together with the jobs it may move, as one search.
  bool MayMove(const PendingJob& job) const {
    return GuaranteesFirst() && within_guarantee_ && config_.move_after &&
           TotalOf(job.tasks).gpus >= 2 && in_.now >= WaitingSince(job) + *config_.move_after;
  }

  static std::string ReclaimReason(const PendingJob& job, const RunningJob& victim) {
    return fmt::format(
        "preempted by job {}: team {} reclaims its guaranteed GPUs from team {}, which borrows "
        "beyond its own",
        job.job_id, job.team, victim.team);
  }

  // What a job that may move others may preempt, cheapest first: what borrowers hold beyond
  // their guarantee (reclaim, as in TryPreemption), then jobs smaller than it of teams that do
  // not borrow, which restart elsewhere without costing their team its GPUs.
  struct MoveCandidates {
    std::vector<const RunningJob*> jobs;
    std::vector<JobId> reclaimed;  // those of `jobs` taken back from borrowers
    int64_t reclaimed_gpus = 0;
    bool Reclaimed(const RunningJob* r) const {
      return std::find(reclaimed.begin(), reclaimed.end(), r->job_id) != reclaimed.end();
    }
  };
  MoveCandidates FindMoveCandidates(const PendingJob& job, int64_t gpus) {
    // moved?, keeps part of a node?, cost, job
    std::vector<std::tuple<bool, bool, PreemptionKey, const RunningJob*>> found;
    MoveCandidates out;
    std::vector<PreemptibleTeam>& teams = PreemptibleTeams();
    auto room_of = [&](const PreemptibleTeam& team) {
      int64_t beyond = Entitled(team.name) - order_.TeamUsage(team.name).guaranteed_gpus;
      return std::pair{beyond, team.name != job.team && config_.quota_reclaim ? beyond : 0};
    };
    // Borrowers' jobs that leave their nodes empty when taken back go first: moved jobs as big
    // as a node have nowhere to go in a full cluster, so a gang of whole nodes gets them from
    // reclaim or not at all (docs/scheduler.md, "Moving jobs"). What each node keeps: what jobs
    // that may not be taken back hold there (other teams', young ones, stopping ones).
    std::unordered_map<std::string_view, int64_t> kept;
    for (const auto& n : in_.cluster.nodes) kept[n.node_id] = n.total.gpus - n.free.gpus;
    for (const PreemptibleTeam& team : teams) {
      if (room_of(team).second <= 0) continue;
      for (const Preemptible& p : team.jobs) {
        for (size_t t = 0; t < p.job->placement.size(); ++t) {
          kept[p.job->placement[t].node_id] -= p.job->tasks[t].resources.gpus;
        }
      }
    }
    // A node the snapshot lacks (not ready) is not one a gang could be placed on: it counts as
    // kept.
    auto keeps_part = [&](const RunningJob& r) {
      return std::any_of(r.placement.begin(), r.placement.end(), [&](const TaskPlacement& p) {
        auto it = kept.find(p.node_id);
        return it == kept.end() || it->second > 0;
      });
    };
    for (PreemptibleTeam& team : teams) {
      auto [beyond, room] = room_of(team);  // beyond > 0: the team borrows
      if (room <= 0 && beyond > 0) continue;
      for (const RunningJob* r : team.young) {
        if (room > 0 || r->Total().gpus < gpus) {
          Recheck(r->started_at + config_.min_runtime_before_preemption);
        }
      }
      Sort(team);
      std::vector<const Preemptible*> in_order;
      in_order.reserve(team.jobs.size());
      for (const Preemptible& p : team.jobs) in_order.push_back(&p);
      if (room > 0) {
        std::stable_partition(in_order.begin(), in_order.end(),
                              [&](const Preemptible* p) { return !keeps_part(*p->job); });
      }
      for (const Preemptible* p : in_order) {
        if (!victims_.empty() && victims_.count(p->job->job_id)) continue;
        if (room > 0) {
          out.reclaimed.push_back(p->job->job_id);
          out.reclaimed_gpus += p->gpus;
          room -= p->gpus;
          found.emplace_back(false, keeps_part(*p->job), p->key, p->job);
        } else if (beyond <= 0 && p->gpus < gpus) {
          found.emplace_back(true, false, p->key, p->job);
        }
      }
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
    });
    out.jobs.reserve(found.size());
    for (const auto& f : found) out.jobs.push_back(std::get<3>(f));
    return out;
  }

  // In a what-if of free_ (victims given back, `job` placed): whether every moved job among
  // `victims` has room elsewhere. Free GPUs count even where other teams' reservations hold
  // them (a move serves a guarantee now, a reservation later), but not what is held for the
  // job's own team: its order stands, as in PlaceNow. Where no room is, more borrowers among
  // `candidates` give theirs back, and join `victims`.
  bool RoomElsewhere(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                     const MoveCandidates& candidates, std::vector<const RunningJob*>& victims) {
    ScopedWhatIf what_if(free_);
    for (const RunningJob* v : victims) free_.Give(v->tasks, v->placement);
    free_.Take(job.tasks, placement, /*partial=*/true);
    for (const auto* holds : {&guarantee_holds_, &borrowing_holds_}) {
      for (const TeamHold& h : *holds) {
        if (h.team == job.team) free_.Take(*h.tasks, h.placement, /*partial=*/true);
      }
    }
    std::vector<const RunningJob*> spare;  // borrowers not yet among the victims
    for (const RunningJob* c : candidates.jobs) {
      if (candidates.Reclaimed(c) && std::find(victims.begin(), victims.end(), c) == victims.end())
        spare.push_back(c);
    }
    std::vector<const RunningJob*> moved;
    for (const RunningJob* v : victims) {
      if (!candidates.Reclaimed(v)) moved.push_back(v);
    }
    for (const RunningJob* v : moved) {
      auto room = free_.Place(v->tasks, v->constraints);
      if (!room) {
        auto more = ChooseVictims(free_, v->tasks, v->constraints, spare);
        if (!more) return false;
        room = free_.Place(v->tasks, v->constraints);
        if (!room) return false;
        for (const RunningJob* m : *more) {
          victims.push_back(m);
          std::erase(spare, m);
        }
      }
      free_.Take(v->tasks, *room);
    }
    return true;
  }

  // Default policy: a job within its team's guarantee that no node has room for, although the
  // cluster's free GPUs (and what borrowers hold) would do, moves smaller jobs out of the way:
  // they stop and restart where GPUs are free. Without it such a job waits for nodes to drain,
  // for hours in a busy cluster of small jobs (docs/scheduler.md, "Moving jobs").
  bool TryMoving(const PendingJob& job) {
    if (!MayMove(job)) {
      if (GuaranteesFirst() && within_guarantee_ && config_.move_after) {
        Recheck(WaitingSince(job) + *config_.move_after);
      }
      return false;
    }
    // Finding the candidates walks the running jobs: it counts as a search even when it finds
    // too few (otherwise every waiting job within a guarantee walked them, every pass).
    if (guarantee_searches_ >= kMaxPreemptionSearches) return false;
    ++guarantee_searches_;
    Resources need = TotalOf(job.tasks);
    MoveCandidates candidates = FindMoveCandidates(job, need.gpus);
    if (candidates.jobs.empty() ||
        guaranteed_.free_gpus() + candidates.reclaimed_gpus < need.gpus) {
      return false;
    }
    std::optional<std::vector<const RunningJob*>> victims;
    std::optional<std::vector<TaskPlacement>> placement;
    {
      ScopedWhatIf what_if(guaranteed_);
      TakeOwnHolds(job);  // as PlaceNow: the team's own order stands
      victims = ChooseVictims(guaranteed_, job.tasks, job.constraints, candidates.jobs);
      // No victims: the job fits but for its own team's reservations, which keep it out.
      if (victims && !victims->empty()) placement = guaranteed_.Place(job.tasks, job.constraints);
      if (placement && !RoomElsewhere(job, *placement, candidates, *victims)) placement.reset();
    }
    if (!placement) return false;
    std::vector<std::string> names;
    reclaim_delta_[job.team] += need.gpus;
    for (const RunningJob* v : *victims) {
      victims_.insert(v->job_id);
      if (candidates.Reclaimed(v)) {
        reclaim_delta_[v->team] -= v->Total().gpus;
        plan_.preemptions.push_back(Preemption{v->job_id, job.job_id, ReclaimReason(job, *v),
                                               PreemptionCause::kQuotaReclaim});
      } else {
        plan_.preemptions.push_back(Preemption{
            v->job_id, job.job_id,
            fmt::format("moved for job {} of team {}, within its guarantee, which needs {} "
                        "where the free ones are scattered; there is room for it elsewhere",
                        job.job_id, job.team, Gpus(need.gpus)),
            PreemptionCause::kMove});
      }
      names.push_back(std::to_string(v->job_id));
    }
    Claim(job, *placement);
    Wait(job, fmt::format("moving job{} {} to make room; starts once they have stopped",
                          names.size() == 1 ? "" : "s", fmt::join(names, ", ")));
    return true;
  }

  // Surplus replicas of elastic jobs (above their minimum, past the minimum run time), one
  // unit each, built on first need. They go before any job is preempted.
  const std::vector<RunningJob>& ElasticSurplus() {
    if (surplus_) return *surplus_;
    surplus_.emplace();
    for (const RunningJob* job : running_) {
      const RunningJob& r = *job;
      if (r.stopping) continue;
      for (const auto& group : r.elastic) {
        std::vector<size_t> replicas;
        for (size_t t = 0; t < r.tasks.size(); ++t) {
          if (r.tasks[t].role == group.role) replicas.push_back(t);
        }
        if (static_cast<int>(replicas.size()) <= group.min) continue;
        std::sort(replicas.begin(), replicas.end(),
                  [&](size_t a, size_t b) { return r.tasks[a].index > r.tasks[b].index; });
        replicas.resize(replicas.size() - static_cast<size_t>(group.min));  // highest first
        for (size_t t : replicas) {
          Timestamp started = t < r.task_started.size() ? r.task_started[t] : r.started_at;
          if (in_.now - started < config_.min_runtime_before_preemption) continue;
          RunningJob unit;
          unit.job_id = r.job_id;
          unit.team = r.team;
          unit.user = r.user;
          unit.priority = r.priority;
          unit.started_at = started;
          unit.tasks = {r.tasks[t]};
          unit.placement = {r.placement[t]};
          surplus_->push_back(std::move(unit));
        }
      }
    }
    return *surplus_;
  }

  // Takes surplus replicas back from elastic jobs if that lets `job` fit.
  bool TryShrink(const PendingJob& job) {
    if (preemption_searches_ >= kMaxPreemptionSearches) return false;
    std::vector<const RunningJob*> units;
    for (const RunningJob& u : ElasticSurplus()) {
      if (!shrunk_.count({u.job_id, u.tasks[0].role, u.tasks[0].index})) units.push_back(&u);
    }
    if (units.empty()) return false;
    ++preemption_searches_;
    // Highest index first (the replicas added last; start times of replicas added together
    // differ by how fast their agent started them, so they do not decide), lowest priority first.
    std::stable_sort(units.begin(), units.end(), [](const RunningJob* a, const RunningJob* b) {
      return std::make_tuple(a->priority, -a->tasks[0].index, -ToMicros(a->started_at),
                             -a->job_id) <
             std::make_tuple(b->priority, -b->tasks[0].index, -ToMicros(b->started_at), -b->job_id);
    });
    std::optional<std::vector<const RunningJob*>> chosen;
    std::optional<std::vector<TaskPlacement>> placement;
    {
      ScopedWhatIf what_if(unreserved_);
      chosen = ChooseVictims(unreserved_, job.tasks, job.constraints, units);
      if (chosen) placement = unreserved_.Place(job.tasks, job.constraints);
    }
    if (!chosen) return false;
    std::map<std::pair<JobId, std::string>, std::vector<int>> by_group;
    for (const RunningJob* u : *chosen) {
      shrunk_.insert({u->job_id, u->tasks[0].role, u->tasks[0].index});
      by_group[{u->job_id, u->tasks[0].role}].push_back(u->tasks[0].index);
    }
    std::vector<std::string> names;
    for (auto& [key, indices] : by_group) {
      std::sort(indices.rbegin(), indices.rend());
      plan_.shrinks.push_back(
          Shrink{key.first, key.second, indices, job.job_id,
                 fmt::format("{} replica{} released to make room for job {}", indices.size(),
                             indices.size() == 1 ? "" : "s", job.job_id)});
      shrinking_jobs_.insert(key.first);
      names.push_back(fmt::format("{} of job {}", indices.size(), key.first));
    }
    if (placement) Claim(job, *placement);
    Wait(job, fmt::format("taking back elastic replicas ({}); starts once they have stopped",
                          fmt::join(names, ", ")));
    return true;
  }

  // Elastic jobs grow into GPUs that nobody else wants now (not free for a waiting job, not
  // held for a reservation), one replica at a time, up to their maximum and their team's limit.
  void Grow() {
    for (const RunningJob* job : running_) {
      const RunningJob& r = *job;
      if (r.stopping || r.elastic.empty() || shrinking_jobs_.count(r.job_id)) continue;
      Growth growth;
      growth.job_id = r.job_id;
      for (const auto& group : r.elastic) {
        int current = static_cast<int>(
            std::count_if(r.tasks.begin(), r.tasks.end(),
                          [&](const TaskRequest& t) { return t.role == group.role; }));
        int next_index = group.next_index;
        for (int k = current; k < group.max; ++k) {
          const Usage& team = order_.TeamUsage(r.team);
          if (team.max_gpus && team.held.gpus + group.per_replica.gpus > *team.max_gpus) break;
          std::vector<TaskRequest> one = {TaskRequest{group.role, next_index, group.per_replica}};
          auto placement = unreserved_.Place(one, r.constraints);
          if (!placement) break;
          free_.Take(one, *placement);
          unreserved_.Take(one, *placement);
          order_.Grew(r.team, group.per_replica);
          growth.tasks.push_back(one[0]);
          growth.placement.push_back((*placement)[0]);
          ++next_index;
        }
      }
      if (!growth.tasks.empty()) plan_.growths.push_back(std::move(growth));
    }
  }

  // Releases are kept in time order (ties in the order they were added) from the first
  // reservation of the pass on; before that, in the order they were added.
  void AddRelease(const Release& r) {
    if (!releases_sorted_) return releases_.push_back(r);
    auto at = std::upper_bound(releases_.begin(), releases_.end(), r,
                               [](const Release& a, const Release& b) { return a.at < b.at; });
    releases_.insert(at, r);
  }
  // The indices of a release's nodes, found the first time a reservation walks past it.
  const int* NodesOf(Release& r) {
    if (r.nodes == Release::kUnknown) FindNodes(r);
    return release_nodes_.data() + r.nodes;
  }
  void FindNodes(Release& r) {
    r.nodes = release_nodes_.size();
    for (const auto& p : *r.placement) release_nodes_.push_back(unreserved_.Find(p.node_id));
  }

  // Whether an earlier reservation of this pass will use the GPU on node `node` (an index).
  bool Reserved(int node, int gpu) const {
    if (node < 0 || reserved_gpus_.empty()) return false;
    const std::vector<int>& gpus = reserved_gpus_[static_cast<size_t>(node)];
    return std::find(gpus.begin(), gpus.end(), gpu) != gpus.end();
  }
  bool AnyReserved(const Release& r) const {
    if (reserved_gpus_.empty()) return false;
    for (size_t t = 0; t < r.placement->size(); ++t) {
      for (int g : (*r.placement)[t].gpus) {
        if (Reserved(release_nodes_[r.nodes + t], g)) return true;
      }
    }
    return false;
  }

  // The earliest time the job fits, from the known ends of what runs; it holds those resources
  // from now on, so that nothing that would still run then can take them.
  // `counted`: the reservation counts against SchedulerConfig::reservations.
  void Reserve(const PendingJob& job, bool counted = true) {
    if (counted) ++reservations_;
    if (!releases_sorted_) {
      for (size_t i = 0; i < releases_.size(); ++i) releases_[i].seq = i;
      std::sort(releases_.begin(), releases_.end(), [](const Release& a, const Release& b) {
        return std::tie(a.at, a.seq) < std::tie(b.at, b.seq);
      });
      releases_sorted_ = true;
    }
    std::optional<std::vector<TaskPlacement>> placement;
    Timestamp at;
    {
      // What is free once the releases up to each time have come back.
      ScopedWhatIf what_if(unreserved_);
      for (size_t k = 0; k < releases_.size() && !placement; ++k) {
        Release& r = releases_[k];
        const int* nodes = NodesOf(r);
        if (r.reserved || !AnyReserved(r)) {
          unreserved_.Give(*r.tasks, *r.placement, nodes, /*partial=*/true);
        } else {
          // GPUs that earlier reservations will use go to them, not to this job.
          std::vector<TaskPlacement> rest = *r.placement;
          for (size_t t = 0; t < rest.size(); ++t) {
            std::erase_if(rest[t].gpus, [&](int g) { return Reserved(nodes[t], g); });
          }
          unreserved_.Give(*r.tasks, rest, nodes, /*partial=*/true);
        }
        if (k + 1 < releases_.size() && releases_[k + 1].at == r.at) continue;
        placement = unreserved_.Place(job.tasks, job.constraints);
        at = r.at;
      }
    }
    if (placement) {
      Hold(job, *placement);
      if (!earliest_reservation_ || at < *earliest_reservation_) earliest_reservation_ = at;
      // What it will use is not there for jobs reserved after it until it ends.
      reserved_gpus_.resize(unreserved_.nodes().size());
      for (const auto& p : *placement) {
        std::vector<int>& reserved =
            reserved_gpus_[static_cast<size_t>(unreserved_.Find(p.node_id))];
        reserved.insert(reserved.end(), p.gpus.begin(), p.gpus.end());
      }
      if (auto end = ExpectedEnd(at, job)) {
        AddRelease(Release{*end, &job.tasks, &placements_.emplace_back(*placement),
                           /*reserved=*/true});
      }
      return Wait(
          job,
          fmt::format("{}; reserved to start by {} at the latest", Busy(job), FormatTimestamp(at)),
          false, at);
    }
    // What runs has known ends, and earlier reservations take what it would need (or one job
    // already drains nodes): it waits its turn behind them, holding nothing.
    if (!unknown_ends_ || drained_) return Wait(job, Busy(job));
    drained_ = true;
    // Some of what runs has no known end. Hold the nodes closest to fitting anyway, so that
    // the job cannot starve behind a stream of smaller ones.
    std::vector<NodeCapacity> drained = free_.nodes();
    std::stable_sort(drained.begin(), drained.end(),
                     [](const auto& a, const auto& b) { return a.free.gpus > b.free.gpus; });
    for (auto& n : drained) {
      n.free = n.total;
      n.free_gpus.clear();
      for (int g = 0; g < n.total.gpus; ++g) n.free_gpus.push_back(g);
    }
    if (auto placement = CapacityIndex(std::move(drained)).Place(job.tasks, job.constraints)) {
      Hold(job, *placement);
      std::set<std::string> nodes;
      for (const auto& p : *placement) nodes.insert(p.node_id);
      earliest_reservation_ = in_.now;  // its end is unknown: only jobs that end now may use it
      return Wait(job, fmt::format("{}; holding {} for it (no start estimate: jobs there have no "
                                   "max_runtime)",
                                   Busy(job), fmt::join(nodes, ", ")));
    }
    Wait(job, Busy(job));
  }

  PassResidue* residue_;
  std::map<std::pair<std::string, int>, JobId> held_;
  std::vector<PassResidue::Waiting> queue_;
  const SchedulerConfig& config_;
  const SchedulingInput& in_;
  std::vector<const RunningJob*> running_;  // every job that holds resources (RunningJobs())
  RunningTeams running_teams_;              // and their teams
  JobOrder order_;
  CapacityIndex& free_;        // what is free now
  CapacityIndex& unreserved_;  // free now and not held for a reservation or a preemption
  // Free now and not held for a job that is within its team's guarantee (RoomFor).
  CapacityIndex& guaranteed_;
  bool within_guarantee_ = false;  // of the job being considered
  // What is held for jobs beyond their team's guarantee, by team (few: reservations and
  // preemptions).
  struct TeamHold {
    const std::vector<TaskRequest>* tasks;
    std::vector<TaskPlacement> placement;
    std::string team;
  };
  std::vector<TeamHold> borrowing_holds_;
  std::vector<TeamHold> guarantee_holds_;  // the same for jobs within their guarantee
  std::optional<Timestamp> earliest_reservation_;
  int reservations_ = 0;
  // By team: GPUs reserved for its jobs within its guarantee (beyond the count of reservations).
  std::map<std::string, int64_t> guaranteed_reservations_;
  int guaranteed_reservation_count_ = 0;
  std::optional<JobId> blocked_by_;
  std::string blocked_text_;  // the reason of the jobs behind it
  std::vector<Release> releases_;
  bool releases_sorted_ = false;
  std::vector<int> release_nodes_;  // node indices of the releases' tasks (Release::nodes)
  std::deque<std::vector<TaskPlacement>> placements_;  // of releases this pass adds
  // GPUs of this pass's reservations, by node index (empty until the first).
  std::vector<std::vector<int>> reserved_gpus_;
  bool unknown_ends_ = false;  // something runs with no known end
  bool drained_ = false;       // a job holds the nodes closest to fitting it
  std::set<JobId> victims_;
  std::map<std::string, int64_t> reclaim_delta_;  // by team: see Entitled()
  std::set<JobId> claimants_;                     // waiting jobs that running ones stop for
  Resources largest_node_;
  Resources cluster_total_;
  std::vector<Resources> shapes_;  // the distinct capacities of the nodes
  // Reason texts by job shape, valid while the free capacity they quote does not change.
  std::map<std::pair<Resources, size_t>, std::string> busy_texts_;
  int64_t busy_texts_free_ = -1;
  int preemption_searches_ = 0;
  int guarantee_searches_ = 0;  // by jobs within their team's guarantee (TryPreemption)
  std::vector<const RunningJob*> stopping_;
  // What stopping jobs will give back: to anyone, and to the job they stop for.
  struct Coming {
    size_t jobs = 0;
    int64_t gpus = 0;
  };
  Coming coming_for_anyone_;
  std::map<JobId, Coming> coming_for_;
  std::optional<std::vector<RunningJob>> surplus_;
  std::set<std::tuple<JobId, std::string, int>> shrunk_;  // (job, role, index) taken this pass
  std::set<JobId> shrinking_jobs_;
  std::map<std::string, int> lowest_priority_;  // of running jobs, by team
  bool any_team_borrows_ = false;               // at the start of the pass
  int highest_las_queue_ = 0;                   // of running jobs (policy las)
  std::map<std::string, int> highest_level_;    // of unprotected running jobs by team (default)
  Duration most_service_left_{};                // of running jobs (policy srtf-oracle)
  std::optional<std::vector<PreemptibleTeam>> preemptible_;  // see PreemptibleTeams()
  Plan plan_;
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
