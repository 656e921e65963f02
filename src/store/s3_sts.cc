#include "store/s3_sts.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "store/s3_request.h"

namespace cohort::store {

namespace {

// What STS takes as a RoleSessionName ([\w+=,.@-]{2,64}), from the prefix, so that the server's
// logs say whose session it is.
std::string SessionName(std::string_view key_prefix) {
  std::string name = "cohort-";
  for (char c : key_prefix) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '=' || c == ',' || c == '.' || c == '@' || c == '-';
    name += ok ? c : '-';
    if (name.size() == 64) break;
  }
  return name;
}

}  // namespace

std::string ScopedSessionPolicy(std::string_view bucket, std::string_view bucket_prefix,
                                const std::vector<std::string>& reads) {
  using nlohmann::json;
  json objects = {
      {"Effect", "Allow"},
      {"Action", json::array({"s3:*"})},
      {"Resource", json::array({fmt::format("arn:aws:s3:::{}/{}/*", bucket, bucket_prefix)})}};
  json listing = {
      {"Effect", "Allow"},
      {"Action", json::array({"s3:ListBucket"})},
      {"Resource", json::array({fmt::format("arn:aws:s3:::{}", bucket)})},
      {"Condition",
       {{"StringLike", {{"s3:prefix", json::array({fmt::format("{}/*", bucket_prefix)})}}}}}};
  // nlohmann's objects are sorted by key; dump() without an indent writes no spaces.
  json statements = json::array({objects, listing});
  if (!reads.empty()) {
    json resources = json::array();
    for (const std::string& key : reads) {
      resources.push_back(
          fmt::format("arn:aws:s3:::{}/{}{}", bucket, key, key.ends_with('/') ? "*" : ""));
    }
    statements.push_back(
        {{"Effect", "Allow"}, {"Action", json::array({"s3:GetObject"})}, {"Resource", resources}});
  }
  json policy = {{"Version", "2012-10-17"}, {"Statement", std::move(statements)}};
  return policy.dump(-1, ' ', false, json::error_handler_t::strict);
}

StatusOr<S3TemporaryCredentials> IssueScopedCredentials(const S3Connection& connection,
                                                        const S3Location& location,
                                                        std::string_view key_prefix,
                                                        std::chrono::seconds duration,
                                                        const S3Options& options,
                                                        const std::vector<std::string>& reads) {
  if (connection.role_arn.empty()) {
    return Status::FailedPrecondition(
        "the S3 connection file names no role_arn: per-job credentials are issued by assuming "
        "that role");
  }
  if (Status s = CheckKey(key_prefix); !s.ok()) {
    return Status::InvalidArgument(fmt::format("key prefix: {}", s.message()));
  }
  if (key_prefix.find_first_of("*?$") != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format(
        "key prefix \"{}\": holds '*', '?' or '$', which a session policy reads as a wildcard or "
        "variable",
        key_prefix));
  }
  if (duration < kMinScopedDuration || duration > kMaxScopedDuration) {
    return Status::InvalidArgument(
        fmt::format("duration: {} s; STS issues credentials for {} to {} s", duration.count(),
                    kMinScopedDuration.count(), kMaxScopedDuration.count()));
  }
  auto in_bucket = [&](std::string_view key) {
    return location.prefix.empty() ? std::string(key) : fmt::format("{}/{}", location.prefix, key);
  };
  const std::string bucket_prefix = in_bucket(key_prefix);
  std::vector<std::string> bucket_reads;
  for (const std::string& key : reads) {
    std::string_view bare = key.ends_with('/') ? std::string_view(key).substr(0, key.size() - 1)
                                               : std::string_view(key);
    if (Status s = CheckKey(bare); !s.ok() || key.find_first_of("*?$") != std::string::npos) {
      return Status::InvalidArgument(
          fmt::format("read-only key \"{}\": not a key a session policy can name exactly", key));
    }
    bucket_reads.push_back(in_bucket(key));
  }
  std::string body;
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"Action", "AssumeRole"},
           {"DurationSeconds", std::to_string(duration.count())},
           {"Policy", ScopedSessionPolicy(location.bucket, bucket_prefix, bucket_reads)},
           {"RoleArn", connection.role_arn},
           {"RoleSessionName", SessionName(key_prefix)},
           {"Version", "2011-06-15"}}) {
    if (!body.empty()) body += '&';
    body += fmt::format("{}={}", name, S3Encode(value, false));
  }
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<S3Client> client,
                          S3Client::Create(connection, options, "sts"));
  S3Source source{
      .data = body, .fd = -1, .offset = 0, .length = static_cast<int64_t>(body.size()), .path = ""};
  std::string xml;
  S3Call call = NewS3Call("POST", connection.endpoint + "/",
                          fmt::format("STS AssumeRole {} for s3://{}/{}/", connection.role_arn,
                                      location.bucket, bucket_prefix));
  call.upload = &source;
  call.content_type = "application/x-www-form-urlencoded";
  call.into = &xml;
  call.into_max = kS3MaxXmlBody;
  COHORT_RETURN_IF_ERROR(client->PerformOk(call).status());
  return ParseS3AssumeRole(xml);
}

S3Connection WithTemporaryCredentials(S3Connection connection,
                                      const S3TemporaryCredentials& credentials) {
  connection.access_key = credentials.access_key;
  connection.secret_key = credentials.secret_key;
  connection.session_token = credentials.session_token;
  connection.role_arn.clear();
  return connection;
}

}  // namespace cohort::store
