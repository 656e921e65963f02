#include "agent/checkpoint_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>

namespace cohort::agent {
namespace {

bool Ignored(std::string_view name) {
  return name.empty() || name.front() == '.' || name.find(".tmp") != std::string_view::npos;
}

}  // namespace

CheckpointWatch::CheckpointWatch(std::string dir, Timestamp since, size_t max_entries)
    : dir_(std::move(dir)), since_(since), max_entries_(max_entries) {}

std::optional<Timestamp> CheckpointWatch::Look(Timestamp now) {
  const bool first = std::exchange(first_, false);
  truncated_ = false;
  std::map<std::string, Entry> seen;
  // O_NOFOLLOW: a task that swaps its checkpoint directory for a link learns nothing of the
  // directory it points at.
  int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (fd >= 0 && !d) ::close(fd);
  size_t looked = 0;
  while (d) {
    dirent* e = ::readdir(d);
    if (!e) break;
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (looked == max_entries_) {
      truncated_ = true;
      break;
    }
    ++looked;
    if (Ignored(name)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
    Entry entry;
    entry.dev = st.st_dev;
    entry.ino = st.st_ino;
    entry.size = st.st_size;
    entry.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    entry.first_seen = now;
    entry.counted = first && FromMicros(entry.mtime_ns / 1000) < since_;
    seen.emplace(std::string(name), entry);
  }
  if (d) ::closedir(d);
  std::optional<Timestamp> newest;
  for (auto& [name, entry] : seen) {
    if (first) continue;
    auto before = entries_.find(name);
    if (before == entries_.end() || !(before->second == entry)) continue;  // new or changed
    entry.first_seen = before->second.first_seen;
    entry.counted = before->second.counted;
    if (entry.counted) continue;
    entry.counted = true;
    Timestamp at = std::min(entry.first_seen, FromMicros(entry.mtime_ns / 1000));
    newest = newest ? std::max(*newest, at) : at;
  }
  entries_ = std::move(seen);
  return newest;
}

}  // namespace cohort::agent
