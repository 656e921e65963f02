// A store that passes every call to another: the base of a store that changes one thing about
// it (cohortd's test seam that slows puts, tests' stores that fail or count), which then
// overrides only that.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "store/object_store.h"

namespace cohort::store {

class ForwardingStore : public ObjectStore {
 public:
  explicit ForwardingStore(std::unique_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}

  Status Put(const std::string& key, std::string_view data) override {
    return inner_->Put(key, data);
  }
  Status PutFile(const std::string& key, const std::string& path) override {
    return inner_->PutFile(key, path);
  }
  StatusOr<std::string> Get(const std::string& key, size_t max_bytes) override {
    return inner_->Get(key, max_bytes);
  }
  StatusOr<std::string> GetRange(const std::string& key, int64_t offset, size_t length) override {
    return inner_->GetRange(key, offset, length);
  }
  Status GetFile(const std::string& key, const std::string& path) override {
    return inner_->GetFile(key, path);
  }
  StatusOr<ObjectInfo> Head(const std::string& key) override { return inner_->Head(key); }
  StatusOr<ListPage> List(const std::string& prefix, const std::string& after,
                          size_t limit) override {
    return inner_->List(prefix, after, limit);
  }
  Status Delete(const std::string& key) override { return inner_->Delete(key); }

 private:
  std::unique_ptr<ObjectStore> inner_;
};

}  // namespace cohort::store
