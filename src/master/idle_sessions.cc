#include "master/idle_sessions.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "common/units.h"

namespace cohort::master {
namespace {

// A sample older than this says nothing of now: its agent stopped reporting (and the node's
// loss is judged elsewhere).
constexpr Duration kFreshSample = std::chrono::minutes(1);

// "its GPU idle and no input", "its 2 GPUs idle and no input", "no input".
std::string WhatIsIdle(int gpus) {
  if (gpus == 0) return "no input";
  if (gpus == 1) return "its GPU idle and no input";
  return fmt::format("its {} GPUs idle and no input", gpus);
}

}  // namespace

IdleSessions::IdleSessions(const SessionPolicy& policy, JobBook& jobs,
                           const ResourceHistory& resources, JobLifecycle& lifecycle)
    : policy_(policy), jobs_(jobs), resources_(resources), lifecycle_(lifecycle) {}

void IdleSessions::NoteInput(JobId id, Timestamp now) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;  // not watched yet: its watch starts as used
  State& s = it->second;
  s.used_at = std::max(s.used_at, now);
  if (s.warned) {
    s.warned = false;
    Say(id, "in use again: the session stays");
  }
}

std::optional<Duration> IdleSessions::IdleFor(JobId id, Timestamp now) const {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  return now - it->second.used_at;
}

void IdleSessions::Tick(Timestamp now) {
  // Sessions that no longer run are forgotten.
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const Job* job = jobs_.Find(it->first);
    bool running = job && job->state == JobState::kRunning && job->attempt == it->second.attempt;
    it = running ? std::next(it) : sessions_.erase(it);
  }
  std::vector<JobId> running;
  for (JobId id : jobs_.active()) {
    const Job& job = jobs_.At(id);
    if (job.spec.session && job.state == JobState::kRunning) running.push_back(id);
  }
  for (JobId id : running) {
    Job& job = jobs_.At(id);
    auto [it, added] = sessions_.try_emplace(id, State{job.attempt, now, false});
    if (added) continue;
    State& s = it->second;
    int gpus = 0;
    for (const Task& t : job.tasks) {
      if (IsTerminal(t.state)) continue;
      for (int index : t.gpus) {
        ++gpus;
        // A GPU whose newest sample is busy is in use now: samples come with the agent's
        // reports, seconds late, and a busy GPU must not look idle for that long.
        auto gpu = resources_.LatestGpu(t.node_id, index);
        if (!gpu || !gpu->utilization_percent || now - gpu->at > kFreshSample) continue;
        if (*gpu->utilization_percent / 100.0 <= policy_.busy_above) continue;
        s.used_at = now;
        if (s.warned) {
          s.warned = false;
          Say(id, "its GPUs are in use again: the session stays");
        }
      }
    }
    const Duration idle = now - s.used_at;
    const Duration timeout = IdleTimeoutOf(policy_, job.spec);
    if (idle >= timeout) {
      std::string reason = fmt::format("ended: idle for {} ({}), its idle timeout",
                                       FormatDuration(timeout), WhatIsIdle(gpus));
      Say(id, "this session ends now: " + reason.substr(7));
      std::vector<JobEvent> events;
      lifecycle_.EndIdleSession(job, reason, events);
      jobs_.Commit(job, std::move(events));
      sessions_.erase(id);
      continue;
    }
    if (!s.warned && idle >= timeout - WarningOf(policy_, job.spec)) {
      s.warned = true;
      std::string text =
          fmt::format("idle for {} ({}): this session ends in {} unless it is used",
                      FormatDuration(idle), WhatIsIdle(gpus), FormatDuration(timeout - idle));
      spdlog::info("session {}: {}", id, text);
      jobs_.Commit(job, {jobs_.Event(job, "idle", text)});
      Say(id, text);
    }
  }
}

}  // namespace cohort::master
