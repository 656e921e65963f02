#include "store/s3_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "os/durable_file.h"
#include "store/curl_library.h"
#include "store/s3_request.h"
#include "store/s3_xml.h"

namespace cohort::store {

namespace {

// An error body is a few hundred bytes of XML; keep what is needed to read its Code.
constexpr size_t kS3MaxErrorBody = 64 << 10;

// The state of one try of a call, shared with curl's callbacks.
struct S3Transfer {
  const S3Call* call = nullptr;
  int64_t sent = 0;
  bool source_short = false;
  int source_errno = 0;
  bool too_large = false;
  bool range_ignored = false;  // a ranged GET answered 200 with more than the range holds
  Status sink_error;
  S3Answer answer;
};

bool S3HeaderIs(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

std::string_view S3HeaderValue(std::string_view line, size_t name_size) {
  std::string_view v = line.substr(name_size + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' '))
    v.remove_suffix(1);
  return v;
}

size_t S3OnHeader(char* buffer, size_t size, size_t count, void* data) {
  auto* t = static_cast<S3Transfer*>(data);
  std::string_view line(buffer, size * count);
  if (line.starts_with("HTTP/")) {
    // A new answer (after "100 Continue" too): what the previous one said does not count.
    size_t space = line.find(' ');
    t->answer.status = space == std::string_view::npos ? 0 : std::atol(line.data() + space + 1);
    t->answer.content_length = -1;
    t->answer.etag.clear();
  } else if (S3HeaderIs(line, "content-length")) {
    t->answer.content_length = std::atoll(std::string(S3HeaderValue(line, 14)).c_str());
  } else if (S3HeaderIs(line, "etag")) {
    t->answer.etag = std::string(S3HeaderValue(line, 4));
  } else if (line == "\r\n" || line == "\n") {
    const S3Call& call = *t->call;
    // The end of a final answer's headers: refuse a body larger than the reader takes before
    // a byte of it is read.
    if (S3Ok(t->answer.status) && call.into != nullptr &&
        t->answer.content_length > static_cast<int64_t>(call.into_max)) {
      (!call.range.empty() && t->answer.status == 200 ? t->range_ignored : t->too_large) = true;
      return 0;
    }
  }
  return size * count;
}

size_t S3OnBody(char* buffer, size_t size, size_t count, void* data) {
  auto* t = static_cast<S3Transfer*>(data);
  const S3Call& call = *t->call;
  std::string_view bytes(buffer, size * count);
  if (!S3Ok(t->answer.status)) {
    size_t room = kS3MaxErrorBody - std::min(kS3MaxErrorBody, t->answer.error_body.size());
    t->answer.error_body.append(bytes.substr(0, room));
    return bytes.size();
  }
  if (call.into_fd >= 0) {
    t->sink_error = WriteAll(call.into_fd, bytes, call.into_path);
    return t->sink_error.ok() ? bytes.size() : 0;
  }
  if (call.into != nullptr) {
    if (call.into->size() + bytes.size() > call.into_max) {
      t->too_large = true;  // no Content-Length (chunked), and more than the reader takes
      return 0;
    }
    call.into->append(bytes);
  }
  return bytes.size();
}

size_t S3OnRead(char* buffer, size_t size, size_t count, void* data) {
  auto* t = static_cast<S3Transfer*>(data);
  const S3Source& source = *t->call->upload;
  int64_t left = source.length - t->sent;
  size_t n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(size * count)));
  if (n == 0) return 0;
  if (source.fd < 0) {
    std::memcpy(buffer, source.data.data() + t->sent, n);
    t->sent += static_cast<int64_t>(n);
    return n;
  }
  ssize_t got;
  do {
    got = ::pread(source.fd, buffer, n, source.offset + t->sent);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) {
    // The file shrank under the upload (or cannot be read): what was sent is not the file.
    t->source_short = got == 0;
    t->source_errno = got < 0 ? errno : 0;
    return CURL_READFUNC_ABORT;
  }
  t->sent += got;
  return static_cast<size_t>(got);
}

int S3OnSeek(void* data, curl_off_t offset, int origin) {
  auto* t = static_cast<S3Transfer*>(data);
  if (origin != SEEK_SET || offset < 0 || offset > t->call->upload->length) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  t->sent = offset;
  return CURL_SEEKFUNC_OK;
}

}  // namespace

S3Source S3SourceRange(const S3Source& whole, int64_t offset, int64_t length) {
  if (whole.fd < 0) {
    return S3Source{
        .data = whole.data.substr(static_cast<size_t>(offset), static_cast<size_t>(length)),
        .fd = -1,
        .offset = 0,
        .length = length,
        .path = ""};
  }
  return S3Source{.data = {},
                  .fd = whole.fd,
                  .offset = whole.offset + offset,
                  .length = length,
                  .path = whole.path};
}

S3Call NewS3Call(std::string method, std::string url, std::string what) {
  S3Call call;
  call.method = std::move(method);
  call.url = std::move(url);
  call.what = std::move(what);
  return call;
}

S3Client::S3Client(S3Connection connection, S3Options options, std::string service)
    : connection_(std::move(connection)),
      options_(std::move(options)),
      service_(std::move(service)),
      random_(std::random_device{}()) {}

S3Client::~S3Client() {
  if (curl_ != nullptr) curl_lib_->easy_cleanup(static_cast<CURL*>(curl_));
}

StatusOr<std::unique_ptr<S3Client>> S3Client::Create(S3Connection connection, S3Options options,
                                                     std::string service) {
  if (options.attempts < 1) return Status::InvalidArgument("attempts: must be at least 1");
  COHORT_ASSIGN_OR_RETURN(const CurlLibrary* curl, LoadCurl());
  std::unique_ptr<S3Client> client(
      new S3Client(std::move(connection), std::move(options), std::move(service)));
  client->curl_lib_ = curl;
  client->curl_ = curl->easy_init();
  if (client->curl_ == nullptr) return Status::Internal("curl_easy_init failed");
  return client;
}

// One try of `call`; the curl result.
int S3Client::Try(const S3Call& call, void* transfer, char* error_buffer) {
  auto& t = *static_cast<S3Transfer*>(transfer);
  auto* curl = static_cast<CURL*>(curl_);
  curl_lib_->easy_reset(curl);  // keeps the connections
  curl_lib_->easy_setopt(curl, CURLOPT_URL, call.url.c_str());
  curl_lib_->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_lib_->easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_lib_->easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  const std::string sigv4 = fmt::format("aws:amz:{}:{}", connection_.region, service_);
  curl_lib_->easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_lib_->easy_setopt(curl, CURLOPT_USERNAME, connection_.access_key.c_str());
  curl_lib_->easy_setopt(curl, CURLOPT_PASSWORD, connection_.secret_key.c_str());
  curl_lib_->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                         static_cast<long>(options_.connect_timeout.count()));
  curl_lib_->easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_lib_->easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                         static_cast<long>(options_.stall_timeout.count()));
  curl_lib_->easy_setopt(curl, CURLOPT_HEADERFUNCTION, S3OnHeader);
  curl_lib_->easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_lib_->easy_setopt(curl, CURLOPT_WRITEFUNCTION, S3OnBody);
  curl_lib_->easy_setopt(curl, CURLOPT_WRITEDATA, &t);

  // curl 7.88 signs the payload's hash but does not send it; for S3 the gateway then assumes
  // UNSIGNED-PAYLOAD and the signatures differ. Sending the header makes curl sign with it. STS
  // (a form POST) hashes the body itself, and refuses UNSIGNED-PAYLOAD.
  curl_slist* headers = nullptr;
  if (service_ == "s3")
    headers = curl_lib_->slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  std::string token_header;
  if (!connection_.session_token.empty()) {
    token_header = "x-amz-security-token: " + connection_.session_token;
    headers = curl_lib_->slist_append(headers, token_header.c_str());
  }
  std::string type_header;
  if (!call.content_type.empty()) {
    type_header = "Content-Type: " + call.content_type;
    headers = curl_lib_->slist_append(headers, type_header.c_str());
  }
  std::string range_header;
  if (!call.range.empty()) {
    range_header = "Range: " + call.range;
    headers = curl_lib_->slist_append(headers, range_header.c_str());
  }
  if (call.method == "HEAD") {
    curl_lib_->easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (call.method == "PUT") {
    curl_lib_->easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_lib_->easy_setopt(curl, CURLOPT_INFILESIZE_LARGE,
                           static_cast<curl_off_t>(call.upload ? call.upload->length : 0));
  } else if (call.method == "POST") {
    curl_lib_->easy_setopt(curl, CURLOPT_POST, 1L);
    curl_lib_->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                           static_cast<curl_off_t>(call.upload ? call.upload->length : 0));
    // A POST's body is given whole: curl signs its hash only then (STS checks it; from a read
    // callback curl would sign the hash of nothing). POSTs are small XML or form bodies.
    if (call.upload == nullptr) {
      curl_lib_->easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    } else {
      COHORT_CHECK(call.upload->fd < 0);
      curl_lib_->easy_setopt(curl, CURLOPT_POSTFIELDS, call.upload->data.data());
    }
  } else if (call.method != "GET") {
    curl_lib_->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  if (call.upload != nullptr && call.method != "POST") {
    curl_lib_->easy_setopt(curl, CURLOPT_READFUNCTION, S3OnRead);
    curl_lib_->easy_setopt(curl, CURLOPT_READDATA, &t);
    curl_lib_->easy_setopt(curl, CURLOPT_SEEKFUNCTION, S3OnSeek);
    curl_lib_->easy_setopt(curl, CURLOPT_SEEKDATA, &t);
  }
  curl_lib_->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = curl_lib_->easy_perform(curl);
  curl_lib_->easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_lib_->slist_free_all(headers);
  return rc;
}

// `call`, tried again (after a backoff) while the server cannot be reached or answers that it
// is busy. The last answer whatever its status, or why none came.
StatusOr<S3Answer> S3Client::Perform(const S3Call& call) {
  for (int attempt = 1;; ++attempt) {
    S3Transfer t;
    t.call = &call;
    if (call.into != nullptr) call.into->clear();
    if (call.into_fd >= 0) {
      if (::ftruncate(call.into_fd, 0) != 0 || ::lseek(call.into_fd, 0, SEEK_SET) != 0) {
        return FileError(errno, fmt::format("truncating {}", call.into_path));
      }
    }
    char error_buffer[CURL_ERROR_SIZE] = {};
    auto rc = static_cast<CURLcode>(Try(call, &t, error_buffer));
    if (t.too_large) {
      return Status::ResourceExhausted(
          t.answer.content_length >= 0
              ? fmt::format("{}: the object is {} bytes, more than the {} this reader takes",
                            call.what, t.answer.content_length, call.into_max)
              : fmt::format("{}: the object is more than the {} bytes this reader takes", call.what,
                            call.into_max));
    }
    if (t.range_ignored) {
      return Status::Internal(fmt::format(
          "{}: the object store at {} answered with the whole object ({} bytes), not the range "
          "asked for ({}): it cannot be read in parts",
          call.what, connection_.endpoint, t.answer.content_length, call.range));
    }
    if (t.source_short || t.source_errno != 0) {
      return t.source_short
                 ? Status::FailedPrecondition(fmt::format(
                       "{}: {} shrank while it was uploaded (it had {} bytes from {}); nothing "
                       "was stored",
                       call.what, call.upload->path, call.upload->length, call.upload->offset))
                 : FileError(t.source_errno, fmt::format("reading {}", call.upload->path));
    }
    if (!t.sink_error.ok()) return t.sink_error;
    std::string failure;
    if (rc != CURLE_OK) {
      if (!IsRetryableTransport(rc)) {
        return Status::Internal(
            fmt::format("{}: {} ({})", call.what, curl_lib_->easy_strerror(rc), error_buffer));
      }
      failure = error_buffer[0] != '\0' ? error_buffer : curl_lib_->easy_strerror(rc);
    } else {
      std::optional<S3Error> error = ParseS3Error(t.answer.error_body);
      if (S3Ok(t.answer.status) || !IsRetryableHttp(t.answer.status, error ? error->code : "")) {
        return t.answer;
      }
      failure = fmt::format("HTTP {}{}", t.answer.status, error ? " " + error->code : "");
      if (attempt >= options_.attempts) return t.answer;
    }
    if (attempt >= options_.attempts) {
      return Status::Unavailable(
          fmt::format("{}: cannot reach the object store at {}: {} (tried {} time{})", call.what,
                      connection_.endpoint, failure, attempt, attempt == 1 ? "" : "s"));
    }
    auto wait = S3Backoff(attempt, options_.first_backoff, options_.max_backoff,
                          std::uniform_real_distribution<double>(0, 1)(random_));
    spdlog::warn("{}: {}; trying again in {} ms (try {} of {})", call.what, failure, wait.count(),
                 attempt + 1, options_.attempts);
    std::this_thread::sleep_for(wait);
  }
}

// `call`, whose answer must be 2xx.
StatusOr<S3Answer> S3Client::PerformOk(const S3Call& call) {
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, Perform(call));
  if (!S3Ok(answer.status)) {
    return S3HttpError(answer.status, answer.error_body, call.what, connection_.endpoint);
  }
  return answer;
}

}  // namespace cohort::store
