#include "master/resource_history.h"

namespace cohort::master {
namespace {

template <typename Sample>
void Append(std::deque<Sample>& kept, const std::vector<Sample>& samples) {
  for (const Sample& s : samples) {
    if (!kept.empty() && s.at <= kept.back().at) continue;  // already here, or out of order
    kept.push_back(s);
    if (kept.size() > ResourceHistory::kSamplesKept) kept.pop_front();
  }
}

}  // namespace

void ResourceHistory::Record(const std::string& node, const std::vector<GpuSamples>& gpus,
                             const std::map<TaskId, std::vector<TaskSample>>& tasks) {
  NodeHistory& history = nodes_[node];
  for (const GpuSamples& gpu : gpus) Append(history.gpus[gpu.index], gpu.samples);
  for (auto it = history.tasks.begin(); it != history.tasks.end();) {
    it = tasks.count(it->first) ? std::next(it) : history.tasks.erase(it);
  }
  for (const auto& [task, samples] : tasks) {
    if (!samples.empty()) Append(history.tasks[task], samples);
  }
}

void ResourceHistory::ForgetNode(const std::string& node) { nodes_.erase(node); }

std::vector<GpuSample> ResourceHistory::Gpu(const std::string& node, int index) const {
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return {};
  auto g = n->second.gpus.find(index);
  if (g == n->second.gpus.end()) return {};
  return {g->second.begin(), g->second.end()};
}

std::vector<TaskSample> ResourceHistory::Task(const std::string& node, const TaskId& task) const {
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return {};
  auto t = n->second.tasks.find(task);
  if (t == n->second.tasks.end()) return {};
  return {t->second.begin(), t->second.end()};
}

std::optional<GpuSample> ResourceHistory::LatestGpu(const std::string& node, int index) const {
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return std::nullopt;
  auto g = n->second.gpus.find(index);
  if (g == n->second.gpus.end() || g->second.empty()) return std::nullopt;
  return g->second.back();
}

}  // namespace cohort::master
