#include "store/snapshot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "store/content_hash.h"
#include "store/file_tree.h"

namespace cohort::store {
namespace {

using Json = nlohmann::json;

constexpr int kManifestVersion = 1;

int64_t MtimeNs(const struct stat& st) {
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

Json ToJson(const Snapshot& s) {
  Json files = Json::array();
  for (const auto& f : s.files) {
    files.push_back(
        {{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}, {"mtime_ns", f.mtime_ns}});
  }
  Json j{{"version", kManifestVersion},
         {"attempt", s.attempt},
         {"taken_at", FormatTimestamp(s.taken_at)},
         {"bytes", s.bytes},
         {"files", std::move(files)}};
  if (s.step) j["step"] = *s.step;
  return j;
}

Status Bad(const std::string& why) {
  return Status::FailedPrecondition("the checkpoint manifest is damaged: " + why);
}

StatusOr<Snapshot> FromJson(const Json& j) {
  if (!j.is_object()) return Bad("not a JSON object");
  if (j.value("version", 0) != kManifestVersion) {
    return Bad(fmt::format("version is not {}", kManifestVersion));
  }
  Snapshot s;
  if (!j.contains("attempt") || !j["attempt"].is_number_integer()) return Bad("no attempt");
  s.attempt = j["attempt"].get<int>();
  if (j.contains("step")) {
    if (!j["step"].is_number_integer()) return Bad("step is not an integer");
    s.step = j["step"].get<int64_t>();
  }
  if (!j.contains("taken_at") || !j["taken_at"].is_string()) return Bad("no taken_at");
  auto taken = ParseTimestamp(j["taken_at"].get<std::string>());
  if (!taken.ok()) return Bad("taken_at: " + taken.status().message());
  s.taken_at = *taken;
  if (!j.contains("files") || !j["files"].is_array()) return Bad("no files");
  if (j["files"].size() > kMaxSnapshotFiles) {
    return Bad(fmt::format("more than {} files", kMaxSnapshotFiles));
  }
  std::string last;
  for (const Json& f : j["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("size") ||
        !f["size"].is_number_integer() || !f.contains("sha256") || !f["sha256"].is_string()) {
      return Bad("a file without path, size or sha256");
    }
    SnapshotFile file{f["path"].get<std::string>(), f["size"].get<int64_t>(),
                      f["sha256"].get<std::string>(), f.value("mtime_ns", int64_t{0})};
    if (Status key = CheckKey(file.path); !key.ok()) return Bad("path " + key.message());
    if (!s.files.empty() && file.path <= last) return Bad("paths out of order or repeated");
    if (file.size < 0) return Bad(fmt::format("{}: a negative size", file.path));
    if (!IsSha256Hex(file.sha256)) return Bad(fmt::format("{}: sha256 is not one", file.path));
    last = file.path;
    s.bytes += file.size;
    s.files.push_back(std::move(file));
  }
  return s;
}

// Hashes the file open at `fd` from its start.
StatusOr<std::string> HashOpenFile(int fd) {
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    return Status::Internal(fmt::format("cannot seek: {}", strerror(errno)));
  }
  return Sha256OfFile(fd);
}

}  // namespace

std::string ManifestKey(const std::string& prefix) { return prefix + "/manifest.json"; }

std::string BlobKey(const std::string& prefix, const std::string& sha256) {
  return prefix + "/blobs/" + sha256;
}

StatusOr<std::optional<Snapshot>> ReadSnapshot(ObjectStore& store, const std::string& prefix) {
  auto text = store.Get(ManifestKey(prefix), kMaxManifestBytes);
  if (text.status().code() == StatusCode::kNotFound) return std::optional<Snapshot>();
  if (!text.ok()) return text.status();
  Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("not JSON");
  COHORT_ASSIGN_OR_RETURN(Snapshot s, FromJson(j));
  return std::optional<Snapshot>(std::move(s));
}

StatusOr<SnapshotPlan> PlanSnapshot(const std::string& dir, const Snapshot* previous,
                                    size_t max_files) {
  COHORT_ASSIGN_OR_RETURN(Tree tree, ListTree(dir, max_files));
  std::map<std::string, const SnapshotFile*> before;
  if (previous) {
    for (const auto& f : previous->files) before[f.path] = &f;
  }
  SnapshotPlan plan;
  plan.skipped = tree.skipped_count;
  for (const TreeFile& t : tree.files) {
    SnapshotFile file{t.path, t.size, "", 0};
    struct stat st {};
    // A hint only: what is sent is read through OpenBeneath, and its times taken from there.
    if (::fstatat(AT_FDCWD, (dir + "/" + t.path).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      file.mtime_ns = MtimeNs(st);
    }
    auto it = before.find(t.path);
    if (it != before.end() && it->second->size == file.size &&
        it->second->mtime_ns == file.mtime_ns && file.mtime_ns != 0) {
      file.sha256 = it->second->sha256;
      before.erase(it);
    } else {
      if (it != before.end()) before.erase(it);
      plan.bytes_to_send += file.size;
      plan.changed = true;
    }
    plan.files.push_back(std::move(file));
  }
  if (!before.empty()) plan.changed = true;  // files gone
  return plan;
}

StatusOr<Snapshot> PushSnapshot(ObjectStore& store, const std::string& prefix,
                                const std::string& dir, const SnapshotPlan& plan,
                                const Snapshot* previous, int attempt, std::optional<int64_t> step,
                                Timestamp now) {
  std::set<std::string> stored;
  if (previous) {
    for (const auto& f : previous->files) stored.insert(f.sha256);
  }
  Snapshot next;
  next.attempt = attempt;
  next.step = step;
  next.taken_at = now;
  for (SnapshotFile file : plan.files) {
    if (file.sha256.empty()) {
      auto opened = OpenBeneath(dir, file.path);
      // Gone since the plan: not in this snapshot.
      if (opened.status().code() == StatusCode::kNotFound) continue;
      if (!opened.ok()) return opened.status();
      struct stat before {};
      if (::fstat(opened->fd(), &before) != 0) {
        return Status::Internal(
            fmt::format("cannot stat {}/{}: {}", dir, file.path, strerror(errno)));
      }
      COHORT_ASSIGN_OR_RETURN(file.sha256, HashOpenFile(opened->fd()));
      file.size = before.st_size;
      file.mtime_ns = MtimeNs(before);
      bool sent = false;
      if (!stored.count(file.sha256)) {
        const std::string key = BlobKey(prefix, file.sha256);
        auto head = store.Head(key);
        if (head.status().code() == StatusCode::kNotFound) {
          COHORT_RETURN_IF_ERROR(store.PutFile(key, opened->ProcPath()));
          sent = true;
        } else if (!head.ok()) {
          return head.status();
        }
        stored.insert(file.sha256);
      }
      struct stat after {};
      if (::fstat(opened->fd(), &after) != 0 || after.st_size != before.st_size ||
          MtimeNs(after) != MtimeNs(before)) {
        // What was just sent may hold bytes its name does not: it goes, and the snapshot waits.
        if (sent) (void)store.Delete(BlobKey(prefix, file.sha256));
        return Status::Unavailable(
            fmt::format("{} changed while it was sent; it is sent again later", file.path));
      }
    }
    next.bytes += file.size;
    next.files.push_back(std::move(file));
  }
  COHORT_RETURN_IF_ERROR(store.Put(ManifestKey(prefix), ToJson(next).dump()));
  if (previous) {
    std::set<std::string> kept;
    for (const auto& f : next.files) kept.insert(f.sha256);
    for (const auto& f : previous->files) {
      // Best effort: a blob left behind costs space, never correctness.
      if (!kept.count(f.sha256)) (void)store.Delete(BlobKey(prefix, f.sha256));
      kept.insert(f.sha256);
    }
  }
  return next;
}

StatusOr<PullCounts> PullSnapshot(ObjectStore& store, const std::string& prefix,
                                  const Snapshot& snapshot, const std::string& dir,
                                  const std::string& staging, std::optional<Owner> owner) {
  PullCounts counts;
  size_t n = 0;
  for (const SnapshotFile& file : snapshot.files) {
    if (auto here = OpenBeneath(dir, file.path); here.ok()) {
      struct stat st {};
      if (::fstat(here->fd(), &st) == 0 && st.st_size == file.size) {
        auto hash = HashOpenFile(here->fd());
        if (hash.ok() && *hash == file.sha256) {
          ++counts.files_kept;
          continue;
        }
      }
    }
    const std::string staged = fmt::format("{}/pull-{}", staging, n++);
    Status fetched = store.GetFile(BlobKey(prefix, file.sha256), staged);
    if (fetched.code() == StatusCode::kNotFound) {
      return Status::FailedPrecondition(
          fmt::format("{}: its content ({}) is not in the store", file.path, file.sha256));
    }
    COHORT_RETURN_IF_ERROR(fetched);
    OpenFile got(::open(staged.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (got.fd() < 0) {
      return Status::Internal(fmt::format("cannot open {}: {}", staged, strerror(errno)));
    }
    auto hash = Sha256OfFile(got.fd());
    if (!hash.ok() || *hash != file.sha256) {
      ::unlink(staged.c_str());
      return Status::FailedPrecondition(
          fmt::format("{}: the store's copy is not the content its name says", file.path));
    }
    if (::fchmod(got.fd(), 0600) != 0 ||
        (owner && ::fchown(got.fd(), owner->uid, owner->gid) != 0)) {
      ::unlink(staged.c_str());
      return Status::Internal(
          fmt::format("cannot give {} to its account: {}", file.path, strerror(errno)));
    }
    Status moved = MoveBeneath(staged, dir, file.path, owner);
    if (!moved.ok()) {
      ::unlink(staged.c_str());
      return moved;
    }
    ++counts.files_fetched;
    counts.bytes_fetched += file.size;
  }
  return counts;
}

}  // namespace cohort::store
