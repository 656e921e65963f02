#include "agent/artifact_uploads.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "model/json.h"
#include "os/durable_file.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

// A store error worth trying again: the store or the network is down or slow.
bool Retryable(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded ||
         s.code() == StatusCode::kInternal || s.code() == StatusCode::kTooManyRequests;
}

std::string Key(const std::string& prefix, const std::string& path) {
  return prefix.empty() ? path : prefix + "/" + path;
}

}  // namespace

ArtifactUploads::ArtifactUploads(std::string dir, const Clock& clock, StoreOpener open_store,
                                 UploadLimits limits)
    : dir_(std::move(dir)), clock_(clock), open_store_(std::move(open_store)), limits_(limits) {}

std::string ArtifactUploads::PathOf(const std::string& id) const {
  return dir_ + "/" + id + ".json";
}

Status ArtifactUploads::Load() {
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::Internal(fmt::format("cannot make {}: {}", dir_, ec.message()));
  // State files hold store credentials.
  if (::chmod(dir_.c_str(), 0700) != 0) return FileError(errno, "chmod " + dir_);
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const fs::path& path = entry.path();
    if (path.extension() != ".json") continue;
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto upload = [&]() -> StatusOr<Upload> {
      COHORT_ASSIGN_OR_RETURN(Json j, ParseJson(text));
      Upload u;
      try {
        u.request.id = j.at("id").get<std::string>();
        u.request.source_dir = j.at("source_dir").get<std::string>();
        u.request.prefix = j.at("prefix").get<std::string>();
        COHORT_ASSIGN_OR_RETURN(u.request.store, StoreAccessFromJson(j.at("store")));
        for (const auto& f : j.at("files")) {
          u.files.push_back(store::TreeFile{f.at(0).get<std::string>(), f.at(1).get<int64_t>()});
        }
      } catch (const std::exception& e) {
        return Status::InvalidArgument(e.what());
      }
      COHORT_ASSIGN_OR_RETURN(u.progress, UploadProgressFromJson(j.at("progress")));
      if (u.progress.files_done > static_cast<int64_t>(u.files.size())) {
        return Status::InvalidArgument("files_done is past the last file");
      }
      return u;
    }();
    if (!upload.ok() || upload->request.id != path.stem().string()) {
      spdlog::error("upload state {} is unreadable ({}); set aside as {}.bad", path.string(),
                    upload.ok() ? "its id is not its name" : upload.status().message(),
                    path.string());
      fs::rename(path, path.string() + ".bad", ec);
      continue;
    }
    std::string id = upload->request.id;
    // A backoff is waited out again from the start; nothing else of the old agent's time holds.
    upload->progress.retry_at.reset();
    uploads_.emplace(id, std::move(*upload));
  }
  if (ec) return Status::Internal(fmt::format("cannot read {}: {}", dir_, ec.message()));
  return Status::Ok();
}

Status ArtifactUploads::Save(const Upload& u) {
  Json files = Json::array();
  for (const auto& f : u.files) files.push_back(Json::array({f.path, f.size}));
  Json j{{"id", u.request.id},
         {"source_dir", u.request.source_dir},
         {"prefix", u.request.prefix},
         {"store", ToJson(u.request.store)},
         {"files", files},
         {"progress", ToJson(u.progress)}};
  COHORT_ASSIGN_OR_RETURN(std::string text, EncodeRecord(j, "upload state"));
  return WriteFileAtomically(PathOf(u.request.id), text, 0600);
}

void ArtifactUploads::SaveOrLog(Upload& u) {
  saved_at_[u.request.id] = clock_.Monotonic();
  Status s = Save(u);
  // The upload goes on: what was not saved is sent again after a restart, which a put allows.
  if (!s.ok()) spdlog::error("cannot save upload {}: {}", u.request.id, s.message());
}

Status ArtifactUploads::Begin(const UploadRequest& request) {
  {
    std::lock_guard lock(mu_);
    if (uploads_.count(request.id)) return Status::Ok();
  }
  Upload u;
  u.request = request;
  u.progress.id = request.id;
  auto tree = store::ListTree(request.source_dir, limits_.max_files);
  if (tree.ok()) {
    u.files = std::move(tree->files);
    u.progress.files_total = static_cast<int64_t>(u.files.size());
    u.progress.bytes_total = tree->bytes;
    u.progress.files_skipped = static_cast<int64_t>(tree->skipped_count);
    for (const auto& s : tree->skipped) spdlog::warn("upload {}: left out {}", request.id, s);
  } else if (tree.status().code() != StatusCode::kNotFound) {
    u.progress.state = UploadState::kFailed;
    u.progress.reason = tree.status().message();
  }
  if (u.progress.state == UploadState::kWaiting && u.files.empty() &&
      u.progress.files_skipped == 0) {
    // Nothing to upload (most jobs write no outputs): nothing to ask the master or to record.
    return Status::Ok();
  }
  // The listing took no lock: a large directory does not hold up the reports.
  std::lock_guard lock(mu_);
  if (uploads_.count(request.id)) return Status::Ok();
  COHORT_RETURN_IF_ERROR(Save(u));
  saved_at_[request.id] = clock_.Monotonic();
  uploads_.emplace(request.id, std::move(u));
  return Status::Ok();
}

void ArtifactUploads::Allow(const std::string& id, const StoreAccess& access) {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(id);
  if (it == uploads_.end()) return;
  Upload& u = it->second;
  if (u.progress.state == UploadState::kUploading) {
    // Fresh credentials for one under way: the next file goes with them.
    u.request.store = access;
    u.store.reset();
    SaveOrLog(u);
    return;
  }
  if (u.progress.state != UploadState::kWaiting) return;
  u.request.store = access;
  u.progress.state = u.files.empty() ? UploadState::kStored : UploadState::kUploading;
  SaveOrLog(u);
}

void ArtifactUploads::Refuse(const std::string& id, const std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(id);
  if (it == uploads_.end() || it->second.progress.state != UploadState::kWaiting) return;
  Fail(it->second, reason);
}

void ArtifactUploads::Fail(Upload& u, std::string reason) {
  u.progress.state = UploadState::kFailed;
  u.progress.reason = std::move(reason);
  u.progress.retry_at.reset();
  u.store.reset();
  SaveOrLog(u);
}

bool ArtifactUploads::Ready(const UploadProgress& p, Timestamp now) const {
  return p.state == UploadState::kUploading && (!p.retry_at || now >= *p.retry_at);
}

bool ArtifactUploads::Step() {
  std::unique_lock lock(mu_);
  Timestamp now = clock_.Now();
  auto it = std::find_if(uploads_.begin(), uploads_.end(),
                         [&](const auto& entry) { return Ready(entry.second.progress, now); });
  if (it == uploads_.end()) return false;
  const std::string id = it->first;
  Upload& u = it->second;
  if (!u.store) {
    auto opened = open_store_(u.request.store);
    if (!opened.ok()) {
      if (Retryable(opened.status())) {
        Retry(u, opened.status());
      } else {
        Fail(u, "cannot open the store: " + opened.status().message());
      }
      return false;
    }
    u.store = std::move(*opened);
  }
  // Copies: the file goes without the lock, while reports read the progress.
  std::shared_ptr<store::ObjectStore> store = u.store;
  const store::TreeFile file = u.files[static_cast<size_t>(u.progress.files_done)];
  const std::string source = u.request.source_dir, prefix = u.request.prefix;
  lock.unlock();

  auto opened = store::OpenBeneath(source, file.path);
  Status sent = Status::Ok();
  int64_t size = 0;
  if (opened.ok()) {
    struct stat st {};
    size = ::fstat(opened->fd(), &st) == 0 ? st.st_size : file.size;
    sent = store->PutFile(Key(prefix, file.path), opened->ProcPath());
  } else {
    // Gone since the listing, or swapped for a link: left out, as the listing leaves them.
    spdlog::warn("upload {}: left out {}: {}", id, file.path, opened.status().message());
  }

  lock.lock();
  it = uploads_.find(id);
  if (it == uploads_.end() || it->second.progress.state != UploadState::kUploading) return false;
  Record(it->second, sent, size, !opened.ok());
  now = clock_.Now();
  return std::any_of(uploads_.begin(), uploads_.end(),
                     [&](const auto& entry) { return Ready(entry.second.progress, now); });
}

void ArtifactUploads::Retry(Upload& u, const Status& why) {
  u.backoff = u.backoff == Duration{} ? limits_.first_backoff
                                      : std::min(u.backoff * 2, limits_.max_backoff);
  u.progress.retry_at = clock_.Now() + u.backoff;
  u.progress.reason = why.message();
  u.store.reset();  // a new connection next time
}

void ArtifactUploads::Record(Upload& u, const Status& sent, int64_t size, bool left_out) {
  const std::string& path = u.files[static_cast<size_t>(u.progress.files_done)].path;
  if (!sent.ok()) {
    if (Retryable(sent)) return Retry(u, sent);
    return Fail(u, fmt::format("the store refused {}: {}", path, sent.message()));
  }
  u.backoff = Duration{};
  u.progress.retry_at.reset();
  u.progress.reason.clear();
  ++u.progress.files_done;
  if (left_out) {
    ++u.progress.files_skipped;
  } else {
    u.progress.bytes_done += size;
  }
  bool done = u.progress.files_done == u.progress.files_total;
  if (done) {
    u.progress.state = UploadState::kStored;
    u.store.reset();
  }
  if (done || clock_.Monotonic() - saved_at_[u.request.id] >= limits_.save_every) SaveOrLog(u);
}

std::vector<UploadProgress> ArtifactUploads::Progress() const {
  std::lock_guard lock(mu_);
  std::vector<UploadProgress> out;
  for (const auto& [id, u] : uploads_) out.push_back(u.progress);
  return out;
}

std::optional<UploadProgress> ArtifactUploads::ProgressOf(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = uploads_.find(id);
  if (it == uploads_.end()) return std::nullopt;
  return it->second.progress;
}

void ArtifactUploads::Forget(const std::string& id) {
  std::lock_guard lock(mu_);
  if (uploads_.erase(id) == 0) return;
  saved_at_.erase(id);
  std::error_code ec;
  fs::remove(PathOf(id), ec);
  if (ec) spdlog::error("cannot remove {}: {}", PathOf(id), ec.message());
}

}  // namespace cohort::agent
