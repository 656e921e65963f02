#include "master/cluster_metrics.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>

namespace cohort::master {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1e6; }

// Label values are lower case, as Prometheus' own are: "pending", "ready".
std::string LowerCase(std::string_view name) {
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// When a pending job joined the queue: its submission, or the end of its last attempt if it was
// requeued (a failure, a lost node, a preemption).
Timestamp WaitingSince(const Job& job) {
  if (!job.history.empty() && job.history.back().finished_at) {
    return std::max(job.submitted_at, *job.history.back().finished_at);
  }
  return job.submitted_at;
}

// What the agents last measured of each GPU: only GPUs whose figure is known (never declared
// ones), so that a dashboard's average is not pulled down by made-up zeros.
void WriteGpuLoad(const Master& master, const std::vector<NodeStatus>& nodes, PrometheusText& out) {
  out.Family("cohort_gpu_utilization_ratio", MetricType::kGauge,
             "Fraction of the last sample period in which a kernel ran on the GPU (NVML "
             "utilization.gpu / 100), as its agent last sampled it; absent when unknown.");
  for (const auto& n : nodes) {
    for (const Gpu& gpu : n.node->info.gpus) {
      auto sample = master.nodes().resources().LatestGpu(n.node->info.id, gpu.index);
      if (!sample || !sample->utilization_percent) continue;
      out.Sample("cohort_gpu_utilization_ratio",
                 {{"node", n.node->info.id}, {"gpu", std::to_string(gpu.index)}},
                 *sample->utilization_percent / 100.0);
    }
  }
  out.Family("cohort_gpu_memory_used_bytes", MetricType::kGauge,
             "GPU memory in use, as its agent last sampled it; absent when unknown.");
  for (const auto& n : nodes) {
    for (const Gpu& gpu : n.node->info.gpus) {
      auto sample = master.nodes().resources().LatestGpu(n.node->info.id, gpu.index);
      if (!sample || !sample->memory_used_bytes) continue;
      out.Sample("cohort_gpu_memory_used_bytes",
                 {{"node", n.node->info.id}, {"gpu", std::to_string(gpu.index)}},
                 static_cast<double>(*sample->memory_used_bytes));
    }
  }
}

void WriteNodes(const Master& master, const std::vector<NodeStatus>& nodes, PrometheusText& out) {
  out.Family("cohort_gpus", MetricType::kGauge, "GPUs a node has.");
  for (const auto& n : nodes) {
    out.Sample("cohort_gpus", {{"node", n.node->info.id}},
               static_cast<double>(n.node->info.gpus.size()));
  }
  // Who holds each GPU, as `cohort nodes` shows it, summed per team. A team with none on a
  // node has no series there.
  out.Family("cohort_gpus_allocated", MetricType::kGauge,
             "GPUs of a node held by a team's tasks (absent: none).");
  for (const auto& n : nodes) {
    std::map<std::string, int> by_team;
    for (const auto& [index, holder] : n.gpu_holders) {
      auto job = master.GetJob(holder.job_id);
      if (job.ok()) ++by_team[(*job)->spec.team];
    }
    for (const auto& [team, gpus] : by_team) {
      out.Sample("cohort_gpus_allocated", {{"node", n.node->info.id}, {"team", team}}, gpus);
    }
  }
  // How busy the GPUs a team holds on a node are, summed: 3 GPUs at 50% are 1.5 busy GPUs. Only
  // GPUs whose utilisation is known count, so a team on declared GPUs has no series.
  out.Family("cohort_gpus_busy", MetricType::kGauge,
             "Sum of the utilisation (0..1) of the GPUs of a node held by a team's tasks, as "
             "their agent last sampled it; absent when none is known.");
  for (const auto& n : nodes) {
    std::map<std::string, double> busy;
    for (const auto& [index, holder] : n.gpu_holders) {
      auto job = master.GetJob(holder.job_id);
      auto sample = master.nodes().resources().LatestGpu(n.node->info.id, index);
      if (!job.ok() || !sample || !sample->utilization_percent) continue;
      busy[(*job)->spec.team] += *sample->utilization_percent / 100.0;
    }
    for (const auto& [team, gpus] : busy) {
      out.Sample("cohort_gpus_busy", {{"node", n.node->info.id}, {"team", team}}, gpus);
    }
  }
  WriteGpuLoad(master, nodes, out);
  out.Family("cohort_node_state", MetricType::kGauge,
             "1 for the node's state (ready, unreachable, lost), 0 for the others.");
  for (const auto& n : nodes) {
    for (const auto& [state, name] : kNodeStateNames) {
      std::string label = LowerCase(name);
      out.Sample("cohort_node_state", {{"node", n.node->info.id}, {"state", label}},
                 n.node->state == state ? 1 : 0);
    }
  }
  out.Family("cohort_node_drained", MetricType::kGauge,
             "1 if an admin drained the node (nothing new is placed there), else 0.");
  for (const auto& n : nodes) {
    out.Sample("cohort_node_drained", {{"node", n.node->info.id}}, n.node->drained ? 1 : 0);
  }
  out.Family("cohort_node_heartbeat_age_seconds", MetricType::kGauge,
             "Seconds since the node's agent last synced with the master.");
  Timestamp now = master.Now();
  for (const auto& n : nodes) {
    out.Sample("cohort_node_heartbeat_age_seconds", {{"node", n.node->info.id}},
               Seconds(std::max(Duration(0), now - n.node->last_seen)));
  }
}

void WriteTeams(const std::vector<TeamStatus>& teams, PrometheusText& out) {
  out.Family("cohort_team_gpus_guaranteed", MetricType::kGauge,
             "GPUs a team may use whatever other teams do.");
  for (const auto& t : teams) {
    out.Sample("cohort_team_gpus_guaranteed", {{"team", t.quota.name}},
               static_cast<double>(t.quota.guaranteed_gpus));
  }
  out.Family("cohort_team_gpus_limit", MetricType::kGauge,
             "The most GPUs a team may hold, borrowing included (absent: no limit).");
  for (const auto& t : teams) {
    if (!t.quota.max_gpus) continue;
    out.Sample("cohort_team_gpus_limit", {{"team", t.quota.name}},
               static_cast<double>(*t.quota.max_gpus));
  }
  out.Family("cohort_team_gpus_used", MetricType::kGauge,
             "GPUs held by a team's starting, running and stopping jobs.");
  for (const auto& t : teams) {
    out.Sample("cohort_team_gpus_used", {{"team", t.quota.name}}, static_cast<double>(t.held.gpus));
  }
  out.Family("cohort_team_gpus_borrowed", MetricType::kGauge,
             "GPUs a team holds beyond its guarantee, which preemption may take back.");
  for (const auto& t : teams) {
    out.Sample("cohort_team_gpus_borrowed", {{"team", t.quota.name}},
               static_cast<double>(t.BorrowedGpus()));
  }
}

void WriteJobs(const Master& master, const std::vector<TeamStatus>& teams, PrometheusText& out) {
  // Every team gets every state, zeros included, so that a count that falls to zero reads 0
  // rather than vanishing; a team deleted since its jobs ended still shows them.
  std::map<std::string, std::map<JobState, int>> counts;
  std::map<std::string, std::optional<Timestamp>> oldest_waiting;
  for (const auto& t : teams) {
    counts[t.quota.name];
    oldest_waiting[t.quota.name];
  }
  for (const Job* job : master.ListJobs(JobFilter{})) {
    ++counts[job->spec.team][job->state];
    if (job->state != JobState::kPending) continue;
    Timestamp since = WaitingSince(*job);
    std::optional<Timestamp>& oldest = oldest_waiting[job->spec.team];
    if (!oldest || since < *oldest) oldest = since;
  }
  out.Family("cohort_jobs", MetricType::kGauge,
             "Jobs the master holds, by team and state; state=\"pending\" is the queue.");
  for (const auto& [team, by_state] : counts) {
    for (const auto& [state, name] : kJobStateNames) {
      auto it = by_state.find(state);
      std::string label = LowerCase(name);
      out.Sample("cohort_jobs", {{"team", team}, {"state", label}},
                 it == by_state.end() ? 0 : it->second);
    }
  }
  out.Family("cohort_queue_oldest_wait_seconds", MetricType::kGauge,
             "How long a team's longest-waiting pending job has waited since it was submitted "
             "or requeued (0: none pending).");
  Timestamp now = master.Now();
  for (const auto& [team, since] : oldest_waiting) {
    double wait = since ? Seconds(std::max(Duration(0), now - *since)) : 0;
    out.Sample("cohort_queue_oldest_wait_seconds", {{"team", team}}, wait);
  }
}

}  // namespace

void WriteClusterMetrics(const Master& master, PrometheusText& out) {
  WriteNodes(master, master.nodes().List(), out);
  std::vector<TeamStatus> teams = master.teams().List();
  WriteTeams(teams, out);
  WriteJobs(master, teams, out);
  out.Family("cohort_scheduling_pass_seconds", MetricType::kHistogram,
             "How long each full scheduling pass held the master's event loop: the decision "
             "and making it real.");
  out.HistogramSamples("cohort_scheduling_pass_seconds", {}, master.scheduling().passes());
  out.Family("cohort_preemptions_total", MetricType::kCounter,
             "Running jobs stopped to make room for a waiting one since the master started, by "
             "the rule that allowed it.");
  const auto& preemptions = master.scheduling().preemptions_by_cause();
  for (PreemptionCause cause : kPreemptionCauses) {
    if (cause == PreemptionCause::kOracle) continue;  // the simulator's reference only
    auto it = preemptions.find(cause);
    out.Sample("cohort_preemptions_total", {{"cause", PreemptionCauseName(cause)}},
               static_cast<double>(it == preemptions.end() ? 0 : it->second));
  }
}

}  // namespace cohort::master
