#include "os/proc_io.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <string.h>
#include <unistd.h>

#include <array>

#include "common/strings.h"

namespace cohort {

std::optional<ProcessIo> ParseProcessIo(std::string_view text) {
  std::optional<int64_t> rchar, syscr;
  for (const std::string& line : Split(text, '\n')) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string_view key = Trim(std::string_view(line).substr(0, colon));
    auto value = [&] {
      return ParseInteger(Trim(std::string_view(line).substr(colon + 1)), 0, INT64_MAX);
    };
    if (key == "rchar") rchar = value();
    if (key == "syscr") syscr = value();
  }
  if (!rchar || !syscr) return std::nullopt;
  return ProcessIo{*rchar, *syscr};
}

StatusOr<ProcessIo> ReadProcessIo(const std::string& proc_root, pid_t pid) {
  const std::string path = fmt::format("{}/{}/io", proc_root, pid);
  auto failed = [&](int error) -> Status {
    // The kernel says ESRCH when the process ended after the file was opened.
    if (error == ENOENT || error == ESRCH) return Status::NotFound(path + ": no such process");
    if (error == EACCES || error == EPERM) {
      return Status::PermissionDenied(fmt::format("{}: {}", path, strerror(error)));
    }
    return Status::Internal(fmt::format("{}: {}", path, strerror(error)));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(errno);
  std::string text;
  std::array<char, 512> buf;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      return failed(error);
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  auto io = ParseProcessIo(text);
  if (!io) return Status::Internal(path + ": no rchar and syscr in it");
  return *io;
}

}  // namespace cohort
