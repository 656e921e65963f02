// The node's image cache (docs/runtimes.md, "The image cache"): the images Cohort pulled for its
// tasks, kept in podman's store for the next task that runs them, and bounded in bytes
// (`cohortd agent --image-cache-size`): after each pull the least recently used go, never one
// a container uses (podman refuses to remove those) nor one Cohort did not pull.
//
// Each image is recorded by a file in the cache directory (<agent data>/images), holding its
// name, whose modification time is the image's last use. The supervisors record and evict; the
// agent lists the records for its reports.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace cohort::agent {

struct CachedImage {
  std::string image;
  Timestamp last_used;
};

// Records that a task uses `image` now: one Cohort pulled, or (`only_if_recorded`) one found in
// podman's store, which counts only if Cohort pulled it earlier. kInternal if the record cannot
// be written.
Status RecordImageUse(const std::string& dir, const std::string& image,
                      bool only_if_recorded = false);
// The recorded images, most recently used first; at most `most`.
std::vector<CachedImage> CachedImages(const std::string& dir, size_t most = 4096);
// Forgets `image` (podman removed it).
void ForgetImage(const std::string& dir, const std::string& image);

// Which images to remove so that those left take at most `bound` bytes: the least recently used
// first, never one in `keep`. `sizes` by image; an image of unknown size counts as none. Pure.
std::vector<std::string> ImagesToEvict(const std::vector<CachedImage>& images,
                                       const std::map<std::string, int64_t>& sizes, int64_t bound,
                                       const std::set<std::string>& keep);

// The sizes of the images podman holds, by every name of each, from `podman images --format
// json`'s output. Pure.
std::map<std::string, int64_t> ImageSizesFromPodman(const std::string& json);

}  // namespace cohort::agent
