#include "store/dataset_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/units.h"
#include "store/dataset_layout.h"

namespace cohort::store {
namespace {

constexpr size_t kListPage = 1000;
// A summary or a last-version marker is a few hundred bytes: more is not one this layout wrote.
constexpr size_t kMaxSummaryBytes = 64 * 1024;

// "60 bytes", "1.5Gi (1610612736 bytes)": exact, and readable when large.
std::string Bytes(int64_t n) {
  return n < 1024 ? fmt::format("{} bytes", n)
                  : fmt::format("{} ({} bytes)", FormatByteSizeApprox(n), n);
}

StatusOr<DatasetVersion> ReadVersion(ObjectStore& store, const std::string& key, size_t max) {
  COHORT_ASSIGN_OR_RETURN(std::string text, store.Get(key, max));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    return Status::Internal(fmt::format("the store's {} is not JSON", key));
  }
  auto version = DatasetVersionFromJson(doc);
  if (!version.ok()) {
    return Status::Internal(fmt::format("the store's {}: {}", key, version.status().message()));
  }
  return version;
}

}  // namespace

Status DatasetCatalog::Load() {
  if (loaded_) return Status::Ok();
  std::map<Key, DatasetVersion> versions;
  std::map<std::pair<std::string, std::string>, int64_t> last;
  std::set<Key> manifests;
  std::set<Key> summaries;
  std::string after;
  const std::string prefix(kDatasetsPrefix);
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(ListPage page, store_.List(prefix, after, kListPage));
    for (const auto& object : page.objects) {
      auto key = ParseDatasetKey(object.key);
      if (!key) continue;
      Key id{key->team, key->name, key->version};
      switch (key->kind) {
        case DatasetKey::Kind::kManifest:
          manifests.insert(id);
          break;
        case DatasetKey::Kind::kSummary:
          summaries.insert(id);
          break;
        case DatasetKey::Kind::kLastVersion: {
          COHORT_ASSIGN_OR_RETURN(std::string text, store_.Get(object.key, kMaxSummaryBytes));
          int64_t v = 0;
          if (!text.empty()) v = std::strtoll(text.c_str(), nullptr, 10);
          last[{key->team, key->name}] = std::max<int64_t>(v, 0);
          break;
        }
      }
    }
    if (!page.more || page.objects.empty()) break;
    after = page.objects.back().key;
  }
  // A version is what its manifest says is there; its summary spares reading the files.
  for (const Key& id : manifests) {
    const auto& [team, name, number] = id;
    const bool summarized = summaries.contains(id);
    COHORT_ASSIGN_OR_RETURN(
        DatasetVersion v,
        ReadVersion(store_,
                    summarized ? SummaryKey(team, name, number) : ManifestKey(team, name, number),
                    summarized ? kMaxSummaryBytes : kMaxDatasetManifestBytes));
    v.files.clear();
    v.team = team;
    v.name = name;
    v.version = number;
    auto& highest = last[{team, name}];
    highest = std::max(highest, number);
    versions.emplace(id, std::move(v));
  }
  versions_ = std::move(versions);
  last_version_ = std::move(last);
  loaded_ = true;
  return Status::Ok();
}

std::vector<const DatasetVersion*> DatasetCatalog::All() const {
  std::vector<const DatasetVersion*> all;
  all.reserve(versions_.size());
  for (const auto& [id, v] : versions_) all.push_back(&v);
  return all;
}

std::vector<const DatasetVersion*> DatasetCatalog::Versions(const std::string& team,
                                                            const std::string& name) const {
  std::vector<const DatasetVersion*> out;
  for (auto it = versions_.lower_bound(Key{team, name, 0});
       it != versions_.end() && std::get<0>(it->first) == team && std::get<1>(it->first) == name;
       ++it) {
    out.push_back(&it->second);
  }
  return out;
}

const DatasetVersion* DatasetCatalog::Find(const std::string& team, const std::string& name,
                                           int64_t version) const {
  auto it = versions_.find(Key{team, name, version});
  return it == versions_.end() ? nullptr : &it->second;
}

StatusOr<DatasetVersion> DatasetCatalog::Manifest(const std::string& team, const std::string& name,
                                                  int64_t version) {
  return ReadVersion(store_, ManifestKey(team, name, version), kMaxDatasetManifestBytes);
}

int64_t DatasetCatalog::TeamBytes(const std::string& team) const {
  int64_t bytes = 0;
  for (auto it = versions_.lower_bound(Key{team, "", 0});
       it != versions_.end() && std::get<0>(it->first) == team; ++it) {
    bytes += it->second.bytes;
  }
  return bytes;
}

StatusOr<int64_t> DatasetCatalog::NextVersion(const std::string& team, const std::string& name) {
  int64_t highest = 0;
  if (auto it = last_version_.find({team, name}); it != last_version_.end()) highest = it->second;
  auto versions = Versions(team, name);
  if (!versions.empty()) highest = std::max(highest, versions.back()->version);
  return highest + 1;
}

StatusOr<DatasetVersion> DatasetCatalog::Commit(DatasetVersion draft, int64_t quota) {
  COHORT_RETURN_IF_ERROR(Load());
  COHORT_RETURN_IF_ERROR(CheckDatasetName(draft.name));
  COHORT_RETURN_IF_ERROR(CheckDatasetFiles(draft.files));
  draft.file_count = static_cast<int64_t>(draft.files.size());
  draft.bytes = DatasetBytes(draft.files);
  const int64_t used = TeamBytes(draft.team);
  if (quota > 0 && used + draft.bytes > quota) {
    return Status::FailedPrecondition(fmt::format(
        "team {}'s store quota is {}: its datasets take {} and this version would add {}; "
        "delete versions it no longer needs (cohort data rm NAME:VERSION), or ask an admin to "
        "raise the quota (cohortd master --store-quota-per-team)",
        draft.team, Bytes(quota), Bytes(used), Bytes(draft.bytes)));
  }
  COHORT_RETURN_IF_ERROR(CheckChunksStored(store_, draft.files));
  COHORT_ASSIGN_OR_RETURN(draft.version, NextVersion(draft.team, draft.name));
  std::string manifest = DatasetVersionJson(draft, true)
                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (manifest.size() > kMaxDatasetManifestBytes) {
    return Status::InvalidArgument(fmt::format(
        "files: the manifest would be {} bytes, more than the {} one holds; put fewer files in "
        "a version (cohort data pack packs many small files into shards)",
        manifest.size(), kMaxDatasetManifestBytes));
  }
  // The number first: a crash after it skips a number, never gives one twice.
  COHORT_RETURN_IF_ERROR(
      store_.Put(LastVersionKey(draft.team, draft.name), std::to_string(draft.version)));
  last_version_[{draft.team, draft.name}] = draft.version;
  COHORT_RETURN_IF_ERROR(
      store_.Put(SummaryKey(draft.team, draft.name, draft.version),
                 DatasetVersionJson(draft, false)
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  COHORT_RETURN_IF_ERROR(store_.Put(ManifestKey(draft.team, draft.name, draft.version), manifest));
  DatasetVersion summary = draft;
  summary.files.clear();
  versions_[Key{draft.team, draft.name, draft.version}] = summary;
  return draft;
}

Status DatasetCatalog::Delete(const std::string& team, const std::string& name, int64_t version) {
  COHORT_RETURN_IF_ERROR(Load());
  if (!Find(team, name, version)) {
    return Status::NotFound(fmt::format("dataset {}/{} has no version {}", team, name, version));
  }
  COHORT_RETURN_IF_ERROR(store_.Delete(ManifestKey(team, name, version)));
  versions_.erase(Key{team, name, version});
  // A summary left by a failure here is no version: Load reads only those with a manifest.
  return store_.Delete(SummaryKey(team, name, version));
}

}  // namespace cohort::store
