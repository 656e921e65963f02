#include "agent/image_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace cohort::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<CachedImage> Used(std::vector<std::string> mru_first) {
  std::vector<CachedImage> images;
  int64_t t = 1000;
  for (const auto& name : mru_first) images.push_back(CachedImage{name, FromMicros(t--)});
  return images;
}

TEST(ImageCache, EvictsTheLeastRecentlyUsedUntilTheRestFits) {
  auto images = Used({"a", "b", "c", "d"});
  std::map<std::string, int64_t> sizes = {{"a", 100}, {"b", 100}, {"c", 100}, {"d", 100}};
  EXPECT_THAT(ImagesToEvict(images, sizes, 400, {}), IsEmpty());
  EXPECT_THAT(ImagesToEvict(images, sizes, 250, {}), ElementsAre("d", "c"));
  // Never one kept (the task's own, even when it is the oldest).
  EXPECT_THAT(ImagesToEvict(images, sizes, 250, {"d"}), ElementsAre("c", "b"));
  EXPECT_THAT(ImagesToEvict(images, sizes, 0, {"a"}), ElementsAre("d", "c", "b"));
  // One podman no longer has takes no room.
  EXPECT_THAT(ImagesToEvict(images, {{"a", 300}}, 300, {}), IsEmpty());
}

TEST(ImageCache, ReadsEveryNameOfPodmansImages) {
  auto sizes = ImageSizesFromPodman(R"([
    {"Id": "7ef5", "Size": 151991816, "Names": ["127.0.0.1:5055/big:1", "localhost/big:1"]},
    {"Id": "8b3a", "Size": 2120000, "Names": ["127.0.0.1:5055/busybox:1"]},
    {"Id": "dead", "Size": 5}
  ])");
  EXPECT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes["localhost/big:1"], 151991816);
  EXPECT_EQ(sizes["127.0.0.1:5055/busybox:1"], 2120000);
  EXPECT_THAT(ImageSizesFromPodman("not json"), IsEmpty());
}

TEST(ImageCache, RecordsUsesMostRecentFirstAndOnlyImagesItPulled) {
  std::string dir = std::filesystem::temp_directory_path() /
                    ("cohort-image-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(RecordImageUse(dir, "r.example.com/a:1").ok());
  ::usleep(20'000);
  ASSERT_TRUE(RecordImageUse(dir, "r.example.com/b:1").ok());
  // Found in podman's store but never pulled by Cohort: not Cohort's to evict.
  ASSERT_TRUE(RecordImageUse(dir, "admins/own:1", /*only_if_recorded=*/true).ok());
  auto cached = CachedImages(dir);
  ASSERT_EQ(cached.size(), 2u);
  EXPECT_EQ(cached[0].image, "r.example.com/b:1");
  EXPECT_EQ(cached[1].image, "r.example.com/a:1");
  ::usleep(20'000);
  ASSERT_TRUE(RecordImageUse(dir, "r.example.com/a:1", /*only_if_recorded=*/true).ok());
  EXPECT_EQ(CachedImages(dir)[0].image, "r.example.com/a:1") << "used again: the newest";
  ForgetImage(dir, "r.example.com/a:1");
  ASSERT_EQ(CachedImages(dir).size(), 1u);
  EXPECT_EQ(CachedImages(dir, 0).size(), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cohort::agent
