#include "master/image_registries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

JobSpec WithImages(std::vector<std::string> images) {
  JobSpec spec;
  for (size_t i = 0; i < images.size(); ++i) {
    TaskGroupSpec g;
    g.role = "r" + std::to_string(i);
    g.image = images[i];
    spec.tasks.push_back(g);
  }
  return spec;
}

const std::vector<ImageRegistry> kRegistries = {{"registry.example.com", false},
                                                {"127.0.0.1:5000", true}};

TEST(ImageRegistries, AnImageWithoutARegistryGetsTheDefault) {
  JobSpec spec =
      WithImages({"team/pytorch:2.1", "127.0.0.1:5000/x@sha256:" + std::string(64, 'b'), ""});
  ASSERT_TRUE(QualifyImages(kRegistries, spec).ok());
  EXPECT_EQ(spec.tasks[0].image, "registry.example.com/team/pytorch:2.1");
  EXPECT_EQ(spec.tasks[1].image, "127.0.0.1:5000/x@sha256:" + std::string(64, 'b'));
  EXPECT_EQ(spec.tasks[2].image, "") << "a bare task stays one";
  EXPECT_FALSE(FromInsecureRegistry(kRegistries, spec.tasks[0].image));
  EXPECT_TRUE(FromInsecureRegistry(kRegistries, spec.tasks[1].image));
  EXPECT_TRUE(PlacementConstraints(spec).labels.count("cohort.runtime"));
  EXPECT_FALSE(PlacementConstraints(WithImages({""})).labels.count("cohort.runtime"));
}

TEST(ImageRegistries, RefusesOtherRegistriesAndAClusterWithoutAny) {
  JobSpec spec = WithImages({"docker.io/library/ubuntu:22.04", "ok/image"});
  Status s = QualifyImages(kRegistries, spec);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.details(),
              ElementsAre("tasks[0].image: registry docker.io is not one this cluster pulls from "
                          "(registry.example.com, 127.0.0.1:5000)"));
  JobSpec none = WithImages({"team/x"});
  Status refused = QualifyImages({}, none);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.details().at(0), HasSubstr("--image-registry"));
}

}  // namespace
}  // namespace cohort
