#include "model/secret.h"

#include <fmt/format.h>

#include "model/json.h"

namespace cohort {

const char* SecretScopeName(SecretScope scope) { return NameOf(kSecretScopeNames, scope); }

std::optional<SecretScope> ParseSecretScope(std::string_view name) {
  return Parse(kSecretScopeNames, name);
}

Status ValidateSecretName(std::string_view name, std::string_view field) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  };
  bool ok = !name.empty() && name.size() <= kMaxSecretNameLength && name.front() != '.' &&
            name.front() != '_' && name.front() != '-';
  for (char c : name) ok = ok && allowed(c);
  if (ok) return Status::Ok();
  // A name is no secret, but it may be anything a client sent: shown as JSON, cut short.
  std::string shown(name.substr(0, 80));
  return Status::InvalidArgument(fmt::format(
      "{}: {}{} is not a secret name: use 1 to {} letters, digits, '.', '_' or '-', starting "
      "with a letter or digit",
      field, Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace),
      name.size() > shown.size() ? "..." : "", kMaxSecretNameLength));
}

Status ValidateSecretValue(std::string_view value, std::string_view field) {
  if (value.empty()) return Status::InvalidArgument(fmt::format("{}: must not be empty", field));
  if (value.size() > kMaxSecretValueBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: is {} bytes; a secret is at most {} bytes (64 KiB)", field, value.size(),
                    kMaxSecretValueBytes));
  }
  if (value.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("{}: must not contain a NUL byte (it becomes an environment variable)", field));
  }
  try {
    (void)Json(std::string(value)).dump();
  } catch (const Json::exception&) {
    // Not e.what(): it quotes the offending byte.
    return Status::InvalidArgument(fmt::format(
        "{}: is not valid UTF-8; a secret is text (encode binary keys, e.g. base64)", field));
  }
  return Status::Ok();
}

}  // namespace cohort
