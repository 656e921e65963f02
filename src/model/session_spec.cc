#include "model/session_spec.h"

#include <fmt/format.h>

#include <array>

#include "common/units.h"
#include "model/spec_fields.h"

namespace cohort {
namespace {

constexpr std::array<std::string_view, 2> kSessionFields = {"kind", "idle_timeout"};

}  // namespace

std::string_view SessionKindName(SessionKind kind) {
  switch (kind) {
    case SessionKind::kShell:
      return "shell";
    case SessionKind::kNotebook:
      return "notebook";
  }
  return "shell";
}

std::optional<SessionKind> ParseSessionKind(std::string_view name) {
  for (SessionKind kind : {SessionKind::kShell, SessionKind::kNotebook}) {
    if (SessionKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

SessionSpec ParseSessionSection(const nlohmann::json& v, std::vector<std::string>& errors) {
  SessionSpec out;
  auto error = [&](std::string_view field, std::string_view reason) {
    errors.push_back(fmt::format("session.{}: {}", field, reason));
  };
  if (!v.is_object()) {
    errors.push_back(fmt::format(
        "session: must be a mapping with kind (shell or notebook) and idle_timeout, got {}",
        DescribeSpecValue(v)));
    return out;
  }
  for (const auto& [key, value] : v.items()) {
    if (std::find(kSessionFields.begin(), kSessionFields.end(), key) == kSessionFields.end()) {
      error(key, "unknown field; " + UnknownFieldHint(key, kSessionFields));
    }
  }
  if (auto it = v.find("kind"); it == v.end()) {
    error("kind", "required field is missing: shell or notebook");
  } else if (auto kind = it->is_string() ? ParseSessionKind(it->get_ref<const std::string&>())
                                         : std::nullopt) {
    out.kind = *kind;
  } else {
    error("kind", fmt::format("must be shell or notebook, got {}", DescribeSpecValue(*it)));
  }
  if (auto it = v.find("idle_timeout"); it != v.end()) {
    StatusOr<Duration> d = it->is_string() ? ParseDuration(it->get_ref<const std::string&>())
                                           : Status::InvalidArgument("");
    if (!d.ok()) {
      error("idle_timeout",
            fmt::format("must be a duration such as 30m or 2h, got {}", DescribeSpecValue(*it)));
    } else if (*d < std::chrono::seconds(1) || *d > kMaxSessionIdleTimeout) {
      error("idle_timeout", fmt::format("must be from 1s to 7d, got {}", DescribeSpecValue(*it)));
    } else {
      // Whole seconds, which the canonical form keeps exactly.
      out.idle_timeout = std::chrono::duration_cast<std::chrono::seconds>(*d);
    }
  }
  return out;
}

nlohmann::json ToJson(const SessionSpec& session) {
  nlohmann::json doc{{"kind", SessionKindName(session.kind)}};
  if (session.idle_timeout) doc["idle_timeout"] = FormatDuration(*session.idle_timeout);
  return doc;
}

}  // namespace cohort
