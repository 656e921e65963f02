#include "tls/certificates.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "os/durable_file.h"
#include "tls/openssl.h"

namespace cohort::tls {
namespace {

namespace fs = std::filesystem;

// Certificates start an hour in the past: a machine whose clock is a little behind the one that
// issued them must not find them "not yet valid".
constexpr long kBackdateSeconds = 3600;

Status OpensslFailure(std::string_view doing) {
  return Status::Internal(fmt::format("{}: {}", doing, TakeErrors()));
}

StatusOr<PkeyPtr> NewKey() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return OpensslFailure("generating an EC P-256 key");
  return key;
}

// A random positive 127-bit serial: certificates of one CA must not share one, and a CA made
// again with --force must not repeat the old one's.
Status SetRandomSerial(X509* cert) {
  std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>> serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert))) {
    return OpensslFailure("making a serial number");
  }
  return Status::Ok();
}

Status SetCommonName(X509_NAME* name, const std::string& cn) {
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1) {
    return OpensslFailure("setting the certificate's name");
  }
  return Status::Ok();
}

// A certificate for `key`, valid for `days` from an hour ago, not yet signed or extended.
StatusOr<X509Ptr> NewCertificate(EVP_PKEY* key, const std::string& cn, int days) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      !X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) ||
      !X509_time_adj_ex(X509_getm_notAfter(cert.get()), days, 0, nullptr) ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpensslFailure("making a certificate");
  }
  COHORT_RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  COHORT_RETURN_IF_ERROR(SetCommonName(X509_get_subject_name(cert.get()), cn));
  return cert;
}

// Adds an extension written as OpenSSL's configuration files write it ("critical,CA:TRUE").
Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtensionPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpensslFailure(fmt::format("adding the extension {}", OBJ_nid2sn(nid)));
  }
  return Status::Ok();
}

Status AddSubjectAltNames(X509* cert, const std::vector<std::string>& hosts) {
  GeneralNamesPtr names(sk_GENERAL_NAME_new_null());
  if (!names) return OpensslFailure("listing the certificate's hosts");
  for (const auto& host : hosts) {
    GENERAL_NAME* name = GENERAL_NAME_new();
    if (!name) return OpensslFailure("listing the certificate's hosts");
    if (IsIpAddress(host)) {
      ASN1_OCTET_STRING* ip = a2i_IPADDRESS(host.c_str());
      if (!ip) {
        GENERAL_NAME_free(name);
        return OpensslFailure(fmt::format("encoding the address {}", host));
      }
      GENERAL_NAME_set0_value(name, GEN_IPADD, ip);
    } else {
      ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
      if (!dns || ASN1_STRING_set(dns, host.data(), static_cast<int>(host.size())) != 1) {
        ASN1_IA5STRING_free(dns);
        GENERAL_NAME_free(name);
        return OpensslFailure(fmt::format("encoding the name {}", host));
      }
      GENERAL_NAME_set0_value(name, GEN_DNS, dns);
    }
    sk_GENERAL_NAME_push(names.get(), name);
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1) {
    return OpensslFailure("adding the subjectAltName extension");
  }
  return Status::Ok();
}

Status Sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) <= 0) return OpensslFailure("signing the certificate");
  return Status::Ok();
}

StatusOr<std::string> ToPem(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) return OpensslFailure("writing PEM");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

StatusOr<std::string> CertificatePem(X509* cert) {
  return ToPem([cert](BIO* bio) { return PEM_write_bio_X509(bio, cert); });
}

StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  return ToPem([key](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

Status MakeDirectory(const std::string& dir, std::string_view flag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot create {}: {}", flag, dir, ec.message()));
  }
  return Status::Ok();
}

bool IsDnsName(const std::string& host) {
  std::string_view rest = host;
  if (rest.starts_with("*.")) rest.remove_prefix(2);  // one wildcard label, leftmost only
  if (rest.empty() || host.size() > 253) return false;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find('.', start);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view label = rest.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    start = end + 1;
  }
  return true;
}

Status CheckName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("--name: must not be empty");
  if (name.size() > 64) {
    return Status::InvalidArgument(
        fmt::format("--name: \"{}\" is longer than 64 characters", name));
  }
  if (name.front() == '.' || name.front() == '-' ||
      !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
      })) {
    return Status::InvalidArgument(fmt::format(
        "--name: \"{}\" may hold only letters, digits, '.', '-' and '_' (it names the files), "
        "and not start with '.' or '-'",
        name));
  }
  if (name == "ca") {
    return Status::InvalidArgument(
        "--name: \"ca\" would overwrite the CA's own files; choose another, e.g. master");
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> CheckHosts(const std::vector<std::string>& hosts) {
  std::vector<std::string> out;
  for (const auto& host : hosts) {
    if (!IsIpAddress(host) && !IsDnsName(host)) {
      return Status::InvalidArgument(fmt::format(
          "--host: \"{}\" is neither an IP address nor a DNS name (letters, digits and '-' in "
          "dot-separated labels)",
          host));
    }
    if (std::find(out.begin(), out.end(), host) == out.end()) out.push_back(host);
  }
  if (out.empty()) {
    return Status::InvalidArgument(
        "--host: give the names and addresses clients use to reach it, e.g. "
        "--host master.example.com,10.0.0.5");
  }
  return out;
}

}  // namespace

bool IsIpAddress(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

CaFiles CaFilesIn(const std::string& dir) {
  return CaFiles{(fs::path(dir) / "ca.crt").string(), (fs::path(dir) / "ca.key").string()};
}

StatusOr<CaFiles> CreateCa(const std::string& dir, bool force) {
  if (dir.empty()) return Status::InvalidArgument("--dir: must not be empty");
  CaFiles files = CaFilesIn(dir);
  for (const auto& path : {files.cert, files.key}) {
    std::error_code ec;
    if (!force && fs::exists(path, ec)) {
      return Status::AlreadyExists(
          fmt::format("{} exists already; a new CA would make every certificate the old one signed "
                      "untrusted: pass --force to replace it",
                      path));
    }
  }
  COHORT_RETURN_IF_ERROR(MakeDirectory(dir, "--dir"));
  COHORT_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  COHORT_ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(key.get(), "Cohort CA", kCaDays));
  COHORT_RETURN_IF_ERROR(X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) == 1
                             ? Status::Ok()
                             : OpensslFailure("making the CA certificate"));
  // pathlen:0: the CA signs certificates of servers and clients, never another CA.
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  COHORT_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  COHORT_RETURN_IF_ERROR(Sign(cert.get(), key.get()));
  COHORT_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  COHORT_ASSIGN_OR_RETURN(std::string cert_pem, CertificatePem(cert.get()));
  // The key first: a ca.crt never exists without the key that goes with it.
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(files.key, key_pem, 0600));
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(files.cert, cert_pem, 0644));
  return files;
}

StatusOr<IssuedFiles> IssueCertificate(const IssueRequest& request) {
  COHORT_RETURN_IF_ERROR(CheckName(request.name));
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> hosts, CheckHosts(request.hosts));
  if (request.days < 1 || request.days > kCaDays) {
    return Status::InvalidArgument(fmt::format(
        "--days: {} must lie between 1 and {} (the CA's own lifetime)", request.days, kCaDays));
  }
  CaFiles ca = CaFilesIn(request.ca_dir);
  for (const auto& path : {ca.cert, ca.key}) {
    Status readable = CheckReadable(path, "--ca-dir:");
    if (!readable.ok()) {
      return Status(readable.code(), fmt::format("{} (create a CA with: cohortd cert ca --dir {})",
                                                 readable.message(), request.ca_dir));
    }
  }
  X509Ptr ca_cert = ReadCertificate(ca.cert);
  if (!ca_cert) {
    return Status::InvalidArgument(
        fmt::format("--ca-dir: {} is not a PEM certificate: {}", ca.cert, TakeErrors()));
  }
  if (X509_check_ca(ca_cert.get()) == 0) {
    return Status::InvalidArgument(
        fmt::format("--ca-dir: {} is not a CA certificate (no basicConstraints CA:TRUE)", ca.cert));
  }
  PkeyPtr ca_key = ReadPrivateKey(ca.key);
  if (!ca_key) {
    return Status::InvalidArgument(fmt::format(
        "--ca-dir: {} is not an unencrypted PEM private key: {}", ca.key, TakeErrors()));
  }
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    TakeErrors();
    return Status::InvalidArgument(
        fmt::format("--ca-dir: {} is not the key of {}", ca.key, ca.cert));
  }

  std::string out_dir = request.out_dir.empty() ? request.ca_dir : request.out_dir;
  COHORT_RETURN_IF_ERROR(MakeDirectory(out_dir, "--out"));
  COHORT_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  COHORT_ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(key.get(), request.name, request.days));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) != 1) {
    return OpensslFailure("making the certificate");
  }
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature"));
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth"));
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_subject_key_identifier, "hash"));
  COHORT_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always"));
  COHORT_RETURN_IF_ERROR(AddSubjectAltNames(cert.get(), hosts));
  COHORT_RETURN_IF_ERROR(Sign(cert.get(), ca_key.get()));

  IssuedFiles files{(fs::path(out_dir) / (request.name + ".crt")).string(),
                    (fs::path(out_dir) / (request.name + ".key")).string()};
  COHORT_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  COHORT_ASSIGN_OR_RETURN(std::string cert_pem, CertificatePem(cert.get()));
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(files.key, key_pem, 0600));
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(files.cert, cert_pem, 0644));
  return files;
}

}  // namespace cohort::tls
