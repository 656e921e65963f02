#include "data/dataset_files.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "store/content_hash.h"
#include "store/file_tree.h"

namespace cohort::data {
namespace {

// Reads `length` bytes at `offset`; fewer only at the file's end.
StatusOr<std::string> ReadAt(int fd, int64_t offset, size_t length, const std::string& path) {
  std::string data(length, '\0');
  size_t got = 0;
  while (got < length) {
    ssize_t n = ::pread(fd, data.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::Internal(fmt::format("reading {}: {}", path, std::strerror(errno)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

}  // namespace

StatusOr<DatasetScan> ScanDataset(const std::string& dir, const HashProgress& progress) {
  COHORT_ASSIGN_OR_RETURN(store::Tree tree, store::ListTree(dir, kMaxDatasetFiles));
  return HashTree(dir, std::move(tree), progress);
}

StatusOr<DatasetScan> HashTree(const std::string& dir, store::Tree tree,
                               const HashProgress& progress) {
  DatasetScan scan;
  scan.skipped = std::move(tree.skipped);
  scan.skipped_count = tree.skipped_count;
  int64_t done = 0;
  for (const store::TreeFile& entry : tree.files) {
    COHORT_ASSIGN_OR_RETURN(store::OpenFile file, store::OpenBeneath(dir, entry.path));
    DatasetFile out{entry.path, 0, "", {}, entry.executable};
    store::Sha256 whole;
    for (;;) {
      COHORT_ASSIGN_OR_RETURN(
          std::string chunk,
          ReadAt(file.fd(), out.size, static_cast<size_t>(kMaxDatasetChunkBytes), entry.path));
      if (chunk.empty()) break;
      COHORT_RETURN_IF_ERROR(whole.Update(chunk));
      COHORT_ASSIGN_OR_RETURN(std::string sha, store::Sha256Hex(chunk));
      out.chunks.push_back({std::move(sha), static_cast<int64_t>(chunk.size())});
      out.size += static_cast<int64_t>(chunk.size());
      done += static_cast<int64_t>(chunk.size());
      if (progress) progress(done, tree.bytes);
      if (chunk.size() < static_cast<size_t>(kMaxDatasetChunkBytes)) break;
    }
    COHORT_ASSIGN_OR_RETURN(out.sha256, whole.Finish());
    scan.bytes += out.size;
    scan.files.push_back(std::move(out));
  }
  return scan;
}

StatusOr<std::string> ReadChunk(const std::string& dir, const DatasetFile& file, size_t index) {
  if (index >= file.chunks.size()) {
    return Status::InvalidArgument(
        fmt::format("{} has {} chunks, not {}", file.path, file.chunks.size(), index + 1));
  }
  COHORT_ASSIGN_OR_RETURN(store::OpenFile open, store::OpenBeneath(dir, file.path));
  const int64_t offset = static_cast<int64_t>(index) * kMaxDatasetChunkBytes;
  const auto length = static_cast<size_t>(file.chunks[index].size);
  COHORT_ASSIGN_OR_RETURN(std::string data, ReadAt(open.fd(), offset, length, file.path));
  if (data.size() != length) {
    return Status::FailedPrecondition(fmt::format(
        "{} changed while it was being uploaded (it is shorter than when it was read); put the "
        "directory again once nothing writes to it",
        file.path));
  }
  return data;
}

}  // namespace cohort::data
