// A container image reference as registries and podman read it (the distribution project's
// reference grammar): [REGISTRY/]REPOSITORY[:TAG][@DIGEST], e.g.
// `registry.example.com:5000/team/pytorch:2.1` or `pytorch@sha256:<64 hex digits>`. A task group
// names one in `image:` (docs/runtimes.md); the master qualifies it with the cluster's default
// registry and checks that the cluster pulls from its registry before the job is accepted.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort {

// The longest reference accepted, and the longest repository name (the grammar's own limit).
inline constexpr size_t kMaxImageReferenceLength = 512;
inline constexpr size_t kMaxImageRepositoryLength = 255;

struct ImageReference {
  std::string registry;    // host[:port]; empty: not named (the cluster's default applies)
  std::string repository;  // lowercase path components, '/'-separated
  std::string tag;         // empty: none named ("latest" when there is no digest either)
  std::string digest;      // "sha256:<64 hex>"; empty: none

  // The reference in the form it was read (without a registry if none was named).
  std::string ToString() const;
  bool operator==(const ImageReference&) const = default;
};

// Reads `text`; kInvalidArgument says which part is wrong and why ("tag \"-x\" must start with a
// letter, digit or '_'").
StatusOr<ImageReference> ParseImageReference(std::string_view text);

// A registry as an admin names it (`cohortd master --image-registry`): host[:port], where host is
// a DNS name or an IPv4 address (or [IPv6]) and port 1-65535. kInvalidArgument says why not.
Status ValidateImageRegistry(std::string_view registry);

}  // namespace cohort
