// The sweep-spec parser (sweep/sweep_spec.h) on YAML and JSON text as people and clients send
// it. It never throws or crashes; a spec it accepts survives its canonical JSON form; and every
// trial its searcher makes, and every trial after a restore from the searcher's state, is a
// valid job spec (TrialSpec fails only for values outside the space).
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "model/json.h"
#include "sweep/searcher.h"
#include "sweep/sweep_spec.h"

namespace cohort::sweep {
namespace {

void Check(const SweepSpec& spec) {
  Json canonical = ToJson(spec);
  auto again = ParseSweepSpecJson(canonical);
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n%s\n", canonical.dump().c_str(), again.status().ToString().c_str());
  }
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == spec);
  FUZZ_CHECK(ToJson(*again) == canonical);

  auto searcher = MakeSearcher(spec);
  FUZZ_CHECK(searcher.ok());
  // A few trials, each observed at each rung's time, then the rest from a restored searcher.
  const std::vector<double> rungs = RungTimes(spec.searcher);
  for (int trial = 1; trial <= 3; ++trial) {
    auto values = (*searcher)->NextTrial();
    if (!values) break;
    auto job = TrialSpec(spec, trial, *values);
    if (!job.ok()) {
      std::fprintf(stderr, "%s\n%s\n", values->dump().c_str(), job.status().ToString().c_str());
    }
    FUZZ_CHECK(job.ok());
    for (double time : rungs) (*searcher)->Observe(trial, time, trial * 0.5);
  }
  Json state = (*searcher)->State();
  auto restored = MakeSearcher(spec, &state);
  FUZZ_CHECK(restored.ok());
  FUZZ_CHECK((*restored)->State() == state);
  FUZZ_CHECK((*restored)->NextTrial() == (*searcher)->NextTrial());
}

}  // namespace
}  // namespace cohort::sweep

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = cohort::sweep::ParseSweepSpec(text);
  if (spec.ok()) {
    cohort::sweep::Check(*spec);
  } else {
    FUZZ_CHECK(!spec.status().message().empty());
  }
  auto file = cohort::sweep::ParseSweepSpecFile(text, "sweep.yaml", "/home/ada/project");
  if (file.ok()) cohort::sweep::Check(*file);
  return 0;
}
