// A sweep as its submitter describes it (docs/sweeps.md): a job spec template under `trial:`,
// the hyperparameter space, and the searcher. Parsed and validated like a job spec: every
// error names its field path and reason, unknown fields are errors, and every size is bounded
// (sweep/sweep_limits.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/job_spec.h"
#include "model/json.h"

namespace cohort::sweep {

enum class HParamType { kInt, kDouble, kLog, kCategorical, kConst };
inline constexpr auto kHParamTypeNames = std::to_array<EnumName<HParamType>>({
    {HParamType::kInt, "int"},
    {HParamType::kDouble, "double"},
    {HParamType::kLog, "log"},
    {HParamType::kCategorical, "categorical"},
    {HParamType::kConst, "const"},
});

// One leaf of the space. Ranges are inclusive. A log range draws the exponent: its values are
// base^x for x in [minval, maxval].
struct HyperParameter {
  std::string name;  // dotted for nested names: "model.depth"
  HParamType type = HParamType::kConst;
  double minval = 0;
  double maxval = 0;
  double base = 10;          // log only
  std::optional<int> count;  // grid points of a range (a grid searcher needs it)
  std::vector<Json> vals;    // categorical: the choices, in the spec's order
  Json val;                  // const
  bool operator==(const HyperParameter&) const = default;
};

enum class SearcherName { kGrid, kRandom, kAsha };
inline constexpr auto kSearcherNames = std::to_array<EnumName<SearcherName>>({
    {SearcherName::kGrid, "grid"},
    {SearcherName::kRandom, "random"},
    {SearcherName::kAsha, "asha"},
});

enum class MetricMode { kMin, kMax };
inline constexpr auto kMetricModeNames = std::to_array<EnumName<MetricMode>>({
    {MetricMode::kMin, "min"},
    {MetricMode::kMax, "max"},
});

struct SearcherSpec {
  SearcherName name = SearcherName::kRandom;
  std::string metric;  // a cohort-metric / TensorBoard tag the trials report
  MetricMode mode = MetricMode::kMin;
  int max_trials = 0;  // grid: always the grid's size (given, it may not be smaller)
  int max_concurrent_trials = 4;
  // random and asha: the stream of values; 0 in a spec: chosen at submission. At most
  // kMaxSeed (2^53 - 1, sweep/sweep_limits.h), so that any JSON reader keeps it exact.
  uint64_t seed = 0;
  // asha: a trial's time is the metric's step, or, when time_metric names another metric, the
  // last value of that metric the trial reported. Rung i (0-based) is at
  // max_time / divisor^(max_rungs - 1 - i); the top rung is max_time.
  std::string time_metric;  // empty: the metric's step
  double max_time = 0;
  int divisor = 4;
  int max_rungs = 5;
  bool operator==(const SearcherSpec&) const = default;
};

struct SweepSpec {
  std::string name;
  std::string team = "default";
  // The trial's job spec as written (JSON form), `${hp.NAME}` placeholders kept. Its `name` and
  // `team` are the sweep's; a relative workdir was made absolute by the CLI (ParseSweepSpecFile).
  Json trial = Json::object();
  std::vector<HyperParameter> hyperparameters;  // by name
  SearcherSpec searcher;
  bool operator==(const SweepSpec&) const = default;
};

// `text` is YAML or JSON. `names_team` as in ParseJobSpec.
StatusOr<SweepSpec> ParseSweepSpec(std::string_view text, std::string_view source = "sweep spec",
                                   bool* names_team = nullptr);
// As ParseSweepSpec, with relative workdirs in the trial taken relative to `base_dir`.
StatusOr<SweepSpec> ParseSweepSpecFile(std::string_view text, std::string_view source,
                                       const std::string& base_dir, bool* names_team = nullptr);
StatusOr<SweepSpec> ParseSweepSpecJson(const Json& doc);
// The canonical JSON form; ParseSweepSpecJson(ToJson(s)) gives s back.
Json ToJson(const SweepSpec& spec);

// The job spec of trial `trial` with values `hparams` (an object nested like the space):
// `${hp.NAME}` replaced in its commands, env values and workdir, named "<sweep name>-<trial>".
// Fails only for values that do not belong to the space.
StatusOr<JobSpec> TrialSpec(const SweepSpec& spec, int trial, const Json& hparams);

// The number of points of the grid (product of the axes, an int range's after rounding),
// saturating at INT64_MAX; 0 when a range has no count.
int64_t GridSize(const SweepSpec& spec);

}  // namespace cohort::sweep
