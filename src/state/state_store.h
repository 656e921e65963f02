// Where the master keeps what must survive it: jobs, their events, nodes, teams, users, tokens,
// secrets, and the runtime history of ended jobs.
//
// Every write is durable when the call returns OK (the master acknowledges a submission only
// after CreateJob returns), and all or nothing: a write that fails, or is cut short by a crash,
// leaves nothing of itself. Not thread-safe: the master calls it from its one event-loop thread.
// Errors:
// - kInvalidArgument: refused before anything is written: a job or node that would not load
//   back (state/records.h), an event saved with another job than its own, text not UTF-8;
// - kResourceExhausted: the disk is full ("the state database's disk is full: <path>: ...");
//   nothing was written, and once there is room the store takes writes again;
// - kNotFound where noted; kInternal for other storage failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/account.h"
#include "model/job.h"
#include "model/node.h"
#include "model/plan.h"
#include "model/runtime_history_rows.h"
#include "model/secret.h"
#include "model/sweep_record.h"
#include "state/audit.h"
#include "state/usage.h"

namespace cohort::state {

// Which of a job's events ReadEvents reads, in the order they were stored: those after the
// first `after`, at most `limit`, and no more once their text (type and message) reaches
// `max_bytes` (one at least).
struct EventRange {
  size_t after = 0;
  size_t limit = SIZE_MAX;
  size_t max_bytes = SIZE_MAX;
};

struct EventPage {
  std::vector<JobEvent> events;
  bool more = false;  // the job has events after these
};

class StateStore {
 public:
  virtual ~StateStore() = default;

  // --- Batches (group commit) ---
  // From BeginBatch to CommitBatch every write joins one transaction, made durable (one fsync)
  // by CommitBatch: a scheduling pass that starts twenty jobs, or an agent's report that ends
  // twenty tasks, costs one fsync instead of twenty. Each write stays atomic on its own (a
  // failed one leaves the batch as it was before it); none is durable before CommitBatch, and a
  // crash before it loses all of them. No nesting. A store without transactions (the memory
  // store) takes each write at once, as without a batch.
  virtual Status BeginBatch() { return Status::Ok(); }
  virtual Status CommitBatch() { return Status::Ok(); }

  // Stores a new job with the next job id (ignoring job.id) and its events, atomically.
  // Returns the job with its id.
  virtual StatusOr<Job> CreateJob(Job job, std::vector<JobEvent> events) = 0;
  // Overwrites an existing job, appends events, writes task holds (each inserted, or its end
  // set if that hold is stored already) and applies a change to the runtime history (the job's
  // end recorded: its rows inserted or replaced, then the rows last used before
  // history.forget_before deleted), atomically. kNotFound if the id is unknown;
  // kInvalidArgument if an event's or a hold's job_id is not job.id, or a history row would not
  // load back (CheckHistoryChange).
  virtual Status SaveJob(const Job& job, const std::vector<JobEvent>& events,
                         const std::vector<TaskUsage>& usage,
                         const RuntimeHistoryChange& history) = 0;
  Status SaveJob(const Job& job, const std::vector<JobEvent>& events,
                 const std::vector<TaskUsage>& usage) {
    return SaveJob(job, events, usage, {});
  }
  Status SaveJob(const Job& job, const std::vector<JobEvent>& events) {
    return SaveJob(job, events, {}, {});
  }
  virtual StatusOr<std::vector<Job>> LoadJobs() = 0;
  // A job that does not exist has no events; that is not an error.
  virtual StatusOr<EventPage> ReadEvents(JobId job, const EventRange& range) = 0;
  // Every event of the job.
  StatusOr<std::vector<JobEvent>> LoadEvents(JobId job) {
    COHORT_ASSIGN_OR_RETURN(EventPage page, ReadEvents(job, EventRange{}));
    return std::move(page.events);
  }
  // The runtime history's rows (scheduler/runtime_history.h), by key.
  virtual StatusOr<std::vector<RuntimeHistoryRow>> LoadRuntimeHistory() = 0;

  // Teams and their quotas (model/plan.h TeamQuota). Save inserts or replaces.
  virtual Status SaveTeam(const TeamQuota& team) = 0;
  // kNotFound if there is no such team.
  virtual Status DeleteTeam(const std::string& name) = 0;
  virtual StatusOr<std::vector<TeamQuota>> LoadTeams() = 0;

  // Saves what the master keeps of a node: its registration, times and drain. Its state is not
  // kept: every node loads UNREACHABLE, until it syncs again.
  virtual Status SaveNode(const Node& node) = 0;
  // kNotFound if there is no such node.
  virtual Status DeleteNode(const std::string& id) = 0;
  virtual StatusOr<std::vector<Node>> LoadNodes() = 0;

  // Users with their team roles (model/account.h). Save inserts or replaces.
  virtual Status SaveUser(const User& user) = 0;
  // kNotFound if there is no such user. Their tokens stay, revoked by the caller.
  virtual Status DeleteUser(const std::string& name) = 0;
  virtual StatusOr<std::vector<User>> LoadUsers() = 0;

  // Tokens by id: only their hashes. Save inserts or replaces; a revocation saves the record
  // again with its time, so that lists and the audit still show it.
  virtual Status SaveToken(const TokenRecord& token) = 0;
  // Forgets a token for good (the master prunes old revoked and expired ones). Deleting one that
  // is not there is fine.
  virtual Status DeleteToken(const std::string& id) = 0;
  virtual StatusOr<std::vector<TokenRecord>> LoadTokens() = 0;

  // --- Accounting (state/usage.h) ---
  // Calls `hold` for every task hold that overlaps [scan.since, scan.until) (an open one runs
  // on), `milestone` for every moment within it, in no particular order.
  virtual Status ScanUsage(const UsageScan& scan,
                           const std::function<void(const TaskUsage&)>& hold) = 0;
  virtual Status ScanMilestones(const UsageScan& scan,
                                const std::function<void(const JobMilestone&)>& milestone) = 0;

  // --- Audit (state/audit.h) ---
  // Appends an entry without its outcome (its seq and status are ignored); returns its seq.
  // Not fsynced by itself: the next write that is (the call's own change, or an error's
  // completion) makes it durable with everything before it, so no change of the call can
  // outlive it.
  virtual StatusOr<int64_t> BeginAudit(const AuditEntry& entry) = 0;
  // Completes the entry with the call's answer. kNotFound for an unknown seq. A 2xx outcome is
  // not fsynced by itself (the call's own change was, with the entry's beginning): it becomes
  // durable with the next fsynced write; any other outcome is fsynced at once.
  virtual Status FinishAudit(int64_t seq, int status, const std::string& target,
                             const std::string& outcome) = 0;
  virtual StatusOr<std::vector<AuditEntry>> LoadAudit(const AuditQuery& query) = 0;
  // Deletes the oldest entries older than `before`, at most `max_entries` of them (a bounded
  // write); returns how many went.
  virtual StatusOr<int64_t> PruneAudit(Timestamp before, int64_t max_entries) = 0;

  // Environment secrets (model/secret.h), by scope, owner and name, values included: the master
  // holds them all. Save inserts or replaces; kInvalidArgument for a record state/records.h's
  // CheckSecret refuses.
  virtual Status SaveSecret(const Secret& secret) = 0;
  // kNotFound if there is no such secret.
  virtual Status DeleteSecret(SecretScope scope, const std::string& owner,
                              const std::string& name) = 0;
  // By scope (user, team), owner, name.
  virtual StatusOr<std::vector<Secret>> LoadSecrets() = 0;

  // Sweeps (model/sweep_record.h), by id, which the master chooses. Save inserts or replaces;
  // kInvalidArgument for a record whose text is not UTF-8.
  virtual Status SaveSweep(const SweepRecord& sweep) = 0;
  // By id.
  virtual StatusOr<std::vector<SweepRecord>> LoadSweeps() = 0;

  // The schema version the store is at (after migrations).
  virtual int SchemaVersion() const = 0;
};

// Opens (creating if needed) the SQLite database at `path`, in WAL mode, and brings its schema
// up to date. Refuses a database written by a newer Cohort.
StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& path);

}  // namespace cohort::state
