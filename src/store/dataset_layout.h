// Where datasets lie in the store (docs/data.md, "Datasets"), and what is checked of a version's
// files before it is committed:
//   blobs/<first two hex digits>/<sha256>           a chunk, shared by every dataset and team
//   datasets/<team>/<name>/<version>.summary.json   the version without its files (for lists)
//   datasets/<team>/<name>/<version>.json           the manifest: written last, so a version
//                                                   whose chunks are not all stored is never seen
//   datasets/<team>/<name>/last-version             the highest version ever given: a deleted
//                                                   version's number is never given again
//   contexts/<sha256>.json                          a job's code (docs/data.md, "Code"): its
//                                                   files as a version's "files", named by
//                                                   the SHA-256 of the manifest's own bytes
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/dataset.h"
#include "store/object_store.h"

namespace cohort::store {

inline constexpr std::string_view kBlobsPrefix = "blobs/";
std::string BlobKey(std::string_view sha256);
std::string ContextKey(std::string_view sha256);
// "datasets/" and "datasets/<team>/<name>/".
inline constexpr std::string_view kDatasetsPrefix = "datasets/";
std::string DatasetPrefix(std::string_view team, std::string_view name);
std::string ManifestKey(std::string_view team, std::string_view name, int64_t version);
std::string SummaryKey(std::string_view team, std::string_view name, int64_t version);
std::string LastVersionKey(std::string_view team, std::string_view name);
// What a node's dataset cache calls the version whose manifest is at `manifest_key`
// (agent/dataset_cache.h, AgentReport::cached_datasets): the first 32 hex digits of the key's
// SHA-256.
StatusOr<std::string> DatasetCacheId(std::string_view manifest_key);

// What a key under kDatasetsPrefix is.
struct DatasetKey {
  enum class Kind { kManifest, kSummary, kLastVersion };
  Kind kind = Kind::kManifest;
  std::string team;
  std::string name;
  int64_t version = 0;  // 0 for kLastVersion
};
// Nothing for a key that is not one this layout writes (left alone).
std::optional<DatasetKey> ParseDatasetKey(std::string_view key);

// OK for the files of a version: each path a store key (CheckKey) and no two alike, a sha256 of
// 64 lowercase hex digits, chunks of 1 to kMaxDatasetChunkBytes bytes adding up to the file's
// size (none for an empty file; a file of one chunk has that chunk's hash), at most
// kMaxDatasetFiles. kInvalidArgument naming the file and the field otherwise.
Status CheckDatasetFiles(const std::vector<DatasetFile>& files);

// OK when every chunk `files` name is in `store` with its size; kInvalidArgument naming the
// file and the first chunk that is not.
Status CheckChunksStored(ObjectStore& store, const std::vector<DatasetFile>& files);

// A job's code (docs/data.md, "Code"): at most this many bytes and files.
inline constexpr int64_t kMaxContextBytes = int64_t{100} << 20;
inline constexpr size_t kMaxContextFiles = 20'000;

// The sum of the files' sizes (checked: CheckDatasetFiles bounds each).
int64_t DatasetBytes(const std::vector<DatasetFile>& files);

}  // namespace cohort::store
