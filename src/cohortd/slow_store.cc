#include "cohortd/slow_store.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "common/time.h"
#include "common/units.h"
#include "store/forwarding_store.h"
#include "store/open_store.h"

namespace cohort::cohortd {
namespace {

class SlowStore final : public store::ForwardingStore {
 public:
  SlowStore(std::unique_ptr<store::ObjectStore> inner, Duration delay)
      : ForwardingStore(std::move(inner)), delay_(delay) {}
  Status Put(const std::string& key, std::string_view data) override {
    std::this_thread::sleep_for(delay_);
    return ForwardingStore::Put(key, data);
  }
  Status PutFile(const std::string& key, const std::string& path) override {
    std::this_thread::sleep_for(delay_);
    return ForwardingStore::PutFile(key, path);
  }

 private:
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
