#include "agent/task_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "model/limits.h"
#include "os/proc_stat.h"

namespace cohort::agent {
namespace {

struct TreeUsage {
  int64_t ticks = 0;
  int64_t rss_pages = 0;
};

// The supervisor's descendants (not itself: its own work is Cohort's, not the task's).
TreeUsage UsageBelow(pid_t supervisor, const std::map<pid_t, ProcessStat>& by_pid,
                     const std::map<pid_t, std::vector<pid_t>>& children) {
  TreeUsage usage;
  usage.ticks = by_pid.at(supervisor).child_cpu_ticks;  // the task's processes it has reaped
  // The table is read a file at a time, so a pid reused meanwhile could close a loop.
  std::set<pid_t> visited = {supervisor};
  std::vector<pid_t> stack = {supervisor};
  while (!stack.empty()) {
    pid_t parent = stack.back();
    stack.pop_back();
    auto it = children.find(parent);
    if (it == children.end()) continue;
    for (pid_t child : it->second) {
      if (!visited.insert(child).second) continue;
      const ProcessStat& p = by_pid.at(child);
      usage.ticks += p.cpu_ticks + p.child_cpu_ticks;
      usage.rss_pages += p.rss_pages;
      stack.push_back(child);
    }
  }
  return usage;
}

}  // namespace

ProcTaskSampler::ProcTaskSampler(std::string proc_root, int64_t ticks_per_second, int64_t page_size)
    : proc_root_(std::move(proc_root)),
      ticks_per_second_(ticks_per_second > 0 ? ticks_per_second : ::sysconf(_SC_CLK_TCK)),
      page_size_(page_size > 0 ? page_size : ::sysconf(_SC_PAGESIZE)) {}

std::map<TaskId, TaskSample> ProcTaskSampler::Sample(const std::map<TaskId, pid_t>& supervisors,
                                                     Timestamp now) {
  std::map<pid_t, ProcessStat> by_pid;
  std::map<pid_t, std::vector<pid_t>> children;
  for (const ProcessStat& p : ReadProcessTable(proc_root_)) {
    by_pid[p.pid] = p;
    if (p.ppid > 0 && p.ppid != p.pid) children[p.ppid].push_back(p.pid);
  }
  std::map<TaskId, TaskSample> out;
  std::map<TaskId, Previous> seen;
  for (const auto& [id, supervisor] : supervisors) {
    if (supervisor <= 0 || !by_pid.count(supervisor)) continue;
    TreeUsage usage = UsageBelow(supervisor, by_pid, children);
    TaskSample sample;
    sample.at = now;
    // Within the protocol's bound: beyond it, the master would refuse the whole report.
    sample.rss_bytes = std::clamp<int64_t>(usage.rss_pages * page_size_, 0, kMaxNodeMemoryBytes);
    auto previous = previous_.find(id);
    if (previous != previous_.end() && now > previous->second.at && ticks_per_second_ > 0) {
      const double seconds = static_cast<double>((now - previous->second.at).count()) / 1e6;
      const double ticks =
          static_cast<double>(std::max<int64_t>(0, usage.ticks - previous->second.ticks));
      const double milli = ticks / static_cast<double>(ticks_per_second_) / seconds * 1000.0;
      sample.milli_cpus = static_cast<int64_t>(std::min(milli, kMaxNodeCpus * 1000.0) + 0.5);
    }
    out[id] = sample;
    seen[id] = Previous{usage.ticks, now};
  }
  previous_ = std::move(seen);
  return out;
}

}  // namespace cohort::agent
