#include "auth/job_credential.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace cohort::auth {

StatusOr<std::string> MintJobCredentialKey() {
  std::string key(kJobCredentialKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return Status::Internal("the random source gave no bytes for the job credential key");
  }
  return key;
}

std::string JobCredential(std::string_view key, JobId job, int attempt) {
  COHORT_CHECK(key.size() == kJobCredentialKeyBytes);
  // Named, so that the key could sign something else one day without the two meaning the same.
  std::string message = fmt::format("cohort job credential\n{}\n{}", job, attempt);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  COHORT_CHECK(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                    reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
                    &length) != nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", mac[i]);
  return hex;
}

bool CredentialMatches(std::string_view presented, std::string_view expected) {
  return presented.size() == expected.size() &&
         CRYPTO_memcmp(presented.data(), expected.data(), expected.size()) == 0;
}

}  // namespace cohort::auth
