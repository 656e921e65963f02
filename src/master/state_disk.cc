#include "master/state_disk.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/units.h"

namespace cohort::master {

StateDisk::StateDisk(std::unique_ptr<DiskSpace> space, uint64_t reserve)
    : space_(std::move(space)), reserve_(reserve) {}

bool StateDisk::Check() {
  if (!space_) return false;
  StatusOr<uint64_t> free = space_->FreeBytes();
  if (!free.ok()) {
    spdlog::warn("cannot tell how much room the state disk has: {}", free.status().ToString());
    return false;
  }
  const uint64_t resume_at = reserve_ + reserve_ / 2;
  if (!read_only_ && *free < reserve_) {
    read_only_ = fmt::format(
        "the master is read-only: its state disk ({}) has {} free, under the reserve of {} "
        "(cohortd master --state-disk-reserve); free space there and it takes changes again "
        "once {} are free. Reads, log following and agents' syncs are served meanwhile",
        space_->where(), FormatByteSizeApprox(static_cast<int64_t>(*free)),
        FormatByteSize(static_cast<int64_t>(reserve_)),
        FormatByteSize(static_cast<int64_t>(resume_at)));
    spdlog::error("{}", *read_only_);
    return true;
  }
  if (read_only_ && *free >= resume_at) {
    read_only_.reset();
    spdlog::info("the state disk ({}) has {} free again: the master takes changes again",
                 space_->where(), FormatByteSizeApprox(static_cast<int64_t>(*free)));
    return true;
  }
  return false;
}

}  // namespace cohort::master
