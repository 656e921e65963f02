#include "agent/image_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <filesystem>

#include "model/json.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

// A stable file name for an image name (FNV-1a, 64 bits): names run to 512 characters, more than
// a file name holds; the record's content is the name itself.
std::string RecordName(const std::string& image) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : image) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return fmt::format("{:016x}.image", hash);
}

}  // namespace

Status RecordImageUse(const std::string& dir, const std::string& image, bool only_if_recorded) {
  if (only_if_recorded && !fs::exists(dir + "/" + RecordName(image))) return Status::Ok();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Internal(fmt::format("cannot create {}: {}", dir, ec.message()));
  const std::string path = dir + "/" + RecordName(image);
  // Written anew each time: its modification time is the last use.
  return WriteFileAtomically(path, image, 0644, Durability::kProcessCrash);
}

std::vector<CachedImage> CachedImages(const std::string& dir, size_t most) {
  std::vector<CachedImage> images;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".image") continue;
    struct stat st;
    if (::stat(entry.path().c_str(), &st) != 0) continue;
    std::string image = ReadFileOrEmpty(entry.path().string());
    if (image.empty()) continue;
    images.push_back(CachedImage{
        image, FromMicros(int64_t{st.st_mtim.tv_sec} * 1'000'000 + st.st_mtim.tv_nsec / 1000)});
  }
  std::sort(images.begin(), images.end(),
            [](const auto& a, const auto& b) { return a.last_used > b.last_used; });
  if (images.size() > most) images.resize(most);
  return images;
}

void ForgetImage(const std::string& dir, const std::string& image) {
  std::error_code ec;
  fs::remove(dir + "/" + RecordName(image), ec);
}

std::vector<std::string> ImagesToEvict(const std::vector<CachedImage>& images,
                                       const std::map<std::string, int64_t>& sizes, int64_t bound,
                                       const std::set<std::string>& keep) {
  auto size_of = [&](const std::string& image) {
    auto it = sizes.find(image);
    return it == sizes.end() ? int64_t{0} : it->second;
  };
  int64_t total = 0;
  for (const auto& i : images) total += size_of(i.image);
  std::vector<std::string> evict;
  // Least recently used first: from the back.
  for (auto it = images.rbegin(); it != images.rend() && total > bound; ++it) {
    if (keep.count(it->image)) continue;
    evict.push_back(it->image);
    total -= size_of(it->image);
  }
  return evict;
}

std::map<std::string, int64_t> ImageSizesFromPodman(const std::string& json) {
  std::map<std::string, int64_t> sizes;
  auto doc = ParseJson(json);
  if (!doc.ok() || !doc->is_array()) return sizes;
  for (const Json& image : *doc) {
    if (!image.is_object()) continue;
    int64_t size = image.value("Size", int64_t{0});
    for (const Json& name : image.value("Names", Json::array())) {
      if (name.is_string()) sizes[name.get<std::string>()] = size;
    }
  }
  return sizes;
}

}  // namespace cohort::agent
