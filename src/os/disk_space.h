// How much room a file system has left: what the master reads to go read-only before its state
// disk is full rather than after (master/state_disk.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace cohort {

class DiskSpace {
 public:
  virtual ~DiskSpace() = default;
  // Bytes an unprivileged writer may still use; an error if the file system cannot be read.
  virtual StatusOr<uint64_t> FreeBytes() = 0;
  // The directory whose file system this measures, for messages.
  virtual const std::string& where() const = 0;
};

// statvfs(2) of `directory`: the blocks available to unprivileged users (root's reserved blocks
// are not the master's to count on).
std::unique_ptr<DiskSpace> StatDiskSpace(std::string directory);

// A disk whose free space a test sets.
class FixedDiskSpace final : public DiskSpace {
 public:
  explicit FixedDiskSpace(uint64_t free_bytes, std::string where = "/fake")
      : free_(free_bytes), where_(std::move(where)) {}
  StatusOr<uint64_t> FreeBytes() override { return free_; }
  const std::string& where() const override { return where_; }
  void Set(uint64_t free_bytes) { free_ = free_bytes; }

 private:
  uint64_t free_;
  std::string where_;
};

}  // namespace cohort
