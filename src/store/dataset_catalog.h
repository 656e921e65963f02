// The datasets in the store (docs/data.md, "Datasets"): every version's summary, read from the
// store once and kept, and the commits and deletions that change them. Who may see or change
// what is the caller's to decide (the API); this knows teams, names and versions only.
//
// Not thread-safe, and every call may wait on the store: one thread uses it (the API's store
// worker, api/store_reads.h), which also makes "the next version" safe without a lock. Assumes
// it is the only writer of datasets/ in the store (one master).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "model/dataset.h"
#include "store/object_store.h"

namespace cohort::store {

class DatasetCatalog {
 public:
  explicit DatasetCatalog(ObjectStore& store) : store_(store) {}

  // Reads every summary in the store, the first time (again after a failure); later calls do
  // nothing.
  Status Load();

  // Every version of every dataset (summaries, without files), by team, name and version.
  std::vector<const DatasetVersion*> All() const;
  // The versions of one dataset, oldest first; empty when it has none.
  std::vector<const DatasetVersion*> Versions(const std::string& team,
                                              const std::string& name) const;
  // A version's summary, if it exists.
  const DatasetVersion* Find(const std::string& team, const std::string& name,
                             int64_t version) const;
  // The manifest with its files (read from the store); kNotFound if there is none.
  StatusOr<DatasetVersion> Manifest(const std::string& team, const std::string& name,
                                    int64_t version);
  // The bytes of all of `team`'s versions.
  int64_t TeamBytes(const std::string& team) const;

  // Commits `draft` (its team, name, files, public, user, created_at; its files checked with
  // CheckDatasetFiles) as the dataset's next version: kInvalidArgument naming the first chunk
  // not in the store (or stored with another size); kFailedPrecondition when the team's
  // versions would take more than `quota` bytes (0: no limit). The manifest is written last.
  StatusOr<DatasetVersion> Commit(DatasetVersion draft, int64_t quota);
  // Deletes a version (its manifest first: it is gone for readers at once); kNotFound if there
  // is none. Its chunks stay: other versions may share them.
  Status Delete(const std::string& team, const std::string& name, int64_t version);

 private:
  using Key = std::tuple<std::string, std::string, int64_t>;  // team, name, version
  StatusOr<int64_t> NextVersion(const std::string& team, const std::string& name);

  ObjectStore& store_;
  bool loaded_ = false;
  std::map<Key, DatasetVersion> versions_;
  // The highest version each dataset was ever given (a deleted one's number is not reused).
  std::map<std::pair<std::string, std::string>, int64_t> last_version_;
};

}  // namespace cohort::store
