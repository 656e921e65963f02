// sim run / sim gen: replay traces through the scheduler and compare policies.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "cli/cli.h"
#include "cli/policy_tuning_flags.h"
#include "common/units.h"
#include "scheduler/policy_tuning.h"
#include "sim/generate.h"
#include "sim/plot.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/team_quotas.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

struct SimRunOptions {
  std::string trace;
  std::string format;
  std::string cluster;
  int nodes = 0;
  int gpus_per_node = 0;
  int racks = 0;
  std::string teams;
  std::vector<std::string> policies;
  std::string out;
  uint64_t seed = 1;
  std::string restart_cost = "30s";
  std::string checkpoint_interval = "10m";
  std::string grace = "30s";
  double runtime_estimate = 2.0;
  int64_t incremental_above = 0;  // 0: never
  std::string default_runtime;
  std::string node_failures;  // empty: nodes never fail
  std::string node_repair;    // empty: 1h
  int max_attempts = kDefaultMaxAttempts;
  bool plain_trials = false;
  std::string output = "table";
  scheduler::PolicyTuning tuning;
};

struct SimGenOptions {
  size_t jobs = 1000;
  uint64_t seed = 1;
  double rate = 60;
  int teams = 0;
  double team_skew = 0;
  bool team_shapes = false;
  int users = 20;
  double load = 0;
  int64_t cluster_gpus = 0;
  std::vector<std::string> sweeps;
  std::string out;
};

StatusOr<double> Seconds(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return Status::InvalidArgument(fmt::format("{}: {}", flag, d.status().message()));
  return static_cast<double>(d->count()) / 1e6;
}

bool WriteFile(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

// `--teams auto`: says on stderr which teams the trace has and what each is guaranteed.
void PrintTeamsFromTrace(const std::vector<sim::TraceTeam>& teams,
                         const std::vector<TeamQuota>& quotas, int64_t gpus) {
  double total = 0;
  for (const auto& t : teams) total += t.gpu_seconds;
  fmt::print(stderr, "teams from the trace, guaranteed GPUs by GPU-hours (of {} GPUs):\n", gpus);
  for (size_t i = 0; i < teams.size(); ++i) {
    fmt::print(stderr, "  {:<16} {:>7} jobs {:>12.1f} GPU-h {:>6.2f}% -> {:>6} GPUs\n",
               teams[i].name, teams[i].jobs, teams[i].gpu_seconds / 3600,
               total > 0 ? teams[i].gpu_seconds / total * 100 : 0.0, quotas[i].guaranteed_gpus);
  }
}

int RunSim(const SimRunOptions& o) {
  std::optional<sim::TraceFormat> format;
  if (!o.format.empty()) {
    auto f = sim::ParseTraceFormat(o.format);
    if (!f.ok()) return Fail("sim run", f.status());
    format = *f;
  }
  auto trace = sim::LoadTrace(o.trace, format);
  if (!trace.ok()) return Fail("sim run", trace.status());
  sim::ClusterSpec cluster;
  if (!o.cluster.empty()) {
    auto spec = sim::LoadClusterSpec(o.cluster);
    if (!spec.ok()) return Fail("sim run", spec.status());
    cluster = *spec;
  }
  if (o.nodes > 0) cluster.nodes = o.nodes;
  if (o.gpus_per_node > 0) cluster.gpus_per_node = o.gpus_per_node;
  if (o.racks > 0) cluster.racks = o.racks;
  cluster.seed = o.seed;
  if (o.teams == "auto") {
    cluster.teams_from_trace = true;
  } else if (!o.teams.empty()) {
    auto teams = sim::ParseTeams(o.teams);
    if (!teams.ok()) return Fail("sim run", teams.status());
    cluster.teams = *teams;
    cluster.teams_from_trace = false;
  }
  std::vector<sim::TraceTeam> trace_teams;
  if (cluster.teams_from_trace) {
    trace_teams = sim::TeamsOfTrace(*trace);
    cluster.teams = sim::QuotasByGpuHours(trace_teams, cluster.TotalGpus());
  }
  sim::SimOptions base;
  for (auto [flag, text, out] :
       {std::tuple{"--restart-cost", &o.restart_cost, &base.restart_cost_seconds},
        std::tuple{"--checkpoint-interval", &o.checkpoint_interval,
                   &base.checkpoint_interval_seconds},
        std::tuple{"--grace", &o.grace, &base.grace_seconds}}) {
    auto s = Seconds(flag, *text);
    if (!s.ok()) return Fail("sim run", s.status());
    *out = *s;
  }
  if (o.runtime_estimate < 0) {
    return Fail("sim run", Status::InvalidArgument("--runtime-estimate: must be 0 or more"));
  }
  base.runtime_estimate = o.runtime_estimate;
  if (o.incremental_above < 0) {
    return Fail("sim run", Status::InvalidArgument("--incremental-above: must be 0 or more"));
  }
  if (o.incremental_above > 0) base.incremental_above = static_cast<size_t>(o.incremental_above);
  if (!o.node_failures.empty()) {
    auto mtbf = Seconds("--node-failures", o.node_failures);
    if (!mtbf.ok()) return Fail("sim run", mtbf.status());
    if (*mtbf <= 0) {
      return Fail("sim run", Status::InvalidArgument(
                                 "--node-failures: must be more than 0s: the mean time each node "
                                 "stays up before it fails (leave the flag out for none)"));
    }
    base.node_mtbf_seconds = *mtbf;
    base.failure_seed = o.seed;
    if (o.node_repair == "never") {
      base.node_repair_seconds = std::numeric_limits<double>::infinity();
    } else if (!o.node_repair.empty()) {
      auto repair = Seconds("--node-repair", o.node_repair);
      if (!repair.ok()) {
        return Fail("sim run", Status::InvalidArgument(repair.status().message() + ", or never"));
      }
      base.node_repair_seconds = *repair;
    }
  } else if (!o.node_repair.empty()) {
    return Fail("sim run", Status::InvalidArgument(
                               "--node-repair: only with --node-failures, which makes nodes fail"));
  }
  base.restart.max_attempts = o.max_attempts;
  base.sweep_seed = o.seed;
  base.mark_sweep_trials = !o.plain_trials;
  std::optional<Duration> default_runtime;
  if (!o.default_runtime.empty()) {
    auto d = ParseDuration(o.default_runtime);
    if (!d.ok())
      return Fail("sim run", Status::InvalidArgument("--default-runtime: " + d.status().message()));
    default_runtime = *d;
  }

  std::vector<std::string> policies = o.policies;
  if (policies.empty()) policies = {"fifo", "fifo+backfill", "las", "default"};
  size_t sweeps = 0, trials = 0;
  for (const auto& j : trace->jobs) {
    sweeps += j.sweep.has_value();
    trials += j.sweep ? static_cast<size_t>(j.sweep->trials) : 0;
  }
  fmt::print(stderr,
             "trace {}: {} jobs{} ({} rows, {} skipped); cluster {} nodes x {} GPUs = {} GPUs, {} "
             "racks, {} teams; seed {}\n",
             o.trace, trace->jobs.size() - sweeps,
             sweeps ? fmt::format(" and {} sweep{} of {} trials{}", sweeps, sweeps == 1 ? "" : "s",
                                  trials, o.plain_trials ? " (as plain jobs)" : "")
                    : "",
             trace->rows, trace->skipped.size(), cluster.nodes, cluster.gpus_per_node,
             cluster.TotalGpus(), cluster.racks, cluster.teams.size(), o.seed);
  if (cluster.teams_from_trace) {
    PrintTeamsFromTrace(trace_teams, cluster.teams, cluster.TotalGpus());
  }
  for (size_t i = 0; i < trace->skipped.size() && i < 10; ++i) {
    fmt::print(stderr, "  skipped line {}: {}\n", trace->skipped[i].line, trace->skipped[i].reason);
  }
  if (trace->skipped.size() > 10) {
    fmt::print(stderr, "  ... and {} more skipped rows\n", trace->skipped.size() - 10);
  }
  std::vector<sim::SimResult> results;
  std::vector<sim::Figures> figures;
  Progress progress;
  for (const auto& name : policies) {
    auto config = scheduler::ConfigFor(name);
    if (!config.ok()) {
      return Fail("sim run", Status::InvalidArgument("--policy: " + config.status().message()));
    }
    sim::SimOptions options = base;
    if (Status s = scheduler::ApplyTuning(o.tuning, *config); !s.ok()) return Fail("sim run", s);
    options.scheduler = *config;
    options.scheduler.default_runtime = default_runtime;
    options.label = name;
    options.progress_every = std::max<size_t>(1, trace->jobs.size() / 100);
    options.progress = [&](size_t done, size_t total) {
      progress.Update(fmt::format("{}: {}/{} jobs finished", name, done, total));
    };
    results.push_back(sim::Simulate(*trace, cluster, options));
    progress.Done();
    const auto& causes = results.back().preemptions_by_cause;
    std::vector<std::string> counts;
    for (PreemptionCause c : kPreemptionCauses) {
      auto it = causes.find(c);
      counts.push_back(fmt::format("{} {}", PreemptionCauseName(c),
                                   it == causes.end() ? size_t{0} : it->second));
    }
    fmt::print(stderr, "{}: preemptions by cause: {}\n", name, fmt::join(counts, ", "));
    figures.push_back(sim::Summarize(results.back()));
    const auto& r = results.back();
    if (r.node_failures_simulated) {
      const sim::Figures& f = figures.back();
      fmt::print(stderr,
                 "{}: node failures: {}, jobs hit {}, GPU-h lost to them {:.1f} ({:.1f}%), jobs "
                 "failed out of attempts {}, GPUs down at the end {}\n",
                 name, f.node_failures, f.jobs_hit_by_failures, f.failure_lost_gpu_seconds / 3600,
                 f.failure_lost_share * 100, r.out_of_attempts, r.down_gpus_at_end);
    }
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: KiB on Linux
    fmt::print(stderr, "{}: {} passes in {:.1f}s, peak memory so far {} MiB{}\n", name, r.passes,
               r.wall_seconds, usage.ru_maxrss / 1024,
               r.refused.empty() ? "" : fmt::format("; {} jobs could never run", r.refused.size()));
    for (size_t i = 0; i < r.refused.size() && i < 5; ++i) {
      fmt::print(stderr, "  refused {}: {}\n", r.refused[i].first, r.refused[i].second);
    }
  }
  if (o.output == "json") {
    fmt::print("{}\n", sim::FiguresJson(figures).dump(2));
  } else {
    std::string sweep_rows = sim::SweepsTable(figures);
    fmt::print("{}\n{}{}", sim::FiguresTable(figures),
               cluster.teams.empty() ? "" : "\n" + sim::TeamsTable(figures),
               sweep_rows.empty() ? "" : "\n" + sweep_rows);
  }
  if (!o.out.empty()) {
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) {
      return Fail("sim run",
                  Status::Internal(fmt::format("cannot create {}: {}", o.out, ec.message())));
    }
    fs::path dir(o.out);
    bool ok = WriteFile(dir / "summary.csv", sim::FiguresCsv(figures)) &&
              WriteFile(dir / "summary.json", sim::FiguresJson(figures).dump(2) + "\n") &&
              WriteFile(dir / "utilization.svg", sim::UtilizationChart(results)) &&
              WriteFile(dir / "queue.svg", sim::QueueChart(results)) &&
              WriteFile(dir / "jct-cdf.svg", sim::CompletionTimeCdf(results));
    for (const auto& r : results) {
      std::string file = "jobs-" + r.label + ".csv";
      std::replace(file.begin(), file.end(), '+', '_');
      ok = ok && WriteFile(dir / file, sim::JobsCsv(r));
    }
    if (!ok) return Fail("sim run", Status::Internal(fmt::format("cannot write into {}", o.out)));
    fmt::print(stderr,
               "wrote summary.csv, summary.json, jobs-*.csv, utilization.svg, queue.svg "
               "and jct-cdf.svg into {}\n",
               o.out);
  }
  return 0;
}

int RunGen(const SimGenOptions& o) {
  auto bad = [](const std::string& why) { return Fail("sim gen", Status::InvalidArgument(why)); };
  if (o.teams == 0 && (o.team_skew > 0 || o.team_shapes)) {
    return bad("--team-skew and --team-shapes need --teams");
  }
  if (o.load > 0 && o.cluster_gpus <= 0) {
    return bad("--load needs --cluster-gpus: the load is a share of the cluster's GPUs");
  }
  if (o.cluster_gpus > 0 && o.load <= 0) return bad("--cluster-gpus is for --load");
  sim::GenerateOptions g;
  g.jobs = o.jobs;
  g.seed = o.seed;
  g.jobs_per_hour = o.rate;
  g.teams = o.teams;
  g.team_skew = o.team_skew;
  g.team_shapes = o.team_shapes;
  g.users = o.users;
  g.load = o.load;
  g.cluster_gpus = o.cluster_gpus;
  auto jobs = sim::GenerateTrace(g);
  std::vector<sim::TraceJob> rows;
  for (size_t i = 0; i < o.sweeps.size(); ++i) {
    auto row = sim::ParseSweepRow(o.sweeps[i], fmt::format("sweep-{}", i));
    if (!row.ok()) return Fail("sim gen", row.status());
    rows.push_back(std::move(*row));
  }
  sim::AddRows(jobs, std::move(rows));
  if (o.load > 0 && jobs.size() > 1) {
    double span = jobs.back().submit - jobs.front().submit;
    fmt::print(stderr,
               "load {} on {} GPUs: {:.1f} GPUs busy on average, {:.2f} arrivals an hour over "
               "{:.1f} hours\n",
               o.load, o.cluster_gpus, sim::OfferedGpus(jobs),
               span > 0 ? static_cast<double>(jobs.size() - 1) / (span / 3600) : 0.0, span / 3600);
  }
  std::string csv = sim::WriteCohortTrace(jobs);
  if (o.out.empty()) {
    fmt::print("{}", csv);
  } else if (!WriteFile(o.out, csv)) {
    return Fail("sim gen", Status::Internal(fmt::format("cannot write {}", o.out)));
  }
  return 0;
}

}  // namespace

void AddSimCommands(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Simulate: replay traces through the scheduler");
  sim->require_subcommand(1);

  auto run = std::make_shared<SimRunOptions>();
  auto* r = sim->add_subcommand(
      "run", "Replay a trace in simulated time under one or more policies and compare them");
  r->add_option("--trace", run->trace,
                fmt::format("The trace file ({} CSV)", NameList(sim::kTraceFormatNames)))
      ->required();
  r->add_option("--format", run->format,
                NameList(sim::kTraceFormatNames) + " (default: from the header)");
  r->add_option("--cluster", run->cluster,
                "Cluster spec YAML: {nodes, gpus_per_node, cpus, memory, racks, teams}");
  r->add_option("--nodes", run->nodes, "Nodes (overrides the spec; default 16)")
      ->check(CLI::Range(1, 1'000'000));
  r->add_option("--gpus-per-node", run->gpus_per_node, "GPUs per node (default 8)")
      ->check(CLI::Range(1, 1024));
  r->add_option("--racks", run->racks, "Racks the nodes are spread over")
      ->check(CLI::Range(1, 100'000));
  r->add_option("--teams", run->teams,
                "Teams and quotas NAME:GPUS[:MAX],...; jobs without a team are spread over them "
                "by a hash of their id. auto: the trace's own teams (jobs without one: default), "
                "guaranteed GPUs in proportion to their GPU-hours in the trace");
  r->add_option("--policy", run->policies,
                "fifo, fifo+backfill, las, default, or the references sjf-oracle and "
                "srtf-oracle, which know every job's true run time (repeatable; default: the "
                "four real policies)");
  r->add_option("--out", run->out, "Write CSV, JSON and SVG plots into this directory");
  r->add_option("--seed", run->seed,
                "Salts how jobs without a team are spread over --teams, and draws node failures; "
                "the run is otherwise deterministic")
      ->capture_default_str();
  r->add_option("--restart-cost", run->restart_cost,
                "Time each restart costs, after a preemption or a lost node")
      ->capture_default_str();
  r->add_option("--checkpoint-interval", run->checkpoint_interval,
                "Work since the last checkpoint is lost by a preemption or a lost node (0s: none)")
      ->capture_default_str();
  r->add_option(
       "--grace", run->grace,
       "From SIGTERM to stopped, for preempted jobs and the rest of a gang that lost a node")
      ->capture_default_str();
  r->add_option("--incremental-above", run->incremental_above,
                "As the master's flag: with at least this many jobs waiting, decide arrivals and "
                "completions between full passes, the full pass on the next tick (0: never)")
      ->capture_default_str();
  r->add_option("--runtime-estimate", run->runtime_estimate,
                "Jobs without max_runtime declare this multiple of their duration (0: none)")
      ->capture_default_str();
  r->add_option("--default-runtime", run->default_runtime,
                "Assumed run time of jobs without max_runtime, for reservations");
  r->add_option("--node-failures", run->node_failures,
                "Nodes fail: each stays up for a random time with this mean (exponential, drawn "
                "from --seed), e.g. 500h; its jobs lose their attempt as on a real cluster");
  r->add_option("--node-repair", run->node_repair,
                "How long a failed node stays down before it comes back empty, or never "
                "(default 1h)");
  r->add_option("--max-attempts", run->max_attempts,
                "Every job's restart.max_attempts: attempts that lost nodes may end before the "
                "job ends FAILED")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  r->add_flag("--plain-trials", run->plain_trials,
              "Replay sweeps' trials as plain jobs, not marked as trials (which, beyond their "
              "team's guarantee, are the first jobs reclaimed): to measure that rule");
  AddPolicyTuningFlags(r, run->tuning);
  AddOutputOption(r, run->output);
  r->callback([run] { Finish(RunSim(*run)); });

  auto gen = std::make_shared<SimGenOptions>();
  auto* g = sim->add_subcommand(
      "gen", "Generate a synthetic trace shaped like the ITP traces (Cohort CSV)");
  g->add_option("--jobs", gen->jobs, "Number of jobs")->capture_default_str();
  g->add_option("--seed", gen->seed, "Random seed")->capture_default_str();
  auto* rate = g->add_option("--rate", gen->rate, "Arrivals per hour (Poisson)")
                   ->capture_default_str()
                   ->check(NumberAbove(0));
  g->add_option("--teams", gen->teams, "Spread jobs over this many teams (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100'000));
  g->add_option("--team-skew", gen->team_skew,
                "Job counts per team: team k (from 0) gets a share in proportion to (k+1)^-S "
                "(0: equal; 2 with 15 teams: 63% of the jobs down to 0.3%)")
      ->capture_default_str()
      ->check(NumberFrom(0));
  g->add_flag("--team-shapes", gen->team_shapes,
              "Each team its own job shapes, drawn from the seed: durations scaled by 1/4..4, "
              "multi-GPU jobs 1/4..4 times as common as in ITP");
  g->add_option("--users", gen->users, "Users, user-0 .. user-(N-1), drawn for every job")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  g->add_option("--load", gen->load,
                "Pace arrivals so that the trace's GPU-hours fill this share of --cluster-gpus "
                "over the span of its submissions (instead of --rate)")
      ->check(NumberAbove(0))
      ->excludes(rate);
  g->add_option("--cluster-gpus", gen->cluster_gpus, "The GPUs --load is a share of")
      ->check(CLI::Range(int64_t{1}, int64_t{100'000'000}));
  g->add_option(
      "--sweep", gen->sweeps,
      "Add a sweep row (repeatable), e.g. "
      "\"trials=200;concurrency=16;divisor=3;rungs=4;gpus=1;length=4h;at=10h;team=team-0\" "
      "(stop=F or F1/F2/..: the share stopped at each rung; default 1-1/divisor)");
  g->add_option("--out", gen->out, "Write here instead of stdout");
  g->callback([gen] { Finish(RunGen(*gen)); });

  AddSimTraceCommands(sim);
}

}  // namespace cohort::cli
