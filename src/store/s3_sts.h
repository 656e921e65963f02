// Per-job credentials for the S3 backend (issue 29, item 1): temporary keys, issued by the
// store's STS (AssumeRole), that reach only one prefix of the store, for one job's agents. The
// master holds the long-lived keys (the connection file); an agent gets only these.
//
// The role (`role_arn` in the connection file) may do anything in S3; each issue narrows it with
// a session policy: every S3 action on BUCKET/PREFIX/KEY_PREFIX/*, and listing the bucket only
// with a prefix under KEY_PREFIX/. Anything else is refused by the server (kPermissionDenied).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/s3_client.h"
#include "store/s3_config.h"
#include "store/s3_xml.h"

namespace cohort::store {

// STS's bounds on a session's length.
inline constexpr std::chrono::seconds kMinScopedDuration{900};
inline constexpr std::chrono::seconds kMaxScopedDuration{43'200};

// Issues credentials for the keys under `key_prefix` (a key: whole segments, e.g. "jobs/7") of
// the store at `location`, valid for `duration`, from `connection`'s role_arn. Refuses a prefix
// holding IAM's wildcards ('*', '?') or '$' (a policy variable), which could not be scoped
// exactly. kPermissionDenied if the server refuses the role; kUnavailable if it cannot be
// reached (after `options`' retries).
StatusOr<S3TemporaryCredentials> IssueScopedCredentials(const S3Connection& connection,
                                                        const S3Location& location,
                                                        std::string_view key_prefix,
                                                        std::chrono::seconds duration,
                                                        const S3Options& options = {},
                                                        const std::vector<std::string>& reads = {});

// `connection` with `credentials` instead of its own keys (and no role: they cannot issue more).
S3Connection WithTemporaryCredentials(S3Connection connection,
                                      const S3TemporaryCredentials& credentials);

// The session policy for the objects under `bucket_prefix` (no trailing '/') of `bucket`, as
// compact JSON: RGW 16.2 cannot parse a policy with spaces once they are form-encoded.
// With `reads` (bucket keys; one ending in '/' stands for every key under it), the policy also
// lets the holder read those, and only read them.
std::string ScopedSessionPolicy(std::string_view bucket, std::string_view bucket_prefix,
                                const std::vector<std::string>& reads = {});

}  // namespace cohort::store
