// A job's outputs in the object store (docs/api.md, "Artifacts"): listed a page at a time and
// read whole (up to kMaxArtifactAnswer) or by ranges, by whoever may read the job. Each store call
// runs on the API's store reader (api/store_reads.h), never on the event loop.
#include <fmt/format.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "api/api_server.h"
#include "api/byte_range.h"
#include "api/request_params.h"
#include "master/artifacts.h"
#include "store/object_store.h"

namespace cohort::api {

namespace {

// One page of a listing, and the most one answer holds of an output: a client asks for ranges
// of a larger one (cohort artifacts get, the dashboard).
constexpr size_t kMaxArtifactPage = 1000;
constexpr int64_t kMaxArtifactAnswer = int64_t{8} << 20;

// OK for a path below the job's outputs (store::CheckKey), else kInvalidArgument naming
// `field` and why.
Status CheckArtifactPath(std::string_view field, const std::string& path) {
  Status key = store::CheckKey(path);
  if (key.ok()) return key;
  std::string why = key.message();
  if (why.starts_with("key ")) why.erase(0, 4);
  if (why.starts_with("the key ")) why.replace(0, 7, "the path");
  return Status::InvalidArgument(fmt::format(
      "{}: {}; an output's path is relative to the job's outputs, as `cohort artifacts ls` "
      "shows it",
      field, why));
}

// Characters a quoted filename may hold as they are; the rest goes in filename* (RFC 6266).
std::string ArtifactDisposition(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  std::string plain;
  std::string encoded;
  for (unsigned char c : name) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '-' || c == '_';
    plain += (safe || c == ' ') && c < 0x80 ? static_cast<char>(c) : '_';
    encoded += safe ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return fmt::format("attachment; filename=\"{}\"; filename*=UTF-8''{}", plain, encoded);
}

HttpResponse ArtifactBytes(int status, const std::string& path, std::string data) {
  HttpResponse response{status, "application/octet-stream", std::move(data)};
  response.headers.emplace_back("Content-Disposition", ArtifactDisposition(path));
  response.headers.emplace_back("Accept-Ranges", "bytes");
  // Never shown as a page of the dashboard's origin, whatever the bytes look like.
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return response;
}

// On the store reader: the output at `key`, whole or the asked range.
StatusOr<HttpResponse> ReadArtifact(store::ObjectStore& store, JobId job, const std::string& key,
                                    const std::string& path,
                                    const std::optional<ByteRangeSpec>& spec) {
  auto info = store.Head(key);
  if (info.status().code() == StatusCode::kNotFound) {
    return Status::NotFound(fmt::format(
        "job {} has no output \"{}\" in the store: `cohort artifacts ls {}` lists what it has", job,
        path.substr(0, 200), job));
  }
  COHORT_RETURN_IF_ERROR(info.status());
  const int64_t size = info->size;
  if (!spec) {
    if (size > kMaxArtifactAnswer) {
      HttpResponse too_large = ErrorResponse(Status::InvalidArgument(fmt::format(
          "output \"{}\" of job {} is {} bytes, more than the {} one answer holds: ask for it in "
          "ranges (Range: bytes=0-{}, and so on), as `cohort artifacts get` does",
          path.substr(0, 200), job, size, kMaxArtifactAnswer, kMaxArtifactAnswer - 1)));
      too_large.status = 413;
      return too_large;
    }
    COHORT_ASSIGN_OR_RETURN(std::string data,
                            store.Get(key, static_cast<size_t>(kMaxArtifactAnswer)));
    return ArtifactBytes(200, path, std::move(data));
  }
  std::optional<ByteRange> range = ResolveByteRange(*spec, size, kMaxArtifactAnswer);
  std::string data;
  if (range) {
    COHORT_ASSIGN_OR_RETURN(data,
                            store.GetRange(key, range->offset, static_cast<size_t>(range->length)));
    range->length = static_cast<int64_t>(data.size());  // less if it was replaced since
  }
  if (!range || data.empty()) {
    HttpResponse unsatisfiable = ErrorResponse(Status::InvalidArgument(fmt::format(
        "Range: output \"{}\" of job {} is {} bytes; the range asked for starts at or past its "
        "end",
        path.substr(0, 200), job, size)));
    unsatisfiable.status = 416;
    unsatisfiable.headers.emplace_back("Content-Range", fmt::format("bytes */{}", size));
    return unsatisfiable;
  }
  HttpResponse response = ArtifactBytes(206, path, std::move(data));
  response.headers.emplace_back("Content-Range", ContentRange(*range, size));
  return response;
}

}  // namespace

Status ApiServer::ReadStore(const Call& call, StoreReads::Read read) {
  // Work for the loop while a read is under way: a loop run by hand (the tests) waits for its
  // answer instead of finding nothing to do.
  auto busy =
      std::make_shared<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          ioc_.get_executor());
  Status started = store_reads_->Start(
      std::move(read), [responder = call.responder, busy](StatusOr<HttpResponse> answer) {
        SendAnswer(*responder, std::move(answer));
      });
  if (!started.ok()) {
    HttpResponse response = ErrorResponse(started);
    response.headers.emplace_back("Retry-After", "1");
    call.responder->Send(std::move(response));
  }
  return Status::Ok();
}

Status ApiServer::ListArtifacts(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"after", "limit"}));
  COHORT_ASSIGN_OR_RETURN(const Job* job, ReadableJob(call));
  COHORT_ASSIGN_OR_RETURN(size_t limit,
                          PageLimit(call.request, kMaxArtifactPage, kMaxArtifactPage, "files"));
  const std::string prefix = master::Artifacts::OutputsKey(job->id) + "/";
  std::string after;
  if (auto it = call.request.query.find("after");
      it != call.request.query.end() && !it->second.empty()) {
    COHORT_RETURN_IF_ERROR(CheckArtifactPath("after", it->second));
    after = prefix + it->second;
  }
  // The upload's state as the job holds it now; the files as the store holds them when read.
  Json head{{"job", job->id},
            {"artifacts", job->artifacts ? ToJson(*job->artifacts) : Json(nullptr)}};
  return ReadStore(
      call,
      [prefix, after, limit,
       head = std::move(head)](store::ObjectStore& store) -> StatusOr<HttpResponse> {
        COHORT_ASSIGN_OR_RETURN(store::ListPage page, store.List(prefix, after, limit));
        Json files = Json::array();
        for (const auto& object : page.objects) {
          files.push_back(Json{{"path", object.key.substr(prefix.size())}, {"size", object.size}});
        }
        Json answer = head;
        answer["files"] = std::move(files);
        answer["more"] = page.more;
        return JsonResponse(200, answer);
      });
}

Status ApiServer::GetArtifact(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  COHORT_ASSIGN_OR_RETURN(const Job* job, ReadableJob(call));
  const std::string& path = call.params.at("path");
  COHORT_RETURN_IF_ERROR(CheckArtifactPath("path", path));
  std::string key = master::Artifacts::OutputsKey(job->id) + "/" + path;
  COHORT_RETURN_IF_ERROR(CheckArtifactPath("path", key));  // too long with its prefix
  std::optional<ByteRangeSpec> range;
  if (auto it = call.request.headers.find("range"); it != call.request.headers.end()) {
    COHORT_ASSIGN_OR_RETURN(range, ParseByteRange(it->second));
  }
  return ReadStore(call,
                   [id = job->id, key = std::move(key), path, range](store::ObjectStore& store) {
                     return ReadArtifact(store, id, key, path, range);
                   });
}

}  // namespace cohort::api
