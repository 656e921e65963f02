#include "tls/context.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include "tls/openssl.h"

namespace cohort::tls {
namespace {

namespace ssl = boost::asio::ssl;

std::shared_ptr<ssl::context> NewContext(ssl::context::method method) {
  auto ctx = std::make_shared<ssl::context>(method);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  return ctx;
}

// "--tls-cert /etc/cohort/master.crt: no start line".
Status Bad(std::string_view flag, const std::string& path, const std::string& why) {
  return Status::InvalidArgument(fmt::format("{} {}: {}", flag, path, why));
}

Status Readable(std::string_view flag, const std::string& path) {
  Status s = CheckReadable(path, flag);
  return s.ok() ? s : Status::InvalidArgument(s.message());
}

}  // namespace

StatusOr<std::shared_ptr<ssl::context>> NewServerContext(const std::string& cert_file,
                                                         const std::string& key_file) {
  COHORT_RETURN_IF_ERROR(Readable("--tls-cert", cert_file));
  COHORT_RETURN_IF_ERROR(Readable("--tls-key", key_file));
  auto ctx = NewContext(ssl::context::tls_server);
  // Idle connections (agents' long polls) give their read and write buffers back.
  SSL_CTX_set_mode(ctx->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    TakeErrors();
    return Bad("--tls-cert", cert_file, "not a PEM certificate: " + ec.message());
  }
  PkeyPtr key = ReadPrivateKey(key_file);
  if (!key)
    return Bad("--tls-key", key_file, "not an unencrypted PEM private key: " + TakeErrors());
  if (SSL_CTX_use_PrivateKey(ctx->native_handle(), key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    TakeErrors();
    return Bad("--tls-key", key_file,
               fmt::format("not the key of the certificate in {}", cert_file));
  }
  X509* cert = SSL_CTX_get0_certificate(ctx->native_handle());
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    return Bad("--tls-cert", cert_file,
               "the certificate has expired; issue a new one (cohortd cert issue)");
  }
  return ctx;
}

StatusOr<std::shared_ptr<ssl::context>> NewClientContext(const std::string& ca_file) {
  auto ctx = NewContext(ssl::context::tls_client);
  ctx->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return Status::Internal("cannot load the system's CA certificates: " + ec.message());
    return ctx;
  }
  COHORT_RETURN_IF_ERROR(Readable("--ca-file", ca_file));
  ctx->load_verify_file(ca_file, ec);
  if (ec) {
    TakeErrors();
    return Bad("--ca-file", ca_file, "holds no PEM certificate: " + ec.message());
  }
  return ctx;
}

}  // namespace cohort::tls
