#include "agent/dataset_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "os/directory.h"
#include "store/chunked_files.h"
#include "store/content_hash.h"
#include "store/dataset_layout.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

constexpr size_t kIdLength = 32;

StatusOr<std::string> Token() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return Status::Internal(fmt::format("getrandom: {}", strerror(errno)));
  }
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

// A version's directory name, read back: <id>-<bytes>-<token>.
struct VersionName {
  std::string id;
  int64_t bytes = 0;
};
std::optional<VersionName> ParseVersionName(const std::string& name) {
  if (name.size() < kIdLength + 3 || name[kIdLength] != '-') return std::nullopt;
  size_t dash = name.find('-', kIdLength + 1);
  if (dash == std::string::npos) return std::nullopt;
  VersionName parsed{name.substr(0, kIdLength), 0};
  const char* first = name.data() + kIdLength + 1;
  const char* last = name.data() + dash;
  auto [end, error] = std::from_chars(first, last, parsed.bytes);
  if (error != std::errc() || end != last) return std::nullopt;
  return parsed;
}

// Removes a tree whose directories may have no write permission (a version is 0555).
void RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
  }
  fs::remove_all(path, ec);
}

Status Lock(int fd, int how, const std::string& path) {
  while (::flock(fd, how) != 0) {
    if (errno == EINTR) continue;
    return Status::Internal(fmt::format("cannot lock {}: {}", path, strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace

Status DatasetCache::Prepare() const {
  COHORT_RETURN_IF_ERROR(EnsureDirectory(dir_, 0711, std::nullopt));
  COHORT_RETURN_IF_ERROR(EnsureDirectory(dir_ + "/locks", 0700, std::nullopt));
  COHORT_RETURN_IF_ERROR(EnsureDirectory(dir_ + "/versions", 0711, std::nullopt));
  return EnsureDirectory(dir_ + "/staging", 0700, std::nullopt);
}

std::string DatasetCache::LockPath(const std::string& id) const { return dir_ + "/locks/" + id; }

StatusOr<std::string> DatasetCache::Find(const std::string& id) const {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir_ + "/versions", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (auto parsed = ParseVersionName(name); parsed && parsed->id == id) return name;
  }
  if (ec) return Status::Internal(fmt::format("cannot list {}/versions: {}", dir_, ec.message()));
  return std::string();
}

StatusOr<DatasetCache::Held> DatasetCache::Acquire(store::ObjectStore& store,
                                                   const std::string& manifest_key,
                                                   const Progress& progress) {
  COHORT_RETURN_IF_ERROR(Prepare());
  COHORT_ASSIGN_OR_RETURN(std::string id, store::DatasetCacheId(manifest_key));
  const std::string lock_path = LockPath(id);
  Held held;
  held.lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (held.lock_fd < 0) {
    return Status::Internal(fmt::format("cannot open {}: {}", lock_path, strerror(errno)));
  }
  auto fail = [&](Status s) {
    ::close(held.lock_fd);
    return s;
  };
  // Found here under a shared lock, as most tasks find it; fetched under an exclusive one.
  auto use = [&](const std::string& name) -> StatusOr<Held> {
    held.path = dir_ + "/versions/" + name;
    held.bytes = ParseVersionName(name)->bytes;
    ::utimensat(AT_FDCWD, held.path.c_str(), nullptr, 0);  // its last use, for eviction
    return held;
  };
  if (Status s = Lock(held.lock_fd, LOCK_SH, lock_path); !s.ok()) return fail(s);
  auto found = Find(id);
  if (!found.ok()) return fail(found.status());
  if (!found->empty()) return use(*found);
  if (Status s = Lock(held.lock_fd, LOCK_EX, lock_path); !s.ok()) return fail(s);
  found = Find(id);  // fetched by another task while this one waited
  if (!found.ok()) return fail(found.status());
  if (found->empty()) {
    auto files = store::ReadFileManifest(store, manifest_key);
    if (!files.ok()) return fail(files.status());
    auto token = Token();
    if (!token.ok()) return fail(token.status());
    const int64_t bytes = store::DatasetBytes(*files);
    const std::string staging = fmt::format("{}/staging/{}-{}", dir_, id, *token);
    if (::mkdir(staging.c_str(), 0700) != 0) {
      return fail(Status::Internal(fmt::format("cannot make {}: {}", staging, strerror(errno))));
    }
    Status pulled = store::PullChunkedFiles(store, *files, staging,
                                            store::PullFilesOptions{.progress = [&](int64_t done) {
                                              if (progress) progress(done, bytes);
                                            }});
    if (pulled.ok() && ::chmod(staging.c_str(), 0555) != 0) {
      pulled =
          Status::Internal(fmt::format("cannot set the mode of {}: {}", staging, strerror(errno)));
    }
    const std::string name = fmt::format("{}-{}-{}", id, bytes, *token);
    if (pulled.ok() && ::rename(staging.c_str(), (dir_ + "/versions/" + name).c_str()) != 0) {
      pulled = Status::Internal(
          fmt::format("cannot move {} into {}/versions: {}", staging, dir_, strerror(errno)));
    }
    if (!pulled.ok()) {
      RemoveTree(staging);
      return fail(pulled);
    }
    held.fetched = true;
    *found = name;
  }
  if (Status s = Lock(held.lock_fd, LOCK_SH, lock_path); !s.ok()) return fail(s);
  return use(*found);
}

StatusOr<int64_t> DatasetCache::Trim() {
  COHORT_RETURN_IF_ERROR(Prepare());
  struct Kept {
    std::string name;
    VersionName parsed;
    fs::file_time_type used;
  };
  std::vector<Kept> kept;
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir_ + "/versions", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    auto parsed = ParseVersionName(name);
    if (!parsed) continue;
    std::error_code time_ec;
    auto used = fs::last_write_time(it->path(), time_ec);
    kept.push_back(Kept{name, *parsed, used});
    total += parsed->bytes;
  }
  if (ec) return Status::Internal(fmt::format("cannot list {}/versions: {}", dir_, ec.message()));
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) { return a.used < b.used; });
  // Taken only when no task holds the version, and no fetch of it is under way.
  auto try_lock = [&](const std::string& id) -> int {
    int fd = ::open(LockPath(id).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  };
  int64_t evicted = 0;
  for (const Kept& k : kept) {
    if (total <= max_bytes_) break;
    int fd = try_lock(k.parsed.id);
    if (fd < 0) continue;  // in use
    auto token = Token();
    const std::string from = dir_ + "/versions/" + k.name;
    const std::string doomed =
        fmt::format("{}/staging/evicted-{}", dir_, token.ok() ? *token : k.name);
    // Gone from versions/ at once; removed at leisure.
    if (::rename(from.c_str(), doomed.c_str()) == 0) {
      RemoveTree(doomed);
      total -= k.parsed.bytes;
      evicted += k.parsed.bytes;
    }
    ::close(fd);
  }
  // Fetches a supervisor did not finish (killed mid-way): their lock is free.
  std::vector<std::string> staged;
  for (auto it = fs::directory_iterator(dir_ + "/staging", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    staged.push_back(it->path().filename().string());
  }
  for (const std::string& name : staged) {
    const std::string path = dir_ + "/staging/" + name;
    if (name.starts_with("evicted-")) {
      RemoveTree(path);
      continue;
    }
    if (name.size() <= kIdLength || name[kIdLength] != '-') continue;
    int fd = try_lock(name.substr(0, kIdLength));
    if (fd < 0) continue;
    RemoveTree(path);
    ::close(fd);
  }
  return evicted;
}

StatusOr<std::vector<std::string>> DatasetCache::Ids(size_t most) const {
  std::vector<std::pair<fs::file_time_type, std::string>> kept;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir_ + "/versions", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    auto parsed = ParseVersionName(it->path().filename().string());
    if (!parsed) continue;
    std::error_code time_ec;
    kept.emplace_back(fs::last_write_time(it->path(), time_ec), parsed->id);
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::Internal(fmt::format("cannot list {}/versions: {}", dir_, ec.message()));
  }
  std::sort(kept.begin(), kept.end(), std::greater<>());
  if (kept.size() > most) kept.resize(most);
  std::vector<std::string> ids;
  ids.reserve(kept.size());
  for (auto& [used, id] : kept) ids.push_back(std::move(id));
  return ids;
}

StatusOr<int64_t> DatasetCache::Bytes() const {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir_ + "/versions", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (auto parsed = ParseVersionName(it->path().filename().string())) total += parsed->bytes;
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::Internal(fmt::format("cannot list {}/versions: {}", dir_, ec.message()));
  }
  return total;
}

}  // namespace cohort::agent
