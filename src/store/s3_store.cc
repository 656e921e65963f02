#include "store/s3_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "os/durable_file.h"
#include "store/s3_request.h"
#include "store/s3_xml.h"

namespace cohort::store {

namespace {
constexpr size_t kS3MinPartSize = size_t{5} << 20;
constexpr size_t kS3MaxParts = 10'000;

}  // namespace

struct S3Store::Impl {
  std::unique_ptr<S3Client> client;
  S3Location location;
  const S3Connection& connection() const { return client->connection(); }
  const S3Options& options() const { return client->options(); }
  StatusOr<S3Answer> Perform(const S3Call& call) { return client->Perform(call); }
  StatusOr<S3Answer> PerformOk(const S3Call& call) { return client->PerformOk(call); }

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
    return S3Url(connection().endpoint, location.bucket, full_key, query);
  }

  Status PutOnce(const std::string& full, const S3Source& source) {
    S3Call call = NewS3Call("PUT", Url(full), What("PUT", full));
    call.upload = &source;
    return PerformOk(call).status();
  }

  Status Upload(const std::string& full, const S3Source& source) {
    if (static_cast<uint64_t>(source.length) <= options().multipart_threshold) {
      return PutOnce(full, source);
    }
    std::string xml;
    S3Call initiate = NewS3Call("POST", Url(full, S3Query({{"uploads", ""}})),
                                What("POST (start a multipart upload)", full));
    initiate.into = &xml;
    initiate.into_max = kS3MaxXmlBody;
    COHORT_RETURN_IF_ERROR(PerformOk(initiate).status());
    COHORT_ASSIGN_OR_RETURN(std::string upload_id, ParseS3UploadId(xml));
    Status status = UploadParts(full, source, upload_id);
    if (status.ok()) return status;
    // Parts left behind take space (and are billed) until they are aborted.
    S3Call abort = NewS3Call("DELETE", Url(full, S3Query({{"uploadId", upload_id}})),
                             What("DELETE (abort a multipart upload)", full));
    auto aborted = Perform(abort);
    if (!aborted.ok() || !(S3Ok(aborted->status) || aborted->status == 404)) {
      Status why = aborted.ok() ? S3HttpError(aborted->status, aborted->error_body, abort.what,
                                              connection().endpoint)
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
    size_t part_size = std::max(options().part_size, (length + kS3MaxParts - 1) / kS3MaxParts);
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
          .into_path = "",
          .range = ""};
      COHORT_ASSIGN_OR_RETURN(S3Answer answer, PerformOk(put));
      if (answer.etag.empty()) {
        return Status::Internal(
            fmt::format("{}: the object store answered without an ETag", put.what));
      }
      // An ETag is a quoted hex digest: nothing in it needs escaping but the quotes, which XML
      // text allows.
      complete += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", number,
                              answer.etag);
      if (options().after_part) options().after_part(number);
    }
    complete += "</CompleteMultipartUpload>";
    S3Source body{.data = complete,
                  .fd = -1,
                  .offset = 0,
                  .length = static_cast<int64_t>(complete.size()),
                  .path = ""};
    std::string xml;
    S3Call finish = NewS3Call("POST", Url(full, S3Query({{"uploadId", id}})),
                              What("POST (complete a multipart upload)", full));
    finish.upload = &body;
    finish.content_type = "application/xml";
    finish.into = &xml;
    finish.into_max = kS3MaxXmlBody;
    COHORT_RETURN_IF_ERROR(PerformOk(finish).status());
    // S3 may answer 200 and then fail the completion in the body.
    if (std::optional<S3Error> error = ParseS3Error(xml)) {
      return Status::Internal(fmt::format("{}: {}: {} (object store at {})", finish.what,
                                          error->code, error->message, connection().endpoint));
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
  auto impl = std::make_unique<Impl>();
  COHORT_ASSIGN_OR_RETURN(impl->client,
                          S3Client::Create(std::move(connection), std::move(options), "s3"));
  impl->location = std::move(location);
  return std::unique_ptr<S3Store>(new S3Store(std::move(impl)));
}

StatusOr<std::unique_ptr<S3Store>> S3Store::Open(std::string_view url,
                                                 const std::string& connection_file,
                                                 S3Options options) {
  COHORT_ASSIGN_OR_RETURN(S3Location location, ParseS3Location(url));
  COHORT_ASSIGN_OR_RETURN(S3Connection connection, LoadS3Connection(connection_file));
  return Open(std::move(connection), std::move(location), std::move(options));
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
  S3Call call = NewS3Call("GET", impl_->Url(full), impl_->What("GET", full));
  call.into = &data;
  call.into_max = max_bytes;
  COHORT_RETURN_IF_ERROR(impl_->PerformOk(call).status());
  return data;
}

StatusOr<std::string> S3Store::GetRange(const std::string& key, int64_t offset, size_t length) {
  COHORT_RETURN_IF_ERROR(CheckRangeStart(offset));
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  // No byte range names nothing: whether the object is there is all there is to say.
  if (length == 0) {
    COHORT_RETURN_IF_ERROR(Head(key).status());
    return std::string();
  }
  std::string data;
  S3Call call = NewS3Call("GET", impl_->Url(full), impl_->What("GET (range)", full));
  const uint64_t last = static_cast<uint64_t>(offset) + std::min<uint64_t>(length, INT64_MAX) - 1;
  call.range = fmt::format("bytes={}-{}", offset, last);
  call.into = &data;
  call.into_max = length;
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, impl_->Perform(call));
  // 416: the range starts at or past the object's end (an empty object's too).
  if (answer.status == 416) return std::string();
  if (!S3Ok(answer.status)) {
    return S3HttpError(answer.status, answer.error_body, call.what, impl_->connection().endpoint);
  }
  // 206 carries the range. A server that ignores Range answers 200 with the whole object: taken
  // (from byte `offset`) when it fits in `length`, else refused from its length (S3Client).
  if (answer.status == 200) data.erase(0, std::min<size_t>(data.size(), offset));
  return data;
}

Status S3Store::GetFile(const std::string& key, const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::string full, impl_->FullKey(key));
  // Whole or not at all: into a temporary file beside the target, renamed over it when whole.
  const std::string tmp = path + ".part";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, fmt::format("creating {}", tmp));
  S3Call call = NewS3Call("GET", impl_->Url(full), impl_->What("GET", full));
  call.into_fd = fd;
  call.into_path = tmp;
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
  S3Call call = NewS3Call("HEAD", impl_->Url(full), impl_->What("HEAD", full));
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
      .url = S3Url(impl_->connection().endpoint, impl_->location.bucket, "",
                   S3Query(std::move(params))),
      .what = fmt::format("GET (list) s3://{}/{}", impl_->location.bucket, in_bucket + prefix),
      .upload = nullptr,
      .content_type = "",
      .into = &xml,
      .into_max = kS3MaxXmlBody,
      .into_fd = -1,
      .into_path = "",
      .range = ""};
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
  S3Call call = NewS3Call("DELETE", impl_->Url(full), impl_->What("DELETE", full));
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, impl_->Perform(call));
  if (S3Ok(answer.status)) return Status::Ok();
  Status error =
      S3HttpError(answer.status, answer.error_body, call.what, impl_->connection().endpoint);
  // Deleting what is not there is fine; a bucket that is not there is not.
  return error.code() == StatusCode::kNotFound ? Status::Ok() : error;
}

StatusOr<std::vector<std::string>> S3Store::PendingUploads(const std::string& prefix) {
  const std::string in_bucket = impl_->InBucket("");
  std::vector<std::pair<std::string, std::string>> params = {{"uploads", ""}};
  if (!in_bucket.empty() || !prefix.empty()) params.emplace_back("prefix", in_bucket + prefix);
  std::string xml;
  S3Call call = NewS3Call(
      "GET",
      S3Url(impl_->connection().endpoint, impl_->location.bucket, "", S3Query(std::move(params))),
      fmt::format("GET (list uploads) s3://{}/{}", impl_->location.bucket, in_bucket + prefix));
  call.into = &xml;
  call.into_max = kS3MaxXmlBody;
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
  S3Call call = NewS3Call("PUT", S3Url(impl_->connection().endpoint, impl_->location.bucket, ""),
                          fmt::format("PUT (create bucket) s3://{}", impl_->location.bucket));
  call.upload = &empty;
  COHORT_ASSIGN_OR_RETURN(S3Answer answer, impl_->Perform(call));
  if (S3Ok(answer.status)) return Status::Ok();
  std::optional<S3Error> error = ParseS3Error(answer.error_body);
  if (answer.status == 409 && error && error->code == "BucketAlreadyOwnedByYou")
    return Status::Ok();
  return S3HttpError(answer.status, answer.error_body, call.what, impl_->connection().endpoint);
}

}  // namespace cohort::store
