#include "client/tls_errors.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl/error.hpp>

namespace cohort::client {
namespace {

std::string VerifyProblem(long result, const std::string& host, const std::string& names,
                          const std::string& ca_file) {
  switch (result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
      return fmt::format("unknown CA{}; pass --ca-file with the cluster's CA (cohortd cert ca)",
                         ca_file.empty() ? " (not one of the system's)"
                                         : fmt::format(" (not the one in {})", ca_file));
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return fmt::format(
          "the certificate is not for {} (it names {}); connect by one of those, or give the "
          "master a certificate that names {} (cohortd cert issue --host)",
          host, names.empty() ? "no host" : names, host);
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return "the master's certificate has expired; issue it a new one (cohortd cert issue)";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "the master's certificate is not valid yet; is this machine's clock right?";
    default:
      return X509_verify_cert_error_string(result);
  }
}

}  // namespace

Status HandshakeFailure(const std::string& url, const boost::system::error_code& ec,
                        long verify_result, const std::string& host, const std::string& names,
                        const std::string& ca_file) {
  if (verify_result != X509_V_OK) {
    return Status::Unavailable(fmt::format("certificate verify failed for {}: {}", url,
                                           VerifyProblem(verify_result, host, names, ca_file)));
  }
  std::string reason = ec.message();
  // What a plain-HTTP answer to a ClientHello looks like to OpenSSL.
  if (ec.category() == boost::asio::error::get_ssl_category() &&
      ERR_GET_LIB(static_cast<unsigned long>(ec.value())) == ERR_LIB_SSL &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER) {
    return Status::Unavailable(fmt::format(
        "TLS handshake with {} failed: {}; the master there seems to serve plain HTTP (it serves "
        "HTTPS only with --tls-cert): use an http:// URL",
        url, reason));
  }
  return Status::Unavailable(fmt::format("TLS handshake with {} failed: {}", url, reason));
}

}  // namespace cohort::client
