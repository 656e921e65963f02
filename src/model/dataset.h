// Datasets (docs/data.md, "Datasets"): a directory uploaded once as an immutable version
// (NAME:1, NAME:2, ...) of a team's dataset, its files cut into content-addressed chunks that
// every dataset shares. What a version is, how it is named and referred to, and its manifest's
// JSON; where it lies in the store and what is checked of its files is store/dataset_layout.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/time.h"

namespace cohort {

// A chunk holds at most this many bytes of a file: a file of 20 MiB is 3 chunks. Also the most
// one upload of a chunk carries (PUT /api/v1/blobs/{sha256}).
inline constexpr int64_t kMaxDatasetChunkBytes = int64_t{8} << 20;
// The most files one version holds, and the most bytes of its manifest's JSON.
inline constexpr size_t kMaxDatasetFiles = 100'000;
inline constexpr size_t kMaxDatasetManifestBytes = size_t{32} << 20;
inline constexpr size_t kMaxDatasetNameLength = 63;

struct DatasetChunk {
  std::string sha256;  // of the chunk's bytes: its blob in the store
  int64_t size = 0;
};

struct DatasetFile {
  std::string path;                  // relative to the dataset's root, '/'-separated
  int64_t size = 0;                  // the sum of its chunks' sizes
  std::string sha256;                // of the whole file
  std::vector<DatasetChunk> chunks;  // in order; none for an empty file
  bool executable = false;           // unpacked with mode 0555 rather than 0444 (code's scripts)
};

// One version as its manifest holds it; `files` may be left empty when only its summary is read.
struct DatasetVersion {
  std::string name;
  int64_t version = 0;  // 1, 2, ...
  std::string team;
  bool is_public = false;  // readable by every user, not only the team's
  std::string user;        // who put it
  Timestamp created_at;
  std::vector<DatasetFile> files;
  int64_t file_count = 0;
  int64_t bytes = 0;  // of all its files (chunks shared with other versions counted again)
};

// NAME, NAME:VERSION, TEAM/NAME or TEAM/NAME:VERSION.
struct DatasetRef {
  std::string team;  // empty: the caller's own team
  std::string name;
  std::optional<int64_t> version;  // none: the latest
};

// The most datasets one job names.
inline constexpr size_t kMaxJobDatasets = 16;

// One dataset a task sees, as its launch names it (docs/data.md, "Datasets").
struct TaskDataset {
  std::string name;          // its directory under $COHORT_DATA_DIR
  std::string ref;           // "team/name:3": the version the job was pinned to
  std::string manifest_key;  // where its manifest lies in the store
};

// OK for a dataset's name: [a-z0-9][a-z0-9._-]{0,62}; kInvalidArgument naming `field` and why.
Status CheckDatasetName(std::string_view name, std::string_view field = "name");
// kInvalidArgument naming `field`, the part that is wrong (team, name, version) and why.
StatusOr<DatasetRef> ParseDatasetRef(std::string_view text, std::string_view field = "dataset");
// "team/name:3", "name", ... as ParseDatasetRef reads it.
std::string FormatDatasetRef(const DatasetRef& ref);

// The manifest (with `files`) or its summary (without): {name, version, team, public, user,
// created_at, file_count, bytes[, files: [{path, size, sha256, chunks: [{sha256, size}]}]]}.
nlohmann::json DatasetVersionJson(const DatasetVersion& version, bool with_files);
// Reads what DatasetVersionJson writes; kInvalidArgument naming the field. Checks the
// document's shape only: store::CheckDatasetFiles checks what the files say.
StatusOr<DatasetVersion> DatasetVersionFromJson(const nlohmann::json& doc);
// The "files" list of a manifest or of a commit's request, at most kMaxDatasetFiles of them.
StatusOr<std::vector<DatasetFile>> DatasetFilesFromJson(const nlohmann::json& files,
                                                        std::string_view field = "files");
nlohmann::json DatasetFilesJson(const std::vector<DatasetFile>& files);

}  // namespace cohort
