// Who a task runs as on its node (docs/security.md, "Tasks run as their user"): the Unix account
// of the job's user. The master names it in every TaskLaunch; an agent running as root looks the
// name up, or takes the uid and gid an admin mapped the user to, and starts the task as that
// account.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cohort {

// The largest uid or gid a task may be given: (uid_t)-1 means "leave unchanged" to setuid(2).
inline constexpr uint32_t kMaxUnixId = 4'294'967'294U;

struct RunAs {
  std::string user;  // the Unix account name: the job's user
  // An admin's mapping of the Cohort user to ids, used instead of looking `user` up; both or
  // neither.
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;

  bool operator==(const RunAs&) const = default;
};

// Why `name` cannot be looked up as a Unix account name, or nothing if it can: 1 to 32
// letters, digits, '.', '_' or '-' (and a final '$', as Samba's machine accounts have), not
// starting with '-', not all digits (it would read as a uid), not "." or "..".
std::optional<std::string> UnixAccountNameProblem(std::string_view name);

}  // namespace cohort
