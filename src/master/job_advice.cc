#include "master/job_advice.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace cohort::master {
namespace {

const char* AdviceKindName(AdviceKind kind) {
  switch (kind) {
    case AdviceKind::kIdle:
      return "idle GPUs";
    case AdviceKind::kSmallReads:
      return "GPUs starved by small reads";
    case AdviceKind::kStarved:
      break;
  }
  return "starved GPUs";
}

}  // namespace

JobAdvice::JobAdvice(const MasterConfig& config, JobBook& jobs, const ResourceHistory& resources,
                     JobLifecycle& lifecycle, const Clock& clock)
    : config_(config), jobs_(jobs), resources_(resources), lifecycle_(lifecycle), clock_(clock) {}

void JobAdvice::Tick(Timestamp now) {
  // Jobs that no longer run take their advisor with them.
  for (auto it = advice_.begin(); it != advice_.end();) {
    const Job* job = jobs_.Find(it->first);
    bool running = job && job->state == JobState::kRunning && job->attempt == it->second.attempt;
    it = running ? std::next(it) : advice_.erase(it);
  }
  std::vector<JobId> running;
  for (JobId id : jobs_.active()) {
    if (jobs_.At(id).state == JobState::kRunning) running.push_back(id);
  }
  for (JobId id : running) {
    Job& job = jobs_.At(id);
    JobSample sample;
    JobSample::Reads reads;
    bool reads_known = true;  // every task's reads, or none: a part would say too little
    for (const Task& t : job.tasks) {
      if (IsTerminal(t.state)) continue;
      for (int index : t.gpus) {
        auto gpu = resources_.LatestGpu(t.node_id, index);
        if (!gpu || !gpu->utilization_percent) continue;
        sample.gpu_busy.push_back(*gpu->utilization_percent / 100.0);
        sample.at = std::max(sample.at, gpu->at);
      }
      auto task = resources_.Task(t.node_id, job.IdOf(t));
      if (!task.empty() && task.back().milli_cpus) {
        sample.cpus_used += static_cast<double>(*task.back().milli_cpus) / 1000;
      }
      if (!task.empty() && task.back().read_bytes_per_s && task.back().read_calls_per_s) {
        reads.bytes_per_s += static_cast<double>(*task.back().read_bytes_per_s);
        reads.calls_per_s += static_cast<double>(*task.back().read_calls_per_s);
        ++reads.tasks;
      } else {
        reads_known = false;
      }
      sample.cpus_requested += static_cast<double>(t.resources.milli_cpus) / 1000;
    }
    if (reads_known && reads.tasks > 0) sample.reads = reads;
    if (sample.gpu_busy.empty()) continue;  // GPUs it cannot see: nothing to say
    auto [it, added] = advice_.try_emplace(id);
    State& state = it->second;
    if (added) {
      state.attempt = job.attempt;
      state.advisor = JobAdvisor(config_.advisor);
    }
    if (sample.at <= state.last_sample) continue;  // nothing new since the last tick
    state.last_sample = sample.at;
    state.advisor.Observe(sample);
    std::vector<Advice> advice = state.advisor.AdviceAt(now);
    std::set<AdviceKind> holding;
    std::vector<JobEvent> events;
    for (const Advice& a : advice) {
      holding.insert(a.kind);
      if (state.told.count(a.kind)) continue;
      events.push_back(
          jobs_.Event(job, "advice", fmt::format("{}: {}", AdviceKindName(a.kind), a.text)));
      spdlog::info("job {}: {}", id, a.text);
    }
    state.told = holding;
    if (config_.reclaim_idle_gpus && holding.count(AdviceKind::kIdle)) {
      auto idle = std::find_if(advice.begin(), advice.end(),
                               [](const Advice& a) { return a.kind == AdviceKind::kIdle; });
      lifecycle_.ReclaimIdle(job, idle->text, config_.advisor.idle_after, events);
    }
    if (!events.empty()) jobs_.Commit(job, std::move(events));
  }
}

std::vector<Advice> JobAdvice::For(JobId id) const {
  auto it = advice_.find(id);
  if (it == advice_.end()) return {};
  return it->second.advisor.AdviceAt(clock_.Now());
}

}  // namespace cohort::master
