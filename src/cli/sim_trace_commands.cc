// sim concat / sim split: traces made from other traces, with teams (docs/simulator.md).
#include <fmt/format.h>

#include <fstream>

#include "cli/cli.h"
#include "sim/concat.h"
#include "sim/team_split.h"

namespace cohort::cli {
namespace {

struct SimConcatOptions {
  std::vector<std::string> traces;
  bool keep_teams = false;
  std::string out;
};

struct SimSplitOptions {
  std::string trace;
  int teams = 0;
  double team_skew = 0;
  uint64_t seed = 1;
  std::string out;
};

// Loads a trace of any format, saying on stderr how many rows it skipped and why.
StatusOr<sim::Trace> Load(const std::string& path) {
  auto trace = sim::LoadTrace(path);
  if (!trace.ok()) return trace.status();
  fmt::print(stderr, "{}: {} jobs ({} rows, {} skipped)\n", path, trace->jobs.size(), trace->rows,
             trace->skipped.size());
  for (size_t i = 0; i < trace->skipped.size() && i < 5; ++i) {
    fmt::print(stderr, "  skipped line {}: {}\n", trace->skipped[i].line, trace->skipped[i].reason);
  }
  return trace;
}

int Write(const std::string& command, const std::string& path,
          const std::vector<sim::TraceJob>& jobs) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << sim::WriteCohortTrace(jobs);
  if (!out) return Fail(command, Status::Internal(fmt::format("cannot write {}", path)));
  fmt::print(stderr, "wrote {} jobs to {}\n", jobs.size(), path);
  return 0;
}

int RunConcat(const SimConcatOptions& o) {
  std::vector<sim::Source> sources;
  for (const auto& path : o.traces) {
    auto trace = Load(path);
    if (!trace.ok()) return Fail("sim concat", trace.status());
    sources.push_back(sim::Source{sim::SourceName(path), std::move(*trace)});
  }
  auto jobs = sim::Concatenate(sources, o.keep_teams);
  if (!jobs.ok()) return Fail("sim concat", jobs.status());
  return Write("sim concat", o.out, *jobs);
}

int RunSplit(const SimSplitOptions& o) {
  auto trace = Load(o.trace);
  if (!trace.ok()) return Fail("sim split", trace.status());
  sim::SplitOverTeams(trace->jobs, o.teams, o.team_skew, o.seed);
  return Write("sim split", o.out, trace->jobs);
}

}  // namespace

void AddSimTraceCommands(CLI::App* sim) {
  auto concat = std::make_shared<SimConcatOptions>();
  auto* c = sim->add_subcommand(
      "concat",
      "Write one Cohort CSV trace of several traces: each job's team is its file's name "
      "(cluster04.csv: cluster04), its id prefixed by it (cluster04-1234)");
  c->add_option("--trace", concat->traces, "A trace file, any format (repeatable)")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_flag("--keep-teams", concat->keep_teams,
              "Keep each job's own team (none in ITP and Tiresias files) instead");
  c->add_option("--out", concat->out, "The trace to write")->required();
  c->callback([concat] { Finish(RunConcat(*concat)); });

  auto split = std::make_shared<SimSplitOptions>();
  auto* s = sim->add_subcommand(
      "split",
      "Write a trace as Cohort CSV with its jobs spread over unequal teams team-0 .. team-(K-1) "
      "by a stable hash of their id");
  s->add_option("--trace", split->trace, "The trace file, any format")
      ->required()
      ->check(CLI::ExistingFile);
  s->add_option("--teams", split->teams, "Number of teams")
      ->required()
      ->check(CLI::Range(1, 100'000));
  s->add_option("--team-skew", split->team_skew,
                "Job counts per team: team k (from 0) gets a share in proportion to (k+1)^-S "
                "(0: equal)")
      ->capture_default_str()
      ->check(NumberFrom(0));
  s->add_option("--seed", split->seed, "Salts the hash: another seed, another split")
      ->capture_default_str();
  s->add_option("--out", split->out, "The trace to write")->required();
  s->callback([split] { Finish(RunSplit(*split)); });
}

}  // namespace cohort::cli
