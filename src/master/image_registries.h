// The registries a cluster pulls task images from (`cohortd master --image-registry`,
// docs/runtimes.md). A job whose task group names an image in another registry is refused when it
// is submitted, so that no node spends GPU time finding out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/job_spec.h"

namespace cohort {

struct ImageRegistry {
  std::string host;       // host[:port], as image references name it
  bool insecure = false;  // plain HTTP or an unchecked certificate (--insecure-image-registry)
  bool operator==(const ImageRegistry&) const = default;
};

// Qualifies every task group's image with the first registry (the default) where it names none,
// and checks that each names one of `registries`. kInvalidArgument names the field
// ("tasks[0].image") and the registries the cluster has.
Status QualifyImages(const std::vector<ImageRegistry>& registries, JobSpec& spec);

// Whether the qualified `image` comes from a registry reached without TLS checks.
bool FromInsecureRegistry(const std::vector<ImageRegistry>& registries, std::string_view image);

}  // namespace cohort
