// A test seam (like COHORT_TEST_ABSENT_ACCOUNTS): with COHORT_TEST_UPLOAD_DELAY (a duration) in
// its environment, the agent waits that long before each file it puts into the store, so that a
// test can catch an upload under way (tests/integration/artifacts_test.cc). Logged loudly.
#pragma once

#include "agent/artifact_uploads.h"

namespace cohort::cohortd {

// store::OpenStore, slowed down as the environment says; store::OpenStore itself without it.
agent::StoreOpener StoreOpenerForThisProcess();

}  // namespace cohort::cohortd
