// For tests: files put into a store as chunks and a manifest, as `cohort data put` and the
// master's blob routes leave them (store/dataset_layout.h).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/dataset.h"
#include "model/json.h"
#include "store/content_hash.h"
#include "store/dataset_layout.h"
#include "store/object_store.h"

namespace cohort::store::testing {

// `content` as the file `path`, in chunks of at most `chunk_bytes`.
inline DatasetFile PutChunkedFile(ObjectStore& store, const std::string& path,
                                  std::string_view content, size_t chunk_bytes = 4) {
  DatasetFile file{path, static_cast<int64_t>(content.size()), *Sha256Hex(content), {}};
  for (size_t at = 0; at < content.size(); at += chunk_bytes) {
    std::string_view piece = content.substr(at, std::min(chunk_bytes, content.size() - at));
    std::string sha = *Sha256Hex(piece);
    (void)store.Put(BlobKey(sha), piece);
    file.chunks.push_back(DatasetChunk{sha, static_cast<int64_t>(piece.size())});
  }
  return file;
}

// Removes `path` whole, its read-only directories (a cached version is 0555) included.
inline void RemoveReadOnlyTree(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
  }
  fs::remove_all(path, ec);
}

inline Status PutManifest(ObjectStore& store, const std::string& key,
                          const std::vector<DatasetFile>& files) {
  return store.Put(key, nlohmann::json{{"files", DatasetFilesJson(files)}}.dump());
}

}  // namespace cohort::store::testing
