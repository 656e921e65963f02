#include "testing/memory_state_store.h"

#include <fmt/format.h>

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
  // (scope, owner, name): the secrets table's key and order.
  std::map<std::tuple<SecretScope, std::string, std::string>, Secret> secrets;
};

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
  if (!events.empty()) {
    auto& stored = contents_->events[job.id];
    stored.insert(stored.end(), events.begin(), events.end());
  }
  return job;
}

Status MemoryStateStore::SaveJob(const Job& job, const std::vector<JobEvent>& events) {
  auto it = contents_->jobs.find(job.id);
  if (it == contents_->jobs.end()) return Status::NotFound(fmt::format("job {}", job.id));
  COHORT_RETURN_IF_ERROR(state::CheckEvents(job.id, events));
  COHORT_ASSIGN_OR_RETURN(it->second, state::EncodeJobRecord(job));
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

StatusOr<std::vector<JobEvent>> MemoryStateStore::LoadEvents(JobId job) {
  auto it = contents_->events.find(job);
  if (it == contents_->events.end()) return std::vector<JobEvent>{};
  return it->second;
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

int MemoryStateStore::SchemaVersion() const { return 0; }

}  // namespace cohort::testing
