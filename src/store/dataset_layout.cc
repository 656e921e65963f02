#include "store/dataset_layout.h"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "store/content_hash.h"
#include "store/object_store.h"

namespace cohort::store {
namespace {

constexpr std::string_view kManifestSuffix = ".json";
constexpr std::string_view kSummarySuffix = ".summary.json";
constexpr std::string_view kLastVersion = "last-version";

std::optional<int64_t> VersionOf(std::string_view text) {
  int64_t v = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || v < 1) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::string BlobKey(std::string_view sha256) {
  return fmt::format("blobs/{}/{}", sha256.substr(0, 2), sha256);
}

std::string ContextKey(std::string_view sha256) { return fmt::format("contexts/{}.json", sha256); }

std::string DatasetPrefix(std::string_view team, std::string_view name) {
  return fmt::format("{}{}/{}/", kDatasetsPrefix, team, name);
}

std::string ManifestKey(std::string_view team, std::string_view name, int64_t version) {
  return fmt::format("{}{}{}", DatasetPrefix(team, name), version, kManifestSuffix);
}

std::string SummaryKey(std::string_view team, std::string_view name, int64_t version) {
  return fmt::format("{}{}{}", DatasetPrefix(team, name), version, kSummarySuffix);
}

std::string LastVersionKey(std::string_view team, std::string_view name) {
  return DatasetPrefix(team, name) + std::string(kLastVersion);
}

StatusOr<std::string> DatasetCacheId(std::string_view manifest_key) {
  constexpr size_t kIdLength = 32;
  COHORT_ASSIGN_OR_RETURN(std::string hash, Sha256Hex(manifest_key));
  return hash.substr(0, kIdLength);
}

std::optional<DatasetKey> ParseDatasetKey(std::string_view key) {
  if (!key.starts_with(kDatasetsPrefix)) return std::nullopt;
  key.remove_prefix(kDatasetsPrefix.size());
  auto first = key.find('/');
  if (first == std::string_view::npos) return std::nullopt;
  auto second = key.find('/', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  DatasetKey out;
  out.team = key.substr(0, first);
  out.name = key.substr(first + 1, second - first - 1);
  std::string_view last = key.substr(second + 1);
  if (last == kLastVersion) {
    out.kind = DatasetKey::Kind::kLastVersion;
    return out;
  }
  std::string_view suffix = last.ends_with(kSummarySuffix) ? kSummarySuffix : kManifestSuffix;
  if (!last.ends_with(suffix)) return std::nullopt;
  auto version = VersionOf(last.substr(0, last.size() - suffix.size()));
  if (!version) return std::nullopt;
  out.kind = suffix == kSummarySuffix ? DatasetKey::Kind::kSummary : DatasetKey::Kind::kManifest;
  out.version = *version;
  return out;
}

Status CheckDatasetFiles(const std::vector<DatasetFile>& files) {
  if (files.size() > kMaxDatasetFiles) {
    return Status::InvalidArgument(fmt::format(
        "files: {} files; a dataset version holds at most {}", files.size(), kMaxDatasetFiles));
  }
  std::set<std::string_view> paths;
  for (size_t i = 0; i < files.size(); ++i) {
    const DatasetFile& f = files[i];
    const std::string at = fmt::format("files[{}]", i);
    if (Status key = CheckKey(f.path); !key.ok()) {
      return Status::InvalidArgument(
          fmt::format("{}.path: {}; a path is relative to the dataset's directory, without '..'",
                      at, key.message()));
    }
    if (!paths.insert(f.path).second) {
      return Status::InvalidArgument(
          fmt::format("{}.path: \"{}\" is named twice", at, f.path.substr(0, 200)));
    }
    if (!IsSha256Hex(f.sha256)) {
      return Status::InvalidArgument(
          fmt::format("{}.sha256: must be a SHA-256 in 64 lowercase hex digits", at));
    }
    int64_t sum = 0;
    for (size_t k = 0; k < f.chunks.size(); ++k) {
      const DatasetChunk& c = f.chunks[k];
      if (!IsSha256Hex(c.sha256)) {
        return Status::InvalidArgument(fmt::format(
            "{}.chunks[{}].sha256: must be a SHA-256 in 64 lowercase hex digits", at, k));
      }
      if (c.size < 1 || c.size > kMaxDatasetChunkBytes) {
        return Status::InvalidArgument(
            fmt::format("{}.chunks[{}].size: {} bytes; a chunk holds 1 to {} bytes", at, k, c.size,
                        kMaxDatasetChunkBytes));
      }
      sum += c.size;
    }
    if (sum != f.size) {
      return Status::InvalidArgument(
          fmt::format("{}.size: {} bytes, but its chunks add up to {}", at, f.size, sum));
    }
    if (f.chunks.size() == 1 && f.chunks[0].sha256 != f.sha256) {
      return Status::InvalidArgument(fmt::format(
          "{}.sha256: a file of one chunk has that chunk's hash, {}", at, f.chunks[0].sha256));
    }
  }
  return Status::Ok();
}

int64_t DatasetBytes(const std::vector<DatasetFile>& files) {
  int64_t bytes = 0;
  for (const auto& f : files) bytes += f.size;
  return bytes;
}

}  // namespace cohort::store

namespace cohort::store {

Status CheckChunksStored(ObjectStore& store, const std::vector<DatasetFile>& files) {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    for (const auto& chunk : files[i].chunks) {
      if (!seen.insert(chunk.sha256).second) continue;
      auto info = store.Head(BlobKey(chunk.sha256));
      if (info.status().code() == StatusCode::kNotFound) {
        return Status::InvalidArgument(fmt::format(
            "files[{}] (\"{}\"): its chunk {} is not in the store; upload it first (PUT "
            "/api/v1/blobs/{}, as `cohort data put` does)",
            i, files[i].path.substr(0, 200), chunk.sha256, chunk.sha256));
      }
      COHORT_RETURN_IF_ERROR(info.status());
      if (info->size != chunk.size) {
        return Status::InvalidArgument(
            fmt::format("files[{}] (\"{}\"): its chunk {} is {} bytes in the store, not {}", i,
                        files[i].path.substr(0, 200), chunk.sha256, info->size, chunk.size));
      }
    }
  }
  return Status::Ok();
}

}  // namespace cohort::store
