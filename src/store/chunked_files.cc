#include "store/chunked_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "model/json.h"
#include "os/durable_file.h"
#include "store/content_hash.h"
#include "store/dataset_layout.h"

namespace cohort::store {
namespace {

// Closes a descriptor on every way out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status Chown(const std::string& path, const std::optional<Owner>& owner) {
  if (!owner) return Status::Ok();
  if (::lchown(path.c_str(), owner->uid, owner->gid) != 0) {
    return Status::Internal(
        fmt::format("cannot give {} to uid {}: {}", path, owner->uid, strerror(errno)));
  }
  return Status::Ok();
}

Status PullFile(ObjectStore& store, const DatasetFile& file, const std::string& path,
                const PullFilesOptions& options, int64_t& written) {
  Fd out{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)};
  if (out.fd < 0)
    return Status::Internal(fmt::format("cannot create {}: {}", path, strerror(errno)));
  for (const DatasetChunk& chunk : file.chunks) {
    auto bytes = store.Get(BlobKey(chunk.sha256), static_cast<size_t>(chunk.size) + 1);
    if (!bytes.ok()) {
      if (bytes.status().code() == StatusCode::kNotFound) {
        return Status::NotFound(fmt::format("{}: its chunk {} is not in the store", file.path,
                                            chunk.sha256.substr(0, 12)));
      }
      return Status(bytes.status().code(),
                    fmt::format("{}: reading a chunk: {}", file.path, bytes.status().message()));
    }
    auto hash = Sha256Hex(*bytes);
    COHORT_RETURN_IF_ERROR(hash.status());
    if (static_cast<int64_t>(bytes->size()) != chunk.size || *hash != chunk.sha256) {
      return Status::FailedPrecondition(
          fmt::format("{}: the store's copy of its chunk {} is damaged ({} bytes, hash {})",
                      file.path, chunk.sha256.substr(0, 12), bytes->size(), hash->substr(0, 12)));
    }
    COHORT_RETURN_IF_ERROR(WriteAll(out.fd, *bytes, path));
    written += chunk.size;
    if (options.progress) options.progress(written);
  }
  mode_t mode = options.file_mode;
  if (file.executable) mode |= (mode & 0444) >> 2;
  if (::fchmod(out.fd, mode) != 0) {
    return Status::Internal(fmt::format("cannot set the mode of {}: {}", path, strerror(errno)));
  }
  if (options.owner && ::fchown(out.fd, options.owner->uid, options.owner->gid) != 0) {
    return Status::Internal(
        fmt::format("cannot give {} to uid {}: {}", path, options.owner->uid, strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<DatasetFile>> ReadFileManifest(ObjectStore& store, const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(std::string text, store.Get(key, kMaxDatasetManifestBytes));
  auto damaged = [&](const std::string& why) {
    return Status::FailedPrecondition(fmt::format("the manifest {} is damaged: {}", key, why));
  };
  auto doc = ParseJson(text);
  if (!doc.ok() || !doc->is_object() || !doc->contains("files")) {
    return damaged("it is not a JSON object with \"files\"");
  }
  auto files = DatasetFilesFromJson((*doc)["files"]);
  if (!files.ok()) return damaged(files.status().message());
  if (Status s = CheckDatasetFiles(*files); !s.ok()) return damaged(s.message());
  return files;
}

Status PullChunkedFiles(ObjectStore& store, const std::vector<DatasetFile>& files,
                        const std::string& dir, const PullFilesOptions& options) {
  // Every directory on the way, parents first (a set of paths sorts "a" before "a/b").
  std::set<std::string> dirs;
  for (const DatasetFile& file : files) {
    for (size_t slash = file.path.find('/'); slash != std::string::npos;
         slash = file.path.find('/', slash + 1)) {
      dirs.insert(file.path.substr(0, slash));
    }
  }
  for (const std::string& d : dirs) {
    const std::string path = dir + "/" + d;
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::Internal(fmt::format("cannot make {}: {}", path, strerror(errno)));
    }
  }
  int64_t written = 0;
  for (const DatasetFile& file : files) {
    COHORT_RETURN_IF_ERROR(PullFile(store, file, dir + "/" + file.path, options, written));
  }
  // Deepest first: a directory's mode may take away the right to change what is in it.
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    const std::string path = dir + "/" + *it;
    COHORT_RETURN_IF_ERROR(Chown(path, options.owner));
    if (::chmod(path.c_str(), options.dir_mode) != 0) {
      return Status::Internal(fmt::format("cannot set the mode of {}: {}", path, strerror(errno)));
    }
  }
  return Status::Ok();
}

}  // namespace cohort::store
