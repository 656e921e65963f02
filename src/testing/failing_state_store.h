// A StateStore decorator that fails writes on demand, to test how the master copes with a full
// disk or a lost database: LevelDB's fault-injecting EnvWrapper, for our StateStore.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "state/state_store.h"

namespace cohort::testing {

// Forwards every call to the store it wraps, except the writes it was told to fail: those
// return the injected error without reaching the wrapped store, which is left exactly as it
// was, as a rolled-back transaction leaves SQLite. Reads are never failed.
//
// With nothing armed it is a plain pass-through that counts calls. Each FailWrites or
// FailNextWrites call replaces whatever was armed before.
//
// The StateStore calls are no more thread-safe than the wrapped store's. The knobs and counters
// are: a test thread may arm a failure or read a count while the master's loop thread writes.
class FailingStateStore final : public state::StateStore {
 public:
  // The calls of the StateStore interface (SchemaVersion aside), to count them and to pick
  // which writes fail.
  enum class Call {
    kCreateJob,
    kSaveJob,
    kLoadJobs,
    kLoadEvents,
    kSaveTeam,
    kDeleteTeam,
    kLoadTeams,
    kSaveNode,
    kDeleteNode,
    kLoadNodes,
    kSaveUser,
    kDeleteUser,
    kLoadUsers,
    kSaveToken,
    kDeleteToken,
    kLoadTokens,
    kScanUsage,
    kScanMilestones,
    kBeginAudit,
    kFinishAudit,
    kLoadAudit,
    kPruneAudit,
    kSaveSecret,
    kDeleteSecret,
    kLoadSecrets,
    kLoadRuntimeHistory,
    kSaveSweep,
    kLoadSweeps,
    // Batches are forwarded and counted, never failed: a batch the wrapped store opened must
    // end there, whatever was injected into the writes within it.
    kBeginBatch,
    kCommitBatch,
  };
  static constexpr size_t kCallCount = 30;
  // True for the writes: kCreateJob, kSaveJob, kSaveTeam, kDeleteTeam, kSaveNode, kDeleteNode,
  // kSaveUser, kDeleteUser, kSaveToken, kDeleteToken, kBeginAudit, kFinishAudit, kPruneAudit,
  // kSaveSecret, kDeleteSecret, kSaveSweep.
  static bool IsWrite(Call call);

  explicit FailingStateStore(std::unique_ptr<state::StateStore> target);

  // From now on every write fails (true), or none does (false). With `only`, only writes of
  // those kinds fail; the others go through. Naming a read in `only` is a bug and aborts.
  void FailWrites(bool fail);
  void FailWrites(bool fail, std::initializer_list<Call> only);
  // The next `n` writes fail, then writes go through again. With `only`, only writes of those
  // kinds fail and count towards `n`.
  void FailNextWrites(int n);
  void FailNextWrites(int n, std::initializer_list<Call> only);
  // What a failed write returns. Default: Status::Internal("injected failure: disk full").
  void SetInjectedError(Status error);

  // How many times `call` was made, failed writes included.
  int64_t Calls(Call call) const;
  // How many writes failed by injection.
  int64_t InjectedFailures() const;

  Status BeginBatch() override;
  Status CommitBatch() override;
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

  Status SaveUser(const User& user) override;
  Status DeleteUser(const std::string& name) override;
  StatusOr<std::vector<User>> LoadUsers() override;

  Status SaveToken(const TokenRecord& token) override;
  Status DeleteToken(const std::string& id) override;
  StatusOr<std::vector<TokenRecord>> LoadTokens() override;

  Status ScanUsage(const state::UsageScan& scan,
                   const std::function<void(const state::TaskUsage&)>& hold) override;
  Status ScanMilestones(const state::UsageScan& scan,
                        const std::function<void(const state::JobMilestone&)>& milestone) override;

  StatusOr<int64_t> BeginAudit(const state::AuditEntry& entry) override;
  Status FinishAudit(int64_t seq, int status, const std::string& target,
                     const std::string& outcome) override;
  StatusOr<std::vector<state::AuditEntry>> LoadAudit(const state::AuditQuery& query) override;
  StatusOr<int64_t> PruneAudit(Timestamp before, int64_t max_entries) override;

  Status SaveSecret(const Secret& secret) override;
  Status DeleteSecret(SecretScope scope, const std::string& owner,
                      const std::string& name) override;
  StatusOr<std::vector<Secret>> LoadSecrets() override;

  Status SaveSweep(const SweepRecord& sweep) override;
  StatusOr<std::vector<SweepRecord>> LoadSweeps() override;

  int SchemaVersion() const override;

 private:
  void Count(Call call);
  // Counts a write and decides whether it fails: OK means forward it.
  Status Enter(Call call);
  void Arm(int64_t remaining, std::initializer_list<Call> only);

  std::unique_ptr<state::StateStore> target_;

  mutable std::mutex mu_;
  // Writes still to fail: 0 none, -1 every one from now on.
  int64_t remaining_ = 0;
  std::array<bool, kCallCount> failing_kinds_{};
  Status error_ = Status::Internal("injected failure: disk full");
  std::array<int64_t, kCallCount> calls_{};
  int64_t injected_failures_ = 0;
};

}  // namespace cohort::testing
