#include "sweep/sweep_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <utility>

#include "model/job_spec_parser.h"
#include "model/json_errors.h"
#include "model/spec_document.h"
#include "model/spec_fields.h"
#include "model/trial.h"
#include "model/workdir.h"
#include "sweep/hparam_space.h"
#include "sweep/placeholders.h"
#include "sweep/sweep_limits.h"

namespace cohort::sweep {
namespace {

constexpr std::string_view kKind = "sweep spec";
using Fields = std::span<const std::string_view>;
constexpr std::array<std::string_view, 5> kSweepFields = {"name", "team", "trial",
                                                          "hyperparameters", "searcher"};
constexpr std::array<std::string_view, 10> kSearcherFields = {
    "name", "metric",      "mode",     "max_trials", "max_concurrent_trials",
    "seed", "time_metric", "max_time", "divisor",    "max_rungs"};
constexpr std::array<std::string_view, 4> kAshaFields = {"time_metric", "max_time", "divisor",
                                                         "max_rungs"};

bool Contains(Fields fields, std::string_view s) {
  return std::find(fields.begin(), fields.end(), s) != fields.end();
}

// Where `${hp.NAME}` is replaced: tasks[i].command[j], tasks[i].env.NAME, tasks[i].workdir.
bool Substituted(const std::vector<std::string>& at) {
  if (at.size() < 3 || at[0] != "tasks") return false;
  if (at.size() == 3) return at[2] == "workdir";
  return at.size() == 4 && (at[2] == "command" || at[2] == "env");
}

// Calls `f(path, at, text)` for every string value in `doc` (not keys), where `at` is the
// path's parts ("tasks", "0", "command", "1").
template <typename F>
void ForEachString(Json& doc, const std::string& path, std::vector<std::string>* at, F&& f) {
  if (doc.is_string()) {
    f(path, *at, doc.get_ref<std::string&>());
  } else if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) {
      at->push_back(std::to_string(i));
      ForEachString(doc[i], IndexPath(path, i), at, f);
      at->pop_back();
    }
  } else if (doc.is_object()) {
    for (auto& [key, value] : doc.items()) {
      at->push_back(key);
      ForEachString(value, ChildPath(path, key), at, f);
      at->pop_back();
    }
  }
}

// The template with `values` in its placeholders, named and teamed as a trial.
Json TrialDocument(Json trial, const std::map<std::string, std::string>& values,
                   const std::string& name, const std::string& team) {
  std::vector<std::string> at;
  ForEachString(trial, "", &at, [&](const std::string&, const auto& parts, std::string& text) {
    if (Substituted(parts)) text = Substitute(text, values);
  });
  trial["name"] = name;
  trial["team"] = team;
  return trial;
}

class Reader {
 public:
  Reader(std::vector<std::string> errors, std::string base_dir)
      : errors_(std::move(errors)), base_dir_(std::move(base_dir)) {}

  std::vector<std::string>& errors() { return errors_; }

  SweepSpec Sweep(const Json& doc) {
    SweepSpec spec;
    if (doc.is_null()) {
      errors_.push_back("sweep spec is empty; it needs name, trial, hyperparameters and searcher");
      return spec;
    }
    if (!doc.is_object()) {
      errors_.push_back(
          fmt::format("sweep spec must be a mapping with name, trial, "
                      "hyperparameters and searcher, got {}",
                      DescribeSpecValue(doc)));
      return spec;
    }
    Unknown(doc, "", kSweepFields);
    bool name_ok = Identifier(doc, "name", kMaxSweepNameLength, true, &spec.name);
    bool team_ok = Identifier(doc, "team", kMaxTeamNameLength, false, &spec.team);
    if (const Json* v = Find(doc, "hyperparameters")) {
      spec.hyperparameters = ParseSpace(*v, &errors_, &named_);
    } else {
      Error("hyperparameters", "required field is missing");
    }
    if (const Json* v = Find(doc, "searcher")) {
      Searcher(*v, &spec.searcher);
    } else {
      Error("searcher", "required field is missing");
    }
    if (searcher_named_ && spec.searcher.name == SearcherName::kGrid) Grid(&spec);
    if (const Json* v = Find(doc, "trial")) {
      // Each placeholder, and the trial's job spec as the longest values would make it.
      spec.trial = *v;
      Trial(&spec, name_ok ? spec.name : "sweep", team_ok ? spec.team : "default");
    } else {
      Error("trial", "required field is missing");
    }
    return spec;
  }

 private:
  void Error(const std::string& path, std::string_view reason) {
    errors_.push_back(fmt::format("{}: {}", path, reason));
  }

  static const Json* Find(const Json& obj, std::string_view key) {
    auto it = obj.find(std::string(key));
    return it == obj.end() ? nullptr : &*it;
  }

  void Unknown(const Json& obj, const std::string& path, Fields known) {
    for (const auto& [key, value] : obj.items()) {
      if (Contains(known, key)) continue;
      Error(ChildPath(path, key), "unknown field; " + UnknownFieldHint(key, known));
    }
  }

  bool Identifier(const Json& obj, std::string_view field, size_t max_length, bool required,
                  std::string* out) {
    const Json* v = Find(obj, field);
    if (v == nullptr) {
      if (required) Error(std::string(field), "required field is missing");
      return !required;
    }
    if (auto problem = IdentifierProblem(*v, field, max_length)) {
      Error(std::string(field), *problem);
      return false;
    }
    *out = v->get<std::string>();
    return true;
  }

  bool Integer(const Json& v, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
    bool ok = false;
    if (v.is_number_unsigned()) {
      ok = v.get<uint64_t>() <= static_cast<uint64_t>(hi) &&
           static_cast<int64_t>(v.get<uint64_t>()) >= lo;
    } else if (v.is_number_integer()) {
      ok = v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
    }
    if (ok) {
      *out = v.get<int64_t>();
    } else {
      Error(path,
            fmt::format("must be an integer from {} to {}, got {}", lo, hi, DescribeSpecValue(v)));
    }
    return ok;
  }

  // A metric as its trials report it: a cohort-metric tag (docs/observability.md).
  bool MetricName(const Json& v, const std::string& path, std::string* out) {
    auto tag_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
             c == '-';
    };
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (!s.empty() && s.size() <= kMaxMetricNameLength && s != "step" && s != "time" &&
          std::all_of(s.begin(), s.end(), tag_char)) {
        *out = s;
        return true;
      }
    }
    Error(path, fmt::format("{} is not a metric's name: use 1 to {} letters, digits, '_', '.', "
                            "'/' or '-', as the trials report it (not step or time)",
                            DescribeSpecValue(v), kMaxMetricNameLength));
    return false;
  }

  void Searcher(const Json& v, SearcherSpec* out) {
    if (!v.is_object()) {
      Error("searcher", fmt::format("must be a mapping such as {{name: asha, metric: val_acc, "
                                    "max_trials: 16, max_time: 27}}, got {}",
                                    DescribeSpecValue(v)));
      return;
    }
    Unknown(v, "searcher", kSearcherFields);
    if (const Json* n = Find(v, "name")) {
      auto name =
          n->is_string() ? Parse(kSearcherNames, n->get_ref<const std::string&>()) : std::nullopt;
      if (name) {
        out->name = *name;
        searcher_named_ = true;
      } else {
        Error("searcher.name", fmt::format("{} is not a searcher; use {}", DescribeSpecValue(*n),
                                           NameList(kSearcherNames)));
      }
    } else {
      Error("searcher.name",
            fmt::format("required field is missing; use {}", NameList(kSearcherNames)));
    }
    if (const Json* m = Find(v, "metric")) {
      MetricName(*m, "searcher.metric", &out->metric);
    } else {
      Error("searcher.metric", "required field is missing: the metric the trials report");
    }
    if (const Json* m = Find(v, "mode")) {
      auto mode =
          m->is_string() ? Parse(kMetricModeNames, m->get_ref<const std::string&>()) : std::nullopt;
      if (mode) {
        out->mode = *mode;
      } else {
        Error("searcher.mode", fmt::format("{} is not a mode; use {} (the better value is the "
                                           "smaller or the larger)",
                                           DescribeSpecValue(*m), NameList(kMetricModeNames)));
      }
    }
    int64_t n = 0;
    if (const Json* m = Find(v, "max_trials")) {
      if (Integer(*m, "searcher.max_trials", 1, kMaxTrials, &n))
        out->max_trials = static_cast<int>(n);
      max_trials_given_ = true;
    } else if (searcher_named_ && out->name != SearcherName::kGrid) {
      Error("searcher.max_trials",
            fmt::format("required field is missing: how many trials the {} searcher makes",
                        NameOf(kSearcherNames, out->name)));
    }
    if (const Json* m = Find(v, "max_concurrent_trials")) {
      if (Integer(*m, "searcher.max_concurrent_trials", 1, kMaxConcurrentTrials, &n)) {
        out->max_concurrent_trials = static_cast<int>(n);
      }
    }
    if (const Json* m = Find(v, "seed")) {
      if (searcher_named_ && out->name == SearcherName::kGrid) {
        Error("searcher.seed", "the grid searcher draws nothing; leave seed out");
      } else if (Integer(*m, "searcher.seed", 0, static_cast<int64_t>(kMaxSeed), &n)) {
        out->seed = static_cast<uint64_t>(n);
      }
    }
    if (!searcher_named_) return;
    if (out->name != SearcherName::kAsha) {
      for (std::string_view field : kAshaFields) {
        if (Find(v, field)) {
          Error(ChildPath("searcher", field), fmt::format("only the asha searcher uses it, not {}",
                                                          NameOf(kSearcherNames, out->name)));
        }
      }
      return;
    }
    if (const Json* m = Find(v, "time_metric")) {
      MetricName(*m, "searcher.time_metric", &out->time_metric);
    }
    if (const Json* m = Find(v, "max_time")) {
      if (m->is_number() && m->get<double>() > 0 && m->get<double>() <= kMaxTime) {
        out->max_time = m->get<double>();
      } else {
        Error("searcher.max_time", fmt::format("must be a number above 0 and at most {}, got {}",
                                               kMaxTime, DescribeSpecValue(*m)));
      }
    } else {
      Error("searcher.max_time",
            "required field is missing: the time (step, or time_metric's value) at which a trial "
            "is complete");
    }
    if (const Json* m = Find(v, "divisor")) {
      if (m->is_number_integer() && m->get<int64_t>() < kMinDivisor) {
        Error("searcher.divisor",
              fmt::format("must be at least {}, got {}", kMinDivisor, DescribeSpecValue(*m)));
      } else if (Integer(*m, "searcher.divisor", kMinDivisor, kMaxDivisor, &n)) {
        out->divisor = static_cast<int>(n);
      }
    }
    if (const Json* m = Find(v, "max_rungs")) {
      if (Integer(*m, "searcher.max_rungs", 1, kMaxRungs, &n)) out->max_rungs = static_cast<int>(n);
    }
  }

  // Every range needs its count, and the grid must fit max_trials and the bounds.
  void Grid(SweepSpec* spec) {
    bool counted = true;
    for (const HyperParameter& hp : spec->hyperparameters) {
      bool range = hp.type == HParamType::kInt || hp.type == HParamType::kDouble ||
                   hp.type == HParamType::kLog;
      if (range && !hp.count) {
        Error(ChildPath(ChildPath("hyperparameters", hp.name), "count"),
              "required field is missing: the grid searcher tries count points of each range");
        counted = false;
      }
    }
    if (!counted || spec->hyperparameters.empty()) return;
    int64_t size = GridSize(*spec);
    if (size > kMaxGridSize) {
      Error("hyperparameters",
            fmt::format("the grid has {} points; at most {} are allowed", size, kMaxGridSize));
    } else if (max_trials_given_ && spec->searcher.max_trials > 0 &&
               size > spec->searcher.max_trials) {
      Error("searcher.max_trials",
            fmt::format("the grid has {} points, more than max_trials ({}); raise max_trials or "
                        "give the ranges fewer points",
                        size, spec->searcher.max_trials));
    } else if (size > kMaxTrials) {
      Error("hyperparameters", fmt::format("the grid has {} points; a sweep makes at most {} "
                                           "trials",
                                           size, kMaxTrials));
    } else {
      // A grid makes each point once.
      spec->searcher.max_trials = static_cast<int>(size);
    }
  }

  void Trial(SweepSpec* spec, const std::string& name, const std::string& team) {
    Json& trial = spec->trial;
    if (!trial.is_object()) {
      Error("trial", fmt::format("must be a job spec (docs/job-spec.md) without name and team, "
                                 "got {}",
                                 DescribeSpecValue(trial)));
      return;
    }
    if (trial.contains("name")) {
      Error("trial.name", "a trial is named by the sweep: <name>-<trial number>; leave it out");
    }
    if (trial.contains("team")) {
      Error("trial.team", "trials run in the sweep's team; set team at the top level");
    }
    if (!base_dir_.empty()) AnchorWorkdirs(&trial);

    std::set<std::string> leaves;
    std::map<std::string, std::string> longest;
    for (const HyperParameter& hp : spec->hyperparameters) {
      leaves.insert(hp.name);
      longest[hp.name] = LongestText(hp);
    }
    std::vector<std::string_view> known(leaves.begin(), leaves.end());
    // Where a name that is not a leaf appears, keep it as it is for the job spec's check.
    std::map<std::string, std::string> values = longest;
    struct Varied {
      std::string path;
      std::string text;
      std::vector<std::string> names;
    };
    std::vector<Varied> varied;
    std::vector<std::string> at;
    ForEachString(
        trial, "trial", &at, [&](const std::string& path, const auto& parts, std::string& text) {
          if (text.find(kPlaceholderStart) == std::string::npos) return;
          if (!Substituted(parts)) {
            Error(path, "${hp.NAME} is replaced only in a task's command, env values and workdir");
            return;
          }
          auto names = PlaceholderNames(text);
          if (!names.ok()) {
            Error(path, names.status().message());
            return;
          }
          for (const std::string& n : *names) {
            if (leaves.contains(n)) continue;
            values[n] = fmt::format("${{hp.{}}}", n);
            if (named_.contains(n)) continue;  // its definition's error is reported
            auto group = leaves.lower_bound(n + ".");
            if (group != leaves.end() && group->starts_with(n + ".")) {
              Error(path, fmt::format("${{hp.{}}} names a group of hyperparameters; name one of "
                                      "them, e.g. ${{hp.{}}}",
                                      n, *group));
              continue;
            }
            std::string reason = fmt::format("${{hp.{}}} names no hyperparameter", n);
            if (std::string_view best = ClosestName(n, known); !best.empty()) {
              reason += fmt::format("; did you mean ${{hp.{}}}?", best);
            }
            Error(path, reason);
          }
          if (parts.size() == 3 || parts[3] == "0") varied.push_back({path, text, *names});
        });

    const std::string trial_name =
        fmt::format("{}-{}", name, std::max(spec->searcher.max_trials, 1));
    auto job = ParseJobSpecJson(TrialDocument(trial, values, trial_name, team));
    if (!job.ok()) {
      if (job.status().details().empty()) Error("trial", job.status().message());
      for (const std::string& problem : job.status().details()) {
        errors_.push_back("trial." + problem);
      }
      return;
    }
    // The searcher makes the trials and decides when each may start.
    if (job->array)
      Error("trial.array", "a sweep's trials are not arrays; the searcher makes them");
    if (!job->depends_on.empty()) {
      Error("trial.depends_on",
            "a sweep's trials do not wait for other jobs; the searcher "
            "starts them");
    }
    // A workdir or a program whose text is a choice: each choice must do. Groups often share
    // the text: each text is tried once.
    std::set<std::string> tried;
    for (const auto& [path, raw, names] : varied) {
      const bool workdir = path.ends_with(".workdir");
      if (!tried.insert(fmt::format("{}:{}", workdir, raw)).second) continue;
      for (const HyperParameter& hp : spec->hyperparameters) {
        if (std::find(names.begin(), names.end(), hp.name) == names.end()) continue;
        auto texts = ValueTexts(hp);
        if (!texts) continue;
        for (const std::string& choice : *texts) {
          values[hp.name] = choice;
          std::string result = Substitute(raw, values);
          auto when = [&] { return fmt::format("when {} is {}", hp.name, Json(choice).dump()); };
          if (workdir) {
            if (result.empty()) {
              Error(path, fmt::format("is empty {}", when()));
            } else if (auto problem = WorkdirProblem(result)) {
              Error(path, fmt::format("{}: {}", when(), *problem));
            }
          } else if (result.empty()) {
            Error(path, fmt::format("the program to run is empty {}", when()));
          }
        }
        values[hp.name] = longest[hp.name];
      }
    }
  }

  // Relative workdirs below the spec file's directory, as ParseJobSpecFile takes them.
  void AnchorWorkdirs(Json* trial) {
    auto tasks = trial->find("tasks");
    if (tasks == trial->end() || !tasks->is_array()) return;
    for (Json& group : *tasks) {
      if (!group.is_object()) continue;
      auto w = group.find("workdir");
      if (w == group.end() || !w->is_string()) continue;
      const std::string& given = w->get_ref<const std::string&>();
      if (given.empty() || WorkdirProblem(given)) continue;  // the job spec's check says why
      *w = AnchorWorkdir(base_dir_, given);
    }
  }

  std::vector<std::string> errors_;
  std::string base_dir_;
  std::set<std::string> named_;  // every leaf the spec names, valid or not
  bool searcher_named_ = false;
  bool max_trials_given_ = false;
};

StatusOr<SweepSpec> Validate(const Json& doc, std::vector<std::string> errors,
                             std::string_view prefix, const std::string& base_dir,
                             bool* names_team) {
  if (names_team) *names_team = doc.is_object() && doc.contains("team");
  Reader reader(std::move(errors), base_dir);
  SweepSpec spec = reader.Sweep(doc);
  std::vector<std::string>& found = reader.errors();
  if (found.empty()) return spec;
  size_t n = found.size();
  return Status::InvalidArgument(
      fmt::format("{}sweep spec has {} error{}", prefix, n, n == 1 ? "" : "s"), std::move(found));
}

}  // namespace

StatusOr<SweepSpec> ParseSweepSpec(std::string_view text, std::string_view source,
                                   bool* names_team) {
  return ParseSweepSpecFile(text, source, "", names_team);
}

StatusOr<SweepSpec> ParseSweepSpecFile(std::string_view text, std::string_view source,
                                       const std::string& base_dir, bool* names_team) {
  std::string prefix = source == kKind ? "" : fmt::format("{}: ", source);
  auto read = ReadSpecDocument(text, source, kKind);
  if (!read.ok()) return read.status();
  try {
    return Validate(read->doc, std::move(read->errors), prefix, base_dir, names_team);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot read the sweep spec: {}", source, JsonErrorText(e)));
  }
}

StatusOr<SweepSpec> ParseSweepSpecJson(const Json& doc) {
  try {
    return Validate(doc, {}, "", "", nullptr);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("cannot read the sweep spec: {}", JsonErrorText(e)));
  }
}

Json ToJson(const SweepSpec& spec) {
  const SearcherSpec& s = spec.searcher;
  Json searcher = {{"name", NameOf(kSearcherNames, s.name)},
                   {"metric", s.metric},
                   {"mode", NameOf(kMetricModeNames, s.mode)},
                   {"max_trials", s.max_trials},
                   {"max_concurrent_trials", s.max_concurrent_trials}};
  if (s.name != SearcherName::kGrid) searcher["seed"] = s.seed;
  if (s.name == SearcherName::kAsha) {
    if (!s.time_metric.empty()) searcher["time_metric"] = s.time_metric;
    searcher["max_time"] = s.max_time;
    searcher["divisor"] = s.divisor;
    searcher["max_rungs"] = s.max_rungs;
  }
  return {{"name", spec.name},
          {"team", spec.team},
          {"trial", spec.trial},
          {"hyperparameters", SpaceToJson(spec.hyperparameters)},
          {"searcher", std::move(searcher)}};
}

StatusOr<JobSpec> TrialSpec(const SweepSpec& spec, int trial, const Json& hparams) {
  std::vector<std::string> problems;
  if (trial < 1) problems.push_back(fmt::format("trial: must be at least 1, got {}", trial));
  if (!hparams.is_object()) {
    problems.push_back(
        fmt::format("hparams: must be an object, got {}", DescribeSpecValue(hparams)));
  } else {
    std::set<std::string> leaves;
    for (const HyperParameter& hp : spec.hyperparameters) {
      leaves.insert(hp.name);
      const Json* value = FindDotted(hparams, hp.name);
      if (value == nullptr) {
        problems.push_back(fmt::format("hparams.{}: missing", hp.name));
      } else if (auto problem = ValueProblem(hp, *value)) {
        problems.push_back(fmt::format("hparams.{}: {}", hp.name, *problem));
      }
    }
    for (const auto& [name, text] : FlattenHParams(hparams)) {
      if (!leaves.contains(name)) {
        problems.push_back(fmt::format("hparams.{}: not a hyperparameter of the sweep", name));
      }
    }
  }
  if (!problems.empty()) {
    return Status::InvalidArgument(
        fmt::format("trial {} of sweep {}: the values do not belong to its space", trial,
                    spec.name),
        std::move(problems));
  }
  Json doc = TrialDocument(spec.trial, FlattenHParams(hparams),
                           fmt::format("{}-{}", spec.name, trial), spec.team);
  return ParseJobSpecJson(doc);
}

int64_t GridSize(const SweepSpec& spec) {
  int64_t size = 1;
  for (const HyperParameter& hp : spec.hyperparameters) {
    auto n = static_cast<int64_t>(GridAxis(hp).size());
    if (n == 0) return 0;
    if (size > std::numeric_limits<int64_t>::max() / n) return std::numeric_limits<int64_t>::max();
    size *= n;
  }
  return size;
}

}  // namespace cohort::sweep
