// The simulator's trace loader (sim/trace.h) on every format it reads: ITP 2021, Tiresias and
// Cohort's CSV, detected from the header or named. A bad row is skipped with a reason, never a
// crash; every job it keeps is one the simulator can run; and a trace written back in Cohort's
// format reads back as the same jobs.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sim/trace.h"

namespace cohort::sim {
namespace {

void CheckJob(const TraceJob& j) {
  FUZZ_CHECK(!j.id.empty());
  FUZZ_CHECK(std::isfinite(j.submit) && j.submit >= 0);
  FUZZ_CHECK(std::isfinite(j.duration) && j.duration > 0);
  FUZZ_CHECK(j.gpus >= 0);
  if (j.max_runtime) FUZZ_CHECK(std::isfinite(*j.max_runtime) && *j.max_runtime > 0);
  if (j.min_gpus != 0) FUZZ_CHECK(j.min_gpus >= 1 && j.min_gpus <= j.max_gpus);
}

void Check(const Trace& trace) {
  FUZZ_CHECK(trace.jobs.size() + trace.skipped.size() == trace.rows);
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    CheckJob(trace.jobs[i]);
    if (i > 0) FUZZ_CHECK(trace.jobs[i - 1].submit <= trace.jobs[i].submit);
  }
  std::string written = WriteCohortTrace(trace.jobs);
  auto again = ParseTrace(written, TraceFormat::kCohort, "written");
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->skipped.empty());
  FUZZ_CHECK(again->jobs.size() == trace.jobs.size());
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    const TraceJob& a = trace.jobs[i];
    const TraceJob& b = again->jobs[i];
    FUZZ_CHECK(a.id == b.id && a.team == b.team && a.user == b.user && a.submit == b.submit &&
               a.duration == b.duration && a.gpus == b.gpus && a.priority == b.priority &&
               a.max_runtime == b.max_runtime && a.min_gpus == b.min_gpus &&
               a.max_gpus == b.max_gpus);
  }
}

}  // namespace
}  // namespace cohort::sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cohort::sim::TraceFormat;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (std::optional<TraceFormat> format :
       {std::optional<TraceFormat>(), std::optional(TraceFormat::kItp),
        std::optional(TraceFormat::kTiresias), std::optional(TraceFormat::kCohort)}) {
    auto trace = cohort::sim::ParseTrace(text, format, "fuzz");
    if (trace.ok()) cohort::sim::Check(*trace);
  }
  return 0;
}
