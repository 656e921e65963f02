#include "store/access_issuer.h"

namespace cohort::store {
namespace {

class Fixed final : public StoreAccessIssuer {
 public:
  explicit Fixed(StoreAccess access) : access_(std::move(access)) {}
  std::optional<StoreAccess> For(const AccessScope&) override { return access_; }

 private:
  StoreAccess access_;
};

}  // namespace

std::unique_ptr<StoreAccessIssuer> FixedStoreAccess(StoreAccess access) {
  return std::make_unique<Fixed>(std::move(access));
}

}  // namespace cohort::store
