// The object store contract on the directory backend, and what only a directory can show: a put
// cut short by a crash is gone at the next open, and nothing of a put shows before it is whole.
#include "store/directory_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/store_contract_test_fixture.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

INSTANTIATE_TEST_SUITE_P(Directory, StoreContract, ::testing::Values([](const std::string& root) {
                           auto store = OpenDirectoryStore(root);
                           EXPECT_TRUE(store.ok()) << store.status().ToString();
                           return store.ok() ? std::move(store).value() : nullptr;
                         }),
                         [](const auto&) { return std::string("Directory"); });

TEST(DirectoryStore, APutCutShortIsGoneAtALaterOpenAndNeverListed) {
  fs::path root = fs::temp_directory_path() / ("cohort-dirstore-" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    auto store = OpenDirectoryStore(root.string());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put("a/b", "whole").ok());
  }
  // What a crash mid-put leaves: a temporary file, never under objects/.
  std::ofstream(root / "tmp" / "123.0") << "half";
  fs::last_write_time(root / "tmp" / "123.0",
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  // One under way in another process (the master reads while agents write) is left alone.
  std::ofstream(root / "tmp" / "124.0") << "being written";
  auto store = OpenDirectoryStore(root.string());
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE(fs::exists(root / "tmp" / "123.0"));
  EXPECT_TRUE(fs::exists(root / "tmp" / "124.0"));
  auto page = (*store)->List("", "", 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "a/b");
  EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all);
  fs::remove_all(root);
}

}  // namespace
}  // namespace cohort::store
