// Reading a job spec written by a person (YAML or JSON, one schema: docs/job-spec.md).
//
// Validation reports every problem at once, each naming the field path and the reason:
//   tasks[0].resources.memory: "32GB" is not a size; use e.g. 32Gi
// Unknown fields are errors. The returned Status is InvalidArgument with one detail per
// problem; its message summarises ("job spec has 3 errors").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/job_spec.h"
#include "model/json.h"

namespace cohort {

// `text` may be YAML or JSON (JSON is YAML). `source` names the file in messages. If
// `names_team` is given, it says whether the text names a team (a spec that names none gets
// JobSpec::team's default, which the master replaces by the submitter's team).
StatusOr<JobSpec> ParseJobSpec(std::string_view text, std::string_view source = "job spec",
                               bool* names_team = nullptr);
StatusOr<JobSpec> ParseJobSpecJson(const Json& doc);
// As ParseJobSpec, but a relative `workdir` is taken relative to `base_dir` (the directory of
// the spec file, as the CLI does) instead of the task's own directory on its node.
StatusOr<JobSpec> ParseJobSpecFile(std::string_view text, std::string_view source,
                                   const std::string& base_dir, bool* names_team = nullptr);

// "300000 bytes is too large; a job spec is at most 262144 bytes (256Ki)", for a text longer
// than kMaxSpecBytes (model/limits.h), which ParseJobSpec refuses with this reason.
std::string SpecTooLarge(uint64_t bytes);

// The canonical JSON document of a valid spec; ParseJobSpecJson(ToJson(s)) gives s back.
Json ToJson(const JobSpec& spec);
// A digest of the canonical form (FNV-1a, 16 hex digits), stable across releases that keep the
// form: two specs that mean the same have the same digest.
std::string SpecDigest(const JobSpec& spec);

}  // namespace cohort
