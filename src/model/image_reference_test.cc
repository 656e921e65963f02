#include "model/image_reference.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(ImageReference, ReadsEveryPartAndWritesItBack) {
  auto ref = ParseImageReference("registry.example.com:5000/team/pytorch:2.1-cuda12");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->registry, "registry.example.com:5000");
  EXPECT_EQ(ref->repository, "team/pytorch");
  EXPECT_EQ(ref->tag, "2.1-cuda12");
  EXPECT_EQ(ref->digest, "");
  EXPECT_EQ(ref->ToString(), "registry.example.com:5000/team/pytorch:2.1-cuda12");

  std::string digest = "sha256:" + std::string(64, 'a');
  auto pinned = ParseImageReference("127.0.0.1:5055/cohort-test@" + digest);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(pinned->registry, "127.0.0.1:5055");
  EXPECT_EQ(pinned->tag, "");
  EXPECT_EQ(pinned->digest, digest);
}

TEST(ImageReference, AFirstComponentIsARegistryOnlyWithADotAColonOrLocalhost) {
  auto plain = ParseImageReference("team/pytorch");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->registry, "");
  EXPECT_EQ(plain->repository, "team/pytorch");
  auto local = ParseImageReference("localhost/cohort-test:1");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->registry, "localhost");
  auto bare = ParseImageReference("busybox");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->repository, "busybox");
  EXPECT_EQ(bare->tag, "");
}

TEST(ImageReference, RefusesWhatRegistriesRefuseAndSaysWhichPart) {
  struct Case {
    std::string text;
    std::string said;
  };
  for (const Case& c : std::vector<Case>{
           {"", "empty"},
           {"Ubuntu", "may only hold lowercase"},
           {"team/PyTorch", "may only hold lowercase"},
           {"team//pytorch", "empty path component"},
           {"team/pytorch:", "1 to 128"},
           {"team/pytorch:-x", "tag \"-x\" must start"},
           {"team/pytorch:a b", "tag \"a b\" may only hold"},
           {"team/py..torch", "not between letters or digits"},
           {"team/-pytorch", "must start and end"},
           {"pytorch@sha256:abc", "digest"},
           {"pytorch@md5:" + std::string(64, 'a'), "digest"},
           {"registry.example.com:99999/x", "port \"99999\""},
           {"registry.example.com:/x", "port \"\""},
           {"bad_host.example.com/x", "may only hold letters, digits"},
           {"registry.example.com/", "no repository"},
           {std::string(600, 'a'), "longer than 512"},
           {"r.example.com/" + std::string(300, 'a'), "longer than 255"},
       }) {
    auto ref = ParseImageReference(c.text);
    ASSERT_FALSE(ref.ok()) << c.text;
    EXPECT_NE(ref.status().message().find(c.said), std::string::npos)
        << c.text << ": " << ref.status().message();
  }
}

TEST(ImageReference, RegistriesAreHostsWithAnOptionalPort) {
  EXPECT_TRUE(ValidateImageRegistry("127.0.0.1:5000").ok());
  EXPECT_TRUE(ValidateImageRegistry("registry.example.com").ok());
  EXPECT_TRUE(ValidateImageRegistry("[::1]:5000").ok());
  EXPECT_FALSE(ValidateImageRegistry("").ok());
  EXPECT_FALSE(ValidateImageRegistry("http://registry").ok());
  EXPECT_FALSE(ValidateImageRegistry("registry:0").ok());
  EXPECT_FALSE(ValidateImageRegistry("reg/istry").ok());
}

}  // namespace
}  // namespace cohort
