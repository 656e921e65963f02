// Cluster traces for the simulator: the Microsoft ITP 2021 format, the Tiresias format, and
// Cohort's own CSV (docs/simulator.md). Loaders never stop at a bad row: they skip it and say
// which row and why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"
#include "sim/sweep_rows.h"

namespace cohort::sim {

enum class TraceFormat { kItp, kTiresias, kCohort };
inline constexpr auto kTraceFormatNames = std::to_array<EnumName<TraceFormat>>({
    {TraceFormat::kItp, "itp"},
    {TraceFormat::kTiresias, "tiresias"},
    {TraceFormat::kCohort, "cohort"},
});
const char* TraceFormatName(TraceFormat f);
StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

struct TraceJob {
  std::string id;
  double submit = 0;    // seconds since the start of the trace
  double duration = 0;  // seconds of work, when it runs undisturbed
  int gpus = 0;
  std::string team;  // empty: assigned by the simulation's team rule
  std::string user;
  int priority = 0;
  std::optional<double> max_runtime;  // seconds
  int min_gpus = 0;                   // elastic (Cohort format): 0 = not elastic
  int max_gpus = 0;
  // Cohort format only: the row is a sweep of trials like it (duration: a trial's full length;
  // gpus: a trial's), not one job (sweep_rows.h).
  std::optional<SweepShape> sweep;
};

struct SkippedRow {
  size_t line = 0;  // 1-based line number in the file
  std::string reason;
};

struct Trace {
  std::vector<TraceJob> jobs;  // in submission order
  std::vector<SkippedRow> skipped;
  size_t rows = 0;  // data rows read
};

// Detects the format from the header line when `format` is unset.
StatusOr<Trace> LoadTrace(const std::string& path, std::optional<TraceFormat> format = {});
StatusOr<Trace> ParseTrace(std::string_view text, std::optional<TraceFormat> format,
                           std::string_view source = "trace");

// Cohort's CSV: header
// `job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus` (times in seconds;
// team, user, max_runtime, min_gpus and max_gpus may be empty), and `,sweep` after them when a
// row is a sweep (sweep_rows.h; empty for plain jobs).
std::string WriteCohortTrace(const std::vector<TraceJob>& jobs);

}  // namespace cohort::sim
