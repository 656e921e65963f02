#include "common/status.h"

namespace cohort {

const char* StatusCodeName(StatusCode code) { return NameOf(kStatusCodeNames, code, "unknown"); }

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = std::string(StatusCodeName(code_)) + ": " + message_;
  for (const auto& d : details_) s += "\n  " + d;
  return s;
}

}  // namespace cohort
