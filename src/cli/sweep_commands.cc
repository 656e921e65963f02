// cohort sweep submit / list / status / kill / pause / resume (docs/sweeps.md).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/job_context.h"
#include "common/strings.h"
#include "model/job_spec_parser.h"
#include "model/json.h"
#include "model/trial.h"
#include "os/real_clock.h"
#include "sweep/searcher.h"
#include "sweep/sweep_spec.h"

namespace cohort::cli {
namespace {

constexpr int kDefaultPreview = 10;

struct SweepOptions {
  std::string file;
  std::string id;
  bool dry_run = false;
  int preview = kDefaultPreview;
  std::string output = "table";
  ContextOptions context;
};

// "lr=0.001 model.hidden=64": a trial's values on one line, in name order.
std::string ValuesText(const Json& hparams) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : FlattenHParams(hparams)) parts.push_back(name + "=" + value);
  return Join(parts, " ");
}

std::string MetricText(const Json& v) {
  if (!v.is_number()) return "-";
  return fmt::format("{:.4g}", v.get<double>());
}

StatusOr<int64_t> SweepIdArg(const std::string& text) {
  auto id = ParseJobId(text);
  if (!id.ok()) {
    return Status::InvalidArgument(
        fmt::format("ID: \"{}\" is not a sweep id (a positive integer, as `cohort sweep list` "
                    "shows)",
                    text));
  }
  return *id;
}

// What `--dry-run` shows: the trials the searcher would make first, each with its command.
int PrintPreview(const sweep::SweepSpec& spec, const SweepOptions& o) {
  int n = spec.searcher.name == sweep::SearcherName::kGrid
              ? static_cast<int>(std::min<int64_t>(sweep::GridSize(spec), spec.searcher.max_trials))
              : std::min(o.preview, spec.searcher.max_trials);
  if (spec.searcher.name != sweep::SearcherName::kGrid && spec.searcher.seed == 0) {
    // The preview draws from seed 0; a submitted sweep without a seed gets one of its own.
    fmt::print(stderr,
               "note: searcher.seed is not set, so the master chooses one at submission and the "
               "trials will differ from these; set searcher.seed to get exactly these\n");
  }
  std::vector<Json> trials = sweep::PreviewTrials(spec, n);
  Json list = Json::array();
  for (size_t i = 0; i < trials.size(); ++i) {
    int id = static_cast<int>(i) + 1;
    auto job = sweep::TrialSpec(spec, id, trials[i]);
    if (!job.ok()) return Fail("sweep submit", job.status());
    list.push_back(
        Json{{"trial", id},
             {"hparams", trials[i]},
             {"command", job->tasks.empty() ? Json::array() : Json(job->tasks[0].command)}});
  }
  if (o.output == "json") {
    fmt::print("{}\n", Json{{"trials", list}}.dump(2));
    return 0;
  }
  fmt::print(
      stderr, "{} searcher, metric {} ({}), at most {} trials, {} at once; first {} trial{}:\n",
      NameOf(sweep::kSearcherNames, spec.searcher.name), spec.searcher.metric,
      spec.searcher.mode == sweep::MetricMode::kMax ? "max" : "min", spec.searcher.max_trials,
      spec.searcher.max_concurrent_trials, list.size(), list.size() == 1 ? "" : "s");
  Table table({"TRIAL", "HYPERPARAMETERS", "COMMAND"});
  for (const auto& t : list) {
    table.Add({std::to_string(t["trial"].get<int>()), ValuesText(t["hparams"]),
               Join(t["command"].get<std::vector<std::string>>(), " ")});
  }
  table.Print(stdout);
  return 0;
}

int RunSubmit(const GlobalOptions& g, const SweepOptions& o) {
  auto text = ReadSpecFile(o.file);
  if (!text.ok()) return Fail("sweep submit", text.status());
  // Checked here first, for messages that name the file, and so that a relative workdir means
  // relative to the spec file; the master checks the result again.
  std::string base = std::filesystem::absolute(o.file).parent_path().string();
  bool names_team = false;
  auto spec = sweep::ParseSweepSpecFile(*text, o.file, base, &names_team);
  if (!spec.ok()) return Fail("sweep submit", spec.status());
  if (o.dry_run) return PrintPreview(*spec, o);
  Json doc = sweep::ToJson(*spec);
  // A spec that names no team goes to the submitter's (the master decides which).
  if (!names_team) doc.erase("team");
  auto c = Connect(g);
  if (!c.ok()) return Fail("sweep submit", c.status());
  // Every trial starts in its own copy of the same code.
  if (Status s = AttachContext(**c, o.context, doc["trial"]); !s.ok()) {
    return Fail("sweep submit", s);
  }
  auto sweep = (*c)->SubmitSweep(doc.dump());
  if (!sweep.ok()) return Fail("sweep submit", sweep.status());
  if (o.output == "json") {
    fmt::print("{}\n", sweep->dump(2));
  } else {
    fmt::print("{}\n", (*sweep)["id"].get<int64_t>());
  }
  return 0;
}

std::string BestText(const Json& sweep) {
  if (!sweep["best_trial"].is_number()) return "-";
  int best = sweep["best_trial"].get<int>();
  for (const auto& t : sweep["trials"]) {
    if (t["id"] == best) return fmt::format("{} (trial {})", MetricText(t["metric"]), best);
  }
  return "-";
}

int RunList(const GlobalOptions& g, const SweepOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("sweep list", c.status());
  auto answer = (*c)->Sweeps();
  if (!answer.ok()) return Fail("sweep list", answer.status());
  if (o.output == "json") {
    fmt::print("{}\n", answer->dump(2));
    return 0;
  }
  Timestamp now = RealClock().Now();
  Table table({"ID", "NAME", "TEAM", "USER", "STATE", "TRIALS", "METRIC", "BEST", "AGE"});
  for (const auto& s : (*answer)["sweeps"]) {
    auto created = ParseTimestamp(s["created_at"].get<std::string>());
    const Json& searcher = s["searcher"];
    table.Add({std::to_string(s["id"].get<int64_t>()), s["name"], s["team"], s["user"], s["state"],
               fmt::format("{}/{}", s["trials_made"].get<int>(), searcher["max_trials"].get<int>()),
               fmt::format("{} ({})", searcher["metric"].get<std::string>(),
                           searcher["mode"].get<std::string>()),
               BestText(s), created.ok() ? ShortDuration(now - *created) : "-"});
  }
  table.Print(stdout);
  if (answer->value("more", false)) {
    fmt::print(stderr, "older sweeps are not shown: the master lists the newest {}\n",
               (*answer)["sweeps"].size());
  }
  return 0;
}

int RunStatus(const GlobalOptions& g, const SweepOptions& o) {
  auto id = SweepIdArg(o.id);
  if (!id.ok()) return Fail("sweep status", id.status());
  auto c = Connect(g);
  if (!c.ok()) return Fail("sweep status", c.status());
  auto s = (*c)->Sweep(*id);
  if (!s.ok()) return Fail("sweep status", s.status());
  if (o.output == "json") {
    fmt::print("{}\n", s->dump(2));
    return 0;
  }
  const Json& sweep = *s;
  const Json& searcher = sweep["searcher"];
  fmt::print("Sweep:      {} ({})\n", sweep["id"].get<int64_t>(), sweep["name"].get<std::string>());
  fmt::print("Team/user:  {} / {}\n", sweep["team"].get<std::string>(),
             sweep["user"].get<std::string>());
  fmt::print("State:      {}{}\n", sweep["state"].get<std::string>(),
             sweep["message"].get<std::string>().empty()
                 ? ""
                 : ": " + sweep["message"].get<std::string>());
  fmt::print("Searcher:   {}, {} ({}), {} of at most {} trials made, {} at once\n",
             searcher["name"].get<std::string>(), searcher["metric"].get<std::string>(),
             searcher["mode"].get<std::string>(), sweep["trials_made"].get<int>(),
             searcher["max_trials"].get<int>(), searcher["max_concurrent_trials"].get<int>());
  fmt::print("Best:       {}\n", BestText(sweep));
  fmt::print("GPU time:   {}\n\n", ShortDuration(std::chrono::microseconds(static_cast<int64_t>(
                                       sweep["gpu_seconds"].get<double>() * 1e6))));
  Table table({"TRIAL", "JOB", "STATE", "BEST", "LAST", "STEPS", "GPU-TIME", "HYPERPARAMETERS"});
  for (const auto& t : sweep["trials"]) {
    std::string state = t["state"];
    if (t.contains("note")) state += " (" + t["note"].get<std::string>() + ")";
    table.Add(
        {std::to_string(t["id"].get<int>()),
         t["job_id"].is_number() ? std::to_string(t["job_id"].get<int64_t>()) : "-", state,
         MetricText(t["metric"]), MetricText(t["last"]), std::to_string(t["steps"].get<int64_t>()),
         ShortDuration(
             std::chrono::microseconds(static_cast<int64_t>(t["gpu_seconds"].get<double>() * 1e6))),
         ValuesText(t["hparams"])});
  }
  table.Print(stdout);
  return 0;
}

int RunAction(const GlobalOptions& g, const SweepOptions& o, const std::string& action) {
  const std::string command = "sweep " + action;
  auto id = SweepIdArg(o.id);
  if (!id.ok()) return Fail(command, id.status());
  auto c = Connect(g);
  if (!c.ok()) return Fail(command, c.status());
  auto s = (*c)->SweepAction(*id, action);
  if (!s.ok()) return Fail(command, s.status());
  if (o.output == "json") {
    fmt::print("{}\n", s->dump(2));
  } else {
    fmt::print("sweep {}: {}\n", *id, (*s)["state"].get<std::string>());
  }
  return 0;
}

}  // namespace

void AddSweepCommands(CLI::App& app, GlobalOptions& g) {
  auto* sweep = app.add_subcommand(
      "sweep", "Hyperparameter sweeps: many trials of one job template, searched (docs/sweeps.md)");
  sweep->require_subcommand(1);
  auto o = std::make_shared<SweepOptions>();

  auto* submit =
      sweep->add_subcommand("submit", "Submit a sweep spec (YAML or JSON); prints its id");
  submit->add_option("FILE", o->file, "The sweep spec (docs/sweeps.md)")->required();
  submit->add_flag("--dry-run", o->dry_run,
                   "Print the trials a grid would make, or the first --trials a random or asha "
                   "searcher would; submit nothing");
  submit
      ->add_option("--trials", o->preview, "With --dry-run: how many trials to show (random, asha)")
      ->check(CLI::Range(1, 1000));
  AddOutputOption(submit, o->output);
  AddContextOptions(submit, o->context);
  submit->callback([&g, o] { Finish(RunSubmit(g, *o)); });

  auto* list = sweep->add_subcommand("list", "List the sweeps you may read, newest first");
  AddOutputOption(list, o->output);
  list->callback([&g, o] { Finish(RunList(g, *o)); });

  auto* status = sweep->add_subcommand(
      "status", "A sweep's leaderboard: every trial, best first, with its values and metric");
  status->add_option("ID", o->id, "The sweep")->required();
  AddOutputOption(status, o->output);
  status->callback([&g, o] { Finish(RunStatus(g, *o)); });

  struct Action {
    const char* name;
    const char* help;
  };
  for (const Action& a :
       {Action{"kill", "Kill a sweep: every live trial is killed, and no new one starts"},
        Action{"pause",
               "Pause a sweep: no new trial starts, and live ones stop gracefully and wait"},
        Action{"resume", "Resume a paused sweep: its trials go on from their checkpoints"}}) {
    auto* cmd = sweep->add_subcommand(a.name, a.help);
    cmd->add_option("ID", o->id, "The sweep")->required();
    AddOutputOption(cmd, o->output);
    std::string action = a.name;
    cmd->callback([&g, o, action] { Finish(RunAction(g, *o, action)); });
  }
}

}  // namespace cohort::cli
