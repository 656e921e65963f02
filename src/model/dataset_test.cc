#include "model/dataset.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(DatasetRefTest, ReadsEveryForm) {
  auto plain = ParseDatasetRef("imagenet");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->team, "");
  EXPECT_EQ(plain->name, "imagenet");
  EXPECT_FALSE(plain->version);

  auto full = ParseDatasetRef("vision/imagenet-1k.v2:12");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->team, "vision");
  EXPECT_EQ(full->name, "imagenet-1k.v2");
  EXPECT_EQ(full->version, 12);
  EXPECT_EQ(FormatDatasetRef(*full), "vision/imagenet-1k.v2:12");

  auto versioned = ParseDatasetRef("cifar:3");
  ASSERT_TRUE(versioned.ok());
  EXPECT_EQ(versioned->version, 3);
  EXPECT_EQ(versioned->team, "");
}

TEST(DatasetRefTest, RefusesWhatIsNotAReferenceNamingThePart) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{"", "datasets[0] (name)"},
           Case{"ImageNet", "not a dataset name"},
           Case{"-x", "not a dataset name"},
           Case{"a/b/c", "not a dataset name"},
           Case{"/x", "the team before '/'"},
           Case{"x:0", "not a version number"},
           Case{"x:01", "not a version number"},
           Case{"x:-1", "not a version number"},
           Case{"x:", "not a version number"},
           Case{"x:1:2", "not a version number"},
           Case{"x:99999999999999999999", "not a version number"},
           Case{"t/x y", "not a dataset name"},
       }) {
    auto ref = ParseDatasetRef(c.text, "datasets[0]");
    ASSERT_FALSE(ref.ok()) << c.text;
    EXPECT_EQ(ref.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(ref.status().message().find("datasets[0]"), std::string::npos)
        << ref.status().message();
    EXPECT_NE(ref.status().message().find(c.says), std::string::npos)
        << c.text << ": " << ref.status().message();
  }
  EXPECT_TRUE(CheckDatasetName(std::string(kMaxDatasetNameLength, 'a')).ok());
  EXPECT_FALSE(CheckDatasetName(std::string(kMaxDatasetNameLength + 1, 'a')).ok());
}

TEST(DatasetManifestTest, ReadsWhatItWrites) {
  DatasetVersion v;
  v.name = "cifar";
  v.version = 2;
  v.team = "vision";
  v.is_public = true;
  v.user = "ada";
  v.created_at = FromMicros(1'700'000'000'000'000);
  v.files = {DatasetFile{"a/b.bin", 3, std::string(64, 'a'), {{std::string(64, 'a'), 3}}},
             DatasetFile{"empty", 0, std::string(64, 'e'), {}}};
  v.file_count = 2;
  v.bytes = 3;
  auto back = DatasetVersionFromJson(DatasetVersionJson(v, true));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(DatasetVersionJson(*back, true), DatasetVersionJson(v, true));
  auto summary = DatasetVersionFromJson(DatasetVersionJson(v, false));
  ASSERT_TRUE(summary.ok());
  EXPECT_TRUE(summary->files.empty());
  EXPECT_EQ(summary->bytes, 3);
}

TEST(DatasetManifestTest, AFileOfTheWrongShapeIsNamed) {
  nlohmann::json files = nlohmann::json::parse(
      R"([{"path": "a", "size": 1, "sha256": "x", "chunks": []},
          {"path": "b", "size": -1, "sha256": "x", "chunks": []}])");
  auto read = DatasetFilesFromJson(files);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("files[1].size"), std::string::npos)
      << read.status().message();
  files[1]["size"] = 1;
  files[1]["chunks"] = nlohmann::json::array({{{"sha256", 3}, {"size", 1}}});
  read = DatasetFilesFromJson(files);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("files[1].chunks[0].sha256: must be a string"),
            std::string::npos)
      << read.status().message();
  EXPECT_FALSE(DatasetFilesFromJson(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace cohort
