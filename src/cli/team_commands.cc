// team set / list / delete: guaranteed GPUs and borrowing limits per team.
#include <fmt/format.h>

#include "cli/cli.h"
#include "model/json.h"
#include "model/json_errors.h"

namespace cohort::cli {
namespace {

struct TeamSetOptions {
  std::string name;
  int64_t gpus = 0;
  int64_t max_gpus = -1;  // -1: no limit
  std::string output = "table";
};

struct TeamListOptions {
  std::string output = "table";
};

void PrintTeams(const Json& teams) {
  Table table({"TEAM", "GUARANTEED", "MAX", "USED", "BORROWED", "RUNNING", "PENDING"});
  for (const auto& t : teams) {
    int64_t used = t["used_gpus"].get<int64_t>();
    int64_t guaranteed = t["guaranteed_gpus"].get<int64_t>();
    table.Add({t["name"].get<std::string>() + (t["implicit"].get<bool>() ? " (implicit)" : ""),
               std::to_string(guaranteed),
               t["max_gpus"].is_null() ? "-" : std::to_string(t["max_gpus"].get<int64_t>()),
               std::to_string(used), std::to_string(std::max<int64_t>(0, used - guaranteed)),
               std::to_string(t["running_jobs"].get<int>()),
               std::to_string(t["pending_jobs"].get<int>())});
  }
  table.Print(stdout);
}

int RunSet(const GlobalOptions& g, const TeamSetOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("team set", c.status());
  std::optional<int64_t> max;
  if (o.max_gpus >= 0) max = o.max_gpus;
  auto team = (*c)->SetTeam(o.name, o.gpus, max);
  if (!team.ok()) return Fail("team set", team.status());
  if (o.output == "json") {
    fmt::print("{}\n", team->dump(2));
  } else {
    PrintTeams(Json::array({*team}));
  }
  return 0;
}

int RunList(const GlobalOptions& g, const TeamListOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("team list", c.status());
  auto teams = (*c)->Teams();
  if (!teams.ok()) return Fail("team list", teams.status());
  if (o.output == "json") {
    fmt::print("{}\n", teams->dump(2));
    return 0;
  }
  try {
    PrintTeams((*teams)["teams"]);
  } catch (const std::exception& e) {
    return Fail("team list",
                Status::Internal(fmt::format("unexpected answer: {}", JsonErrorText(e))));
  }
  return 0;
}

}  // namespace

void AddTeamCommands(CLI::App& app, GlobalOptions& g) {
  auto* team = app.add_subcommand("team", "Teams: guaranteed GPUs and borrowing limits");
  team->require_subcommand(1);

  auto set = std::make_shared<TeamSetOptions>();
  auto* s = team->add_subcommand(
      "set", "Create or change a team: cohort team set vision --gpus 16 [--max-gpus 24]");
  s->add_option("TEAM", set->name, "Team name")->required();
  s->add_option("--gpus", set->gpus, "GPUs guaranteed to the team")
      ->required()
      ->check(CLI::NonNegativeNumber);
  s->add_option("--max-gpus", set->max_gpus,
                "The most GPUs the team may hold, borrowing included (default: no limit)")
      ->check(CLI::NonNegativeNumber);
  AddOutputOption(s, set->output);
  s->callback([&g, set] { Finish(RunSet(g, *set)); });

  auto list = std::make_shared<TeamListOptions>();
  auto* l = team->add_subcommand("list", "Teams with their quotas and what they use now");
  AddOutputOption(l, list->output);
  l->callback([&g, list] { Finish(RunList(g, *list)); });

  auto name = std::make_shared<std::string>();
  auto* d = team->add_subcommand("delete", "Delete a team that has no live jobs");
  d->add_option("TEAM", *name, "Team name")->required();
  d->callback([&g, name] {
    auto c = Connect(g);
    if (!c.ok()) Finish(Fail("team delete", c.status()));
    Status s = (*c)->DeleteTeam(*name);
    if (!s.ok()) Finish(Fail("team delete", s));
    fmt::print("team {} deleted\n", *name);
  });
}

}  // namespace cohort::cli
