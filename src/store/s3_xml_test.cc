// The S3 XML the backend reads, as S3 and RGW write it: entities decoded, namespaces ignored,
// broken documents refused with the reason.
#include "store/s3_xml.h"

#include <gtest/gtest.h>

namespace cohort::store {
namespace {

TEST(S3Xml, AListingsKeysSizesAndTruncationWithEntitiesDecoded) {
  auto listing = ParseS3Listing(R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>p/</Prefix><MaxKeys>2</MaxKeys><KeyCount>2</KeyCount>
  <IsTruncated>true</IsTruncated>
  <Contents><Key>p/a&amp;b &lt;c&gt; &quot;d&quot; &#x65E5;</Key><LastModified>2026-11-28T15:00:00.000Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>17</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>p/caf&#233;/x</Key><Size>0</Size></Contents>
</ListBucketResult>)");
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_TRUE(listing->truncated);
  ASSERT_EQ(listing->objects.size(), 2u);
  EXPECT_EQ(listing->objects[0].key, "p/a&b <c> \"d\" \xe6\x97\xa5");
  EXPECT_EQ(listing->objects[0].size, 17);
  EXPECT_EQ(listing->objects[1].key, "p/caf\xc3\xa9/x");
  EXPECT_EQ(listing->objects[1].size, 0);
  auto empty = ParseS3Listing(
      "<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></"
      "ListBucketResult>");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->truncated);
  EXPECT_TRUE(empty->objects.empty());
}

TEST(S3Xml, BrokenOrForeignListingsAreRefusedWithTheReason) {
  auto broken = ParseS3Listing("<ListBucketResult><Contents><Key>a</Key></ListBucketResult>");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInternal);
  EXPECT_NE(broken.status().message().find("not well-formed XML (line 1): mismatched tag"),
            std::string::npos)
      << broken.status().message();
  auto foreign = ParseS3Listing("<html><body>proxy error</body></html>");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("not a ListBucketResult"), std::string::npos);
  auto size = ParseS3Listing(
      "<ListBucketResult><Contents><Key>a</Key><Size>-3</Size></Contents></ListBucketResult>");
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.status().message().find("bad Size \"-3\""), std::string::npos);
  EXPECT_FALSE(ParseS3Listing("").ok());
}

TEST(S3Xml, ErrorBodiesGiveTheirCodeAndMessage) {
  auto error = ParseS3Error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The key &apos;a&apos; does not exist</Message>
<BucketName>b</BucketName><RequestId>tx0001</RequestId><HostId>h</HostId></Error>)");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, "NoSuchKey");
  EXPECT_EQ(error->message, "The key 'a' does not exist");
  // RGW's 403 has a code and no message.
  auto denied = ParseS3Error("<Error><Code>AccessDenied</Code><RequestId>x</RequestId></Error>");
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(denied->code, "AccessDenied");
  EXPECT_EQ(denied->message, "");
  auto sts = ParseS3Error(
      "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidParameterValue</Code>"
      "<Message>bad duration</Message></Error><RequestId>r</RequestId></ErrorResponse>");
  ASSERT_TRUE(sts.has_value());
  EXPECT_EQ(sts->code, "InvalidParameterValue");
  EXPECT_EQ(sts->message, "bad duration");
  EXPECT_FALSE(ParseS3Error("").has_value());
  EXPECT_FALSE(ParseS3Error("<html>502 Bad Gateway</html>").has_value());
  EXPECT_FALSE(ParseS3Error("<Error><Code>cut short").has_value());
  // A completion that failed after its 200.
  EXPECT_EQ(ParseS3Error("<CompleteMultipartUploadResult><Location>x</Location>"
                         "</CompleteMultipartUploadResult>"),
            std::nullopt);
}

TEST(S3Xml, MultipartUploadIdsAndPendingUploads) {
  auto id = ParseS3UploadId(
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Bucket>b</Bucket><Key>k</Key><UploadId>2~abc_DEF</UploadId>"
      "</InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "2~abc_DEF");
  EXPECT_FALSE(ParseS3UploadId("<InitiateMultipartUploadResult/>").ok());
  auto uploads = ParseS3Uploads(
      "<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>"
      "<Upload><Key>p/a b</Key><UploadId>1</UploadId><Initiated>x</Initiated></Upload>"
      "<Upload><Key>p/c</Key><UploadId>2</UploadId></Upload></ListMultipartUploadsResult>");
  ASSERT_TRUE(uploads.ok()) << uploads.status().ToString();
  ASSERT_EQ(uploads->size(), 2u);
  EXPECT_EQ((*uploads)[0].key, "p/a b");
  EXPECT_EQ((*uploads)[0].upload_id, "1");
  EXPECT_EQ((*uploads)[1].key, "p/c");
  EXPECT_TRUE(ParseS3Uploads("<ListMultipartUploadsResult/>")->empty());
}

TEST(S3Xml, AssumeRoleCredentials) {
  auto c = ParseS3AssumeRole(
      "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>AK</AccessKeyId>"
      "<SecretAccessKey>S/K+1</SecretAccessKey><SessionToken>T&amp;1</SessionToken>"
      "<Expiration>2026-11-28T16:00:00Z</Expiration></Credentials></AssumeRoleResult>"
      "</AssumeRoleResponse>");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key, "AK");
  EXPECT_EQ(c->secret_key, "S/K+1");
  EXPECT_EQ(c->session_token, "T&1");
  EXPECT_EQ(c->expiration, "2026-11-28T16:00:00Z");
  EXPECT_FALSE(ParseS3AssumeRole("<AssumeRoleResponse/>").ok());
}

}  // namespace
}  // namespace cohort::store
