// The cluster's own small PKI (`cohortd cert`, `cohort up --tls`): a self-signed CA, and
// certificates it signs for the master (or anything else that serves Cohort's API). Keys are
// EC P-256; key files are written with mode 0600, every file through a temporary file and a
// rename, so that a reader never sees half of one.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace cohort::tls {

inline constexpr int kCaDays = 3650;
inline constexpr int kDefaultCertificateDays = 825;  // what browsers still accept for a server

struct CaFiles {
  std::string cert;  // DIR/ca.crt: give it to every agent and client (--ca-file)
  std::string key;   // DIR/ca.key: keep it secret; it signs certificates the cluster trusts
};

// Where CreateCa puts the CA in `dir`.
CaFiles CaFilesIn(const std::string& dir);

// Writes a new CA (CN "Cohort CA", CA:TRUE, keyCertSign) into `dir`, creating it. An existing
// ca.crt or ca.key is kAlreadyExists unless `force`: replacing the CA makes every certificate
// it signed untrusted.
StatusOr<CaFiles> CreateCa(const std::string& dir, bool force);

struct IssueRequest {
  std::string ca_dir;              // holds ca.crt and ca.key
  std::string name;                // the files' names (NAME.crt, NAME.key) and the subject's CN
  std::vector<std::string> hosts;  // DNS names or IP addresses clients connect to
  std::string out_dir = {};        // empty: ca_dir
  int days = kDefaultCertificateDays;
};

struct IssuedFiles {
  std::string cert;
  std::string key;
};

// Signs a new certificate with the CA: every host a subjectAltName (IP for an address, else
// DNS), extended key usage serverAuth and clientAuth. Overwrites an existing NAME.crt/NAME.key
// (how a certificate is renewed). Bad input is kInvalidArgument naming the field (--name,
// --host, --days); a missing or broken CA names its file.
StatusOr<IssuedFiles> IssueCertificate(const IssueRequest& request);

// Whether `host` is an IPv4 or IPv6 address (else it is treated as a DNS name).
bool IsIpAddress(const std::string& host);

}  // namespace cohort::tls
