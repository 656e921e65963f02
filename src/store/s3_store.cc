#include "store/s3_store.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "os/durable_file.h"
#include "store/s3_request.h"
#include "store/s3_xml.h"

namespace cohort::store {

namespace {

constexpr size_t kS3MinPartSize = size_t{5} << 20;
constexpr size_t kS3MaxParts = 10'000;
// An error body is a few hundred bytes of XML; keep what is needed to read its Code.
constexpr size_t kS3MaxErrorBody = 64 << 10;
// A listing of 1,000 keys of up to 1 KiB each, with their XML around them.
constexpr size_t kS3MaxXmlBody = 16 << 20;

// Where an upload's bytes come from: a buffer, or `length` bytes of an open file from `offset`.
struct S3Source {
  std::string_view data;
  int fd = -1;
  int64_t offset = 0;
  int64_t length = 0;
  std::string path;  // the file's, for messages
};

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

// One request; the fields that apply are set.
struct S3Call {
  std::string method;  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  std::string what;  // "PUT s3://bucket/prefix/key", for messages
  const S3Source* upload = nullptr;
  std::string content_type;
  // Where a 2xx answer's body goes: a string of at most `into_max` bytes, or a file.
  std::string* into = nullptr;
  size_t into_max = 0;
  int into_fd = -1;
  std::string into_path;
};

struct S3Answer {
  long status = 0;
  std::string error_body;  // a non-2xx answer's body (S3 error XML), cut at kS3MaxErrorBody
  std::string etag;
  int64_t content_length = -1;
};

// The state of one try of a call, shared with curl's callbacks.
struct S3Transfer {
  const S3Call* call = nullptr;
  int64_t sent = 0;
  bool source_short = false;
  int source_errno = 0;
  bool too_large = false;
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

bool S3Ok(long status) { return status >= 200 && status < 300; }

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
      t->too_large = true;
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

std::once_flag s3_curl_global_once;

}  // namespace

struct S3Store::Impl {
  S3Connection connection;
  S3Location location;
  S3Options options;
  CURL* curl = nullptr;
  std::minstd_rand random{std::random_device{}()};

  ~Impl() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }

  StatusOr<std::string> FullKey(const std::string& key) const {
    COHORT_RETURN_IF_ERROR(CheckKey(key));
    if (location.prefix.empty()) return key;
    std::string full = location.prefix + "/" + key;
    if (full.size() > kMaxKeyBytes) {
      return Status::InvalidArgument(fmt::format(
          "key \"{}\" is too long for this store: with its prefix \"{}\" it is {} bytes, more "
          "than S3's {}",
          key.substr(0, 200), location.prefix, full.size(), kMaxKeyBytes));
    }
    return full;
  }

  // The store's prefix added to a listing prefix or a key to start after (not checked: a
  // listing prefix need not be a whole key).
  std::string InBucket(const std::string& s) const {
    return location.prefix.empty() ? s : location.prefix + "/" + s;
  }

  std::string What(std::string_view method, const std::string& full_key) const {
    return fmt::format("{} s3://{}/{}", method, location.bucket, full_key);
  }

  std::string Url(const std::string& full_key, const std::string& query = "") const {
    return S3Url(connection.endpoint, location.bucket, full_key, query);
  }

  // One try of `call`; the curl result.
  CURLcode Try(const S3Call& call, S3Transfer& t, char* error_buffer) {
    curl_easy_reset(curl);  // keeps the connections
    curl_easy_setopt(curl, CURLOPT_URL, call.url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
    const std::string sigv4 = fmt::format("aws:amz:{}:s3", connection.region);
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, connection.access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, connection.secret_key.c_str());
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     static_cast<long>(options.stall_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, S3OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, S3OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);

    // curl 7.88 signs the payload's hash but does not send it; the gateway then assumes
    // UNSIGNED-PAYLOAD and the signatures differ. Sending the header makes curl sign with it.
    curl_slist* headers = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    std::string token_header;
    if (!connection.session_token.empty()) {
      token_header = "x-amz-security-token: " + connection.session_token;
      headers = curl_slist_append(headers, token_header.c_str());
    }
    std::string type_header;
    if (!call.content_type.empty()) {
      type_header = "Content-Type: " + call.content_type;
      headers = curl_slist_append(headers, type_header.c_str());
    }
    if (call.method == "HEAD") {
      curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (call.method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE,
                       static_cast<curl_off_t>(call.upload ? call.upload->length : 0));
    } else if (call.method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(call.upload ? call.upload->length : 0));
      if (call.upload == nullptr) curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    } else if (call.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    }
    if (call.upload != nullptr) {
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, S3OnRead);
      curl_easy_setopt(curl, CURLOPT_READDATA, &t);
      curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, S3OnSeek);
      curl_easy_setopt(curl, CURLOPT_SEEKDATA, &t);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    return rc;
  }

  // `call`, tried again (after a backoff) while the server cannot be reached or answers that it
  // is busy. The last answer whatever its status, or why none came.
  StatusOr<S3Answer> Perform(const S3Call& call) {
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
      CURLcode rc = Try(call, t, error_buffer);
      if (t.too_large) {
        return Status::ResourceExhausted(
            t.answer.content_length >= 0
                ? fmt::format("{}: the object is {} bytes, more than the {} this reader takes",
                              call.what, t.answer.content_length, call.into_max)
                : fmt::format("{}: the object is more than the {} bytes this reader takes",
                              call.what, call.into_max));
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
              fmt::format("{}: {} ({})", call.what, curl_easy_strerror(rc), error_buffer));
        }
        failure = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(rc);
      } else {
        std::optional<S3Error> error = ParseS3Error(t.answer.error_body);
        if (S3Ok(t.answer.status) || !IsRetryableHttp(t.answer.status, error ? error->code : "")) {
          return t.answer;
        }
        failure = fmt::format("HTTP {}{}", t.answer.status, error ? " " + error->code : "");
        if (attempt >= options.attempts) return t.answer;
      }
      if (attempt >= options.attempts) {
        return Status::Unavailable(
            fmt::format("{}: cannot reach the object store at {}: {} (tried {} time{})", call.what,
                        connection.endpoint, failure, attempt, attempt == 1 ? "" : "s"));
      }
      auto wait = S3Backoff(attempt, options.first_backoff, options.max_backoff,
                            std::uniform_real_distribution<double>(0, 1)(random));
      spdlog::warn("{}: {}; trying again in {} ms (try {} of {})", call.what, failure, wait.count(),
                   attempt + 1, options.attempts);
      std::this_thread::sleep_for(wait);
    }
  }

  // `call`, whose answer must be 2xx.
  StatusOr<S3Answer> PerformOk(const S3Call& call) {
    COHORT_ASSIGN_OR_RETURN(S3Answer answer, Perform(call));
    if (!S3Ok(answer.status)) {
      return S3HttpError(answer.status, answer.error_body, call.what, connection.endpoint);
    }
    return answer;
  }

  Status PutOnce(const std::string& full, const S3Source& source) {
    S3Call call{.method = "PUT",
                .url = Url(full),
                .what = What("PUT", full),
                .upload = &source,
                .content_type = "",
                .into = nullptr,
                .into_max = 0,
                .into_fd = -1,
                .into_path = ""};
    return PerformOk(call).status();
  }

  Status Upload(const std::string& full, const S3Source& source) {
    if (static_cast<uint64_t>(source.length) <= options.multipart_threshold) {
      return PutOnce(full, source);
    }
    std::string xml;
    S3Call initiate{.method = "POST",
                    .url = Url(full, S3Query({{"uploads", ""}})),
                    .what = What("POST (start a multipart upload)", full),
                    .upload = nullptr,
                    .content_type = "",
                    .into = &xml,
                    .into_max = kS3MaxXmlBody,
                    .into_fd = -1,
                    .into_path = ""};
    COHORT_RETURN_IF_ERROR(PerformOk(initiate).status());
    COHORT_ASSIGN_OR_RETURN(std::string upload_id, ParseS3UploadId(xml));
    Status status = UploadParts(full, source, upload_id);
    if (status.ok()) return status;
    // Parts left behind take space (and are billed) until they are aborted.
    S3Call abort{.method = "DELETE",
                 .url = Url(full, S3Query({{"uploadId", upload_id}})),
                 .what = What("DELETE (abort a multipart upload)", full),
                 .upload = nullptr,
                 .content_type = "",
                 .into = nullptr,
                 .into_max = 0,
                 .into_fd = -1,
                 .into_path = ""};
    auto aborted = Perform(abort);
    if (!aborted.ok() || !(S3Ok(aborted->status) || aborted->status == 404)) {
      Status why = aborted.ok() ? S3HttpError(aborted->status, aborted->error_body, abort.what,
                                              connection.endpoint)
                                : aborted.status();
      spdlog::warn("{}: the multipart upload {} is left behind: {}", abort.what, upload_id,
                   why.message());
      return Status(status.code(), fmt::format("{}; aborting the upload failed too: {}",
                                               status.message(), why.message()));
    }
    return status;
  }

  Status UploadParts(const std::string& full, const S3Source& source, const std::string& id) {
    const auto length = static_cast<size_t>(source.length);
    size_t part_size = std::max(options.part_size, (length + kS3MaxParts - 1) / kS3MaxParts);
    std::string complete = "<CompleteMultipartUpload>";
    int number = 0;
    for (size_t offset = 0; offset < length; offset += part_size) {
      ++number;
      S3Source part = S3SourceRange(source, static_cast<int64_t>(offset),
                                    static_cast<int64_t>(std::min(part_size, length - offset)));
      S3Call put{
          .method = "PUT",
          .url = Url(full, S3Query({{"partNumber", std::to_string(number)}, {"uploadId", id}})),
          .what = What(fmt::format("PUT (part {})", number), full),
          .upload = &part,
          .content_type = "",
          .into = nullptr,
          .into_max = 0,
          .into_fd = -1,
          .into_path = ""};
      COHORT_ASSIGN_OR_RETURN(S3Answer answer, PerformOk(put));
      if (answer.etag.empty()) {
        return Status::Internal(
            fmt::format("{}: the object store answered without an ETag", put.what));
      }
      // An ETag is a quoted hex digest: nothing in it needs escaping but the quotes, which XML
      // text allows.
      complete += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", number,
                              answer.etag);
      if (options.after_part) options.after_part(number);
    }
    complete += "</CompleteMultipartUpload>";
    S3Source body{.data = complete,
                  .fd = -1,
                  .offset = 0,
                  .length = static_cast<int64_t>(complete.size()),
                  .path = ""};
    std::string xml;
    S3Call finish{.method = "POST",
                  .url = Url(full, S3Query({{"uploadId", id}})),
                  .what = What("POST (complete a multipart upload)", full),
                  .upload = &body,
                  .content_type = "application/xml",
                  .into = &xml,
                  .into_max = kS3MaxXmlBody,
                  .into_fd = -1,
                  .into_path = ""};
    COHORT_RETURN_IF_ERROR(PerformOk(finish).status());
    // S3 may answer 200 and then fail the completion in the body.
    if (std::optional<S3Error> error = ParseS3Error(xml)) {
      return Status::Internal(fmt::format("{}: {}: {} (object store at {})", finish.what,
                                          error->code, error->message, connection.endpoint));
    }
    return Status::Ok();
  }
};

S3Store::S3Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Store::~S3Store() = default;

StatusOr<std::unique_ptr<S3Store>> S3Store::Open(S3Connection connection, S3Location location,
                                                 S3Options options) {
  if (options.part_size < kS3MinPartSize) {
    return Status::InvalidArgument(
        fmt::format("part_size: {} bytes; S3 refuses parts under 5 MiB ({} bytes)",
                    options.part_size, kS3MinPartSize));
  }
  if (options.attempts < 1) return Status::InvalidArgument("attempts: must be at least 1");
  std::call_once(s3_curl_global_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  auto impl = std::make_unique<Impl>();
  impl->curl = curl_easy_init();
  if (impl->curl == nullptr) return Status::Internal("curl_easy_init failed");
  impl->connection = std::move(connection);
  impl->location = std::move(location);
  impl->options = std::move(options);
  return std::unique_ptr<S3Store>(new S3Store(std::move(impl)));
}

Status S3Store::Put(const std::string& key, std::string_view data) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  return impl_->Upload(full, S3Source{.data = data,
                                      .fd = -1,
                                      .offset = 0,
                                      .length = static_cast<int64_t>(data.size()),
                                      .path = ""});
}

Status S3Store::PutFile(const std::string& key, const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, fmt::format("opening {}", path));
  struct stat st {};
  Status status;
  if (::fstat(fd, &st) != 0) {
    status = FileError(errno, fmt::format("reading {}", path));
  } else if (!S_ISREG(st.st_mode)) {
    status = Status::InvalidArgument(fmt::format("{} is not a regular file", path));
  } else {
    status = impl_->Upload(
        full, S3Source{.data = {}, .fd = fd, .offset = 0, .length = st.st_size, .path = path});
  }
  ::close(fd);
  return status;
}

StatusOr<std::string> S3Store::Get(const std::string& key, size_t max_bytes) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  std::string data;
  S3Call call{.method = "GET",
              .url = impl_->Url(full),
              .what = impl_->What("GET", full),
              .upload = nullptr,
              .content_type = "",
              .into = &data,
              .into_max = max_bytes,
              .into_fd = -1,
              .into_path = ""};
  COHORT_RETURN_IF_ERROR(impl_->PerformOk(call).status());
  return data;
}

Status S3Store::GetFile(const std::string& key, const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  // Whole or not at all: into a temporary file beside the target, renamed over it when whole.
  const std::string tmp = path + ".part";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, fmt::format("creating {}", tmp));
  S3Call call{.method = "GET",
              .url = impl_->Url(full),
              .what = impl_->What("GET", full),
              .upload = nullptr,
              .content_type = "",
              .into = nullptr,
              .into_max = 0,
              .into_fd = fd,
              .into_path = tmp};
  Status status = impl_->PerformOk(call).status();
  if (status.ok() && ::fsync(fd) != 0) status = FileError(errno, fmt::format("syncing {}", tmp));
  if (::close(fd) != 0 && status.ok()) status = FileError(errno, fmt::format("closing {}", tmp));
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = FileError(errno, fmt::format("renaming {} to {}", tmp, path));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDirectory(dir.empty() ? "." : dir);
}

StatusOr<ObjectInfo> S3Store::Head(const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  S3Call call{.method = "HEAD",
              .url = impl_->Url(full),
              .what = impl_->What("HEAD", full),
              .upload = nullptr,
              .content_type = "",
              .into = nullptr,
              .into_max = 0,
              .into_fd = -1,
              .into_path = ""};
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, impl_->PerformOk(call));
  if (answer.content_length < 0) {
    return Status::Internal(fmt::format("{}: the answer has no Content-Length", call.what));
  }
  return ObjectInfo{.key = key, .size = answer.content_length};
}

StatusOr<ListPage> S3Store::List(const std::string& prefix, const std::string& after,
                                 size_t limit) {
  if (limit == 0) return Status::InvalidArgument("limit: must be at least 1");
  std::vector<std::pair<std::string, std::string>> params = {
      {"list-type", "2"}, {"max-keys", std::to_string(std::min<size_t>(limit, 1000))}};
  const std::string in_bucket = impl_->InBucket("");  // "" or "PREFIX/"
  if (!in_bucket.empty() || !prefix.empty()) params.emplace_back("prefix", in_bucket + prefix);
  if (!after.empty()) params.emplace_back("start-after", in_bucket + after);
  std::string xml;
  S3Call call{
      .method = "GET",
      .url =
          S3Url(impl_->connection.endpoint, impl_->location.bucket, "", S3Query(std::move(params))),
      .what = fmt::format("GET (list) s3://{}/{}", impl_->location.bucket, in_bucket + prefix),
      .upload = nullptr,
      .content_type = "",
      .into = &xml,
      .into_max = kS3MaxXmlBody,
      .into_fd = -1,
      .into_path = ""};
  COHORT_RETURN_IF_ERROR(impl_->PerformOk(call).status());
  COHORT_ASSIGN_OR_RETURN(S3Listing listing, ParseS3Listing(xml));
  ListPage page;
  page.more = listing.truncated;
  for (auto& object : listing.objects) {
    if (!object.key.starts_with(in_bucket)) continue;  // not the store's (the server's mistake)
    object.key.erase(0, in_bucket.size());
    page.objects.push_back(std::move(object));
  }
  return page;
}

Status S3Store::Delete(const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  S3Call call{.method = "DELETE",
              .url = impl_->Url(full),
              .what = impl_->What("DELETE", full),
              .upload = nullptr,
              .content_type = "",
              .into = nullptr,
              .into_max = 0,
              .into_fd = -1,
              .into_path = ""};
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, impl_->Perform(call));
  if (S3Ok(answer.status)) return Status::Ok();
  Status error =
      S3HttpError(answer.status, answer.error_body, call.what, impl_->connection.endpoint);
  // Deleting what is not there is fine; a bucket that is not there is not.
  return error.code() == StatusCode::kNotFound ? Status::Ok() : error;
}

StatusOr<std::vector<std::string>> S3Store::PendingUploads(const std::string& prefix) {
  const std::string in_bucket = impl_->InBucket("");
  std::vector<std::pair<std::string, std::string>> params = {{"uploads", ""}};
  if (!in_bucket.empty() || !prefix.empty()) params.emplace_back("prefix", in_bucket + prefix);
  std::string xml;
  S3Call call{.method = "GET",
              .url = S3Url(impl_->connection.endpoint, impl_->location.bucket, "",
                           S3Query(std::move(params))),
              .what = fmt::format("GET (list uploads) s3://{}/{}", impl_->location.bucket,
                                  in_bucket + prefix),
              .upload = nullptr,
              .content_type = "",
              .into = &xml,
              .into_max = kS3MaxXmlBody,
              .into_fd = -1,
              .into_path = ""};
  COHORT_RETURN_IF_ERROR(impl_->PerformOk(call).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<S3Upload> uploads, ParseS3Uploads(xml));
  std::vector<std::string> keys;
  for (auto& upload : uploads) {
    if (upload.key.starts_with(in_bucket)) keys.push_back(upload.key.substr(in_bucket.size()));
  }
  return keys;
}

Status S3Store::CreateBucket() {
  S3Source empty{.data = {}, .fd = -1, .offset = 0, .length = 0, .path = ""};
  S3Call call{.method = "PUT",
              .url = S3Url(impl_->connection.endpoint, impl_->location.bucket, ""),
              .what = fmt::format("PUT (create bucket) s3://{}", impl_->location.bucket),
              .upload = &empty,
              .content_type = "",
              .into = nullptr,
              .into_max = 0,
              .into_fd = -1,
              .into_path = ""};
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, impl_->Perform(call));
  if (S3Ok(answer.status)) return Status::Ok();
  std::optional<S3Error> error = ParseS3Error(answer.error_body);
  if (answer.status == 409 && error && error->code == "BucketAlreadyOwnedByYou")
    return Status::Ok();
  return S3HttpError(answer.status, answer.error_body, call.what, impl_->connection.endpoint);
}

}  // namespace cohort::store
