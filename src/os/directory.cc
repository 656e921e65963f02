#include "os/directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "os/process.h"

namespace cohort {

Status EnsureDirectory(const std::string& path, mode_t mode, std::optional<Owner> owner) {
  auto failed = [&](const char* call) {
    return Status::Internal(fmt::format("{}: {}: {}", path, call, strerror(errno)));
  };
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec)
    return Status::Internal(
        fmt::format("{}: creating {}: {}", path, parent.string(), ec.message()));
  // Created open to its creator alone, so that it is never open to others before its owner and
  // mode are right.
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return failed("mkdir");
  // O_NOFOLLOW: a symbolic link planted where the directory should be must not make us change
  // another file's owner or mode.
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      struct stat st {};
      bool link = ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
      return Status::Internal(fmt::format("{}: is {}, not a directory", path,
                                          link ? "a symbolic link" : "something else"));
    }
    return failed("open");
  }
  struct stat st {};
  Status result = Status::Ok();
  if (::fstat(fd, &st) != 0) {
    result = failed("fstat");
  } else {
    bool chowned = false;
    if (owner && (st.st_uid != owner->uid || st.st_gid != owner->gid)) {
      if (::fchown(fd, owner->uid, owner->gid) != 0) {
        result = failed("chown");
      } else {
        chowned = true;  // which may have cleared a setgid bit of `mode`
      }
    }
    bool ours = owner || st.st_uid == ::geteuid();
    if (result.ok() && ours && (chowned || (st.st_mode & 07777) != mode) &&
        ::fchmod(fd, mode) != 0) {
      result = failed("chmod");
    }
  }
  ::close(fd);
  return result;
}

namespace {

// Whether `dir` (not a link) is a directory with no entries. Reading it cannot be misled: only
// deleting could, and an empty directory needs nothing deleted.
bool IsEmptyDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return false;
  }
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace

Status EmptyDirectoryAs(const std::string& dir, std::optional<Owner> as) {
  // Most tasks leave their scratch directory empty: no process to start then (a fork and an
  // exec of find for every task were a tenth of the CPU of a burst of short jobs).
  if (IsEmptyDirectory(dir)) return Status::Ok();
  // find(1) deletes depth first and never follows a link; as the account, a link swapped in
  // reaches only what the account could delete anyway.
  SpawnOptions options;
  options.as = as;
  int rc = RunToCompletion({"/usr/bin/find", dir, "-mindepth", "1", "-delete"}, options);
  if (rc != 0) {
    return Status::Internal(fmt::format("emptying {}{}: find exited with {}", dir,
                                        as ? fmt::format(" as uid {}", as->uid) : "", rc));
  }
  return Status::Ok();
}

}  // namespace cohort
