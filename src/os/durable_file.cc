#include "os/durable_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cohort {
namespace {

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status FileError(int err, std::string_view doing) {
  std::string message = fmt::format("{}: {}", doing, std::strerror(err));
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
    return Status(StatusCode::kResourceExhausted, std::move(message));
  }
  return Status::Internal(std::move(message));
}

Status WriteAll(int fd, std::string_view data, std::string_view path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError(errno, fmt::format("writing {}", path));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, fmt::format("opening {}", dir));
  bool synced = ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!synced) return FileError(err, fmt::format("syncing {}", dir));
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode,
                           Durability durability) {
  const bool sync = durability == Durability::kMachineCrash;
  const std::string tmp = path + ".tmp";
  // A temporary file left by an earlier crash would keep its own mode and owner: made anew.
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) {
    return FileError(errno, fmt::format("removing {}", tmp));
  }
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0600);
  if (fd < 0) return FileError(errno, fmt::format("creating {}", tmp));
  Status written = ::fchmod(fd, mode) == 0
                       ? WriteAll(fd, content, tmp)
                       : FileError(errno, fmt::format("setting the mode of {}", tmp));
  if (sync && written.ok() && ::fsync(fd) != 0) {
    written = FileError(errno, fmt::format("syncing {}", tmp));
  }
  if (::close(fd) != 0 && written.ok()) written = FileError(errno, fmt::format("closing {}", tmp));
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return FileError(err, fmt::format("renaming {} to {}", tmp, path));
  }
  return sync ? SyncDirectory(ParentOf(path)) : Status::Ok();
}

}  // namespace cohort
