// Bearer tokens: how they look, how they are made, how a presented one is checked against what
// the master stored (docs/security.md, "Tokens").
//
// A token is "coh_" + a 16-hex-digit id + "_" + 43 characters of base64url (256 random bits):
//   coh_3f2a9c0d11e4b7a2_Qm9yZWQ...
// The id is public (lists and revocations name it) and finds the record; the master keeps only
// the SHA-256 of the whole token, so its database and backups cannot be replayed as tokens. With
// 256 random bits a plain hash is enough: there is nothing to guess that a salt would protect.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::auth {

inline constexpr std::string_view kTokenPrefix = "coh_";
inline constexpr size_t kTokenIdLength = 16;
inline constexpr size_t kTokenSecretLength = 43;
inline constexpr size_t kTokenLength =
    kTokenPrefix.size() + kTokenIdLength + 1 + kTokenSecretLength;

struct MintedToken {
  std::string id;
  std::string token;  // shown once, never stored
  std::string hash;
};

// A new token from the operating system's random source (OpenSSL's RAND_bytes). kInternal if it
// has none to give.
StatusOr<MintedToken> MintToken();
// The same shape under another prefix, for secrets that are not API tokens (the dashboard's
// sign-in codes and sessions, auth/sign_in_codes.h, auth/sessions.h): `prefix` + id + "_" +
// 43 characters of base64url.
StatusOr<MintedToken> MintSecret(std::string_view prefix);
// The id of a secret of MintSecret's shape with this prefix; nullopt for any other shape.
std::optional<std::string> SecretId(std::string_view secret, std::string_view prefix);

// The id of `token`, or InvalidArgument saying what is wrong with its shape (never quoting it:
// a mistyped token is still mostly a secret).
StatusOr<std::string> TokenId(std::string_view token);

// Hex SHA-256 of `token`.
std::string HashToken(std::string_view token);

// Whether `token` hashes to `hash`, in time that does not depend on where they differ.
bool TokenMatches(std::string_view token, std::string_view hash);

// The token of an "Authorization: Bearer <token>" header value; InvalidArgument for another
// scheme or an empty one.
StatusOr<std::string_view> BearerToken(std::string_view authorization);

}  // namespace cohort::auth
