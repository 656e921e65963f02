#include "sim/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace cohort::sim {
namespace {

constexpr std::string_view kItpHeader = "job_id,submission_time,duration,num_gpu";
constexpr std::string_view kTiresiasHeader =
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval";
constexpr std::string_view kCohortHeader =
    "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus";
// The same with sweep rows (sweep_rows.h): a trace without sweeps keeps the header it had.
constexpr std::string_view kCohortSweepHeader =
    "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus,sweep";

std::optional<double> Number(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  // from_chars reads "nan" and "inf" too: no time or count, and NaN slips past every "< 0".
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int> Integer(std::string_view text) {
  text = Trim(text);
  if (auto v = ParseInt(text)) return v;
  // Exported traces sometimes write counts as floats ("8.0", "1e2"); a whole one is accepted.
  // The range first: converting a double beyond int64_t ("1e300") is undefined behaviour.
  auto v = Number(text);
  if (!v || *v < INT32_MIN || *v > INT32_MAX || *v != std::floor(*v)) return std::nullopt;
  return static_cast<int>(*v);
}

// Checks what every format shares; returns a reason to skip the row, or "".
std::string Check(const TraceJob& j) {
  if (j.id.empty()) return "empty job id";
  if (j.submit < 0) return fmt::format("negative submission time {}", j.submit);
  if (j.duration <= 0) return fmt::format("duration {} is not positive", j.duration);
  if (j.gpus < 0) return fmt::format("negative GPU count {}", j.gpus);
  if (j.gpus > 100'000) return fmt::format("GPU count {} is not plausible", j.gpus);
  return "";
}

}  // namespace

const char* TraceFormatName(TraceFormat f) { return NameOf(kTraceFormatNames, f, "cohort"); }

StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (auto f = Parse(kTraceFormatNames, name)) return *f;
  return Status::InvalidArgument(fmt::format("--format: \"{}\" is not a trace format; use {}", name,
                                             NameList(kTraceFormatNames)));
}

StatusOr<Trace> LoadTrace(const std::string& path, std::optional<TraceFormat> format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read the trace {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTrace(ss.str(), format, path);
}

StatusOr<Trace> ParseTrace(std::string_view text, std::optional<TraceFormat> format,
                           std::string_view source) {
  std::vector<std::string> lines = Split(text, '\n');
  if (lines.empty() || Trim(lines[0]).empty()) {
    return Status::InvalidArgument(fmt::format("{}: the trace is empty", source));
  }
  std::string header(Trim(lines[0]));
  std::optional<TraceFormat> detected;
  if (header == kItpHeader) detected = TraceFormat::kItp;
  if (header == kTiresiasHeader) detected = TraceFormat::kTiresias;
  if (header == kCohortHeader || header == kCohortSweepHeader) detected = TraceFormat::kCohort;
  size_t cohort_fields = header == kCohortSweepHeader ? 11 : 10;
  if (!format) format = detected;
  if (!format) {
    return Status::InvalidArgument(fmt::format(
        "{}: the header \"{}\" is not one of the known formats (itp: {}; tiresias: {}; cohort: "
        "{}, and ,sweep after them for sweep rows)",
        source, header, kItpHeader, kTiresiasHeader, kCohortHeader));
  }
  if (detected != format) {
    return Status::InvalidArgument(
        fmt::format("{}: --format {} expects the header \"{}\"", source, TraceFormatName(*format),
                    *format == TraceFormat::kItp        ? kItpHeader
                    : *format == TraceFormat::kTiresias ? kTiresiasHeader
                                                        : kCohortHeader));
  }
  Trace trace;
  for (size_t n = 1; n < lines.size(); ++n) {
    std::string_view line = Trim(lines[n]);
    if (line.empty()) continue;
    ++trace.rows;
    std::vector<std::string> f = Split(line, ',');
    auto skip = [&](std::string reason) {
      trace.skipped.push_back(SkippedRow{n + 1, std::move(reason)});
    };
    TraceJob j;
    switch (*format) {
      case TraceFormat::kItp: {
        if (f.size() != 4) {
          skip(fmt::format("expected 4 fields, got {}", f.size()));
          continue;
        }
        auto submit = Number(f[1]);
        auto duration = Number(f[2]);
        auto gpus = Integer(f[3]);
        if (!submit || !duration || !gpus) {
          skip("submission_time, duration and num_gpu must be numbers");
          continue;
        }
        j.id = std::string(Trim(f[0]));
        j.submit = *submit;
        j.duration = *duration;
        j.gpus = *gpus;
        break;
      }
      case TraceFormat::kTiresias: {
        if (f.size() != 7) {
          skip(fmt::format("expected 7 fields, got {}", f.size()));
          continue;
        }
        auto gpus = Integer(f[1]);
        auto submit = Number(f[2]);
        auto duration = Number(f[5]);
        if (!gpus || !submit || !duration) {
          skip("num_gpu, submit_time and duration must be numbers");
          continue;
        }
        j.id = std::string(Trim(f[0]));
        j.gpus = *gpus;
        j.submit = *submit;
        j.duration = *duration;
        j.user = std::string(Trim(f[4]));  // the model name: the closest thing to an owner
        break;
      }
      case TraceFormat::kCohort: {
        if (f.size() != cohort_fields) {
          skip(fmt::format("expected {} fields, got {}", cohort_fields, f.size()));
          continue;
        }
        auto submit = Number(f[1]);
        auto duration = Number(f[2]);
        auto gpus = Integer(f[3]);
        auto priority = Trim(f[6]).empty() ? std::optional<int>(0) : Integer(f[6]);
        if (!submit || !duration || !gpus || !priority) {
          skip("submit, duration, gpus and priority must be numbers");
          continue;
        }
        j.id = std::string(Trim(f[0]));
        j.submit = *submit;
        j.duration = *duration;
        j.gpus = *gpus;
        j.team = std::string(Trim(f[4]));
        j.user = std::string(Trim(f[5]));
        j.priority = *priority;
        if (!Trim(f[7]).empty()) {
          auto max = Number(f[7]);
          if (!max || *max <= 0) {
            skip("max_runtime must be a positive number of seconds");
            continue;
          }
          j.max_runtime = *max;
        }
        if (!Trim(f[8]).empty() || !Trim(f[9]).empty()) {
          auto lo = Integer(f[8]);
          auto hi = Integer(f[9]);
          if (!lo || !hi || *lo < 1 || *hi < *lo) {
            skip("min_gpus and max_gpus must be integers with 1 <= min_gpus <= max_gpus");
            continue;
          }
          j.min_gpus = *lo;
          j.max_gpus = *hi;
        }
        if (cohort_fields == 11 && !Trim(f[10]).empty()) {
          auto shape = ParseSweepShape(f[10]);
          if (!shape.ok()) {
            skip(shape.status().message());
            continue;
          }
          if (j.min_gpus > 0) {
            skip("sweep: its trials cannot be elastic (min_gpus, max_gpus)");
            continue;
          }
          j.sweep = *shape;
        }
        break;
      }
    }
    std::string problem = Check(j);
    if (!problem.empty()) {
      skip(problem);
      continue;
    }
    trace.jobs.push_back(std::move(j));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return trace;
}

std::string WriteCohortTrace(const std::vector<TraceJob>& jobs) {
  bool sweeps = std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& j) { return j.sweep; });
  std::string out = std::string(sweeps ? kCohortSweepHeader : kCohortHeader) + "\n";
  for (const auto& j : jobs) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}", j.id, j.submit, j.duration, j.gpus, j.team,
                       j.user, j.priority, j.max_runtime ? fmt::format("{}", *j.max_runtime) : "",
                       j.min_gpus ? std::to_string(j.min_gpus) : "",
                       j.max_gpus ? std::to_string(j.max_gpus) : "");
    if (sweeps) out += "," + (j.sweep ? FormatSweepShape(*j.sweep) : std::string());
    out += "\n";
  }
  return out;
}

}  // namespace cohort::sim
