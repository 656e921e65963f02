// OpenSSL contexts for both ends of Cohort's HTTPS: the master's (its certificate and key) and
// a client's (which CAs it trusts). Both speak TLS 1.2 or newer only.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "common/status.h"

namespace cohort::tls {

// The certificate chain (PEM: the server's certificate first, then any intermediates) and its
// private key. A missing, unreadable, expired or mismatched file is kInvalidArgument naming the
// flag and the file (--tls-cert, --tls-key).
StatusOr<std::shared_ptr<boost::asio::ssl::context>> NewServerContext(const std::string& cert_file,
                                                                      const std::string& key_file);

// Verifies servers' certificates against the CA certificates in `ca_file` (PEM), or, when it is
// empty, against the system's (OpenSSL's default verify paths). Host names are checked per
// connection, by the caller. A bad `ca_file` is kInvalidArgument naming it (--ca-file).
StatusOr<std::shared_ptr<boost::asio::ssl::context>> NewClientContext(const std::string& ca_file);

}  // namespace cohort::tls
