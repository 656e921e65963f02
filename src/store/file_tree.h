// The files of a directory as the store takes them (job outputs, checkpoints, datasets, code):
// regular files only, found and opened without following a symbolic link anywhere on the way.
// A task controls its own output directory while the agent that uploads it may run as root, so
// a link to /etc/shadow, or a directory swapped for a link between the listing and the upload,
// must never become an artifact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "os/credentials.h"

namespace cohort::store {

struct TreeFile {
  std::string path;  // relative to the directory, '/'-separated; a valid key (CheckKey)
  int64_t size = 0;
  bool executable = false;  // its owner may execute it
};

struct Tree {
  std::vector<TreeFile> files;  // in path order (bytewise)
  int64_t bytes = 0;
  // What was left out (links, sockets, devices, names that cannot be keys), the first few
  // named with the reason; `skipped_count` counts them all.
  std::vector<std::string> skipped;
  size_t skipped_count = 0;
};

// Directories nested deeper than this are left out, as a loop of bind mounts would be.
inline constexpr int kMaxTreeDepth = 64;

// Whether an entry (its path under the root, and whether it is a directory) is taken: a
// directory that is not is not looked inside.
using TreeFilter = std::function<bool(const std::string& path, bool directory)>;

// The regular files under `dir` (those `keep` takes, when given). kResourceExhausted, naming the
// limit, when there are more than `max_files` of them; kNotFound if `dir` is not there; an empty
// tree for an empty directory.
StatusOr<Tree> ListTree(const std::string& dir, size_t max_files, const TreeFilter& keep = {});

// A file descriptor, closed when the object goes.
class OpenFile {
 public:
  explicit OpenFile(int fd = -1) : fd_(fd) {}
  OpenFile(OpenFile&& other) noexcept : fd_(other.Release()) {}
  OpenFile& operator=(OpenFile&& other) noexcept;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile();
  int fd() const { return fd_; }
  int Release();
  // A path that opens this very file again (/proc/self/fd/N), for APIs that take a path: no
  // name on the way can be swapped for a link any more.
  std::string ProcPath() const;

 private:
  int fd_;
};

// Opens `path` (relative, as ListTree gives it) under `dir` for reading, one component at a
// time, refusing a symbolic link at any of them and anything but a regular file at the end.
StatusOr<OpenFile> OpenBeneath(const std::string& dir, const std::string& path);

// Moves the file at `from` (a private place of the caller's, on the same file system) to `path`
// (relative, a valid key) under `dir`, making the directories on the way (0700, given to `owner`
// when set) one component at a time, never through a symbolic link: a restore that runs as root
// writes into a directory its task's account controls. What was at `path` is replaced, unless it
// is a directory. kPermissionDenied for a link on the way; kFailedPrecondition across file
// systems.
Status MoveBeneath(const std::string& from, const std::string& dir, const std::string& path,
                   std::optional<Owner> owner);

}  // namespace cohort::store
