// The S3 backend's location and connection file: what is accepted, what is refused and how the
// error says so, and that no secret ever shows in a message.
#include "store/s3_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

TEST(S3Location, BucketAndOptionalPrefixWithOrWithoutATrailingSlash) {
  auto bare = ParseS3Location("s3://cohort-data");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->bucket, "cohort-data");
  EXPECT_EQ(bare->prefix, "");
  EXPECT_EQ(bare->ToString(), "s3://cohort-data");
  EXPECT_EQ(ParseS3Location("s3://cohort-data/")->prefix, "");
  auto deep = ParseS3Location("s3://my.bucket-1/team/a/store");
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->bucket, "my.bucket-1");
  EXPECT_EQ(deep->prefix, "team/a/store");
  EXPECT_EQ(ParseS3Location("s3://my.bucket-1/team/a/store/")->prefix, "team/a/store");
  EXPECT_EQ(deep->ToString(), "s3://my.bucket-1/team/a/store");
}

TEST(S3Location, BadLocationsNameWhatIsWrong) {
  for (const auto& [url, reason] : std::vector<std::pair<std::string, std::string>>{
           {"http://b/p", "s3://BUCKET/PREFIX"},
           {"/data/store", "s3://BUCKET/PREFIX"},
           {"s3://", "bucket name \"\" is empty"},
           {"s3:///p", "is empty"},
           {"s3://ab", "is 2 characters long; S3 allows 3 to 63"},
           {"s3://" + std::string(64, 'a'), "is 64 characters long"},
           {"s3://Upper", "only lower-case letters, digits, '.' and '-'"},
           {"s3://under_score", "only lower-case letters"},
           {"s3://-dash", "start and end with a lower-case letter or a digit"},
           {"s3://dash-", "start and end"},
           {"s3://a..b", "two '.' in a row"},
           {"s3://192.168.1.4", "looks like an IP address"},
           {"s3://bucket//p", "prefix is not a valid key: key \"/p\" starts with '/'"},
           {"s3://bucket/a//b", "empty segment"},
           {"s3://bucket/a/../b", "\"..\" segment"},
           {"s3://bucket/p//", "ends with '/'"}}) {
    auto location = ParseS3Location(url);
    ASSERT_FALSE(location.ok()) << url;
    EXPECT_EQ(location.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(location.status().message().find(reason), std::string::npos)
        << url << ": " << location.status().message();
  }
  EXPECT_TRUE(ParseS3Location("s3://1.2.3.x").ok());  // not an address
}

constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr const char* kToken = "FQoGZXIvYXdzEXAMPLETOKEN";

TEST(S3Connection, AllFieldsAndTheRegionsDefault) {
  auto c = ParseS3Connection(fmt::format("endpoint: http://127.0.0.1:7480\n"
                                         "access_key: AKIAEXAMPLE\n"
                                         "secret_key: {}\n"
                                         "session_token: {}\n"
                                         "role_arn: arn:aws:iam:::role/jobs\n",
                                         kSecret, kToken),
                             "conn.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:7480");
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->access_key, "AKIAEXAMPLE");
  EXPECT_EQ(c->secret_key, kSecret);
  EXPECT_EQ(c->session_token, kToken);
  EXPECT_EQ(c->role_arn, "arn:aws:iam:::role/jobs");
  std::string shown = c->ToString();
  EXPECT_NE(shown.find("http://127.0.0.1:7480"), std::string::npos) << shown;
  EXPECT_NE(shown.find("AKIAEXAMPLE"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(kSecret), std::string::npos) << shown;
  EXPECT_EQ(shown.find(kToken), std::string::npos) << shown;
  auto eu = ParseS3Connection(fmt::format("endpoint: https://s3.example.org\nregion: eu-west-3\n"
                                          "access_key: A\nsecret_key: {}\n",
                                          kSecret),
                              "c");
  ASSERT_TRUE(eu.ok()) << eu.status().ToString();
  EXPECT_EQ(eu->region, "eu-west-3");
  auto slash = ParseS3Connection(
      fmt::format("endpoint: http://h:7480/\naccess_key: A\nsecret_key: {}\n", kSecret), "c");
  ASSERT_TRUE(slash.ok()) << slash.status().ToString();
  EXPECT_EQ(slash->endpoint, "http://h:7480");
}

TEST(S3Connection, BadFilesNameTheFieldAndNeverTheSecret) {
  const std::string good_rest = fmt::format("access_key: A\nsecret_key: {}\n", kSecret);
  for (const auto& [yaml, reason] : std::vector<std::pair<std::string, std::string>>{
           {"endpoint: http://h\nacces_key: A\nsecret_key: x\n",
            "acces_key: unknown field; did you mean \"access_key\"?"},
           {"endpoint: http://h\n" + good_rest + "password: " + kSecret + "\n",
            "password: unknown field; expected one of"},
           {good_rest, "endpoint: missing"},
           {"endpoint: http://h\nsecret_key: x\n", "access_key: missing"},
           {"endpoint: http://h\naccess_key: A\nsecret_key:\n", "secret_key: missing"},
           {"endpoint: 127.0.0.1:7480\n" + good_rest, "must start with http:// or https://"},
           {"endpoint: http://h/bucket\n" + good_rest, "without a path"},
           {"endpoint: http://\n" + good_rest, "has no host"},
           {"endpoint: http://a:" + std::string(kSecret) + "@h\n" + good_rest,
            "must not hold credentials"},
           {"endpoint: http://h\nregion: EU West\n" + good_rest, "region: may hold only"},
           {"endpoint: http://h\naccess_key: A\nsecret_key: [" + std::string(kSecret) + "]\n",
            "secret_key: must be a string"},
           {"- endpoint\n", "must be a mapping"},
           {"endpoint: http://h\nsecret_key: [" + std::string(kSecret) + "\n", "not YAML"}}) {
    auto c = ParseS3Connection(yaml, "/etc/cohort/s3.yaml");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = c.status().message();
    EXPECT_NE(m.find("/etc/cohort/s3.yaml: "), std::string::npos) << m;
    EXPECT_NE(m.find(reason), std::string::npos) << "want \"" << reason << "\" in: " << m;
    EXPECT_EQ(m.find(kSecret), std::string::npos) << m;
    for (const auto& d : c.status().details()) EXPECT_EQ(d.find(kSecret), std::string::npos) << d;
  }
}

class S3ConnectionFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cohort-s3conf-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "s3.yaml").string();
    std::ofstream(path_) << "endpoint: http://127.0.0.1:7480\naccess_key: A\nsecret_key: "
                         << kSecret << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(S3ConnectionFile, OnlyTheOwnerMayReadIt) {
  ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
  auto c = LoadS3Connection(path_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->secret_key, kSecret);
  ASSERT_EQ(::chmod(path_.c_str(), 0400), 0);
  EXPECT_TRUE(LoadS3Connection(path_).ok());
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602}) {
    ASSERT_EQ(::chmod(path_.c_str(), mode), 0);
    auto refused = LoadS3Connection(path_);
    ASSERT_FALSE(refused.ok()) << mode;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = refused.status().message();
    EXPECT_NE(m.find(fmt::format("has mode {:04o}", mode)), std::string::npos) << m;
    EXPECT_NE(m.find("chmod 600 " + path_), std::string::npos) << m;
    EXPECT_EQ(m.find(kSecret), std::string::npos) << m;
  }
}

TEST_F(S3ConnectionFile, MissingLinkedAndDirectoryFilesAreRefused) {
  EXPECT_EQ(LoadS3Connection((dir_ / "none.yaml").string()).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
  fs::create_symlink(path_, dir_ / "link.yaml");
  auto linked = LoadS3Connection((dir_ / "link.yaml").string());
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.status().message().find("symbolic link"), std::string::npos);
  fs::create_directory(dir_ / "d");
  ::chmod((dir_ / "d").c_str(), 0700);
  auto directory = LoadS3Connection((dir_ / "d").string());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("not a regular file"), std::string::npos)
      << directory.status().message();
}

}  // namespace
}  // namespace cohort::store
