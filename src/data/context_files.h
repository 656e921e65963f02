// A job's code as `cohort run` and `cohort submit` send it (docs/data.md, "Code"): the files of
// a directory that its `.cohortignore` keeps (data/ignore_rules.h; without one, `.git/` and
// Python's caches are left out), hashed in chunks as a dataset's are, at most
// store::kMaxContextBytes.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "data/dataset_files.h"
#include "store/dataset_layout.h"

namespace cohort::data {

inline constexpr char kIgnoreFile[] = ".cohortignore";
// What a directory without a .cohortignore leaves out.
inline constexpr char kDefaultIgnore[] = ".git/\n__pycache__/\n*.pyc\n";

// The code under `dir`. kInvalidArgument for a bad .cohortignore (naming its line); over
// kMaxContextBytes or kMaxContextFiles, kResourceExhausted naming the largest entries at the
// top of `dir` and what to do (a .cohortignore, --context, or a dataset for the data).
StatusOr<DatasetScan> ScanContext(const std::string& dir, const HashProgress& progress = {});

}  // namespace cohort::data
