// Files kept in the store as content-addressed chunks (store/dataset_layout.h): a dataset's
// version and a job's code are both a manifest listing each file's chunks in blobs/. This reads
// such a manifest and writes its files out of the store onto a disk, every byte checked against
// its hash: the one pull that datasets and code share.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/dataset.h"
#include "os/credentials.h"
#include "store/object_store.h"

namespace cohort::store {

// The files of the manifest at `key`: a dataset version's or a job's code's JSON, whose "files"
// CheckDatasetFiles accepts. kNotFound when there is none (deleted, or never written);
// kFailedPrecondition when it is not a manifest.
StatusOr<std::vector<DatasetFile>> ReadFileManifest(ObjectStore& store, const std::string& key);

struct PullFilesOptions {
  // Given the files and directories; none: they stay the caller's.
  std::optional<Owner> owner = std::nullopt;
  mode_t file_mode = 0444;  // an executable file also gets the execute bits of its read bits
  mode_t dir_mode = 0555;
  // Told the bytes written so far after each chunk.
  std::function<void(int64_t bytes)> progress = {};
};

// Writes each of `files` under `dir`, which the caller made and no one else can write in (a
// private staging place: nothing is checked for links), its directories made on the way. Each
// chunk is read from blobs/ and checked against its hash and size: a file is its chunks, so its
// bytes are the manifest's (the whole file's hash, the uploader's, is not computed again: it
// would double the hashing, measured in bench/dataset_pull_bench.cc). kFailedPrecondition
// naming the file when the store's copy is damaged; kNotFound naming the chunk when it is
// missing. The directories get their mode last, so that they can be filled.
Status PullChunkedFiles(ObjectStore& store, const std::vector<DatasetFile>& files,
                        const std::string& dir, const PullFilesOptions& options);

}  // namespace cohort::store
