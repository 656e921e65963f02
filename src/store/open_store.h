// The object store that a StoreAccess names (model/store_access.h): the one place that turns
// what the master hands an agent into a backend, and an S3 store's location and connection into
// what the master hands.
#pragma once

#include <memory>

#include "model/store_access.h"
#include "store/object_store.h"
#include "store/s3_config.h"

namespace cohort::store {

// A directory store, or an S3 store; kInvalidArgument naming what is missing.
StatusOr<std::unique_ptr<ObjectStore>> OpenStore(const StoreAccess& access);

// How to reach the S3 store at `location` with `connection`'s credentials.
StoreAccess S3Access(const S3Connection& connection, const S3Location& location);

}  // namespace cohort::store
