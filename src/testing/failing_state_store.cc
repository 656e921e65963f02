#include "testing/failing_state_store.h"

#include <utility>

namespace cohort::testing {

namespace {

using Call = FailingStateStore::Call;

constexpr std::initializer_list<Call> kWrites = {
    Call::kCreateJob,  Call::kSaveJob,     Call::kSaveTeam,     Call::kDeleteTeam,
    Call::kSaveNode,   Call::kDeleteNode,  Call::kSaveUser,     Call::kDeleteUser,
    Call::kSaveToken,  Call::kDeleteToken, Call::kBeginAudit,   Call::kFinishAudit,
    Call::kPruneAudit, Call::kSaveSecret,  Call::kDeleteSecret, Call::kSaveSweep};

size_t Index(Call call) { return static_cast<size_t>(call); }
static_assert(static_cast<size_t>(Call::kCommitBatch) + 1 == FailingStateStore::kCallCount);

}  // namespace

bool FailingStateStore::IsWrite(Call call) {
  switch (call) {
    case Call::kCreateJob:
    case Call::kSaveJob:
    case Call::kSaveTeam:
    case Call::kDeleteTeam:
    case Call::kSaveNode:
    case Call::kDeleteNode:
    case Call::kSaveUser:
    case Call::kDeleteUser:
    case Call::kSaveToken:
    case Call::kDeleteToken:
    case Call::kBeginAudit:
    case Call::kFinishAudit:
    case Call::kPruneAudit:
    case Call::kSaveSecret:
    case Call::kDeleteSecret:
    case Call::kSaveSweep:
      return true;
    case Call::kLoadJobs:
    case Call::kLoadEvents:
    case Call::kLoadTeams:
    case Call::kLoadNodes:
    case Call::kLoadUsers:
    case Call::kLoadTokens:
    case Call::kScanUsage:
    case Call::kScanMilestones:
    case Call::kLoadAudit:
    case Call::kLoadSecrets:
    case Call::kLoadRuntimeHistory:
    case Call::kLoadSweeps:
    case Call::kBeginBatch:
    case Call::kCommitBatch:
      return false;
  }
  return false;
}

FailingStateStore::FailingStateStore(std::unique_ptr<state::StateStore> target)
    : target_(std::move(target)) {
  COHORT_CHECK(target_ != nullptr);
}

void FailingStateStore::FailWrites(bool fail) { FailWrites(fail, kWrites); }

void FailingStateStore::FailWrites(bool fail, std::initializer_list<Call> only) {
  Arm(fail ? -1 : 0, only);
}

void FailingStateStore::FailNextWrites(int n) { FailNextWrites(n, kWrites); }

void FailingStateStore::FailNextWrites(int n, std::initializer_list<Call> only) {
  COHORT_CHECK(n >= 0);
  Arm(n, only);
}

void FailingStateStore::Arm(int64_t remaining, std::initializer_list<Call> only) {
  std::array<bool, kCallCount> kinds{};
  for (Call call : only) {
    COHORT_CHECK(IsWrite(call));
    kinds[Index(call)] = true;
  }
  std::lock_guard lock(mu_);
  remaining_ = remaining;
  failing_kinds_ = kinds;
}

void FailingStateStore::SetInjectedError(Status error) {
  COHORT_CHECK(!error.ok());
  std::lock_guard lock(mu_);
  error_ = std::move(error);
}

int64_t FailingStateStore::Calls(Call call) const {
  std::lock_guard lock(mu_);
  return calls_[Index(call)];
}

int64_t FailingStateStore::InjectedFailures() const {
  std::lock_guard lock(mu_);
  return injected_failures_;
}

void FailingStateStore::Count(Call call) {
  std::lock_guard lock(mu_);
  ++calls_[Index(call)];
}

Status FailingStateStore::Enter(Call call) {
  std::lock_guard lock(mu_);
  ++calls_[Index(call)];
  if (remaining_ == 0 || !failing_kinds_[Index(call)]) return Status::Ok();
  if (remaining_ > 0) --remaining_;
  ++injected_failures_;
  return error_;
}

Status FailingStateStore::BeginBatch() {
  Count(Call::kBeginBatch);
  return target_->BeginBatch();
}

Status FailingStateStore::CommitBatch() {
  Count(Call::kCommitBatch);
  return target_->CommitBatch();
}

StatusOr<Job> FailingStateStore::CreateJob(Job job, std::vector<JobEvent> events) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kCreateJob));
  return target_->CreateJob(std::move(job), std::move(events));
}

Status FailingStateStore::SaveJob(const Job& job, const std::vector<JobEvent>& events,
                                  const std::vector<state::TaskUsage>& usage,
                                  const RuntimeHistoryChange& history) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveJob));
  return target_->SaveJob(job, events, usage, history);
}

StatusOr<std::vector<Job>> FailingStateStore::LoadJobs() {
  Count(Call::kLoadJobs);
  return target_->LoadJobs();
}

StatusOr<state::EventPage> FailingStateStore::ReadEvents(JobId job,
                                                         const state::EventRange& range) {
  Count(Call::kLoadEvents);
  return target_->ReadEvents(job, range);
}

StatusOr<std::vector<RuntimeHistoryRow>> FailingStateStore::LoadRuntimeHistory() {
  Count(Call::kLoadRuntimeHistory);
  return target_->LoadRuntimeHistory();
}

Status FailingStateStore::SaveTeam(const TeamQuota& team) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveTeam));
  return target_->SaveTeam(team);
}

Status FailingStateStore::DeleteTeam(const std::string& name) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kDeleteTeam));
  return target_->DeleteTeam(name);
}

StatusOr<std::vector<TeamQuota>> FailingStateStore::LoadTeams() {
  Count(Call::kLoadTeams);
  return target_->LoadTeams();
}

Status FailingStateStore::SaveNode(const Node& node) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveNode));
  return target_->SaveNode(node);
}

Status FailingStateStore::DeleteNode(const std::string& id) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kDeleteNode));
  return target_->DeleteNode(id);
}

StatusOr<std::vector<Node>> FailingStateStore::LoadNodes() {
  Count(Call::kLoadNodes);
  return target_->LoadNodes();
}

Status FailingStateStore::SaveUser(const User& user) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveUser));
  return target_->SaveUser(user);
}

Status FailingStateStore::DeleteUser(const std::string& name) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kDeleteUser));
  return target_->DeleteUser(name);
}

StatusOr<std::vector<User>> FailingStateStore::LoadUsers() {
  Count(Call::kLoadUsers);
  return target_->LoadUsers();
}

Status FailingStateStore::SaveToken(const TokenRecord& token) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveToken));
  return target_->SaveToken(token);
}

Status FailingStateStore::DeleteToken(const std::string& id) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kDeleteToken));
  return target_->DeleteToken(id);
}

StatusOr<std::vector<TokenRecord>> FailingStateStore::LoadTokens() {
  Count(Call::kLoadTokens);
  return target_->LoadTokens();
}

Status FailingStateStore::ScanUsage(const state::UsageScan& scan,
                                    const std::function<void(const state::TaskUsage&)>& hold) {
  Count(Call::kScanUsage);
  return target_->ScanUsage(scan, hold);
}

Status FailingStateStore::ScanMilestones(
    const state::UsageScan& scan,
    const std::function<void(const state::JobMilestone&)>& milestone) {
  Count(Call::kScanMilestones);
  return target_->ScanMilestones(scan, milestone);
}

StatusOr<int64_t> FailingStateStore::BeginAudit(const state::AuditEntry& entry) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kBeginAudit));
  return target_->BeginAudit(entry);
}

Status FailingStateStore::FinishAudit(int64_t seq, int status, const std::string& target,
                                      const std::string& outcome) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kFinishAudit));
  return target_->FinishAudit(seq, status, target, outcome);
}

StatusOr<std::vector<state::AuditEntry>> FailingStateStore::LoadAudit(
    const state::AuditQuery& query) {
  Count(Call::kLoadAudit);
  return target_->LoadAudit(query);
}

StatusOr<int64_t> FailingStateStore::PruneAudit(Timestamp before, int64_t max_entries) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kPruneAudit));
  return target_->PruneAudit(before, max_entries);
}

Status FailingStateStore::SaveSecret(const Secret& secret) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveSecret));
  return target_->SaveSecret(secret);
}

Status FailingStateStore::DeleteSecret(SecretScope scope, const std::string& owner,
                                       const std::string& name) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kDeleteSecret));
  return target_->DeleteSecret(scope, owner, name);
}

StatusOr<std::vector<Secret>> FailingStateStore::LoadSecrets() {
  Count(Call::kLoadSecrets);
  return target_->LoadSecrets();
}

Status FailingStateStore::SaveSweep(const SweepRecord& sweep) {
  COHORT_RETURN_IF_ERROR(Enter(Call::kSaveSweep));
  return target_->SaveSweep(sweep);
}

StatusOr<std::vector<SweepRecord>> FailingStateStore::LoadSweeps() {
  Count(Call::kLoadSweeps);
  return target_->LoadSweeps();
}

int FailingStateStore::SchemaVersion() const { return target_->SchemaVersion(); }

}  // namespace cohort::testing
