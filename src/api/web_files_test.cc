// Which files the dashboard's routes serve (api/web_files.h), and which they never do.
#include "api/web_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort::api {
namespace {

namespace fs = std::filesystem;

// base/web holds the dashboard; base/secret, beside it, must stay out of reach.
class WebFiles : public ::testing::Test {
 protected:
  WebFiles() : base_(fs::temp_directory_path() / ("cohort-web-" + std::to_string(::getpid()))) {
    fs::remove_all(base_);
    fs::create_directories(web() + "/sub");
    Write(web() + "/index.html", "<!doctype html>");
    Write(web() + "/app.js", "console.log(1)");
    Write(web() + "/app.css", "body{}");
    Write(web() + "/.hidden.js", "x");
    Write(web() + "/data.json", "{}");
    Write(web() + "/sub/inner.js", "x");
    Write(base_.string() + "/secret.js", "token");
    fs::create_symlink(base_ / "secret.js", web() + "/link.js");
  }
  ~WebFiles() override { fs::remove_all(base_); }

  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string web() const { return (base_ / "web").string(); }

  fs::path base_;
};

TEST_F(WebFiles, ServesTheFixedKindsWithTheirTypes) {
  auto js = FindWebFile(web(), "app.js");
  ASSERT_TRUE(js.ok()) << js.status().ToString();
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(*ReadWebFile(*js), "console.log(1)");
  EXPECT_EQ(FindWebFile(web(), "index.html")->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(FindWebFile(web(), "app.css")->content_type, "text/css; charset=utf-8");
}

TEST_F(WebFiles, NothingOutsideTheDirectoryNorOutsideTheFixedSet) {
  for (const char* name :
       {"", ".", "..", "../secret.js", "..%2Fsecret.js", "sub/inner.js", "sub", ".hidden.js",
        "data.json", "link.js", "missing.js", "app.js\n", "app.js/", "\\..\\secret.js", ".js"}) {
    auto file = FindWebFile(web(), name);
    ASSERT_FALSE(file.ok()) << "served " << name;
    EXPECT_EQ(file.status().code(), StatusCode::kNotFound) << name;
  }
  EXPECT_EQ(FindWebFile(base_.string() + "/nosuch", "app.js").status().code(),
            StatusCode::kNotFound);
}

TEST_F(WebFiles, AFileBeyondTheBoundIsNotSent) {
  Write(web() + "/big.js", std::string(kMaxWebFileBytes + 1, 'x'));
  auto big = FindWebFile(web(), "big.js");
  ASSERT_TRUE(big.ok());
  EXPECT_FALSE(ReadWebFile(*big).ok());
}

}  // namespace
}  // namespace cohort::api
