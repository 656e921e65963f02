#include "testing/memory_state_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "state/records.h"

namespace cohort::testing {

// The tables of the SQLite schema (state/sqlite_state_store.cc), kept the way SQLite keeps
// them: the ordered maps give its ORDER BY, the strings its `record` columns.
struct MemoryStateStore::Contents {
  std::map<JobId, std::string> jobs;  // id -> the job's JSON text
  // Per job, in the order stored: what job_events' AUTOINCREMENT seq gives SQLite.
  std::map<JobId, std::vector<JobEvent>> events;
  std::map<std::string, TeamQuota> teams;
  struct StoredNode {
    Timestamp registered_at;
    Timestamp last_seen;
    std::string record;  // the NodeInfo's JSON text
    bool drained = false;
    std::string drain_reason;
  };
  std::map<std::string, StoredNode> nodes;
  struct StoredUser {
    User user;          // without its teams, which are kept as SQLite keeps them:
    std::string teams;  // their JSON text
  };
  std::map<std::string, StoredUser> users;
  std::map<std::string, TokenRecord> tokens;
  // The columns of `jobs` that accounting reads, and job_attempts, task_usage and audit.
  struct JobIndex {
    std::string team;
    std::string user;
    Timestamp submitted_at;
    JobState state = JobState::kPending;
    std::optional<Timestamp> finished_at;
  };
  std::map<JobId, JobIndex> job_index;
  std::map<std::pair<JobId, int>, Timestamp> attempts;
  std::map<std::tuple<JobId, int, std::string, int64_t>, state::TaskUsage> usage;
  std::map<int64_t, state::AuditEntry> audit;        // by seq
  std::map<std::string, RuntimeHistoryRow> history;  // by key
  int64_t next_audit_seq = 1;
  std::map<SweepId, SweepRecord> sweeps;  // each as it reads back (state::EncodeSweepRecord)

  void Index(const Job& job) {
    std::optional<Timestamp> end;
    if (IsTerminal(job.state)) end = job.finished_at;
    job_index[job.id] = JobIndex{job.spec.team, job.user, job.submitted_at, job.state, end};
    if (job.attempt > 0 && job.placed_at)
      attempts.emplace(std::pair{job.id, job.attempt}, *job.placed_at);
  }
  // (scope, owner, name): the secrets table's key and order.
  std::map<std::tuple<SecretScope, std::string, std::string>, Secret> secrets;
};

namespace {

bool Matches(const state::UsageScan& scan, const std::string& team, const std::string& user) {
  return (scan.team.empty() || scan.team == team) && (scan.user.empty() || scan.user == user);
}

bool Within(const state::UsageScan& scan, Timestamp t) { return scan.since <= t && t < scan.until; }

}  // namespace

MemoryStateStore::MemoryStateStore() : contents_(std::make_shared<Contents>()) {}

MemoryStateStore::MemoryStateStore(std::shared_ptr<Contents> contents)
    : contents_(std::move(contents)) {}

MemoryStateStore::~MemoryStateStore() = default;

std::unique_ptr<MemoryStateStore> MemoryStateStore::Reopen() const {
  return std::unique_ptr<MemoryStateStore>(new MemoryStateStore(contents_));
}

StatusOr<Job> MemoryStateStore::CreateJob(Job job, std::vector<JobEvent> events) {
  // SQLite takes MAX(id) + 1; with no way to delete a job that is also "never reused".
  job.id = contents_->jobs.empty() ? 1 : contents_->jobs.rbegin()->first + 1;
  for (auto& e : events) e.job_id = job.id;
  // Checked before anything changes: if it is refused, as in SQLite, nothing is stored.
  COHORT_RETURN_IF_ERROR(state::CheckEvents(job.id, events));
  COHORT_ASSIGN_OR_RETURN(std::string record, state::EncodeJobRecord(job));
  contents_->jobs.emplace(job.id, std::move(record));
  contents_->Index(job);
  if (!events.empty()) {
    auto& stored = contents_->events[job.id];
    stored.insert(stored.end(), events.begin(), events.end());
  }
  return job;
}

Status MemoryStateStore::SaveJob(const Job& job, const std::vector<JobEvent>& events,
                                 const std::vector<state::TaskUsage>& usage,
                                 const RuntimeHistoryChange& history) {
  auto it = contents_->jobs.find(job.id);
  if (it == contents_->jobs.end()) return Status::NotFound(fmt::format("job {}", job.id));
  COHORT_RETURN_IF_ERROR(state::CheckEvents(job.id, events));
  COHORT_RETURN_IF_ERROR(state::CheckUsage(job.id, usage));
  COHORT_RETURN_IF_ERROR(state::CheckHistoryChange(history));
  COHORT_ASSIGN_OR_RETURN(it->second, state::EncodeJobRecord(job));
  for (const auto& row : history.rows) contents_->history[row.key] = row;
  std::erase_if(contents_->history,
                [&](const auto& kv) { return kv.second.last_used < history.forget_before; });
  contents_->Index(job);
  for (const auto& u : usage) {
    auto key = std::tuple{u.job_id, u.attempt, u.task, ToMicros(u.start)};
    auto [held, inserted] = contents_->usage.emplace(key, u);
    if (!inserted) held->second.end = u.end;  // as SQLite's upsert: only the end changes
  }
  auto& stored = contents_->events[job.id];
  stored.insert(stored.end(), events.begin(), events.end());
  return Status::Ok();
}

StatusOr<std::vector<Job>> MemoryStateStore::LoadJobs() {
  std::vector<Job> jobs;
  jobs.reserve(contents_->jobs.size());
  for (const auto& [id, record] : contents_->jobs) {
    COHORT_ASSIGN_OR_RETURN(Job job, state::DecodeJobRecord(record));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

StatusOr<state::EventPage> MemoryStateStore::ReadEvents(JobId job, const state::EventRange& range) {
  state::EventPage page;
  auto it = contents_->events.find(job);
  if (it == contents_->events.end()) return page;
  const std::vector<JobEvent>& stored = it->second;
  size_t bytes = 0;
  for (size_t i = std::min(range.after, stored.size()); i < stored.size(); ++i) {
    if (page.events.size() >= range.limit || (!page.events.empty() && bytes >= range.max_bytes)) {
      page.more = true;
      break;
    }
    page.events.push_back(stored[i]);
    bytes += stored[i].type.size() + stored[i].message.size();
  }
  return page;
}

StatusOr<std::vector<RuntimeHistoryRow>> MemoryStateStore::LoadRuntimeHistory() {
  std::vector<RuntimeHistoryRow> rows;
  rows.reserve(contents_->history.size());
  for (const auto& [key, row] : contents_->history) rows.push_back(row);
  return rows;
}

Status MemoryStateStore::SaveTeam(const TeamQuota& team) {
  contents_->teams[team.name] = team;
  return Status::Ok();
}

Status MemoryStateStore::DeleteTeam(const std::string& name) {
  if (contents_->teams.erase(name) == 0) return Status::NotFound(fmt::format("team {}", name));
  return Status::Ok();
}

StatusOr<std::vector<TeamQuota>> MemoryStateStore::LoadTeams() {
  std::vector<TeamQuota> teams;
  teams.reserve(contents_->teams.size());
  for (const auto& [name, team] : contents_->teams) teams.push_back(team);
  return teams;
}

Status MemoryStateStore::SaveUser(const User& user) {
  COHORT_ASSIGN_OR_RETURN(std::string teams, state::EncodeUserTeams(user));
  auto& stored = contents_->users[user.name];
  Timestamp created_at = stored.user.name.empty() ? user.created_at : stored.user.created_at;
  stored.user = user;
  stored.user.teams.clear();
  stored.user.created_at = created_at;  // as SQLite's upsert keeps the first one
  stored.teams = std::move(teams);
  return Status::Ok();
}

Status MemoryStateStore::DeleteUser(const std::string& name) {
  if (contents_->users.erase(name) == 0) {
    return Status::NotFound(fmt::format("user {} does not exist", name));
  }
  return Status::Ok();
}

StatusOr<std::vector<User>> MemoryStateStore::LoadUsers() {
  std::vector<User> users;
  for (const auto& [name, stored] : contents_->users) {
    User u = stored.user;
    COHORT_ASSIGN_OR_RETURN(u.teams, state::DecodeUserTeams(stored.teams));
    users.push_back(std::move(u));
  }
  return users;
}

Status MemoryStateStore::SaveToken(const TokenRecord& token) {
  auto [it, inserted] = contents_->tokens.try_emplace(token.id, token);
  if (!inserted) {
    Timestamp created_at = it->second.created_at;
    it->second = token;
    it->second.created_at = created_at;
  }
  return Status::Ok();
}

Status MemoryStateStore::DeleteToken(const std::string& id) {
  contents_->tokens.erase(id);
  return Status::Ok();
}

StatusOr<std::vector<TokenRecord>> MemoryStateStore::LoadTokens() {
  std::vector<TokenRecord> tokens;
  for (const auto& [id, token] : contents_->tokens) tokens.push_back(token);
  return tokens;
}

Status MemoryStateStore::SaveSecret(const Secret& secret) {
  COHORT_RETURN_IF_ERROR(state::CheckSecret(secret));
  contents_->secrets[{secret.scope, secret.owner, secret.name}] = secret;
  return Status::Ok();
}

Status MemoryStateStore::DeleteSecret(SecretScope scope, const std::string& owner,
                                      const std::string& name) {
  if (contents_->secrets.erase({scope, owner, name}) == 0) {
    return Status::NotFound(
        fmt::format("{} {} has no secret {}", SecretScopeName(scope), owner, name));
  }
  return Status::Ok();
}

StatusOr<std::vector<Secret>> MemoryStateStore::LoadSecrets() {
  std::vector<Secret> secrets;
  for (const auto& [key, secret] : contents_->secrets) secrets.push_back(secret);
  return secrets;
}

Status MemoryStateStore::SaveSweep(const SweepRecord& sweep) {
  COHORT_ASSIGN_OR_RETURN(std::string text, state::EncodeSweepRecord(sweep));
  SweepRecord stored = sweep;
  COHORT_ASSIGN_OR_RETURN(stored.doc, state::DecodeSweepDoc(text));
  contents_->sweeps[sweep.id] = std::move(stored);
  return Status::Ok();
}

StatusOr<std::vector<SweepRecord>> MemoryStateStore::LoadSweeps() {
  std::vector<SweepRecord> sweeps;
  for (const auto& [id, sweep] : contents_->sweeps) sweeps.push_back(sweep);
  return sweeps;
}

Status MemoryStateStore::SaveNode(const Node& node) {
  // Only what SQLite keeps: the state is not stored.
  COHORT_ASSIGN_OR_RETURN(std::string record, state::EncodeNodeRecord(node.info));
  Contents::StoredNode stored{node.registered_at, node.last_seen, std::move(record), node.drained,
                              node.drain_reason};
  contents_->nodes[node.info.id] = std::move(stored);
  return Status::Ok();
}

Status MemoryStateStore::DeleteNode(const std::string& id) {
  if (contents_->nodes.erase(id) == 0) {
    return Status::NotFound(fmt::format("node {} does not exist", id));
  }
  return Status::Ok();
}

StatusOr<std::vector<Node>> MemoryStateStore::LoadNodes() {
  std::vector<Node> nodes;
  nodes.reserve(contents_->nodes.size());
  for (const auto& [id, stored] : contents_->nodes) {
    Node node;
    COHORT_ASSIGN_OR_RETURN(node.info, state::DecodeNodeRecord(stored.record));
    node.registered_at = stored.registered_at;
    node.last_seen = stored.last_seen;
    node.drained = stored.drained;
    node.drain_reason = stored.drain_reason;
    node.state = NodeState::kUnreachable;  // until it syncs again
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Status MemoryStateStore::ScanUsage(const state::UsageScan& scan,
                                   const std::function<void(const state::TaskUsage&)>& hold) {
  for (const auto& [key, u] : contents_->usage) {
    if (!Matches(scan, u.team, u.user) || u.start >= scan.until) continue;
    if (u.end && *u.end <= scan.since) continue;
    hold(u);
  }
  return Status::Ok();
}

Status MemoryStateStore::ScanMilestones(
    const state::UsageScan& scan,
    const std::function<void(const state::JobMilestone&)>& milestone) {
  using Kind = state::JobMilestone::Kind;
  for (const auto& [id, j] : contents_->job_index) {
    if (!Matches(scan, j.team, j.user)) continue;
    if (Within(scan, j.submitted_at)) {
      milestone({Kind::kSubmitted, id, j.team, j.user, j.submitted_at, 0, j.state, j.submitted_at});
    }
    if (j.finished_at && Within(scan, *j.finished_at)) {
      milestone({Kind::kFinished, id, j.team, j.user, *j.finished_at, 0, j.state, j.submitted_at});
    }
  }
  for (const auto& [key, started_at] : contents_->attempts) {
    const auto& j = contents_->job_index.at(key.first);
    if (!Matches(scan, j.team, j.user) || !Within(scan, started_at)) continue;
    milestone({Kind::kAttemptStarted, key.first, j.team, j.user, started_at, key.second, j.state,
               j.submitted_at});
  }
  return Status::Ok();
}

StatusOr<int64_t> MemoryStateStore::BeginAudit(const state::AuditEntry& entry) {
  COHORT_RETURN_IF_ERROR(state::CheckAuditEntry(entry));
  state::AuditEntry stored = entry;
  stored.seq = contents_->next_audit_seq++;
  stored.status.reset();
  stored.outcome.clear();
  contents_->audit.emplace(stored.seq, stored);
  return stored.seq;
}

Status MemoryStateStore::FinishAudit(int64_t seq, int status, const std::string& target,
                                     const std::string& outcome) {
  state::AuditEntry text;
  text.target = target;
  text.outcome = outcome;
  COHORT_RETURN_IF_ERROR(state::CheckAuditEntry(text));
  auto it = contents_->audit.find(seq);
  if (it == contents_->audit.end()) {
    return Status::NotFound(fmt::format("audit entry {} does not exist", seq));
  }
  it->second.status = status;
  it->second.target = target;
  it->second.outcome = outcome;
  return Status::Ok();
}

StatusOr<std::vector<state::AuditEntry>> MemoryStateStore::LoadAudit(
    const state::AuditQuery& query) {
  std::vector<state::AuditEntry> entries;
  for (const auto& [seq, e] : contents_->audit) {
    if (e.time < query.since || e.time >= query.until) continue;
    if (!query.user.empty() && e.user != query.user) continue;
    if (!query.target.empty() && e.target != query.target) continue;
    entries.push_back(e);
  }
  // SQLite's order: by time, then seq; the newest `limit`.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
  if (query.limit >= 0 && entries.size() > static_cast<size_t>(query.limit)) {
    entries.erase(entries.begin(), entries.end() - query.limit);
  }
  return entries;
}

StatusOr<int64_t> MemoryStateStore::PruneAudit(Timestamp before, int64_t max_entries) {
  std::vector<std::pair<Timestamp, int64_t>> old;
  for (const auto& [seq, e] : contents_->audit) {
    if (e.time < before) old.emplace_back(e.time, seq);
  }
  std::sort(old.begin(), old.end());
  int64_t pruned = 0;
  for (const auto& [time, seq] : old) {
    if (pruned == max_entries) break;
    contents_->audit.erase(seq);
    ++pruned;
  }
  return pruned;
}

int MemoryStateStore::SchemaVersion() const { return 0; }

}  // namespace cohort::testing
