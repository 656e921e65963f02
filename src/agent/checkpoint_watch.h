// Checkpoints noticed as files: the top level of a job's COHORT_CHECKPOINT_DIR, looked at on the
// agent's sampling tick (docs/observability.md, "Checkpoint reports").
//
// A checkpoint is an entry (a regular file, or a directory such as Hugging Face's
// checkpoint-500/) that is new or changed (another inode, size or modification time) and then
// stays as it is for one look: a file still being written changes between looks, and a file
// renamed into place is whole when it appears. Its time is the earlier of its modification time
// and the look that first saw it as it stayed, so a file server's clock ahead of ours cannot make
// a checkpoint newer than the agent saw it. What the first look finds modified before `since`
// (the task's start: an earlier attempt's checkpoints) is taken as known; what it finds modified
// since then counts like a new entry, so that a task that checkpoints before the first look is not
// missed. Names that begin with '.' or hold ".tmp" are not looked at:
// they are the temporary files that a careful writer renames into place.
//
// Bounded: only the top level, not followed into (a directory counts by its own modification
// time, which moves when entries are added, removed or renamed in it), no symbolic link
// followed, and at most `max_entries` entries looked at per look, in the order the directory
// lists them; beyond that, nothing is watched, and `truncated()` says so.
//
// Used by one thread (the agent's main loop).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/time.h"

namespace cohort::agent {

inline constexpr size_t kMaxCheckpointEntries = 1000;

class CheckpointWatch {
 public:
  CheckpointWatch(std::string dir, Timestamp since, size_t max_entries = kMaxCheckpointEntries);

  // One look at the directory at `now`: the newest checkpoint completed since the last look.
  std::optional<Timestamp> Look(Timestamp now);
  // The last look stopped at max_entries.
  bool truncated() const { return truncated_; }

 private:
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    Timestamp first_seen;  // in this state
    bool counted = false;  // reported, or known from the first look
    bool operator==(const Entry& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
    }
  };

  std::string dir_;
  Timestamp since_;
  size_t max_entries_;
  bool first_ = true;
  bool truncated_ = false;
  std::map<std::string, Entry> entries_;
};

}  // namespace cohort::agent
