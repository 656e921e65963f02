#include "model/json.h"
#include "common/strings.h"
#include "model/json_errors.h"
#include "model/limits.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(AgentProtocolJson, DesiredStateRoundTrips) {
  DesiredState d;
  d.version = 17;
  TaskLaunch l;
  l.id = TaskId{3, 1, "worker", 0};
  l.command = {"python3", "-c", "print('hi')"};
  l.env = {{"RANK", "0"}};
  l.gpus = {0, 1};
  l.grace_period = std::chrono::seconds(5);
  d.tasks.push_back(l);
  d.tasks.back().memory_limit_bytes = int64_t{64} << 20;
  d.tasks.back().fence = true;
  d.node_timeout = std::chrono::seconds(30);
  d.forget = {TaskId{2, 1, "worker", 0}};
  auto back = DesiredStateFromJson(ToJson(d));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(d));
  EXPECT_EQ(back->tasks.at(0).grace_period, std::chrono::seconds(5));
  EXPECT_EQ(back->tasks.at(0).memory_limit_bytes, int64_t{64} << 20);
  EXPECT_TRUE(back->tasks.at(0).fence);
  EXPECT_EQ(back->node_timeout, std::chrono::seconds(30));
}

TEST(AgentProtocolJson, TheAccountAndTheJobDirectoriesOfATaskRoundTrip) {
  TaskLaunch l;
  l.id = TaskId{3, 1, "worker", 0};
  l.run_as = RunAs{"ada", 1000u, 1001u};
  l.checkpoint_dir = "/srv/cohort/jobs/3/checkpoints";
  l.output_dir = "/srv/cohort/jobs/3/outputs";
  l.log_dir = "/srv/cohort/jobs/3/logs";
  Json doc = ToJson(l);
  EXPECT_EQ(doc["run_as"], (Json{{"user", "ada"}, {"uid", 1000}, {"gid", 1001}}));
  auto back = TaskLaunchFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->run_as, l.run_as);
  EXPECT_EQ(back->checkpoint_dir, l.checkpoint_dir);
  EXPECT_EQ(back->output_dir, l.output_dir);
  EXPECT_EQ(back->log_dir, l.log_dir);
  EXPECT_EQ(ToJson(*back), doc);

  // Without a mapping, only the name; from a master older than the agent, nothing at all.
  l.run_as = RunAs{"ada", {}, {}};
  EXPECT_EQ(ToJson(l)["run_as"], (Json{{"user", "ada"}}));
  doc.erase("run_as");
  back = TaskLaunchFromJson(doc);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->run_as, RunAs{});
}

TEST(AgentProtocolJson, ATasksFilesAndToolsRoundTripAndNamesThatLeaveItsDirectoryAreRefused) {
  TaskLaunch l;
  l.id = TaskId{3, 1, "launcher", 0};
  l.files = {TaskFile{"mpi-hostfile",
                      "worker-0 slots=2\n",
                      {"COHORT_MPI_HOSTFILE", "OMPI_MCA_orte_default_hostfile"}}};
  l.tools = true;
  l.exec_service = true;
  auto back = TaskLaunchFromJson(ToJson(l));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->files, l.files);
  EXPECT_TRUE(back->tools);
  EXPECT_TRUE(back->exec_service);
  EXPECT_EQ(ToJson(*back), ToJson(l));

  for (const std::string& name :
       std::vector<std::string>{"../etc/passwd", "a/b", ".hidden", "", std::string(65, 'x')}) {
    Json doc = ToJson(l);
    doc["files"][0]["name"] = name;
    auto refused = TaskLaunchFromJson(doc);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << name;
  }
  Json many = ToJson(l);
  for (size_t i = 0; i < kMaxTaskFiles; ++i) many["files"].push_back(many["files"][0]);
  EXPECT_EQ(TaskLaunchFromJson(many).status().code(), StatusCode::kInvalidArgument);
}

TEST(AgentProtocolJson, RefusesIdsOutOfRangeOrAlone) {
  TaskLaunch l;
  l.id = TaskId{3, 1, "worker", 0};
  auto refused = [&](Json run_as) {
    Json doc = ToJson(l);
    doc["run_as"] = std::move(run_as);
    auto launch = TaskLaunchFromJson(doc);
    EXPECT_EQ(launch.status().code(), StatusCode::kInvalidArgument);
    return launch.status().message();
  };
  EXPECT_EQ(refused(Json{{"user", "ada"}, {"uid", -1}, {"gid", 0}}),
            "malformed task launch: run_as.uid: -1 is out of range (0 to 4294967294)");
  EXPECT_EQ(refused(Json{{"user", "ada"}, {"uid", 0}, {"gid", 4294967295U}}),
            "malformed task launch: run_as.gid: 4294967295 is out of range (0 to 4294967294)");
  EXPECT_EQ(refused(Json{{"user", "ada"}, {"uid", 1000}}),
            "malformed task launch: run_as: a uid and a gid go together, or neither is given");
  EXPECT_EQ(refused(Json{{"user", "ada"}, {"uid", 1.5}, {"gid", 1}}),
            "malformed task launch: run_as.uid: must be an integer, not a number (1.5)");
  EXPECT_EQ(refused(Json{{"uid", 1}, {"gid", 1}}),
            "malformed task launch: run_as.user: must be a string (a Unix account name)");
  EXPECT_EQ(refused(Json{{"user", "ada"}, {"uid", 18446744073709551615ULL}, {"gid", 1}}),
            "malformed task launch: run_as.uid: 18446744073709551615 is out of range (0 to "
            "4294967294)");
  EXPECT_EQ(refused("ada"), "malformed task launch: run_as: must be an object");
}

// The examples of docs/api.md ("POST /api/v1/agents/{node}/sync"), as written there.
TEST(AgentProtocolJson, TheDocumentedReportAndDesiredStateAreAccepted) {
  auto report = AgentReportFromJson(Json::parse(R"(
{"applied_version": 1763771690136811,
 "tasks": [{"task": {"job_id": 1, "attempt": 1, "role": "worker", "index": 0},
            "state": "RUNNING", "pid": 22981, "exit_code": null, "signal": null,
            "started_at": "2026-11-22T00:34:50.137000Z", "finished_at": null}]})"));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->tasks.size(), 1u);
  EXPECT_EQ(report->tasks[0].id, (TaskId{1, 1, "worker", 0}));
  EXPECT_EQ(report->tasks[0].pid, 22981);
  auto desired = DesiredStateFromJson(Json::parse(R"(
{"version": 1763771690136811,
 "tasks": [{"task": {"job_id": 1, "attempt": 1, "role": "worker", "index": 0},
            "command": ["sh", "-c", "echo hello from $RANK"], "workdir": "", "gpus": [0],
            "grace_period_ms": 30000,
            "env": {"COHORT_JOB_ID": "1", "RANK": "0", "CUDA_VISIBLE_DEVICES": "0"},
            "run_as": {"user": "ada"},
            "checkpoint_dir": "/srv/cohort/jobs/1/checkpoints",
            "output_dir": "/srv/cohort/jobs/1/outputs", "log_dir": "/srv/cohort/jobs/1/logs",
            "memory_limit_bytes": 34359738368, "fence": false}],
 "forget": [],
 "node_timeout_ms": 10000})"));
  ASSERT_TRUE(desired.ok()) << desired.status().ToString();
  ASSERT_EQ(desired->tasks.size(), 1u);
  EXPECT_EQ(desired->tasks[0].run_as.user, "ada");
  EXPECT_EQ(desired->tasks[0].grace_period, std::chrono::seconds(30));
  EXPECT_EQ(desired->tasks[0].memory_limit_bytes, int64_t{32} << 30);
  EXPECT_EQ(desired->node_timeout, std::chrono::seconds(10));
}

TEST(AgentProtocolJson, AReportSaysWhyATaskDidNotStart) {
  TaskReport r{TaskId{3, 1, "worker", 0},          TaskState::kFailed, 126, std::nullopt, 0, {}, {},
               "no Unix account \"ada\" on node-1"};
  Json doc = ToJson(r);
  EXPECT_EQ(doc["message"], "no Unix account \"ada\" on node-1");
  auto back = TaskReportFromJson(doc);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->message, r.message);
  r.message.clear();
  EXPECT_FALSE(ToJson(r).contains("message")) << "a task that ran says nothing";
  EXPECT_FALSE(ToJson(r).contains("start_failure"));
}

// docs/reliability.md, "Tasks that cannot start".
TEST(AgentProtocolJson, AReportNamesTheKindOfAStartFailure) {
  TaskReport r{TaskId{3, 1, "worker", 0},    TaskState::kFailed, 127, std::nullopt, 0, {}, {},
               "program \"trian\" not found"};
  r.start_failure = StartFailure::kProgram;
  Json doc = ToJson(r);
  EXPECT_EQ(doc["start_failure"], "program");
  auto back = TaskReportFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->start_failure, StartFailure::kProgram);
  for (StartFailure kind : {StartFailure::kWorkdir, StartFailure::kAccount, StartFailure::kImage}) {
    r.start_failure = kind;
    EXPECT_EQ(TaskReportFromJson(ToJson(r))->start_failure, kind) << StartFailureName(kind);
  }
  // A kind a newer agent knows and this master does not: an ordinary failure, retried.
  doc["start_failure"] = "quota";
  back = TaskReportFromJson(doc);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->start_failure, std::nullopt);
}

TEST(AgentProtocolJson, ReportRoundTripsAndRejectsGarbage) {
  AgentReport r;
  r.applied_version = 9;
  r.tasks.push_back(TaskReport{TaskId{3, 1, "worker", 0}, TaskState::kFailed, 3, std::nullopt, 77,
                               FromMicros(1), FromMicros(2)});
  auto back = AgentReportFromJson(ToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(r));

  Json task{{"job_id", 3}, {"attempt", 1}, {"role", "worker"}, {"index", 0}};
  auto bad = AgentReportFromJson(Json{{"tasks", {{{"task", task}, {"state", "DANCING"}}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("state"), std::string::npos);
  // A task id that could name another directory on the agent is refused.
  task["role"] = "../x";
  auto escape = AgentReportFromJson(Json{{"tasks", {{{"task", task}, {"state", "RUNNING"}}}}});
  ASSERT_FALSE(escape.ok());
  EXPECT_NE(escape.status().message().find("not a task id"), std::string::npos);
  EXPECT_FALSE(AgentReportFromJson(Json::array()).ok());
}

// What a node's dataset cache holds, and the fetches ahead of placement that failed: ids of 32
// hex digits, a bounded number of them, reasons of bounded length.
TEST(AgentProtocolJson, AReportCarriesItsCachesContentsWithinBounds) {
  const std::string id(32, 'a');
  AgentReport r;
  auto back = AgentReportFromJson(ToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->cached_datasets.has_value()) << "unset: unchanged since the last report";
  r.cached_datasets = std::vector<std::string>{};
  EXPECT_TRUE(AgentReportFromJson(ToJson(r))->cached_datasets.has_value()) << "empty: holds none";
  r.cached_datasets = {id};
  r.prefetch_failures = {{id, "not in the store"}};
  back = AgentReportFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cached_datasets, std::vector<std::string>{id});
  EXPECT_EQ(back->prefetch_failures.at(id), "not in the store");

  Json doc = ToJson(r);
  doc["cached_datasets"] = Json::array({"../../etc"});
  auto bad = AgentReportFromJson(doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cached_datasets: each must be 32 lowercase hex digits"),
            std::string::npos);
  doc["cached_datasets"] = std::vector<std::string>(kMaxCachedDatasetsPerReport + 1, id);
  bad = AgentReportFromJson(doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("at most 512"), std::string::npos);
  doc = ToJson(r);
  doc["prefetch_failures"][id] = std::string(2000, 'x');
  bad = AgentReportFromJson(doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("prefetch_failures"), std::string::npos);
}

TEST(AgentProtocolJson, AReportCarriesItsTasksLastCheckpoint) {
  TaskReport r{TaskId{3, 1, "worker", 0},
               TaskState::kRunning,
               std::nullopt,
               std::nullopt,
               77,
               FromMicros(1),
               std::nullopt};
  EXPECT_FALSE(ToJson(r).contains("checkpoint_at")) << "none yet: left out, as an older agent";
  r.checkpoint_at = FromMicros(1'700'000'000'250'000);
  Json doc = ToJson(r);
  EXPECT_EQ(doc["checkpoint_at"], "2023-11-14T22:13:20.250000Z");
  auto back = TaskReportFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->checkpoint_at, r.checkpoint_at);
  doc["checkpoint_at"] = "yesterday";
  auto bad = TaskReportFromJson(doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("checkpoint_at"), std::string::npos)
      << bad.status().message();
}

TEST(AgentProtocolJson, ResourceSamplesRoundTripWithUnknownsAsNull) {
  AgentReport r;
  TaskReport t{TaskId{3, 1, "worker", 0},
               TaskState::kRunning,
               std::nullopt,
               std::nullopt,
               77,
               FromMicros(1),
               std::nullopt};
  t.samples = {TaskSample{FromMicros(5'000'000), std::nullopt, 4096},
               TaskSample{FromMicros(10'000'000), 1500, 8192, 2'000'000, 1000}};
  r.tasks.push_back(t);
  r.gpu_samples = {GpuSamples{0, {GpuSample{FromMicros(5'000'000), 37, 1 << 30}}},
                   GpuSamples{3, {GpuSample{FromMicros(5'000'000), std::nullopt, std::nullopt}}}};
  Json doc = ToJson(r);
  EXPECT_TRUE(doc["tasks"][0]["samples"][0]["milli_cpus"].is_null());
  EXPECT_TRUE(doc["tasks"][0]["samples"][0]["read_bytes_per_s"].is_null());
  EXPECT_TRUE(doc["tasks"][0]["samples"][0]["read_calls_per_s"].is_null());
  EXPECT_EQ(doc["tasks"][0]["samples"][1]["read_bytes_per_s"], 2'000'000);
  EXPECT_TRUE(doc["gpu_samples"][1]["samples"][0]["utilization"].is_null());
  auto back = AgentReportFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), doc);
  ASSERT_EQ(back->tasks[0].samples.size(), 2u);
  EXPECT_EQ(back->tasks[0].samples[1].milli_cpus, 1500);
  EXPECT_EQ(back->tasks[0].samples[1].rss_bytes, 8192);
  EXPECT_EQ(back->tasks[0].samples[1].read_bytes_per_s, 2'000'000);
  EXPECT_EQ(back->tasks[0].samples[1].read_calls_per_s, 1000);
  EXPECT_FALSE(back->tasks[0].samples[0].read_calls_per_s.has_value());
  ASSERT_EQ(back->gpu_samples.size(), 2u);
  EXPECT_EQ(back->gpu_samples[0].samples[0].utilization_percent, 37);
  EXPECT_FALSE(back->gpu_samples[1].samples[0].utilization_percent.has_value());
}

TEST(AgentProtocolJson, ReportsWithoutSamplesReadAndWriteAsBefore) {
  // What an agent older than sampling sends, and what one that sampled nothing sends.
  Json old = ToJson(AgentReport{});
  EXPECT_FALSE(old.contains("gpu_samples"));
  auto back = AgentReportFromJson(old);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->gpu_samples.empty());
  TaskReport t{TaskId{3, 1, "worker", 0},
               TaskState::kRunning,
               std::nullopt,
               std::nullopt,
               0,
               std::nullopt,
               std::nullopt};
  EXPECT_FALSE(ToJson(t).contains("samples"));
}

TEST(AgentProtocolJson, ResourceSamplesAreBounded) {
  auto gpu_report = [](Json samples, Json index = 0) {
    return AgentReportFromJson(
        Json{{"tasks", Json::array()},
             {"gpu_samples", Json::array({Json{{"index", index}, {"samples", samples}}})}});
  };
  Json sample{{"at", "2023-11-14T22:13:20.000000Z"}, {"utilization", 50}};
  EXPECT_TRUE(gpu_report(Json::array({sample})).ok());
  Json many = Json::array();
  for (size_t i = 0; i <= kMaxSamplesPerReport; ++i) many.push_back(sample);
  auto too_many = gpu_report(many);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("at most"), std::string::npos);
  Json over = sample;
  over["utilization"] = 101;
  EXPECT_FALSE(gpu_report(Json::array({over})).ok());
  Json negative = sample;
  negative["memory_used_bytes"] = -1;
  EXPECT_FALSE(gpu_report(Json::array({negative})).ok());
  Json fraction = sample;
  fraction["utilization"] = 0.5;
  EXPECT_FALSE(gpu_report(Json::array({fraction})).ok());
  EXPECT_FALSE(gpu_report(Json::array({sample}), kMaxNodeGpus).ok());
  EXPECT_FALSE(gpu_report(Json::array({Json{{"utilization", 5}}})).ok()) << "no time";

  auto task_report = [](Json sample) {
    Json task{{"task", {{"job_id", 3}, {"attempt", 1}, {"role", "worker"}, {"index", 0}}},
              {"state", "RUNNING"},
              {"samples", Json::array({sample})}};
    return AgentReportFromJson(Json{{"tasks", Json::array({task})}});
  };
  Json task_sample{{"at", "2023-11-14T22:13:20.000000Z"}, {"rss_bytes", 1}};
  EXPECT_TRUE(task_report(task_sample).ok());
  Json bad_cpus = task_sample;
  bad_cpus["milli_cpus"] = -5;
  EXPECT_FALSE(task_report(bad_cpus).ok());
  for (const char* key : {"read_bytes_per_s", "read_calls_per_s"}) {
    Json bad_reads = task_sample;
    bad_reads[key] = -1;
    auto refused = task_report(bad_reads);
    ASSERT_FALSE(refused.ok()) << key;
    EXPECT_NE(refused.status().message().find(key), std::string::npos)
        << refused.status().message();
  }
  Json fast = task_sample;
  fast["read_calls_per_s"] = kMaxReadCallsPerSecond + 1;
  EXPECT_FALSE(task_report(fast).ok());
}

TEST(NodeInfoJson, RoundTrips) {
  NodeInfo n;
  n.id = "node-a";
  n.address = "10.1.2.3";
  n.milli_cpus = 64000;
  n.memory_bytes = 512LL << 30;
  n.gpus.push_back(Gpu{0, "GPU-a", "H100", 80LL << 30, "00000000:01:00.0", 0});
  n.gpus.push_back(Gpu{1, "GPU-b", "H100", 80LL << 30, "00000000:02:00.0", 1});
  n.gpu_links.push_back(GpuLink{0, 1, GpuLinkType::kNvLink, 4});
  n.gpu_source = "nvml";
  n.labels = {{"rack", "r1"}};
  auto back = NodeInfoFromJson(ToJson(n));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(n));
}

// What the types cannot hold is refused while decoding, naming the field, instead of being cast
// (1e300 CPUs once became -9223372036854776); ValidateNodeInfo judges the rest.
TEST(NodeInfoJson, RefusesNumbersThatWouldOverflow) {
  Json node{
      {"id", "n"}, {"address", "a"}, {"cpus", 8}, {"gpus", Json::array()}, {"memory_bytes", 1024}};
  ASSERT_TRUE(NodeInfoFromJson(node).ok());
  auto with = [&](const char* key, Json value) {
    Json doc = node;
    doc[key] = std::move(value);
    auto info = NodeInfoFromJson(doc);
    return info.ok() ? std::string("accepted") : info.status().message();
  };
  EXPECT_EQ(with("cpus", 1e300), "malformed node: cpus: 1e+300 is out of range");
  EXPECT_EQ(with("cpus", "8"), "malformed node: cpus: must be a number of CPUs, got \"8\"");
  EXPECT_EQ(with("memory_bytes", 1e300),
            "malformed node: memory_bytes: must be an integer, not a number (1e+300)");
  EXPECT_EQ(with("ports", Json{{"first", 4294967297}, {"last", 2}}),
            "malformed node: first: 4294967297 is out of range");
  EXPECT_EQ(with("gpus", Json::array({Json{{"index", 0.5}}})),
            "malformed node: index: must be an integer, not a number (0.5)");
  EXPECT_EQ(with("cpus", -4), "accepted");  // representable; ValidateNodeInfo refuses it
}

// Found by fuzz/agent_protocol_fuzzer.cc: integers were read with nlohmann's get<int>(), which
// casts a float such as 1e300 (undefined behaviour) and wraps a large integer into another
// value; CPUs and a grace period were converted without a bound. Each is now an error naming
// the field.
TEST(AgentProtocolJson, NumbersOutOfRangeAreErrorsNamingTheField) {
  NodeInfo n;
  n.id = "node-a";
  n.address = "10.1.2.3";
  n.gpus.push_back(Gpu{0, "GPU-a", "H100", 80LL << 30, "", 0});
  auto refused = [](const StatusOr<NodeInfo>& r, const std::string& field) {
    return !r.ok() && r.status().message().find(field) != std::string::npos;
  };
  Json doc = ToJson(n);
  doc["gpus"][0]["index"] = 1e300;
  EXPECT_TRUE(refused(NodeInfoFromJson(doc), "index"));
  doc = ToJson(n);
  doc["gpus"][0]["index"] = 4294967296;  // was read as GPU 0
  EXPECT_TRUE(refused(NodeInfoFromJson(doc), "index"));
  // Representable amounts are read (ValidateNodeInfo refuses a negative one at registration);
  // one a double cannot turn into thousandths is refused here.
  doc = ToJson(n);
  doc["cpus"] = 1e300;
  EXPECT_TRUE(refused(NodeInfoFromJson(doc), "cpus"));
  doc = ToJson(n);
  doc["ports"]["first"] = 0.5;
  EXPECT_TRUE(refused(NodeInfoFromJson(doc), "first"));

  Json report = ToJson(AgentReport{});
  report["applied_version"] = -1;  // was read as 2^64 - 1
  EXPECT_FALSE(AgentReportFromJson(report).ok());

  TaskLaunch l;
  l.id = TaskId{3, 1, "worker", 0};
  Json launch = ToJson(l);
  launch["grace_period_ms"] = 9'000'000'000'000'000'000ULL;
  EXPECT_FALSE(TaskLaunchFromJson(launch).ok());
  launch = ToJson(l);
  launch["gpus"] = Json::array({0, 2.5});
  EXPECT_FALSE(TaskLaunchFromJson(launch).ok());
}

TEST(JobJson, RoundTripsEveryField) {
  Job job;
  job.id = 7;
  job.spec.name = "x";
  TaskGroupSpec g;
  g.role = "main";
  g.command = {"true"};
  g.resources = Resources{1, 1000, 1LL << 30};
  job.spec.tasks.push_back(g);
  job.user = "ada";
  job.state = JobState::kStopping;
  job.attempt = 3;
  job.submitted_at = FromMicros(1);
  job.placed_at = FromMicros(2);
  job.stop_target = JobState::kPending;
  job.preempted_for = 9;
  job.failures = 1;
  job.preemptions = 2;
  job.version = 12;
  job.history.push_back(
      AttemptSummary{1, FromMicros(1), FromMicros(2), "failed: x", {{"worker/0", "node-a"}}});
  auto back = JobFromJson(ToJson(job));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(job));
  EXPECT_EQ(back->preempted_for, 9);
  EXPECT_EQ(back->failures, 1);
  EXPECT_EQ(back->preemptions, 2);
}

// Found by fuzz/job_spec_fuzzer.cc: a number beyond a double is nlohmann's out_of_range, not
// its parse_error, and escaped ParseJson (a 500 from the API, a crash in a client).
TEST(ParseJson, NumbersBeyondADoubleAreErrors) {
  auto r = ParseJson("[1e400]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not valid JSON"), std::string::npos);
}

TEST(ParseJson, SaysWhereSyntaxBreaks) {
  auto r = ParseJson("{\"a\": }");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("not valid JSON: parse error at line 1, column 7"), 0u)
      << r.status().message();
}

// An answer to a malformed document says which field is wrong and how, in the project's words:
// never the JSON library's "[json.exception.type_error.302] type must be string, but is number".
TEST(AgentProtocolJson, ErrorsNameTheFieldInTheProjectsWords) {
  Json task{{"job_id", 3}, {"attempt", 1}, {"role", "worker"}, {"index", 0}};
  auto refused = [](Json doc) {
    auto report = AgentReportFromJson(doc);
    EXPECT_FALSE(report.ok());
    EXPECT_EQ(report.status().message().find("json.exception"), std::string::npos)
        << report.status().message();
    return report.status().message();
  };
  EXPECT_EQ(refused(Json{{"applied_version", 1}}), "malformed agent report: tasks: missing");
  EXPECT_EQ(refused(Json{{"tasks", 7}}),
            "malformed agent report: tasks: must be a list, not a number (7)");
  EXPECT_EQ(refused(Json::array()),
            "malformed agent report: tasks: expected in an object, not in a list");
  EXPECT_EQ(refused(Json{{"tasks", {{{"task", task}, {"state", 5}}}}}),
            "malformed task report: state: must be a string, not a number (5)");
  EXPECT_EQ(refused(Json{{"tasks", {{{"task", task}}}}}), "malformed task report: state: missing");
  Json nameless = task;
  nameless["role"] = nullptr;
  EXPECT_EQ(refused(Json{{"tasks", {{{"task", nameless}, {"state", "RUNNING"}}}}}),
            "malformed task report: task: malformed task id: role: must be a string, not null");

  std::runtime_error ours("tasks: missing");
  EXPECT_EQ(JsonErrorText(ours), "tasks: missing");
  try {
    (void)Json(5).get<std::string>();
    FAIL() << "nlohmann accepted a number as a string";
  } catch (const Json::exception& e) {
    EXPECT_EQ(JsonErrorText(e), "type must be string, but is number");
  }
}

}  // namespace
}  // namespace cohort

namespace cohort {
namespace {

UploadProgress Failed(std::string id, std::string reason) {
  UploadProgress p;
  p.id = std::move(id);
  p.state = UploadState::kFailed;
  p.reason = std::move(reason);
  return p;
}

TEST(UploadProgressJson, RoundTrips) {
  UploadProgress p = Failed("3.1.worker.0", "store: 503 Slow Down");
  p.files_done = 3;
  p.files_total = 10;
  p.bytes_done = 1 << 20;
  p.bytes_total = 5 << 20;
  p.retry_at = FromMicros(5'000'000);
  auto back = UploadProgressFromJson(ToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(p));
  EXPECT_EQ(back->reason, "store: 503 Slow Down");
}

// An agent cannot make the master keep megabytes per job: an id is refused beyond its bound, a
// reason cut to it (a store's long error is still worth its start), at a character's start.
TEST(UploadProgressJson, AnIdBeyondItsBoundIsRefusedAndALongReasonIsCut) {
  auto at_bound = UploadProgressFromJson(ToJson(Failed(std::string(kMaxUploadIdBytes, 'i'), "x")));
  EXPECT_TRUE(at_bound.ok()) << at_bound.status().ToString();
  auto long_id =
      UploadProgressFromJson(ToJson(Failed(std::string(kMaxUploadIdBytes + 1, 'i'), "")));
  ASSERT_FALSE(long_id.ok());
  EXPECT_NE(long_id.status().message().find("id: 1025 bytes, at most 1024"), std::string::npos)
      << long_id.status().message();

  const std::string fits(kMaxUploadReasonBytes, 'r');
  EXPECT_EQ(UploadProgressFromJson(ToJson(Failed("a", fits)))->reason, fits);
  Json sent = ToJson(Failed("a", ""));
  sent["reason"] = std::string(4 << 20, 'r');  // 4 MiB, as a hostile agent would send it
  auto cut = UploadProgressFromJson(sent);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->reason.size(), kMaxUploadReasonBytes);
  EXPECT_EQ(cut->reason, std::string(kMaxUploadReasonBytes - 3, 'r') + "\xE2\x80\xA6");
  // Two-byte characters (é) across the cut: none is split (the cut falls in the middle of one).
  sent["reason"] = std::string("rr") + [] {
    std::string s;
    for (int i = 0; i < 1000; ++i) s += "\xC3\xA9";
    return s;
  }();
  cut = UploadProgressFromJson(sent);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->reason.size(), kMaxUploadReasonBytes - 1);
  EXPECT_EQ(ValidUtf8(cut->reason), cut->reason) << "a character split in two";
  EXPECT_TRUE(cut->reason.ends_with("\xC3\xA9\xE2\x80\xA6"));
  // What an agent sends is cut the same way before it leaves.
  EXPECT_EQ(ToJson(Failed("a", std::string(4096, 'r')))["reason"].get<std::string>().size(),
            kMaxUploadReasonBytes);
}

}  // namespace
}  // namespace cohort

namespace cohort {
namespace {

TEST(AgentProtocolJson, ATaskReportCarriesItsImagePullWithinBounds) {
  TaskReport r;
  r.id = TaskId{3, 1, "worker", 0};
  r.image_pull = ImagePull{"127.0.0.1:5000/team/pytorch:2.1", 120 << 20, 800 << 20, false,
                           std::chrono::seconds(14)};
  auto back = TaskReportFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->image_pull, r.image_pull);
  EXPECT_EQ(DescribeImagePull(*r.image_pull),
            "pulling image 127.0.0.1:5000/team/pytorch:2.1: 120Mi of 800Mi (14s)");
  Json doc = ToJson(r);
  doc["image_pull"]["image"] = std::string(600, 'a');
  EXPECT_FALSE(TaskReportFromJson(doc).ok()) << "a name longer than any reference";
  doc = ToJson(r);
  doc["image_pull"]["done_bytes"] = -1;
  EXPECT_FALSE(TaskReportFromJson(doc).ok());
}

TEST(AgentProtocolJson, AReportNamesTheImagesItsCacheHoldsWithinBounds) {
  AgentReport r;
  r.cached_images = std::vector<std::string>{"127.0.0.1:5000/a:1",
                                             "r.example.com/b@sha256:" + std::string(64, 'c')};
  auto back = AgentReportFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cached_images, r.cached_images);
  EXPECT_FALSE(AgentReportFromJson(ToJson(AgentReport{})).value().cached_images.has_value());
  Json doc = ToJson(r);
  doc["cached_images"].push_back("Not A Reference");
  EXPECT_FALSE(AgentReportFromJson(doc).ok());
  doc["cached_images"] = Json::array();
  for (size_t i = 0; i <= kMaxCachedImagesPerReport; ++i) doc["cached_images"].push_back("a/b");
  EXPECT_FALSE(AgentReportFromJson(doc).ok());
}

}  // namespace
}  // namespace cohort
