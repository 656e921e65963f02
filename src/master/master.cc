// The master: creation, loading the durable state, writes and how they fail, jobs and teams as they
// are read and changed by an admin.
#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "common/strings.h"
#include "master/job_views.h"

namespace cohort::master {

Master::Master(MasterConfig config, MasterDeps deps, const Clock& clock, EventLoop& loop)
    : config_(std::move(config)),
      logs_(config_.data_dir + "/logs", LogLimits::For(config_.log_limit)),
      metrics_(std::make_unique<MetricIngest>(std::move(deps.metrics))),
      store_(std::move(deps.store)),
      clock_(clock),
      loop_(loop),
      accounts_(*store_, clock_),
      secrets_(*store_, clock_),
      dispatcher_(std::move(deps.scheduler), config_.incremental_above),
      history_(config_.history_max_keys) {
  config_.storage_root = StorageRootOf(config_);
}

StatusOr<std::unique_ptr<Master>> Master::Create(MasterConfig config, MasterDeps deps,
                                                 const Clock& clock, EventLoop& loop) {
  if (!deps.store || !deps.metrics || !deps.scheduler) {
    return Status::InvalidArgument(
        "the master needs a state store, a metric store and a scheduler");
  }
  std::unique_ptr<Master> m(new Master(std::move(config), std::move(deps), clock, loop));
  COHORT_RETURN_IF_ERROR(m->Load());
  m->TickAgainLater();
  return m;
}

Status Master::Load() {
  COHORT_RETURN_IF_ERROR(accounts_.Load());
  COHORT_RETURN_IF_ERROR(secrets_.Load());

  COHORT_ASSIGN_OR_RETURN(auto jobs, store_->LoadJobs());
  // Versions must keep rising across restarts, so that an agent's applied version from before
  // the restart never looks newer than what this master hands out.
  uint64_t max_version = static_cast<uint64_t>(ToMicros(clock_.Now()));
  for (auto& job : jobs) {
    for (const auto& t : job.tasks) max_version = std::max(max_version, t.assigned_version);
    if (job.state == JobState::kPending) {
      pending_.insert(job.id);
      NoteBackoff(job);
    }
    if (!job.request_id.empty()) requests_[{job.user, job.request_id}] = job.id;
    if (job.state == JobState::kStarting || job.state == JobState::kRunning ||
        job.state == JobState::kStopping) {
      active_.insert(job.id);
      // Stored before tasks kept the start of their hold: it was their attempt's placement, as
      // the store's migration took it (state::UsageFromRecord).
      for (auto& t : job.tasks) {
        if (!t.held_since) t.held_since = job.placed_at;
      }
    }
    JobId id = job.id;
    jobs_.emplace(id, std::move(job));
  }
  nodes_.VersionsAbove(max_version);
  COHORT_ASSIGN_OR_RETURN(auto history, store_->LoadRuntimeHistory());
  history_.Load(history);
  COHORT_ASSIGN_OR_RETURN(teams_, store_->LoadTeams());
  cluster_.SetTeams(teams_);
  COHORT_ASSIGN_OR_RETURN(auto nodes, store_->LoadNodes());
  Timestamp now = clock_.Now();
  for (auto& node : nodes) {
    // Every node gets a whole node timeout from this start to be heard from: the master's own
    // downtime is not the nodes' silence.
    node.last_seen = std::max(node.last_seen, now);
    NodeEntry& entry = nodes_.Put(std::move(node));
    cluster_.UpsertNode(CapacityOf(entry), entry.node.Schedulable());
  }
  for (JobId id : active_) RestoreHolding(jobs_.at(id));
  spdlog::info("state loaded: {} jobs ({} pending, {} active), {} nodes", jobs_.size(),
               pending_.size(), active_.size(), nodes_.size());
  if (!pending_.empty()) RequestSchedule();
  return Status::Ok();
}

void Master::RequestSchedule() {
  if (schedule_posted_) return;
  schedule_posted_ = true;
  loop_.Post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.lock()) Schedule();
  });
}

void Master::TickAgainLater() {
  loop_.RunAfter(config_.tick_interval, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.lock()) return;
    Tick();
    TickAgainLater();
  });
}

uint64_t Master::BumpNode(const std::string& node_id) {
  uint64_t version = nodes_.Bump(node_id);
  if (version != 0) AnnounceNode(node_id);
  return version;
}

JobEvent Master::Event(const Job& job, std::string type, std::string message) const {
  return JobEvent{job.id, clock_.Now(), std::move(type), std::move(message)};
}

Status Master::Persist(Job& job, std::vector<JobEvent> events) {
  ++job.version;
  std::vector<state::TaskUsage> holds;
  if (auto it = unsaved_holds_.find(job.id); it != unsaved_holds_.end()) {
    holds = std::move(it->second);
    unsaved_holds_.erase(it);
  }
  // The history changes only once the store has the change, in the same write as the end.
  RuntimeHistoryChange ended;
  if (unsaved_ends_.erase(job.id)) {
    ended = history_.Recorded(HistoryKeyOf(job), AttainedService(job));
  }
  Status s = store_->SaveJob(job, events, holds, ended);
  if (!s.ok()) {
    // Memory has moved on and the store has not: the two must never disagree silently.
    s = Status::Internal(fmt::format("saving job {}: {}", job.id, s.message()));
    FailStop(s);
    return s;
  }
  if (!ended.empty()) {
    history_.Apply(ended);
    estimates_.Forget(HistoryKeyOf(job), ended);
  }
  AnnounceJob(job.id);
  return s;
}

Master::WriteBatch::WriteBatch(Master& master) : master_(master) {
  if (master_.batch_depth_++ > 0) return;
  if (Status s = master_.store_->BeginBatch(); !s.ok()) master_.FailStop(s);
}

Master::WriteBatch::~WriteBatch() {
  if (--master_.batch_depth_ > 0) return;
  Status committed = master_.store_->CommitBatch();
  if (!committed.ok()) {
    master_.FailStop(Status::Internal("committing a batch of writes: " + committed.message()));
  }
  std::set<JobId> jobs = std::move(master_.unannounced_jobs_);
  std::set<std::string> nodes = std::move(master_.unannounced_nodes_);
  master_.unannounced_jobs_.clear();
  master_.unannounced_nodes_.clear();
  // After a failed write the master stops (FailStop does not return but in tests): nothing it
  // did since is announced.
  if (!master_.listener_ || master_.fail_stopped_) return;
  for (JobId id : jobs) master_.listener_->OnJobChanged(id);
  for (const auto& node : nodes) master_.listener_->OnNodeChanged(node);
}

void Master::AnnounceJob(JobId id) {
  if (batch_depth_ > 0) {
    unannounced_jobs_.insert(id);
  } else if (listener_) {
    listener_->OnJobChanged(id);
  }
}

void Master::AnnounceNode(const std::string& node_id) {
  if (batch_depth_ > 0) {
    unannounced_nodes_.insert(node_id);
  } else if (listener_) {
    listener_->OnNodeChanged(node_id);
  }
}

void Master::NoteEnd(const Job& job) {
  if (TeachesRunTime(job)) unsaved_ends_.insert(job.id);
}

void Master::Commit(Job& job, std::vector<JobEvent> events) {
  // A failure has already stopped the master (FailStop); nothing is left to do with it here.
  Status ignored = Persist(job, std::move(events));
  (void)ignored;
}

void Master::FailStop(const Status& status) {
  fail_stopped_ = true;
  spdlog::critical(
      "a write to the state store failed after the master changed its memory ({}); stopping so "
      "that a restart reloads the last durable state. Fix the store (disk space, permissions, "
      "locks) and start the master again.",
      status.ToString());
  spdlog::default_logger()->flush();
  if (config_.fail_stop) {
    config_.fail_stop(status);
  } else {
    std::_Exit(70);  // EX_SOFTWARE; no destructor may write anything more
  }
}

std::vector<const Job*> Master::ListJobs(const JobFilter& filter) const {
  std::vector<const Job*> out;
  for (const auto& [id, job] : jobs_) {
    if (filter.state && job.state != *filter.state) continue;
    out.push_back(&job);
  }
  return out;
}

StatusOr<const Job*> Master::GetJob(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound(fmt::format("job {} does not exist", id));
  return &it->second;
}

StatusOr<std::vector<JobEvent>> Master::Events(JobId id) {
  if (!jobs_.count(id)) return Status::NotFound(fmt::format("job {} does not exist", id));
  return store_->LoadEvents(id);
}

StatusOr<state::EventPage> Master::Events(JobId id, const state::EventRange& range) {
  if (!jobs_.count(id)) return Status::NotFound(fmt::format("job {} does not exist", id));
  return store_->ReadEvents(id, range);
}

// --- Teams ---

bool Master::TeamExists(std::string_view team) const {
  return team == kDefaultTeam || std::any_of(teams_.begin(), teams_.end(),
                                             [&](const TeamQuota& t) { return t.name == team; });
}

StatusOr<TeamQuota> Master::SetTeam(TeamQuota team) {
  std::vector<std::string> problems;
  if (Status name = ValidateTeamName(team.name, "name"); !name.ok()) {
    problems.push_back(name.message());
  }
  if (team.guaranteed_gpus < 0) {
    problems.push_back(fmt::format("gpus: {} is negative", team.guaranteed_gpus));
  }
  if (team.max_gpus && *team.max_gpus < team.guaranteed_gpus) {
    problems.push_back(fmt::format("max_gpus: {} is below the guarantee of {} GPUs", *team.max_gpus,
                                   team.guaranteed_gpus));
  }
  if (!problems.empty()) return Status::InvalidArgument("invalid team", std::move(problems));
  COHORT_RETURN_IF_ERROR(store_->SaveTeam(team));
  auto it = std::find_if(teams_.begin(), teams_.end(),
                         [&](const TeamQuota& t) { return t.name == team.name; });
  if (it == teams_.end()) {
    teams_.push_back(team);
    std::sort(teams_.begin(), teams_.end(),
              [](const TeamQuota& a, const TeamQuota& b) { return a.name < b.name; });
  } else {
    *it = team;
  }
  cluster_.SetTeams(teams_);
  spdlog::info("team {}: {} guaranteed GPUs, {}", team.name, team.guaranteed_gpus,
               team.max_gpus ? fmt::format("at most {}", *team.max_gpus) : "no limit");
  InvalidateResidue();
  return team;
}

Status Master::DeleteTeam(const std::string& name) {
  auto it = std::find_if(teams_.begin(), teams_.end(),
                         [&](const TeamQuota& t) { return t.name == name; });
  if (it == teams_.end()) return Status::NotFound(fmt::format("team {} does not exist", name));
  int live = 0;
  for (const auto& [id, job] : jobs_) live += job.spec.team == name && !IsTerminal(job.state);
  if (live > 0) {
    return Status::FailedPrecondition(
        fmt::format("team {} has {} job{} that {} not ended; kill or wait for them first", name,
                    live, live == 1 ? "" : "s", live == 1 ? "has" : "have"));
  }
  // A team created again under this name must not find the old team's secrets.
  COHORT_RETURN_IF_ERROR(secrets_.DeleteAll(SecretScope::kTeam, name));
  COHORT_RETURN_IF_ERROR(store_->DeleteTeam(name));
  teams_.erase(it);
  cluster_.SetTeams(teams_);
  InvalidateResidue();
  return Status::Ok();
}

std::vector<TeamStatus> Master::ListTeams() const {
  std::map<std::string, TeamStatus> by_name;
  by_name[kDefaultTeam] = TeamStatus{TeamQuota{kDefaultTeam, 0, std::nullopt}, true, {}, 0, 0};
  for (const auto& t : teams_) by_name[t.name] = TeamStatus{t, false, {}, 0, 0};
  for (JobId id : pending_) {
    const Job& job = jobs_.at(id);
    auto it = by_name.find(job.spec.team);
    if (it != by_name.end()) ++it->second.pending_jobs;
  }
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    auto it = by_name.find(job.spec.team);
    if (it == by_name.end()) continue;
    ++it->second.running_jobs;
    for (const auto& t : job.tasks) {
      if (!IsTerminal(t.state)) it->second.held += t.resources;
    }
  }
  std::vector<TeamStatus> out;
  for (auto& [name, status] : by_name) out.push_back(std::move(status));
  return out;
}

}  // namespace cohort::master
