// The maxima of a job spec (model/limits.h, docs/job-spec.md "Limits"), YAML tags, and where a
// workdir may point: each bad input found by testing, with its exact message.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/job_spec_parser.h"
#include "model/limits.h"

namespace cohort {
namespace {

using ::testing::ElementsAre;

// A valid spec as JSON, to change one field at a time.
Json Minimal() {
  return Json{{"name", "train"},
              {"tasks", Json::array({Json{{"role", "worker"}, {"command", {"python3", "x.py"}}}})}};
}

std::vector<std::string> Errors(const Json& doc) {
  auto spec = ParseJobSpec(doc.dump());
  if (spec.ok()) return {"<no error>"};
  return spec.status().details();
}

std::vector<std::string> YamlErrors(const std::string& text) {
  auto spec = ParseJobSpec(text);
  if (spec.ok()) return {"<no error>"};
  return spec.status().details();
}

Json WithTask(const char* key, Json value) {
  Json doc = Minimal();
  doc["tasks"][0][key] = std::move(value);
  return doc;
}

TEST(JobSpecLimits, ReplicasAndTasksInAll) {
  EXPECT_THAT(Errors(WithTask("replicas", 4096)),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got 4096"));
  EXPECT_THAT(Errors(WithTask("replicas", Json{{"min", 1}, {"max", 1025}})),
              ElementsAre("tasks[0].replicas.max: must be an integer from 1 to 1024, got 1025"));
  Json two = Minimal();
  two["tasks"][0]["replicas"] = 1000;
  two["tasks"].push_back(Json{{"role", "ps"}, {"replicas", 25}, {"command", {"x"}}});
  EXPECT_THAT(Errors(two), ElementsAre("tasks: the job has 1025 tasks in all; at most 1024 are "
                                       "allowed"));
  two["tasks"][1]["replicas"] = 24;
  EXPECT_TRUE(ParseJobSpec(two.dump()).ok());
}

TEST(JobSpecLimits, ResourcesPerTask) {
  // The job the tester submitted: 4096 replicas of 1024 GPUs.
  Json huge = WithTask("replicas", 4096);
  huge["tasks"][0]["resources"] = Json{{"gpus", 1024}};
  EXPECT_THAT(Errors(huge),
              ElementsAre("tasks[0].replicas: must be an integer from 1 to 1024, got 4096",
                          "tasks[0].resources.gpus: must be an integer from 0 to 64, got 1024"));
  EXPECT_THAT(Errors(WithTask("resources", Json{{"cpus", 1e300}})),
              ElementsAre("tasks[0].resources.cpus: must be at most 16384, got 1e+300"));
  EXPECT_THAT(Errors(WithTask("resources", Json{{"cpus", "16385"}})),
              ElementsAre("tasks[0].resources.cpus: must be at most 16384, got \"16385\""));
  EXPECT_THAT(Errors(WithTask("resources", Json{{"memory", "65Ti"}})),
              ElementsAre("tasks[0].resources.memory: must be at most 64Ti, got \"65Ti\""));
  EXPECT_THAT(Errors(WithTask("resources", Json{{"memory", uint64_t{1} << 63}})),
              ElementsAre("tasks[0].resources.memory: must be at most 64Ti, got "
                          "9223372036854775808"));
  EXPECT_THAT(YamlErrors("name: x\ntasks: [{role: w, command: [x], resources: {cpus: 1e300}}]"),
              ElementsAre("tasks[0].resources.cpus: must be at most 16384, got 1e+300"));
  auto most = ParseJobSpec(
      WithTask("resources", Json{{"gpus", 64}, {"cpus", 16384}, {"memory", "64Ti"}}).dump());
  ASSERT_TRUE(most.ok()) << most.status().ToString();
  EXPECT_EQ(most->tasks[0].resources.memory_bytes, kMaxTaskMemoryBytes);
}

TEST(JobSpecLimits, Command) {
  EXPECT_THAT(Errors(WithTask("command", std::vector<std::string>(1025, "a"))),
              ElementsAre("tasks[0].command: has 1025 arguments; at most 1024 are allowed"));
  EXPECT_TRUE(ParseJobSpec(WithTask("command", std::vector<std::string>(1024, "a")).dump()).ok());
  std::vector<std::string> big(5, std::string(30 * 1024, 'a'));
  EXPECT_THAT(Errors(WithTask("command", big)),
              ElementsAre("tasks[0].command: its arguments add up to 153600 bytes; at most 131072 "
                          "(128Ki) are allowed"));
}

TEST(JobSpecLimits, Env) {
  Json many = Json::object();
  for (int i = 0; i < 257; ++i) many[fmt::format("V{}", i)] = "x";
  EXPECT_THAT(Errors(WithTask("env", many)),
              ElementsAre("tasks[0].env: has 257 variables; at most 256 are allowed"));
  EXPECT_THAT(Errors(WithTask("env", Json{{"BIG", std::string(32 * 1024 + 1, 'v')}})),
              ElementsAre("tasks[0].env.BIG: is 32769 bytes; a value is at most 32768 (32Ki)"));
  EXPECT_THAT(Errors(WithTask("env", Json{{std::string(300, 'N'), "v"}})),
              ElementsAre("tasks[0].env.NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN...: a variable name is at "
                          "most 256 characters, got 300"));
  EXPECT_THAT(Errors(WithTask("env", Json{{"BAD-NAME", "v"}, {"1X", "v"}, {"A=B", "v"}})),
              ElementsAre("tasks[0].env.1X: not a valid variable name: use letters, digits and "
                          "'_', not starting with a digit",
                          "tasks[0].env.A=B: not a valid variable name: use letters, digits and "
                          "'_', not starting with a digit",
                          "tasks[0].env.BAD-NAME: not a valid variable name: use letters, digits "
                          "and '_', not starting with a digit"));
  // Only a JSON document can hold this much (as text it is over kMaxSpecBytes).
  Json full = Json::object();
  for (int i = 0; i < 9; ++i) full[fmt::format("V{}", i)] = std::string(32 * 1024 - 2, 'v');
  auto spec = ParseJobSpecJson(WithTask("env", full));
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().details(),
              ElementsAre("tasks[0].env: names and values add up to 294912 bytes; at most 262144 "
                          "(256Ki) are allowed"));
}

// Each task carries its group's text: the job costs it times its tasks (model/job_size.h).
TEST(JobSpecLimits, ATasksTextTimesItsReplicasIsBounded) {
  // Issue 26's spec: 246 KB that became a 240 MiB desired state.
  Json env = Json::object();
  for (int i = 0; i < 8; ++i) env[fmt::format("V{}", i)] = std::string(30 * 1024, 'v');
  Json doc = WithTask("env", env);
  doc["tasks"][0]["replicas"] = 1024;
  EXPECT_LT(doc.dump().size(), static_cast<size_t>(kMaxSpecBytes));
  EXPECT_THAT(Errors(doc),
              ElementsAre("tasks[0]: 1024 replicas × 240Ki of command, env and workdir each is "
                          "240Mi, over the 16Mi limit of a job's tasks' text (docs/job-spec.md, "
                          "\"Limits\")"));
  // At the bound exactly: 1,024 tasks of 16 KiB ("x", "V" and its value).
  Json at = WithTask("command", {"x"});
  at["tasks"][0]["env"] = Json{{"V", std::string(16 * 1024 - 2, 'v')}};
  at["tasks"][0]["replicas"] = 1024;
  EXPECT_TRUE(ParseJobSpec(at.dump()).ok());
  at["tasks"][0]["workdir"] = "/";
  EXPECT_THAT(Errors(at), ElementsAre(::testing::StartsWith("tasks[0]: 1024 replicas × 16Ki")));
  // An elastic group counts at its maximum; groups within the bound alone may be over it together.
  Json two = WithTask("env", Json{{"V", std::string(17 * 1024, 'v')}});
  two["tasks"][0]["replicas"] = Json{{"min", 1}, {"max", 600}};
  two["tasks"].push_back(two["tasks"][0]);
  two["tasks"][1]["role"] = "ps";
  two["tasks"][1]["replicas"] = 424;
  EXPECT_THAT(Errors(two),
              ElementsAre("tasks: the command, env and workdir of each of the 1024 tasks add up to "
                          "17Mi, over the 16Mi limit of a job's tasks' text (docs/job-spec.md, "
                          "\"Limits\")"));
  two["tasks"][1]["replicas"] = 300;
  EXPECT_TRUE(ParseJobSpec(two.dump()).ok());
}

TEST(JobSpecLimits, ConstraintsLabelsAndModel) {
  Json doc = Minimal();
  Json labels = Json::object();
  for (int i = 0; i < 65; ++i) labels[fmt::format("k{}", i)] = "v";
  doc["constraints"] = Json{{"labels", labels}};
  EXPECT_THAT(Errors(doc), ElementsAre("constraints.labels: has 65 labels; at most 64 are "
                                       "allowed"));
  doc["constraints"] =
      Json{{"gpu_model", std::string(257, 'm')},
           {"labels", Json{{"rack", std::string(257, 'r')}, {std::string(129, 'k'), "v"}}}};
  EXPECT_THAT(Errors(doc),
              ElementsAre("constraints.gpu_model: must be at most 256 characters, got 257",
                          "constraints.labels." + std::string(129, 'k') +
                              ": not a valid label name: use 1 to 128 letters, digits, '.', '_', "
                              "'/' and '-'",
                          "constraints.labels.rack: must be at most 256 characters, got 257"));
}

TEST(JobSpecLimits, NamesRolesAndTeamsWereBoundedAlready) {
  Json doc = Minimal();
  doc["name"] = std::string(129, 'n');
  doc["team"] = std::string(65, 't');
  doc["tasks"][0]["role"] = std::string(33, 'r');
  EXPECT_THAT(Errors(doc), ElementsAre("name: must be at most 128 characters, got 129",
                                       "team: must be at most 64 characters, got 65",
                                       ::testing::StartsWith("tasks[0].role: \"rrrr")));
}

TEST(JobSpecLimits, TheWholeTextIsBounded) {
  std::string text = Minimal().dump();
  text += std::string(static_cast<size_t>(kMaxSpecBytes) - text.size(), ' ');
  EXPECT_TRUE(ParseJobSpec(text).ok());
  text += " ";
  auto spec = ParseJobSpec(text, "big.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "big.yaml: 262145 bytes is too large; a job spec is at most 262144 bytes (256Ki)");
}

// YAML is read two orders of magnitude slower than JSON (docs/performance.md), so a spec in
// YAML is bounded much lower; a larger JSON spec is read by the JSON reader alone.
TEST(JobSpecLimits, YamlIsBoundedLowerThanJson) {
  std::string yaml = "name: x\ntasks: [{role: w, command: [x]}]\n#";
  yaml += std::string(static_cast<size_t>(kMaxYamlSpecBytes) - yaml.size(), 'c');
  EXPECT_TRUE(ParseJobSpec(yaml).ok());
  yaml += "c";
  auto spec = ParseJobSpec(yaml, "big.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "big.yaml: 16385 bytes is too large for YAML; a job spec in YAML is at most 16384 "
            "bytes (16Ki), in JSON 262144 bytes (256Ki)");

  std::string padding(static_cast<size_t>(kMaxYamlSpecBytes), ' ');
  std::string repeated = R"({"name": "x", "name": "y", "tasks": []})" + padding;
  spec = ParseJobSpec(repeated, "big.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "big.json: the key \"name\" is given twice in one object");
  spec = ParseJobSpec(R"({"name": "x",)" + padding, "big.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), ::testing::StartsWith("big.json:1:16398: syntax error"));
  // Small enough for the YAML reader, which says where the repeated key is.
  spec = ParseJobSpec(R"({"name": "x", "name": "y", "tasks": []})");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().details(), ElementsAre("name: duplicate key (lines 1 and 1)",
                                                   "tasks: must list at least one task group"));
}

TEST(JobSpecLimits, UnknownFieldsStayErrorsAtEveryLevel) {
  Json doc = Minimal();
  doc["tasks"][0]["resources"] = Json{{"gpus", 1}, {"tpus", 2}};
  doc["restart"] = Json{{"max_attempts", 2}, {"delay", "1s"}};
  doc["constraints"] = Json{{"zone", "a"}};
  doc["owner"] = "ada";
  EXPECT_THAT(
      Errors(doc),
      ElementsAre("owner: unknown field; expected one of: name, team, priority, framework, "
                  "tasks, restart, max_runtime, grace_period, constraints, datasets, context, "
                  "array, depends_on, slurm, session",
                  "tasks[0].resources.tpus: unknown field; did you mean \"gpus\"?",
                  "restart.delay: unknown field; expected one of: max_attempts, on, backoff, "
                  "max_backoff, fence",
                  "constraints.zone: unknown field; expected one of: gpu_model, labels"));
}

TEST(JobSpecLimits, DatasetsAreReferencesNamedOnceAndAtMostSixteen) {
  Json doc = Minimal();
  doc["datasets"] = Json::array({"imagenet", "vision/labels:2", "imagenet:3", "Bad", "x:0", 7});
  EXPECT_THAT(
      Errors(doc),
      ElementsAre("datasets[2]: names imagenet again (datasets[0]); each dataset is seen at "
                  "$COHORT_DATA_DIR/NAME, so a job names a dataset once",
                  ::testing::StartsWith("datasets[3] (name): "),
                  "datasets[4]: version \"0\" is not a version number: versions are 1, 2, 3, ...",
                  "datasets[5]: must be a dataset such as imagenet or imagenet:2, got 7"));
  Json many = Json::array();
  for (int i = 0; i < 17; ++i) many.push_back(fmt::format("d{}", i));
  doc["datasets"] = many;
  EXPECT_THAT(Errors(doc), ElementsAre("datasets: names 17 datasets; a job may name at most 16"));
  doc["datasets"] = "imagenet";
  EXPECT_THAT(Errors(doc), ElementsAre("datasets: must be a list of datasets such as [imagenet, "
                                       "imagenet-labels:2], got \"imagenet\""));

  doc["datasets"] = Json::array({"imagenet", "vision/labels:2"});
  doc["context"] = std::string(64, 'a');
  auto spec = ParseJobSpec(doc.dump());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->datasets.size(), 2u);
  EXPECT_EQ(spec->datasets[1].team, "vision");
  EXPECT_EQ(spec->datasets[1].version, 2);
  EXPECT_EQ(ToJson(*spec)["datasets"], Json::array({"imagenet", "vision/labels:2"}));
  EXPECT_EQ(ToJson(*spec)["context"], std::string(64, 'a'));
  auto again = ParseJobSpecJson(ToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ToJson(*again), ToJson(*spec)) << "the canonical form reads back the same";
  doc["context"] = "ABC";
  EXPECT_THAT(Errors(doc),
              ElementsAre("context: must be the SHA-256 of an uploaded context (64 lowercase hex "
                          "digits; cohort run and cohort submit set it), got \"ABC\""));
}

TEST(JobSpecTags, NonStandardTagsAreRefusedNamingTheField) {
  EXPECT_THAT(
      YamlErrors("name: x\ntasks:\n  - role: w\n    command: [!!python/object:os.system x]\n"),
      ElementsAre("tasks[0].command[0]: the YAML tag \"!!python/object:os.system\" is not "
                  "allowed; a job spec holds plain values only (tags allowed: !!str, !!int, "
                  "!!float, !!bool, !!null, !!map, !!seq)"));
  EXPECT_THAT(YamlErrors("name: !include other.yaml\ntasks: [{role: w, command: [x]}]\n"),
              ElementsAre(::testing::StartsWith(
                  "name: the YAML tag \"!include\" is not allowed; a job spec holds plain")));
  EXPECT_THAT(YamlErrors("name: x\ntasks: !!set {a, b}\n"),
              ElementsAre(::testing::StartsWith("tasks: the YAML tag \"!!set\" is not allowed"),
                          "tasks: must be a list of task groups, got a mapping"));
  EXPECT_THAT(YamlErrors("name: x\ntasks: [{role: w, command: [x], env: {!!binary QQ==: v}}]\n"),
              ElementsAre(::testing::StartsWith(
                              "tasks[0].env.QQ==: the YAML tag \"!!binary\" is not allowed"),
                          "tasks[0].env.QQ==: not a valid variable name: use letters, digits and "
                          "'_', not starting with a digit"));
  EXPECT_THAT(
      YamlErrors("!<tag:evil.example.com,2024:x> {name: x, tasks: []}\n"),
      ElementsAre(::testing::StartsWith(
                      "job spec: the YAML tag \"tag:evil.example.com,2024:x\" is not allowed"),
                  "tasks: must list at least one task group"));
  // The standard tags of plain values stay allowed.
  auto spec = ParseJobSpec(
      "name: !!str x\ntasks: !!seq [!!map {role: w, replicas: !!int 2, command: [!!str 1]}]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].replicas, 2);
  EXPECT_EQ(spec->tasks[0].command[0], "1");
}

TEST(JobSpecWorkdir, RelativeStaysBelowTheTaskDirectoryWithoutDotDot) {
  const std::string dot_dot =
      " must not contain a '..' component: a relative workdir stays within its directory; write "
      "an absolute path to run elsewhere";
  EXPECT_THAT(Errors(WithTask("workdir", "../../../..")),
              ElementsAre("tasks[0].workdir: \"../../../..\"" + dot_dot));
  EXPECT_THAT(Errors(WithTask("workdir", "/srv/../etc")),
              ElementsAre("tasks[0].workdir: \"/srv/../etc\"" + dot_dot));
  EXPECT_THAT(Errors(WithTask("workdir", "")),
              ElementsAre("tasks[0].workdir: must not be empty; leave the field out to run in "
                          "the task's own directory"));
  EXPECT_THAT(Errors(WithTask("workdir", "/" + std::string(4096, 'd'))),
              ElementsAre("tasks[0].workdir: \"/" + std::string(56, 'd') +
                          "...\" must be at most 4096 characters, got 4097"));
  // Through the API a relative workdir stays relative: the agent puts it below the task's
  // directory.
  auto api = ParseJobSpec(WithTask("workdir", "data/./run/").dump());
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(api->tasks[0].workdir, "data/run");
  EXPECT_EQ(ParseJobSpec(WithTask("workdir", ".").dump())->tasks[0].workdir, "");
  // From a file (the CLI), below the file's directory, and still without "..".
  auto file = ParseJobSpecFile(WithTask("workdir", "ddp/.").dump(), "job.yaml", "/home/ds/x");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->tasks[0].workdir, "/home/ds/x/ddp");
  auto up = ParseJobSpecFile(WithTask("workdir", "../../../..").dump(), "job.yaml", "/home/ds/x");
  ASSERT_FALSE(up.ok());
  EXPECT_THAT(up.status().details(), ElementsAre("tasks[0].workdir: \"../../../..\"" + dot_dot));
}

}  // namespace
}  // namespace cohort
