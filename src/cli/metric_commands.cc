// metrics: a job's training metrics (docs/observability.md) as the master keeps them: every
// series with its last value and a sparkline, or one tag's points as a table, CSV or JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cli/cli.h"
#include "common/strings.h"
#include "model/job.h"
#include "model/json_errors.h"

namespace cohort::cli {
namespace {

struct MetricsOptions {
  std::string id;
  std::string tag;
  std::string task;
  int64_t points = 0;  // 0: the master's default for a chart
  std::string output = "table";
};

// Eight block heights, lowest to highest: a curve in one line of a terminal.
std::string Sparkline(const std::vector<double>& values) {
  static const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  std::string line;
  for (double v : values) {
    int level = *hi > *lo ? static_cast<int>(std::lround(7 * (v - *lo) / (*hi - *lo))) : 3;
    line += kBlocks[std::clamp(level, 0, 7)];
  }
  return line;
}

std::string Number(double v) { return fmt::format("{:.6g}", v); }

int PrintSeries(client::CohortClient& c, JobId id, const Json& doc, const MetricsOptions& o) {
  if (o.output == "json") {
    fmt::print("{}\n", doc.dump(2));
    return 0;
  }
  if (o.output == "csv") {
    fmt::print("tag,task,points,first_step,last_step,last_value,last_time\n");
    for (const auto& s : doc["series"]) {
      fmt::print("{},{},{},{},{},{},{}\n", CsvValue(s["tag"]), CsvValue(s["task"]),
                 CsvValue(s["points"]), CsvValue(s["first_step"]), CsvValue(s["last_step"]),
                 CsvValue(s["last_value"]), CsvValue(s["last_time"]));
    }
    return 0;
  }
  if (doc["series"].empty()) {
    fmt::print(stderr,
               "job {} has no metrics yet: tasks print `cohort-metric step=N tag=value` lines, "
               "or write TensorBoard event files under $COHORT_LOG_DIR\n",
               id);
    return 0;
  }
  Table table({"TAG", "TASK", "POINTS", "STEPS", "LAST", "CURVE"});
  for (const auto& s : doc["series"]) {
    std::vector<double> values;
    auto line = c.JobMetrics(id, {{"tag", s["tag"].get<std::string>()},
                                  {"task", s["task"].get<std::string>()},
                                  {"max_points", "30"}});
    if (line.ok() && !(*line)["lines"].empty()) {
      for (const auto& row : (*line)["lines"][0]["rows"]) values.push_back(row[2].get<double>());
    }
    table.Add({s["tag"].get<std::string>(), s["task"].get<std::string>(), s["points"].dump(),
               fmt::format("{}..{}", s["first_step"].get<int64_t>(), s["last_step"].get<int64_t>()),
               Number(s["last_value"].get<double>()), Sparkline(values)});
  }
  table.Print(stdout);
  return 0;
}

int PrintTag(const Json& doc, const MetricsOptions& o) {
  if (o.output == "json") {
    fmt::print("{}\n", doc.dump(2));
    return 0;
  }
  const bool csv = o.output == "csv";
  if (csv) fmt::print("task,step,time,value,min,max,count\n");
  Table table({"TASK", "STEP", "VALUE", "MIN", "MAX", "POINTS"});
  for (const auto& line : doc["lines"]) {
    const std::string task = line["task"].get<std::string>();
    for (const auto& r : line["rows"]) {
      if (csv) {
        fmt::print("{},{},{},{},{},{},{}\n", CsvField(task), r[0].dump(), CsvValue(r[1]),
                   CsvValue(r[2]), CsvValue(r[3]), CsvValue(r[4]), r[5].dump());
      } else {
        table.Add({task, r[0].dump(), Number(r[2].get<double>()), Number(r[3].get<double>()),
                   Number(r[4].get<double>()), r[5].dump()});
      }
    }
    if (!csv && line["level"].get<int>() > 0) {
      fmt::print(stderr,
                 "{}: {} points, shown as {} rows (each the mean of up to {}); use "
                 "--points for more\n",
                 task, line["points"].get<int64_t>(), line["rows"].size(),
                 1 << (2 * line["level"].get<int>()));
    }
  }
  if (!csv) table.Print(stdout);
  if (int64_t left_out = doc.value("lines_left_out", int64_t{0}); left_out > 0) {
    fmt::print(stderr,
               "{} more tasks have this tag and are not shown; --task ROLE/INDEX shows one\n",
               left_out);
  }
  return 0;
}

int RunMetrics(const GlobalOptions& g, const MetricsOptions& o) {
  if (o.output != "table" && o.output != "json" && o.output != "csv") {
    return Fail("metrics", Status::InvalidArgument(fmt::format(
                               "-o: \"{}\" is not an output; use table, csv or json", o.output)));
  }
  auto c = Connect(g);
  if (!c.ok()) return Fail("metrics", c.status());
  auto id = ResolveJob(**c, o.id);
  if (!id.ok()) return Fail("metrics", id.status());
  client::CohortClient::Query query = {{"tag", o.tag}, {"task", o.task}};
  if (o.points > 0) query.emplace_back("max_points", std::to_string(o.points));
  auto doc = (*c)->JobMetrics(*id, query);
  if (!doc.ok()) return Fail("metrics", doc.status());
  try {
    return o.tag.empty() ? PrintSeries(**c, *id, *doc, o) : PrintTag(*doc, o);
  } catch (const std::exception& e) {
    return Fail("metrics",
                Status::Internal(fmt::format("unexpected answer: {}", JsonErrorText(e))));
  }
}

}  // namespace

void AddMetricCommands(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<MetricsOptions>();
  auto* m = app.add_subcommand(
      "metrics",
      "A job's training metrics: every tag with its last value and curve, or one tag's points");
  m->add_option("JOB", o->id, "Job id")->required();
  m->add_option("--tag", o->tag, "One tag's points (e.g. loss, train/accuracy)");
  m->add_option("--task", o->task, "Only this task's (e.g. worker/0); default: every task's");
  m->add_option("--points", o->points,
                "About how many rows a tag's long series is shown as (default 1000, at most "
                "10000); longer series are averaged down")
      ->check(CLI::Range(1, 10000));
  m->add_option("-o,--output", o->output, "table (default), csv or json");
  m->callback([&g, o] {
    int rc = RunMetrics(g, *o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace cohort::cli
