#include "model/job_spec_parser.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace cohort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

constexpr std::string_view kFullYaml = R"(# every field, set to something other than its default
name: resnet50-imagenet
team: vision
priority: high
framework: pytorch
tasks:
  - role: worker
    replicas: 2
    resources:
      gpus: 8
      cpus: 32
      memory: 256Gi
    command: [torchrun, --nproc-per-node=8, train.py, --epochs, "90"]
    env:
      NCCL_DEBUG: INFO
      BATCH_SIZE: 256
      LR: 0.1
      USE_AMP: true
      EMPTY: ""
    workdir: /home/ds/resnet
  - role: evaluator
    resources: {gpus: 1, cpus: "500m", memory: 1536Mi}
    command:
      - python3
      - eval.py
restart:
  max_attempts: 3
max_runtime: 1h30m
grace_period: 2m
)";

constexpr std::string_view kFullJson = R"({
  "name": "resnet50-imagenet",
  "team": "vision",
  "priority": "high",
  "framework": "pytorch",
  "tasks": [
    {
      "role": "worker",
      "replicas": 2,
      "resources": {"gpus": 8, "cpus": 32, "memory": "256Gi"},
      "command": ["torchrun", "--nproc-per-node=8", "train.py", "--epochs", "90"],
      "env": {"NCCL_DEBUG": "INFO", "BATCH_SIZE": 256, "LR": 0.1, "USE_AMP": true, "EMPTY": ""},
      "workdir": "/home/ds/resnet"
    },
    {
      "role": "evaluator",
      "resources": {"gpus": 1, "cpus": 0.5, "memory": 1610612736},
      "command": ["python3", "eval.py"]
    }
  ],
  "restart": {"max_attempts": 3},
  "max_runtime": "90m",
  "grace_period": "120s"
})";

constexpr std::string_view kMinimalYaml = R"(name: train
tasks:
  - role: worker
    command: [python3, train.py]
)";

// The problems reported for `text`, one line each; a single marker line if it parsed.
std::vector<std::string> Errors(std::string_view text) {
  auto spec = ParseJobSpec(text);
  if (spec.ok()) return {"<no error>"};
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  return spec.status().details();
}

std::vector<std::string> JsonErrors(std::string_view json_text) {
  auto spec = ParseJobSpecJson(Json::parse(json_text));
  if (spec.ok()) return {"<no error>"};
  return spec.status().details();
}

// The status message of `text` that fails as a whole (syntax errors).
std::string Message(std::string_view text, std::string_view source = "job.yaml") {
  auto spec = ParseJobSpec(text, source);
  if (spec.ok()) return "<no error>";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  return spec.status().message();
}

// The minimal spec with more top-level lines.
std::string WithJob(std::string_view lines) {
  return std::string(kMinimalYaml) + std::string(lines);
}

// The minimal spec with more lines in its task group (indented here).
std::string WithTask(std::string_view lines) {
  std::string out(kMinimalYaml);
  size_t start = 0;
  while (start <= lines.size()) {
    size_t end = lines.find('\n', start);
    if (end == std::string_view::npos) end = lines.size();
    out += "    " + std::string(lines.substr(start, end - start)) + "\n";
    start = end + 1;
  }
  return out;
}

JobSpec Parse(std::string_view text) {
  auto spec = ParseJobSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : JobSpec{};
}

void ExpectSameSpec(const JobSpec& a, const JobSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.team, b.team);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.framework, b.framework);
  EXPECT_EQ(a.restart, b.restart);
  EXPECT_EQ(a.max_runtime, b.max_runtime);
  EXPECT_EQ(a.grace_period, b.grace_period);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    EXPECT_EQ(a.tasks[i].role, b.tasks[i].role);
    EXPECT_EQ(a.tasks[i].replicas, b.tasks[i].replicas);
    EXPECT_EQ(a.tasks[i].resources, b.tasks[i].resources);
    EXPECT_EQ(a.tasks[i].command, b.tasks[i].command);
    EXPECT_EQ(a.tasks[i].env, b.tasks[i].env);
    EXPECT_EQ(a.tasks[i].env_secrets, b.tasks[i].env_secrets);
    EXPECT_EQ(a.tasks[i].workdir, b.tasks[i].workdir);
    EXPECT_EQ(a.tasks[i].distinct_nodes, b.tasks[i].distinct_nodes);
  }
}

void ExpectRoundTrip(const JobSpec& spec) {
  Json doc = ToJson(spec);
  auto back = ParseJobSpecJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << doc.dump(2);
  ExpectSameSpec(*back, spec);
  EXPECT_EQ(ToJson(*back), doc);
  // Through text too, as the state store keeps it.
  auto reparsed = ParseJobSpec(doc.dump());
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().ToString();
  ExpectSameSpec(*reparsed, spec);
}

// --- Valid specs -----------------------------------------------------------------------------

TEST(JobSpecParser, ParsesEveryFieldOfFullYamlSpec) {
  JobSpec spec = Parse(kFullYaml);
  EXPECT_EQ(spec.name, "resnet50-imagenet");
  EXPECT_EQ(spec.team, "vision");
  EXPECT_EQ(spec.priority, kPriorityHigh);
  EXPECT_EQ(spec.framework, Framework::kPyTorch);
  ASSERT_EQ(spec.tasks.size(), 2u);

  const TaskGroupSpec& worker = spec.tasks[0];
  EXPECT_EQ(worker.role, "worker");
  EXPECT_EQ(worker.replicas, 2);
  EXPECT_EQ(worker.resources,
            (Resources{.gpus = 8, .milli_cpus = 32000, .memory_bytes = 256 * kGi}));
  EXPECT_THAT(worker.command,
              ElementsAre("torchrun", "--nproc-per-node=8", "train.py", "--epochs", "90"));
  EXPECT_EQ(worker.env, (std::map<std::string, std::string>{{"BATCH_SIZE", "256"},
                                                            {"EMPTY", ""},
                                                            {"LR", "0.1"},
                                                            {"NCCL_DEBUG", "INFO"},
                                                            {"USE_AMP", "true"}}));
  EXPECT_EQ(worker.workdir, "/home/ds/resnet");

  const TaskGroupSpec& evaluator = spec.tasks[1];
  EXPECT_EQ(evaluator.role, "evaluator");
  EXPECT_EQ(evaluator.replicas, 1);
  EXPECT_EQ(evaluator.resources,
            (Resources{.gpus = 1, .milli_cpus = 500, .memory_bytes = 1536 * kMi}));
  EXPECT_THAT(evaluator.command, ElementsAre("python3", "eval.py"));
  EXPECT_TRUE(evaluator.env.empty());
  EXPECT_EQ(evaluator.workdir, "");

  EXPECT_EQ(spec.restart.max_attempts, 3);
  EXPECT_EQ(spec.max_runtime, Duration(90min));
  EXPECT_EQ(spec.grace_period, Duration(2min));
  EXPECT_EQ(spec.TotalReplicas(), 3);
}

TEST(JobSpecParser, JsonGivesTheSameSpecAsYaml) {
  JobSpec from_yaml = Parse(kFullYaml);
  JobSpec from_json_text = Parse(kFullJson);
  auto from_json = ParseJobSpecJson(Json::parse(kFullJson));
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  EXPECT_EQ(ToJson(from_json_text), ToJson(from_yaml));
  EXPECT_EQ(ToJson(*from_json), ToJson(from_yaml));
  ExpectSameSpec(*from_json, from_yaml);
}

TEST(JobSpecParser, AppliesDefaults) {
  JobSpec spec = Parse(kMinimalYaml);
  EXPECT_EQ(spec.name, "train");
  EXPECT_EQ(spec.team, "default");
  EXPECT_EQ(spec.priority, kPriorityNormal);
  EXPECT_EQ(spec.framework, Framework::kNone);
  ASSERT_EQ(spec.tasks.size(), 1u);
  EXPECT_EQ(spec.tasks[0].replicas, 1);
  EXPECT_EQ(spec.tasks[0].resources,
            (Resources{.gpus = 0, .milli_cpus = 1000, .memory_bytes = kGi}));
  EXPECT_TRUE(spec.tasks[0].env.empty());
  EXPECT_EQ(spec.tasks[0].workdir, "");
  EXPECT_EQ(spec.restart, RestartPolicy{});
  EXPECT_EQ(spec.restart.max_attempts, 3);
  EXPECT_EQ(spec.max_runtime, std::nullopt);
  EXPECT_EQ(spec.grace_period, kDefaultGracePeriod);

  // An empty resources mapping gives the same defaults.
  EXPECT_EQ(Parse(WithTask("resources: {}")).tasks[0].resources, spec.tasks[0].resources);
  EXPECT_EQ(Parse(WithJob("restart: {}")).restart, RestartPolicy{});
}

// The master sends a job that names no team to its submitter's team (auth::TeamForJobs).
TEST(JobSpecParser, SaysWhetherTheSpecNamesATeam) {
  bool names_team = true;
  ASSERT_TRUE(ParseJobSpec(kMinimalYaml, "job spec", &names_team).ok());
  EXPECT_FALSE(names_team);
  ASSERT_TRUE(ParseJobSpec(WithJob("team: default"), "job spec", &names_team).ok());
  EXPECT_TRUE(names_team);
  ASSERT_TRUE(ParseJobSpec(R"({"name": "a", "tasks": [{"role": "w", "command": ["x"]}]})",
                           "job spec", &names_team)
                  .ok());
  EXPECT_FALSE(names_team);
  ASSERT_TRUE(
      ParseJobSpec(R"({"name": "a", "team": "vision", "tasks": [{"role": "w", "command": ["x"]}]})",
                   "job spec", &names_team)
          .ok());
  EXPECT_TRUE(names_team);
}

TEST(JobSpecParser, RestartPolicyReadsEveryFieldAndBacksOffExponentially) {
  JobSpec spec = Parse(
      WithJob("restart: {max_attempts: 5, on: [node_lost, preempted, node_lost], backoff: 2s, "
              "max_backoff: 10s}"));
  EXPECT_EQ(spec.restart.max_attempts, 5);
  EXPECT_EQ(spec.restart.on,
            (std::vector<RestartCause>{RestartCause::kNodeLost, RestartCause::kPreempted}));
  EXPECT_FALSE(spec.restart.RestartsOn(RestartCause::kFailure));
  EXPECT_EQ(spec.restart.BackoffAfter(1), std::chrono::seconds(2));
  EXPECT_EQ(spec.restart.BackoffAfter(2), std::chrono::seconds(4));
  EXPECT_EQ(spec.restart.BackoffAfter(3), std::chrono::seconds(8));
  EXPECT_EQ(spec.restart.BackoffAfter(4), std::chrono::seconds(10));
  EXPECT_EQ(spec.restart.BackoffAfter(60), std::chrono::seconds(10));
  // The canonical form reads back the same.
  EXPECT_EQ(ParseJobSpecJson(ToJson(spec))->restart, spec.restart);
  // Nothing restarts it.
  EXPECT_TRUE(Parse(WithJob("restart: {on: []}")).restart.on.empty());
  // A backoff longer than the default cap raises the cap with it.
  EXPECT_EQ(Parse(WithJob("restart: {backoff: 10m}")).restart.max_backoff,
            std::chrono::minutes(10));
}

TEST(JobSpecParser, AJobMayAskToBeFenced) {
  EXPECT_FALSE(Parse(WithJob("restart: {}")).restart.fence);
  JobSpec spec = Parse(WithJob("restart: {fence: true}"));
  EXPECT_TRUE(spec.restart.fence);
  EXPECT_EQ(ParseJobSpecJson(ToJson(spec))->restart, spec.restart);
  EXPECT_FALSE(ToJson(Parse(WithJob("restart: {}")))["restart"].contains("fence"))
      << "the canonical form of an unfenced job is as it was";
  EXPECT_THAT(Errors(WithJob("restart: {fence: \"yes\"}")),
              ElementsAre("restart.fence: must be true or false, got \"yes\""));
  EXPECT_THAT(Errors(WithJob("restart: {fence: 1}")),
              ElementsAre("restart.fence: must be true or false, got 1"));
}

TEST(JobSpecParser, ATaskGroupMayAskForANodePerReplica) {
  EXPECT_FALSE(Parse(kMinimalYaml).tasks[0].distinct_nodes);
  JobSpec spec = Parse(R"(name: mpi-like
tasks:
  - role: node
    replicas: 4
    resources: {gpus: 8}
    distinct_nodes: true
    command: [srun-like, train.py]
  - role: helper
    command: [python3, helper.py]
)");
  EXPECT_TRUE(spec.tasks[0].distinct_nodes);
  EXPECT_FALSE(spec.tasks[1].distinct_nodes) << "only the group that says so";
  EXPECT_EQ(ToJson(spec)["tasks"][0]["distinct_nodes"], true);
  ExpectRoundTrip(spec);
  EXPECT_FALSE(ToJson(Parse(kMinimalYaml))["tasks"][0].contains("distinct_nodes"))
      << "the canonical form of a job without it is as it was";
  EXPECT_FALSE(Parse(WithTask("distinct_nodes: false")).tasks[0].distinct_nodes);
  EXPECT_THAT(Errors(WithTask("distinct_nodes: \"yes\"")),
              ElementsAre("tasks[0].distinct_nodes: must be true or false, got \"yes\""));
  EXPECT_THAT(Errors(WithTask("distinct_nodes: 1")),
              ElementsAre("tasks[0].distinct_nodes: must be true or false, got 1"));
  EXPECT_THAT(Errors(WithJob("distinct_nodes: true")),
              ElementsAre("distinct_nodes: unknown field; it belongs in a task group, an entry "
                          "of tasks"));
}

TEST(JobSpecParser, RestartPolicyErrorsNameTheField) {
  EXPECT_THAT(Errors(WithJob("restart: {on: [failure, crash]}")),
              ElementsAre("restart.on[1]: \"crash\" is not a cause; use failure, node_lost or "
                          "preempted"));
  EXPECT_THAT(Errors(WithJob("restart: {on: failure}")),
              ElementsAre("restart.on: must be a list such as [failure, node_lost, preempted], "
                          "got \"failure\""));
  EXPECT_THAT(Errors(WithJob("restart: {backoff: 2h}")),
              ElementsAre("restart.backoff: must be at most 1h, got \"2h\""));
  EXPECT_THAT(Errors(WithJob("restart: {backoff: 1m, max_backoff: 30s}")),
              ElementsAre("restart.max_backoff: \"30s\" is shorter than restart.backoff (1m)"));
}

TEST(JobSpecParser, ToJsonWritesTheCanonicalDocument) {
  Json expected = Json::parse(R"({
    "name": "resnet50-imagenet",
    "team": "vision",
    "priority": "high",
    "framework": "pytorch",
    "tasks": [
      {
        "role": "worker",
        "replicas": 2,
        "resources": {"gpus": 8, "cpus": 32, "memory": "256Gi"},
        "command": ["torchrun", "--nproc-per-node=8", "train.py", "--epochs", "90"],
        "env": {"BATCH_SIZE": "256", "EMPTY": "", "LR": "0.1", "NCCL_DEBUG": "INFO",
                "USE_AMP": "true"},
        "workdir": "/home/ds/resnet"
      },
      {
        "role": "evaluator",
        "replicas": 1,
        "resources": {"gpus": 1, "cpus": 0.5, "memory": "1536Mi"},
        "command": ["python3", "eval.py"]
      }
    ],
    "restart": {"max_attempts": 3, "on": ["failure", "node_lost", "preempted"],
                "backoff": "10s", "max_backoff": "5m"},
    "max_runtime": "1h30m",
    "grace_period": "2m"
  })");
  EXPECT_EQ(ToJson(Parse(kFullYaml)), expected) << ToJson(Parse(kFullYaml)).dump(2);

  Json minimal = ToJson(Parse(kMinimalYaml));
  EXPECT_EQ(minimal["priority"], "normal");
  EXPECT_EQ(minimal["framework"], "none");
  EXPECT_EQ(minimal["grace_period"], "30s");
  EXPECT_FALSE(minimal.contains("max_runtime"));
  EXPECT_FALSE(minimal["tasks"][0].contains("env"));
  EXPECT_FALSE(minimal["tasks"][0].contains("workdir"));
  EXPECT_EQ(minimal["tasks"][0]["resources"], Json::parse(R"({"gpus": 0, "cpus": 1,
                                                              "memory": "1Gi"})"));
  EXPECT_EQ(ToJson(Parse(WithJob("priority: 7")))["priority"], 7);
}

TEST(JobSpecParser, RoundTripsThroughToJson) {
  ExpectRoundTrip(Parse(kFullYaml));
  ExpectRoundTrip(Parse(kMinimalYaml));
  ExpectRoundTrip(Parse(R"(name: edge.cases_1
team: a
priority: -7
framework: tensorflow
tasks:
  - role: chief
    resources: {cpus: 1.234, memory: 1000, gpus: 64}
    command: [sh, "", "two words", "ünïcode"]
    env: {PI: 3.14159, "N": -5, F: false}
  - role: worker
    replicas: 1023
    resources: {cpus: 250m, memory: 1.5Gi}
    command: [sh, -c, "echo \"$RANKS\""]
restart: {max_attempts: 100}
max_runtime: 2d
grace_period: 0s
)"));
  ExpectRoundTrip(Parse(WithJob("max_runtime: 1.5s\ngrace_period: 1h")));
  ExpectRoundTrip(Parse(WithJob("max_runtime: 250ms\ngrace_period: 61500ms")));
  ExpectRoundTrip(Parse(WithJob("max_runtime: 1h0.000007s\ngrace_period: 999us")));
  ExpectRoundTrip(Parse(WithJob("priority: low")));
  ExpectRoundTrip(Parse(WithJob("priority: 1000")));
}

TEST(JobSpecParser, YamlScalarTyping) {
  // Quoted scalars stay strings, plain ones are typed.
  JobSpec spec = Parse(R"(name: "2024"
team: '42'
tasks:
  - role: worker
    command: ["1", '2', "true", "null"]
    env: {A: 0x1F, B: 1e3, C: "0x1F", D: False, E: 007, F: ~x, G: !!str 12}
    resources: {memory: 0o10, cpus: +2}
)");
  EXPECT_EQ(spec.name, "2024");
  EXPECT_EQ(spec.team, "42");
  EXPECT_THAT(spec.tasks[0].command, ElementsAre("1", "2", "true", "null"));
  EXPECT_EQ(spec.tasks[0].env, (std::map<std::string, std::string>{{"A", "31"},
                                                                   {"B", "1000.0"},
                                                                   {"C", "0x1F"},
                                                                   {"D", "false"},
                                                                   {"E", "7"},
                                                                   {"F", "~x"},
                                                                   {"G", "12"}}));
  EXPECT_EQ(spec.tasks[0].resources.memory_bytes, 8);
  EXPECT_EQ(spec.tasks[0].resources.milli_cpus, 2000);

  // Plain numbers where strings are expected are type errors; quoting fixes them.
  EXPECT_THAT(Errors("name: 2024\ntasks: [{role: w, command: [x]}]"),
              ElementsAre("name: must be a string, got 2024"));
  EXPECT_THAT(Errors(WithTask("replicas: \"2\"")),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got \"2\""));
}

TEST(JobSpecParser, AcceptsPriorityNamesAndIntegers) {
  EXPECT_EQ(Parse(WithJob("priority: low")).priority, kPriorityLow);
  EXPECT_EQ(Parse(WithJob("priority: normal")).priority, kPriorityNormal);
  EXPECT_EQ(Parse(WithJob("priority: high")).priority, kPriorityHigh);
  EXPECT_EQ(Parse(WithJob("priority: 250")).priority, 250);
  EXPECT_EQ(Parse(WithJob("priority: -1000")).priority, kMinPriority);
  EXPECT_EQ(Parse(WithJob("priority: 1000")).priority, kMaxPriority);
}

TEST(JobSpecParser, AcceptsCpuAndMemoryForms) {
  auto resources = [](std::string_view r) {
    return Parse(WithTask("resources: " + std::string(r))).tasks[0].resources;
  };
  EXPECT_EQ(resources("{cpus: 4}").milli_cpus, 4000);
  EXPECT_EQ(resources("{cpus: 0.5}").milli_cpus, 500);
  EXPECT_EQ(resources("{cpus: \"0.5\"}").milli_cpus, 500);
  EXPECT_EQ(resources("{cpus: 500m}").milli_cpus, 500);
  EXPECT_EQ(resources("{memory: 512Mi}").memory_bytes, 512 * kMi);
  EXPECT_EQ(resources("{memory: 32Gi}").memory_bytes, 32 * kGi);
  EXPECT_EQ(resources("{memory: 2G}").memory_bytes, 2'000'000'000);
  EXPECT_EQ(resources("{memory: 1048576}").memory_bytes, kMi);
}

TEST(JobSpecParser, AcceptsTensorFlowRoles) {
  JobSpec spec = Parse(R"(name: tf
framework: tensorflow
tasks:
  - {role: chief, command: [python3, t.py]}
  - {role: worker, replicas: 4, command: [python3, t.py]}
  - {role: ps, replicas: 2, command: [python3, t.py]}
  - {role: evaluator, command: [python3, t.py]}
)");
  EXPECT_EQ(spec.framework, Framework::kTensorFlow);
  EXPECT_EQ(spec.TotalReplicas(), 8);
}

TEST(JobSpecParser, AnMpiJobHasOneLauncherAndWorkersThatNeedNoCommand) {
  JobSpec spec = Parse(R"(name: ring
framework: mpi
tasks:
  - {role: launcher, command: [mpirun, python3, ring.py]}
  - {role: worker, replicas: 2, resources: {gpus: 2}}
)");
  EXPECT_EQ(spec.framework, Framework::kMpi);
  EXPECT_TRUE(spec.tasks[1].command.empty());
  ExpectRoundTrip(spec);

  EXPECT_THAT(Errors(R"(name: ring
framework: mpi
tasks:
  - {role: launcher, replicas: 2, command: [mpirun, x]}
  - {role: chief, command: [x]}
  - {role: worker, replicas: {min: 1, max: 3}}
)"),
              ElementsAre("tasks[0].replicas: an MPI job has 1 launcher, got 2",
                          "tasks[1].role: \"chief\" is not a role of an MPI job; use launcher "
                          "(one task that runs mpirun) and worker (the tasks the ranks run in)",
                          "tasks[2].replicas: framework mpi needs a fixed number of processes: "
                          "elastic replicas need framework pytorch (with torchrun) or none"));
  EXPECT_THAT(Errors("name: ring\nframework: mpi\ntasks: [{role: worker}]"),
              ElementsAre("tasks: an MPI job needs a task group with role launcher (launcher "
                          "runs mpirun, worker holds the ranks)"));
  // The launcher runs mpirun: it needs a command.
  EXPECT_THAT(Errors("name: ring\nframework: mpi\ntasks: [{role: launcher}, {role: worker}]"),
              ElementsAre("tasks[0].command: required field is missing"));
  // Outside an MPI job a worker needs its command as any task does.
  EXPECT_THAT(Errors("name: w\ntasks: [{role: worker}]"),
              ElementsAre("tasks[0].command: required field is missing"));
}

TEST(JobSpecErrors, AFrameworksOwnVariablesAreReservedInItsJobsOnly) {
  EXPECT_THAT(Errors("name: j\nframework: jax\ntasks: [{role: w, command: [x], env: "
                     "{JAX_COORDINATOR_ADDRESS: h}}]"),
              ElementsAre("tasks[0].env.JAX_COORDINATOR_ADDRESS: is set by Cohort in a job of "
                          "framework jax and cannot be set in the spec"));
  EXPECT_THAT(Errors("name: j\nframework: mpi\ntasks: [{role: launcher, command: [x], env: "
                     "{OMPI_MCA_plm_rsh_agent: ssh}}, {role: worker}]"),
              ElementsAre("tasks[0].env.OMPI_MCA_plm_rsh_agent: is set by Cohort in a job of "
                          "framework mpi and cannot be set in the spec"));
  EXPECT_EQ(Parse("name: j\ntasks: [{role: w, command: [x], env: {NODE_RANK: \"1\"}}]")
                .tasks[0]
                .env.at("NODE_RANK"),
            "1");
}

// --- Errors ----------------------------------------------------------------------------------

TEST(JobSpecErrors, BadMemorySaysWhyAndGivesAnExample) {
  EXPECT_THAT(Errors(WithTask("resources:\n  memory: 32GB")),
              ElementsAre("tasks[0].resources.memory: \"32GB\" is not a size; use e.g. 32Gi"));
}

TEST(JobSpecErrors, SummaryCountsErrorsAndNamesTheSource) {
  auto one = ParseJobSpec(WithTask("replicas: 0"));
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().message(), "job spec has 1 error");

  auto two = ParseJobSpec("tasks: []\nteam: x y", "job.yaml");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(two.status().message(), "job.yaml: job spec has 3 errors");

  auto json = ParseJobSpecJson(Json::parse(R"({"tasks": []})"));
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().message(), "job spec has 2 errors");
  EXPECT_THAT(json.status().details(), ElementsAre("name: required field is missing",
                                                   "tasks: must list at least one task group"));
}

TEST(JobSpecErrors, UnknownFieldSuggestsTheClosestName) {
  EXPECT_THAT(Errors(R"(name: train
tasks:
  - role: worker
    command: [python3, train.py]
  - role: eval
    resouces: {gpus: 1}
    command: [python3, eval.py]
)"),
              ElementsAre("tasks[1].resouces: unknown field; did you mean \"resources\"?"));
  EXPECT_THAT(Errors(WithJob("priorty: high")),
              ElementsAre("priorty: unknown field; did you mean \"priority\"?"));
  EXPECT_THAT(Errors(WithJob("Team: vision")),
              ElementsAre("Team: unknown field; did you mean \"team\"?"));
  EXPECT_THAT(Errors(WithTask("resources: {gpu: 1}")),
              ElementsAre("tasks[0].resources.gpu: unknown field; did you mean \"gpus\"?"));
  EXPECT_THAT(Errors(WithJob("restart: {max_attempt: 2}")),
              ElementsAre("restart.max_attempt: unknown field; did you mean \"max_attempts\"?"));
}

TEST(JobSpecErrors, UnknownFieldWithoutCloseMatchListsTheFields) {
  EXPECT_THAT(Errors(WithTask("volumes: [/data]")),
              ElementsAre("tasks[0].volumes: unknown field; expected one of: role, replicas, "
                          "resources, command, env, workdir, distinct_nodes, image"));
  EXPECT_THAT(Errors(WithJob("owner: me")),
              ElementsAre("owner: unknown field; expected one of: name, team, priority, "
                          "framework, tasks, restart, max_runtime, grace_period, constraints, "
                          "datasets, context, array, depends_on, slurm, session"));
  EXPECT_THAT(Errors(WithTask("resources: {disk: 10Gi}")),
              ElementsAre("tasks[0].resources.disk: unknown field; expected one of: gpus, cpus, "
                          "memory"));
}

TEST(JobSpecErrors, MisplacedFieldSaysWhereItBelongs) {
  EXPECT_THAT(Errors(WithJob("max_attempts: 3")),
              ElementsAre("max_attempts: unknown field; did you mean restart.max_attempts?"));
  EXPECT_THAT(Errors(WithJob("env: {A: b}")),
              ElementsAre("env: unknown field; it belongs in a task group, an entry of tasks"));
  EXPECT_THAT(Errors(WithJob("gpus: 8")),
              ElementsAre("gpus: unknown field; it belongs in tasks[].resources"));
  EXPECT_THAT(Errors(WithTask("gpus: 8")),
              ElementsAre("tasks[0].gpus: unknown field; it belongs under resources"));
  EXPECT_THAT(Errors(WithTask("max_runtime: 1h")),
              ElementsAre("tasks[0].max_runtime: unknown field; it belongs at the top level of "
                          "the job spec"));
}

TEST(JobSpecErrors, ReportsEveryProblemAtOnce) {
  auto spec = ParseJobSpec(R"(name: my job
priority: urgent
framework: ray
tasks:
  - role: Worker
    replicas: 0
    resources: {gpus: -1, cpus: 0, memory: 32GB}
    command: python3 train.py
    env: {MY-VAR: x, RANK: "0"}
    workdir: ../data
restart: {max_attempts: 0}
max_runtime: 0s
grace_period: 2h
)",
                           "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "job.yaml: job spec has 15 errors");
  EXPECT_THAT(
      spec.status().details(),
      ElementsAre("name: \"my job\" is not a valid name: use 1 to 128 letters, digits, '.', '_' "
                  "or '-', starting with a letter or digit",
                  "priority: \"urgent\" is not a priority; use low, normal, high or an integer "
                  "from -1000 to 1000",
                  "framework: \"ray\" is not a framework; use none, pytorch, tensorflow, mpi, "
                  "jax, deepspeed or slurm",
                  "tasks[0].role: \"Worker\" is not a valid role: use 1 to 32 lowercase letters, "
                  "digits, '_' or '-', starting with a letter",
                  "tasks[0].replicas: must be an integer from 1 to 1024, got 0",
                  "tasks[0].resources.gpus: must be an integer from 0 to 64, got -1",
                  "tasks[0].resources.cpus: must be greater than 0, got 0",
                  "tasks[0].resources.memory: \"32GB\" is not a size; use e.g. 32Gi",
                  "tasks[0].command: must be a list of strings, e.g. [python3, train.py], got "
                  "\"python3 train.py\"",
                  "tasks[0].env.MY-VAR: not a valid variable name: use letters, digits and '_', "
                  "not starting with a digit",
                  "tasks[0].env.RANK: is set by Cohort and cannot be set in the spec",
                  "tasks[0].workdir: \"../data\" must not contain a '..' component: a relative "
                  "workdir stays within its directory; write an absolute path to run elsewhere",
                  "restart.max_attempts: must be an integer from 1 to 100, got 0",
                  "max_runtime: must be longer than 0s, got \"0s\"",
                  "grace_period: must be at most 1h, got \"2h\""));
}

TEST(JobSpecErrors, GracePeriodRange) {
  EXPECT_THAT(Errors(WithJob("grace_period: 2h")),
              ElementsAre("grace_period: must be at most 1h, got \"2h\""));
  EXPECT_EQ(Parse(WithJob("grace_period: 0s")).grace_period, Duration::zero());
  EXPECT_EQ(Parse(WithJob("grace_period: 1h")).grace_period, Duration(1h));
}

TEST(JobSpecErrors, WrongTypeForEveryField) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"name: [a]\ntasks: [{role: w, command: [x]}]", "name: must be a string, got a list"},
      {WithJob("team: 7"), "team: must be a string, got 7"},
      {WithJob("priority: 2.5"),
       "priority: 2.5 is not a priority; use low, normal, high or an integer from -1000 to 1000"},
      {WithJob("priority: [high]"),
       "priority: a list is not a priority; use low, normal, high or an integer from -1000 to "
       "1000"},
      {WithJob("framework: true"),
       "framework: true is not a framework; use none, pytorch, tensorflow, mpi, jax, "
       "deepspeed or slurm"},
      {"name: x\ntasks: {role: w}", "tasks: must be a list of task groups, got a mapping"},
      {"name: x\ntasks: worker", "tasks: must be a list of task groups, got \"worker\""},
      {"name: x\ntasks: [worker]",
       "tasks[0]: must be a mapping with role, command and the other task fields, got \"worker\""},
      {"name: x\ntasks: [{role: 5, command: [x]}]", "tasks[0].role: must be a string, got 5"},
      {WithTask("replicas: two"),
       "tasks[0].replicas: must be an integer from 1 to 1024, got \"two\""},
      {WithTask("replicas: 1.5"), "tasks[0].replicas: must be an integer from 1 to 1024, got 1.5"},
      {WithTask("replicas: true"),
       "tasks[0].replicas: must be an integer from 1 to 1024, got true"},
      {WithTask("resources: 8"),
       "tasks[0].resources: must be a mapping with gpus, cpus and memory, got 8"},
      {WithTask("resources: {gpus: \"8\"}"),
       "tasks[0].resources.gpus: must be an integer from 0 to 64, got \"8\""},
      {WithTask("resources: {cpus: [4]}"),
       "tasks[0].resources.cpus: must be a number of CPUs (4, 0.5) or a string (\"500m\"), got "
       "a list"},
      {WithTask("resources: {cpus: four}"),
       "tasks[0].resources.cpus: \"four\" is not a CPU amount; use e.g. 4, 0.5 or 500m"},
      {WithTask("resources: {memory: 1.5}"),
       "tasks[0].resources.memory: must be a size such as \"32Gi\" or a number of bytes, got "
       "1.5"},
      {WithTask("resources: {memory: {size: 1Gi}}"),
       "tasks[0].resources.memory: must be a size such as \"32Gi\" or a number of bytes, got a "
       "mapping"},
      {WithTask("env: [A=b]"), "tasks[0].env: must be a mapping of NAME: value, got a list"},
      {WithTask("env: {A: [1, 2]}"),
       "tasks[0].env.A: must be a string, number, bool or {secret: NAME}, got a list"},
      {WithTask("env: {A: {b: c}}"),
       "tasks[0].env.A.b: unknown field; a secret reference is {secret: NAME}, e.g. {secret: "
       "wandb} (set with `cohort secret set wandb`)"},
      {WithTask("env: {A: }"),
       "tasks[0].env.A: must be a string, number, bool or {secret: NAME}, got null; write \"\" "
       "for an empty value"},
      {WithTask("workdir: 5"), "tasks[0].workdir: must be a string, got 5"},
      {WithJob("restart: 3"), "restart: must be a mapping such as {max_attempts: 3}, got 3"},
      {WithJob("restart: {max_attempts: three}"),
       "restart.max_attempts: must be an integer from 1 to 100, got \"three\""},
      {WithJob("max_runtime: 3600"),
       "max_runtime: must be a duration such as \"90m\", \"2h\" or \"1h30m\", got 3600"},
      {WithJob("grace_period: [30s]"),
       "grace_period: must be a duration such as \"90m\", \"2h\" or \"1h30m\", got a list"},
      {WithJob("team:"), "team: must be a string, got null"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(Errors(c.yaml), ElementsAre(c.error)) << c.yaml;
  }
}

TEST(JobSpecErrors, WrongJsonTypesSayWhatWasExpectedAndFound) {
  EXPECT_THAT(JsonErrors(R"({"name": "x", "tasks": [{"role": "w", "replicas": "two",
                             "command": ["x"]}]})"),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got \"two\""));
  EXPECT_THAT(JsonErrors(R"({"name": null, "tasks": [{"role": "w", "command": ["x"],
                             "resources": {"gpus": 1e2}}]})"),
              ElementsAre("name: must be a string, got null",
                          "tasks[0].resources.gpus: must be an integer from 0 to 64, got 100.0"));
  EXPECT_THAT(JsonErrors(R"({"name": "x", "tasks": [{"role": "w", "command": ["x"],
                             "env": {"DEBUG": null}}], "priority": {}})"),
              ElementsAre("priority: an empty mapping is not a priority; use low, normal, high or "
                          "an integer from -1000 to 1000",
                          "tasks[0].env.DEBUG: must be a string, number, bool or {secret: NAME}, "
                          "got null; write \"\" for an empty value"));
  EXPECT_THAT(JsonErrors("[1, 2]"),
              ElementsAre("job spec must be a mapping with fields such as name and tasks, got a "
                          "list"));
  EXPECT_THAT(JsonErrors("\"name\""),
              ElementsAre("job spec must be a mapping with fields such as name and tasks, got "
                          "\"name\""));
}

TEST(JobSpecErrors, OutOfRangeValues) {
  EXPECT_THAT(Errors(WithTask("replicas: 1025")),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got 1025"));
  EXPECT_THAT(Errors(WithTask("replicas: -1")),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got -1"));
  EXPECT_THAT(Errors(WithTask("replicas: 99999999999999999999")),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got "
                          "\"99999999999999999999\""));
  EXPECT_THAT(Errors(WithTask("resources: {gpus: 65}")),
              ElementsAre("tasks[0].resources.gpus: must be an integer from 0 to 64, got 65"));
  EXPECT_THAT(Errors(WithTask("resources: {cpus: -2}")),
              ElementsAre("tasks[0].resources.cpus: must be greater than 0, got -2"));
  EXPECT_THAT(Errors(WithTask("resources: {cpus: 0m}")),
              ElementsAre("tasks[0].resources.cpus: must be greater than 0, got \"0m\""));
  EXPECT_THAT(Errors(WithTask("resources: {cpus: 0.0005}")),
              ElementsAre("tasks[0].resources.cpus: 0.0005 is finer than a thousandth of a CPU"));
  EXPECT_THAT(Errors(WithTask("resources: {cpus: 1e10}")),
              ElementsAre("tasks[0].resources.cpus: must be at most 16384, got 10000000000.0"));
  EXPECT_THAT(Errors(WithTask("resources: {memory: 0}")),
              ElementsAre("tasks[0].resources.memory: must be greater than 0, got 0"));
  EXPECT_THAT(Errors(WithTask("resources: {memory: \"0Gi\"}")),
              ElementsAre("tasks[0].resources.memory: must be greater than 0, got \"0Gi\""));
  EXPECT_THAT(Errors(WithTask("resources: {memory: -512}")),
              ElementsAre("tasks[0].resources.memory: must be greater than 0, got -512"));
  EXPECT_THAT(Errors(WithJob("restart: {max_attempts: 101}")),
              ElementsAre("restart.max_attempts: must be an integer from 1 to 100, got 101"));
  std::string long_name(129, 'a');
  EXPECT_THAT(Errors("name: " + long_name + "\ntasks: [{role: w, command: [x]}]"),
              ElementsAre("name: must be at most 128 characters, got 129"));
  EXPECT_EQ(
      Parse("name: " + std::string(128, 'a') + "\ntasks: [{role: w, command: [x]}]").name.size(),
      128u);
  EXPECT_THAT(Errors(WithJob("team: " + std::string(65, 't'))),
              ElementsAre("team: must be at most 64 characters, got 65"));
}

TEST(JobSpecErrors, NamesAndRoles) {
  EXPECT_THAT(Errors("name: -train\ntasks: [{role: w, command: [x]}]"),
              ElementsAre("name: \"-train\" is not a valid name: use 1 to 128 letters, digits, "
                          "'.', '_' or '-', starting with a letter or digit"));
  EXPECT_THAT(Errors("name: \"\"\ntasks: [{role: w, command: [x]}]"),
              ElementsAre("name: \"\" is not a valid name: use 1 to 128 letters, digits, '.', '_' "
                          "or '-', starting with a letter or digit"));
  EXPECT_THAT(Errors(WithJob("team: ml/vision")),
              ElementsAre("team: \"ml/vision\" is not a valid team: use 1 to 64 letters, digits, "
                          "'.', '_' or '-', starting with a letter or digit"));
  EXPECT_THAT(Errors("tasks: [{role: w, command: [x]}]"),
              ElementsAre("name: required field is missing"));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: 1st, command: [x]}]"),
              ElementsAre("tasks[0].role: \"1st\" is not a valid role: use 1 to 32 lowercase "
                          "letters, digits, '_' or '-', starting with a letter"));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: " + std::string(33, 'r') + ", command: [x]}]"),
              ElementsAre(HasSubstr("is not a valid role: use 1 to 32 lowercase letters")));
  EXPECT_TRUE(
      ParseJobSpec("name: x\ntasks: [{role: " + std::string(32, 'r') + ", command: [x]}]").ok());
  EXPECT_THAT(Errors("name: x\ntasks: [{command: [x]}]"),
              ElementsAre("tasks[0].role: required field is missing"));
  EXPECT_THAT(Errors("name: x"), ElementsAre("tasks: required field is missing"));
  EXPECT_THAT(Errors("name: x\ntasks: []"),
              ElementsAre("tasks: must list at least one task group"));
}

TEST(JobSpecErrors, DuplicateRolesNameTheFirst) {
  EXPECT_THAT(Errors(R"(name: x
tasks:
  - {role: worker, command: [a]}
  - {role: ps, command: [b]}
  - {role: worker, command: [c]}
)"),
              ElementsAre("tasks[2].role: \"worker\" is already the role of tasks[0]"));
}

TEST(JobSpecErrors, ReservedEnvNames) {
  EXPECT_THAT(
      Errors(WithTask("env:\n  RANK: 0\n  COHORT_JOB_ID: x\n  TF_CONFIG: \"{}\"\n"
                      "  CUDA_VISIBLE_DEVICES: 0,1\n  MASTER_PORT: 29500\n  OK_VAR: 1")),
      ElementsAre("tasks[0].env.COHORT_JOB_ID: is set by Cohort and cannot be set in the "
                  "spec",
                  "tasks[0].env.CUDA_VISIBLE_DEVICES: is set by Cohort and cannot be set "
                  "in the spec",
                  "tasks[0].env.MASTER_PORT: is set by Cohort and cannot be set in the spec",
                  "tasks[0].env.RANK: is set by Cohort and cannot be set in the spec",
                  "tasks[0].env.TF_CONFIG: is set by Cohort and cannot be set in the spec"));
  for (const char* name : {"CUDA_DEVICE_ORDER", "MASTER_ADDR", "WORLD_SIZE", "LOCAL_RANK",
                           "LOCAL_WORLD_SIZE", "COHORT_ANYTHING"}) {
    EXPECT_THAT(Errors(WithTask(std::string("env: {") + name + ": x}")),
                ElementsAre(std::string("tasks[0].env.") + name +
                            ": is set by Cohort and cannot be set in the spec"));
  }
  // Close but not reserved.
  EXPECT_EQ(Parse(WithTask("env: {MY_RANK: 1, cohort_x: 2, RANKS: 3}")).tasks[0].env.size(), 3u);
}

TEST(JobSpecErrors, BadEnvNames) {
  const std::string reason =
      ": not a valid variable name: use letters, digits and '_', not starting with a digit";
  EXPECT_THAT(Errors(WithTask("env: {MY-VAR: x}")), ElementsAre("tasks[0].env.MY-VAR" + reason));
  EXPECT_THAT(Errors(WithTask("env: {1ST: x}")), ElementsAre("tasks[0].env.1ST" + reason));
  EXPECT_THAT(Errors(WithTask("env: {\"A B\": x}")), ElementsAre("tasks[0].env.A B" + reason));
  EXPECT_THAT(Errors(WithTask("env: {\"\": x}")), ElementsAre("tasks[0].env." + reason));
  EXPECT_EQ(Parse(WithTask("env: {_x9: y}")).tasks[0].env.at("_x9"), "y");
}

TEST(JobSpecErrors, TensorFlowRoleRules) {
  EXPECT_THAT(Errors(R"(name: tf
framework: tensorflow
tasks:
  - {role: chief, replicas: 2, command: [a]}
  - {role: trainer, command: [a]}
  - {role: evaluator, replicas: 3, command: [a]}
  - {role: ps, replicas: 3, command: [a]}
)"),
              ElementsAre("tasks[0].replicas: a TensorFlow chief has 1 replica, got 2",
                          "tasks[1].role: \"trainer\" is not a TensorFlow role; use chief, worker, "
                          "ps or evaluator",
                          "tasks[2].replicas: a TensorFlow evaluator has 1 replica, got 3"));
  // The same roles are fine without TensorFlow.
  EXPECT_TRUE(ParseJobSpec("name: x\ntasks: [{role: trainer, replicas: 2, command: [a]}]").ok());
}

TEST(JobSpecErrors, JobAtMost1024Tasks) {
  EXPECT_THAT(Errors(R"(name: big
tasks:
  - {role: a, replicas: 1000, command: [x]}
  - {role: b, replicas: 25, command: [x]}
)"),
              ElementsAre("tasks: the job has 1025 tasks in all; at most 1024 are allowed"));
  EXPECT_TRUE(ParseJobSpec(R"(name: big
tasks:
  - {role: a, replicas: 1000, command: [x]}
  - {role: b, replicas: 24, command: [x]}
)")
                  .ok());
}

TEST(JobSpecErrors, YamlSyntaxErrorGivesLineAndColumn) {
  EXPECT_EQ(Message("name: x\n  team: y\n"), "job.yaml:2:7: illegal map value");
  EXPECT_EQ(Message("name: x\n\ttasks: []\n"),
            "job.yaml:2:1: illegal tab when looking for indentation");
  EXPECT_EQ(Message("name: x\ntasks:\n- role: w\n  command: [a, b\n  env: {}\n"),
            "job.yaml:5:6: end of sequence flow not found");
  EXPECT_EQ(Message("name: \"x\ntasks: []"), "job.yaml:2:10: illegal EOF in scalar");
  // yaml-cpp's own LoadAll never returns on these.
  EXPECT_EQ(Message(",name: x\n"), "job.yaml:1:1: unexpected \",\"");
  EXPECT_EQ(Message("# comment\n  , name: x\n"), "job.yaml:2:3: unexpected \",\"");
  EXPECT_EQ(Message("name: x\n---\n,b\n"), "job.yaml:3:1: unexpected \",\"");
  // Without a source the message still says where.
  auto spec = ParseJobSpec("a: b: c");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "job spec:1:5: illegal map value");
  EXPECT_TRUE(spec.status().details().empty());
}

TEST(JobSpecErrors, JsonSyntaxErrorGivesLineAndColumn) {
  EXPECT_EQ(Message("{\n  \"name\": \"x\",\n  \"tasks\": [\n}\n", "job.json"),
            "job.json:4:1: syntax error while parsing value - unexpected '}'; expected '[', '{', "
            "or a literal");
  EXPECT_EQ(Message("{\"name\": \"x\"", "job.json"),
            "job.json:1:13: syntax error while parsing object - unexpected end of input; "
            "expected '}'");
}

TEST(JobSpecErrors, EmptyDocument) {
  for (std::string_view text : {"", "\n\n", "# nothing yet\n", "---\n", "~"}) {
    EXPECT_THAT(Errors(text), ElementsAre("job spec is empty; it needs at least name and tasks"))
        << text;
  }
}

TEST(JobSpecErrors, TopLevelMustBeAMapping) {
  EXPECT_THAT(Errors("- name: x\n- tasks: []\n"),
              ElementsAre("job spec must be a mapping with fields such as name and tasks, got a "
                          "list"));
  EXPECT_THAT(Errors("just some words"),
              ElementsAre("job spec must be a mapping with fields such as name and tasks, got "
                          "\"just some words\""));
  EXPECT_EQ(Message("name: x\n---\nname: y\n"),
            "job.yaml: holds more than one YAML document; a job spec is a single document");
}

TEST(JobSpecErrors, DuplicateYamlKeys) {
  EXPECT_THAT(Errors("name: a\ntasks: [{role: w, command: [x]}]\nname: b\n"),
              ElementsAre("name: duplicate key (lines 1 and 3)"));
  EXPECT_THAT(Errors(WithTask("env:\n  A: 1\n  B: 2\n  A: 3")),
              ElementsAre("tasks[0].env.A: duplicate key (lines 6 and 8)"));
  EXPECT_THAT(Errors("name: a\ntasks: [{role: w, role: v, command: [x]}]\n"),
              ElementsAre("tasks[0].role: duplicate key (lines 2 and 2)"));
}

TEST(JobSpecErrors, CommandMustBeAListOfStrings) {
  EXPECT_THAT(Errors("name: x\ntasks: [{role: w, command: python3 train.py}]"),
              ElementsAre("tasks[0].command: must be a list of strings, e.g. [python3, train.py], "
                          "got \"python3 train.py\""));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: w, command: [python3, train.py, --epochs, 8]}]"),
              ElementsAre("tasks[0].command[3]: must be a string, got 8; command must be a list "
                          "of strings, e.g. [python3, train.py]"));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: w, command: []}]"),
              ElementsAre("tasks[0].command: must be a list of strings, e.g. [python3, "
                          "train.py], got an empty list"));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: w, command: [\"\", x]}]"),
              ElementsAre("tasks[0].command[0]: the program to run must not be empty"));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: w}]"),
              ElementsAre("tasks[0].command: required field is missing"));
}

TEST(JobSpecErrors, WorkdirIsAbsoluteOrRelativeToTheTaskDirectory) {
  EXPECT_EQ(Parse(WithTask("workdir: data/run")).tasks[0].workdir, "data/run");
  EXPECT_THAT(Errors(WithTask("workdir: \"\"")),
              ElementsAre("tasks[0].workdir: must not be empty; leave the field out to run in the "
                          "task's own directory"));
  EXPECT_EQ(Parse(WithTask("workdir: /data/run")).tasks[0].workdir, "/data/run");
}

TEST(JobSpecErrors, PriorityOutOfRangeOrUnknown) {
  const std::string use =
      " is not a priority; use low, normal, high or an integer from -1000 to "
      "1000";
  EXPECT_THAT(Errors(WithJob("priority: urgent")), ElementsAre("priority: \"urgent\"" + use));
  EXPECT_THAT(Errors(WithJob("priority: 1001")), ElementsAre("priority: 1001" + use));
  EXPECT_THAT(Errors(WithJob("priority: -1001")), ElementsAre("priority: -1001" + use));
  EXPECT_THAT(Errors(WithJob("priority: High")), ElementsAre("priority: \"High\"" + use));
  EXPECT_THAT(Errors(WithJob("priority: \"100\"")), ElementsAre("priority: \"100\"" + use));
}

TEST(JobSpecErrors, Durations) {
  EXPECT_THAT(Errors(WithJob("max_runtime: 90x")),
              ElementsAre("max_runtime: \"90x\" is not a duration; use e.g. 90m, 2h or 1h30m"));
  EXPECT_THAT(Errors(WithJob("max_runtime: 2 hours")),
              ElementsAre("max_runtime: \"2 hours\" is not a duration; use e.g. 90m, 2h or "
                          "1h30m"));
  EXPECT_THAT(Errors(WithJob("max_runtime: 0s")),
              ElementsAre("max_runtime: must be longer than 0s, got \"0s\""));
  EXPECT_THAT(Errors(WithJob("max_runtime: 0h0m")),
              ElementsAre("max_runtime: must be longer than 0s, got \"0h0m\""));
  EXPECT_THAT(Errors(WithJob("grace_period: 30")),
              ElementsAre("grace_period: must be a duration such as \"90m\", \"2h\" or \"1h30m\", "
                          "got 30"));
  EXPECT_THAT(Errors(WithJob("grace_period: 1h1s")),
              ElementsAre("grace_period: must be at most 1h, got \"1h1s\""));
  EXPECT_EQ(Parse(WithJob("grace_period: 0.5ms")).grace_period, Duration(500));
  EXPECT_EQ(Parse(WithJob("max_runtime: 2h")).max_runtime, Duration(2h));
  EXPECT_EQ(Parse(WithJob("max_runtime: 1h30m")).max_runtime, Duration(90min));
}

TEST(JobSpecErrors, HostileDocumentsAreRefusedNotCrashed) {
  // A self-referencing alias and an alias "billion laughs" expand without end.
  EXPECT_THAT(Message("&a [*a]"), HasSubstr("nested too deeply"));
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char p = static_cast<char>(c - 1);
    laughs += fmt::format(
        "{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n", c, p);
  }
  EXPECT_THAT(Message(laughs), HasSubstr("expands (through aliases) too far"));
  // Numbers too long for the unit parsers.
  EXPECT_THAT(Errors(WithTask("resources: {memory: \"" + std::string(400, '9') + "Gi\"}")),
              ElementsAre(HasSubstr("tasks[0].resources.memory: ")));
  EXPECT_THAT(Errors(WithJob("max_runtime: " + std::string(400, '9') + "h")),
              ElementsAre(HasSubstr("max_runtime: ")));
  EXPECT_THAT(Errors(WithTask("env: {A: \"\xff\"}")),
              ElementsAre("tasks[0].env.A: is not valid UTF-8"));
  EXPECT_THAT(Errors(WithTask("env: {\"\xc3\": x}")),
              ElementsAre("tasks[0].env: a key is not valid UTF-8"));
  EXPECT_THAT(Errors("name: x\ntasks: [{role: w, command: [\"a\\0b\"]}]"),
              ElementsAre("tasks[0].command[0]: must not contain a NUL character"));
}

}  // namespace
}  // namespace cohort

namespace cohort {
namespace {

TEST(JobSpecFile, RelativeWorkdirIsTakenFromTheSpecFilesDirectory) {
  constexpr const char* kSpec = R"(name: rel
tasks:
  - role: worker
    command: [python3, train.py]
    workdir: examples/./ddp/
)";
  auto spec = ParseJobSpecFile(kSpec, "job.yaml", "/home/ds/project");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].workdir, "/home/ds/project/examples/ddp");
  auto dot = ParseJobSpecFile("name: rel\ntasks: [{role: w, command: [x], workdir: .}]\n",
                              "job.yaml", "/srv/job");
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot->tasks[0].workdir, "/srv/job");
  // Without a file to be relative to (the API), it stays relative: to the task's directory.
  EXPECT_EQ(ParseJobSpec(kSpec, "job.yaml")->tasks[0].workdir, "examples/ddp");
}

}  // namespace
}  // namespace cohort

namespace cohort {
namespace {

TEST(JobSpecConstraints, ParseRoundTripAndRejectNonsense) {
  auto spec = ParseJobSpec(R"(name: c
constraints:
  gpu_model: NVIDIA H100 80GB HBM3
  labels: {rack: r1, nvlink: true}
tasks: [{role: w, command: [x]}]
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->constraints.gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(spec->constraints.labels.at("rack"), "r1");
  EXPECT_EQ(spec->constraints.labels.at("nvlink"), "true");
  auto back = ParseJobSpecJson(ToJson(*spec));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->constraints, spec->constraints);

  auto bad = ParseJobSpec(R"(name: c
constraints: {gpu_modle: A100, labels: {"bad label": x, rack: [1]}}
tasks: [{role: w, command: [x]}]
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().details(),
              ::testing::UnorderedElementsAre(
                  "constraints.gpu_modle: unknown field; did you mean \"gpu_model\"?",
                  "constraints.labels.bad label: not a valid label name: use 1 to 128 letters, "
                  "digits, '.', '_', '/' and '-'",
                  "constraints.labels.rack: must be a string, got a list"));
  auto empty_model =
      ParseJobSpec("name: c\nconstraints: {gpu_model: ''}\ntasks: [{role: w, command: [x]}]\n");
  ASSERT_FALSE(empty_model.ok());
}

}  // namespace
}  // namespace cohort

namespace cohort {
namespace {

TEST(JobSpecElastic, MinMaxReplicasParseAndRoundTrip) {
  auto spec = ParseJobSpec(R"(name: e
framework: pytorch
tasks: [{role: worker, replicas: {min: 2, max: 8}, command: [torchrun, train.py]}]
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].replicas, 2);
  EXPECT_EQ(spec->tasks[0].max_replicas, 8);
  EXPECT_TRUE(spec->elastic());
  EXPECT_EQ(spec->TotalReplicas(), 2);
  auto back = ParseJobSpecJson(ToJson(*spec));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->tasks[0].max_replicas, 8);
  EXPECT_EQ(ToJson(*spec)["tasks"][0]["replicas"], Json({{"max", 8}, {"min", 2}}));
  // min == max is simply a fixed size.
  auto fixed =
      ParseJobSpec("name: f\ntasks: [{role: w, replicas: {min: 3, max: 3}, command: [x]}]\n");
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(fixed->elastic());
  EXPECT_EQ(ToJson(*fixed)["tasks"][0]["replicas"], 3);
}

TEST(JobSpecElastic, BadRangesAndTensorFlowAreRefused) {
  auto bad = ParseJobSpec(R"(name: e
tasks:
  - {role: a, replicas: {min: 4, max: 2}, command: [x]}
  - {role: b, replicas: {min: 0, most: 9}, command: [x]}
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().details(),
              ::testing::UnorderedElementsAre(
                  "tasks[0].replicas.max: must be at least min (4), got 2",
                  "tasks[1].replicas.most: unknown field; expected min and max",
                  "tasks[1].replicas.max: required field is missing",
                  "tasks[1].replicas.min: must be an integer from 1 to 1024, got 0"));
  auto tf = ParseJobSpec(R"(name: t
framework: tensorflow
tasks: [{role: worker, replicas: {min: 1, max: 4}, command: [x]}]
)");
  ASSERT_FALSE(tf.ok());
  EXPECT_THAT(tf.status().details()[0], ::testing::HasSubstr("elastic replicas need"));
}

constexpr std::string_view kSlurmYaml = R"yaml(name: train
framework: slurm
tasks:
  - role: node
    replicas: 2
    resources: {gpus: 2, cpus: 8, memory: 16Gi}
    workdir: /home/ada/proj
slurm:
  script: "#!/bin/bash\nsrun python3 train.py\n"
  script_name: train.sh
  args: [--epochs, "3"]
  job_name: my train
  tasks_per_node: [2, 2]
  tasks_asked: true
  ntasks_per_node: 2
  cpus_per_task: 4
  gpus_per_task: "1"
  mem_per_node: 17179869184
  submit_dir: /home/ada/proj
  submit_host: login1
  partition: research
  qos: high
  array_step: 2
  output: logs/%x-%j.out
  error: logs/%x-%j.err
  open_mode: append
  signal: {number: 10, before_end: 90s, batch_only: true}
)yaml";

TEST(JobSpecParser, ASlurmJobHoldsItsScriptAndSettingsAndRoundTrips) {
  JobSpec spec = Parse(kSlurmYaml);
  ASSERT_TRUE(spec.slurm.has_value());
  EXPECT_EQ(spec.framework, Framework::kSlurm);
  EXPECT_TRUE(spec.tasks[0].distinct_nodes) << "a Slurm job's tasks are its nodes";
  EXPECT_TRUE(spec.tasks[0].command.empty());
  const SlurmSection& s = *spec.slurm;
  EXPECT_EQ(s.script, "#!/bin/bash\nsrun python3 train.py\n");
  EXPECT_EQ(s.args, (std::vector<std::string>{"--epochs", "3"}));
  EXPECT_EQ(s.job_name, "my train");
  EXPECT_EQ(s.tasks_per_node, (std::vector<int>{2, 2}));
  EXPECT_EQ(s.cpus_per_task, 4);
  EXPECT_EQ(s.gpus_per_task, "1");
  EXPECT_EQ(s.mem_per_node, 16 * kGi);
  EXPECT_TRUE(s.append);
  ASSERT_TRUE(s.signal.has_value());
  EXPECT_EQ(s.signal->number, 10);
  EXPECT_EQ(s.signal->before_end, 90s);
  EXPECT_TRUE(s.signal->batch_only);
  ExpectRoundTrip(spec);
  auto back = ParseJobSpecJson(ToJson(spec));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->slurm, spec.slurm);
  EXPECT_FALSE(ToJson(Parse(kMinimalYaml)).contains("slurm")) << "other jobs' form unchanged";
}

TEST(JobSpecParser, ASlurmJobIsOneGroupOfNodesWithAScriptAndNoCommand) {
  auto with = [](std::string_view from, std::string_view to) {
    std::string text(kSlurmYaml);
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_THAT(Errors(with("role: node", "role: worker")),
              ElementsAre(HasSubstr("tasks[0].role: \"worker\" is not the role of a Slurm job")));
  EXPECT_THAT(Errors(with("    workdir: /home/ada/proj\n",
                          "    workdir: /home/ada/proj\n    command: [hostname]\n")),
              ElementsAre("tasks[0].command: a Slurm job's tasks have no command: the first "
                          "node runs slurm.script"));
  EXPECT_THAT(Errors(with("replicas: 2", "replicas: {min: 2, max: 3}")),
              ElementsAre(HasSubstr("tasks[0].replicas: a Slurm job's nodes are fixed")));
  EXPECT_THAT(Errors(with("tasks_per_node: [2, 2]", "tasks_per_node: [2, 2, 2]")),
              ElementsAre("slurm.tasks_per_node: lists 3 nodes; the job has 2 "
                          "(tasks[0].replicas)"));
  EXPECT_THAT(Errors(with("script: \"#!/bin/bash\\n", "script: \"echo hi\\n")),
              ElementsAre(HasSubstr("slurm.script: must start with a \"#!\" line")));
  EXPECT_THAT(Errors(with("  qos: high\n", "  qos: high\n  nodelist: a\n")),
              ElementsAre(HasSubstr("slurm.nodelist: unknown field")));
  EXPECT_THAT(Errors(with("open_mode: append", "open_mode: sometimes")),
              ElementsAre("slurm.open_mode: must be append or truncate, got \"sometimes\""));
  EXPECT_THAT(Errors(with("number: 10", "number: 99")),
              ElementsAre("slurm.signal.number: must be from 1 to 64, got 99"));
  EXPECT_THAT(Errors(with("before_end: 90s", "before_end: 1.5s")),
              ElementsAre(HasSubstr("slurm.signal.before_end: must be whole seconds")));
  EXPECT_THAT(Errors(with("submit_dir: /home/ada/proj", "submit_dir: proj")),
              ElementsAre(HasSubstr("slurm.submit_dir: must be an absolute path")));
  EXPECT_THAT(Errors(with("    workdir: /home/ada/proj\n",
                          "    workdir: /home/ada/proj\n    env: {SLURM_JOB_ID: \"1\"}\n")),
              ElementsAre(HasSubstr("tasks[0].env.SLURM_JOB_ID: is set by Cohort in a job of "
                                    "framework slurm")));
  std::string no_section(kSlurmYaml.substr(0, kSlurmYaml.find("slurm:\n")));
  EXPECT_THAT(Errors(no_section), ElementsAre(HasSubstr("slurm: required field is missing")));
  EXPECT_THAT(Errors(WithJob("slurm: {script: \"#!/bin/sh\\n\"}\n")),
              ElementsAre("slurm: is for jobs of framework slurm (cohort sbatch), not none"));
  // Other jobs may name their variables SLURM_*.
  EXPECT_THAT(Errors(WithTask("env: {SLURM_JOB_ID: \"1\"}")), ElementsAre("<no error>"));
  std::string big = "#!/bin/sh\n" + std::string(kMaxSlurmJobScriptBytes, '#');
  Json doc = ToJson(Parse(kSlurmYaml));
  doc["slurm"]["script"] = big;
  EXPECT_THAT(JsonErrors(doc.dump()),
              ElementsAre(fmt::format("slurm.script: is {} bytes; at most {} are allowed",
                                      big.size(), kMaxSlurmJobScriptBytes)));
}

}  // namespace
}  // namespace cohort

namespace cohort {
namespace {

TEST(JobSpecParser, ATaskGroupMayRunInAnImage) {
  JobSpec spec = Parse(R"(
name: in-image
tasks:
  - role: worker
    image: registry.example.com:5000/team/pytorch:2.1
    command: [python3, train.py]
)");
  EXPECT_EQ(spec.tasks[0].image, "registry.example.com:5000/team/pytorch:2.1");
  ExpectRoundTrip(spec);
  EXPECT_FALSE(ToJson(Parse(kMinimalYaml))["tasks"][0].contains("image"))
      << "other jobs' form unchanged";
}

TEST(JobSpecParser, AnImageIsAReferenceAndNotForMpiOrSlurmTasks) {
  EXPECT_THAT(Errors("name: x\ntasks:\n  - role: w\n    image: Team/X\n    command: [echo]\n"),
              ElementsAre(HasSubstr("tasks[0].image: \"Team/X\" is not an image reference")));
  EXPECT_THAT(Errors("name: x\ntasks:\n  - role: w\n    image: [a]\n    command: [echo]\n"),
              ElementsAre(HasSubstr("tasks[0].image: must be an image reference")));
  EXPECT_THAT(Errors("name: x\nframework: mpi\ntasks:\n  - role: launcher\n    image: a/b\n"
                     "    command: [mpirun, x]\n  - role: worker\n    replicas: 2\n"),
              ElementsAre(HasSubstr("tasks[0].image: the tasks of a mpi job run on the node")));
}

TEST(JobSpecParser, ASessionIsOneTaskWithoutACommandAndRoundTrips) {
  JobSpec spec = Parse(R"(
name: shell
tasks: [{role: shell, resources: {gpus: 1}, image: registry.example.com/cuda:12}]
session: {kind: shell, idle_timeout: 20m}
)");
  ASSERT_TRUE(spec.session.has_value());
  EXPECT_EQ(spec.session->kind, SessionKind::kShell);
  EXPECT_EQ(spec.session->idle_timeout, std::chrono::minutes(20));
  EXPECT_TRUE(spec.tasks[0].command.empty());
  ExpectRoundTrip(spec);
  JobSpec no_timeout = Parse("name: s\ntasks: [{role: shell}]\nsession: {kind: shell}\n");
  EXPECT_FALSE(no_timeout.session->idle_timeout.has_value());
  ExpectRoundTrip(no_timeout);
  EXPECT_FALSE(ToJson(Parse(kMinimalYaml)).contains("session")) << "other jobs' form unchanged";
}

TEST(JobSpecParser, BadSessionsAreRefusedNamingTheField) {
  auto errors = [](const std::string& session, const std::string& rest = "") {
    return Errors("name: s\ntasks: [{role: shell" + rest + "}]\nsession: " + session + "\n");
  };
  EXPECT_THAT(errors("{kind: notebok}"),
              ElementsAre(HasSubstr("session.kind: must be shell or notebook, got \"notebok\"")));
  EXPECT_THAT(errors("{idle_timeout: 5m}"),
              ElementsAre(HasSubstr("session.kind: required field is missing")));
  EXPECT_THAT(errors("{kind: shell, idle_timeout: soon}"),
              ElementsAre(HasSubstr("session.idle_timeout: must be a duration")));
  EXPECT_THAT(errors("{kind: shell, idle_timeout: 30d}"),
              ElementsAre(HasSubstr("session.idle_timeout: must be from 1s to 7d")));
  EXPECT_THAT(errors("{kind: shell, idle_timeout: 500ms}"),
              ElementsAre(HasSubstr("session.idle_timeout: must be from 1s to 7d")));
  EXPECT_THAT(errors("{kind: shell, idle_timout: 5m}"),
              ElementsAre(HasSubstr("session.idle_timout: unknown field; did you mean "
                                    "\"idle_timeout\"")));
  EXPECT_THAT(errors("shell"), ElementsAre(HasSubstr("session: must be a mapping")));
  EXPECT_THAT(errors("{kind: shell}", ", command: [bash]"),
              ElementsAre(HasSubstr("tasks[0].command: a session's task runs the shell")));
  EXPECT_THAT(errors("{kind: shell}", ", replicas: 2"),
              ElementsAre(HasSubstr("tasks[0].replicas: a session has one task")));
  EXPECT_THAT(Errors("name: s\nframework: pytorch\ntasks: [{role: shell}]\nsession: {kind: "
                     "shell}\n"),
              ElementsAre(HasSubstr("session: a session is a task of its own")));
  EXPECT_THAT(Errors("name: s\ntasks: [{role: a}, {role: b}]\nsession: {kind: shell}\n"),
              ElementsAre(HasSubstr("tasks: a session has one task group, got 2")));
}

}  // namespace
}  // namespace cohort
