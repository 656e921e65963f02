// The reconciliation with agents (docs/architecture.md): registration, applying an agent's report
// to the jobs, and the desired state of a node.
#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"

namespace cohort::master {

namespace {

std::string DescribeExit(const Task& t) {
  if (t.state == TaskState::kLost) return fmt::format("{} was lost by its agent", t.Name());
  if (t.signal) return fmt::format("{} was killed by signal {}", t.Name(), *t.signal);
  if (t.exit_code) return fmt::format("{} exited with code {}", t.Name(), *t.exit_code);
  return fmt::format("{} ended", t.Name());
}

}  // namespace

// --- Agents ---

StatusOr<DesiredState> Master::Register(NodeInfo info) {
  Timestamp now = clock_.Now();
  std::string id = info.id;
  auto it = nodes_.find(id);
  // Written first: if the store refuses, nothing in memory has changed.
  Node node = it == nodes_.end() ? Node{} : it->second.node;
  if (it == nodes_.end()) node.registered_at = now;
  node.info = std::move(info);
  node.state = NodeState::kReady;
  node.last_seen = now;
  COHORT_RETURN_IF_ERROR(store_->SaveNode(node));
  if (it == nodes_.end()) {
    it = nodes_.emplace(id, NodeEntry{std::move(node), next_version_++, nullptr, 0}).first;
    spdlog::info("node {} registered: {}", id, it->second.node.info.Capacity().ToString());
  } else {
    it->second.node = std::move(node);
    spdlog::info("node {} registered again", id);
  }
  it->second.topology = std::make_shared<GpuTopology>(it->second.node.info.Topology());
  cluster_.UpsertNode(CapacityOf(it->second), true);
  InvalidateResidue();
  return DesiredFor(id);
}

void Master::ApplyTaskReport(Job& job, Task& task, const TaskReport& report,
                             std::vector<JobEvent>& events) {
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
  events.push_back(Event(job, "task_ended",
                         fmt::format("{}: {}", TaskStateName(task.state), DescribeExit(task))));
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
      StopJob(job, JobState::kSucceeded, "every worker succeeded; stopping parameter servers",
              events);
    }
    return;
  }
  // One task of a gang failed: the whole gang stops, and is retried within its budget.
  ++job.failures;
  bool retry = job.failures < job.spec.max_attempts;
  std::string reason = DescribeExit(task);
  if (retry) {
    reason += fmt::format(" (failure {} of at most {})", job.failures, job.spec.max_attempts);
  }
  StopJob(job, retry ? JobState::kPending : JobState::kFailed, reason, events);
}

StatusOr<DesiredState> Master::Sync(const std::string& node_id, const AgentReport& report) {
  auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) {
    return Status::NotFound(fmt::format("node {} is not registered", node_id));
  }
  NodeEntry& entry = node_it->second;
  Timestamp now = clock_.Now();
  entry.node.last_seen = now;
  if (entry.node.state != NodeState::kReady) {
    entry.node.state = NodeState::kReady;
    cluster_.SetReady(node_id, true);
    spdlog::info("node {} is ready", node_id);
    InvalidateResidue();
  }

  std::map<JobId, std::vector<JobEvent>> events;
  std::set<JobId> changed;
  std::set<TaskId> reported;
  std::vector<std::pair<JobId, Task>> released;
  auto apply = [&](Job& job, Task& t, const TaskReport& r) {
    TaskState before = t.state;
    int64_t pid = t.pid;
    auto& job_events = events[job.id];
    size_t count = job_events.size();
    ApplyTaskReport(job, t, r, job_events);
    if (t.state != before || t.pid != pid || job_events.size() != count) changed.insert(job.id);
    // A task that ended gave its resources back: someone may be waiting for them.
    if (!IsTerminal(before) && IsTerminal(t.state)) {
      cluster_.ReleaseTask(job.id, t.role, t.index);
      released.emplace_back(job.id, t);
    }
  };
  for (const auto& r : report.tasks) {
    reported.insert(r.id);
    auto job_it = jobs_.find(r.id.job);
    if (job_it == jobs_.end()) continue;
    Job& job = job_it->second;
    if (job.attempt != r.id.attempt) continue;  // an earlier attempt's task: nothing to record
    for (auto& t : job.tasks) {
      if (t.role == r.id.role && t.index == r.id.index && t.node_id == node_id) apply(job, t, r);
    }
  }
  // Tasks this agent has applied but no longer reports: it lost them.
  for (JobId id : active_) {
    Job& job = jobs_.at(id);
    for (auto& t : job.tasks) {
      if (t.node_id != node_id || IsTerminal(t.state)) continue;
      if (t.assigned_version > report.applied_version) continue;  // not applied yet
      if (reported.count(job.IdOf(t))) continue;
      TaskReport lost{job.IdOf(t), TaskState::kLost, std::nullopt, std::nullopt,
                      0,           std::nullopt,     now};
      apply(job, t, lost);
    }
  }
  bool freed = false;
  for (JobId id : changed) {
    Job& job = jobs_.at(id);
    auto& job_events = events[id];
    if (job.state == JobState::kStarting) {
      bool all_running = std::all_of(job.tasks.begin(), job.tasks.end(), [](const Task& t) {
        return t.state == TaskState::kRunning || t.scaled_down;
      });
      if (all_running) {
        job.state = JobState::kRunning;
        job.running_at = now;
        job.message = fmt::format("attempt {} running", job.attempt);
        job_events.push_back(
            Event(job, "running", fmt::format("all {} tasks running", job.tasks.size())));
      }
    }
    FinishIfStopped(job, job_events);
    if (!active_.count(id)) freed = true;
    COHORT_RETURN_IF_ERROR(Persist(job, std::move(job_events)));
  }
  if (!released.empty()) {
    if (Incremental()) {
      Released(released);
    } else {
      RequestSchedule();
    }
  }
  if (freed) Reschedule();

  COHORT_ASSIGN_OR_RETURN(DesiredState desired, DesiredFor(node_id));
  // Ended tasks are now recorded (or were never ours): the agent may forget them.
  std::set<TaskId> wanted;
  for (const auto& t : desired.tasks) wanted.insert(t.id);
  for (const auto& r : report.tasks) {
    if (IsTerminal(r.state) && !wanted.count(r.id)) desired.forget.push_back(r.id);
  }
  return desired;
}

StatusOr<DesiredState> Master::DesiredFor(const std::string& node_id) const {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) {
    return Status::NotFound(fmt::format("node {} is not registered", node_id));
  }
  DesiredState desired;
  desired.version = it->second.version;
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
    framework::JobDirectories dirs = DirectoriesOf(job);
    for (size_t i = 0; i < job.tasks.size(); ++i) {
      const Task& t = job.tasks[i];
      if (t.node_id != node_id || IsTerminal(t.state) || t.stop_requested) continue;
      TaskLaunch launch;
      launch.id = job.IdOf(t);
      for (const auto& g : job.spec.tasks) {
        if (g.role != t.role) continue;
        launch.command = g.command;
        launch.workdir = g.workdir;
      }
      launch.env = framework::TaskEnvironment(job, i, dirs);
      launch.gpus = t.gpus;
      launch.grace_period = job.spec.grace_period;
      desired.tasks.push_back(std::move(launch));
    }
  }
  return desired;
}

std::vector<NodeStatus> Master::ListNodes() const {
  std::vector<NodeStatus> out;
  std::map<std::string, size_t> index;
  for (const auto& [id, entry] : nodes_) {
    index[id] = out.size();
    out.push_back(NodeStatus{&entry.node, entry.version, {}, {}});
  }
  for (JobId id : active_) {
    const Job& job = jobs_.at(id);
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
