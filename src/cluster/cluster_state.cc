#include "cluster/cluster_state.h"

#include <algorithm>

namespace cohort::cluster {

RunningJob RunningFrom(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                       Timestamp now) {
  RunningJob r;
  r.job_id = job.job_id;
  r.team = job.team;
  r.user = job.user;
  r.priority = job.priority;
  r.submitted_at = job.submitted_at;
  r.started_at = now;
  if (job.max_runtime) r.ends_by = now + *job.max_runtime;
  if (job.oracle_remaining) r.oracle_ends_at = now + *job.oracle_remaining;
  r.waiting_since = job.waiting_since ? *job.waiting_since : job.submitted_at;
  r.tasks = job.tasks;
  r.placement = placement;
  r.task_started.assign(job.tasks.size(), now);
  r.attained = job.attained;
  r.preemptions = job.preemptions;
  r.elastic = job.elastic;
  r.constraints = job.constraints;
  r.sweep_trial = job.sweep_trial;
  return r;
}

// --- Nodes ---

ClusterState::Node* ClusterState::MutableNode(const std::string& node_id) {
  auto it = node_index_.find(node_id);
  return it == node_index_.end() ? nullptr : &nodes_[it->second];
}

const NodeCapacity* ClusterState::FindNode(const std::string& node_id) const {
  auto it = node_index_.find(node_id);
  return it == node_index_.end() ? nullptr : &nodes_[it->second].capacity;
}

void ClusterState::UpsertNode(NodeCapacity node, bool ready) {
  std::sort(node.free_gpus.begin(), node.free_gpus.end());
  node.free_gpus.erase(std::unique(node.free_gpus.begin(), node.free_gpus.end()),
                       node.free_gpus.end());
  node.free = node.total;
  node.free.gpus = static_cast<int64_t>(node.free_gpus.size());
  node.total.gpus = node.free.gpus;
  auto [it, added] = node_index_.emplace(node.node_id, nodes_.size());
  if (added) nodes_.push_back(Node{});
  Node& n = nodes_[it->second];
  n.capacity = std::move(node);
  n.ready = ready;
  // What live tasks hold there is taken again from the new capacity, as far as it exists.
  for (auto& [id, h] : jobs_) {
    for (size_t t = 0; t < h.job.tasks.size(); ++t) {
      if (h.job.placement[t].node_id != n.capacity.node_id) continue;
      if (h.placed[t]) {
        used_gpus_ -= h.job.tasks[t].resources.gpus;
        team_gpus_[h.job.team] -= h.job.tasks[t].resources.gpus;
      }
      h.placed[t] = false;
      TakeTask(h, t);
    }
  }
}

void ClusterState::SetReady(const std::string& node_id, bool ready) {
  if (Node* n = MutableNode(node_id)) n->ready = ready;
}

void ClusterState::RemoveNode(const std::string& node_id) {
  auto it = node_index_.find(node_id);
  if (it == node_index_.end()) return;
  nodes_.erase(nodes_.begin() + static_cast<ptrdiff_t>(it->second));
  node_index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) node_index_[nodes_[i].capacity.node_id] = i;
}

bool ClusterState::IsReady(const std::string& node_id) const {
  auto it = node_index_.find(node_id);
  return it != node_index_.end() && nodes_[it->second].ready;
}

// --- Jobs ---

bool ClusterState::Fits(const std::vector<TaskRequest>& tasks,
                        const std::vector<TaskPlacement>& placement) const {
  if (tasks.size() != placement.size()) return false;
  // Copies of only the nodes this placement uses, so that a gang's tasks count each other.
  std::map<std::string, NodeCapacity> changed;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const std::string& id = placement[t].node_id;
    auto it = changed.find(id);
    if (it == changed.end()) {
      auto index = node_index_.find(id);
      if (index == node_index_.end() || !nodes_[index->second].ready) return false;
      it = changed.emplace(id, nodes_[index->second].capacity).first;
    }
    if (!IsFree(it->second, tasks[t].resources, placement[t].gpus)) return false;
    TakeFree(it->second, tasks[t].resources, placement[t].gpus);
  }
  return true;
}

void ClusterState::TakeTask(Holding& h, size_t t) {
  Node* n = MutableNode(h.job.placement[t].node_id);
  if (!n) return;  // a node this state does not know (yet): it holds nothing there
  // Only what exists and is free is taken, and the job holds exactly that: a node that came
  // back with fewer GPUs, or two records that disagree, must not break the books.
  TaskRequest& task = h.job.tasks[t];
  std::vector<int>& gpus = h.job.placement[t].gpus;
  std::erase_if(gpus, [&](int g) {
    return !std::binary_search(n->capacity.free_gpus.begin(), n->capacity.free_gpus.end(), g);
  });
  task.resources.gpus = static_cast<int64_t>(gpus.size());
  task.resources.milli_cpus = std::min(task.resources.milli_cpus, n->capacity.free.milli_cpus);
  task.resources.memory_bytes =
      std::min(task.resources.memory_bytes, n->capacity.free.memory_bytes);
  TakeFree(n->capacity, task.resources, gpus);
  used_gpus_ += task.resources.gpus;
  team_gpus_[h.job.team] += task.resources.gpus;
  h.placed[t] = true;
}

void ClusterState::Take(Holding& h, size_t first_task) {
  h.leaving.resize(h.job.tasks.size(), false);
  h.placed.resize(h.job.tasks.size(), false);
  for (size_t t = first_task; t < h.job.tasks.size(); ++t) TakeTask(h, t);
}

void ClusterState::Release(Holding& h, size_t t) {
  if (!h.placed[t]) return;
  h.placed[t] = false;
  Node* n = MutableNode(h.job.placement[t].node_id);
  if (!n) return;
  GiveFree(n->capacity, h.job.tasks[t].resources, h.job.placement[t].gpus);
  used_gpus_ -= h.job.tasks[t].resources.gpus;
  team_gpus_[h.job.team] -= h.job.tasks[t].resources.gpus;
}

bool ClusterState::Start(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                         Timestamp now) {
  if (jobs_.count(job.job_id) || !Fits(job.tasks, placement) ||
      !KeepsDistinctNodes(job.tasks, placement)) {
    return false;
  }
  Holding& h = jobs_[job.job_id];
  h.job = RunningFrom(job, placement, now);
  Take(h, 0);
  claims_.erase(job.job_id);
  return true;
}

void ClusterState::Restore(RunningJob job, const std::vector<bool>& leaving) {
  ReleaseJob(job.job_id);
  JobId id = job.job_id;
  Holding& h = jobs_[id];
  h.job = std::move(job);
  if (h.job.task_started.size() < h.job.tasks.size()) {
    h.job.task_started.resize(h.job.tasks.size(), h.job.started_at);
  }
  Take(h, 0);
  for (size_t t = 0; t < leaving.size() && t < h.leaving.size(); ++t) h.leaving[t] = leaving[t];
}

bool ClusterState::Grow(const Growth& growth, Timestamp now) {
  auto it = jobs_.find(growth.job_id);
  if (it == jobs_.end() || it->second.job.stopping) return false;
  if (!Fits(growth.tasks, growth.placement)) return false;
  Holding& h = it->second;
  // New replicas of a group with distinct_nodes (as the job's own records say, not the growth)
  // go only where none of its replicas is, those on their way out included.
  const bool any_apart =
      AnyOnDistinctNodes(h.job.tasks) ||
      std::any_of(h.job.elastic.begin(), h.job.elastic.end(),
                  [](const RunningJob::ElasticGroup& g) { return g.distinct_nodes; });
  auto apart = [&](const std::string& role) {
    if (!any_apart) return false;
    for (const auto& g : h.job.elastic) {
      if (g.role == role && g.distinct_nodes) return true;
    }
    return std::any_of(h.job.tasks.begin(), h.job.tasks.end(),
                       [&](const TaskRequest& t) { return t.role == role && t.distinct_nodes; });
  };
  if (any_apart) {
    std::vector<TaskRequest> tasks = h.job.tasks;
    std::vector<TaskPlacement> placement = h.job.placement;
    for (size_t t = 0; t < growth.tasks.size(); ++t) {
      tasks.push_back(growth.tasks[t]);
      tasks.back().distinct_nodes = apart(growth.tasks[t].role);
      placement.push_back(growth.placement[t]);
    }
    if (!KeepsDistinctNodes(tasks, placement)) return false;
  }
  size_t first = h.job.tasks.size();
  for (size_t t = 0; t < growth.tasks.size(); ++t) {
    bool distinct = apart(growth.tasks[t].role);
    h.job.tasks.push_back(growth.tasks[t]);
    h.job.tasks.back().distinct_nodes = distinct;
    h.job.placement.push_back(growth.placement[t]);
    h.job.task_started.push_back(now);
    for (auto& g : h.job.elastic) {
      if (g.role == growth.tasks[t].role)
        g.next_index = std::max(g.next_index, growth.tasks[t].index + 1);
    }
  }
  Take(h, first);
  return true;
}

void ClusterState::MarkStopping(JobId job, std::optional<JobId> for_job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  RunningJob& r = it->second.job;
  // The first reason stands: a job preempted and then killed is still making room.
  if (r.stopping) return;
  r.stopping = true;
  r.stopping_for = for_job;
  if (for_job) claims_.insert(*for_job);
}

void ClusterState::NoteCheckpoint(JobId job, Timestamp at) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  RunningJob& r = it->second.job;
  // Only this attempt's checkpoints count, and time does not run backwards.
  if (at < r.started_at || (r.last_checkpoint_at && at <= *r.last_checkpoint_at)) return;
  r.last_checkpoint_at = at;
}

void ClusterState::MarkLeaving(JobId job, const std::string& role,
                               const std::vector<int>& indices) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  Holding& h = it->second;
  for (size_t t = 0; t < h.job.tasks.size(); ++t) {
    const TaskRequest& task = h.job.tasks[t];
    if (task.role == role &&
        std::find(indices.begin(), indices.end(), task.index) != indices.end()) {
      h.leaving[t] = true;
    }
  }
}

bool ClusterState::ReleaseTask(JobId job, const std::string& role, int index) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return false;
  Holding& h = it->second;
  for (size_t t = 0; t < h.job.tasks.size(); ++t) {
    if (h.job.tasks[t].role != role || h.job.tasks[t].index != index) continue;
    // A replica that ended on its own, not one taken away: the job is finishing (a torchrun
    // world ends together), and a replica added now would wait for a world that is gone.
    if (!h.leaving[t]) h.job.elastic.clear();
    Release(h, t);
    h.job.tasks.erase(h.job.tasks.begin() + static_cast<ptrdiff_t>(t));
    h.job.placement.erase(h.job.placement.begin() + static_cast<ptrdiff_t>(t));
    h.job.task_started.erase(h.job.task_started.begin() + static_cast<ptrdiff_t>(t));
    h.leaving.erase(h.leaving.begin() + static_cast<ptrdiff_t>(t));
    h.placed.erase(h.placed.begin() + static_cast<ptrdiff_t>(t));
    break;
  }
  if (!h.job.tasks.empty()) return false;
  jobs_.erase(it);
  return true;
}

void ClusterState::ReleaseJob(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  for (size_t t = 0; t < it->second.job.tasks.size(); ++t) Release(it->second, t);
  jobs_.erase(it);
}

const RunningJob* ClusterState::FindJob(JobId job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second.job;
}

std::vector<JobId> ClusterState::JobsOn(const std::string& node_id) const {
  std::vector<JobId> out;
  for (const auto& [id, h] : jobs_) {
    for (const auto& p : h.job.placement) {
      if (p.node_id != node_id) continue;
      out.push_back(id);
      break;
    }
  }
  return out;
}

bool ClusterState::AnyElasticCanGrow() const {
  for (const auto& [id, h] : jobs_) {
    if (h.job.stopping) continue;
    for (const auto& g : h.job.elastic) {
      int live = 0;
      for (size_t t = 0; t < h.job.tasks.size(); ++t) {
        live += h.job.tasks[t].role == g.role && !h.leaving[t];
      }
      if (live < g.max) return true;
    }
  }
  return false;
}

// --- The scheduler's view ---

bool ClusterState::AnyLeaving(const Holding& h) {
  return std::find(h.leaving.begin(), h.leaving.end(), uint8_t{1}) != h.leaving.end();
}

void ClusterState::Split(const Holding& h, RunningJob& staying, RunningJob& leaving) {
  staying = h.job;
  leaving = h.job;
  staying.tasks.clear();
  staying.placement.clear();
  staying.task_started.clear();
  leaving.tasks.clear();
  leaving.placement.clear();
  leaving.task_started.clear();
  leaving.stopping = true;
  for (size_t t = 0; t < h.job.tasks.size(); ++t) {
    RunningJob& to = h.leaving[t] ? leaving : staying;
    to.tasks.push_back(h.job.tasks[t]);
    to.placement.push_back(h.job.placement[t]);
    to.task_started.push_back(h.job.task_started[t]);
  }
}

void ClusterState::NodesAndTeams(ClusterSnapshot& into) const {
  // Element by element, so that strings, vectors and maps keep their buffers.
  size_t nodes = 0;
  for (const auto& n : nodes_) {
    if (!n.ready) continue;
    if (nodes < into.nodes.size()) {
      CopyCapacity(n.capacity, into.nodes[nodes]);
    } else {
      into.nodes.push_back(n.capacity);
    }
    ++nodes;
  }
  into.nodes.resize(nodes);
  into.teams = teams_;
}

ClusterSnapshot ClusterState::Snapshot() const {
  ClusterSnapshot s;
  NodesAndTeams(s);
  s.running.reserve(jobs_.size());
  for (const auto& [id, h] : jobs_) {
    if (!AnyLeaving(h)) {
      s.running.push_back(h.job);
      continue;
    }
    RunningJob staying;
    RunningJob leaving;
    Split(h, staying, leaving);
    s.running.push_back(std::move(staying));
    s.running.push_back(std::move(leaving));
  }
  return s;
}

void ClusterState::View(ClusterSnapshot& into, std::vector<const RunningJob*>& running) {
  NodesAndTeams(into);
  into.running.clear();
  split_.clear();
  running.clear();
  running.reserve(jobs_.size());
  for (const auto& [id, h] : jobs_) {
    if (!AnyLeaving(h)) {
      running.push_back(&h.job);
      continue;
    }
    RunningJob& staying = split_.emplace_back();
    RunningJob& leaving = split_.emplace_back();
    Split(h, staying, leaving);
    running.push_back(&staying);
    running.push_back(&leaving);
  }
}

Applied ClusterState::Apply(const Plan& plan, const std::vector<PendingJob>& pending,
                            Timestamp now) {
  Applied applied;
  // One walk over the waiting jobs finds the few this needs: those placed, and those claimed
  // (a claim of a job that no longer waits ends now; the others are judged after this plan).
  std::unordered_map<JobId, const PendingJob*> wanted;
  for (const auto& p : plan.placements) wanted.emplace(p.job_id, nullptr);
  for (JobId id : claims_) wanted.emplace(id, nullptr);
  if (!wanted.empty()) {
    for (const auto& p : pending) {
      auto it = wanted.find(p.job_id);
      if (it != wanted.end()) it->second = &p;
    }
  }
  std::erase_if(claims_, [&](JobId id) { return wanted.at(id) == nullptr; });
  std::set<JobId> claimed = claims_;

  for (const auto& placement : plan.placements) {
    const PendingJob* job = wanted.at(placement.job_id);
    if (!job || !Start(*job, placement.tasks, now)) {
      applied.consistent = false;
      continue;
    }
    applied.placements.push_back(placement);
  }
  for (const auto& preemption : plan.preemptions) {
    auto victim = jobs_.find(preemption.victim);
    if (victim == jobs_.end() || victim->second.job.stopping) continue;
    MarkStopping(preemption.victim, preemption.for_job);
    applied.preemptions.push_back(preemption);
  }
  std::set<JobId> awaited;
  for (const auto& [id, h] : jobs_) {
    if (h.job.stopping && h.job.stopping_for) awaited.insert(*h.job.stopping_for);
  }
  for (JobId id : claimed) {
    if (!awaited.count(id)) claims_.erase(id);
  }
  for (const auto& growth : plan.growths) {
    if (!Grow(growth, now)) {
      applied.consistent = false;
      continue;
    }
    applied.growths.push_back(growth);
  }
  for (const auto& shrink : plan.shrinks) {
    auto it = jobs_.find(shrink.job_id);
    if (it == jobs_.end() || it->second.job.stopping) continue;
    MarkLeaving(shrink.job_id, shrink.role, shrink.indices);
    applied.shrinks.push_back(shrink);
  }
  return applied;
}

}  // namespace cohort::cluster
