// An in-memory StateStore for tests, benchmarks and the simulator's tests: the SQLite store's
// behaviour without a file, a schema or an fsync.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "state/state_store.h"

namespace cohort::testing {

// Behaves call for call as the SQLite store does, so that a test passing against it says
// something about production (testing/state_store_contract.h runs the same tests on both):
//
// - job ids count from 1 and are never reused;
// - jobs and nodes are kept in their JSON form, checked and decoded by the same code as SQLite's
//   (state/records.h): a job or node that would not load back, an event naming another job or
//   text that is not UTF-8 is refused with kInvalidArgument and nothing is stored;
// - events are returned per job in the order they were stored; ReadEvents of a job that does
//   not exist is an empty list, not kNotFound;
// - teams are listed by name, nodes by id, byte by byte (SQLite's ORDER BY); loaded nodes are
//   UNREACHABLE until their agent syncs; secrets by scope (user before team), owner, name;
// - every Load* returns copies; a write that fails changes nothing;
// - task holds are keyed by job, attempt, task and start, and scans return what SQLite's do
//   (in another order: a scan promises none); audit entries are numbered from 1, never reused;
// - runtime history rows are keyed and listed by key, a change's rows written before its
//   forget_before deletes.
//
// Each write still costs a JSON encoding, as in the SQLite store, which is what makes the first
// two points hold; it is no store for millions of writes a second.
//
// Not thread-safe, like every StateStore; stores made by Reopen share their contents, so they
// must all be used from one thread too.
class MemoryStateStore final : public state::StateStore {
 public:
  // An empty store, as a new database file is.
  MemoryStateStore();
  ~MemoryStateStore() override;

  MemoryStateStore(const MemoryStateStore&) = delete;
  MemoryStateStore& operator=(const MemoryStateStore&) = delete;

  // Another store over the same contents, as opening the database file again gives: whatever
  // is written through one is seen by the other, and the contents live as long as either does.
  // To restart a master in a test, keep one store as "the disk" and hand each master a Reopen()
  // of it.
  std::unique_ptr<MemoryStateStore> Reopen() const;

  StatusOr<Job> CreateJob(Job job, std::vector<JobEvent> events) override;
  using StateStore::SaveJob;
  Status SaveJob(const Job& job, const std::vector<JobEvent>& events,
                 const std::vector<state::TaskUsage>& usage,
                 const RuntimeHistoryChange& history) override;
  StatusOr<std::vector<Job>> LoadJobs() override;
  StatusOr<state::EventPage> ReadEvents(JobId job, const state::EventRange& range) override;
  StatusOr<std::vector<RuntimeHistoryRow>> LoadRuntimeHistory() override;

  Status SaveTeam(const TeamQuota& team) override;
  Status DeleteTeam(const std::string& name) override;
  StatusOr<std::vector<TeamQuota>> LoadTeams() override;

  Status SaveNode(const Node& node) override;
  Status DeleteNode(const std::string& id) override;
  StatusOr<std::vector<Node>> LoadNodes() override;

  Status ScanUsage(const state::UsageScan& scan,
                   const std::function<void(const state::TaskUsage&)>& hold) override;
  Status ScanMilestones(const state::UsageScan& scan,
                        const std::function<void(const state::JobMilestone&)>& milestone) override;

  StatusOr<int64_t> BeginAudit(const state::AuditEntry& entry) override;
  Status FinishAudit(int64_t seq, int status, const std::string& target,
                     const std::string& outcome) override;
  StatusOr<std::vector<state::AuditEntry>> LoadAudit(const state::AuditQuery& query) override;
  StatusOr<int64_t> PruneAudit(Timestamp before, int64_t max_entries) override;

  // 0: there is no schema to migrate.
  Status SaveUser(const User& user) override;
  Status DeleteUser(const std::string& name) override;
  StatusOr<std::vector<User>> LoadUsers() override;

  Status SaveToken(const TokenRecord& token) override;
  Status DeleteToken(const std::string& id) override;
  StatusOr<std::vector<TokenRecord>> LoadTokens() override;

  Status SaveSecret(const Secret& secret) override;
  Status DeleteSecret(SecretScope scope, const std::string& owner,
                      const std::string& name) override;
  StatusOr<std::vector<Secret>> LoadSecrets() override;

  Status SaveSweep(const SweepRecord& sweep) override;
  StatusOr<std::vector<SweepRecord>> LoadSweeps() override;

  int SchemaVersion() const override;

 private:
  struct Contents;
  explicit MemoryStateStore(std::shared_ptr<Contents> contents);

  std::shared_ptr<Contents> contents_;
};

}  // namespace cohort::testing
