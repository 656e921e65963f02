// A request target as the HTTP server takes it apart (api/http_server.h, api/router.h): the
// path percent-decoded, the query split and decoded, the path matched against route patterns.
// Nothing may crash, and decoding must undo encoding.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "api/http_server.h"
#include "api/router.h"
#include "common/strings.h"
#include "fuzz/fuzz_check.h"

namespace cohort::api {
namespace {

// Every pattern shape of the API's route table (api_server.cc).
constexpr std::string_view kPatterns[] = {
    "/api/v1/health",
    "/api/v1/jobs",
    "/api/v1/jobs/{id}",
    "/api/v1/jobs/{id}/kill",
    "/api/v1/teams/{name}",
    "/api/v1/agents/{node}/sync",
    "/api/v1/agents/{node}/logs/{task}",
};

std::string Encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    out += '%';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

void Decoding(std::string_view text) {
  for (bool plus_is_space : {false, true}) {
    std::string decoded = PercentDecode(text, plus_is_space);
    FUZZ_CHECK(decoded.size() <= text.size());
    if (text.find('%') == std::string_view::npos &&
        (!plus_is_space || text.find('+') == std::string_view::npos)) {
      FUZZ_CHECK(decoded == text);
    }
    FUZZ_CHECK(PercentDecode(Encode(text), plus_is_space) == text);
  }
}

void Query(std::string_view query) {
  auto params = ParseQuery(query);
  // Written back with every byte encoded, the parameters read back the same.
  std::string again;
  for (const auto& [key, value] : params) {
    if (!again.empty()) again += '&';
    again += Encode(key) + "=" + Encode(value);
  }
  FUZZ_CHECK(ParseQuery(again) == params);
}

void Match(std::string_view path) {
  for (std::string_view pattern : kPatterns) {
    auto params = MatchPath(pattern, path);
    if (!params) continue;
    // The pattern with its parameters put back is the path (less one trailing slash).
    std::string rebuilt;
    bool first = true;
    for (const std::string& segment : Split(pattern, '/')) {
      if (!first) rebuilt += '/';
      first = false;
      if (segment.size() > 2 && segment.front() == '{') {
        auto it = params->find(segment.substr(1, segment.size() - 2));
        FUZZ_CHECK(it != params->end());
        FUZZ_CHECK(!it->second.empty() && it->second.find('/') == std::string::npos);
        rebuilt += it->second;
      } else {
        rebuilt += segment;
      }
    }
    FUZZ_CHECK(rebuilt == path || rebuilt + "/" == path);
  }
}

}  // namespace
}  // namespace cohort::api

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view target(reinterpret_cast<const char*>(data), size);
  size_t q = target.find('?');
  std::string path = cohort::api::PercentDecode(target.substr(0, q), false);
  cohort::api::Decoding(target.substr(0, q));
  cohort::api::Match(path);
  if (q != std::string_view::npos) {
    cohort::api::Decoding(target.substr(q + 1));
    cohort::api::Query(target.substr(q + 1));
  }
  return 0;
}
