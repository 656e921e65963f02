#include "agent/task_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "model/limits.h"
#include "os/proc_io.h"
#include "os/proc_stat.h"

namespace cohort::agent {
namespace {

struct TreeUsage {
  int64_t ticks = 0;
  int64_t rss_pages = 0;
  std::vector<pid_t> descendants;
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
      usage.descendants.push_back(child);
      stack.push_back(child);
    }
  }
  return usage;
}

// What the supervisor and its descendants have read. The supervisor's own figures hold those of
// every process it has reaped (the task's command, adopted orphans) and its own few reads of its
// spec, so the sum does not drop when a process ends and is reaped in the tree. Nothing when a
// figure cannot be read: a sum without it would be too low by an unknown amount.
std::optional<ProcessIo> TreeIo(const std::string& proc_root, pid_t supervisor,
                                const std::vector<pid_t>& descendants) {
  auto own = ReadProcessIo(proc_root, supervisor);
  if (!own.ok()) return std::nullopt;
  ProcessIo sum = *own;
  for (pid_t pid : descendants) {
    auto io = ReadProcessIo(proc_root, pid);
    // One that ended since the table was read: its parent has its figures once it reaps it.
    if (io.status().code() == StatusCode::kNotFound) continue;
    if (!io.ok()) return std::nullopt;
    sum.read_bytes += io->read_bytes;
    sum.read_calls += io->read_calls;
  }
  return sum;
}

// A counter's change per second, never below 0 (a process reaped outside the tree, or by a
// parent that ignores SIGCHLD, takes its figures with it) nor above `high`.
int64_t PerSecond(int64_t before, int64_t after, double seconds, int64_t high) {
  const double rate = static_cast<double>(std::max<int64_t>(0, after - before)) / seconds;
  return static_cast<int64_t>(std::min(rate, static_cast<double>(high)) + 0.5);
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
    std::optional<ProcessIo> io = TreeIo(proc_root_, supervisor, usage.descendants);
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
      if (io && previous->second.io) {
        const ProcessIo& before = *previous->second.io;
        sample.read_bytes_per_s =
            PerSecond(before.read_bytes, io->read_bytes, seconds, kMaxReadBytesPerSecond);
        sample.read_calls_per_s =
            PerSecond(before.read_calls, io->read_calls, seconds, kMaxReadCallsPerSecond);
      }
    }
    out[id] = sample;
    seen[id] = Previous{usage.ticks, io, now};
  }
  previous_ = std::move(seen);
  return out;
}

}  // namespace cohort::agent
