// Read-only mode: the master stops taking changes while its state disk is short of space,
// rather than failing a write and stopping (docs/reliability.md, "The state store").
//
// Why before, not after: a write that fails once memory has changed stops the master (Journal),
// and a master restarted on a disk that is still full would stop again at the first agent report
// that ends a task: a crash loop in which nobody can even read the state. Read-only, it keeps
// serving reads, log following and agents' syncs (their reports wait, in the agents, until the
// master writes again), answers changes 503 with the reason, and resumes by itself once there is
// room. The free space is read before every change the outside asks for (a submission, an
// agent's report), not only on the tick: the disk may fill between two ticks. A write refused
// before memory changed (the disk filled in the instant between the check and the write) is
// still the caller's 507, and changes nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "os/disk_space.h"

namespace cohort::master {

class StateDisk {
 public:
  // Read-only below `reserve` free bytes; writable again from 1.5 × `reserve`, so that a disk
  // at the edge does not flip the mode at every check. Without `space`, never read-only.
  StateDisk(std::unique_ptr<DiskSpace> space, uint64_t reserve);

  // Reads the free space (one statvfs) and enters or leaves read-only mode; true when the mode
  // changed. A disk that cannot be measured changes nothing.
  bool Check();
  // Why the master is read-only, or nothing.
  const std::optional<std::string>& read_only() const { return read_only_; }

 private:
  std::unique_ptr<DiskSpace> space_;
  uint64_t reserve_;
  std::optional<std::string> read_only_;
};

}  // namespace cohort::master
