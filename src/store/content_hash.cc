#include "store/content_hash.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

namespace cohort::store {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (!context_->md || EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) != 1) {
    status_ = Status::Internal("SHA-256 is not available from OpenSSL");
  }
}

Sha256::~Sha256() = default;

Status Sha256::Update(std::string_view bytes) {
  if (status_.ok() && EVP_DigestUpdate(context_->md, bytes.data(), bytes.size()) != 1) {
    status_ = Status::Internal("SHA-256 failed");
  }
  return status_;
}

StatusOr<std::string> Sha256::Finish() {
  COHORT_RETURN_IF_ERROR(status_);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context_->md, digest.data(), &size) != 1) {
    status_ = Status::Internal("SHA-256 failed");
    return status_;
  }
  std::string hex;
  hex.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

StatusOr<std::string> Sha256Hex(std::string_view bytes) {
  Sha256 hash;
  COHORT_RETURN_IF_ERROR(hash.Update(bytes));
  return hash.Finish();
}

StatusOr<std::string> Sha256OfFile(int fd) {
  Sha256 hash;
  std::vector<char> buffer(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(fmt::format("reading to hash: {}", strerror(errno)));
    if (n == 0) break;
    COHORT_RETURN_IF_ERROR(hash.Update({buffer.data(), static_cast<size_t>(n)}));
  }
  return hash.Finish();
}

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace cohort::store
