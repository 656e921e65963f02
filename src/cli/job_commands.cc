// submit, run, jobs, status, logs, kill, wait.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "cli/cli.h"
#include "cli/job_context.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/job_run_time.h"
#include "model/job_spec_parser.h"
#include "model/json.h"
#include "model/limits.h"
#include "os/real_clock.h"

namespace cohort::cli {
namespace {

struct SubmitOptions {
  std::string file;
  std::string request_id;
  std::string output = "table";
  ContextOptions context;
};

struct RunOptions {
  std::string name;
  std::string team;
  std::string role = "worker";
  int replicas = 1;
  int gpus = 0;
  std::string cpus;
  std::string memory;
  std::string framework = "none";
  std::string priority;
  std::string max_runtime;
  int max_attempts = kDefaultMaxAttempts;
  std::string request_id;
  std::string workdir;
  std::vector<std::string> env;
  std::vector<std::string> secret_env;
  bool wait = false;
  ContextOptions context;
  std::vector<std::string> datasets;
  std::string array;
  std::vector<std::string> depends_on;
  std::vector<std::string> command;
};

struct JobsOptions {
  std::string state;
  size_t limit = 0;
  std::string output = "table";
};

struct JobRef {
  std::string id;
  std::string output = "table";
};

struct LogsOptions {
  std::string id;
  std::string task;
  int attempt = 0;
  bool follow = false;
};

struct KillOptions {
  std::vector<std::string> ids;
  std::string output = "table";
};

struct WaitOptions {
  std::string id;
  double timeout = 0;
  std::string output = "table";
};

std::string TaskCount(const Job& job) {
  int total = job.spec.TotalReplicas();
  int running = 0;
  if (!job.tasks.empty()) {
    total = static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(),
                                           [](const Task& t) { return !t.scaled_down; }));
  }
  for (const auto& t : job.tasks) running += t.state == TaskState::kRunning && !t.scaled_down;
  if (job.state == JobState::kRunning || job.state == JobState::kStarting) {
    return fmt::format("{}/{}", running, total);
  }
  return std::to_string(total);
}

// How long the job has been in its current phase, or how long it ran.
std::string JobDuration(const Job& job, Timestamp now) {
  if (job.finished_at && job.placed_at) return ShortDuration(*job.finished_at - *job.placed_at);
  if (job.finished_at) return "-";
  if (job.running_at) return ShortDuration(now - *job.running_at);
  return ShortDuration(now - job.submitted_at);
}

std::string Truncate(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

// TIME: the current phase, or how long the last attempt ran; TOTAL RUN: every attempt's run.
Table JobsTable() {
  return Table(
      {"ID", "NAME", "USER", "TEAM", "STATE", "TASKS", "GPUS", "TIME", "TOTAL RUN", "REASON"});
}

std::vector<std::string> JobRow(const Job& job, Timestamp now) {
  std::string reason =
      job.state == JobState::kPending || IsTerminal(job.state) || job.state == JobState::kStopping
          ? Truncate(job.message, 60)
          : "";
  return {std::to_string(job.id),
          job.spec.name,
          job.user,
          job.spec.team,
          JobStateName(job.state),
          TaskCount(job),
          std::to_string(job.spec.TotalResources().gpus),
          JobDuration(job, now),
          ShortDuration(TotalRunTime(job, now)),
          reason};
}

// The jobs of one array as one row: ID[INDICES], and how many are in each state.
std::vector<std::string> ArrayRow(const std::vector<const Job*>& jobs, Timestamp now) {
  const Job& first = *jobs.front();
  std::vector<int> indices;
  std::map<JobState, int> states;
  Duration run{};
  std::string reason;
  for (const Job* job : jobs) {
    indices.push_back(job->array->index);
    ++states[job->state];
    run += TotalRunTime(*job, now);
    if (reason.empty() && job->state == JobState::kPending) reason = Truncate(job->message, 60);
  }
  std::sort(indices.begin(), indices.end());
  std::vector<std::string> counts;
  for (const auto& [state, n] : states)
    counts.push_back(fmt::format("{} {}", n, JobStateName(state)));
  return {fmt::format("{}[{}]", first.array->id, FormatArrayIndices(indices)),
          first.spec.name,
          first.user,
          first.spec.team,
          Join(counts, ", "),
          fmt::format("{} job{}", jobs.size(), jobs.size() == 1 ? "" : "s"),
          fmt::format("{} each", first.spec.TotalResources().gpus),
          "-",
          ShortDuration(run),
          reason};
}

// Rows of `jobs`, the jobs of an array in one row where its first listed job is.
void AddJobRows(Table& table, const std::vector<Job>& jobs, Timestamp now) {
  std::map<JobId, std::vector<const Job*>> arrays;
  std::vector<const Job*> order;
  for (const Job& job : jobs) {
    if (!job.array) {
      order.push_back(&job);
      continue;
    }
    auto& members = arrays[job.array->id];
    if (members.empty()) order.push_back(&job);
    members.push_back(&job);
  }
  for (const Job* job : order) {
    table.Add(job->array ? ArrayRow(arrays[job->array->id], now) : JobRow(*job, now));
  }
}

// `text` with `indent` before each of its lines.
std::string Indented(const std::string& text, const std::string& indent) {
  std::string out = indent;
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

// `{"jobs": [...]}` written a job at a time, as Json::dump(2) would write it whole: a list of
// any length costs no more memory than a page.
class JsonJobsWriter {
 public:
  JsonJobsWriter() { fmt::print("{{\n  \"jobs\": ["); }
  void Add(const Job& job, Timestamp now) {
    Json j = ToJson(job);
    // Seconds, as the other durations of the API are (docs/api.md).
    j["run_time_s"] = static_cast<double>(AttemptRunTime(job, now).count()) / 1e6;
    j["total_run_time_s"] = static_cast<double>(TotalRunTime(job, now).count()) / 1e6;
    fmt::print("{}\n{}", count_ == 0 ? "" : ",", Indented(j.dump(2), "    "));
    ++count_;
  }
  void End() { fmt::print("{}]\n}}\n", count_ == 0 ? "" : "\n  "); }

 private:
  size_t count_ = 0;
};

std::string JoinInts(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(std::to_string(x));
  return s.empty() ? "-" : Join(s, ",");
}

std::string TimeOr(const std::optional<Timestamp>& t) { return t ? FormatTimestamp(*t) : "-"; }

void PrintJobDetails(const Job& job, const std::vector<JobEvent>& events) {
  fmt::print("Job:        {} ({})\n", job.id, job.spec.name);
  fmt::print("User/team:  {} / {}\n", job.user, job.spec.team);
  fmt::print("Priority:   {}\n", PriorityName(job.spec.priority));
  fmt::print("Framework:  {}\n", FrameworkName(job.spec.framework));
  fmt::print("State:      {}\n", JobStateName(job.state));
  if (!job.message.empty()) fmt::print("Message:    {}\n", job.message);
  if (job.array) {
    fmt::print("Array:      {}_{}: index {} of the {} jobs of array {}{}\n", job.array->id,
               job.array->index, job.array->index, job.array->count, job.array->id,
               job.array->max_parallel > 0
                   ? fmt::format(", at most {} at once", job.array->max_parallel)
                   : "");
  }
  for (const Dependency& d : job.spec.depends_on) {
    fmt::print("Depends on: job {} ({})\n", d.job, DependencyConditionName(d.on));
  }
  const RestartPolicy& restart = job.spec.restart;
  std::vector<std::string> causes;
  for (RestartCause c : restart.on) causes.push_back(RestartCauseName(c));
  fmt::print("Attempt:    {} ({} of at most {} failed; restarts on {})\n", job.attempt,
             job.failures, restart.max_attempts, causes.empty() ? "nothing" : Join(causes, ", "));
  if (job.not_before && job.state == JobState::kPending) {
    fmt::print("Backoff:    not before {}\n", FormatTimestamp(*job.not_before));
  }
  if (job.state == JobState::kPending) {
    // Where its idle GPUs were reclaimed, or where it could not start: it is not placed there
    // again until then.
    for (const auto& [node, until] : job.excluded_nodes) {
      if (until == kExcludedForGood) {
        fmt::print("Kept off:   node {} (a task could not start there)\n", node);
      } else if (until > RealClock().Now()) {
        fmt::print("Kept off:   node {} until {}\n", node, FormatTimestamp(until));
      }
    }
  }
  fmt::print("Resources:  {}\n", job.spec.TotalResources().ToString());
  for (const auto& g : job.spec.tasks) {
    if (!g.elastic()) continue;
    int now =
        static_cast<int>(std::count_if(job.tasks.begin(), job.tasks.end(), [&](const Task& t) {
          return t.role == g.role && !t.scaled_down && !IsTerminal(t.state);
        }));
    fmt::print("Elastic:    {} has {} replica{} now, {}..{} allowed\n", g.role, now,
               now == 1 ? "" : "s", g.replicas, g.max_replicas);
  }
  fmt::print("Submitted:  {}\n", FormatTimestamp(job.submitted_at));
  fmt::print("Placed:     {}\n", TimeOr(job.placed_at));
  fmt::print("Running:    {}\n", TimeOr(job.running_at));
  fmt::print("Finished:   {}\n", TimeOr(job.finished_at));
  if (job.last_checkpoint_at) {
    fmt::print("Checkpoint: {} ({} ago)\n", FormatTimestamp(*job.last_checkpoint_at),
               ShortDuration(RealClock().Now() - *job.last_checkpoint_at));
  } else {
    fmt::print("Checkpoint: - (none reported)\n");
  }
  if (job.restored_from) {
    fmt::print("Started from: {}\n", DescribeRestored(*job.restored_from));
  } else if (job.attempt > 0) {
    fmt::print("Started from: - (no checkpoint restored)\n");
  }
  if (!job.spec.datasets.empty()) {
    std::vector<std::string> refs;
    for (const auto& ref : job.spec.datasets) refs.push_back(FormatDatasetRef(ref));
    fmt::print("Datasets:   {} (at $COHORT_DATA_DIR/NAME)\n", fmt::join(refs, ", "));
  }
  if (!job.spec.context.empty()) {
    fmt::print("Code:       {} (sent with the job)\n", job.spec.context.substr(0, 12));
  }
  fmt::print("Artifacts:  {}\n", ArtifactStateText(job.artifacts));
  if (job.running_at && job.placed_at) {
    fmt::print("Start time: {} from submission to every task running\n",
               FormatDuration(*job.running_at - job.submitted_at));
  }
  if (!job.tasks.empty()) {
    fmt::print("\nTasks (attempt {}):\n", job.attempt);
    Table tasks({"TASK", "RANK", "NODE", "GPUS", "PORT", "STATE", "EXIT", "PID"});
    for (const auto& t : job.tasks) {
      std::string exit = t.signal      ? fmt::format("signal {}", *t.signal)
                         : t.exit_code ? std::to_string(*t.exit_code)
                                       : "-";
      std::string state = TaskStateName(t.state);
      if (t.scaled_down) state += " (scaled down)";
      tasks.Add({t.Name(), std::to_string(t.rank), t.node_id, JoinInts(t.gpus),
                 std::to_string(t.port), state, exit, t.pid ? std::to_string(t.pid) : "-"});
    }
    tasks.Print(stdout);
  }
  if (!job.history.empty()) {
    fmt::print("\nAttempts:\n");
    if (int first = job.history.front().number; first > 1) {
      fmt::print("  (attempts 1-{} not kept: a job keeps its latest {})\n", first - 1,
                 kMaxAttemptSummaries);
    }
    for (const auto& a : job.history) {
      std::string from =
          a.restored_from ? " (from " + DescribeRestored(*a.restored_from) + ")" : "";
      fmt::print("  {}: {}{}\n", a.number, a.result, from);
    }
  }
  if (!events.empty()) {
    fmt::print("\nEvents:\n");
    Table table({"TIME", "EVENT", "DETAILS"});
    for (const auto& e : events) table.Add({FormatTimestamp(e.time), e.type, e.message});
    table.Print(stdout);
  }
}

// Builds the spec document of `cohort run` from its flags.
Json RunSpec(const RunOptions& o) {
  std::string name = o.name;
  if (name.empty()) {
    std::string base = o.command.front();
    base = base.substr(base.find_last_of('/') + 1);
    for (char& c : base) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
    }
    name = base.empty() ? "job" : base;
  }
  Json group{{"role", o.role},
             {"replicas", o.replicas},
             {"resources", Json{{"gpus", o.gpus}}},
             {"command", o.command}};
  if (!o.cpus.empty()) group["resources"]["cpus"] = o.cpus;
  if (!o.memory.empty()) group["resources"]["memory"] = o.memory;
  if (!o.workdir.empty()) group["workdir"] = o.workdir;
  if (!o.env.empty() || !o.secret_env.empty()) {
    Json env = Json::object();
    for (const auto& kv : o.env) {
      size_t eq = kv.find('=');
      env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    // The spec's own form ({secret: NAME}): the master checks the name and says what is wrong.
    for (const auto& kv : o.secret_env) {
      size_t eq = kv.find('=');
      env[kv.substr(0, eq)] = Json{{"secret", eq == std::string::npos ? "" : kv.substr(eq + 1)}};
    }
    group["env"] = env;
  }
  Json tasks = Json::array({group});
  if (o.framework == "mpi") {
    // The command is mpirun's, in a launcher of its own; --replicas, --gpus, --cpus and --memory
    // size the workers, which hold the ranks (docs/job-spec.md, "MPI").
    Json launcher{{"role", "launcher"},
                  {"resources", Json{{"gpus", 0}, {"cpus", "0.5"}, {"memory", "512Mi"}}},
                  {"command", o.command}};
    if (group.contains("workdir")) launcher["workdir"] = group["workdir"];
    if (group.contains("env")) launcher["env"] = group["env"];
    group.erase("command");
    group.erase("workdir");
    tasks = Json::array({launcher, group});
  }
  Json spec{{"name", name}, {"framework", o.framework}, {"tasks", tasks}};
  if (!o.team.empty()) spec["team"] = o.team;
  if (!o.priority.empty()) {
    // A number goes as a number; anything else as text, which the spec's checks name if wrong.
    auto number = ParseInteger(o.priority, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max());
    spec["priority"] = number ? Json(*number) : Json(o.priority);
  }
  if (!o.max_runtime.empty()) spec["max_runtime"] = o.max_runtime;
  if (!o.datasets.empty()) spec["datasets"] = o.datasets;
  if (!o.array.empty()) {
    // "0-99%10": the indices, and at most 10 at once. One the parser refuses goes as it is: the
    // spec's checks name it (array.indices).
    int max_parallel = 0;
    auto indices = ParseArrayIndices(o.array, "--array", &max_parallel);
    Json array{{"indices", indices.ok() ? Json(FormatArrayIndices(*indices)) : Json(o.array)}};
    if (max_parallel > 0) array["max_parallel"] = max_parallel;
    spec["array"] = std::move(array);
  }
  if (!o.depends_on.empty()) {
    // JOB or JOB:CONDITION; what is not a number goes as text, for the spec's checks to name.
    Json depends = Json::array();
    for (const auto& d : o.depends_on) {
      const size_t colon = d.find(':');
      auto id = ParseInteger(d.substr(0, colon), 1, std::numeric_limits<int64_t>::max());
      Json one{{"job", id ? Json(*id) : Json(d.substr(0, colon))}};
      if (colon != std::string::npos) one["on"] = d.substr(colon + 1);
      depends.push_back(std::move(one));
    }
    spec["depends_on"] = std::move(depends);
  }
  if (o.max_attempts != kDefaultMaxAttempts) {
    spec["restart"] = Json{{"max_attempts", o.max_attempts}};
  }
  return spec;
}

// Waits until the job ends (or `timeout` passes, if positive), showing its state on a terminal.
StatusOr<Job> WaitForEnd(client::CohortClient& c, JobId id, double timeout_s) {
  Progress progress;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  COHORT_ASSIGN_OR_RETURN(Job job, c.GetJob(id));
  while (!IsTerminal(job.state)) {
    progress.Update(fmt::format("job {} {}: {}", id, JobStateName(job.state), job.message));
    Duration wait = std::chrono::seconds(30);
    if (timeout_s > 0) {
      auto left = std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now());
      if (left <= Duration(0)) {
        progress.Done();
        return Status::DeadlineExceeded(
            fmt::format("job {} is still {} after {}s", id, JobStateName(job.state), timeout_s));
      }
      wait = std::min(wait, left);
    }
    COHORT_ASSIGN_OR_RETURN(job, c.WaitJob(id, job.version, wait));
  }
  progress.Done();
  return job;
}

int ExitCodeFor(const Job& job) { return job.state == JobState::kSucceeded ? 0 : 1; }

void PrintSummary(const Job& job) {
  std::string took = job.placed_at && job.finished_at
                         ? " after " + FormatDuration(*job.finished_at - *job.placed_at)
                         : "";
  fmt::print(stderr, "job {} ({}) {}{}: {}\n", job.id, job.spec.name, JobStateName(job.state), took,
             job.message);
}

int RunSubmit(const GlobalOptions& g, const SubmitOptions& o) {
  auto text = ReadSpecFile(o.file);
  if (!text.ok()) return Fail("submit", text.status());
  // Checked here first, for messages that name the file, and so that a relative workdir
  // means relative to the spec file; the master checks the result again.
  std::string base = std::filesystem::absolute(o.file).parent_path().string();
  bool names_team = false;
  auto spec = ParseJobSpecFile(*text, o.file, base, &names_team);
  if (!spec.ok()) return Fail("submit", spec.status());
  Json doc = ToJson(*spec);
  // A spec that names no team goes to the submitter's own (the master decides which), not to
  // the team the canonical form fills in.
  if (!names_team) doc.erase("team");
  auto c = Connect(g);
  if (!c.ok()) return Fail("submit", c.status());
  if (Status s = AttachContext(**c, o.context, doc); !s.ok()) return Fail("submit", s);
  auto job = (*c)->Submit(doc.dump(), o.request_id);
  if (!job.ok()) return Fail("submit", job.status());
  if (o.output == "json") {
    fmt::print("{}\n", ToJson(*job).dump(2));
  } else {
    fmt::print("{}\n", job->id);
  }
  return 0;
}

// An array was submitted: its id, and with `wait`, each of its jobs' end (exit status 1 unless
// every one succeeded).
int WaitForArray(client::CohortClient& c, const Job& first, bool wait) {
  fmt::print(stderr, "array {}: {} jobs ({}_INDEX)\n", first.id, first.array->count, first.id);
  if (!wait) {
    fmt::print("{}\n", first.id);
    return 0;
  }
  auto array = c.GetArray(first.id);
  if (!array.ok()) return Fail("run", array.status());
  int rc = 0;
  for (const auto& j : (*array)["jobs"]) {
    auto end = WaitForEnd(c, j["job_id"].get<JobId>(), 0);
    if (!end.ok()) return Fail("run", end.status());
    PrintSummary(*end);
    rc = std::max(rc, ExitCodeFor(*end));
  }
  return rc;
}

int RunRun(const GlobalOptions& g, const RunOptions& o) {
  Json spec = RunSpec(o);
  auto parsed = ParseJobSpecJson(spec);
  if (!parsed.ok()) return Fail("run", parsed.status());
  auto c = Connect(g);
  if (!c.ok()) return Fail("run", c.status());
  if (Status s = AttachContext(**c, o.context, spec); !s.ok()) return Fail("run", s);
  auto job = (*c)->Submit(spec.dump(), o.request_id);
  if (!job.ok()) return Fail("run", job.status());
  if (job->array) return WaitForArray(**c, *job, o.wait);
  if (!o.wait) {
    fmt::print("{}\n", job->id);
    return 0;
  }
  fmt::print(stderr, "job {} submitted\n", job->id);
  Status logs = (*c)->Logs(job->id, "", 0, true, [](std::string_view data) {
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!logs.ok()) return Fail("run", logs);
  auto end = WaitForEnd(**c, job->id, 0);
  if (!end.ok()) return Fail("run", end.status());
  PrintSummary(*end);
  return ExitCodeFor(*end);
}

int RunJobs(const GlobalOptions& g, const JobsOptions& o) {
  std::optional<JobState> state;
  if (!o.state.empty()) {
    state = ParseJobState(o.state);
    if (!state) {
      std::string names = NameList(kJobStateNames);  // lower case, as people type them
      std::transform(names.begin(), names.end(), names.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return Fail("jobs", Status::InvalidArgument(fmt::format(
                              "--state: \"{}\" is not a job state; use {}", o.state, names)));
    }
  }
  auto c = Connect(g);
  if (!c.ok()) return Fail("jobs", c.status());
  const Timestamp now = RealClock().Now();
  Table table = JobsTable();
  std::optional<JsonJobsWriter> writer;
  std::vector<Job> listed_jobs;  // for the table: an array's jobs make one row
  auto add = [&](const Job& job) {
    if (writer) {
      writer->Add(job, now);
    } else {
      listed_jobs.push_back(job);
    }
  };
  Status listed;
  if (o.limit > 0) {
    auto jobs = (*c)->ListJobs(state, o.limit);
    if (!jobs.ok()) return Fail("jobs", jobs.status());
    if (o.output == "json") writer.emplace();
    for (const Job& job : *jobs) add(job);
  } else {
    // Every job, a page at a time (the master answers at most kMaxJobPage per call): JSON goes
    // out as each page arrives; the table, aligned, once the last one is in. On an error, the
    // JSON written so far stays cut off: the exit status says it failed.
    if (o.output == "json") writer.emplace();
    Progress progress;
    size_t count = 0;
    listed = (*c)->EachJobPage(state, [&](client::JobListPage page) {
      for (const Job& job : page.jobs) add(job);
      count += page.jobs.size();
      if (page.next) progress.Update(fmt::format("jobs: {} listed, more to come", count));
      return Status::Ok();
    });
    progress.Done();
  }
  if (!listed.ok()) return Fail("jobs", listed);
  if (writer) {
    writer->End();
  } else {
    AddJobRows(table, listed_jobs, now);
    table.Print(stdout);
  }
  return 0;
}

int RunStatus(const GlobalOptions& g, const JobRef& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("status", c.status());
  auto id = ResolveJob(**c, o.id);
  if (!id.ok()) return Fail("status", id.status());
  auto job = (*c)->GetJob(*id);
  if (!job.ok()) return Fail("status", job.status());
  auto events = (*c)->Events(*id);
  if (!events.ok()) return Fail("status", events.status());
  if (o.output == "json") {
    Json doc = ToJson(*job);
    doc["events"] = Json::array();
    for (const auto& e : *events) doc["events"].push_back(ToJson(e));
    fmt::print("{}\n", doc.dump(2));
  } else {
    PrintJobDetails(*job, *events);
    // The latest value of each training metric, if the job has any (and the caller may see them).
    auto metrics = (*c)->JobMetrics(*id, {});
    if (metrics.ok() && metrics->contains("series") && !(*metrics)["series"].empty()) {
      fmt::print("\nMetrics (cohort metrics {} shows their curves):\n", *id);
      Table table({"  TAG", "TASK", "STEP", "VALUE", "POINTS"});
      for (const auto& s : (*metrics)["series"]) {
        table.Add({"  " + s["tag"].get<std::string>(), s["task"].get<std::string>(),
                   s["last_step"].dump(), fmt::format("{:.6g}", s["last_value"].get<double>()),
                   s["points"].dump()});
      }
      table.Print(stdout);
    }
  }
  return 0;
}

int RunWhy(const GlobalOptions& g, const JobRef& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("why", c.status());
  auto id = ResolveJob(**c, o.id);
  if (!id.ok()) return Fail("why", id.status());
  auto e = (*c)->Explain(*id);
  if (!e.ok()) return Fail("why", e.status());
  if (o.output == "json") {
    fmt::print("{}\n", e->dump(2));
    return 0;
  }
  fmt::print("job {} is {}: {}\n", *id, (*e)["state"].get<std::string>(),
             (*e)["summary"].get<std::string>());
  for (const auto& line : (*e)["details"]) fmt::print("  - {}\n", line.get<std::string>());
  return 0;
}

int RunLogs(const GlobalOptions& g, const LogsOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("logs", c.status());
  auto id = ResolveJob(**c, o.id);
  if (!id.ok()) return Fail("logs", id.status());
  Status s = (*c)->Logs(*id, o.task, o.attempt, o.follow, [](std::string_view data) {
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
    return !std::ferror(stdout);
  });
  if (!s.ok()) return Fail("logs", s);
  return 0;
}

int RunKill(const GlobalOptions& g, const KillOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("kill", c.status());
  int rc = 0;
  Json killed = Json::array();
  // Kills one job; `named` is how the command line named it, when not by its id.
  auto kill_job = [&](JobId id, const std::string& named) {
    auto job = (*c)->Kill(id);
    if (!job.ok()) {
      rc = Fail("kill", job.status());
    } else if (o.output == "json") {
      killed.push_back(ToJson(*job));
    } else {
      fmt::print("job {}{}: {}\n", job->id, named.empty() ? "" : " (" + named + ")",
                 JobStateName(job->state));
    }
  };
  for (const auto& text : o.ids) {
    // ARRAY_INDEX: one job of an array, as sbatch --array names them.
    if (text.find('_') != std::string::npos) {
      auto element = ResolveJob(**c, text);
      if (!element.ok()) {
        rc = Fail("kill", element.status());
      } else {
        kill_job(*element, text);
      }
      continue;
    }
    auto id = ParseJobId(text);
    if (!id.ok()) {
      rc = Fail("kill", id.status());
      continue;
    }
    // An array's id kills the whole array.
    if (auto head = (*c)->GetJob(*id); head.ok() && head->array && head->array->id == *id) {
      auto result = (*c)->KillArray(*id);
      if (!result.ok()) {
        rc = Fail("kill", result.status());
      } else if (o.output == "json") {
        for (const auto& k : (*result)["killed"]) killed.push_back(Json{{"id", k}});
      } else {
        fmt::print("array {}: {} job{} killed\n", *id, (*result)["killed"].size(),
                   (*result)["killed"].size() == 1 ? "" : "s");
      }
      continue;
    }
    kill_job(*id, "");
  }
  if (o.output == "json") fmt::print("{}\n", Json{{"jobs", killed}}.dump(2));
  return rc;
}

int RunWait(const GlobalOptions& g, const WaitOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("wait", c.status());
  auto id = ResolveJob(**c, o.id);
  if (!id.ok()) return Fail("wait", id.status());
  auto job = WaitForEnd(**c, *id, o.timeout);
  if (!job.ok()) {
    Fail("wait", job.status());
    return job.status().code() == StatusCode::kDeadlineExceeded ? 124 : 1;
  }
  if (o.output == "json") {
    fmt::print("{}\n", ToJson(*job).dump(2));
  } else {
    fmt::print("{}\n", JobStateName(job->state));
    PrintSummary(*job);
  }
  return ExitCodeFor(*job);
}

}  // namespace

StatusOr<Job> WaitForJobEnd(client::CohortClient& c, JobId id, double timeout_s) {
  return WaitForEnd(c, id, timeout_s);
}

void AddJobCommands(CLI::App& app, GlobalOptions& g) {
  auto submit = std::make_shared<SubmitOptions>();
  auto* s = app.add_subcommand("submit", "Submit a job spec (YAML or JSON); prints the job id");
  s->add_option("FILE", submit->file, "The job spec (docs/job-spec.md)")->required();
  s->add_option("--request-id", submit->request_id,
                "Names this submission: submitting again with the same id returns the first "
                "job instead of a second (default: a new random id, reused by the retries)");
  AddOutputOption(s, submit->output);
  AddContextOptions(s, submit->context);
  s->callback([&g, submit] { Finish(RunSubmit(g, *submit)); });

  auto run = std::make_shared<RunOptions>();
  auto* r =
      app.add_subcommand("run", "Run a command as a job: cohort run --gpus 4 -- python3 train.py");
  r->add_option("--name", run->name, "Job name (default: the command's name)");
  r->add_option("--team", run->team,
                "Team (default: your team, or the default team an admin set for you; see "
                "cohort whoami)");
  r->add_option("--role", run->role, "Role of the tasks")->capture_default_str();
  r->add_option("--replicas", run->replicas, "Number of tasks, started together")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  r->add_option("--gpus", run->gpus, "GPUs per task")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  r->add_option("--cpus", run->cpus, "CPUs per task, e.g. 4 or 0.5 (default 1)");
  r->add_option("--memory", run->memory, "Memory per task, e.g. 16Gi (default 1Gi)");
  r->add_option("--framework", run->framework,
                NameList(kFrameworkNames) +
                    "; with mpi the command runs in a launcher of its own and --replicas "
                    "workers (--gpus, --cpus, --memory each) hold the ranks")
      ->capture_default_str();
  r->add_option("--priority", run->priority, NameList(kPriorityNames, ", ") + " or an integer");
  r->add_option("--max-runtime", run->max_runtime, "Longest an attempt may run, e.g. 2h");
  r->add_option("--max-attempts", run->max_attempts,
                "Attempts that may end in a failure or a node loss before the job fails")
      ->capture_default_str();
  r->add_option("--request-id", run->request_id,
                "Names this submission: running again with the same id returns the first job "
                "instead of a second");
  r->add_option("--workdir", run->workdir, "Working directory of the tasks (absolute)");
  // One value per flag: `--env A=1 -- cmd -c` must not take the command's words as values.
  r->add_option("--env", run->env, "Environment variable NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  r->add_option("--secret-env", run->secret_env,
                "Environment variable NAME=SECRET, set to your (or your team's) secret SECRET "
                "(`cohort secret set`); the job shows only the name (repeatable)")
      ->allow_extra_args(false);
  r->add_option("--dataset", run->datasets,
                "A dataset every task reads at $COHORT_DATA_DIR/NAME: NAME, NAME:VERSION or "
                "TEAM/NAME[:VERSION] (repeatable; docs/data.md)")
      ->allow_extra_args(false);
  r->add_option("--array", run->array,
                "Run it once per index, as one array of jobs, each with $COHORT_ARRAY_INDEX: "
                "0-99, 0-99:2, 1,5,9; %N runs at most N at once (0-99%10)");
  r->add_option("--depends-on", run->depends_on,
                "Start only once job JOB has ended: JOB (succeeded), JOB:failure or JOB:end "
                "(repeatable)")
      ->allow_extra_args(false);
  AddContextOptions(r, run->context);
  r->add_flag("--wait", run->wait,
              "Follow the job's output until it ends; exit 0 only if it succeeded");
  r->add_option("command", run->command, "The command and its arguments, after --")->required();
  r->callback([&g, run] { Finish(RunRun(g, *run)); });

  auto jobs = std::make_shared<JobsOptions>();
  auto* j = app.add_subcommand("jobs", "List jobs");
  j->add_option("--state", jobs->state, "Only jobs in this state, e.g. pending or running");
  j->add_option("--limit", jobs->limit,
                fmt::format("Only the most recent N jobs (default: every job, read from the "
                            "master {} at a time)",
                            kMaxJobPage));
  AddOutputOption(j, jobs->output);
  j->callback([&g, jobs] { Finish(RunJobs(g, *jobs)); });

  auto status = std::make_shared<JobRef>();
  auto* st = app.add_subcommand("status", "Show a job: state, tasks, attempts and events");
  st->add_option("JOB", status->id, "Job id")->required();
  AddOutputOption(st, status->output);
  st->callback([&g, status] { Finish(RunStatus(g, *status)); });

  auto why = std::make_shared<JobRef>();
  auto* y = app.add_subcommand("why", "Explain why a job waits (or where it runs)");
  y->add_option("JOB", why->id, "Job id")->required();
  AddOutputOption(y, why->output);
  y->callback([&g, why] { Finish(RunWhy(g, *why)); });

  auto logs = std::make_shared<LogsOptions>();
  auto* l = app.add_subcommand("logs", "Print a job's output (every task, or one)");
  l->add_option("JOB", logs->id, "Job id")->required();
  l->add_option("--task", logs->task, "Only this task, ROLE/INDEX (e.g. worker/0)");
  l->add_option("--attempt", logs->attempt, "This attempt (default: the current one)");
  l->add_flag("-f,--follow", logs->follow, "Keep printing new output until the job ends");
  l->callback([&g, logs] { Finish(RunLogs(g, *logs)); });

  auto kill = std::make_shared<KillOptions>();
  auto* k = app.add_subcommand("kill", "Stop jobs: SIGTERM, a grace period, then SIGKILL");
  k->add_option("JOB", kill->ids, "Job ids")->required();
  AddOutputOption(k, kill->output);
  k->callback([&g, kill] { Finish(RunKill(g, *kill)); });

  auto wait = std::make_shared<WaitOptions>();
  auto* w = app.add_subcommand(
      "wait", "Wait until a job ends; exit 0 if it succeeded, 1 if not, 124 on timeout");
  w->add_option("JOB", wait->id, "Job id")->required();
  w->add_option("--timeout", wait->timeout, "Give up after this many seconds (default: never)")
      ->check(CLI::NonNegativeNumber);
  AddOutputOption(w, wait->output);
  w->callback([&g, wait] { Finish(RunWait(g, *wait)); });
}

}  // namespace cohort::cli
