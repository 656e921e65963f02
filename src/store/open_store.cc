#include "store/open_store.h"

#include "store/directory_store.h"

namespace cohort::store {

StatusOr<std::unique_ptr<ObjectStore>> OpenStore(const StoreAccess& access) {
  if (!access.directory.empty()) return OpenDirectoryStore(access.directory);
  if (access.endpoint.empty()) {
    return Status::InvalidArgument("the store access names neither a directory nor an endpoint");
  }
  return Status::FailedPrecondition("this build has no S3 backend for " + access.endpoint);
}

}  // namespace cohort::store
