#include "master/job_book.h"

#include <fmt/format.h>

#include <algorithm>

#include "master/job_views.h"

namespace cohort::master {

JobBook::JobBook(Journal& journal, const Clock& clock, size_t history_max_keys)
    : journal_(journal), clock_(clock), history_(history_max_keys) {}

StatusOr<uint64_t> JobBook::Load() {
  COHORT_ASSIGN_OR_RETURN(auto jobs, journal_.store().LoadJobs());
  uint64_t max_version = 0;
  for (auto& job : jobs) {
    for (const auto& t : job.tasks) max_version = std::max(max_version, t.assigned_version);
    if (!job.request_id.empty()) requests_[{job.user, job.request_id}] = job.id;
    if (job.state == JobState::kStarting || job.state == JobState::kRunning ||
        job.state == JobState::kStopping) {
      // Stored before tasks kept the start of their hold: it was their attempt's placement, as
      // the store's migration took it (state::UsageFromRecord).
      for (auto& t : job.tasks) {
        if (!t.held_since) t.held_since = job.placed_at;
      }
    }
    Reindex(job);
    IndexLinks(job);
    JobId id = job.id;
    jobs_.emplace(id, std::move(job));
  }
  COHORT_ASSIGN_OR_RETURN(auto history, journal_.store().LoadRuntimeHistory());
  history_.Load(history);
  return max_version;
}

Job* JobBook::Find(JobId id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Job* JobBook::Find(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

StatusOr<const Job*> JobBook::Get(JobId id) const {
  const Job* job = Find(id);
  if (!job) return Status::NotFound(fmt::format("job {} does not exist", id));
  return job;
}

std::vector<const Job*> JobBook::List(const JobFilter& filter) const {
  std::vector<const Job*> out;
  for (const auto& [id, job] : jobs_) {
    if (filter.state && job.state != *filter.state) continue;
    out.push_back(&job);
  }
  return out;
}

int JobBook::LiveJobsOf(const std::string& team) const {
  int live = 0;
  for (const auto& [id, job] : jobs_) live += job.spec.team == team && !IsTerminal(job.state);
  return live;
}

int JobBook::PendingOfUser(const std::string& user) const {
  auto it = pending_by_user_.find(user);
  return it == pending_by_user_.end() ? 0 : it->second;
}

int JobBook::PendingOfTeam(const std::string& team) const {
  auto it = pending_by_team_.find(team);
  return it == pending_by_team_.end() ? 0 : it->second;
}

namespace {

// The node the task of that attempt was placed on: "" if the attempt had no such task; nothing if
// the record does not say (an attempt recorded before placements were kept, or one dropped from
// the job's bounded history).
std::optional<std::string> PlacedOn(const Job& job, const TaskId& task) {
  if (task.attempt == job.attempt) {
    for (const auto& t : job.tasks) {
      if (t.role == task.role && t.index == task.index) return t.node_id;
    }
  }
  for (const auto& a : job.history) {
    if (a.number != task.attempt) continue;
    if (a.nodes.empty()) return std::nullopt;
    auto it = a.nodes.find(fmt::format("{}/{}", task.role, task.index));
    return it == a.nodes.end() ? "" : it->second;
  }
  // The current attempt before it has tasks, or one the history no longer holds.
  return task.attempt == job.attempt ? std::optional<std::string>("") : std::nullopt;
}

}  // namespace

Status JobBook::CheckTask(const TaskId& task, const std::string& node) const {
  auto job_it = jobs_.find(task.job);
  if (job_it == jobs_.end()) {
    return Status::NotFound(fmt::format("job {} does not exist", task.job));
  }
  if (task.attempt < 1 || task.attempt > job_it->second.attempt) {
    return Status::NotFound(fmt::format("job {} has no attempt {}", task.job, task.attempt));
  }
  // The id names a file and a series: it must be one of the job's tasks, nothing else.
  // (Elastic replicas get ever higher indices: any index of an elastic role will do.)
  bool known = std::any_of(job_it->second.spec.tasks.begin(), job_it->second.spec.tasks.end(),
                           [&](const TaskGroupSpec& g) {
                             return g.role == task.role && task.index >= 0 &&
                                    (task.index < g.replicas || g.elastic());
                           });
  if (!known) {
    return Status::NotFound(
        fmt::format("job {} has no task {}/{}", task.job, task.role, task.index));
  }
  // A node's credential ships only for the tasks placed on that node.
  std::optional<std::string> placed = PlacedOn(job_it->second, task);
  if (placed && *placed != node) {
    return Status::PermissionDenied(
        fmt::format("node {} may not ship for task {}/{} of job {} (attempt {}): {}", node,
                    task.role, task.index, task.job, task.attempt,
                    placed->empty() ? std::string("it was placed on no node")
                                    : fmt::format("it was placed on {}", *placed)));
  }
  return Status::Ok();
}

const Job* JobBook::FindRequest(const std::string& user, const std::string& request_id) const {
  auto it = requests_.find({user, request_id});
  return it == requests_.end() ? nullptr : Find(it->second);
}

StatusOr<Job*> JobBook::Create(Job job, std::vector<JobEvent> events) {
  COHORT_ASSIGN_OR_RETURN(Job stored,
                          journal_.store().CreateJob(std::move(job), std::move(events)));
  JobId id = stored.id;
  if (!stored.request_id.empty()) requests_[{stored.user, stored.request_id}] = id;
  auto [it, inserted] = jobs_.emplace(id, std::move(stored));
  COHORT_CHECK(inserted);
  Reindex(it->second);
  IndexLinks(it->second);
  return &it->second;
}

void JobBook::IndexLinks(const Job& job) {
  if (job.array) {
    // The array's first job is created before its id is known: 0 there means its own.
    std::vector<JobId>& jobs = arrays_[job.array->id ? job.array->id : job.id];
    jobs.insert(std::upper_bound(jobs.begin(), jobs.end(), job.id), job.id);
  }
  if (!IsTerminal(job.state)) {
    for (const Dependency& d : job.spec.depends_on) dependents_[d.job].insert(job.id);
  }
}

bool JobBook::DependenciesMet(const Job& job) const {
  for (const Dependency& d : job.spec.depends_on) {
    const Job* dep = Find(d.job);
    if (!dep || !IsTerminal(dep->state) ||
        !DependencyMet(d.on, dep->state == JobState::kSucceeded)) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> JobBook::DependencyNeverMet(const Job& job) const {
  for (const Dependency& d : job.spec.depends_on) {
    const Job* dep = Find(d.job);
    if (!dep) return fmt::format("it depends on job {}, which does not exist", d.job);
    if (IsTerminal(dep->state) && !DependencyMet(d.on, dep->state == JobState::kSucceeded)) {
      return fmt::format("it waited for job {} to {}, and job {} ended {}", d.job,
                         d.on == DependencyCondition::kSuccess ? "succeed" : "fail", d.job,
                         JobStateName(dep->state));
    }
  }
  return std::nullopt;
}

const std::vector<JobId>* JobBook::ArrayJobs(JobId array) const {
  auto it = arrays_.find(array);
  return it == arrays_.end() ? nullptr : &it->second;
}

int JobBook::ArrayActive(JobId array) const {
  auto it = array_active_.find(array);
  return it == array_active_.end() ? 0 : it->second;
}

std::vector<JobId> JobBook::DependentsOf(JobId job) const {
  std::vector<JobId> out;
  auto it = dependents_.find(job);
  if (it == dependents_.end()) return out;
  for (JobId id : it->second) {
    if (pending_.count(id)) out.push_back(id);
  }
  return out;
}

void JobBook::Reindex(const Job& job) {
  bool was_pending = pending_.erase(job.id) > 0;
  // A held job waits for its release, not for the scheduler (JobLifecycle::Hold).
  bool is_pending = job.state == JobState::kPending && job.hold.empty();
  if (was_pending != is_pending) {
    // A job's user and team never change: the counts follow its entries in pending_.
    int change = is_pending ? 1 : -1;
    for (auto [counts, key] :
         {std::pair{&pending_by_user_, &job.user}, std::pair{&pending_by_team_, &job.spec.team}}) {
      auto it = counts->emplace(*key, 0).first;
      it->second += change;
      if (it->second == 0) counts->erase(it);
    }
  }
  const bool was_active = active_.erase(job.id) > 0;
  if (is_pending) pending_.insert(job.id);
  const bool is_active = job.state == JobState::kStarting || job.state == JobState::kRunning ||
                         job.state == JobState::kStopping;
  if (is_active) active_.insert(job.id);
  if (job.array && was_active != is_active) {
    int& n = array_active_[job.array->id];
    n += is_active ? 1 : -1;
    if (n == 0) array_active_.erase(job.array->id);
  }
  // Its dependents no longer wait on an ended job's record to change.
  if (IsTerminal(job.state)) {
    for (const Dependency& d : job.spec.depends_on) {
      if (auto it = dependents_.find(d.job); it != dependents_.end()) {
        it->second.erase(job.id);
        if (it->second.empty()) dependents_.erase(it);
      }
    }
  }
}

Status JobBook::Persist(Job& job, std::vector<JobEvent> events) {
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
  Status s = journal_.store().SaveJob(job, events, holds, ended);
  if (!s.ok()) {
    // Memory has moved on and the store has not: the two must never disagree silently.
    s = Status::Internal(fmt::format("saving job {}: {}", job.id, s.message()));
    journal_.FailStop(s);
    return s;
  }
  if (!ended.empty()) {
    history_.Apply(ended);
    estimates_.Forget(HistoryKeyOf(job), ended);
  }
  journal_.AnnounceJob(job.id);
  if (job.trial && IsTerminal(job.state) && trial_ended_) trial_ended_(job);
  if (IsTerminal(job.state) && dependency_ended_ && dependents_.count(job.id)) {
    dependency_ended_(job);
  }
  return s;
}

void JobBook::Commit(Job& job, std::vector<JobEvent> events) {
  // A failure has already stopped the master (FailStop); nothing is left to do with it here.
  Status ignored = Persist(job, std::move(events));
  (void)ignored;
}

JobEvent JobBook::Event(const Job& job, std::string type, std::string message) const {
  return JobEvent{job.id, clock_.Now(), std::move(type), std::move(message)};
}

void JobBook::NoteHold(const Job& job, const Task& task) {
  Timestamp start = task.held_since.value_or(job.placed_at.value_or(job.submitted_at));
  std::optional<Timestamp> end;
  if (IsTerminal(task.state)) {
    // The agent's end of the task, when it says, within what the master has seen: not before
    // the hold began (another clock), not after now. A task that ended while the master was
    // down is not charged for the downtime.
    end = std::clamp(task.finished_at.value_or(clock_.Now()), start, std::max(start, clock_.Now()));
  }
  unsaved_holds_[job.id].push_back(state::TaskUsage{job.id, job.attempt, task.Name(), job.spec.team,
                                                    job.user, task.resources.gpus,
                                                    task.resources.milli_cpus, start, end});
}

void JobBook::NoteEnd(const Job& job) {
  if (TeachesRunTime(job)) unsaved_ends_.insert(job.id);
}

StatusOr<std::vector<JobEvent>> JobBook::Events(JobId id) {
  if (!jobs_.count(id)) return Status::NotFound(fmt::format("job {} does not exist", id));
  return journal_.store().LoadEvents(id);
}

StatusOr<state::EventPage> JobBook::Events(JobId id, const state::EventRange& range) {
  if (!jobs_.count(id)) return Status::NotFound(fmt::format("job {} does not exist", id));
  return journal_.store().ReadEvents(id, range);
}

std::optional<RuntimeEstimate> JobBook::EstimateFor(const Job& job) const {
  return estimates_.Get(history_, HistoryKeyOf(job));
}

}  // namespace cohort::master
