// A task's datasets and code made ready by its supervisor, against a real directory store: the
// datasets linked read-only from the node's cache under $COHORT_DATA_DIR, the code unpacked
// where the task starts, what cannot be fetched failing with the reason.
#include "agent/task_inputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "os/process.h"
#include "os/real_clock.h"
#include "store/chunked_files_testing.h"
#include "store/directory_store.h"
#include "store/open_store.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using store::testing::PutChunkedFile;
using store::testing::PutManifest;
using ::testing::HasSubstr;

class TaskInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("task_inputs_test_" + std::to_string(::getpid()));
    Remove();
    fs::create_directories(root_ / "task" / "work");
    StoreAccess access;
    access.directory = (root_ / "store").string();
    std::ofstream(root_ / "task" / kStoreAccessFile) << ToJson(access).dump();
    auto opened = store::OpenDirectoryStore(access.directory);
    ASSERT_TRUE(opened.ok());
    store_ = std::move(*opened);
  }
  void TearDown() override { Remove(); }
  void Remove() { store::testing::RemoveReadOnlyTree(root_); }
  StatusOr<HeldInputs> Fetch(const TaskInputsSpec& spec) {
    return FetchTaskInputs(spec, (root_ / "task").string(), store::OpenStore, clock_, std::nullopt,
                           {}, [this](const std::string& line) { said_ += line + "\n"; });
  }
  TaskInputsSpec Spec() {
    TaskInputsSpec spec;
    spec.cache_dir = (root_ / "cache").string();
    spec.cache_bytes = 1 << 20;
    spec.fetch_limit = std::chrono::milliseconds(0);
    return spec;
  }

  fs::path root_;
  std::unique_ptr<store::ObjectStore> store_;
  RealClock clock_;
  std::string said_;
};

TEST_F(TaskInputsTest, DatasetsAreLinkedUnderTheDataDirAndTheCodeUnpackedWhereTheTaskStarts) {
  ASSERT_TRUE(PutManifest(*store_, "datasets/default/digits/1.json",
                          {PutChunkedFile(*store_, "labels.txt", "0 1 2\n")})
                  .ok());
  DatasetFile script = PutChunkedFile(*store_, "bin/run.sh", "#!/bin/sh\necho hi\n");
  script.executable = true;
  ASSERT_TRUE(PutManifest(*store_, "contexts/abc.json",
                          {PutChunkedFile(*store_, "train.py", "print(1)\n"), script})
                  .ok());
  TaskInputsSpec spec = Spec();
  spec.datasets = {TaskDataset{"digits", "default/digits:1", "datasets/default/digits/1.json"}};
  spec.context_key = "contexts/abc.json";
  auto held = Fetch(spec);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->lock_fds.size(), 1u);
  const std::string data = TaskDataDir((root_ / "task").string());
  EXPECT_EQ(ReadFileOrEmpty(data + "/digits/labels.txt"), "0 1 2\n");
  EXPECT_TRUE(fs::is_symlink(data + "/digits"));
  EXPECT_EQ(ReadFileOrEmpty((root_ / "task" / "work" / "train.py").string()), "print(1)\n");
  struct stat st {};
  ASSERT_EQ(::stat((root_ / "task" / "work" / "bin" / "run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(::stat((root_ / "task" / "work" / "train.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "the task's own copy, to change as it likes";
  EXPECT_FALSE(fs::exists(root_ / "task" / "code")) << "the staging place is gone";
  EXPECT_THAT(said_, HasSubstr("cohort: dataset default/digits:1 is at $COHORT_DATA_DIR/digits"));
  EXPECT_THAT(said_, HasSubstr("cohort: the job's code: 2 files"));
  held->Release();
}

TEST_F(TaskInputsTest, WhatCannotBeFetchedFailsWithTheReasonAndHoldsNothing) {
  TaskInputsSpec spec = Spec();
  spec.datasets = {TaskDataset{"gone", "default/gone:3", "datasets/default/gone/3.json"}};
  auto missing = Fetch(spec);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("dataset default/gone:3 is not in the store (deleted after the job was "
                        "submitted?)"));

  DatasetFile file = PutChunkedFile(*store_, "train.py", "print(1)\n");
  ASSERT_TRUE(store_->Put(store::BlobKey(file.chunks[0].sha256), "XXXX").ok());  // damaged
  ASSERT_TRUE(PutManifest(*store_, "contexts/bad.json", {file}).ok());
  TaskInputsSpec code = Spec();
  code.context_key = "contexts/bad.json";
  auto damaged = Fetch(code);
  EXPECT_EQ(damaged.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(damaged.status().message(), HasSubstr("could not fetch the job's code: train.py"));
  EXPECT_FALSE(fs::exists(root_ / "task" / "work" / "train.py"));
}

TEST_F(TaskInputsTest, TheSpecRoundTripsThroughJson) {
  TaskInputsSpec spec = Spec();
  spec.datasets = {TaskDataset{"digits", "default/digits:1", "datasets/default/digits/1.json"}};
  spec.context_key = "contexts/abc.json";
  auto back = TaskInputsSpecFromJson(ToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(spec));
  Json bad = ToJson(spec);
  bad["datasets"][0]["name"] = "../etc";
  EXPECT_FALSE(TaskInputsSpecFromJson(bad).ok());
}

}  // namespace
}  // namespace cohort::agent
