// The JSON codecs of the agent protocol (model/agent_protocol.h, model/json.h) on documents
// from the network: the registration an agent sends, its sync report, the desired state the
// master answers, task ids, and the error bodies the clients read (client::StatusFromErrorBody).
// Decoders never throw or crash; what one accepts encodes to a document it accepts again, to
// the same value.
#include <cstdint>
#include <string_view>

#include "client/cohort_client.h"
#include "fuzz/fuzz_check.h"
#include "model/json.h"

namespace cohort {
namespace {

// decode(doc) accepted => decode(encode(decode(doc))) is accepted and encodes the same.
template <typename Decode>
void RoundTrip(const Json& doc, Decode decode) {
  auto value = decode(doc);
  if (!value.ok()) {
    FUZZ_CHECK(value.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  Json encoded = ToJson(*value);
  auto again = decode(encoded);
  if (!again.ok()) std::fprintf(stderr, "%s\n", again.status().ToString().c_str());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(ToJson(*again) == encoded);
}

void Decode(const Json& doc) {
  RoundTrip(doc, NodeInfoFromJson);
  RoundTrip(doc, AgentReportFromJson);
  RoundTrip(doc, DesiredStateFromJson);
  RoundTrip(doc, TaskIdFromJson);
  RoundTrip(doc, TaskLaunchFromJson);
  RoundTrip(doc, TaskReportFromJson);
  RoundTrip(doc, JobEventFromJson);
  RoundTrip(doc, JobFromJson);
  // The register answer carries the desired state under "desired".
  if (doc.is_object() && doc.contains("desired")) RoundTrip(doc["desired"], DesiredStateFromJson);
}

}  // namespace
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (int status : {400, 404, 409, 500}) {
    cohort::Status s = cohort::client::StatusFromErrorBody(status, text);
    FUZZ_CHECK(!s.ok());
  }
  auto doc = cohort::ParseJson(text);
  if (doc.ok()) cohort::Decode(*doc);
  return 0;
}
