#include "master/job_lifecycle.h"
#include "master/session_policy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"
#include "common/units.h"
#include "master/artifacts.h"
#include "master/job_views.h"
#include "model/job_size.h"
#include "model/job_spec_parser.h"
#include "model/limits.h"

namespace cohort::master {

JobLifecycle::JobLifecycle(const MasterConfig& config, JobBook& jobs, NodeRegistry& nodes,
                           SchedulingLoop& scheduling, Journal& journal, const Teams& teams,
                           const TaskSecrets& secrets, const Clock& clock)
    : config_(config),
      jobs_(jobs),
      nodes_(nodes),
      scheduling_(scheduling),
      journal_(journal),
      teams_(teams),
      secrets_(secrets),
      clock_(clock) {}

uint64_t JobLifecycle::BumpNode(const std::string& node_id) {
  uint64_t version = nodes_.Bump(node_id);
  if (version != 0) journal_.AnnounceNode(node_id);
  return version;
}

StatusOr<Job> JobLifecycle::Submit(JobSpec spec, std::string user, std::string request_id,
                                   bool* replayed, std::string team_note,
                                   std::optional<TrialRef> trial) {
  if (replayed) *replayed = false;
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  std::string digest;
  if (!request_id.empty()) {
    digest = SpecDigest(spec);
    if (const Job* seen = jobs_.FindRequest(user, request_id)) {
      const Job& first = *seen;
      if (first.request_digest != digest) {
        return Status::AlreadyExists(fmt::format(
            "request id {} was already used for job {} with another spec; a retry must send the "
            "same spec, a new submission a new request id",
            request_id, first.id));
      }
      spdlog::info("job {}: submission {} retried by {}; returning the job it created", first.id,
                   request_id, user);
      if (replayed) *replayed = true;
      return first;
    }
  }
  bool known = teams_.Exists(spec.team);
  std::string fallback_note;
  if (!known) {
    if (config_.unknown_team_fallback.empty()) {
      std::string line = fmt::format(
          "team: \"{}\" is not a team; an admin creates it with: cohort team set {} --gpus N",
          spec.team, spec.team);
      return Status::InvalidArgument("job spec has 1 error", {line});
    }
    fallback_note = fmt::format(" (team {} does not exist: moved to team {})", spec.team,
                                config_.unknown_team_fallback);
    spec.team = config_.unknown_team_fallback;
  }
  const int count = spec.array ? static_cast<int>(spec.array->indices.size()) : 1;
  COHORT_RETURN_IF_ERROR(CheckQueueCaps(user, spec.team, count));
  COHORT_RETURN_IF_ERROR(secrets_.CheckReferences(spec, user));
  COHORT_RETURN_IF_ERROR(CheckDependencies(spec));
  COHORT_RETURN_IF_ERROR(QualifyImages(config_.image_registries, spec));
  COHORT_RETURN_IF_ERROR(ApplySessionPolicy(config_.sessions, spec));
  Job job;
  job.spec = std::move(spec);
  job.user = std::move(user);
  job.state = JobState::kPending;
  job.submitted_at = clock_.Now();
  job.message = "waiting for the scheduler";
  job.version = 1;
  job.request_id = request_id;
  job.request_digest = std::move(digest);
  job.trial = std::move(trial);
  Resources total = job.spec.TotalResources();
  JobEvent submitted{
      0, job.submitted_at, "submitted",
      fmt::format("by {}: {} task{}, {}{}{}", job.user, job.spec.TotalReplicas(),
                  job.spec.TotalReplicas() == 1 ? "" : "s", total.ToString(),
                  team_note.empty() ? "" : fmt::format(" ({})", team_note), fallback_note)};
  if (!job.spec.array) {
    COHORT_ASSIGN_OR_RETURN(Job * stored, jobs_.Create(std::move(job), {submitted}));
    spdlog::info("job {} ({}) submitted by {}", stored->id, stored->spec.name, stored->user);
    scheduling_.Arrive(*stored);
    journal_.AnnounceJob(stored->id);
    return *stored;
  }
  // An array: one job per index, written in one commit; the first one's id is the array's.
  Journal::Batch batch(journal_);
  const ArraySpec array = *job.spec.array;
  std::vector<Job*> made;
  for (size_t i = 0; i < array.indices.size(); ++i) {
    Job element = job;
    if (i > 0) element.request_id.clear();  // the first one answers a retry
    element.array = ArrayElement{made.empty() ? 0 : made.front()->id, array.indices[i], count,
                                 array.max_parallel};
    JobEvent event = submitted;
    event.message += fmt::format(" (array index {} of {})", array.indices[i], count);
    COHORT_ASSIGN_OR_RETURN(Job * stored, jobs_.Create(std::move(element), {event}));
    if (made.empty()) {
      // Its own id is the array's: written with its next change, known from the first.
      stored->array->id = stored->id;
    }
    made.push_back(stored);
  }
  jobs_.Commit(*made.front(), {});
  spdlog::info("array {} ({}) of {} jobs submitted by {}", made.front()->id,
               made.front()->spec.name, count, made.front()->user);
  for (Job* stored : made) {
    scheduling_.Arrive(*stored);
    journal_.AnnounceJob(stored->id);
  }
  return *made.front();
}

Status JobLifecycle::CheckDependencies(const JobSpec& spec) const {
  for (size_t i = 0; i < spec.depends_on.size(); ++i) {
    const Dependency& d = spec.depends_on[i];
    const Job* dep = jobs_.Find(d.job);
    const std::string field = fmt::format("depends_on[{}]", i);
    if (!dep) {
      return Status::InvalidArgument("job spec has 1 error",
                                     {fmt::format("{}: job {} does not exist", field, d.job)});
    }
    if (IsTerminal(dep->state) && !DependencyMet(d.on, dep->state == JobState::kSucceeded)) {
      return Status::InvalidArgument(
          "job spec has 1 error",
          {fmt::format("{}: job {} already ended {}; waiting for its {} could never end", field,
                       d.job, JobStateName(dep->state), DependencyConditionName(d.on))});
    }
  }
  return Status::Ok();
}

void JobLifecycle::FailForDependency(Job& job, const std::string& why) {
  scheduling_.ForgetReason(job.id);
  job.state = JobState::kFailed;
  jobs_.Reindex(job);
  job.finished_at = clock_.Now();
  job.message = "dependency never met: " + why;
  spdlog::info("job {}: {}", job.id, job.message);
  jobs_.Commit(job, {jobs_.Event(job, "finished", "FAILED: " + job.message)});
}

void JobLifecycle::DependencyEnded(const Job& ended) {
  if (journal_.read_only()) return;  // checked again once the master writes (CheckDependencies)
  bool may_start = false;
  for (JobId id : jobs_.DependentsOf(ended.id)) {
    Job& job = jobs_.At(id);
    if (auto why = jobs_.DependencyNeverMet(job)) {
      FailForDependency(job, *why);
    } else if (jobs_.DependenciesMet(job)) {
      may_start = true;
    }
  }
  if (may_start) scheduling_.Reschedule();
}

void JobLifecycle::CheckDependencies() {
  std::vector<JobId> waiting;
  for (JobId id : jobs_.pending()) {
    if (!jobs_.At(id).spec.depends_on.empty()) waiting.push_back(id);
  }
  for (JobId id : waiting) {
    Job& job = jobs_.At(id);
    if (auto why = jobs_.DependencyNeverMet(job)) FailForDependency(job, *why);
  }
}

StatusOr<std::vector<const Job*>> JobLifecycle::KillArray(JobId array, const std::string& by) {
  const std::vector<JobId>* ids = jobs_.ArrayJobs(array);
  if (!ids) return Status::NotFound(fmt::format("array {} does not exist", array));
  std::vector<JobId> live;
  for (JobId id : *ids) {
    if (!IsTerminal(jobs_.At(id).state)) live.push_back(id);
  }
  if (live.empty()) {
    return Status::FailedPrecondition(
        fmt::format("every job of array {} has already ended", array));
  }
  Journal::Batch batch(journal_);
  std::vector<const Job*> killed;
  for (JobId id : live) {
    COHORT_ASSIGN_OR_RETURN(const Job* job, Kill(id, by));
    killed.push_back(job);
  }
  return killed;
}

Status JobLifecycle::CheckQueueCaps(const std::string& user, const std::string& team,
                                    int adding) const {
  // An array of N counts as N jobs; one job only needs a free place.
  const int by_user = jobs_.PendingOfUser(user) + adding - 1;
  const int by_team = jobs_.PendingOfTeam(team) + adding - 1;
  const char* next =
      "; wait until some of them start, or kill some (cohort jobs --state pending), or ask an "
      "admin to raise it";
  if (config_.max_queued_per_user > 0 && by_user >= config_.max_queued_per_user) {
    return Status::TooManyRequests(fmt::format(
        "{} has {} jobs waiting to start, the most one user may have queued (cohortd master "
        "--max-queued-per-user {}){}",
        user, by_user, config_.max_queued_per_user, next));
  }
  if (config_.max_queued_per_team > 0 && by_team >= config_.max_queued_per_team) {
    return Status::TooManyRequests(fmt::format(
        "team {} has {} jobs waiting to start, the most one team may have queued (cohortd "
        "master --max-queued-per-team {}){}",
        team, by_team, config_.max_queued_per_team, next));
  }
  return Status::Ok();
}

StatusOr<const Job*> JobLifecycle::Kill(JobId id, const std::string& by) {
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  Job* found = jobs_.Find(id);
  if (!found) return Status::NotFound(fmt::format("job {} does not exist", id));
  Job& job = *found;
  if (IsTerminal(job.state)) {
    return Status::FailedPrecondition(
        fmt::format("job {} has already ended ({})", id, JobStateName(job.state)));
  }
  std::vector<JobEvent> events;
  if (job.state == JobState::kPending) {
    scheduling_.ForgetReason(id);
    job.state = JobState::kKilled;
    jobs_.Reindex(job);
    job.finished_at = clock_.Now();
    job.message = fmt::format("killed while pending by {}", by);
    events.push_back(jobs_.Event(job, "killed", job.message));
  } else {
    Stop(job, JobState::kKilled, fmt::format("killed by {}", by), events);
    FinishIfStopped(job, events);
  }
  COHORT_RETURN_IF_ERROR(jobs_.Persist(job, std::move(events)));
  return &job;
}

void JobLifecycle::Hold(Job& job, std::string reason, std::vector<JobEvent>& events) {
  if (IsTerminal(job.state) || job.hold == reason) return;
  job.hold = std::move(reason);
  if (job.state == JobState::kPending) {
    scheduling_.ForgetReason(job.id);
    job.message = "held: " + job.hold;
    jobs_.Reindex(job);
    events.push_back(jobs_.Event(job, "held", job.hold));
    return;
  }
  events.push_back(jobs_.Event(job, "held", job.hold));
  if (job.state != JobState::kStopping || job.stop_target == JobState::kPending) {
    Stop(job, JobState::kPending, "held: " + job.hold, events);
  }
  FinishIfStopped(job, events);
}

void JobLifecycle::Release(Job& job, std::vector<JobEvent>& events) {
  if (job.hold.empty()) return;
  job.hold.clear();
  events.push_back(jobs_.Event(job, "released", "no longer held"));
  if (job.state != JobState::kPending) return;
  job.message = "waiting for the scheduler";
  jobs_.Reindex(job);
  scheduling_.Arrive(job);
}

void JobLifecycle::Stop(Job& job, JobState target, std::string reason,
                        std::vector<JobEvent>& events) {
  // A kill overrides a pending requeue; a requeue never overrides a kill.
  if (job.state == JobState::kStopping && job.stop_target == JobState::kKilled) return;
  job.state = JobState::kStopping;
  job.stop_target = target;
  job.message = reason;
  scheduling_.cluster().MarkStopping(job.id, job.preempted_for);
  std::set<std::string> nodes;
  for (auto& t : job.tasks) {
    if (IsTerminal(t.state) || t.stop_requested) continue;
    t.stop_requested = true;
    nodes.insert(t.node_id);
  }
  for (const auto& n : nodes) BumpNode(n);
  events.push_back(
      jobs_.Event(job, "stopping",
                  fmt::format("{}; then {}", reason,
                              target == JobState::kPending ? "requeue" : JobStateName(target))));
}

void JobLifecycle::FinishIfStopped(Job& job, std::vector<JobEvent>& events) {
  if (job.state != JobState::kStopping) return;
  for (const auto& t : job.tasks) {
    if (!IsTerminal(t.state)) return;
  }
  JobState target = job.stop_target.value_or(JobState::kFailed);
  Timestamp now = clock_.Now();
  // A requeue is a failure's unless the scheduler (a preemption) or a hold asked for it.
  std::string result = target == JobState::kPending && !job.preempted_for && job.hold.empty()
                           ? "failed: " + job.message
                           : job.message;
  AttemptSummary attempt{job.attempt, job.placed_at, now, result, {}, job.restored_from};
  for (const auto& t : job.tasks) attempt.nodes[t.Name()] = t.node_id;
  RecordAttempt(job, std::move(attempt));
  job.stop_target.reset();
  job.preempted_for.reset();
  scheduling_.cluster().ReleaseJob(job.id);  // every task has ended: it holds nothing
  if (target == JobState::kPending) {
    job.state = JobState::kPending;
    job.tasks.clear();
    job.placed_at.reset();
    job.running_at.reset();
    job.message = job.hold.empty()
                      ? fmt::format("requeued after attempt {} ({})", job.attempt, result)
                      : fmt::format("held after attempt {}: {}", job.attempt, job.hold);
    if (SchedulingLoop::BackingOff(job, now)) {
      job.message += fmt::format("; restart backoff: the next attempt starts in {} at the earliest",
                                 FormatDuration(*job.not_before - now));
      scheduling_.NoteBackoff(job);
    }
    events.push_back(jobs_.Event(job, "requeued", job.message));
  } else {
    job.state = target;
    job.finished_at = now;
    jobs_.NoteEnd(job);
    events.push_back(
        jobs_.Event(job, "finished", fmt::format("{}: {}", JobStateName(target), job.message)));
  }
  jobs_.Reindex(job);
  scheduling_.Reschedule();
}

framework::JobDirectories JobLifecycle::DirectoriesOf(const Job& job) const {
  std::string base = fmt::format("{}/jobs/{}", config_.storage_root, job.id);
  return framework::JobDirectories{base + "/checkpoints", base + "/outputs", base + "/logs"};
}

Status JobLifecycle::Start(Job& job, const JobPlacement& placement) {
  std::vector<TaskRequest> requests = TaskRequestsOf(job);
  std::vector<Task> tasks;
  std::set<std::string> nodes;
  for (size_t i = 0; i < requests.size(); ++i) {
    NodeRegistry::Entry& entry = nodes_.At(placement.tasks[i].node_id);
    Task t;
    t.role = requests[i].role;
    t.index = requests[i].index;
    t.rank = static_cast<int>(i);
    t.resources = requests[i].resources;
    t.node_id = placement.tasks[i].node_id;
    t.host = entry.node.info.address;
    t.gpus = placement.tasks[i].gpus;
    t.port = AssignPort(entry);
    if (t.port == 0) {
      return Status::Unavailable(fmt::format("node {} has no free port in {}-{}", t.node_id,
                                             entry.node.info.ports.first,
                                             entry.node.info.ports.last));
    }
    tasks.push_back(std::move(t));
    nodes.insert(placement.tasks[i].node_id);
  }
  for (const auto& n : nodes) COHORT_RETURN_IF_ERROR(FitsDesiredState(job, tasks, 0, n));
  // The job's directories on the storage root are made by the agent of each task before it
  // starts, for the job's account (agent/job_directories.h): four mkdirs here on the event loop
  // were a tenth of a submission's time in a burst.
  scheduling_.ForgetReason(job.id);
  job.attempt += 1;
  job.not_before.reset();
  std::erase_if(job.excluded_nodes, [&](const auto& e) { return e.second <= clock_.Now(); });
  job.tasks = std::move(tasks);
  job.state = JobState::kStarting;
  jobs_.Reindex(job);
  job.placed_at = clock_.Now();
  job.running_at.reset();
  job.restored_from.reset();  // until its agent says what this attempt started from
  for (auto& t : job.tasks) {
    t.held_since = job.placed_at;
    jobs_.NoteHold(job, t);
  }
  std::vector<std::string> where;
  for (const auto& n : nodes) {
    uint64_t version = BumpNode(n);
    for (auto& t : job.tasks) {
      if (t.node_id == n) t.assigned_version = version;
    }
  }
  for (const auto& t : job.tasks) {
    std::vector<std::string> gpus;
    for (int g : t.gpus) gpus.push_back(std::to_string(g));
    where.push_back(fmt::format("{} on {} (GPUs {}, port {})", t.Name(), t.node_id,
                                gpus.empty() ? "none" : Join(gpus, ","), t.port));
  }
  job.message = fmt::format("attempt {} starting on {}", job.attempt,
                            Join(std::vector<std::string>(nodes.begin(), nodes.end()), ", "));
  spdlog::info("job {} attempt {} placed: {}", job.id, job.attempt, Join(where, "; "));
  if (job.spec.elastic()) scheduling_.RequestSchedule();  // it may grow at once into what is idle
  return jobs_.Persist(
      job,
      {jobs_.Event(job, "placed", fmt::format("attempt {}: {}", job.attempt, Join(where, "; ")))});
}

void JobLifecycle::EndAttemptEarly(Job& job, RestartCause cause, std::string reason,
                                   std::vector<JobEvent>& events) {
  const RestartPolicy& policy = job.spec.restart;
  EarlyEnd end = policy.EndEarly(cause, job.failures);
  if (!end.restartable) {
    Stop(job, JobState::kFailed,
         fmt::format("{} (restart.on does not include {})", reason, RestartCauseName(cause)),
         events);
    return;
  }
  job.failures = end.failures;
  reason += fmt::format(" (attempt {} ended early; {} of at most {} failed attempt{})", job.attempt,
                        job.failures, policy.max_attempts, policy.max_attempts == 1 ? "" : "s");
  // Measured from now, not from when the gang is gone: a stop takes at most its grace period.
  if (end.backoff) job.not_before = clock_.Now() + *end.backoff;
  Stop(job, end.requeue ? JobState::kPending : JobState::kFailed, reason, events);
}

void JobLifecycle::CannotStart(Job& job, const std::string& node_id, StartFailure kind,
                               std::string reason, std::vector<JobEvent>& events) {
  // Only a requeue gives way: a kill, a success or a failure already decided stays.
  bool stopping = job.state == JobState::kStopping;
  if (stopping && job.stop_target != JobState::kPending) return;
  if (ScopeOf(kind) == StartFailureScope::kEverywhere) {
    Stop(job, JobState::kFailed,
         reason + " (no retry can start it: not retried, the restart budget is not spent)", events);
    return;
  }
  job.excluded_nodes[node_id] = kExcludedForGood;
  // The nodes it could not start on: an exclusion for idle GPUs ends, so it does not count here.
  std::vector<std::string> excluded;
  for (const auto& [node, until] : job.excluded_nodes) {
    if (until == kExcludedForGood) excluded.push_back(node);
  }
  Constraints where = PlacementConstraints(job.spec);
  where.excluded_nodes.insert(excluded.begin(), excluded.end());
  bool left = std::any_of(nodes_.all().begin(), nodes_.all().end(), [&](const auto& entry) {
    const NodeInfo& n = entry.second.node.info;
    return where.Admits(n.id, n.GpuModel(), n.labels);
  });
  if (!left) {
    Stop(job, JobState::kFailed,
         fmt::format("{} (no node is left to try: it could not start on {})", reason,
                     Join(excluded, ", ")),
         events);
    return;
  }
  // Already stopping to be requeued (another task's failure): the exclusion holds for the next
  // attempt all the same.
  if (stopping) return;
  Stop(job, JobState::kPending,
       fmt::format("{} ({} is excluded for this job, which is placed elsewhere; the restart budget "
                   "is not spent)",
                   reason, node_id),
       events);
}

bool JobLifecycle::Grow(const Growth& growth) {
  Job& job = jobs_.At(growth.job_id);
  std::set<std::string> nodes;
  std::vector<std::string> added;
  for (size_t i = 0; i < growth.tasks.size(); ++i) {
    NodeRegistry::Entry& entry = nodes_.At(growth.placement[i].node_id);
    Task t;
    t.role = growth.tasks[i].role;
    t.index = growth.tasks[i].index;
    t.rank = static_cast<int>(job.tasks.size());
    t.resources = growth.tasks[i].resources;
    t.node_id = growth.placement[i].node_id;
    t.host = entry.node.info.address;
    t.gpus = growth.placement[i].gpus;
    t.port = AssignPort(entry);
    if (t.port == 0) {
      scheduling_.cluster().ReleaseTask(job.id, t.role,
                                        t.index);  // no port for it: it does not start
      continue;
    }
    std::vector<Task> grown = job.tasks;
    grown.push_back(t);
    if (Status fits = FitsDesiredState(job, grown, grown.size() - 1, t.node_id); !fits.ok()) {
      spdlog::warn("job {}: {} does not grow: {}", job.id, t.Name(), fits.message());
      scheduling_.cluster().ReleaseTask(job.id, t.role, t.index);
      continue;
    }
    t.started_at = clock_.Now();
    t.held_since = t.started_at;
    nodes.insert(t.node_id);
    added.push_back(fmt::format("{} on {}", t.Name(), t.node_id));
    jobs_.NoteHold(job, t);
    job.tasks.push_back(std::move(t));
  }
  for (const auto& n : nodes) {
    uint64_t version = BumpNode(n);
    for (auto& t : job.tasks) {
      if (t.node_id == n && t.assigned_version == 0) t.assigned_version = version;
    }
  }
  std::vector<std::string> counts;
  for (const auto& g : job.spec.tasks) {
    if (!g.elastic()) continue;
    int n = static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(), [&](const Task& t) {
      return t.role == g.role && !t.scaled_down && !IsTerminal(t.state);
    }));
    counts.push_back(fmt::format("{} {} of {}..{}", n, g.role, g.replicas, g.max_replicas));
  }
  spdlog::info("job {} grew: {}", job.id, Join(added, "; "));
  jobs_.Commit(job, {jobs_.Event(job, "grown",
                                 fmt::format("{} into idle GPUs; now {}", Join(added, ", "),
                                             Join(counts, ", ")))});
  return true;
}

void JobLifecycle::Shrink(const cohort::Shrink& shrink) {
  Job* found = jobs_.Find(shrink.job_id);
  if (!found) return;
  Job& job = *found;
  if (job.state != JobState::kRunning && job.state != JobState::kStarting) return;
  std::set<std::string> nodes;
  std::vector<std::string> names;
  for (auto& t : job.tasks) {
    if (t.role != shrink.role || IsTerminal(t.state) || t.stop_requested) continue;
    if (std::find(shrink.indices.begin(), shrink.indices.end(), t.index) == shrink.indices.end()) {
      continue;
    }
    t.stop_requested = true;
    t.scaled_down = true;
    nodes.insert(t.node_id);
  }
  for (int index : shrink.indices) {  // highest first, as the scheduler chose them
    for (const auto& t : job.tasks) {
      if (t.role == shrink.role && t.index == index && t.scaled_down) names.push_back(t.Name());
    }
  }
  if (names.empty()) return;
  for (const auto& n : nodes) BumpNode(n);
  spdlog::info("job {} shrinks: {}", job.id, shrink.reason);
  jobs_.Commit(job, {jobs_.Event(job, "shrunk",
                                 fmt::format("{} stopped: {}", Join(names, ", "), shrink.reason))});
}

int64_t JobLifecycle::GroupTextBytes(const Job& job, const std::string& role) const {
  for (const auto& g : job.spec.tasks) {
    // Each launch also carries the store's access for the job's checkpoints, and its datasets.
    if (g.role == role) {
      return TaskTextBytes(g, secrets_.ValueBytes(job.spec, job.user, g)) +
             kLaunchStoreAccessBytes + LaunchDataBytes(job.spec);
    }
  }
  return 0;
}

int64_t JobLifecycle::NodeTextBytes(const std::string& node_id) const {
  int64_t bytes = 0;
  for (JobId id : jobs_.active()) {
    const Job& job = jobs_.At(id);
    std::optional<int64_t> env;  // the same for each of the job's tasks
    for (const auto& t : job.tasks) {
      // As the node's desired state lists them (Reconciler::DesiredFor).
      if (t.node_id != node_id || IsTerminal(t.state) || t.stop_requested) continue;
      if (!env) env = framework::EnvironmentBytesBound(job.spec, job.tasks, DirectoriesOf(job));
      bytes += GroupTextBytes(job, t.role) + *env;
    }
  }
  return bytes;
}

Status JobLifecycle::FitsDesiredState(const Job& job, const std::vector<Task>& tasks,
                                      size_t first_new, const std::string& node_id) const {
  int64_t env = framework::EnvironmentBytesBound(job.spec, tasks, DirectoriesOf(job));
  int64_t adding = 0;
  int n = 0;
  for (size_t i = first_new; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.node_id != node_id) continue;
    adding += GroupTextBytes(job, t.role) + env;
    ++n;
  }
  if (n == 0) return Status::Ok();
  int64_t there = NodeTextBytes(node_id);
  if (there + adding <= kMaxNodeTaskTextBytes) return Status::Ok();
  return Status::Unavailable(fmt::format(
      "{} task{} on node {} would bring its desired state to {} (each task's command, env and "
      "workdir, with Cohort's variables; {} of it there already), over the {} limit of one "
      "node's (docs/job-spec.md, \"Limits\"); the job waits",
      n, n == 1 ? "" : "s", node_id, FormatByteSizeApprox(there + adding),
      FormatByteSizeApprox(there), FormatByteSize(kMaxNodeTaskTextBytes)));
}

int JobLifecycle::AssignPort(NodeRegistry::Entry& entry) {
  std::set<int> used;
  for (JobId id : jobs_.active()) {
    for (const auto& t : jobs_.At(id).tasks) {
      if (t.node_id == entry.node.info.id && !IsTerminal(t.state)) used.insert(t.port);
    }
  }
  return NodeRegistry::AssignPort(entry, used);
}

void JobLifecycle::Preempt(const Preemption& preemption) {
  const Job& victim = jobs_.At(preemption.victim);
  const Duration warning = WarningOf(config_.sessions, victim.spec);
  // A session is never preempted without a warning first: its people hear of it now, and it
  // stops when the warning is over (PreemptWarnedSessions).
  if (victim.spec.session && warning > Duration::zero()) {
    const Timestamp now = clock_.Now();
    auto [it, added] =
        warned_preemptions_.try_emplace(victim.id, WarnedPreemption{preemption, now + warning});
    if (!added) return;
    std::string text = fmt::format("to be preempted for job {} in {}: {}", preemption.for_job,
                                   FormatDuration(warning), preemption.reason);
    spdlog::info("session {}: {}", victim.id, text);
    jobs_.Commit(jobs_.At(victim.id), {jobs_.Event(victim, "warning", text)});
    if (session_notify_) session_notify_(victim.id, text + "; save your work");
    return;
  }
  PreemptNow(preemption);
}

void JobLifecycle::PreemptWarnedSessions(Timestamp now) {
  for (auto it = warned_preemptions_.begin(); it != warned_preemptions_.end();) {
    const Job* job = jobs_.Find(it->first);
    if (!job || job->state != JobState::kRunning) {
      it = warned_preemptions_.erase(it);  // it ended or stopped meanwhile
      continue;
    }
    if (it->second.due > now) {
      ++it;
      continue;
    }
    Preemption preemption = it->second.preemption;
    it = warned_preemptions_.erase(it);
    PreemptNow(preemption);
  }
}

void JobLifecycle::EndIdleSession(Job& job, const std::string& reason,
                                  std::vector<JobEvent>& events) {
  size_t first_event = events.size();
  Stop(job, JobState::kKilled, reason, events);
  if (events.size() > first_event) events.back().type = "reclaimed";
  spdlog::info("session {}: {}", job.id, reason);
  FinishIfStopped(job, events);
}

void JobLifecycle::PreemptNow(const Preemption& preemption) {
  Job& job = jobs_.At(preemption.victim);
  std::vector<JobEvent> events;
  ++job.preemptions;
  job.preempted_for = preemption.for_job;
  if (job.spec.restart.RestartsOn(RestartCause::kPreempted)) {
    Stop(job, JobState::kPending, preemption.reason, events);
  } else {
    Stop(job, JobState::kFailed, preemption.reason + " (restart.on does not include preempted)",
         events);
  }
  // A job stopping for a kill stays so, and says nothing new (Stop).
  if (!events.empty()) events.back().type = "preempted";
  spdlog::info("job {}: {}", job.id, preemption.reason);
  FinishIfStopped(job, events);
  jobs_.Commit(job, std::move(events));
}

void JobLifecycle::ReclaimIdle(Job& job, const std::string& finding, Duration idle,
                               std::vector<JobEvent>& events) {
  std::string reason =
      fmt::format("idle GPUs reclaimed: {} (the master runs with --reclaim-idle-gpus)", finding);
  size_t first_event = events.size();
  if (!job.spec.restart.RestartsOn(RestartCause::kPreempted)) {
    Stop(job, JobState::kFailed, reason + "; it ends: restart.on does not include preempted",
         events);
  } else if (job.idle_reclaims > 0) {
    Stop(job, JobState::kFailed,
         reason +
             "; it ends: its idle GPUs were reclaimed before, and a job is requeued for "
             "that only once",
         events);
  } else {
    ++job.idle_reclaims;
    ++job.preemptions;
    Timestamp until = clock_.Now() + idle;
    std::set<std::string> nodes;
    for (const auto& t : job.tasks) {
      if (!IsTerminal(t.state)) nodes.insert(t.node_id);
    }
    for (const auto& n : nodes) job.excluded_nodes[n] = until;
    Stop(job, JobState::kPending,
         fmt::format("{}; kept off {} {} until {}", reason, nodes.size() == 1 ? "node" : "nodes",
                     Join(std::vector<std::string>(nodes.begin(), nodes.end()), ", "),
                     FormatTimestamp(until)),
         events);
    scheduling_.NoteExclusion(job);
  }
  if (events.size() > first_event) events.back().type = "reclaimed";
  spdlog::info("job {}: {}", job.id, job.message);
  FinishIfStopped(job, events);
}

void JobLifecycle::StopOverdue(Timestamp now) {
  std::vector<JobId> active(jobs_.active().begin(), jobs_.active().end());
  for (JobId id : active) {
    Job& job = jobs_.At(id);
    if (!job.spec.max_runtime || !job.placed_at) continue;
    if (job.state != JobState::kStarting && job.state != JobState::kRunning) continue;
    if (now - *job.placed_at <= *job.spec.max_runtime) continue;
    std::vector<JobEvent> events;
    Stop(job, JobState::kFailed,
         fmt::format("exceeded its max_runtime of {}", FormatDuration(*job.spec.max_runtime)),
         events);
    FinishIfStopped(job, events);
    jobs_.Commit(job, std::move(events));
  }
}

}  // namespace cohort::master
