// The `session` section of a job spec (docs/runtimes.md, "Shells"): the job is an interactive
// session on GPUs rather than a program that runs to its end. Its one task runs what Cohort
// starts for the kind (a shell for `cohort shell`, Jupyter for `cohort notebook`), which people
// reach through the master, and
// it ends when they leave it, or when its GPUs have been idle with no input for its idle
// timeout. `cohort shell` fills it in; a person rarely writes one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"

namespace cohort {

// A shell (`cohort shell`: the agent's terminal server) or a notebook (`cohort notebook`:
// Jupyter, reached through the master's proxy).
enum class SessionKind { kShell, kNotebook };

std::string_view SessionKindName(SessionKind kind);
// "shell", "notebook"; nothing for another name.
std::optional<SessionKind> ParseSessionKind(std::string_view name);

// The longest idle timeout a spec may ask for; a cluster's own maximum
// (`cohortd master --max-idle-timeout`) is usually shorter, and the master refuses more.
inline constexpr Duration kMaxSessionIdleTimeout = std::chrono::hours(24 * 7);

struct SessionSpec {
  SessionKind kind = SessionKind::kShell;
  // How long its GPUs may be idle with no input before it is warned and ended; none: the
  // cluster's maximum.
  std::optional<Duration> idle_timeout = {};
  bool operator==(const SessionSpec&) const = default;
};

// Reads the section at "session", appending "session.FIELD: reason" for each problem to
// `errors`. Unknown fields are errors.
SessionSpec ParseSessionSection(const nlohmann::json& v, std::vector<std::string>& errors);
// The canonical form, which ParseSessionSection reads back as it was.
nlohmann::json ToJson(const SessionSpec& session);

}  // namespace cohort
