#include "scheduler/incremental.h"

#include <fmt/format.h>

#include <algorithm>

namespace cohort::scheduler {
namespace {

bool Ends(const PassResidue& r, const PendingJob& job, Timestamp now) {
  if (!r.earliest_reservation) return true;
  std::optional<Duration> runtime = job.max_runtime ? job.max_runtime : r.config.default_runtime;
  return runtime && now + *runtime <= *r.earliest_reservation;
}

// True if the placement uses no GPU held for another job than `job`.
bool RespectsHolds(const PassResidue& r, JobId job, const std::vector<TaskPlacement>& placement) {
  for (const auto& p : placement) {
    for (int g : p.gpus) {
      auto it = r.held.find({p.node_id, g});
      if (it != r.held.end() && it->second != job) return false;
    }
  }
  return true;
}

// Places `job` in the residue if it fits where it may look; takes what it uses, and lets go of
// what was held for it and it does not use.
std::optional<std::vector<TaskPlacement>> TryPlace(PassResidue& r, const PendingJob& job,
                                                   Timestamp now) {
  Resources need = TotalOf(job.tasks);
  auto team = r.teams.find(job.team);
  if (team != r.teams.end() && team->second.max_gpus &&
      team->second.held.gpus + need.gpus > *team->second.max_gpus) {
    return std::nullopt;
  }
  // A short job may use what is held for a reservation that begins after it ends; any job may
  // use what is held for itself.
  std::optional<std::vector<TaskPlacement>> placement = r.free.Place(job.tasks, job.constraints);
  if (placement && !Ends(r, job, now) && !RespectsHolds(r, job.job_id, *placement)) {
    placement = r.unreserved.Place(job.tasks, job.constraints);
  }
  if (!placement) return std::nullopt;
  r.free.Take(job.tasks, *placement);
  r.unreserved.Take(job.tasks, *placement, /*partial=*/true);
  r.teams[job.team].held += need;
  // Its holds are over: the GPUs it does not use become anyone's again.
  std::vector<TaskRequest> back_tasks;
  std::vector<TaskPlacement> back;
  for (auto it = r.held.begin(); it != r.held.end();) {
    if (it->second != job.job_id) {
      ++it;
      continue;
    }
    const auto& [node, gpu] = it->first;
    int index = r.free.Find(node);
    bool free_now =
        index >= 0 && std::count(r.free.nodes()[static_cast<size_t>(index)].free_gpus.begin(),
                                 r.free.nodes()[static_cast<size_t>(index)].free_gpus.end(), gpu);
    if (free_now) {
      back_tasks.push_back(TaskRequest{"", 0, Resources{1, 0, 0}});
      back.push_back(TaskPlacement{node, {gpu}});
    }
    it = r.held.erase(it);
  }
  r.unreserved.Give(back_tasks, back);
  return placement;
}

}  // namespace

std::optional<std::vector<TaskPlacement>> DecideArrival(PassResidue& residue, const PendingJob& job,
                                                        Timestamp now, std::string* reason) {
  // Without backfill, nothing overtakes a job that waits.
  bool blocked = !residue.config.backfill &&
                 std::any_of(residue.queue.begin(), residue.queue.end(),
                             [](const PassResidue::Waiting& w) { return !w.done; });
  if (!blocked) {
    if (auto placement = TryPlace(residue, job, now)) return placement;
  }
  PassResidue::Waiting w{job.job_id, 0, 0, false};
  for (const auto& t : job.tasks) {
    w.gpus += t.resources.gpus;
    w.largest_task = std::max(w.largest_task, t.resources.gpus);
  }
  residue.queue.push_back(w);
  residue.zero_gpu_waiting += w.gpus == 0;
  if (reason) {
    // Provisional: the next full pass (within a tick) says exactly why, and may reserve or
    // preempt for it.
    *reason = fmt::format(
        "waiting for the scheduler's next pass: needs {}; {} GPUs free, the largest free block "
        "is {}",
        TotalOf(job.tasks).ToString(), residue.free.free_gpus(), residue.free.largest_free_block());
  }
  return std::nullopt;
}

std::vector<JobPlacement> DecideAfterRelease(PassResidue& residue, const std::string& team,
                                             const std::vector<TaskRequest>& tasks,
                                             const std::vector<TaskPlacement>& placement,
                                             const std::function<const PendingJob*(JobId)>& pending,
                                             Timestamp now) {
  residue.free.Give(tasks, placement);
  // GPUs held for a waiting job stay held for it.
  std::vector<TaskRequest> open_tasks;
  std::vector<TaskPlacement> open_placement;
  for (size_t t = 0; t < tasks.size(); ++t) {
    TaskPlacement p{placement[t].node_id, {}};
    for (int g : placement[t].gpus) {
      if (!residue.held.count({p.node_id, g})) p.gpus.push_back(g);  // held: stays held
    }
    TaskRequest r = tasks[t];
    r.resources.gpus = static_cast<int64_t>(p.gpus.size());
    open_tasks.push_back(r);
    open_placement.push_back(std::move(p));
  }
  residue.unreserved.Give(open_tasks, open_placement);
  residue.teams[team].held -= TotalOf(tasks);

  std::vector<JobPlacement> started;
  for (auto& w : residue.queue) {
    if (w.done) continue;
    int64_t free = residue.free.free_gpus();
    if (free == 0 && residue.zero_gpu_waiting == 0) break;  // nothing more can start
    bool may_fit = w.gpus <= free && w.largest_task <= residue.free.largest_free_block();
    const PendingJob* job = may_fit ? pending(w.job_id) : nullptr;
    if (job) {
      if (auto p = TryPlace(residue, *job, now)) {
        w.done = true;
        residue.zero_gpu_waiting -= w.gpus == 0;
        started.push_back(JobPlacement{w.job_id, std::move(*p)});
        continue;
      }
    }
    // Without backfill, the first job that cannot start blocks the rest.
    if (!residue.config.backfill && pending(w.job_id)) break;
  }
  return started;
}

}  // namespace cohort::scheduler
