#include "tls/openssl.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cohort::tls {

std::string TakeErrors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    // "error:0480006C:PEM routines::no start line": the reason is the part people can read.
    std::string text = buf;
    size_t colon = text.rfind(':');
    if (colon != std::string::npos && colon + 1 < text.size()) text = text.substr(colon + 1);
    out += (out.empty() ? "" : "; ") + text;
  }
  return out.empty() ? "unknown error" : out;
}

Status CheckReadable(const std::string& path, std::string_view what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::NotFound(
        fmt::format("{} {}: cannot read it: {}", what, path, std::strerror(errno)));
  }
  ::close(fd);
  return Status::Ok();
}

X509Ptr ReadCertificate(const std::string& path) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return nullptr;
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PkeyPtr ReadPrivateKey(const std::string& path) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return nullptr;
  // An empty passphrase: an encrypted key fails here instead of prompting on the terminal.
  return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, const_cast<char*>("")));
}

std::string SubjectAltNames(X509* cert) {
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return "";
  GeneralNamesPtr owned(names);
  std::string out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    BioPtr bio(BIO_new(BIO_s_mem()));
    GENERAL_NAME_print(bio.get(), name);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    if (n <= 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(data, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace cohort::tls
