#include "auth/token.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>

namespace cohort::auth {
namespace {

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

bool IsHexDigit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool IsBase64Url(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

// 32 bytes as 43 base64url characters, without padding.
std::string Base64Url(const std::array<unsigned char, 32>& bytes) {
  std::string out;
  uint32_t bits = 0;
  int nbits = 0;
  for (unsigned char b : bytes) {
    bits = (bits << 8) | b;
    nbits += 8;
    while (nbits >= 6) {
      nbits -= 6;
      out += kBase64Url[(bits >> nbits) & 0x3f];
    }
  }
  if (nbits > 0) out += kBase64Url[(bits << (6 - nbits)) & 0x3f];
  return out;
}

}  // namespace

StatusOr<MintedToken> MintToken() { return MintSecret(kTokenPrefix); }

StatusOr<MintedToken> MintSecret(std::string_view prefix) {
  std::array<unsigned char, kTokenIdLength / 2> id_bytes{};
  std::array<unsigned char, 32> secret{};
  if (RAND_bytes(id_bytes.data(), static_cast<int>(id_bytes.size())) != 1 ||
      RAND_bytes(secret.data(), static_cast<int>(secret.size())) != 1) {
    return Status::Internal("the random number generator failed; cannot make a token");
  }
  MintedToken minted;
  minted.id = Hex(id_bytes.data(), id_bytes.size());
  minted.token = fmt::format("{}{}_{}", prefix, minted.id, Base64Url(secret));
  minted.hash = HashToken(minted.token);
  return minted;
}

StatusOr<std::string> TokenId(std::string_view token) {
  auto malformed = [](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "the token is malformed ({}); a Cohort token looks like coh_<16 hex digits>_<43 "
        "characters>: check that it was copied whole",
        why));
  };
  if (!token.starts_with(kTokenPrefix)) return malformed("it does not start with coh_");
  if (token.size() != kTokenLength) {
    return malformed(fmt::format("it has {} characters, not {}", token.size(), kTokenLength));
  }
  std::string_view id = token.substr(kTokenPrefix.size(), kTokenIdLength);
  for (char c : id) {
    if (!IsHexDigit(c)) return malformed("its id is not lowercase hex");
  }
  if (token[kTokenPrefix.size() + kTokenIdLength] != '_') return malformed("no '_' after its id");
  for (char c : token.substr(kTokenPrefix.size() + kTokenIdLength + 1)) {
    if (!IsBase64Url(c)) return malformed("its secret is not base64url");
  }
  return std::string(id);
}

std::optional<std::string> SecretId(std::string_view secret, std::string_view prefix) {
  const size_t length = prefix.size() + kTokenIdLength + 1 + kTokenSecretLength;
  if (!secret.starts_with(prefix) || secret.size() != length) return std::nullopt;
  std::string_view id = secret.substr(prefix.size(), kTokenIdLength);
  if (!std::all_of(id.begin(), id.end(), IsHexDigit)) return std::nullopt;
  if (secret[prefix.size() + kTokenIdLength] != '_') return std::nullopt;
  std::string_view rest = secret.substr(prefix.size() + kTokenIdLength + 1);
  if (!std::all_of(rest.begin(), rest.end(), IsBase64Url)) return std::nullopt;
  return std::string(id);
}

std::string HashToken(std::string_view token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  // EVP_Digest with SHA-256 fails only if OpenSSL itself is broken; an empty hash then matches
  // nothing, as TokenMatches refuses hashes of the wrong length.
  if (EVP_Digest(token.data(), token.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    return {};
  }
  return Hex(digest.data(), size);
}

bool TokenMatches(std::string_view token, std::string_view hash) {
  std::string actual = HashToken(token);
  if (actual.size() != 64 || hash.size() != actual.size()) return false;
  return CRYPTO_memcmp(actual.data(), hash.data(), actual.size()) == 0;
}

StatusOr<std::string_view> BearerToken(std::string_view authorization) {
  // RFC 7235: the scheme is case-insensitive; one or more spaces before the credentials.
  constexpr std::string_view kScheme = "bearer";
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  bool bearer = authorization.size() > kScheme.size() && authorization[kScheme.size()] == ' ';
  for (size_t i = 0; bearer && i < kScheme.size(); ++i) {
    bearer = lower(authorization[i]) == kScheme[i];
  }
  if (!bearer) {
    return Status::InvalidArgument(
        "Authorization: only \"Bearer <token>\" is accepted; get a token with `cohort token "
        "create` (or from your admin) and log in with `cohort login`");
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return Status::InvalidArgument("Authorization: the bearer token is empty");
  return token;
}

}  // namespace cohort::auth
