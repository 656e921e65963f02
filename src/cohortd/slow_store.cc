#include "cohortd/slow_store.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "common/time.h"
#include "common/units.h"
#include "store/open_store.h"

namespace cohort::cohortd {
namespace {

class SlowStore final : public store::ObjectStore {
 public:
  SlowStore(std::unique_ptr<store::ObjectStore> inner, Duration delay)
      : inner_(std::move(inner)), delay_(delay) {}
  Status Put(const std::string& key, std::string_view data) override {
    std::this_thread::sleep_for(delay_);
    return inner_->Put(key, data);
  }
  Status PutFile(const std::string& key, const std::string& path) override {
    std::this_thread::sleep_for(delay_);
    return inner_->PutFile(key, path);
  }
  StatusOr<std::string> Get(const std::string& key, size_t max_bytes) override {
    return inner_->Get(key, max_bytes);
  }
  Status GetFile(const std::string& key, const std::string& path) override {
    return inner_->GetFile(key, path);
  }
  StatusOr<std::string> GetRange(const std::string& key, int64_t offset, size_t length) override {
    return inner_->GetRange(key, offset, length);
  }
  StatusOr<store::ObjectInfo> Head(const std::string& key) override { return inner_->Head(key); }
  StatusOr<store::ListPage> List(const std::string& prefix, const std::string& after,
                                 size_t limit) override {
    return inner_->List(prefix, after, limit);
  }
  Status Delete(const std::string& key) override { return inner_->Delete(key); }

 private:
  std::unique_ptr<store::ObjectStore> inner_;
  Duration delay_;
};

}  // namespace

agent::StoreOpener StoreOpenerForThisProcess() {
  const char* text = std::getenv("COHORT_TEST_UPLOAD_DELAY");
  if (!text || !*text) return store::OpenStore;
  auto delay = ParseDuration(text);
  if (!delay.ok()) {
    spdlog::error("COHORT_TEST_UPLOAD_DELAY: {} (ignored)", delay.status().message());
    return store::OpenStore;
  }
  spdlog::warn(
      "COHORT_TEST_UPLOAD_DELAY (a seam for tests only): every put into the store waits {}",
      FormatDuration(*delay));
  Duration d = *delay;
  return [d](const StoreAccess& access) -> StatusOr<std::unique_ptr<store::ObjectStore>> {
    COHORT_ASSIGN_OR_RETURN(auto inner, store::OpenStore(access));
    return std::unique_ptr<store::ObjectStore>(new SlowStore(std::move(inner), d));
  };
}

}  // namespace cohort::cohortd
