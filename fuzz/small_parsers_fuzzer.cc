// The small parsers every outside string meets first: integers, job and task ids, sizes, CPU
// amounts, durations and timestamps (common/strings.h, common/units.h, common/time.h,
// model/job.h). Each input goes through all of them, and what they accept must come back
// unchanged through the matching formatter.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "auth/token.h"
#include "common/strings.h"
#include "common/time.h"
#include "common/units.h"
#include "fuzz/fuzz_check.h"
#include "model/job.h"

namespace cohort {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// ParseInteger's contract: an optional '-', then digits, nothing else, within the bounds.
void Integers(std::string_view text) {
  const std::pair<int64_t, int64_t> bounds[] = {{kMin, kMax}, {0, kMax}, {1, kMax}, {-5, 5}};
  for (auto [lo, hi] : bounds) {
    auto v = ParseInteger(text, lo, hi);
    if (!v) continue;
    FUZZ_CHECK(*v >= lo && *v <= hi);
    std::string_view digits = text.starts_with('-') ? text.substr(1) : text;
    FUZZ_CHECK(!digits.empty());
    for (char c : digits) FUZZ_CHECK(IsDigit(c));
  }
  if (auto v = ParseInt(text)) FUZZ_CHECK(ParseInteger(text, kMin, kMax) == *v);
}

void Ids(std::string_view text) {
  if (auto id = ParseJobId(text); id.ok()) {
    FUZZ_CHECK(*id >= 1);
    FUZZ_CHECK(ParseJobId(std::to_string(*id)).value() == *id);
  }
  if (auto id = ParseTaskId(text); id.ok()) {
    // The text form names a directory on the agent: it must read back as the same task.
    FUZZ_CHECK(IsValidRole(id->role));
    FUZZ_CHECK(id->job >= 1 && id->attempt >= 1 && id->index >= 0);
    auto again = ParseTaskId(id->ToString());
    FUZZ_CHECK(again.ok() && *again == *id);
  }
}

void Units(std::string_view text) {
  if (auto bytes = ParseByteSize(text); bytes.ok()) {
    FUZZ_CHECK(*bytes >= 0);
    auto again = ParseByteSize(FormatByteSize(*bytes));
    FUZZ_CHECK(again.ok() && *again == *bytes);
    FormatByteSizeApprox(*bytes);
  }
  if (auto milli = ParseMilliCpus(text); milli.ok()) {
    FUZZ_CHECK(*milli >= 0);
    auto again = ParseMilliCpus(FormatMilliCpus(*milli));
    FUZZ_CHECK(again.ok() && *again == *milli);
  }
  if (auto d = ParseDuration(text); d.ok()) {
    FUZZ_CHECK(d->count() >= 0);
    // FormatDuration shows whole milliseconds below a second and whole seconds above.
    std::string shown = FormatDuration(*d);
    auto again = ParseDuration(shown);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(*again <= *d);
  }
  if (auto t = ParseTimestamp(text); t.ok()) {
    auto again = ParseTimestamp(FormatTimestamp(*t));
    FUZZ_CHECK(again.ok() && *again == *t);
  }
}

// Tokens and Authorization headers: a token whose shape is accepted has the id it starts with,
// and never matches a hash it was not made from; a bearer header's token is a part of it.
void Tokens(std::string_view text) {
  if (auto id = auth::TokenId(text); id.ok()) {
    FUZZ_CHECK(id->size() == auth::kTokenIdLength);
    FUZZ_CHECK(text.substr(auth::kTokenPrefix.size(), auth::kTokenIdLength) == *id);
    FUZZ_CHECK(auth::TokenMatches(text, auth::HashToken(text)));
  }
  FUZZ_CHECK(!auth::TokenMatches(text, "not a hash"));
  if (auto token = auth::BearerToken(text); token.ok()) {
    FUZZ_CHECK(!token->empty() && text.find(*token) != std::string_view::npos);
  }
}

}  // namespace
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  cohort::Integers(text);
  cohort::Ids(text);
  cohort::Units(text);
  cohort::Tokens(text);
  return 0;
}
