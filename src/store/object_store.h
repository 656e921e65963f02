// Where what outlives a job goes (docs/data.md, issue 29): its outputs and checkpoints,
// datasets, the code it runs. One contract, several backends: a directory (the default, under
// the master's data directory) and, later, an S3-compatible bucket.
//
// The contract (store_contract_test_fixture.h runs it against every backend):
// - a key is a relative path of UTF-8 segments (CheckKey); objects live under keys, not in
//   directories: listing a prefix lists the objects under it, in key order;
// - a put is whole or nothing: a reader sees the old object or the new one, never a part; one
//   that fails leaves what was there;
// - a put is durable when it returns OK (the machine may crash after);
// - deleting what is not there is not an error; reading it is kNotFound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::store {

// The longest key S3 allows, in bytes.
inline constexpr size_t kMaxKeyBytes = 1024;

// OK for a key this contract allows: 1 to kMaxKeyBytes bytes of UTF-8 without control
// characters or backslashes, segments separated by single '/', none empty, "." or "..", and no
// leading or trailing '/'. kInvalidArgument naming the key and the reason otherwise.
Status CheckKey(std::string_view key);

// OK for the start of a ranged read (ObjectStore::GetRange): not negative.
Status CheckRangeStart(int64_t offset);

struct ObjectInfo {
  std::string key;
  int64_t size = 0;
};

struct ListPage {
  std::vector<ObjectInfo> objects;  // in key order
  bool more = false;                // keys after the last one were left out (ask from it)
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // Stores `data` (or the file at `path`) as `key`, replacing what was there.
  virtual Status Put(const std::string& key, std::string_view data) = 0;
  virtual Status PutFile(const std::string& key, const std::string& path) = 0;
  // The object's bytes, kNotFound if there is none; kResourceExhausted if it is larger than
  // `max_bytes` (nothing is read then: a stranger's object never takes the reader's memory).
  virtual StatusOr<std::string> Get(const std::string& key, size_t max_bytes) = 0;
  // At most `length` bytes of the object from byte `offset`: fewer past its end, none from its
  // end on (a range past the end is not an error: the object may have been replaced by a shorter
  // one between a listing and this read). kNotFound if there is no object; kInvalidArgument for
  // a negative offset. What a reader that cannot hold a whole object asks (the API's downloads).
  virtual StatusOr<std::string> GetRange(const std::string& key, int64_t offset, size_t length) = 0;
  // Writes the object to the file at `path`, whole or not at all (the same rule as Put).
  virtual Status GetFile(const std::string& key, const std::string& path) = 0;
  virtual StatusOr<ObjectInfo> Head(const std::string& key) = 0;
  // The objects whose key starts with `prefix`, after the key `after` (empty: from the first),
  // at most `limit` of them (at least 1).
  virtual StatusOr<ListPage> List(const std::string& prefix, const std::string& after,
                                  size_t limit) = 0;
  virtual Status Delete(const std::string& key) = 0;
};

}  // namespace cohort::store
