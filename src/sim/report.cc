#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cohort::sim {

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Figures Summarize(const SimResult& r) {
  Figures f;
  f.label = r.label;
  f.refused = r.refused.size();
  f.passes = r.passes;
  f.wall_seconds = r.wall_seconds;
  std::vector<double> jct, queueing;
  double first_submit = std::numeric_limits<double>::infinity(), last_end = 0;
  size_t preemptions = 0;
  double lost = 0;
  f.node_failures_simulated = r.node_failures_simulated;
  f.node_failures = r.node_failures;
  std::map<std::string, std::vector<double>> team_queueing;
  std::vector<double> guaranteed;
  std::map<std::string, double> team_guaranteed;
  for (const auto& j : r.jobs) {
    if (!j.sweep.empty()) {
      ++f.trials;
      if (j.start >= 0) first_submit = std::min(first_submit, j.submit);
      if (j.end >= 0) last_end = std::max(last_end, j.end);
      continue;
    }
    if (j.guaranteed_wait >= 0) {
      guaranteed.push_back(j.guaranteed_wait);
      double& longest = team_guaranteed[j.team];
      longest = std::max(longest, j.guaranteed_wait);
    }
    if (j.start < 0) continue;  // refused
    first_submit = std::min(first_submit, j.submit);
    queueing.push_back(j.queued);
    team_queueing[j.team].push_back(j.queued);
    preemptions += static_cast<size_t>(j.preemptions);
    lost += j.lost_gpu_seconds;
    f.failure_lost_gpu_seconds += j.failure_lost_gpu_seconds;
    f.jobs_hit_by_failures += j.node_failures > 0;
    if (j.end >= 0) {
      last_end = std::max(last_end, j.end);
      if (j.failed) {
        ++f.failed;
      } else {
        ++f.finished;
        jct.push_back(j.end - j.submit);
      }
    }
  }
  auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0
                     : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  f.jobs = r.jobs.size() - f.trials;
  f.unfinished = f.jobs - f.finished;
  f.avg_jct = mean(jct);
  f.median_jct = Quantile(jct, 0.5);
  f.p95_jct = Quantile(jct, 0.95);
  f.p99_jct = Quantile(jct, 0.99);
  f.avg_queueing = mean(queueing);
  f.p99_queueing = Quantile(queueing, 0.99);
  f.median_queueing = Quantile(queueing, 0.5);
  f.p95_queueing = Quantile(queueing, 0.95);
  f.max_guaranteed_wait =
      guaranteed.empty() ? 0 : *std::max_element(guaranteed.begin(), guaranteed.end());
  f.p99_guaranteed_wait = Quantile(guaranteed, 0.99);
  f.makespan = std::isinf(first_submit) ? 0 : last_end - first_submit;
  size_t started = queueing.size();
  f.preemptions_per_job =
      started ? static_cast<double>(preemptions) / static_cast<double>(started) : 0;
  // Allocated GPU-time: the integral of the used-GPU step function.
  double gpu_time = 0;
  for (size_t i = 0; i + 1 < r.samples.size(); ++i) {
    gpu_time +=
        static_cast<double>(r.samples[i].used_gpus) * (r.samples[i + 1].time - r.samples[i].time);
  }
  double capacity = static_cast<double>(r.capacity_gpus) * f.makespan;
  f.utilization = capacity > 0 ? gpu_time / capacity : 0;
  f.used_gpu_seconds = gpu_time;
  f.lost_gpu_seconds = lost;
  f.lost_share = gpu_time > 0 ? lost / gpu_time : 0;
  f.failure_lost_share = gpu_time > 0 ? f.failure_lost_gpu_seconds / gpu_time : 0;
  for (const auto& s : r.sweeps) {
    SweepFigures sf;
    sf.sweep = s;
    double until = s.end >= 0 ? s.end : std::numeric_limits<double>::infinity();
    std::vector<double> waits;
    for (const auto& j : r.jobs) {
      if (j.sweep.empty() && j.start >= 0 && j.submit >= s.submit && j.submit <= until) {
        waits.push_back(j.queued);
      }
    }
    sf.others = waits.size();
    sf.others_median_wait = Quantile(waits, 0.5);
    sf.others_p95_wait = Quantile(waits, 0.95);
    f.sweeps.push_back(std::move(sf));
  }
  for (const auto& q : r.teams) team_queueing[q.name];  // teams with no job started too
  std::map<std::string, size_t> team_jobs;
  for (const auto& j : r.jobs) {
    if (j.start < 0 || !j.sweep.empty()) continue;
    ++team_jobs[j.team];
  }
  for (const auto& [team, delays] : team_queueing) {
    TeamFigures t;
    t.team = team;
    t.jobs = team_jobs[team];
    t.avg_queueing_delay = mean(delays);
    t.max_guaranteed_wait = team_guaranteed[team];
    for (const auto& q : r.teams) {
      if (q.name == team) t.guaranteed_gpus = q.guaranteed_gpus;
    }
    t.quota_share = r.capacity_gpus ? static_cast<double>(t.guaranteed_gpus) /
                                          static_cast<double>(r.capacity_gpus)
                                    : 0;
    auto held = r.team_gpu_seconds.find(team);
    t.received_share =
        capacity > 0 && held != r.team_gpu_seconds.end() ? held->second / capacity : 0;
    f.teams.push_back(t);
  }
  return f;
}

std::string FiguresTable(const std::vector<Figures>& runs) {
  // Only runs with node failures get their columns: the table of others stays as it was.
  bool failures = std::any_of(runs.begin(), runs.end(),
                              [](const Figures& f) { return f.node_failures_simulated; });
  std::string out = fmt::format(
      "{:<16} {:>7} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>8} {:>18} "
      "{:>10}",
      "policy", "jobs", "finished", "avg JCT", "median", "p95 JCT", "p99 JCT", "avg wait",
      "p99 wait", "makespan", "util", "preempt", "GPU-h lost", "unfinished");
  if (failures) out += fmt::format(" {:>9} {:>8} {:>18}", "node fail", "jobs hit", "GPU-h failed");
  out += "\n";
  auto h = [](double s) { return fmt::format("{:.2f}h", s / 3600); };
  for (const auto& f : runs) {
    std::string lost =
        fmt::format("{:.1f} ({:.1f}%)", f.lost_gpu_seconds / 3600, f.lost_share * 100);
    out += fmt::format(
        "{:<16} {:>7} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>5.1f}% {:>8.3f} "
        "{:>18} {:>10}",
        f.label, f.jobs, f.finished, h(f.avg_jct), h(f.median_jct), h(f.p95_jct), h(f.p99_jct),
        h(f.avg_queueing), h(f.p99_queueing), h(f.makespan), f.utilization * 100,
        f.preemptions_per_job, lost, f.unfinished);
    if (failures) {
      out += fmt::format(" {:>9} {:>8} {:>18}", f.node_failures, f.jobs_hit_by_failures,
                         fmt::format("{:.1f} ({:.1f}%)", f.failure_lost_gpu_seconds / 3600,
                                     f.failure_lost_share * 100));
    }
    out += "\n";
  }
  return out;
}

std::string TeamsTable(const std::vector<Figures>& runs) {
  std::string out =
      fmt::format("{:<16} {:<12} {:>7} {:>12} {:>15} {:>10} {:>22}\n", "policy", "team", "jobs",
                  "quota share", "received share", "avg wait", "max wait in guarantee");
  for (const auto& f : runs) {
    for (const auto& t : f.teams) {
      out += fmt::format("{:<16} {:<12} {:>7} {:>11.1f}% {:>14.1f}% {:>9.2f}h {:>21.0f}s\n",
                         f.label, t.team, t.jobs, t.quota_share * 100, t.received_share * 100,
                         t.avg_queueing_delay / 3600, t.max_guaranteed_wait);
    }
  }
  return out;
}

std::string SweepsTable(const std::vector<Figures>& runs) {
  bool any =
      std::any_of(runs.begin(), runs.end(), [](const Figures& f) { return !f.sweeps.empty(); });
  if (!any) return "";
  std::string out =
      fmt::format("{:<16} {:<14} {:>7} {:>7} {:>9} {:>10} {:>9} {:>10} {:>8} {:>7} {:>13} {:>10}\n",
                  "policy", "sweep", "trials", "ended", "complete", "makespan", "GPU-h",
                  "GPU-h lost", "preempt", "others", "median wait", "p95 wait");
  for (const auto& f : runs) {
    for (const auto& sf : f.sweeps) {
      const SweepRecord& s = sf.sweep;
      out += fmt::format(
          "{:<16} {:<14} {:>7} {:>7} {:>9} {:>10} {:>9.1f} {:>10.1f} {:>8} {:>7} {:>12.2f}h "
          "{:>9.2f}h\n",
          f.label, s.id, s.trials, s.ended, s.completed,
          s.end < 0 ? std::string("-") : fmt::format("{:.2f}h", s.Makespan() / 3600),
          s.gpu_seconds / 3600, s.lost_gpu_seconds / 3600, s.preemptions, sf.others,
          sf.others_median_wait / 3600, sf.others_p95_wait / 3600);
    }
  }
  return out;
}

std::string FiguresCsv(const std::vector<Figures>& runs) {
  std::string out =
      "policy,jobs,finished,failed,refused,unfinished,avg_jct_s,median_jct_s,p95_jct_s,p99_jct_s,"
      "avg_queueing_s,p99_queueing_s,makespan_s,utilization,preemptions_per_job,used_gpu_hours,"
      "lost_gpu_hours,lost_share,passes,wall_seconds,node_failures,jobs_hit_by_failures,"
      "failure_lost_gpu_hours,failure_lost_share,median_queueing_s,p95_queueing_s,trials\n";
  for (const auto& f : runs) {
    out += fmt::format(
        "{},{},{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.4f},{:.4f},{:.2f},"
        "{:.2f},{:.4f},{},{:.2f},{},{},{:.2f},{:.4f},{:.1f},{:.1f},{}\n",
        f.label, f.jobs, f.finished, f.failed, f.refused, f.unfinished, f.avg_jct, f.median_jct,
        f.p95_jct, f.p99_jct, f.avg_queueing, f.p99_queueing, f.makespan, f.utilization,
        f.preemptions_per_job, f.used_gpu_seconds / 3600, f.lost_gpu_seconds / 3600, f.lost_share,
        f.passes, f.wall_seconds, f.node_failures, f.jobs_hit_by_failures,
        f.failure_lost_gpu_seconds / 3600, f.failure_lost_share, f.median_queueing, f.p95_queueing,
        f.trials);
  }
  return out;
}

Json FiguresJson(const std::vector<Figures>& runs) {
  Json out = Json::array();
  for (const auto& f : runs) {
    Json teams = Json::array();
    for (const auto& t : f.teams) {
      teams.push_back(Json{{"team", t.team},
                           {"jobs", t.jobs},
                           {"guaranteed_gpus", t.guaranteed_gpus},
                           {"quota_share", t.quota_share},
                           {"received_share", t.received_share},
                           {"avg_queueing_s", t.avg_queueing_delay},
                           {"max_guaranteed_wait_s", t.max_guaranteed_wait}});
    }
    Json sweeps = Json::array();
    for (const auto& sf : f.sweeps) {
      const SweepRecord& s = sf.sweep;
      sweeps.push_back(Json{{"sweep", s.id},
                            {"team", s.team},
                            {"trials", s.trials},
                            {"concurrency", s.concurrency},
                            {"gpus_per_trial", s.gpus},
                            {"rungs", s.rungs},
                            {"submit_s", s.submit},
                            {"makespan_s", s.Makespan()},
                            {"ended", s.ended},
                            {"completed", s.completed},
                            {"gpu_hours", s.gpu_seconds / 3600},
                            {"lost_gpu_hours", s.lost_gpu_seconds / 3600},
                            {"preemptions", s.preemptions},
                            {"others", sf.others},
                            {"others_median_queueing_s", sf.others_median_wait},
                            {"others_p95_queueing_s", sf.others_p95_wait}});
    }
    out.push_back(Json{{"policy", f.label},
                       {"jobs", f.jobs},
                       {"finished", f.finished},
                       {"failed", f.failed},
                       {"refused", f.refused},
                       {"unfinished", f.unfinished},
                       {"avg_jct_s", f.avg_jct},
                       {"median_jct_s", f.median_jct},
                       {"p95_jct_s", f.p95_jct},
                       {"p99_jct_s", f.p99_jct},
                       {"avg_queueing_s", f.avg_queueing},
                       {"p99_queueing_s", f.p99_queueing},
                       {"median_queueing_s", f.median_queueing},
                       {"p95_queueing_s", f.p95_queueing},
                       {"trials", f.trials},
                       {"sweeps", sweeps},
                       {"max_guaranteed_wait_s", f.max_guaranteed_wait},
                       {"p99_guaranteed_wait_s", f.p99_guaranteed_wait},
                       {"makespan_s", f.makespan},
                       {"utilization", f.utilization},
                       {"preemptions_per_job", f.preemptions_per_job},
                       {"used_gpu_hours", f.used_gpu_seconds / 3600},
                       {"lost_gpu_hours", f.lost_gpu_seconds / 3600},
                       {"lost_share", f.lost_share},
                       {"passes", f.passes},
                       {"wall_seconds", f.wall_seconds},
                       {"node_failures", f.node_failures},
                       {"jobs_hit_by_failures", f.jobs_hit_by_failures},
                       {"failure_lost_gpu_hours", f.failure_lost_gpu_seconds / 3600},
                       {"failure_lost_share", f.failure_lost_share},
                       {"teams", teams}});
  }
  return out;
}

std::string JobsCsv(const SimResult& r) {
  std::string out =
      "job_id,team,user,gpus,submit,start,end,queued,attempts,preemptions,failed,"
      "lost_gpu_seconds,node_failures,failure_lost_gpu_seconds,guaranteed_wait";
  // Only a replay with sweeps has their columns: the file of others stays as it was.
  bool sweeps = !r.sweeps.empty();
  out += sweeps ? ",sweep,rung\n" : "\n";
  for (const auto& j : r.jobs) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", j.id, j.team, j.user, j.gpus,
                       j.submit, j.start, j.end, j.queued, j.attempts, j.preemptions,
                       j.failed ? 1 : 0, j.lost_gpu_seconds, j.node_failures,
                       j.failure_lost_gpu_seconds, j.guaranteed_wait);
    out += sweeps ? fmt::format(",{},{}\n", j.sweep, j.rung) : "\n";
  }
  return out;
}

}  // namespace cohort::sim
