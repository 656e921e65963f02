#include "agent/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cohort::agent {
namespace {

// Holes are punched in whole MiB: fewer calls, and block-aligned on every file system.
constexpr int64_t kTrimUnit = 1 << 20;

}  // namespace

Status TrimOutput(int fd, int64_t keep, int64_t* trimmed) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::Internal(fmt::format("reading the output's size: {}", std::strerror(errno)));
  }
  int64_t until = (static_cast<int64_t>(st.st_size) - keep) / kTrimUnit * kTrimUnit;
  if (until <= *trimmed) return Status::Ok();
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, *trimmed, until - *trimmed) !=
      0) {
    if (errno == EOPNOTSUPP || errno == ENOSYS) {
      return Status::FailedPrecondition("this file system cannot punch holes into the output");
    }
    return Status::Internal(fmt::format("trimming the output: {}", std::strerror(errno)));
  }
  *trimmed = until;
  return Status::Ok();
}

int64_t FirstKeptByte(int fd, int64_t size) {
  off_t data = ::lseek(fd, 0, SEEK_DATA);
  if (data >= 0) return std::min<int64_t>(data, size);
  // ENXIO: no data at all, so every byte is a hole (or the file is empty). Anything else: the
  // file system cannot tell, and has no holes.
  return errno == ENXIO ? size : 0;
}

}  // namespace cohort::agent
