#include "store/s3_request.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>

#include "store/s3_xml.h"

namespace cohort::store {

namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// An error body's message may be long (AWS puts the string to sign in some): a Status keeps the
// start.
std::string Shortened(std::string_view s, size_t most) {
  return s.size() <= most ? std::string(s) : fmt::format("{}...", s.substr(0, most));
}

}  // namespace

std::string S3Encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

std::string S3Url(std::string_view endpoint, std::string_view bucket, std::string_view object_key,
                  std::string_view query) {
  std::string url = fmt::format("{}/{}", endpoint, bucket);
  if (!object_key.empty()) url += "/" + S3Encode(object_key, true);
  if (!query.empty()) url += fmt::format("?{}", query);
  return url;
}

std::string S3Query(std::vector<std::pair<std::string, std::string>> params) {
  for (auto& [name, value] : params) {
    name = S3Encode(name, false);
    value = S3Encode(value, false);
  }
  std::sort(params.begin(), params.end());
  std::string query;
  for (const auto& [name, value] : params) {
    if (!query.empty()) query += '&';
    query += fmt::format("{}={}", name, value);
  }
  return query;
}

bool IsRetryableHttp(long http_status, std::string_view s3_code) {
  switch (http_status) {
    case 408:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return true;
    default:
      return s3_code == "SlowDown";
  }
}

bool IsRetryableTransport(int curl_code) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::chrono::milliseconds S3Backoff(int retry, std::chrono::milliseconds first,
                                    std::chrono::milliseconds most, double jitter) {
  int64_t delay = first.count();
  for (int i = 1; i < retry && delay < most.count(); ++i) delay *= 2;
  delay = std::min(delay, static_cast<int64_t>(most.count()));
  jitter = std::clamp(jitter, 0.0, 1.0);
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(delay) * (0.5 + jitter / 2)));
}

Status S3HttpError(long http_status, std::string_view body, std::string_view what,
                   std::string_view endpoint) {
  std::optional<S3Error> error = ParseS3Error(body);
  std::string code = error ? error->code : "";
  std::string detail = fmt::format("HTTP {}", http_status);
  if (!code.empty()) detail += " " + code;
  if (error && !error->message.empty()) detail += ": " + Shortened(error->message, 300);
  std::string message = fmt::format("{}: {} (object store at {})", what, detail, endpoint);
  if (http_status == 404) {
    if (code == "NoSuchBucket") return Status::FailedPrecondition(message);
    return Status::NotFound(message);
  }
  if (http_status == 401 || http_status == 403) {
    return Status::PermissionDenied(
        fmt::format("{}: the object store at {} refused the credentials or this access: {}", what,
                    endpoint, detail));
  }
  if (IsRetryableHttp(http_status, code)) return Status::Unavailable(message);
  return Status::Internal(message);
}

}  // namespace cohort::store
