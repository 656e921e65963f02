// A job's credential (docs/security.md, "The job's credential"): what the tasks of one attempt of
// one job show each other's exec services (`cohort-exec`), so that mpirun in the launcher can
// start ranks inside the workers with no sshd and no keys, and nobody else can.
//
// It is the HMAC-SHA256 of the job's id and attempt under the master's key, a secret of the
// master's alone (`<data-dir>/job-credential.key`): the master stores no credential, gives the
// same one to every task of the attempt, however often it builds their launches and across its
// own restarts, and a new attempt gets a new one. A task learns its own job's, never another's.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "model/job.h"

namespace cohort::auth {

inline constexpr size_t kJobCredentialKeyBytes = 32;

// A new key from the operating system's random source. kInternal if it has none to give.
StatusOr<std::string> MintJobCredentialKey();

// 64 hex digits. REQUIRES: key.size() == kJobCredentialKeyBytes.
std::string JobCredential(std::string_view key, JobId job, int attempt);

// Whether `presented` is `expected`, in time that does not depend on where they differ.
bool CredentialMatches(std::string_view presented, std::string_view expected);

}  // namespace cohort::auth
