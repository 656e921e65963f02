// The object store in a directory (the default: <master data dir>/store). Each object is a file,
// written as os/durable_file.h writes: into tmp/, fsynced, renamed into place, its directory
// synced. A key's segments are directories of `objects/`; since S3 lets "a" and "a/b" both be
// objects, a directory's name is its segment with "%2F" after it and a file's is its segment
// ('%' is written "%25" in both), so a file and a directory never share a name.
#pragma once

#include <memory>
#include <string>

#include "store/object_store.h"

namespace cohort::store {

// Makes `root` (0700) with objects/ and tmp/ if needed; removes what tmp/ holds of puts cut short
// by a crash (files untouched for an hour: several processes share a store, the master reading
// while agents write, and a put under way in another must not lose its file).
StatusOr<std::unique_ptr<ObjectStore>> OpenDirectoryStore(const std::string& root);

}  // namespace cohort::store
