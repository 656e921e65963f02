// The object store that a StoreAccess names (model/store_access.h): the one place that turns
// what the master hands an agent into a backend.
#pragma once

#include <memory>

#include "model/store_access.h"
#include "store/object_store.h"

namespace cohort::store {

// kInvalidArgument naming what is missing; kUnimplemented-like kFailedPrecondition for a
// backend this build does not have.
StatusOr<std::unique_ptr<ObjectStore>> OpenStore(const StoreAccess& access);

}  // namespace cohort::store
