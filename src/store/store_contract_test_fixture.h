// The object store contract (store/object_store.h), one suite for every backend: a backend's
// test instantiates it with a factory of fresh stores.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "store/object_store.h"

namespace cohort::store {

using StoreFactory = std::function<std::unique_ptr<ObjectStore>(const std::string& scratch)>;

class StoreContract : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    // A parameterised test's name is "Test/Backend": one directory, not two (TearDown removes
    // scratch_, and would leave the parent behind).
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    scratch_ = std::filesystem::temp_directory_path() /
               ("cohort-store-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(scratch_);
    std::filesystem::create_directories(scratch_);
    store_ = GetParam()((scratch_ / "store").string());
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(scratch_);
  }
  std::string File(const std::string& name, const std::string& content) {
    std::string path = (scratch_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<std::string> Keys(const std::string& prefix, const std::string& after = "",
                                size_t limit = 1000) {
    auto page = store_->List(prefix, after, limit);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> keys;
    if (page.ok()) {
      for (const auto& o : page->objects) keys.push_back(o.key);
    }
    return keys;
  }

  std::filesystem::path scratch_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_P(StoreContract, PutThenGetHeadAndReplaceWhole) {
  ASSERT_TRUE(store_->Put("jobs/7/outputs/model.txt", "weights v1").ok());
  EXPECT_EQ(*store_->Get("jobs/7/outputs/model.txt", 100), "weights v1");
  EXPECT_EQ(store_->Head("jobs/7/outputs/model.txt")->size, 10);
  ASSERT_TRUE(store_->Put("jobs/7/outputs/model.txt", "v2").ok());
  EXPECT_EQ(*store_->Get("jobs/7/outputs/model.txt", 100), "v2");
  // Empty objects, and bytes of every value.
  ASSERT_TRUE(store_->Put("empty", "").ok());
  EXPECT_EQ(*store_->Get("empty", 0), "");
  std::string binary;
  for (int i = 0; i < 256; ++i) binary += static_cast<char>(i);
  ASSERT_TRUE(store_->Put("binary", binary).ok());
  EXPECT_EQ(*store_->Get("binary", 256), binary);
}

TEST_P(StoreContract, FilesGoInAndComeOutWhole) {
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) >> 7);
  ASSERT_TRUE(store_->PutFile("a/big.bin", File("big.bin", big)).ok());
  std::string out = (scratch_ / "out.bin").string();
  ASSERT_TRUE(store_->GetFile("a/big.bin", out).ok());
  EXPECT_EQ(Read(out), big);
  EXPECT_FALSE(std::filesystem::exists(out + ".part"));
  // A source that cannot be read stores nothing, and leaves the old object.
  ASSERT_TRUE(store_->Put("a/kept", "old").ok());
  EXPECT_FALSE(store_->PutFile("a/kept", (scratch_ / "missing").string()).ok());
  EXPECT_EQ(*store_->Get("a/kept", 10), "old");
  EXPECT_EQ(Keys("a/"), (std::vector<std::string>{"a/big.bin", "a/kept"}));
}

TEST_P(StoreContract, MissingObjectsAreNotFoundAndDeletingTwiceIsFine) {
  EXPECT_EQ(store_->Get("nope", 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Head("a/nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetFile("nope", (scratch_ / "x").string()).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store_->Put("a/b", "x").ok());
  ASSERT_TRUE(store_->Delete("a/b").ok());
  ASSERT_TRUE(store_->Delete("a/b").ok());
  ASSERT_TRUE(store_->Delete("never/was").ok());
  EXPECT_EQ(store_->Head("a/b").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Keys("").empty());
}

TEST_P(StoreContract, AReaderSaysHowMuchItTakes) {
  ASSERT_TRUE(store_->Put("k", std::string(1000, 'x')).ok());
  EXPECT_EQ(store_->Get("k", 999).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(store_->Get("k", 1000)->size(), 1000u);
}

TEST_P(StoreContract, RangesGiveWhatTheObjectHoldsThere) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7);
  ASSERT_TRUE(store_->Put("jobs/7/outputs/r.bin", data).ok());
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 0, 10), data.substr(0, 10));
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 500, 250), data.substr(500, 250));
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 0, 1000), data);
  // Past the end: what is there, then nothing.
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 990, 100), data.substr(990));
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 999, 1), data.substr(999));
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 1000, 10), "");
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 5000, 10), "");
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 10, 0), "");
  // "The rest", asked as a length far beyond the object, holds only the rest.
  EXPECT_EQ(*store_->GetRange("jobs/7/outputs/r.bin", 900, size_t{1} << 40), data.substr(900));
  ASSERT_TRUE(store_->Put("empty", "").ok());
  EXPECT_EQ(*store_->GetRange("empty", 0, 10), "");
  EXPECT_EQ(store_->GetRange("jobs/7/outputs/none", 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetRange("jobs/7/outputs/none", 0, 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetRange("jobs/7/outputs", 0, 10).status().code(), StatusCode::kNotFound);
  Status negative = store_->GetRange("jobs/7/outputs/r.bin", -1, 10).status();
  EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(negative.message().find("offset"), std::string::npos) << negative.message();
  EXPECT_EQ(store_->GetRange("../x", 0, 10).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreContract, AKeyAndAKeyBelowItAreBothObjects) {
  // S3 has no directories: "a" and "a/b" are two objects.
  ASSERT_TRUE(store_->Put("a", "1").ok());
  ASSERT_TRUE(store_->Put("a/b", "2").ok());
  ASSERT_TRUE(store_->Put("a%2F", "3").ok());  // looks like the directory backend's mark
  EXPECT_EQ(*store_->Get("a", 10), "1");
  EXPECT_EQ(*store_->Get("a/b", 10), "2");
  EXPECT_EQ(*store_->Get("a%2F", 10), "3");
  EXPECT_EQ(Keys(""), (std::vector<std::string>{"a", "a%2F", "a/b"}));
}

TEST_P(StoreContract, ListingIsByPrefixInKeyOrderAndPages) {
  for (const char* key : {"jobs/7/outputs/b", "jobs/7/outputs/a/x", "jobs/7/outputs/a/y",
                          "jobs/70/outputs/z", "jobs/8/outputs/c", "datasets/m"}) {
    ASSERT_TRUE(store_->Put(key, key).ok());
  }
  EXPECT_EQ(Keys("jobs/7/"), (std::vector<std::string>{"jobs/7/outputs/a/x", "jobs/7/outputs/a/y",
                                                       "jobs/7/outputs/b"}));
  // A prefix is bytes, not segments.
  EXPECT_EQ(Keys("jobs/7"), (std::vector<std::string>{"jobs/7/outputs/a/x", "jobs/7/outputs/a/y",
                                                      "jobs/7/outputs/b", "jobs/70/outputs/z"}));
  EXPECT_EQ(Keys("jobs/7/outputs/a"),
            (std::vector<std::string>{"jobs/7/outputs/a/x", "jobs/7/outputs/a/y"}));
  auto first = store_->List("jobs/", "", 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->objects.size(), 2u);
  EXPECT_TRUE(first->more);
  EXPECT_EQ(first->objects[1].size, static_cast<int64_t>(first->objects[1].key.size()));
  auto rest = store_->List("jobs/", first->objects.back().key, 10);
  ASSERT_TRUE(rest.ok());
  EXPECT_FALSE(rest->more);
  EXPECT_EQ(first->objects.size() + rest->objects.size(), 5u);
  EXPECT_EQ(rest->objects.front().key, "jobs/7/outputs/b");
  EXPECT_TRUE(Keys("nothing/here/").empty());
  EXPECT_EQ(store_->List("", "", 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreContract, BadKeysAreRefusedWithTheReason) {
  for (const auto& [key, reason] : std::vector<std::pair<std::string, std::string>>{
           {"", "is empty"},
           {"/abs", "starts with '/'"},
           {"a/", "ends with '/'"},
           {"a//b", "empty segment"},
           {"a/../b", "\"..\" segment"},
           {"./a", "\".\" segment"},
           {"a\\b", "backslash"},
           {"a\nb", "control character"},
           {"caf\xe9", "not UTF-8"},
           {std::string(kMaxKeyBytes + 1, 'k'), "longer than 1024 bytes"}}) {
    Status s = store_->Put(key, "x");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(s.message().find(reason), std::string::npos) << s.message();
    EXPECT_EQ(store_->Head(key).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(Keys("").empty());
  // What keys may hold: UTF-8, spaces, '%', dots inside a segment.
  for (const char* key : {"caf\xc3\xa9/na\xc3\xafve file.txt", "100%/a..b", ".hidden/.x"}) {
    EXPECT_TRUE(store_->Put(key, "ok").ok()) << key;
    EXPECT_EQ(*store_->Get(key, 10), "ok") << key;
  }
}

}  // namespace cohort::store
