// Packing a real directory: shards read back with libarchive, identical bytes from the same
// input, what is refused, and that a failed packing leaves nothing taken for packed.
#include "data/shard_pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <locale.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fmt/format.h>

namespace cohort::data {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool IsAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    static const char* kDigits = "0123456789abcdef";
    hex += kDigits[digest[i] >> 4];
    hex += kDigits[digest[i] & 15];
  }
  return hex;
}

struct Member {
  std::string name;
  std::string data;
  int mode = 0;
  int64_t mtime = -1;
  int64_t uid = -1;
  int64_t gid = -1;
  std::string uname;
};

// Every member of a tar file, as libarchive reads it.
std::vector<Member> ReadTar(const fs::path& path) {
  std::vector<Member> out;
  // UTF-8 names come out of libarchive only in a UTF-8 locale.
  locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
  locale_t previous = ::uselocale(utf8);
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 1 << 16), ARCHIVE_OK) << path;
  struct archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    Member m;
    m.name = archive_entry_pathname(e);
    m.mode = archive_entry_perm(e);
    m.mtime = archive_entry_mtime(e);
    m.uid = archive_entry_uid(e);
    m.gid = archive_entry_gid(e);
    const char* uname = archive_entry_uname(e);
    m.uname = uname ? uname : "";
    m.data.resize(size_t(archive_entry_size(e)));
    EXPECT_EQ(archive_read_data(a, m.data.data(), m.data.size()), la_ssize_t(m.data.size()));
    out.push_back(std::move(m));
  }
  archive_read_free(a);
  ::uselocale(previous);
  ::freelocale(utf8);
  return out;
}

class ShardPackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cohort-shardpack-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "src");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& content) {
    fs::path p = root_ / "src" / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    contents_[rel] = content;
  }

  // 20 samples of an image and a class, some with a long or non-ASCII name, some empty.
  void WriteSamples() {
    for (int i = 0; i < 20; ++i) {
      std::string key = i % 7 == 3   ? "deep/" + std::string(150, 'k') + std::to_string(i)
                        : i % 5 == 1 ? "caf\xc3\xa9/" + std::to_string(i)
                                     : "train/" + std::to_string(1000 + i);
      Write(key + ".jpg", std::string(size_t(300 * i), char('a' + i)));
      Write(key + ".cls", std::to_string(i % 3));
    }
  }

  fs::path src() const { return root_ / "src"; }
  fs::path root_;
  std::map<std::string, std::string> contents_;
};

TEST_F(ShardPackTest, ShardsReadBackWithLibarchiveInPlanOrderWithTheirIndex) {
  WriteSamples();
  std::vector<PackProgress> seen;
  auto index = PackDirectory(src().string(), (root_ / "out").string(), 8192,
                             [&](const PackProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->files, 40);
  EXPECT_EQ(index->samples, 20);
  ASSERT_GT(index->shards.size(), 3u);

  std::vector<std::string> names;
  int64_t total = 0;
  for (size_t i = 0; i < index->shards.size(); ++i) {
    const PackedShard& shard = index->shards[i];
    fs::path path = root_ / "out" / shard.name;
    EXPECT_EQ(shard.name, fmt::format("shard-{:06}.tar", i));
    std::string bytes = ReadAll(path);
    EXPECT_EQ(int64_t(bytes.size()), shard.bytes);
    // At most the target, unless one sample is larger.
    EXPECT_TRUE(shard.samples == 1 || shard.bytes <= 8192) << shard.name << ": " << shard.bytes;
    EXPECT_EQ(Sha256Hex(bytes), shard.sha256);
    total += shard.bytes;
    auto members = ReadTar(path);
    EXPECT_EQ(int64_t(members.size()), shard.files);
    for (const Member& m : members) {
      names.push_back(m.name);
      EXPECT_EQ(m.data, contents_[m.name]) << m.name;
      EXPECT_EQ(m.mode, 0644) << m.name;
      EXPECT_EQ(m.mtime, 0) << m.name;
      EXPECT_EQ(m.uid, 0);
      EXPECT_EQ(m.gid, 0);
      EXPECT_EQ(m.uname, "");
    }
    // The member table: each member's data read at its offset is the file's content, and what
    // lies before it is the member's header (only a header: between two members, the padding of
    // the one and the header of the next).
    std::string table_text = ReadAll(root_ / "out" / shard.members.name);
    EXPECT_EQ(shard.members.name, fmt::format("shard-{:06}.idx", i));
    EXPECT_EQ(int64_t(table_text.size()), shard.members.bytes);
    EXPECT_EQ(Sha256Hex(table_text), shard.members.sha256);
    auto table = nlohmann::json::parse(table_text);
    EXPECT_EQ(table["format"], "cohort-shard-members");
    EXPECT_EQ(table["version"], 1);
    EXPECT_EQ(table["shard"], shard.name);
    ASSERT_EQ(table["names"].size(), members.size());
    ASSERT_EQ(table["offsets"].size(), members.size());
    ASSERT_EQ(table["sizes"].size(), members.size());
    int64_t previous_end = 0;
    for (size_t m = 0; m < members.size(); ++m) {
      std::string name = table["names"][m];
      int64_t offset = table["offsets"][m];
      int64_t size = table["sizes"][m];
      EXPECT_EQ(name, members[m].name);
      EXPECT_EQ(size, int64_t(members[m].data.size())) << name;
      ASSERT_LE(offset + size, int64_t(bytes.size())) << name;
      EXPECT_EQ(bytes.substr(size_t(offset), size_t(size)), contents_[name]) << name;
      EXPECT_EQ(bytes.substr(size_t(offset) - 512 + 257, 6), std::string("ustar\0", 6)) << name;
      // A pax header where the name needs one (long or not ASCII): two headers, else one.
      bool pax = name.size() > 100 || !IsAscii(name);
      int64_t header = offset - (previous_end + 511) / 512 * 512;
      if (pax) {
        EXPECT_GE(header, 1536) << name;
      } else {
        EXPECT_EQ(header, 512) << name;
      }
      previous_end = offset + size;
    }
    EXPECT_EQ((previous_end + 511) / 512 * 512 + 1024, shard.bytes);
    auto first = SplitSampleName(members.front().name);
    auto last = SplitSampleName(members.back().name);
    ASSERT_TRUE(first.ok() && last.ok());
    EXPECT_EQ(first->key, shard.first_key);
    EXPECT_EQ(last->key, shard.last_key);
  }
  EXPECT_EQ(total, index->bytes);
  // Every file once, in the plan's order.
  std::vector<InputFile> listed;
  for (const auto& [path, content] : contents_) listed.push_back({path, int64_t(content.size())});
  auto plan = PlanShards(listed, 8192);
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> planned;
  for (const auto& shard : plan->shards) {
    for (const auto& f : shard.files) planned.push_back(f.path);
  }
  EXPECT_EQ(names, planned);

  auto json = nlohmann::json::parse(ReadAll(root_ / "out" / "index.json"));
  EXPECT_EQ(json["format"], "cohort-shards");
  EXPECT_EQ(json["version"], 2);
  EXPECT_EQ(json["shards"][0]["members"]["name"], "shard-000000.idx");
  EXPECT_EQ(json["shards"][0]["members"]["sha256"], index->shards[0].members.sha256);
  EXPECT_EQ(json["target_bytes"], 8192);
  EXPECT_EQ(json["samples"], 20);
  EXPECT_EQ(json["shards"].size(), index->shards.size());
  EXPECT_EQ(json["shards"][0]["sha256"], index->shards[0].sha256);
  // Nothing else is left in the output: no temporary file.
  EXPECT_EQ(size_t(std::distance(fs::directory_iterator(root_ / "out"), fs::directory_iterator())),
            2 * index->shards.size() + 1);

  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().files_done, 40);
  EXPECT_EQ(seen.back().files_total, 40);
  EXPECT_EQ(seen.back().bytes_done, index->input_bytes);
  EXPECT_EQ(seen.back().shards_done, int64_t(index->shards.size()));
}

TEST_F(ShardPackTest, TheSameInputGivesByteIdenticalShardsAndIndex) {
  WriteSamples();
  auto a = PackDirectory(src().string(), (root_ / "a").string(), 8192);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // Other times and modes on the files change nothing.
  for (const auto& entry : fs::recursive_directory_iterator(src())) {
    if (!entry.is_regular_file()) continue;
    fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::owner_write);
    fs::last_write_time(entry.path(), fs::file_time_type::clock::now() - std::chrono::hours(5));
  }
  auto b = PackDirectory(src().string(), (root_ / "b").string(), 8192);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(a->shards.size(), b->shards.size());
  for (const auto& shard : a->shards) {
    EXPECT_EQ(ReadAll(root_ / "a" / shard.name), ReadAll(root_ / "b" / shard.name)) << shard.name;
    EXPECT_EQ(ReadAll(root_ / "a" / shard.members.name), ReadAll(root_ / "b" / shard.members.name));
  }
  EXPECT_EQ(ReadAll(root_ / "a" / "index.json"), ReadAll(root_ / "b" / "index.json"));
}

TEST_F(ShardPackTest, AFileLargerThanTheTargetIsAShardOfItsOwn) {
  Write("a.bin", "a");
  Write("b.bin", std::string(20000, 'b'));
  Write("c.bin", "c");
  auto index = PackDirectory(src().string(), (root_ / "out").string(), 4096);
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->shards.size(), 3u);
  EXPECT_EQ(index->shards[1].first_key, "b");
  EXPECT_GT(index->shards[1].bytes, 20000);
  EXPECT_EQ(ReadTar(root_ / "out" / index->shards[1].name).at(0).data, std::string(20000, 'b'));
}

std::string PackError(const fs::path& src, const fs::path& out) {
  auto index = PackDirectory(src.string(), out.string(), 4096);
  return index.ok() ? "packed" : index.status().message();
}

TEST_F(ShardPackTest, LinksSpecialFilesBadNamesAndEmptyDirectoriesAreRefusedNamingThePath) {
  Write("ok.jpg", "x");
  fs::create_symlink("ok.jpg", src() / "link.jpg");
  EXPECT_NE(PackError(src(), root_ / "out").find("link.jpg: a symbolic link (not followed)"),
            std::string::npos);
  fs::remove(src() / "link.jpg");
  fs::create_directory_symlink("/etc", src() / "etc");
  EXPECT_NE(PackError(src(), root_ / "out").find("etc: a symbolic link"), std::string::npos);
  fs::remove(src() / "etc");

  ASSERT_EQ(::mkfifo((src() / "pipe.jpg").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((src() / "pipe2.jpg").c_str(), 0600), 0);
  auto fifos = PackDirectory(src().string(), (root_ / "out").string(), 4096);
  ASSERT_FALSE(fifos.ok());
  EXPECT_EQ(fifos.status().message().substr(0, 48),
            "pipe.jpg: not a regular file (and 1 more): shard");
  EXPECT_EQ(fifos.status().details(), (std::vector<std::string>{"pipe.jpg: not a regular file",
                                                                "pipe2.jpg: not a regular file"}));
  fs::remove(src() / "pipe.jpg");
  fs::remove(src() / "pipe2.jpg");

  Write("sub/caf\xe9.jpg", "latin-1");
  EXPECT_NE(
      PackError(src(), root_ / "out").find("sub/caf\xef\xbf\xbd.jpg: its name cannot be a key"),
      std::string::npos);
  fs::remove(src() / "sub" / "caf\xe9.jpg");

  Write("Makefile", "all:");
  EXPECT_NE(PackError(src(), root_ / "out").find("Makefile: has no extension"), std::string::npos);
  fs::remove(src() / "Makefile");

  fs::create_directories(root_ / "empty" / "sub");
  EXPECT_NE(PackError(root_ / "empty", root_ / "out").find("holds no file to pack"),
            std::string::npos);
  EXPECT_NE(PackError(root_ / "nowhere", root_ / "out").find("not a directory"), std::string::npos);
  EXPECT_NE(PackError(src(), src() / "shards").find("lies inside"), std::string::npos);
  EXPECT_NE(PackError(src(), src()).find("lies inside"), std::string::npos);
  Write("../full/x.txt", "");
  EXPECT_NE(PackError(src(), root_ / "full").find("not empty"), std::string::npos);

  EXPECT_EQ(PackError(src(), root_ / "out"), "packed");
  EXPECT_FALSE(fs::exists(src() / "shards"));
}

TEST_F(ShardPackTest, ListingStopsPastTheMostFiles) {
  for (int i = 0; i < 4; ++i) Write(fmt::format("d{}/s.bin", i), "x");
  auto three = ListSourceFiles(src().string(), 3);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().message(),
            fmt::format("{}: holds more than 3 files; pack it in parts", src().string()));
  auto four = ListSourceFiles(src().string(), 4);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->size(), 4u);
}

TEST_F(ShardPackTest, AFileChangedWhileBeingPackedFailsItAndLeavesNoShardNorIndex) {
  for (int i = 0; i < 30; ++i) Write(fmt::format("s{:02}.bin", i), std::string(1000, 'x'));
  bool changed = false;
  auto index =
      PackDirectory(src().string(), (root_ / "out").string(), 4096, [&](const PackProgress& p) {
        // After the first shards are whole, a later file grows.
        if (p.shards_done == 2 && !changed) {
          std::ofstream(src() / "s25.bin", std::ios::app) << "more";
          changed = true;
        }
      });
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("s25.bin: changed while being packed"), std::string::npos)
      << index.status().message();
  EXPECT_TRUE(fs::is_empty(root_ / "out"));
}

TEST_F(ShardPackTest, ADirectorySwappedForALinkWhileBeingPackedFailsIt) {
  for (int i = 0; i < 30; ++i) Write(fmt::format("d{}/s.bin", i), std::string(1000, 'x'));
  fs::create_directories(root_ / "elsewhere");
  bool swapped = false;
  auto index =
      PackDirectory(src().string(), (root_ / "out").string(), 4096, [&](const PackProgress& p) {
        if (p.shards_done == 1 && !swapped) {
          fs::rename(src() / "d25", root_ / "elsewhere" / "d25");
          fs::create_directory_symlink(root_ / "elsewhere" / "d25", src() / "d25");
          swapped = true;
        }
      });
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("d25/s.bin: a symbolic link on the way"),
            std::string::npos)
      << index.status().message();
  EXPECT_TRUE(fs::is_empty(root_ / "out"));
}

}  // namespace
}  // namespace cohort::data
