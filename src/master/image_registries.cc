#include "master/image_registries.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "model/image_reference.h"

namespace cohort {
namespace {

const ImageRegistry* Find(const std::vector<ImageRegistry>& registries, std::string_view host) {
  for (const auto& r : registries) {
    if (r.host == host) return &r;
  }
  return nullptr;
}

std::string Names(const std::vector<ImageRegistry>& registries) {
  std::vector<std::string> hosts;
  for (const auto& r : registries) hosts.push_back(r.host);
  return Join(hosts, ", ");
}

}  // namespace

Status QualifyImages(const std::vector<ImageRegistry>& registries, JobSpec& spec) {
  std::vector<std::string> problems;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    std::string& image = spec.tasks[i].image;
    if (image.empty()) continue;
    const std::string field = fmt::format("tasks[{}].image", i);
    auto ref = ParseImageReference(image);
    if (!ref.ok()) {
      problems.push_back(fmt::format("{}: {}", field, ref.status().message()));
      continue;
    }
    if (registries.empty()) {
      problems.push_back(fmt::format(
          "{}: this cluster runs no images: an admin names its registry with cohortd master "
          "--image-registry HOST[:PORT]",
          field));
      continue;
    }
    if (ref->registry.empty()) ref->registry = registries.front().host;
    if (!Find(registries, ref->registry)) {
      problems.push_back(fmt::format("{}: registry {} is not one this cluster pulls from ({})",
                                     field, ref->registry, Names(registries)));
      continue;
    }
    image = ref->ToString();
  }
  if (problems.empty()) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("job spec has {} error{}", problems.size(), problems.size() == 1 ? "" : "s"),
      problems);
}

bool FromInsecureRegistry(const std::vector<ImageRegistry>& registries, std::string_view image) {
  auto ref = ParseImageReference(image);
  if (!ref.ok()) return false;
  const ImageRegistry* r = Find(registries, ref->registry);
  return r && r->insecure;
}

}  // namespace cohort
