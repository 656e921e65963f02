#include "store/open_store.h"

#include "store/directory_store.h"
#include "store/s3_store.h"

namespace cohort::store {

StatusOr<std::unique_ptr<ObjectStore>> OpenStore(const StoreAccess& access) {
  if (!access.directory.empty()) return OpenDirectoryStore(access.directory);
  if (access.endpoint.empty()) {
    return Status::InvalidArgument("the store access names neither a directory nor an endpoint");
  }
  S3Connection connection;
  connection.endpoint = access.endpoint;
  connection.region = access.region.empty() ? "us-east-1" : access.region;
  connection.access_key = access.access_key;
  connection.secret_key = access.secret_key;
  connection.session_token = access.session_token;
  COHORT_ASSIGN_OR_RETURN(
      auto s3, S3Store::Open(std::move(connection), S3Location{access.bucket, access.prefix}));
  return std::unique_ptr<ObjectStore>(std::move(s3));
}

StoreAccess S3Access(const S3Connection& connection, const S3Location& location) {
  StoreAccess access;
  access.endpoint = connection.endpoint;
  access.region = connection.region;
  access.bucket = location.bucket;
  access.prefix = location.prefix;
  access.access_key = connection.access_key;
  access.secret_key = connection.secret_key;
  access.session_token = connection.session_token;
  return access;
}

}  // namespace cohort::store
