// Lines for log readers: whole lines with their task's prefix, and lines of any length in
// bounded memory.
#include "api/line_splitter.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort::api {
namespace {

TEST(LineSplitter, PrefixesWholeLinesAndHoldsTheLineUnderWay) {
  LineSplitter lines("[w/0] ");
  std::string out;
  lines.Feed("a\nbc", out);
  EXPECT_EQ(out, "[w/0] a\n");
  EXPECT_EQ(lines.pending(), 2u);
  lines.Feed("d\n\ne", out);
  EXPECT_EQ(out, "[w/0] a\n[w/0] bcd\n[w/0] \n");
  lines.Flush(out);
  EXPECT_EQ(out, "[w/0] a\n[w/0] bcd\n[w/0] \n[w/0] e\n");
  lines.Flush(out);  // nothing under way: nothing more
  EXPECT_EQ(lines.pending(), 0u);
  EXPECT_EQ(out, "[w/0] a\n[w/0] bcd\n[w/0] \n[w/0] e\n");
}

TEST(LineSplitter, ALongLineGoesOutInPrefixedPiecesOfTheBound) {
  LineSplitter lines("[w/1] ", 4);
  std::string out;
  lines.Feed("abcdefghij", out);
  EXPECT_EQ(out, "[w/1] abcd\n[w/1] efgh\n");
  EXPECT_EQ(lines.pending(), 2u);
  lines.Feed("k\nlmno\n", out);  // a line of exactly the bound is one line
  EXPECT_EQ(out, "[w/1] abcd\n[w/1] efgh\n[w/1] ijk\n[w/1] lmno\n");
  EXPECT_EQ(lines.pending(), 0u);
}

TEST(LineSplitter, WithoutAPrefixTheBytesAreTheTasksUnchanged) {
  LineSplitter lines("", 4);
  std::string out;
  lines.Feed("abcdefghij", out);
  EXPECT_EQ(out, "abcdefgh");
  lines.Feed("k\nlm", out);
  EXPECT_EQ(out, "abcdefghijk\n");
  lines.Flush(out);
  EXPECT_EQ(out, "abcdefghijk\nlm\n");
  // A piece that went out leaves its line open: the end of the stream still closes it.
  std::string more;
  lines.Feed("wxyz", more);
  EXPECT_EQ(more, "wxyz");
  lines.Flush(more);
  EXPECT_EQ(more, "wxyz\n");
}

TEST(LineSplitter, ANoteIsALineOfItsOwnAfterTheLineUnderWay) {
  LineSplitter prefixed("[w/0] ");
  std::string out;
  prefixed.Feed("half", out);
  prefixed.Note("[cohort: 10 bytes dropped]", out);
  EXPECT_EQ(out, "[w/0] half\n[w/0] [cohort: 10 bytes dropped]\n");
  LineSplitter plain("");
  std::string raw;
  plain.Note("[cohort: 10 bytes dropped]", raw);
  plain.Feed("next\n", raw);
  EXPECT_EQ(raw, "[cohort: 10 bytes dropped]\nnext\n");
}

// 300 MB on one line, fed as the stream reads it: nothing beyond the bound is ever held, and
// every byte comes out once.
TEST(LineSplitter, AHugeLineNeverHoldsMoreThanTheBound) {
  constexpr size_t kBound = 64 * 1024;
  LineSplitter lines("[w/0] ", kBound);
  std::string piece(256 * 1024, 'x');
  size_t fed = 0;
  size_t lines_out = 0;
  size_t bytes_out = 0;
  while (fed < 300'000'000) {
    std::string out;
    lines.Feed(piece, out);
    fed += piece.size();
    EXPECT_LE(lines.pending(), kBound);
    for (char c : out) lines_out += c == '\n';
    bytes_out += out.size();
  }
  std::string out;
  lines.Flush(out);
  for (char c : out) lines_out += c == '\n';
  bytes_out += out.size();
  size_t pieces = (fed + kBound - 1) / kBound;
  EXPECT_EQ(lines_out, pieces);
  EXPECT_EQ(bytes_out, fed + pieces * (std::string("[w/0] ").size() + 1));
}

}  // namespace
}  // namespace cohort::api
