// Which files the dashboard's routes serve (api/web_files.h), and which they never do.
#include "api/web_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
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

// What the build wrote gzipped beside a file is chosen when the client takes gzip, unless it is
// older than the file or reaches outside the directory; without a sibling, the file itself.
TEST_F(WebFiles, TheGzipSiblingIsChosenWhenTakenCurrentAndInside) {
  Write(web() + "/app.js.gz", "\x1f\x8b packed");
  auto packed = FindWebFile(web(), "app.js", true);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_TRUE(packed->gzip);
  EXPECT_EQ(packed->content_type, "text/javascript; charset=utf-8") << "the type of the content";
  EXPECT_EQ(*ReadWebFile(*packed), "\x1f\x8b packed");
  auto plain = FindWebFile(web(), "app.js", false);
  EXPECT_FALSE(plain->gzip);
  EXPECT_EQ(*ReadWebFile(*plain), "console.log(1)");
  // No sibling: the file itself.
  auto css = FindWebFile(web(), "app.css", true);
  ASSERT_TRUE(css.ok());
  EXPECT_FALSE(css->gzip);
  EXPECT_EQ(*ReadWebFile(*css), "body{}");
  // A sibling older than its file was compressed before the file changed: not used.
  fs::last_write_time(web() + "/app.js.gz",
                      fs::last_write_time(web() + "/app.js") - std::chrono::seconds(10));
  EXPECT_FALSE(FindWebFile(web(), "app.js", true)->gzip);
  // A sibling that links outside the directory is never read.
  fs::create_symlink(base_ / "secret.js", web() + "/index.html.gz");
  auto page = FindWebFile(web(), "index.html", true);
  ASSERT_TRUE(page.ok());
  EXPECT_FALSE(page->gzip);
  EXPECT_EQ(*ReadWebFile(*page), "<!doctype html>");
  // Without the file, its sibling alone names nothing.
  Write(web() + "/gone.js.gz", "\x1f\x8b");
  EXPECT_EQ(FindWebFile(web(), "gone.js", true).status().code(), StatusCode::kNotFound);
}

TEST(AcceptEncoding, GzipIsTakenAsRfc9110Says) {
  for (const char* takes :
       {"gzip", "gzip, deflate, br, zstd", "GZip", " x-gzip ", "br;q=1, gzip;q=0.5", "gzip;q=1",
        "gzip;q=1.000", "gzip; q=0.001", "*", "br, *;q=0.1", "gzip;q=0, gzip", "br,,gzip"}) {
    EXPECT_TRUE(AcceptsGzip(takes)) << takes;
  }
  for (const char* refuses : {"", "identity", "br, deflate", "gzip;q=0", "gzip;q=0.000", "gzip;Q=0",
                              "gzip;q=0, *", "*;q=0", "gzip;q=2", "gzip;q=1.5", "gzip;q=abc",
                              "gzip;q=", "gzipped", "deflate, *;q=0.5, gzip;q=0"}) {
    EXPECT_FALSE(AcceptsGzip(refuses)) << refuses;
  }
}

TEST_F(WebFiles, AFileBeyondTheBoundIsNotSent) {
  Write(web() + "/big.js", std::string(kMaxWebFileBytes + 1, 'x'));
  auto big = FindWebFile(web(), "big.js");
  ASSERT_TRUE(big.ok());
  EXPECT_FALSE(ReadWebFile(*big).ok());
}

}  // namespace
}  // namespace cohort::api
