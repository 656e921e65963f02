// usage and audit: what teams and users used (GPU and CPU hours, jobs, queueing delay), and
// who changed what (docs/security.md, "Audit and accounting").
#include <fmt/format.h>

#include <cmath>

#include "cli/cli.h"
#include "common/strings.h"
#include "model/json.h"
#include "model/json_errors.h"

namespace cohort::cli {
namespace {

struct UsageOptions {
  std::string team;
  std::string user;
  std::string since;
  std::string until;
  std::string by;
  std::string output = "table";
};

struct AuditOptions {
  std::string since;
  std::string until;
  std::string user;
  std::string job;
  int64_t limit = 0;  // 0: the master's default
  std::string output = "table";
};

std::string Hours(const Json& v) { return fmt::format("{:.2f}", v.get<double>()); }

std::string Delay(const Json& seconds) {
  if (seconds.is_null()) return "-";
  return ShortDuration(std::chrono::microseconds(std::llround(seconds.get<double>() * 1e6)));
}

void PrintUsageTable(const Json& doc) {
  bool periods = doc["by"] != "total";
  std::vector<std::string> header = {"TEAM",      "USER",      "GPU-HOURS", "CPU-HOURS",
                                     "SUBMITTED", "SUCCEEDED", "FAILED",    "KILLED",
                                     "ATTEMPTS",  "WAIT-MEAN", "WAIT-MAX"};
  if (periods) header.insert(header.begin(), "PERIOD");
  Table table(header);
  auto add = [&](const Json& row, std::vector<std::string> first) {
    for (const auto& cell :
         {Hours(row["gpu_hours"]), Hours(row["cpu_hours"]), row["jobs_submitted"].dump(),
          row["jobs_succeeded"].dump(), row["jobs_failed"].dump(), row["jobs_killed"].dump(),
          row["attempts"].dump(), Delay(row["queue_delay_mean_s"]),
          Delay(row["queue_delay_max_s"])}) {
      first.push_back(cell);
    }
    table.Add(std::move(first));
  };
  for (const auto& row : doc["rows"]) {
    std::vector<std::string> first = {row["team"].get<std::string>(),
                                      row["user"].get<std::string>()};
    if (periods) first.insert(first.begin(), row["period"].get<std::string>());
    add(row, std::move(first));
  }
  std::vector<std::string> total = {"TOTAL", ""};
  if (periods) total.insert(total.begin(), "");
  add(doc["total"], std::move(total));
  fmt::print("From {} to {} (UTC)\n", doc["since"].get<std::string>(),
             doc["until"].get<std::string>());
  table.Print(stdout);
}

void PrintUsageCsv(const Json& doc) {
  static const std::vector<std::string> kColumns = {"period",
                                                    "start",
                                                    "end",
                                                    "team",
                                                    "user",
                                                    "gpu_hours",
                                                    "cpu_hours",
                                                    "jobs_submitted",
                                                    "jobs_succeeded",
                                                    "jobs_failed",
                                                    "jobs_killed",
                                                    "attempts",
                                                    "jobs_started",
                                                    "queue_delay_mean_s",
                                                    "queue_delay_max_s"};
  fmt::print("{}\n", Join(kColumns, ","));
  for (const auto& row : doc["rows"]) {
    std::vector<std::string> cells;
    for (const auto& c : kColumns) cells.push_back(CsvValue(row[c]));
    fmt::print("{}\n", Join(cells, ","));
  }
}

int RunUsage(const GlobalOptions& g, const UsageOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("usage", c.status());
  auto doc = (*c)->Usage(
      {{"team", o.team}, {"user", o.user}, {"since", o.since}, {"until", o.until}, {"by", o.by}});
  if (!doc.ok()) return Fail("usage", doc.status());
  try {
    if (o.output == "json") {
      fmt::print("{}\n", doc->dump(2));
    } else if (o.output == "csv") {
      PrintUsageCsv(*doc);
    } else {
      PrintUsageTable(*doc);
    }
  } catch (const std::exception& e) {
    return Fail("usage", Status::Internal(fmt::format("unexpected answer: {}", JsonErrorText(e))));
  }
  return 0;
}

std::string Text(const Json& v) { return v.is_string() ? v.get<std::string>() : "-"; }

int RunAudit(const GlobalOptions& g, const AuditOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("audit", c.status());
  auto doc = (*c)->Audit({{"since", o.since},
                          {"until", o.until},
                          {"user", o.user},
                          {"job", o.job},
                          {"limit", o.limit > 0 ? std::to_string(o.limit) : ""}});
  if (!doc.ok()) return Fail("audit", doc.status());
  if (o.output == "json") {
    fmt::print("{}\n", doc->dump(2));
    return 0;
  }
  try {
    Table table({"TIME", "USER", "FROM", "METHOD", "PATH", "TARGET", "STATUS", "OUTCOME"});
    for (const auto& e : (*doc)["entries"]) {
      std::string time = e["time"].get<std::string>();
      table.Add({time.substr(0, 19) + "Z", Text(e["user"]), Text(e["remote"]), Text(e["method"]),
                 Text(e["path"]), Text(e["target"]),
                 e["status"].is_null() ? "?" : e["status"].dump(), Text(e["outcome"])});
    }
    table.Print(stdout);
    if ((*doc)["more"].get<bool>()) {
      fmt::print(stderr, "(older entries not shown: use --since or a larger --limit)\n");
    }
  } catch (const std::exception& e) {
    return Fail("audit", Status::Internal(fmt::format("unexpected answer: {}", JsonErrorText(e))));
  }
  return 0;
}

constexpr const char* kTimeForms =
    "a date (2026-11-01, UTC), an RFC 3339 time, or how long ago (7d, 12h)";

}  // namespace

void AddAccountingCommands(CLI::App& app, GlobalOptions& g) {
  auto usage = std::make_shared<UsageOptions>();
  auto* u = app.add_subcommand(
      "usage", "GPU and CPU hours, jobs and queueing delay per team and user (and day or week)");
  u->add_option("--team", usage->team, "Only this team");
  u->add_option("--user", usage->user, "Only this user");
  u->add_option("--since", usage->since,
                fmt::format("From: {} (default: 30 days before --until)", kTimeForms));
  u->add_option("--until", usage->until,
                fmt::format("To, not included: {} (default: now)", kTimeForms));
  u->add_option("--by", usage->by, "Split by day or week (UTC; weeks from Monday)")
      ->check(CLI::IsMember({"day", "week", "total"}));
  u->add_option("-o,--output", usage->output, "Output format: table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  u->callback([&g, usage] { Finish(RunUsage(g, *usage)); });

  auto audit = std::make_shared<AuditOptions>();
  auto* a = app.add_subcommand("audit", "Who changed what: the master's audit log, newest last");
  a->add_option("--since", audit->since, fmt::format("From: {}", kTimeForms));
  a->add_option("--until", audit->until, fmt::format("To, not included: {}", kTimeForms));
  a->add_option("--user", audit->user, "Only calls by this user");
  a->add_option("--job", audit->job,
                "Only calls about this job (ID): its submission and kills, with who made them");
  a->add_option("--limit", audit->limit, "The newest N entries (default 100, at most 10000)")
      ->check(CLI::Range(1, 10'000));
  AddOutputOption(a, audit->output);
  a->callback([&g, audit] { Finish(RunAudit(g, *audit)); });
}

}  // namespace cohort::cli
