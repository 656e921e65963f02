// Environment secrets (docs/security.md, "Environment secrets"): values that a job spec names
// (`env: {WANDB_API_KEY: {secret: wandb}}`) and the master keeps per user or per team. A spec
// holds the name only; the value goes into the environment of the tasks that name it, and
// nowhere else the API shows.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"

namespace cohort {

// Whose a secret is: one user's own, or a team's (shared by the jobs of its members).
enum class SecretScope { kUser, kTeam };
inline constexpr auto kSecretScopeNames = std::to_array<EnumName<SecretScope>>({
    {SecretScope::kUser, "user"},
    {SecretScope::kTeam, "team"},
});
const char* SecretScopeName(SecretScope scope);
std::optional<SecretScope> ParseSecretScope(std::string_view name);

// A value is an environment variable's: well within execve(2)'s 128 KiB a string.
inline constexpr size_t kMaxSecretValueBytes = 64 * 1024;
// Every secret is held in the master's memory: one owner cannot make it hold more than
// kMaxSecretsPerOwner * kMaxSecretValueBytes (16 MiB).
inline constexpr size_t kMaxSecretsPerOwner = 256;
inline constexpr size_t kMaxSecretNameLength = 64;

struct Secret {
  SecretScope scope = SecretScope::kUser;
  std::string owner;  // the user or the team
  std::string name;
  std::string value;
  Timestamp updated_at;
};

// [A-Za-z0-9][A-Za-z0-9._-]{0,63}: it names the secret in URLs and specs. InvalidArgument naming
// `field` otherwise.
Status ValidateSecretName(std::string_view name, std::string_view field = "name");
// 1 byte to kMaxSecretValueBytes of UTF-8 without NUL (what an environment variable and the
// JSON it travels in can carry). The message never quotes the value.
Status ValidateSecretValue(std::string_view value, std::string_view field = "value");

}  // namespace cohort
