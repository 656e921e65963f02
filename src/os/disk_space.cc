#include "os/disk_space.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace cohort {
namespace {

class StatvfsDiskSpace final : public DiskSpace {
 public:
  explicit StatvfsDiskSpace(std::string directory) : directory_(std::move(directory)) {}

  StatusOr<uint64_t> FreeBytes() override {
    struct statvfs fs {};
    if (::statvfs(directory_.c_str(), &fs) != 0) {
      return Status::Internal(fmt::format("statvfs {}: {}", directory_, std::strerror(errno)));
    }
    return static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_frsize);
  }
  const std::string& where() const override { return directory_; }

 private:
  std::string directory_;
};

}  // namespace

std::unique_ptr<DiskSpace> StatDiskSpace(std::string directory) {
  return std::make_unique<StatvfsDiskSpace>(std::move(directory));
}

}  // namespace cohort
