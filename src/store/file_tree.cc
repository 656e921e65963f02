#include "store/file_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "store/object_store.h"

namespace cohort::store {
namespace {

// How many of the files left out a Tree names.
constexpr size_t kSkippedNamed = 10;

std::string Errno(int err) { return std::strerror(err); }

struct Walk {
  size_t max_files;
  const TreeFilter& keep;
  Tree tree;

  void Skip(const std::string& path, const std::string& why) {
    if (tree.skipped.size() < kSkippedNamed) tree.skipped.push_back(path + ": " + why);
    ++tree.skipped_count;
  }

  // Lists the directory open at `fd` (taken), whose path under the root is `prefix`.
  Status Directory(int fd, const std::string& prefix, int depth) {
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      int err = errno;
      ::close(fd);
      return Status::Internal(fmt::format("cannot read directory {}: {}", prefix, Errno(err)));
    }
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    Status status = Status::Ok();
    for (const std::string& name : names) {
      std::string path = prefix.empty() ? name : prefix + "/" + name;
      struct stat st {};
      if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
      // Left out by the caller (.cohortignore): not counted as skipped, nor looked inside.
      if (keep && !keep(path, S_ISDIR(st.st_mode))) continue;
      if (S_ISDIR(st.st_mode)) {
        if (depth >= kMaxTreeDepth) {
          Skip(path, fmt::format("nested deeper than {} directories", kMaxTreeDepth));
          continue;
        }
        int child =
            ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0) {
          Skip(path, "cannot be opened: " + Errno(errno));
          continue;
        }
        status = Directory(child, path, depth + 1);
        if (!status.ok()) break;
      } else if (S_ISREG(st.st_mode)) {
        if (!CheckKey(path).ok()) {
          Skip(path, "its name cannot be a key");
          continue;
        }
        if (tree.files.size() >= max_files) {
          status = Status::ResourceExhausted(
              fmt::format("more than {} files: pack them into fewer, larger ones (`cohort data "
                          "pack DIR OUT` packs many small files into tar shards; docs/data.md)",
                          max_files));
          break;
        }
        tree.files.push_back(
            TreeFile{path, static_cast<int64_t>(st.st_size), (st.st_mode & S_IXUSR) != 0});
        tree.bytes += st.st_size;
      } else {
        Skip(path, S_ISLNK(st.st_mode) ? "a symbolic link (not followed)" : "not a regular file");
      }
    }
    ::closedir(d);
    return status;
  }
};

}  // namespace

StatusOr<Tree> ListTree(const std::string& dir, size_t max_files, const TreeFilter& keep) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound(fmt::format("no directory {}", dir));
    return Status::Internal(fmt::format("cannot open directory {}: {}", dir, Errno(err)));
  }
  Walk walk{max_files, keep, {}};
  Status status = walk.Directory(fd, "", 0);
  if (!status.ok()) return status;
  // Directory() sorts each directory's names; "a/b" and "a.txt" must still come in byte order.
  std::sort(walk.tree.files.begin(), walk.tree.files.end(),
            [](const TreeFile& a, const TreeFile& b) { return a.path < b.path; });
  return std::move(walk.tree);
}

OpenFile& OpenFile::operator=(OpenFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.Release();
  }
  return *this;
}

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
}

int OpenFile::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string OpenFile::ProcPath() const { return fmt::format("/proc/self/fd/{}", fd_); }

StatusOr<OpenFile> OpenBeneath(const std::string& dir, const std::string& path) {
  Status key = CheckKey(path);
  if (!key.ok()) return Status::InvalidArgument("path " + key.message());
  OpenFile current(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (current.fd() < 0) {
    return Status::NotFound(fmt::format("cannot open directory {}: {}", dir, Errno(errno)));
  }
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    bool last = end == std::string::npos;
    std::string name = path.substr(start, last ? std::string::npos : end - start);
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    OpenFile next(::openat(current.fd(), name.c_str(), flags));
    if (next.fd() < 0) {
      int err = errno;
      struct stat st {};
      bool link = ::fstatat(current.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISLNK(st.st_mode);
      // O_NOFOLLOW says ELOOP for a link at the end, O_DIRECTORY ENOTDIR for one on the way.
      if (link || err == ELOOP) {
        return Status::PermissionDenied(
            fmt::format("{}/{}: a symbolic link on the way (not followed)", dir, path));
      }
      if (err == ENOENT) return Status::NotFound(fmt::format("no file {}/{}", dir, path));
      return Status::Internal(fmt::format("cannot open {}/{}: {}", dir, path, Errno(err)));
    }
    if (last) {
      struct stat st {};
      if (::fstat(next.fd(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return Status::PermissionDenied(fmt::format("{}/{}: not a regular file", dir, path));
      }
      // Reads block as usual from here on; O_NONBLOCK only kept a FIFO from hanging the open.
      ::fcntl(next.fd(), F_SETFL, ::fcntl(next.fd(), F_GETFL) & ~O_NONBLOCK);
      return next;
    }
    current = std::move(next);
    start = end + 1;
  }
}

Status MoveBeneath(const std::string& from, const std::string& dir, const std::string& path,
                   std::optional<Owner> owner) {
  Status key = CheckKey(path);
  if (!key.ok()) return Status::InvalidArgument("path " + key.message());
  OpenFile current(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (current.fd() < 0) {
    return Status::NotFound(fmt::format("cannot open directory {}: {}", dir, Errno(errno)));
  }
  auto link_on_the_way = [&] {
    return Status::PermissionDenied(fmt::format(
        "{}/{}: a symbolic link or a file where a directory goes (not followed)", dir, path));
  };
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string name =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) {
      if (::renameat(AT_FDCWD, from.c_str(), current.fd(), name.c_str()) != 0) {
        int err = errno;
        if (err == EXDEV) {
          return Status::FailedPrecondition(
              fmt::format("cannot move {} to {}/{}: not on the same file system", from, dir, path));
        }
        return Status::Internal(
            fmt::format("cannot move {} to {}/{}: {}", from, dir, path, Errno(err)));
      }
      return Status::Ok();
    }
    OpenFile next(
        ::openat(current.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.fd() < 0 && errno == ENOENT) {
      if (::mkdirat(current.fd(), name.c_str(), 0700) != 0 && errno != EEXIST) {
        return Status::Internal(
            fmt::format("cannot make directory {}/{}: {}", dir, path.substr(0, end), Errno(errno)));
      }
      next = OpenFile(
          ::openat(current.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (next.fd() >= 0 && owner && ::fchown(next.fd(), owner->uid, owner->gid) != 0) {
        return Status::Internal(fmt::format("cannot give directory {}/{} to uid {}: {}", dir,
                                            path.substr(0, end), owner->uid, Errno(errno)));
      }
    }
    if (next.fd() < 0) {
      int err = errno;
      // O_NOFOLLOW says ELOOP for a link, O_DIRECTORY ENOTDIR for a file where a directory goes.
      if (err == ELOOP || err == ENOTDIR) return link_on_the_way();
      return Status::Internal(
          fmt::format("cannot open directory {}/{}: {}", dir, path.substr(0, end), Errno(err)));
    }
    current = std::move(next);
    start = end + 1;
  }
}

}  // namespace cohort::store
