// Reading a spec written by a person, YAML or JSON, into one JSON document: the rule that job
// specs and sweep specs share (docs/job-spec.md, "Limits"). The text is at most kMaxSpecBytes,
// YAML at most kMaxYamlSpecBytes, one document; JSON takes a fast path; YAML aliases and depth
// are bounded; duplicate keys, non-scalar keys, invalid UTF-8 and tags other than plain types
// are errors; a syntax error says "<source>:<line>:<column>: <reason>".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/json.h"

namespace cohort {

// The document read, and what the YAML says that the document cannot hold (a duplicate key, a
// tag), each "path: reason", to be reported with the schema's own errors.
struct SpecDocument {
  Json doc;  // null for a text with no document
  std::vector<std::string> errors;
};

// `kind` names what the text is in messages ("job spec", "sweep spec"); `source` names the file.
// A text that cannot be read at all (too large, broken syntax, several documents, nested too
// deeply) is kInvalidArgument with one message.
StatusOr<SpecDocument> ReadSpecDocument(std::string_view text, std::string_view source,
                                        std::string_view kind);

// "300000 bytes is too large; a job spec is at most 262144 bytes (256Ki)".
std::string SpecTooLarge(uint64_t bytes, std::string_view kind);

}  // namespace cohort
