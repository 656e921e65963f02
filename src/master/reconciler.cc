#include "master/reconciler.h"

#include "auth/job_credential.h"

#include "store/dataset_layout.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"
#include "common/units.h"

namespace cohort::master {

namespace {

std::string DescribeExit(const Task& t, const std::string& lost_why) {
  if (t.state == TaskState::kLost) {
    return lost_why.empty() ? fmt::format("{} was lost by its agent on {}", t.Name(), t.node_id)
                            : fmt::format("{} was lost: {}", t.Name(), lost_why);
  }
  if (t.signal) return fmt::format("{} was killed by signal {}", t.Name(), *t.signal);
  if (t.exit_code) return fmt::format("{} exited with code {}", t.Name(), *t.exit_code);
  return fmt::format("{} ended", t.Name());
}

// An agent that did not start the task says why ("no Unix account ..."), as one that ended it
// does ("exceeded its memory limit ...", "fenced: ...").
std::string DescribeReportedEnd(const Task& t, const TaskReport& report,
                                const std::string& lost_why) {
  if (report.start_failure) {
    return fmt::format("{} could not start on {}: {}", t.Name(), t.node_id, report.message);
  }
  if (report.message.empty()) return DescribeExit(t, lost_why);
  if (!report.signal && report.exit_code == 126) {
    return fmt::format("{} did not start: {}", t.Name(), report.message);
  }
  return fmt::format("{}: {}", DescribeExit(t, lost_why), report.message);
}

}  // namespace

Reconciler::Reconciler(const MasterConfig& config, JobBook& jobs, NodeRegistry& nodes,
                       SchedulingLoop& scheduling, JobLifecycle& lifecycle, Journal& journal,
                       Accounts& accounts, TaskSecrets& secrets, Artifacts& artifacts,
                       const Clock& clock)
    : config_(config),
      jobs_(jobs),
      nodes_(nodes),
      scheduling_(scheduling),
      lifecycle_(lifecycle),
      journal_(journal),
      accounts_(accounts),
      secrets_(secrets),
      artifacts_(artifacts),
      clock_(clock) {}

StatusOr<DesiredState> Reconciler::Register(NodeInfo info) {
  COHORT_RETURN_IF_ERROR(journal_.CheckWritable());
  Timestamp now = clock_.Now();
  std::string id = info.id;
  const NodeRegistry::Entry* known = nodes_.Find(id);
  // An agent that lost its data directory (re-imaged, disk replaced) comes back as another
  // instance: what the master placed there is gone, and must never be started again.
  bool wiped =
      known && !known->node.info.instance.empty() && known->node.info.instance != info.instance;
  // Written first: if the store refuses, nothing in memory has changed.
  Node node = known ? known->node : Node{};
  if (!known) node.registered_at = now;
  node.info = std::move(info);
  // A lost node may still run tasks of attempts that ended: it is offered work again only once
  // a sync shows it runs nothing the master does not want (Sync).
  if (node.state != NodeState::kLost) node.state = NodeState::kReady;
  node.last_seen = now;
  COHORT_RETURN_IF_ERROR(journal_.store().SaveNode(node));
  bool again = known != nullptr;
  NodeRegistry::Entry& entry = nodes_.Put(std::move(node), clock_.Monotonic());
  if (again) {
    spdlog::info("node {} registered again{}", id,
                 wiped ? " without its tasks (its agent has a new data directory)" : "");
  } else {
    spdlog::info("node {} registered: {}", id, entry.node.info.Capacity().ToString());
  }
  resources_.ForgetNode(id);  // its GPUs may not be the ones it had
  scheduling_.PutNode(entry);
  scheduling_.InvalidateResidue();
  if (wiped) {
    COHORT_RETURN_IF_ERROR(LoseTasksOn(
        id, fmt::format("node {} came back without its tasks (its agent has a new data directory)",
                        id)));
  }
  return DesiredFor(id);
}

void Reconciler::ApplyTaskReport(Job& job, Task& task, const TaskReport& report,
                                 const std::string& lost_why, std::vector<JobEvent>& events) {
  if (IsTerminal(task.state)) return;  // already recorded
  if (report.state == TaskState::kRunning) {
    if (task.state == TaskState::kAssigned) {
      task.state = TaskState::kRunning;
      task.started_at = report.started_at.value_or(clock_.Now());
    }
    if (report.pid) task.pid = report.pid;  // the first report may come before the pid is known
    return;
  }
  if (!IsTerminal(report.state)) return;
  task.state = report.state;
  task.exit_code = report.exit_code;
  task.signal = report.signal;
  if (report.pid) task.pid = report.pid;
  task.finished_at = report.finished_at.value_or(clock_.Now());
  std::string what = DescribeReportedEnd(task, report, lost_why);
  events.push_back(jobs_.Event(job, task.state == TaskState::kLost ? "task_lost" : "task_ended",
                               fmt::format("{}: {}", TaskStateName(task.state), what)));
  // Before the check for a stopping job: a cause of the node's excludes it even then.
  if (report.start_failure && task.state == TaskState::kFailed && !task.scaled_down) {
    lifecycle_.CannotStart(job, task.node_id, *report.start_failure, std::move(what), events);
    return;
  }
  if (job.state == JobState::kStopping) return;
  // A replica taken away from an elastic job: its end changes nothing else.
  if (task.scaled_down) return;
  if (task.state == TaskState::kSucceeded) {
    bool all_done = true;
    bool workers_done = true;  // TensorFlow: parameter servers never exit on their own
    for (const auto& t : job.tasks) {
      if (t.scaled_down) continue;
      if (t.state != TaskState::kSucceeded) {
        all_done = false;
        if (t.role != "ps") workers_done = false;
      }
    }
    if (all_done) {
      job.state = JobState::kStopping;
      job.stop_target = JobState::kSucceeded;
      job.message = "every task succeeded";
    } else if (workers_done && job.spec.framework == Framework::kTensorFlow) {
      lifecycle_.Stop(job, JobState::kSucceeded,
                      "every worker succeeded; stopping parameter servers", events);
    } else if (auto why = framework::SuccessEndsJob(job, task)) {
      // MPI's launcher, a Slurm job's batch script: the other tasks only serve it.
      lifecycle_.Stop(job, JobState::kSucceeded, *why, events);
    }
    return;
  }
  // One task of a gang failed or was lost: the whole gang stops, and is retried within its
  // budget.
  lifecycle_.EndAttemptEarly(
      job, task.state == TaskState::kLost ? RestartCause::kNodeLost : RestartCause::kFailure,
      std::move(what), events);
}

void Reconciler::RecordTaskReport(TaskEnds& ends, Job& job, Task& t, const TaskReport& r,
                                  const std::string& lost_why) {
  TaskState before = t.state;
  int64_t pid = t.pid;
  auto& job_events = ends.events[job.id];
  size_t count = job_events.size();
  ApplyTaskReport(job, t, r, lost_why, job_events);
  if (t.state != before || t.pid != pid || job_events.size() != count) ends.changed.insert(job.id);
  // A task that ended gave its resources back: someone may be waiting for them.
  if (!IsTerminal(before) && IsTerminal(t.state)) {
    scheduling_.cluster().ReleaseTask(job.id, t.role, t.index);
    jobs_.NoteHold(job, t);
    ends.released.emplace_back(job.id, t);
  }
}

Status Reconciler::Conclude(TaskEnds& ends) {
  Timestamp now = clock_.Now();
  bool freed = false;
  for (JobId id : ends.changed) {
    Job& job = jobs_.At(id);
    auto& job_events = ends.events[id];
    if (job.state == JobState::kStarting) {
      bool all_running = std::all_of(job.tasks.begin(), job.tasks.end(), [](const Task& t) {
        return t.state == TaskState::kRunning || t.scaled_down;
      });
      if (all_running) {
        job.state = JobState::kRunning;
        job.running_at = now;
        job.message = fmt::format("attempt {} running", job.attempt);
        job_events.push_back(
            jobs_.Event(job, "running", fmt::format("all {} tasks running", job.tasks.size())));
      }
    }
    lifecycle_.FinishIfStopped(job, job_events);
    if (!jobs_.IsActive(id)) freed = true;
    COHORT_RETURN_IF_ERROR(jobs_.Persist(job, std::move(job_events)));
  }
  scheduling_.Released(ends.released);
  if (freed) scheduling_.Reschedule();
  return Status::Ok();
}

StatusOr<DesiredState> Reconciler::Sync(const std::string& node_id, const AgentReport& report) {
  NodeRegistry::Entry* found = nodes_.Find(node_id);
  if (!found) return Status::NotFound(fmt::format("node {} is not registered", node_id));
  // Every job the report changes, and what starts in what it frees, in one commit; the answer
  // below is read once it is durable.
  std::optional<Journal::Batch> batch(std::in_place, journal_);
  NodeRegistry::Entry& entry = *found;
  Timestamp now = clock_.Now();
  entry.node.last_seen = now;
  entry.heard_at = clock_.Monotonic();
  if (!journal_.CheckWritable().ok()) return HeardWhileReadOnly(node_id, report);

  TaskEnds ends;
  std::set<TaskId> reported;
  std::map<TaskId, std::vector<TaskSample>> task_samples;  // of the tasks the master has here
  for (const auto& r : report.tasks) {
    reported.insert(r.id);
    Job* found_job = jobs_.Find(r.id.job);
    if (!found_job) continue;
    Job& job = *found_job;
    if (job.attempt != r.id.attempt) continue;  // an earlier attempt's task: nothing to record
    for (auto& t : job.tasks) {
      if (t.role == r.id.role && t.index == r.id.index && t.node_id == node_id) {
        task_samples[r.id] = r.samples;
        RecordTaskReport(ends, job, t, r);
        if (r.checkpoint_at && NoteCheckpoint(job, *r.checkpoint_at)) ends.changed.insert(job.id);
        if (r.image_pull && NoteImagePull(job, t, node_id, *r.image_pull, ends.events[job.id])) {
          ends.changed.insert(job.id);
        }
        if (r.restored_from && !job.restored_from) {
          job.restored_from = r.restored_from;
          ends.events[job.id].push_back(
              jobs_.Event(job, "checkpoint", "started from " + DescribeRestored(*r.restored_from)));
          ends.changed.insert(job.id);
        }
      }
    }
  }
  std::erase_if(pulls_announced_, [&](const auto& p) { return !jobs_.IsActive(p.first.job); });
  resources_.Record(node_id, RegisteredGpuSamples(entry, report), task_samples);
  scheduling_.NoteDatasets(node_id, report.cached_datasets, report.prefetch_failures);
  scheduling_.NoteImages(node_id, report.cached_images);
  // Tasks this agent has applied but no longer reports: it lost them.
  for (JobId id : jobs_.active()) {
    Job& job = jobs_.At(id);
    for (auto& t : job.tasks) {
      if (t.node_id != node_id || IsTerminal(t.state)) continue;
      if (t.assigned_version > report.applied_version) continue;  // not applied yet
      if (reported.count(job.IdOf(t))) continue;
      TaskReport lost{job.IdOf(t), TaskState::kLost, std::nullopt, std::nullopt,
                      0,           std::nullopt,     now};
      RecordTaskReport(ends, job, t, lost,
                       fmt::format("its agent on {} no longer knows it", node_id));
    }
  }
  COHORT_RETURN_IF_ERROR(Conclude(ends));
  COHORT_ASSIGN_OR_RETURN(UploadVerdicts uploads, artifacts_.Apply(node_id, report.uploads));
  batch.reset();  // committed: the answer may now tell the agent to forget what it reported

  COHORT_ASSIGN_OR_RETURN(DesiredState desired, DesiredFor(node_id));
  uploads.AddTo(desired);
  // Ended tasks are now recorded (or were never ours): the agent may forget them.
  std::set<TaskId> wanted;
  for (const auto& t : desired.tasks) wanted.insert(t.id);
  bool clean = true;  // it runs nothing the master does not want
  for (const auto& r : report.tasks) {
    if (IsTerminal(r.state) && !wanted.count(r.id)) desired.forget.push_back(r.id);
    if (!IsTerminal(r.state) && !wanted.count(r.id)) clean = false;
  }
  // ...and will not start anything it should not: an answer it has yet to read (the long poll
  // of an agent that was paused) may name tasks given up since, but once it has applied the
  // latest version it takes no answer made before (Agent::Apply).
  if (report.applied_version < desired.version) clean = false;
  if (entry.node.state != NodeState::kReady) {
    if (entry.node.state == NodeState::kLost && !clean) {
      spdlog::info("node {} is back; it gets new work once it runs only what it should", node_id);
    } else {
      spdlog::info("node {} is ready", node_id);
      SetNodeState(entry, NodeState::kReady);
    }
  }
  return desired;
}

StatusOr<DesiredState> Reconciler::HeardWhileReadOnly(const std::string& node_id,
                                                      const AgentReport& report) {
  // The node is heard (memory only) and its samples kept; what its tasks did is recorded once
  // the master writes again: the agent reports an ended task until it is told to forget it,
  // which an answer without `forget` does not do.
  std::map<TaskId, std::vector<TaskSample>> task_samples;
  for (const auto& r : report.tasks) {
    const Job* job = jobs_.Find(r.id.job);
    if (!job || job->attempt != r.id.attempt) continue;
    for (const auto& t : job->tasks) {
      if (t.role == r.id.role && t.index == r.id.index && t.node_id == node_id) {
        task_samples[r.id] = r.samples;
      }
    }
  }
  resources_.Record(node_id, RegisteredGpuSamples(*nodes_.Find(node_id), report), task_samples);
  return DesiredFor(node_id);
}

std::vector<GpuSamples> Reconciler::RegisteredGpuSamples(const NodeRegistry::Entry& entry,
                                                         const AgentReport& report) {
  std::vector<GpuSamples> samples;
  const auto& gpus = entry.node.info.gpus;
  for (const auto& g : report.gpu_samples) {
    if (std::any_of(gpus.begin(), gpus.end(),
                    [&](const Gpu& gpu) { return gpu.index == g.index; })) {
      samples.push_back(g);
    }
  }
  return samples;
}

StatusOr<DesiredState> Reconciler::DesiredFor(const std::string& node_id) {
  const NodeRegistry::Entry* entry = nodes_.Find(node_id);
  if (!entry) return Status::NotFound(fmt::format("node {} is not registered", node_id));
  DesiredState desired;
  desired.version = entry->version;
  desired.node_timeout = config_.node_timeout;
  for (JobId id : jobs_.active()) {
    const Job& job = jobs_.At(id);
    framework::JobDirectories dirs = lifecycle_.DirectoriesOf(job);
    for (size_t i = 0; i < job.tasks.size(); ++i) {
      const Task& t = job.tasks[i];
      if (t.node_id != node_id || IsTerminal(t.state) || t.stop_requested) continue;
      TaskLaunch launch;
      launch.id = job.IdOf(t);
      for (const auto& g : job.spec.tasks) {
        if (g.role != t.role) continue;
        launch.workdir = g.workdir;
        launch.image = g.image;
        // Bare tasks, the many, parse nothing here.
        launch.image_insecure =
            !g.image.empty() && FromInsecureRegistry(config_.image_registries, g.image);
      }
      launch.command = framework::TaskCommand(job, i);
      launch.env = framework::TaskEnvironment(job, i, dirs);
      secrets_.Inject(job, t.role, launch.env);
      launch.files = framework::TaskFiles(job, i);
      framework::TaskTools tools = framework::TaskToolsOf(job, i);
      launch.tools = tools.tools;
      launch.slurm_tools = tools.slurm_tools;
      launch.exec_service = tools.exec_service;
      launch.terminal = tools.terminal;
      if (framework::UsesJobCredential(job.spec)) {
        launch.env["COHORT_JOB_CREDENTIAL"] =
            auth::JobCredential(config_.job_credential_key, job.id, job.attempt);
        // A notebook's Jupyter takes it as its token: the master sends it with what it proxies.
        if (job.spec.session && job.spec.session->kind == SessionKind::kNotebook) {
          launch.env["JUPYTER_TOKEN"] = launch.env["COHORT_JOB_CREDENTIAL"];
        }
      }
      launch.gpus = t.gpus;
      launch.grace_period = job.spec.grace_period;
      // The job's user names the account, unless an admin mapped them to a uid and gid
      // (cohort user set --uid --gid; docs/security.md).
      launch.run_as.user = job.user;
      if (const User* user = accounts_.FindUser(job.user); user && user->uid && user->gid) {
        launch.run_as.uid = static_cast<uint32_t>(*user->uid);
        launch.run_as.gid = static_cast<uint32_t>(*user->gid);
      }
      launch.checkpoint_dir = dirs.checkpoint_dir;
      launch.output_dir = dirs.output_dir;
      launch.log_dir = dirs.log_dir;
      launch.memory_limit_bytes = t.resources.memory_bytes;
      launch.fence = job.spec.restart.fence;
      if (job.trial) launch.hparams = job.trial->hparams.dump();
      if (Artifacts::Uploads(t)) launch.outputs_key = Artifacts::OutputsKey(job.id);
      // Every task restores the job's checkpoints from the store; its first also pushes them
      // (agent/checkpoint_sync.h). Short-lived access is renewed in later answers.
      launch.checkpoints_key = Artifacts::CheckpointsKey(job.id);
      if (auto access = artifacts_.AccessFor(job)) launch.store = std::move(*access);
      launch.datasets = Artifacts::DatasetsOf(job);
      if (!job.spec.context.empty()) launch.context_key = store::ContextKey(job.spec.context);
      desired.tasks.push_back(std::move(launch));
    }
  }
  desired.prefetch = scheduling_.staging().PrefetchFor(
      node_id, [&](const Job& job) { return artifacts_.AccessFor(job); });
  return desired;
}

bool Reconciler::NoteImagePull(Job& job, const Task& task, const std::string& node_id,
                               const ImagePull& pull, std::vector<JobEvent>& events) {
  const TaskId id = job.IdOf(task);
  auto [seen, first] = pulls_announced_.try_emplace(id);
  bool changed = false;
  const std::string who = fmt::format("{}/{} on {}", task.role, task.index, node_id);
  if (first && !pull.finished) {
    events.push_back(
        jobs_.Event(job, "image", fmt::format("{}: pulling image {}", who, pull.image)));
    changed = true;
  }
  if (pull.finished && !seen->second.ended) {
    seen->second.ended = true;
    events.push_back(
        jobs_.Event(job, "image", fmt::format("{}: {}", who, DescribeImagePull(pull))));
    changed = true;
  }
  // The job's message shows the pull while it lasts: the task counts as running from its
  // supervisor's start, so the job may be RUNNING while its image comes.
  if (job.state == JobState::kStarting || job.state == JobState::kRunning) {
    const Timestamp now = clock_.Now();
    const char* phase = job.state == JobState::kRunning ? "running" : "starting";
    const bool showing = job.message.find(": pulling image ") != std::string::npos;
    std::string message;
    if (!pull.finished && (first || !showing || now - seen->second.messaged >= kPullMessageEvery)) {
      message =
          fmt::format("attempt {} {}: {}: {}", job.attempt, phase, who, DescribeImagePull(pull));
    } else if (pull.finished && showing) {
      message = fmt::format("attempt {} {}", job.attempt, phase);
    }
    if (!message.empty() && message != job.message) {
      job.message = std::move(message);
      seen->second.messaged = now;
      changed = true;
    }
  }
  return changed;
}

std::optional<uint64_t> Reconciler::VersionOf(const std::string& node_id) const {
  const NodeRegistry::Entry* entry = nodes_.Find(node_id);
  if (!entry) return std::nullopt;
  return entry->version;
}

std::vector<NodeStatus> Reconciler::List() const {
  std::vector<NodeStatus> out;
  std::map<std::string, size_t> index;
  for (const auto& [id, entry] : nodes_.all()) {
    index[id] = out.size();
    out.push_back(NodeStatus{&entry.node, entry.version, {}, {}});
  }
  for (JobId id : jobs_.active()) {
    const Job& job = jobs_.At(id);
    for (const auto& t : job.tasks) {
      if (IsTerminal(t.state)) continue;
      auto it = index.find(t.node_id);
      if (it == index.end()) continue;
      NodeStatus& n = out[it->second];
      n.allocated += t.resources;
      for (int g : t.gpus) n.gpu_holders[g] = GpuHolder{job.id, t.Name()};
    }
  }
  return out;
}

}  // namespace cohort::master
