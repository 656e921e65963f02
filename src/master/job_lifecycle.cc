// The job lifecycle: submission, kill, stopping a gang and what it becomes once every task is gone,
// and starting an attempt on a placement.
#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"
#include "common/units.h"
#include "master/job_views.h"
#include "model/job_spec_parser.h"

namespace cohort::master {

StatusOr<Job> Master::Submit(JobSpec spec, std::string user, std::string request_id,
                             bool* replayed) {
  if (replayed) *replayed = false;
  std::string digest;
  if (!request_id.empty()) {
    digest = SpecDigest(spec);
    auto seen = requests_.find({user, request_id});
    if (seen != requests_.end()) {
      const Job& first = jobs_.at(seen->second);
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
  bool known = TeamExists(spec.team);
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
  COHORT_RETURN_IF_ERROR(CheckSecretReferences(spec, user));
  Job job;
  job.spec = std::move(spec);
  job.user = std::move(user);
  job.state = JobState::kPending;
  job.submitted_at = clock_.Now();
  job.message = "waiting for the scheduler";
  job.version = 1;
  job.request_id = request_id;
  job.request_digest = std::move(digest);
  Resources total = job.spec.TotalResources();
  JobEvent submitted{
      0, job.submitted_at, "submitted",
      fmt::format("by {}: {} task{}, {}{}", job.user, job.spec.TotalReplicas(),
                  job.spec.TotalReplicas() == 1 ? "" : "s", total.ToString(), fallback_note)};
  COHORT_ASSIGN_OR_RETURN(Job stored, store_->CreateJob(std::move(job), {submitted}));
  last_reasons_.erase(stored.id);
  JobId id = stored.id;
  pending_.insert(id);
  if (!request_id.empty()) requests_[{stored.user, request_id}] = id;
  auto [it, inserted] = jobs_.emplace(id, std::move(stored));
  COHORT_CHECK(inserted);
  spdlog::info("job {} ({}) submitted by {}", id, it->second.spec.name, it->second.user);
  if (Incremental()) {
    std::string reason;
    auto placement = dispatcher_.Arrive(cluster_, PendingOf(it->second), clock_.Now(), &reason);
    if (!placement || !StartDecided(it->second, *placement)) it->second.message = reason;
    if (!Incremental()) RequestSchedule();  // the decision could not be carried out
  } else {
    RequestSchedule();
  }
  AnnounceJob(id);
  return it->second;
}

StatusOr<const Job*> Master::Kill(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound(fmt::format("job {} does not exist", id));
  Job& job = it->second;
  if (IsTerminal(job.state)) {
    return Status::FailedPrecondition(
        fmt::format("job {} has already ended ({})", id, JobStateName(job.state)));
  }
  std::vector<JobEvent> events;
  if (job.state == JobState::kPending) {
    pending_.erase(id);
    last_reasons_.erase(id);
    job.state = JobState::kKilled;
    job.finished_at = clock_.Now();
    job.message = "killed while pending";
    events.push_back(Event(job, "killed", "killed while pending"));
  } else {
    StopJob(job, JobState::kKilled, "killed by request", events);
    FinishIfStopped(job, events);
  }
  COHORT_RETURN_IF_ERROR(Persist(job, std::move(events)));
  return &job;
}

void Master::StopJob(Job& job, JobState target, std::string reason, std::vector<JobEvent>& events) {
  // A kill overrides a pending requeue; a requeue never overrides a kill.
  if (job.state == JobState::kStopping && job.stop_target == JobState::kKilled) return;
  job.state = JobState::kStopping;
  job.stop_target = target;
  job.message = reason;
  cluster_.MarkStopping(job.id, job.preempted_for);
  std::set<std::string> nodes;
  for (auto& t : job.tasks) {
    if (IsTerminal(t.state) || t.stop_requested) continue;
    t.stop_requested = true;
    nodes.insert(t.node_id);
  }
  for (const auto& n : nodes) BumpNode(n);
  events.push_back(
      Event(job, "stopping",
            fmt::format("{}; then {}", reason,
                        target == JobState::kPending ? "requeue" : JobStateName(target))));
}

void Master::FinishIfStopped(Job& job, std::vector<JobEvent>& events) {
  if (job.state != JobState::kStopping) return;
  for (const auto& t : job.tasks) {
    if (!IsTerminal(t.state)) return;
  }
  JobState target = job.stop_target.value_or(JobState::kFailed);
  Timestamp now = clock_.Now();
  std::string result =
      target == JobState::kPending && !job.preempted_for ? "failed: " + job.message : job.message;
  RecordAttempt(job, AttemptSummary{job.attempt, job.placed_at, now, result});
  job.stop_target.reset();
  job.preempted_for.reset();
  active_.erase(job.id);
  checkpoint_taken_at_.erase(job.id);
  cluster_.ReleaseJob(job.id);  // every task has ended: it holds nothing
  if (target == JobState::kPending) {
    job.state = JobState::kPending;
    job.tasks.clear();
    job.placed_at.reset();
    job.running_at.reset();
    job.message = fmt::format("requeued after attempt {} ({})", job.attempt, result);
    if (BackingOff(job, now)) {
      job.message += fmt::format("; restart backoff: the next attempt starts in {} at the earliest",
                                 FormatDuration(*job.not_before - now));
      NoteBackoff(job);
    }
    pending_.insert(job.id);
    events.push_back(Event(job, "requeued", job.message));
  } else {
    job.state = target;
    job.finished_at = now;
    NoteEnd(job);
    events.push_back(
        Event(job, "finished", fmt::format("{}: {}", JobStateName(target), job.message)));
  }
  Reschedule();
}

framework::JobDirectories Master::DirectoriesOf(const Job& job) const {
  std::string base = fmt::format("{}/jobs/{}", config_.storage_root, job.id);
  return framework::JobDirectories{base + "/checkpoints", base + "/outputs", base + "/logs"};
}

Status Master::ApplyPlacement(Job& job, const JobPlacement& placement) {
  std::vector<TaskRequest> requests = TaskRequestsOf(job);
  std::vector<Task> tasks;
  std::set<std::string> nodes;
  for (size_t i = 0; i < requests.size(); ++i) {
    NodeEntry& entry = nodes_.At(placement.tasks[i].node_id);
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
  // The job's directories on the storage root are made by the agent of each task before it
  // starts, for the job's account (agent/job_directories.h): four mkdirs here on the event loop
  // were a tenth of a submission's time in a burst.
  pending_.erase(job.id);
  last_reasons_.erase(job.id);
  active_.insert(job.id);
  job.attempt += 1;
  job.not_before.reset();
  job.tasks = std::move(tasks);
  job.state = JobState::kStarting;
  job.placed_at = clock_.Now();
  job.running_at.reset();
  for (auto& t : job.tasks) {
    t.held_since = job.placed_at;
    NoteHold(job, t);
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
  if (job.spec.elastic()) RequestSchedule();  // it may grow at once into what is idle
  return Persist(
      job, {Event(job, "placed", fmt::format("attempt {}: {}", job.attempt, Join(where, "; ")))});
}

}  // namespace cohort::master
