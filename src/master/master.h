// The master's state machine: jobs, nodes, scheduling passes, and the reconciliation with agents.
//
// Threading: not thread-safe. Every method runs on the master's one event-loop thread (the HTTP
// server's io_context), which is why none of them blocks except on the local state store.
// Durability: a change is written to the StateStore before the method returns, so whatever a
// caller is told has happened survives a restart. A write that fails before memory changes is
// the caller's error and changes nothing; one that fails after memory has changed stops the
// master (MasterConfig::fail_stop), so that memory and store never disagree silently
// (docs/architecture.md, "Durability").
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/histogram.h"
#include "common/status.h"
#include "common/time.h"
#include "dispatch/dispatcher.h"
#include "framework/task_environment.h"
#include "master/accounts.h"
#include "master/advisor.h"
#include "master/event_loop.h"
#include "master/job_rank.h"
#include "master/log_store.h"
#include "master/metric_ingest.h"
#include "master/node_registry.h"
#include "master/resource_history.h"
#include "master/secrets.h"
#include "master/usage_reader.h"
#include "master/usage_report.h"
#include "model/agent_protocol.h"
#include "model/job.h"
#include "model/node.h"
#include "scheduler/estimate_cache.h"
#include "scheduler/runtime_history.h"
#include "scheduler/scheduler.h"
#include "state/state_store.h"

namespace cohort::master {

struct MasterConfig {
  std::string data_dir;      // the state database and the task logs live here
  std::string storage_root;  // job checkpoints and outputs; empty: <data_dir>/storage
  // No sync for this long: the node is LOST, its tasks too, and their gangs are requeued
  // (docs/reliability.md). Agents sync at least every 5 s.
  Duration node_timeout = std::chrono::seconds(10);
  // Jobs of a team nobody created go to this team; empty: they are refused.
  std::string unknown_team_fallback;
  // With at least this many jobs waiting, an arrival or a completion is decided at once against
  // what the last full pass left (scheduler/incremental.h), and the next full pass runs on the
  // next tick; with fewer, every change runs a full pass at once.
  size_t incremental_above = 1000;
  // Called when a write fails after memory has changed; it must not return into the master's
  // work (a test's handler may, and then checks what the store holds). Unset: log and exit 70.
  std::function<void(const Status&)> fail_stop;
  Duration tick_interval = std::chrono::milliseconds(500);
  int64_t log_limit = kDefaultLogLimit;  // stored bytes of each task's log (master/log_store.h)
  // Audit entries older than this are pruned, from the tick, at most once an hour.
  Duration audit_retention = std::chrono::hours(24 * 90);
  // What the advisor calls a starved input pipeline and idle GPUs (master/advisor.h); with
  // `reclaim_idle_gpus`, a job whose GPUs have been idle that long is preempted (requeued after
  // its grace period, its restart budget untouched) so that others may have them.
  AdvisorConfig advisor;
  bool reclaim_idle_gpus = false;
  // The most keys the runtime history keeps (scheduler/runtime_history.h), rows in the store
  // included; tests make it small.
  size_t history_max_keys = scheduler::RuntimeHistory::kMaxKeys;
};

// Where jobs' checkpoints and outputs go: --storage-root, else <data_dir>/storage.
inline std::string StorageRootOf(const MasterConfig& config) {
  return config.storage_root.empty() ? config.data_dir + "/storage" : config.storage_root;
}

// The team a spec gets when it names none; it exists without being created (no guarantee, no
// limit) unless an admin gives it a quota.
inline constexpr const char* kDefaultTeam = "default";

// Told about changes, so that waiting requests can be answered (src/api).
class MasterListener {
 public:
  virtual ~MasterListener() = default;
  virtual void OnJobChanged(JobId id) = 0;
  virtual void OnNodeChanged(const std::string& node_id) = 0;
};

// Who holds one GPU.
struct GpuHolder {
  JobId job_id = 0;
  std::string task;  // "worker/1"
};

struct NodeStatus {
  const Node* node = nullptr;
  uint64_t version = 0;
  Resources allocated;
  std::map<int, GpuHolder> gpu_holders;  // by GPU index; a free GPU is absent
};

struct TeamStatus {
  TeamQuota quota;
  bool implicit = false;  // the default team, never created by an admin
  Resources held;         // by its running and stopping jobs
  int running_jobs = 0;
  int pending_jobs = 0;

  // GPUs held beyond the guarantee: what preemption may take back (docs/scheduler.md).
  int64_t BorrowedGpus() const { return std::max<int64_t>(0, held.gpus - quota.guaranteed_gpus); }
};

// Why a job is where it is, in plain words (cohort why).
struct Explanation {
  JobState state = JobState::kPending;
  std::string summary;               // the one-line reason
  std::vector<std::string> details;  // what it needs, what is free, its team, who is ahead
  bool unschedulable = false;
  std::optional<Timestamp> reserved_start;
  // Of the jobs waiting for the scheduler, how many its policy considers first: the job's place
  // in the queue (the dashboard sorts by it). Only for a pending job that is not backing off.
  std::optional<size_t> ahead;
  // What places it among its team's waiting jobs under the policies that rank them (default,
  // las): level, estimate, promotion. Only for a pending job that is not backing off.
  std::optional<JobRank> rank;
};

struct JobFilter {
  std::optional<JobState> state;
};

// What the master acts on besides its memory, opened by whoever starts it (cohortd, a test) and
// handed over whole: the master opens no database and makes no directory of its own (its log
// store makes its files under <data_dir>/logs as tasks write).
struct MasterDeps {
  std::unique_ptr<state::StateStore> store;
  std::unique_ptr<state::MetricStore> metrics;  // cohortd: <data_dir>/metrics.db
  std::unique_ptr<scheduler::Scheduler> scheduler;
};

class Master {
 public:
  // A scheduling pass is posted to `loop` after whatever changed the cluster, so that many
  // changes cost one pass; the master's tick runs there every MasterConfig::tick_interval.
  // `loop` and `clock` must outlive the master.

  static StatusOr<std::unique_ptr<Master>> Create(MasterConfig config, MasterDeps deps,
                                                  const Clock& clock, EventLoop& loop);

  void SetListener(MasterListener* listener) { listener_ = listener; }

  // --- Jobs ---
  // The spec is already validated (model/job_spec_parser.h). Durable when it returns.
  // `request_id` (may be empty) names the submission: a retry with the same id by the same user
  // returns the job the first one created instead of a second job (kAlreadyExists if the id
  // came with another spec); `replayed`, if given, says which.
  StatusOr<Job> Submit(JobSpec spec, std::string user, std::string request_id = {},
                       bool* replayed = nullptr);
  // Every job that `filter` selects, in id order (the API pages them: api/job_pages.h).
  std::vector<const Job*> ListJobs(const JobFilter& filter) const;
  // kNotFound for an unknown id.
  StatusOr<const Job*> GetJob(JobId id) const;
  // Stops every task of the job (SIGTERM, grace period, SIGKILL on the agents); the job is
  // KILLED once every agent confirms. kNotFound; kFailedPrecondition if it already ended.
  StatusOr<const Job*> Kill(JobId id);
  // Every event of the job, or a range of them (the API pages them). kNotFound.
  StatusOr<std::vector<JobEvent>> Events(JobId id);
  StatusOr<state::EventPage> Events(JobId id, const state::EventRange& range);
  // kNotFound for an unknown id.
  StatusOr<Explanation> Explain(JobId id) const;

  // --- Teams ---
  // Creates or changes a team. kInvalidArgument for a bad name or quota.
  StatusOr<TeamQuota> SetTeam(TeamQuota team);
  // kNotFound; kFailedPrecondition while the team has pending or active jobs.
  Status DeleteTeam(const std::string& name);
  std::vector<TeamStatus> ListTeams() const;

  // --- Agents ---
  // Adds or refreshes a node; returns what it should run.
  StatusOr<DesiredState> Register(NodeInfo info);
  // Applies an agent's report and returns what it should run. kNotFound if the node never
  // registered (the agent registers again).
  StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report);
  // kNotFound for an unknown node. Not const: a secret a task names that is gone since its
  // submission is left out of its environment, and its job gets an event saying so.
  StatusOr<DesiredState> DesiredFor(const std::string& node_id);
  std::vector<NodeStatus> ListNodes() const;
  // The last few minutes of what agents measured of their GPUs and tasks (utilisation, memory,
  // CPU), taken from their sync reports; in memory only.
  const ResourceHistory& resources() const { return resources_; }
  // What the advisor finds of a running job now (empty for others, or without samples).
  std::vector<Advice> AdviceFor(JobId id) const;
  // Nothing new is placed on a drained node; what runs there keeps running. kNotFound.
  StatusOr<const Node*> Drain(const std::string& node_id, std::string reason);
  StatusOr<const Node*> Undrain(const std::string& node_id);
  // Forgets a node. Its tasks are LOST and their gangs requeued; if its agent still runs, it
  // registers again as a new node. kNotFound.
  Status RemoveNode(const std::string& node_id);

  // --- Users and tokens (docs/security.md) ---
  Accounts& accounts() { return accounts_; }
  const Accounts& accounts() const { return accounts_; }
  // Whether jobs may name `team`: the default team, or one an admin created.
  bool TeamExists(std::string_view team) const;

  // --- Environment secrets (docs/security.md) ---
  Secrets& secrets() { return secrets_; }
  const Secrets& secrets() const { return secrets_; }

  // --- Logs (shipped by agents, served to users) ---
  // Stores `data` as the bytes of the task's log starting at `offset` (LogStore::AppendAsync:
  // durable, idempotent, on the store's writer thread if it runs); `done` gets the stored size,
  // on the event loop. kNotFound unless `task` is one of the job's tasks in one of its
  // attempts; kFailedPrecondition (with the expected offset in the message) if `offset` is past
  // the end without `options.skip`; kInternal if the write failed.
  void AppendLog(const std::string& node_id, const TaskId& task, int64_t offset, std::string data,
                 const LogAppend& options, LogStore::AppendDone done);
  // The same at once, for callers without a writer thread (tests).
  StatusOr<int64_t> AppendLog(const std::string& node_id, const TaskId& task, int64_t offset,
                              std::string_view data, const LogAppend& options = {});
  // Where the logs are read and followed; writes go through AppendLog.
  LogStore& logs() { return logs_; }

  // --- Training metrics (shipped by agents, charted for users; docs/observability.md) ---
  // Stores a batch of one task's points (MetricIngest: on its writer thread if it runs); `done`
  // gets what was stored and dropped, on the event loop. kNotFound unless `task` is one of the
  // job's tasks in one of its attempts; kUnavailable when too many points wait to be written.
  void AppendMetrics(const std::string& node_id, const TaskId& task,
                     std::vector<state::TaggedPoint> points, MetricIngest::Done done);
  // Where metrics are read; writes go through AppendMetrics. Kept in <data_dir>/metrics.db.
  MetricIngest& metrics() { return *metrics_; }

  // --- Accounting and audit (master/accounting.cc, docs/security.md) ---
  // GPU and CPU time, jobs and queueing delay per team, user and period, from the store (every
  // hold and milestone there is written with its job). kInvalidArgument for a query that is
  // empty, too long for its periods, or that would have too many rows.
  StatusOr<UsageReport> Usage(const UsageQuery& query);
  // The same, computed on the usage reader's thread once StartUsageReader has been called (a
  // report can take a third of a second: master/usage_reader.h); `done` runs on the event loop.
  // Without a reader, at once. kUnavailable when too many reports are under way.
  void Usage(const UsageQuery& query, std::function<void(StatusOr<UsageReport>)> done);
  // `store`: another connection to the master's database, read only by the reader's thread;
  // `post` runs work on the event loop.
  void StartUsageReader(std::unique_ptr<state::StateStore> store, UsageReader::Post post);
  // The audit log: an entry is begun (stamped with the master's time) before a state-changing
  // call runs and finished with its answer. Errors are the store's: the caller must not run the
  // call if BeginAudit fails, and must not report success if FinishAudit does.
  StatusOr<int64_t> BeginAudit(state::AuditEntry entry);
  Status FinishAudit(int64_t seq, int status, const std::string& target,
                     const std::string& outcome);
  StatusOr<std::vector<state::AuditEntry>> Audit(const state::AuditQuery& query);

  // --- Time ---
  // Marks silent nodes LOST (and requeues their gangs), stops jobs past their max_runtime, lets
  // jobs whose restart backoff is over be scheduled, runs a full pass that was put off. Runs by
  // itself every tick_interval on the event loop; tests also call it.
  void Tick();
  // One scheduling pass now (normally posted by the master itself).
  void Schedule();
  // How long each full pass held the event loop, by the master's clock: the scheduler's
  // decision and making it real (placements written to the store, preemptions, growth).
  // Decisions between passes (Incremental) are not counted.
  const Histogram& scheduling_passes() const { return scheduling_passes_; }
  // Preemptions the master has carried out since it started, by the rule that made them.
  const std::map<PreemptionCause, uint64_t>& preemptions_by_cause() const {
    return preemptions_by_cause_;
  }
  // What ended jobs cost, as the scheduler's estimates come from it (docs/scheduler.md).
  const scheduler::RuntimeHistory& runtime_history() const { return history_; }
  // True while arrivals and completions are decided between full passes.
  bool Incremental() const { return dispatcher_.Incremental(pending_.size()); }

  const MasterConfig& config() const { return config_; }
  Timestamp Now() const { return clock_.Now(); }

 private:
  using NodeEntry = NodeRegistry::Entry;

  Master(MasterConfig config, MasterDeps deps, const Clock& clock, EventLoop& loop);
  Status Load();

  void RequestSchedule();
  void TickAgainLater();
  // A full pass soon (on the next tick) when decisions run between passes; at once otherwise.
  void Reschedule();
  // The residue no longer matches the cluster (a node or a team changed): a full pass now.
  void InvalidateResidue();
  PendingJob PendingOf(const Job& job) const;
  // Resources of ended tasks go back to the residue; waiting jobs that now fit start.
  void Released(const std::vector<std::pair<JobId, Task>>& tasks);
  // Makes a placement the cluster core has accepted real (tasks, ports, directories, the store);
  // if that fails, gives the resources back and asks for a full pass.
  bool StartDecided(Job& job, const std::vector<TaskPlacement>& placement);
  uint64_t BumpNode(const std::string& node_id);
  // Writes the job (and bumps its version); on failure, fails stop and returns the error.
  Status Persist(Job& job, std::vector<JobEvent> events);
  // Writes made while one lives are one transaction of the store (StateStore::BeginBatch),
  // committed with one fsync when the outermost ends: a pass that starts many jobs, or an
  // agent's report that ends many tasks, costs one fsync instead of one per job. What the
  // listener hears of those changes waits for the commit, so that no client and no agent learns
  // of a change before it is durable. A failed commit fails stop.
  class WriteBatch {
   public:
    explicit WriteBatch(Master& master);
    ~WriteBatch();
    WriteBatch(const WriteBatch&) = delete;
    WriteBatch& operator=(const WriteBatch&) = delete;

   private:
    Master& master_;
  };
  // Tells the listener that a job or a node changed: now, or once the batch has committed.
  void AnnounceJob(JobId id);
  void AnnounceNode(const std::string& node_id);
  // Records the task's hold on its resources as it is now (taken, or given back once it ended),
  // to be written with the job's next Persist.
  void NoteHold(const Job& job, const Task& task);
  // Prunes audit entries past the retention: once an hour, in bounded batches on each tick
  // until none is left.
  void PruneAudit(Timestamp now);
  // The job ended in a way that teaches the runtime history (TeachesRunTime): it is recorded
  // with the job's next Persist, in the same write.
  void NoteEnd(const Job& job);
  // Persist where the caller has no one to return an error to.
  void Commit(Job& job, std::vector<JobEvent> events);
  void FailStop(const Status& status);
  JobEvent Event(const Job& job, std::string type, std::string message) const;

  // A node as the cluster core holds it: its whole capacity and GPUs.
  NodeCapacity CapacityOf(const NodeEntry& entry) const;
  // Gives the cluster core what an active job holds, from its durable record.
  void RestoreHolding(const Job& job);
  Status ApplyPlacement(Job& job, const JobPlacement& placement);
  int AssignPort(NodeEntry& node);
  bool ApplyGrowth(const Growth& growth);
  void ApplyShrink(const Shrink& shrink);
  framework::JobDirectories DirectoriesOf(const Job& job) const;

  // Environment secrets (task_secrets.cc). At submission: every secret the spec names exists
  // for `user` or the spec's team, and the environment fits with their values; kInvalidArgument
  // naming each variable otherwise.
  Status CheckSecretReferences(const JobSpec& spec, const std::string& user) const;
  // Puts the values of the secrets that the task's group names into `env`. One that is gone, or
  // has grown past the environment's bound, is left out, and the job gets an event saying so,
  // once per attempt and variable.
  void InjectSecrets(const Job& job, const std::string& role,
                     std::map<std::string, std::string>& env);

  // Asks every live task of the job to stop; the job finishes as `target` once all are gone.
  void StopJob(Job& job, JobState target, std::string reason, std::vector<JobEvent>& events);
  // If a STOPPING job has no live task left, moves it to its target state.
  void FinishIfStopped(Job& job, std::vector<JobEvent>& events);
  // Task ends found together (one agent report, one lost node), applied to their jobs at once.
  struct TaskEnds {
    std::map<JobId, std::vector<JobEvent>> events;
    std::set<JobId> changed;
    std::vector<std::pair<JobId, Task>> released;
  };
  // A checkpoint that a task of the job's current attempt reported at `at` (its agent's clock):
  // kept if newer than the job's last, and handed to the cluster core (master/checkpoints.cc).
  // True if the job changed and must be written.
  bool NoteCheckpoint(Job& job, Timestamp at);
  // `lost_why` says why a LOST report's task is gone ("node b missed its heartbeats for 10s").
  void RecordTaskReport(TaskEnds& ends, Job& job, Task& task, const TaskReport& report,
                        const std::string& lost_why = {});
  // Moves started gangs to RUNNING and stopped ones on, writes each changed job, and offers
  // what was released to waiting jobs.
  Status Conclude(TaskEnds& ends);
  void ApplyTaskReport(Job& job, Task& task, const TaskReport& report, const std::string& lost_why,
                       std::vector<JobEvent>& events);
  // An attempt ends early for `cause`: the gang stops, and is requeued if the restart policy
  // allows (after its backoff, for a failure), or fails.
  void EndAttemptEarly(Job& job, RestartCause cause, std::string reason,
                       std::vector<JobEvent>& events);
  // Every live task on the node is LOST (the machine died, was wiped, or was removed).
  Status LoseTasksOn(const std::string& node_id, const std::string& why);
  // Silent nodes become LOST.
  void CheckNodeTimeouts(Timestamp now);
  void SetNodeState(NodeEntry& entry, NodeState state);
  // Writes the node's record as `change` leaves it, then keeps it (nothing changes if the store
  // refuses), and tells the cluster core whether it is schedulable. kNotFound for an unknown id.
  StatusOr<NodeEntry*> ChangeNode(const std::string& node_id,
                                  const std::function<void(Node&)>& change);
  // Jobs in restart backoff are not offered to the scheduler until it is over.
  bool BackingOff(const Job& job, Timestamp now) const {
    return job.not_before && *job.not_before > now;
  }
  void NoteBackoff(const Job& job);

  // kNotFound unless `task` names one of the job's tasks in one of its attempts: what an agent
  // may ship logs and metrics for.
  Status CheckShippedTask(const TaskId& task) const;

  MasterConfig config_;
  LogStore logs_;                          // under <data_dir>/logs
  std::unique_ptr<MetricIngest> metrics_;  // over MasterDeps::metrics
  std::unique_ptr<state::StateStore> store_;
  int batch_depth_ = 0;        // WriteBatch scopes open
  bool fail_stopped_ = false;  // FailStop was called (it returns only in tests)
  // What the open batch has changed, to announce once it is committed.
  std::set<JobId> unannounced_jobs_;
  std::set<std::string> unannounced_nodes_;
  const Clock& clock_;
  EventLoop& loop_;
  // Callbacks left on the loop hold this weakly: a tick that comes after the master is gone
  // does nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  MasterListener* listener_ = nullptr;
  Accounts accounts_;
  Secrets secrets_;
  // Per active job: the attempt, and the variables it was told were left out in it.
  std::map<JobId, std::pair<int, std::set<std::string>>> secrets_left_out_;

  std::map<JobId, Job> jobs_;
  std::set<JobId> pending_;  // PENDING
  std::set<JobId> active_;   // STARTING, RUNNING, STOPPING: they hold resources
  NodeRegistry nodes_;
  ResourceHistory resources_;
  // The advisor's view of each running job, fed from the tick (master/job_advice.cc).
  struct JobAdviceState {
    int attempt = 0;
    JobAdvisor advisor;
    Timestamp last_sample{};
    std::set<AdviceKind> told;  // findings already recorded as events, while they hold
  };
  std::map<JobId, JobAdviceState> advice_;
  // When each active job's last checkpoint was last taken, by the master's clock: the bound on
  // how often an agent's reports make the master write a job (NoteCheckpoint).
  std::map<JobId, Timestamp> checkpoint_taken_at_;
  // Feeds each running job's newest samples to its advisor; records a finding as an event when
  // it begins to hold, and reclaims idle GPUs if the admin said so.
  void AdviseJobs(Timestamp now);
  std::vector<TeamQuota> teams_;
  std::map<JobId, PendingReason> last_reasons_;  // from the last pass, for pending jobs
  // What the scheduler sees (nodes, free capacity, jobs that hold resources, claims), and what
  // drives it; every placement is taken through them.
  cluster::ClusterState cluster_;
  dispatch::Dispatcher dispatcher_;
  std::optional<Timestamp> recheck_at_;    // the last pass asked to run again then
  std::optional<Timestamp> backoff_ends_;  // the earliest end of a pending job's restart backoff
  // (user, request id) -> job, for idempotent submission.
  std::map<std::pair<std::string, std::string>, JobId> requests_;
  bool schedule_posted_ = false;
  // Task holds noted and not yet written, by job: they go with the job's next write.
  std::map<JobId, std::vector<state::TaskUsage>> unsaved_holds_;
  // What ended jobs cost, by key (docs/scheduler.md, "The rank of a job"): loaded at start,
  // changed only once the store has the change. Jobs whose end it has yet to record (NoteEnd).
  scheduler::RuntimeHistory history_;
  std::set<JobId> unsaved_ends_;
  // Estimates by key for PendingOf; a recorded end drops those it may change.
  mutable scheduler::EstimateCache estimates_;
  std::unique_ptr<UsageReader> usage_reader_;  // null: reports run on the event loop
  std::optional<Timestamp> audit_pruned_at_;   // the start of the last round of pruning
  bool audit_pruning_ = false;                 // a round has more to prune
  Histogram scheduling_passes_;
  std::map<PreemptionCause, uint64_t> preemptions_by_cause_;
};

}  // namespace cohort::master
