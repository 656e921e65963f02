// The scheduling loop: the cluster core kept in step with the jobs, full passes (posted to the
// event loop after whatever changed the cluster, so that many changes cost one pass) and the
// decisions between them through the dispatcher, and when time alone calls for a pass (restart
// backoffs, a minimum run time over). What a decision means for a job (its tasks, ports, the
// store) is the DecisionTaker's: the loop decides and takes capacity, the taker makes it real.
// The home of what later issues add to scheduling (a sweep's trials offered as they free up).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/histogram.h"
#include "common/time.h"
#include "dispatch/dispatcher.h"
#include "master/dataset_staging.h"
#include "master/event_loop.h"
#include "master/job_book.h"
#include "master/journal.h"
#include "master/node_registry.h"
#include "model/job.h"
#include "model/plan.h"
#include "scheduler/scheduler.h"

namespace cohort::master {

// Makes the parts of a plan that the cluster core has accepted (and taken) real.
class DecisionTaker {
 public:
  virtual ~DecisionTaker() = default;
  // Starts an attempt of the job on the placement; an error: it did not start.
  virtual Status Start(Job& job, const JobPlacement& placement) = 0;
  virtual void Preempt(const Preemption& preemption) = 0;
  // False if the growth could not be carried out as the core has it (a full pass must follow).
  virtual bool Grow(const Growth& growth) = 0;
  virtual void Shrink(const cohort::Shrink& shrink) = 0;
  // The node has datasets to fetch ahead of a job (DatasetStaging): its agent should hear now.
  virtual void TellNode(const std::string& /*node_id*/) {}
};

class SchedulingLoop {
 public:
  // `loop` must outlive it. With at least `incremental_above` jobs waiting, an arrival or a
  // completion is decided at once against what the last full pass left.
  SchedulingLoop(JobBook& jobs, Journal& journal, const Clock& clock, EventLoop& loop,
                 std::unique_ptr<scheduler::Scheduler> scheduler, size_t incremental_above);
  ~SchedulingLoop();
  SchedulingLoop(const SchedulingLoop&) = delete;
  SchedulingLoop& operator=(const SchedulingLoop&) = delete;

  void SetDecisionTaker(DecisionTaker* taker) { taker_ = taker; }
  // Whether jobs are held back while nodes fetch their datasets (MasterConfig::stage_datasets).
  void SetDatasetStaging(bool on) { staging_.set_enabled(on); }

  // A pass soon, once (many requests before it runs cost one pass).
  void RequestSchedule();
  // A full pass soon (on the next tick) when decisions run between passes; at once otherwise.
  void Reschedule();
  // The residue no longer matches the cluster (a node or a team changed): a full pass now.
  void InvalidateResidue();
  // One full pass now: the scheduler's decision, carried out in one batch of writes.
  void Schedule();
  // A job was submitted: decided at once between passes, or a pass is requested.
  void Arrive(Job& job);
  // Resources of ended tasks went back: waiting jobs that now fit start (or a pass is requested).
  void Released(const std::vector<std::pair<JobId, Task>>& tasks);
  // Backoffs that are over, a recheck the last pass asked for, the full pass put off.
  void OnTick(Timestamp now);

  // Jobs in restart backoff are not offered to the scheduler until it is over; NoteBackoff
  // makes the tick look again when it ends.
  static bool BackingOff(const Job& job, Timestamp now) {
    return job.not_before && *job.not_before > now;
  }
  void NoteBackoff(const Job& job);
  // The job is kept off some nodes for a while (Job::excluded_nodes): the tick offers it to the
  // scheduler again when that ends.
  void NoteExclusion(const Job& job);

  // The node as the cluster core holds it: its whole capacity and GPUs, schedulable or not.
  void PutNode(const NodeRegistry::Entry& entry);
  // Gives the cluster core what an active job holds, from its durable record.
  void RestoreHolding(const Job& job);
  // What a node's agent reported of its dataset cache (AgentReport::cached_datasets,
  // prefetch_failures): jobs held back for it may start.
  void NoteDatasets(const std::string& node_id,
                    const std::optional<std::vector<std::string>>& cached,
                    const std::map<std::string, std::string>& failures);
  // What a node's agent reported of its image cache (AgentReport::cached_images): placement
  // prefers the nodes that hold a job's images (docs/runtimes.md, "The image cache").
  void NoteImages(const std::string& node_id,
                  const std::optional<std::vector<std::string>>& cached);
  // The nodes whose image caches hold every image the job's tasks run in; none for a job that
  // runs none.
  std::set<std::string> NodesHoldingImages(const Job& job) const;
  // The node was removed: what its caches held is forgotten.
  void ForgetNodeDatasets(const std::string& node_id) {
    staging_.ForgetNode(node_id);
    node_images_.erase(node_id);
  }
  // Which nodes hold which datasets, and the jobs held back while theirs are fetched.
  const DatasetStaging& staging() const { return staging_; }
  // Everything that places: nodes, free capacity, jobs that hold resources, claims.
  cluster::ClusterState& cluster() { return cluster_; }
  const cluster::ClusterState& cluster() const { return cluster_; }

  // How the scheduler sees a pending job.
  PendingJob PendingOf(const Job& job) const;
  // Why the job waits for other jobs rather than for resources: a dependency that has not
  // ended the way it says, or its array's max_parallel reached (`offered` more of the array's
  // jobs are about to be placed); none if it does not.
  std::optional<std::string> WaitsForOthers(const Job& job, int offered = 0) const;
  // Why the last pass left a pending job waiting (null if it did not); forgotten as it leaves.
  const PendingReason* ReasonFor(JobId id) const;
  void ForgetReason(JobId id) { last_reasons_.erase(id); }
  const scheduler::SchedulerConfig& config() const { return dispatcher_.config(); }
  // True while arrivals and completions are decided between full passes.
  bool Incremental() const { return dispatcher_.Incremental(jobs_.pending().size()); }

  // How long each full pass held the event loop, by the master's clock: the scheduler's
  // decision and making it real. Decisions between passes are not counted.
  const Histogram& passes() const { return passes_; }
  // Preemptions carried out since the master started, by the rule that made them.
  const std::map<PreemptionCause, uint64_t>& preemptions_by_cause() const {
    return preemptions_by_cause_;
  }

 private:
  // Makes a placement the cluster core has accepted real; if that fails, gives the resources
  // back and leaves the next full pass to the tick.
  bool StartDecided(Job& job, const std::vector<TaskPlacement>& placement);
  // Holds the job back, giving its resources back, if the placement's nodes lack its datasets
  // and it was not held back yet this attempt (DatasetStaging); true if it did.
  bool HoldBackForDatasets(Job& job, const std::vector<TaskPlacement>& placement);
  // Lets the held-back jobs whose fetch is over be placed again.
  void SettleStaging();
  // Whether the scheduler may place the job now.
  bool Placeable(const Job& job, Timestamp now) const {
    return !BackingOff(job, now) && !staging_.HeldBack(job.id) && !WaitsForOthers(job);
  }

  JobBook& jobs_;
  Journal& journal_;
  const Clock& clock_;
  EventLoop& loop_;
  DecisionTaker* taker_ = nullptr;
  // Callbacks left on the loop hold this weakly: a pass posted before the loop is gone does
  // nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  cluster::ClusterState cluster_;
  DatasetStaging staging_{jobs_};
  std::map<std::string, std::set<std::string>> node_images_;  // node -> the images it holds
  dispatch::Dispatcher dispatcher_;
  bool schedule_posted_ = false;
  std::map<JobId, PendingReason> last_reasons_;  // from the last pass, for pending jobs
  std::optional<Timestamp> recheck_at_;          // the last pass asked to run again then
  // The earliest end of a pending job's restart backoff or of its exclusion from a node.
  std::optional<Timestamp> wake_at_;
  void WakeAt(Timestamp t) {
    if (!wake_at_ || t < *wake_at_) wake_at_ = t;
  }
  Histogram passes_;
  std::map<PreemptionCause, uint64_t> preemptions_by_cause_;
};

}  // namespace cohort::master
