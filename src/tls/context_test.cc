// What the master and clients say when their certificate files are wrong: the flag, the file
// and the reason, before any connection is made.
#include "tls/context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tls/certificates.h"
#include "tls/openssl.h"

namespace cohort::tls {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/cohort-tls-context-XXXXXX";
    ASSERT_NE(::mkdtemp(path), nullptr);
    dir_ = path;
    ASSERT_TRUE(CreateCa(dir_, false).ok());
    ASSERT_TRUE(IssueCertificate(IssueRequest{dir_, "master", {"localhost"}}).ok());
    ASSERT_TRUE(IssueCertificate(IssueRequest{dir_, "other", {"localhost"}}).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(ContextTest, AServerContextTakesAMatchingCertificateAndKeyAndOnlyTls12AndUp) {
  auto ctx = NewServerContext(File("master.crt"), File("master.key"));
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(SSL_CTX_get_min_proto_version((*ctx)->native_handle()), TLS1_2_VERSION);
  EXPECT_NE(SSL_CTX_get0_certificate((*ctx)->native_handle()), nullptr);
}

TEST_F(ContextTest, ServerFileErrorsNameTheFlagAndTheFile) {
  { std::ofstream(File("garbage.pem")) << "hello\n"; }
  struct Case {
    std::string cert, key, expected;
  };
  std::vector<Case> cases = {
      {File("none.crt"), File("master.key"),
       "--tls-cert " + File("none.crt") + ": cannot read it: No such file or directory"},
      {File("master.crt"), File("none.key"),
       "--tls-key " + File("none.key") + ": cannot read it: No such file or directory"},
      {File("garbage.pem"), File("master.key"),
       "--tls-cert " + File("garbage.pem") + ": not a PEM certificate"},
      {File("master.crt"), File("garbage.pem"),
       "--tls-key " + File("garbage.pem") + ": not an unencrypted PEM private key"},
      {File("master.crt"), File("other.key"),
       "--tls-key " + File("other.key") + ": not the key of the certificate in " +
           File("master.crt")},
  };
  for (const auto& c : cases) {
    auto ctx = NewServerContext(c.cert, c.key);
    ASSERT_FALSE(ctx.ok()) << c.expected;
    EXPECT_EQ(ctx.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(ctx.status().message(), HasSubstr(c.expected));
  }
}

TEST_F(ContextTest, AnExpiredCertificateIsRefusedAtStartup) {
  // No lifetime shorter than a day can be issued: the test re-signs one that ended a minute ago.
  X509Ptr cert = ReadCertificate(File("master.crt"));
  PkeyPtr ca_key = ReadPrivateKey(File("ca.key"));
  ASSERT_TRUE(cert && ca_key);
  ASSERT_TRUE(X509_gmtime_adj(X509_getm_notAfter(cert.get()), -60));
  ASSERT_GT(X509_sign(cert.get(), ca_key.get(), EVP_sha256()), 0);
  BioPtr out(BIO_new_file(File("expired.crt").c_str(), "w"));
  ASSERT_EQ(PEM_write_bio_X509(out.get(), cert.get()), 1);
  out.reset();

  auto ctx = NewServerContext(File("expired.crt"), File("master.key"));
  ASSERT_FALSE(ctx.ok());
  EXPECT_THAT(ctx.status().message(),
              HasSubstr("--tls-cert " + File("expired.crt") + ": the certificate has expired"));
}

TEST_F(ContextTest, AClientContextVerifiesPeersAgainstTheCaFile) {
  auto ctx = NewClientContext(File("ca.crt"));
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(SSL_CTX_get_verify_mode((*ctx)->native_handle()), SSL_VERIFY_PEER);
  EXPECT_EQ(SSL_CTX_get_min_proto_version((*ctx)->native_handle()), TLS1_2_VERSION);
  auto system = NewClientContext("");
  ASSERT_TRUE(system.ok()) << system.status().ToString();

  auto missing = NewClientContext(File("none.crt"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("--ca-file " + File("none.crt") + ": cannot read it"));
  { std::ofstream(File("garbage.pem")) << "hello\n"; }
  auto garbage = NewClientContext(File("garbage.pem"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(),
              HasSubstr("--ca-file " + File("garbage.pem") + ": holds no PEM certificate"));
}

}  // namespace
}  // namespace cohort::tls
