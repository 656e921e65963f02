// The master: what the API calls, a facade over the classes that each own one kind of state
// (docs/architecture.md, "The master by state"): the jobs (JobBook), the nodes (NodeRegistry and
// the Reconciler that applies agents' reports), the scheduling loop, the job lifecycle, teams,
// accounts, secrets, task logs and metrics, the audit log and usage reports.
//
// Threading: not thread-safe. Every method runs on the master's one event-loop thread (the HTTP
// server's io_context), which is why none of them blocks except on the local state store.
// Durability: a change is written to the StateStore before the method returns, so whatever a
// caller is told has happened survives a restart. A write that fails before memory changes is
// the caller's error and changes nothing; one that fails after memory has changed stops the
// master (MasterConfig::fail_stop), so that memory and store never disagree silently
// (docs/architecture.md, "Durability").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "master/accounting.h"
#include "master/accounts.h"
#include "master/artifacts.h"
#include "master/audit.h"
#include "master/event_loop.h"
#include "master/idle_sessions.h"
#include "master/job_advice.h"
#include "master/job_book.h"
#include "master/job_lifecycle.h"
#include "master/job_rank.h"
#include "master/journal.h"
#include "master/log_store.h"
#include "master/master_config.h"
#include "master/metric_ingest.h"
#include "master/node_registry.h"
#include "master/reconciler.h"
#include "master/scheduling_loop.h"
#include "master/secrets.h"
#include "master/sweeps.h"
#include "master/task_secrets.h"
#include "master/teams.h"
#include "model/job.h"
#include "scheduler/scheduler.h"
#include "state/state_store.h"
#include "store/access_issuer.h"
#include "store/object_store.h"

namespace cohort::master {

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

// What the master acts on besides its memory, opened by whoever starts it (cohortd, a test) and
// handed over whole: the master opens no database and makes no directory of its own (its log
// store makes its files under <data_dir>/logs as tasks write).
struct MasterDeps {
  std::unique_ptr<state::StateStore> store;
  std::unique_ptr<state::MetricStore> metrics;  // cohortd: <data_dir>/metrics.db
  std::unique_ptr<scheduler::Scheduler> scheduler;
  // Where the state store lives, to go read-only before it is full (master/state_disk.h);
  // null: never read-only for want of space.
  std::unique_ptr<DiskSpace> state_disk;
  // The object store (store/object_store.h) where jobs' outputs go: the one MasterConfig::store
  // tells agents of.
  std::unique_ptr<store::ObjectStore> objects;
  // How agents reach it for a job's keys (store/access_issuer.h); null: as
  // MasterConfig::store says, the same for every job.
  std::unique_ptr<store::StoreAccessIssuer> store_access = nullptr;
};

// Where a session's task serves its person (a shell's terminal server, a notebook's Jupyter),
// and what opens it (Master::SessionEndpointOf).
struct SessionEndpoint {
  std::string user;  // the job's
  std::string node;
  std::string host;
  int port = 0;
  std::string credential;
};

class Master {
 public:
  // A scheduling pass is posted to `loop` after whatever changed the cluster, so that many
  // changes cost one pass; the master's tick runs there every MasterConfig::tick_interval.
  // `loop` and `clock` must outlive the master.
  static StatusOr<std::unique_ptr<Master>> Create(MasterConfig config, MasterDeps deps,
                                                  const Clock& clock, EventLoop& loop);
  ~Master();

  void SetListener(MasterListener* listener) { journal_.SetListener(listener); }

  // --- Jobs (JobLifecycle, JobBook) ---
  StatusOr<Job> Submit(JobSpec spec, std::string user, std::string request_id = {},
                       bool* replayed = nullptr, std::string team_note = {}) {
    return lifecycle_.Submit(std::move(spec), std::move(user), std::move(request_id), replayed,
                             std::move(team_note));
  }
  StatusOr<const Job*> Kill(JobId id, const std::string& by) { return lifecycle_.Kill(id, by); }
  // kNotFound for an unknown id.
  StatusOr<const Job*> GetJob(JobId id) const { return jobs_.Get(id); }
  // Where session `id`'s task serves it (its running task's node, address and port), and the
  // job's credential that opens it (docs/runtimes.md, "Shells", "Notebooks"):
  // kFailedPrecondition for a job that is no session of `kind` or has ended, kUnavailable while
  // it is not running yet.
  StatusOr<SessionEndpoint> SessionEndpointOf(JobId id, SessionKind kind) const;
  // Someone typed into session `id`'s terminal, or attached to it: it is in use
  // (master/idle_sessions.h).
  void NoteSessionInput(JobId id) { idle_sessions_.NoteInput(id, clock_.Now()); }
  // The jobs of an array, in index order (docs/job-spec.md, "Arrays"); null for an id that is no
  // array's.
  const std::vector<JobId>* ArrayJobs(JobId array) const { return jobs_.ArrayJobs(array); }
  StatusOr<std::vector<const Job*>> KillArray(JobId array, const std::string& by) {
    return lifecycle_.KillArray(array, by);
  }
  // Every job that `filter` selects, in id order (the API pages them: api/job_pages.h).
  std::vector<const Job*> ListJobs(const JobFilter& filter) const { return jobs_.List(filter); }
  // Every event of the job, or a range of them (the API pages them). kNotFound.
  StatusOr<std::vector<JobEvent>> Events(JobId id) { return jobs_.Events(id); }
  StatusOr<state::EventPage> Events(JobId id, const state::EventRange& range) {
    return jobs_.Events(id, range);
  }
  // kNotFound for an unknown id (master/explain.cc).
  StatusOr<Explanation> Explain(JobId id) const;
  // What the advisor finds of a running job now (empty for others, or without samples).
  std::vector<Advice> AdviceFor(JobId id) const { return advice_.For(id); }

  // --- Sweeps (master/sweeps.h, docs/sweeps.md) ---
  Sweeps& sweeps() { return sweeps_; }
  const Sweeps& sweeps() const { return sweeps_; }

  // --- Teams, nodes and agents, users and tokens, environment secrets ---
  Teams& teams() { return teams_; }
  const Teams& teams() const { return teams_; }
  Reconciler& nodes() { return reconciler_; }
  const Reconciler& nodes() const { return reconciler_; }
  Accounts& accounts() { return accounts_; }
  const Accounts& accounts() const { return accounts_; }
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

  // --- Jobs' outputs in the object store (master/artifacts.h, docs/data.md) ---
  const Artifacts& artifacts() const { return artifacts_; }
  // The master's handle on the store (MasterDeps::objects). Not thread-safe: one caller at a
  // time, off the event loop (an S3 store waits on the network).
  store::ObjectStore& objects() { return *objects_; }

  // --- Accounting and audit (docs/security.md) ---
  AuditLog& audit() { return audit_; }
  UsageReports& usage() { return usage_; }

  // --- Time and scheduling ---
  // Prunes the audit log, marks silent nodes LOST (and requeues their gangs), feeds the advisor,
  // stops jobs past their max_runtime, lets jobs whose restart backoff is over be scheduled,
  // runs a full pass that was put off. Runs by itself every tick_interval on the event loop;
  // tests also call it.
  void Tick();
  // One scheduling pass now (normally posted by the master itself).
  void Schedule() { scheduling_.Schedule(); }
  // How long passes took, preemptions by cause, whether decisions run between passes.
  const SchedulingLoop& scheduling() const { return scheduling_; }
  // What ended jobs cost, as the scheduler's estimates come from it (docs/scheduler.md).
  const scheduler::RuntimeHistory& runtime_history() const { return jobs_.history(); }

  const MasterConfig& config() const { return config_; }
  Timestamp Now() const { return clock_.Now(); }
  // Why the master takes no change now (its state disk is short of space), or nothing: the API
  // answers changes 503 with it (master/state_disk.h).
  const std::optional<std::string>& read_only() const { return journal_.read_only(); }

 private:
  Master(MasterConfig config, MasterDeps deps, const Clock& clock, EventLoop& loop);
  Status Load();
  void TickAgainLater();
  // How much later than due a tick may run before the master counts itself as not having run.
  static constexpr Duration kStalledAfter = std::chrono::seconds(1);

  MasterConfig config_;
  const Clock& clock_;
  EventLoop& loop_;
  LogStore logs_;                          // under <data_dir>/logs
  std::unique_ptr<MetricIngest> metrics_;  // over MasterDeps::metrics
  std::unique_ptr<state::StateStore> store_;
  std::unique_ptr<store::ObjectStore> objects_;
  Journal journal_;
  bool read_only_at_last_tick_ = false;
  Accounts accounts_;
  Secrets secrets_;
  JobBook jobs_;
  NodeRegistry nodes_;
  SchedulingLoop scheduling_;
  Teams teams_;
  TaskSecrets task_secrets_;
  JobLifecycle lifecycle_;
  Artifacts artifacts_;
  Reconciler reconciler_;
  JobAdvice advice_;
  IdleSessions idle_sessions_;
  Sweeps sweeps_;
  AuditLog audit_;
  UsageReports usage_;
  // Callbacks left on the loop hold this weakly: a tick that comes after the master is gone
  // does nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cohort::master
