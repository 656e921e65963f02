// The cluster's PKI against OpenSSL itself: chains are checked with X509_verify_cert, names with
// X509_check_host and X509_check_ip_asc, key files by their mode on disk.
#include "tls/certificates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <sys/stat.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "tls/openssl.h"

namespace cohort::tls {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    char path[] = "/tmp/cohort-tls-test-XXXXXX";
    EXPECT_NE(::mkdtemp(path), nullptr);
    path_ = path;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

// X509_verify_cert of `leaf` against the CA certificate in `ca_file`, for `purpose`: the error
// OpenSSL found, X509_V_OK if the chain holds.
int Verify(X509* leaf, const std::string& ca_file, int purpose = X509_PURPOSE_SSL_SERVER) {
  StorePtr store(X509_STORE_new());
  X509Ptr ca = ReadCertificate(ca_file);
  EXPECT_TRUE(ca);
  X509_STORE_add_cert(store.get(), ca.get());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  int ok = X509_verify_cert(ctx.get());
  int error = X509_STORE_CTX_get_error(ctx.get());
  return ok == 1 ? X509_V_OK : (error == X509_V_OK ? X509_V_ERR_UNSPECIFIED : error);
}

// Days from now to the certificate's end.
int DaysLeft(X509* cert) {
  int days = 0, seconds = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(cert)), 1);
  return days;
}

bool IsP256(EVP_PKEY* key) {
  char curve[64] = {};
  size_t len = 0;
  return EVP_PKEY_get_base_id(key) == EVP_PKEY_EC &&
         EVP_PKEY_get_utf8_string_param(key, "group", curve, sizeof(curve), &len) == 1 &&
         std::string(curve) == "prime256v1";
}

TEST(CreateCa, WritesASelfSignedTenYearCaWithAPrivateKey) {
  TempDir dir;
  auto ca = CreateCa(dir / "pki", false);
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  EXPECT_EQ(ca->cert, dir / "pki/ca.crt");
  EXPECT_EQ(ca->key, dir / "pki/ca.key");
  EXPECT_EQ(Mode(ca->key), 0600u);
  EXPECT_EQ(Mode(ca->cert), 0644u);
  EXPECT_FALSE(fs::exists(dir / "pki/ca.key.tmp"));

  X509Ptr cert = ReadCertificate(ca->cert);
  PkeyPtr key = ReadPrivateKey(ca->key);
  ASSERT_TRUE(cert && key) << TakeErrors();
  EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
  EXPECT_TRUE(IsP256(key.get()));
  EXPECT_EQ(X509_check_ca(cert.get()), 1);  // basicConstraints CA:TRUE
  EXPECT_TRUE(X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN);
  EXPECT_EQ(Verify(cert.get(), ca->cert, X509_PURPOSE_ANY), X509_V_OK);
  EXPECT_NEAR(DaysLeft(cert.get()), kCaDays, 1);
}

TEST(CreateCa, RefusesToReplaceAnExistingCaUnlessForced) {
  TempDir dir;
  auto first = CreateCa(dir.path(), false);
  ASSERT_TRUE(first.ok());
  X509Ptr old_cert = ReadCertificate(first->cert);

  auto again = CreateCa(dir.path(), false);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr(dir / "ca.crt"));
  EXPECT_THAT(again.status().message(), HasSubstr("--force"));
  X509Ptr unchanged = ReadCertificate(first->cert);
  EXPECT_EQ(X509_cmp(old_cert.get(), unchanged.get()), 0);

  auto forced = CreateCa(dir.path(), true);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  X509Ptr replaced = ReadCertificate(forced->cert);
  EXPECT_NE(X509_cmp(old_cert.get(), replaced.get()), 0);
}

TEST(IssueCertificate, SignsAServerCertificateForEachHostThatTheCaVerifies) {
  TempDir dir;
  ASSERT_TRUE(CreateCa(dir / "ca", false).ok());
  auto issued = IssueCertificate(IssueRequest{
      dir / "ca", "master", {"master.example.com", "10.1.2.3", "::1", "localhost"}, dir / "out"});
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  EXPECT_EQ(issued->cert, dir / "out/master.crt");
  EXPECT_EQ(issued->key, dir / "out/master.key");
  EXPECT_EQ(Mode(issued->key), 0600u);

  X509Ptr cert = ReadCertificate(issued->cert);
  PkeyPtr key = ReadPrivateKey(issued->key);
  ASSERT_TRUE(cert && key) << TakeErrors();
  EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
  EXPECT_TRUE(IsP256(key.get()));
  EXPECT_EQ(Verify(cert.get(), dir / "ca/ca.crt", X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(Verify(cert.get(), dir / "ca/ca.crt", X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_NEAR(DaysLeft(cert.get()), kDefaultCertificateDays, 1);

  EXPECT_EQ(X509_check_host(cert.get(), "master.example.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "other.example.com", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.1.2.3", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.1.2.4", 0), 0);
  // An address is an IP entry, not a DNS name that happens to hold digits.
  EXPECT_EQ(SubjectAltNames(cert.get()),
            "DNS:master.example.com, IP Address:10.1.2.3, IP Address:0:0:0:0:0:0:0:1, "
            "DNS:localhost");
}

TEST(IssueCertificate, ACertificateOfAnotherCaDoesNotVerify) {
  TempDir dir;
  ASSERT_TRUE(CreateCa(dir / "ours", false).ok());
  ASSERT_TRUE(CreateCa(dir / "theirs", false).ok());
  auto issued = IssueCertificate(IssueRequest{dir / "theirs", "master", {"localhost"}});
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  EXPECT_EQ(issued->cert, dir / "theirs/master.crt");  // no --out: beside the CA
  X509Ptr cert = ReadCertificate(issued->cert);
  EXPECT_EQ(Verify(cert.get(), dir / "ours/ca.crt"), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST(IssueCertificate, DaysSetTheValidityAndIssuingAgainRenews) {
  TempDir dir;
  ASSERT_TRUE(CreateCa(dir.path(), false).ok());
  IssueRequest request{dir.path(), "node-1", {"node-1.local"}, "", 30};
  ASSERT_TRUE(IssueCertificate(request).ok());
  X509Ptr first = ReadCertificate(dir / "node-1.crt");
  EXPECT_NEAR(DaysLeft(first.get()), 30, 1);
  ASSERT_TRUE(IssueCertificate(request).ok());
  X509Ptr second = ReadCertificate(dir / "node-1.crt");
  EXPECT_NE(X509_cmp(first.get(), second.get()), 0);
  EXPECT_EQ(Mode(dir / "node-1.key"), 0600u);
}

TEST(IssueCertificate, BadInputNamesTheFlagAndTheReason) {
  TempDir dir;
  ASSERT_TRUE(CreateCa(dir.path(), false).ok());
  struct Case {
    IssueRequest request;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{dir.path(), "ca", {"localhost"}}, "--name: \"ca\" would overwrite the CA"},
      {{dir.path(), "../x", {"localhost"}}, "--name: \"../x\" may hold only"},
      {{dir.path(), "", {"localhost"}}, "--name: must not be empty"},
      {{dir.path(), "m", {}}, "--host: give the names"},
      {{dir.path(), "m", {"a b"}}, "--host: \"a b\" is neither an IP address nor a DNS name"},
      {{dir.path(), "m", {"-x.example"}}, "--host: \"-x.example\""},
      {{dir.path(), "m", {"localhost"}, "", 0}, "--days: 0 must lie between 1 and 3650"},
      {{dir / "none", "m", {"localhost"}},
       "--ca-dir: " +
           dir / "none/ca.crt: cannot read it: No such file or directory (create a "
                 "CA with: cohortd cert ca --dir " +
           dir / "none)"},
  };
  for (const auto& c : cases) {
    auto issued = IssueCertificate(c.request);
    ASSERT_FALSE(issued.ok()) << c.expected;
    EXPECT_THAT(issued.status().message(), HasSubstr(c.expected));
  }
  EXPECT_FALSE(fs::exists(dir / "m.key"));
}

TEST(IssueCertificate, ABrokenCaIsNamed) {
  TempDir dir;
  ASSERT_TRUE(CreateCa(dir / "a", false).ok());
  ASSERT_TRUE(CreateCa(dir / "b", false).ok());
  fs::copy_file(dir / "b/ca.key", dir / "a/ca.key", fs::copy_options::overwrite_existing);
  auto mismatched = IssueCertificate(IssueRequest{dir / "a", "m", {"localhost"}});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.status().message(),
              HasSubstr(dir / "a/ca.key is not the key of " + dir / "a/ca.crt"));

  { std::ofstream(dir / "b/ca.crt") << "not a certificate\n"; }
  auto garbage = IssueCertificate(IssueRequest{dir / "b", "m", {"localhost"}});
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr(dir / "b/ca.crt is not a PEM certificate"));
}

TEST(IsIpAddress, TellsAddressesFromNames) {
  EXPECT_TRUE(IsIpAddress("127.0.0.1"));
  EXPECT_TRUE(IsIpAddress("fe80::1"));
  EXPECT_FALSE(IsIpAddress("localhost"));
  EXPECT_FALSE(IsIpAddress("1.2.3"));
}

}  // namespace
}  // namespace cohort::tls
