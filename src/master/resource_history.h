// The master's short memory of what agents measure of their GPUs and tasks every few seconds
// (docs/observability.md, "GPU and host metrics"): the last kSamplesKept samples of each GPU of
// each node and of each task, in memory only. Nothing is written to the store: a restarted
// master starts empty and fills up again within a sample period.
//
// A node's samples are forgotten when the node goes (removed, lost, registered again with
// perhaps other GPUs); a task's when its agent stops reporting it.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/job.h"
#include "model/resource_samples.h"

namespace cohort::master {

class ResourceHistory {
 public:
  // Five minutes at the agents' default period (5 s). About 100 bytes a sample: a node of 8
  // GPUs and 8 tasks keeps under 100 KiB.
  static constexpr size_t kSamplesKept = 60;

  // One report of `node`: takes each sample newer than the newest one kept of its GPU or task
  // (an agent sends a sample again until a report of its reaches the master, and answers can
  // cross), dropping the oldest beyond kSamplesKept. The node's tasks that are not in `tasks`
  // are forgotten; a task in it with no samples keeps what it had.
  void Record(const std::string& node, const std::vector<GpuSamples>& gpus,
              const std::map<TaskId, std::vector<TaskSample>>& tasks);
  void ForgetNode(const std::string& node);

  // Oldest first; empty when nothing is known.
  std::vector<GpuSample> Gpu(const std::string& node, int index) const;
  std::vector<TaskSample> Task(const std::string& node, const TaskId& task) const;
  // The newest sample of the GPU, if any.
  std::optional<GpuSample> LatestGpu(const std::string& node, int index) const;

 private:
  struct NodeHistory {
    std::map<int, std::deque<GpuSample>> gpus;
    std::map<TaskId, std::deque<TaskSample>> tasks;
  };
  std::map<std::string, NodeHistory> nodes_;
};

}  // namespace cohort::master
