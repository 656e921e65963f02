// A directory as `cohort data put` uploads it (docs/data.md, "Datasets"): its files taken as the
// store takes them (store/file_tree.h: regular files only, no link followed), each hashed whole
// and in chunks of kMaxDatasetChunkBytes, and a chunk read back for its upload.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/dataset.h"
#include "store/file_tree.h"

namespace cohort::data {

struct DatasetScan {
  std::vector<DatasetFile> files;  // in path order
  int64_t bytes = 0;
  // What the directory holds that is no regular file (links, sockets...), a few named.
  std::vector<std::string> skipped;
  size_t skipped_count = 0;
};

// Told of the bytes hashed so far, of `total`.
using HashProgress = std::function<void(int64_t done, int64_t total)>;

// The files under `dir`, hashed. kResourceExhausted beyond kMaxDatasetFiles files; kNotFound
// when `dir` is not there.
StatusOr<DatasetScan> ScanDataset(const std::string& dir, const HashProgress& progress = {});

// The files of `tree`, as ListTree listed them under `dir`, hashed (ScanDataset's second half).
StatusOr<DatasetScan> HashTree(const std::string& dir, store::Tree tree,
                               const HashProgress& progress = {});

// The bytes of chunk `index` of `file` under `dir` (chunks lie one after the other, each
// kMaxDatasetChunkBytes but the last). kFailedPrecondition when the file is shorter than the scan
// found it (changed since).
StatusOr<std::string> ReadChunk(const std::string& dir, const DatasetFile& file, size_t index);

}  // namespace cohort::data
