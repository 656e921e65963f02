// The job-spec parser (model/job_spec_parser.h) on YAML and JSON text as people and clients
// send it to POST /api/v1/jobs. It never throws or crashes, and a spec it accepts survives its
// canonical JSON form: ParseJobSpecJson(ToJson(s)) gives s back.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "model/job_spec_parser.h"
#include "model/json.h"

namespace cohort {
namespace {

void RoundTrip(const JobSpec& spec) {
  Json canonical = ToJson(spec);
  auto again = ParseJobSpecJson(canonical);
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n%s\n", canonical.dump().c_str(), again.status().ToString().c_str());
  }
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(ToJson(*again) == canonical);
  // The canonical form is also a valid spec as text, as `cohort submit` would send it.
  auto from_text = ParseJobSpec(canonical.dump());
  FUZZ_CHECK(from_text.ok());
  FUZZ_CHECK(ToJson(*from_text) == canonical);
}

}  // namespace
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = cohort::ParseJobSpec(text);
  if (spec.ok()) {
    cohort::RoundTrip(*spec);
  } else {
    FUZZ_CHECK(!spec.status().message().empty());
  }
  // With a base directory, a relative workdir is resolved instead of refused.
  auto file = cohort::ParseJobSpecFile(text, "job.yaml", "/home/ada/project");
  if (file.ok()) cohort::RoundTrip(*file);
  // The JSON path of the same text, as the API and the state store decode a document.
  if (auto doc = cohort::ParseJson(text); doc.ok()) {
    auto from_json = cohort::ParseJobSpecJson(*doc);
    if (from_json.ok()) cohort::RoundTrip(*from_json);
  }
  return 0;
}
