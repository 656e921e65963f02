#include "sweep/sweep_spec.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "sweep/sweep_limits.h"
#include "sweep/sweep_test_fixture.h"

namespace cohort::sweep {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SweepSpecTest, ReadsEveryField) {
  SweepSpec spec = ParseOrDie(kDigitsYaml);
  EXPECT_EQ(spec.name, "digits");
  EXPECT_EQ(spec.team, "research");
  ASSERT_EQ(spec.hyperparameters.size(), 6u);
  std::vector<std::string> names;
  for (const auto& hp : spec.hyperparameters) names.push_back(hp.name);
  EXPECT_THAT(names,
              ElementsAre("batch_size", "dropout", "epochs", "lr", "model.hidden", "optimizer"));
  const HyperParameter& lr = spec.hyperparameters[3];
  EXPECT_EQ(lr.type, HParamType::kLog);
  EXPECT_EQ(lr.minval, -4);
  EXPECT_EQ(lr.maxval, -1);
  EXPECT_EQ(lr.base, 10);
  EXPECT_EQ(lr.count, 4);
  EXPECT_EQ(spec.hyperparameters[2].type, HParamType::kConst);
  EXPECT_EQ(spec.hyperparameters[2].val, 27);
  EXPECT_EQ(spec.hyperparameters[5].vals, (std::vector<Json>{"sgd", "adam"}));
  EXPECT_FALSE(spec.hyperparameters[1].count.has_value());
  const SearcherSpec& s = spec.searcher;
  EXPECT_EQ(s.name, SearcherName::kAsha);
  EXPECT_EQ(s.metric, "val_acc");
  EXPECT_EQ(s.mode, MetricMode::kMax);
  EXPECT_EQ(s.max_trials, 16);
  EXPECT_EQ(s.max_concurrent_trials, 4);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.time_metric, "epoch");
  EXPECT_EQ(s.max_time, 27);
  EXPECT_EQ(s.divisor, 3);
  EXPECT_EQ(s.max_rungs, 4);
  EXPECT_EQ(spec.trial.at("tasks")[0].at("workdir"), "runs/${hp.optimizer}");
}

TEST(SweepSpecTest, Defaults) {
  SweepSpec spec = ParseOrDie(R"(
name: s
trial: {tasks: [{role: w, command: [run, "${hp.x}"]}]}
hyperparameters: {x: {type: double, minval: 0, maxval: 1}}
searcher: {name: asha, metric: loss, max_trials: 8, max_time: 100}
)");
  EXPECT_EQ(spec.team, "default");
  EXPECT_EQ(spec.searcher.mode, MetricMode::kMin);
  EXPECT_EQ(spec.searcher.max_concurrent_trials, 4);
  EXPECT_EQ(spec.searcher.seed, 0u);
  EXPECT_EQ(spec.searcher.time_metric, "");
  EXPECT_EQ(spec.searcher.divisor, 4);
  EXPECT_EQ(spec.searcher.max_rungs, 5);
  bool names_team = true;
  ASSERT_TRUE(ParseSweepSpec(R"({"name": "s", "trial": {"tasks": [{"role": "w", "command": ["x"]}]},
    "hyperparameters": {"a": 1}, "searcher": {"name": "grid", "metric": "m"}})",
                             "s.json", &names_team)
                  .ok());
  EXPECT_FALSE(names_team);
}

TEST(SweepSpecTest, CanonicalFormReadsBackTheSame) {
  std::vector<std::string> specs = {
      std::string(kDigitsYaml),
      Replace(Replace(kDigitsYaml, "name: asha", "name: random"),
              "  time_metric: epoch\n  max_time: 27\n  divisor: 3\n  max_rungs: 4\n", ""),
      R"(
name: g
trial: {tasks: [{role: w, command: [run, "${hp.a}", "${hp.b.c}"]}], max_runtime: 1h}
hyperparameters:
  a: {type: int, minval: -3, maxval: 3, count: 4}
  b: {c: {type: categorical, vals: [1, 2.5, x, true]}, d: {type: const, val: "y"}}
  e: {type: log, minval: 0, maxval: 1, base: 2, count: 2}
  f: {type: double, minval: 0.1, maxval: 0.2, count: 1}
searcher: {name: grid, metric: loss}
)"};
  for (const std::string& yaml : specs) {
    SweepSpec spec = ParseOrDie(yaml);
    Json doc = ToJson(spec);
    auto back = ParseSweepSpecJson(doc);
    ASSERT_TRUE(back.ok()) << back.status().message()
                           << ::testing::PrintToString(back.status().details());
    EXPECT_EQ(*back, spec) << doc.dump(2);
    EXPECT_EQ(ToJson(*back), doc);
    // And through text, as the state store keeps it.
    auto text = ParseSweepSpec(doc.dump());
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, spec);
  }
}

TEST(SweepSpecTest, EveryErrorAtOnceWithItsFieldPath) {
  std::string yaml = Replace(kDigitsYaml, "minval: -4, maxval: -1", "minval: low, maxval: -1");
  yaml = Replace(yaml, "divisor: 3", "divisor: 1");
  yaml = Replace(yaml, "max_trials: 16", "max_trial: 16");
  yaml = Replace(yaml, "resources: {gpus: 1", "resources: {gpus: -1");
  EXPECT_THAT(
      ErrorsOf(yaml),
      ElementsAre("hyperparameters.lr.minval: must be a number from -1e+300 to 1e+300, got \"low\"",
                  "searcher.max_trial: unknown field; did you mean \"max_trials\"?",
                  "searcher.max_trials: required field is missing: how many trials the asha "
                  "searcher makes",
                  "searcher.divisor: must be at least 2, got 1",
                  "trial.tasks[0].resources.gpus: must be an integer from 0 to 64, got -1"));
  auto spec = ParseSweepSpec(yaml, "digits.yaml");
  EXPECT_EQ(spec.status().message(), "digits.yaml: sweep spec has 5 errors");
}

TEST(SweepSpecTest, TopLevelFields) {
  EXPECT_THAT(
      ErrorsOf("trial: {}\n"),
      ElementsAre("name: required field is missing", "hyperparameters: required field is missing",
                  "searcher: required field is missing", "trial.tasks: required field is missing"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "team: research", "teem: research")),
              ElementsAre("teem: unknown field; did you mean \"team\"?"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "name: digits", "name: " + std::string(124, 'a'))),
              ElementsAre("name: must be at most 123 characters, got 124"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "team: research", "team: -x")),
              ElementsAre(HasSubstr("team: \"-x\" is not a valid team")));
  EXPECT_THAT(ErrorsOf("[1]"), ElementsAre(HasSubstr("sweep spec must be a mapping")));
  EXPECT_THAT(ErrorsOf(""), ElementsAre(HasSubstr("sweep spec is empty")));
}

TEST(SweepSpecTest, ReadsTheTextAsJobSpecsAre) {
  auto two = ParseSweepSpec("name: a\n---\nname: b\n", "s.yaml");
  EXPECT_EQ(two.status().message(),
            "s.yaml: holds more than one YAML document; a sweep spec is a single document");
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "  epochs: 27\n", "  epochs: 27\n  epochs: 28\n")),
              ElementsAre("hyperparameters.epochs: duplicate key (lines 17 and 18)"));
  std::string huge = "{\"name\": \"" + std::string(300 * 1024, 'a') + "\"}";
  EXPECT_THAT(ParseSweepSpec(huge).status().message(),
              HasSubstr("is too large; a sweep spec is at most 262144 bytes"));
  EXPECT_EQ(ParseSweepSpec("{\"name\": 1,", "s.json").status().message(),
            "s.json:1:12: syntax error while parsing object key - unexpected end of input; "
            "expected string literal");
}

TEST(SweepSpecTest, HyperParameterErrors) {
  auto errors = ErrorsOf(R"(
name: s
trial: {tasks: [{role: w, command: [run]}]}
hyperparameters:
  2x: 1
  a: {type: int, minval: 1.5, maxval: 0, count: 0}
  b: {type: int, minval: 5, maxval: 1}
  c: {type: categorical, vals: []}
  d: {type: categorical, vals: [x, x, [1]]}
  e: {type: log, minval: 0, maxval: 400, base: 10}
  f: {type: log, minval: 0, maxval: 1, base: 1}
  g: {type: uniform}
  h: {type: double, minval: 0, maxval: 1, vals: [1]}
  i: [1, 2]
  j: null
  k: {}
  l: {type: const}
  m: {n: {o: {p: {q: 1}}}}
  r_s: 1
  r: {s: 2}
searcher: {name: random, metric: loss, max_trials: 2}
)");
  EXPECT_THAT(
      errors,
      ElementsAre(
          "hyperparameters.2x: is not a valid hyperparameter name: use letters, digits and '_', "
          "not starting with a digit",
          "hyperparameters.a.minval: must be an integer from -9007199254740991 to "
          "9007199254740991, got 1.5",
          "hyperparameters.a.count: must be an integer from 1 to 10000 (the grid's points on this "
          "axis), got 0",
          "hyperparameters.b.maxval: must be at least minval (5), got 1",
          "hyperparameters.c.vals: must be a list of the choices, e.g. [sgd, adam], got an empty "
          "list",
          "hyperparameters.d.vals[1]: \"x\" is already vals[0]",
          "hyperparameters.d.vals[2]: must be a string, a number or true/false, got a list",
          "hyperparameters.e: 10^400 is outside what a value may be (above 0, at most 1e+300)",
          "hyperparameters.f.base: must be a positive number other than 1, got 1",
          "hyperparameters.g.type: \"uniform\" is not a type; use int, double, log, categorical or "
          "const",
          "hyperparameters.h.vals: unknown field of a double hyperparameter; expected one of: "
          "type, minval, maxval, count",
          "hyperparameters.i: a list is not a hyperparameter; for a choice write {type: "
          "categorical, vals: [...]}",
          "hyperparameters.j: has no value; give a constant, a range {type: ...} or nested names",
          "hyperparameters.k: is an empty mapping; give a value, a range {type: ...} or nested "
          "names",
          "hyperparameters.l.val: required field is missing",
          "hyperparameters.m.n.o.p: nests names more than 4 deep",
          "hyperparameters.r_s: gives the variable COHORT_HP_R_S as \"r.s\" does; rename one"));
}

TEST(SweepSpecTest, SizeLimits) {
  std::string many = "name: s\ntrial: {tasks: [{role: w, command: [run]}]}\nhyperparameters:\n";
  for (size_t i = 0; i <= kMaxHyperParameters; ++i) many += fmt::format("  h{}: {}\n", i, i);
  many += "searcher: {name: random, metric: loss, max_trials: 1}\n";
  EXPECT_THAT(ErrorsOf(many),
              ElementsAre("hyperparameters: has 65 hyperparameters; at most 64 are allowed"));

  std::string vals = "[";
  for (size_t i = 0; i <= kMaxCategoricalVals; ++i) vals += fmt::format("{}{}", i ? "," : "", i);
  vals += "]";
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "[sgd, adam]", vals)),
              ElementsAre("hyperparameters.optimizer.vals: has 257 choices; at most 256 are "
                          "allowed"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "max_trials: 16", "max_trials: 1001")),
              ElementsAre("searcher.max_trials: must be an integer from 1 to 1000, got 1001"));
  EXPECT_THAT(
      ErrorsOf(Replace(kDigitsYaml, "max_concurrent_trials: 4", "max_concurrent_trials: 101")),
      ElementsAre("searcher.max_concurrent_trials: must be an integer from 1 to 100, got 101"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "max_rungs: 4", "max_rungs: 11")),
              ElementsAre("searcher.max_rungs: must be an integer from 1 to 10, got 11"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "divisor: 3", "divisor: 101")),
              ElementsAre("searcher.divisor: must be an integer from 2 to 100, got 101"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "seed: 7", "seed: 9007199254740992")),
              ElementsAre("searcher.seed: must be an integer from 0 to 9007199254740991, got "
                          "9007199254740992"));
  EXPECT_THAT(ErrorsOf(R"({"name": "s", "trial": {"tasks": [{"role": "w", "command": ["x"]}]},
      "hyperparameters": {"a": {"type": "int", "minval": -9223372036854775808, "maxval": 0}},
      "searcher": {"name": "random", "metric": "m", "max_trials": 1}})"),
              ElementsAre("hyperparameters.a.minval: must be an integer from -9007199254740991 "
                          "to 9007199254740991, got -9223372036854775808"));
  std::string long_val(kMaxHParamTextBytes + 1, 'v');
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "epochs: 27", "epochs: " + long_val)),
              ElementsAre("hyperparameters.epochs: is 1025 bytes; a value is at most 1024"));
}

TEST(SweepSpecTest, SearcherFields) {
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "name: asha", "name: hyperband")),
              ElementsAre("searcher.name: \"hyperband\" is not a searcher; use grid, random or "
                          "asha"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "metric: val_acc", "metric: val acc")),
              ElementsAre(HasSubstr("searcher.metric: \"val acc\" is not a metric's name")));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "mode: max", "mode: maximum")),
              ElementsAre(HasSubstr("searcher.mode: \"maximum\" is not a mode; use min or max")));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "  max_time: 27\n", "")),
              ElementsAre(HasSubstr("searcher.max_time: required field is missing")));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "max_time: 27", "max_time: 0")),
              ElementsAre(HasSubstr("searcher.max_time: must be a number above 0")));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "name: asha", "name: random")),
              ElementsAre("searcher.time_metric: only the asha searcher uses it, not random",
                          "searcher.max_time: only the asha searcher uses it, not random",
                          "searcher.divisor: only the asha searcher uses it, not random",
                          "searcher.max_rungs: only the asha searcher uses it, not random"));
}

constexpr std::string_view kGridYaml = R"(
name: g
trial: {tasks: [{role: w, command: [run, "${hp.lr}"]}]}
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1, count: 4}
  opt: {type: categorical, vals: [sgd, adam, lamb]}
  depth: {type: int, minval: 1, maxval: 3, count: 3}
  epochs: 10
searcher: {name: grid, metric: loss}
)";

TEST(SweepSpecTest, GridSizeAndMaxTrials) {
  SweepSpec spec = ParseOrDie(kGridYaml);
  EXPECT_EQ(GridSize(spec), 36);
  EXPECT_EQ(spec.searcher.max_trials, 36);
  SweepSpec more = ParseOrDie(Replace(kGridYaml, "metric: loss", "metric: loss, max_trials: 50"));
  EXPECT_EQ(more.searcher.max_trials, 36);
  EXPECT_THAT(ErrorsOf(Replace(kGridYaml, "metric: loss", "metric: loss, max_trials: 20")),
              ElementsAre("searcher.max_trials: the grid has 36 points, more than max_trials "
                          "(20); raise max_trials or give the ranges fewer points"));
  EXPECT_THAT(ErrorsOf(Replace(kGridYaml, "maxval: 3, count: 3", "maxval: 3")),
              ElementsAre("hyperparameters.depth.count: required field is missing: the grid "
                          "searcher tries count points of each range"));
  EXPECT_THAT(ErrorsOf(Replace(kGridYaml, "maxval: 3, count: 3", "maxval: 3000, count: 3000")),
              ElementsAre("hyperparameters: the grid has 36000 points; at most 10000 are allowed"));
  EXPECT_THAT(ErrorsOf(Replace(kGridYaml, "maxval: 3, count: 3", "maxval: 300, count: 300")),
              ElementsAre("hyperparameters: the grid has 3600 points; a sweep makes at most 1000 "
                          "trials"));
  EXPECT_THAT(ErrorsOf(Replace(kGridYaml, "metric: loss", "metric: loss, seed: 3")),
              ElementsAre("searcher.seed: the grid searcher draws nothing; leave seed out"));
  // A random spec's range without a count has no grid.
  EXPECT_EQ(GridSize(ParseOrDie(kDigitsYaml)), 0);
}

TEST(SweepSpecTest, TrialTemplateErrors) {
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "framework: pytorch", "name: x\n  team: y")),
              ElementsAre("trial.name: a trial is named by the sweep: <name>-<trial number>; "
                          "leave it out",
                          "trial.team: trials run in the sweep's team; set team at the top level"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "${hp.lr}", "${hp.lrr}")),
              ElementsAre("trial.tasks[0].command[3]: ${hp.lrr} names no hyperparameter; did you "
                          "mean ${hp.lr}?"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "${hp.model.hidden}", "${hp.model}")),
              ElementsAre("trial.tasks[0].command[5]: ${hp.model} names a group of "
                          "hyperparameters; name one of them, e.g. ${hp.model.hidden}"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "${hp.optimizer}\"}", "${hp.optimizer\"}")),
              ElementsAre("trial.tasks[0].env.OPTIMIZER: has a ${hp. without its closing }"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "framework: pytorch",
                               "framework: pytorch\n  constraints: {gpu_model: \"${hp.lr}\"}")),
              ElementsAre("trial.constraints.gpu_model: ${hp.NAME} is replaced only in a task's "
                          "command, env values and workdir"));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "framework: pytorch", "framework: ray")),
              ElementsAre(HasSubstr("trial.framework: \"ray\" is not a framework")));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "env: {OPTIMIZER", "env: {COHORT_X")),
              ElementsAre(HasSubstr("trial.tasks[0].env.COHORT_X: is set by Cohort")));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "[sgd, adam]", "[sgd, \"..\"]")),
              ElementsAre(HasSubstr("trial.tasks[0].workdir: when optimizer is \"..\": must not "
                                    "contain a '..' component")));
  EXPECT_THAT(ErrorsOf(Replace(Replace(kDigitsYaml, "[sgd, adam]", "[sgd, \"\"]"),
                               "[/usr/bin/python3,", "[\"${hp.optimizer}\",")),
              ElementsAre("trial.tasks[0].command[0]: the program to run is empty when optimizer "
                          "is \"\""));
  EXPECT_THAT(ErrorsOf(Replace(kDigitsYaml, "trial:\n", "trial: 3\nx:\n")),
              Contains(HasSubstr("trial: must be a job spec")));
}

TEST(SweepSpecTest, TrialTemplateIsCheckedWithTheLongestValues) {
  // Each argument alone is within the limit; with the longest value of x they are not.
  std::string arg(64 * 1024 - 600, 'a');
  std::string yaml = fmt::format(R"({{"name": "s",
    "trial": {{"tasks": [{{"role": "w", "command": ["run", "{0}", "{0}${{hp.x}}${{hp.x}}"]}}]}},
    "hyperparameters": {{"x": {{"type": "categorical", "vals": ["a", "{1}"]}}}},
    "searcher": {{"name": "random", "metric": "m", "max_trials": 1}}}})",
                                 arg, std::string(kMaxHParamTextBytes, 'b'));
  EXPECT_THAT(ErrorsOf(yaml), ElementsAre(HasSubstr("trial.tasks[0].command: its arguments add "
                                                    "up to 131923 bytes")));
}

TEST(SweepSpecTest, RelativeWorkdirIsBelowTheSpecFilesDirectory) {
  auto spec = ParseSweepSpecFile(kDigitsYaml, "digits.yaml", "/home/ann/exp");
  ASSERT_TRUE(spec.ok()) << ::testing::PrintToString(spec.status().details());
  EXPECT_EQ(spec->trial.at("tasks")[0].at("workdir"), "/home/ann/exp/runs/${hp.optimizer}");
  auto job = TrialSpec(*spec, 3, Json::parse(R"({"batch_size": 16, "dropout": 0.1, "epochs": 27,
      "lr": 0.001, "model": {"hidden": 64}, "optimizer": "adam"})"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->tasks[0].workdir, "/home/ann/exp/runs/adam");
}

TEST(SweepSpecTest, TrialSpecSubstitutesTheValues) {
  SweepSpec spec = ParseOrDie(kDigitsYaml);
  Json hparams = Json::parse(R"({"batch_size": 16, "dropout": 0.25, "epochs": 27, "lr": 0.001,
                                 "model": {"hidden": 64}, "optimizer": "adam"})");
  auto job = TrialSpec(spec, 12, hparams);
  ASSERT_TRUE(job.ok()) << ::testing::PrintToString(job.status().details());
  EXPECT_EQ(job->name, "digits-12");
  EXPECT_EQ(job->team, "research");
  EXPECT_EQ(job->framework, Framework::kPyTorch);
  EXPECT_THAT(job->tasks[0].command,
              ElementsAre("/usr/bin/python3", "train.py", "--lr", "0.001", "--hidden", "64"));
  EXPECT_EQ(job->tasks[0].env.at("OPTIMIZER"), "adam");
  EXPECT_EQ(job->tasks[0].workdir, "runs/adam");
  EXPECT_EQ(job->restart.on, std::vector<RestartCause>{RestartCause::kPreempted});
}

TEST(SweepSpecTest, TrialSpecRefusesValuesOutsideTheSpace) {
  SweepSpec spec = ParseOrDie(kDigitsYaml);
  auto bad = TrialSpec(spec, 1, Json::parse(R"({"batch_size": 200, "dropout": 0.25, "lr": 0.5,
      "model": {"hidden": 64.5}, "optimizer": "rmsprop", "extra": 1})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "trial 1 of sweep digits: the values do not belong to its space");
  EXPECT_THAT(bad.status().details(),
              ElementsAre("hparams.batch_size: must be an integer from 16 to 128, got 200",
                          "hparams.epochs: missing",
                          "hparams.lr: must be a number from 0.0001 to 0.1, got 0.5",
                          "hparams.model.hidden: must be an integer from 32 to 256, got 64.5",
                          "hparams.optimizer: \"rmsprop\" is not one of the choices",
                          "hparams.extra: not a hyperparameter of the sweep"));
  EXPECT_FALSE(TrialSpec(spec, 0, Json::object()).ok());
}

}  // namespace
}  // namespace cohort::sweep
