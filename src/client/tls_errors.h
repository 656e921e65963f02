// What a failed TLS handshake with the master means, in words that say what to do.
#pragma once

#include <boost/system/error_code.hpp>
#include <string>

#include "common/status.h"

namespace cohort::client {

// kUnavailable "certificate verify failed for URL: REASON; WHAT TO DO" when OpenSSL's verify
// result (`verify_result`, X509_V_OK if the certificate was not the problem) is set, else "TLS
// handshake with URL failed: ..." from `ec`. `host` is the name or address connected to,
// `names` the certificate's subjectAltNames when they did not match it, `ca_file` the CA file
// trusted ("" for the system's CAs).
Status HandshakeFailure(const std::string& url, const boost::system::error_code& ec,
                        long verify_result, const std::string& host, const std::string& names,
                        const std::string& ca_file);

}  // namespace cohort::client
