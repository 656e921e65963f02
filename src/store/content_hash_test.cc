#include "store/content_hash.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace cohort::store {
namespace {

// FIPS 180-2's examples.
TEST(ContentHashTest, KnownAnswers) {
  EXPECT_EQ(*Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(*Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ContentHashTest, PiecesAndFilesHashAsTheWhole) {
  std::string text(3 << 20, 'x');
  for (size_t i = 0; i < text.size(); i += 4099) text[i] = char('a' + i % 26);
  Sha256 pieces;
  ASSERT_TRUE(pieces.Update(std::string_view(text).substr(0, 1000)).ok());
  ASSERT_TRUE(pieces.Update(std::string_view(text).substr(1000)).ok());
  std::string whole = *Sha256Hex(text);
  EXPECT_EQ(*pieces.Finish(), whole);

  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), file), text.size());
  std::fflush(file);
  ASSERT_EQ(::lseek(fileno(file), 0, SEEK_SET), 0);
  EXPECT_EQ(*Sha256OfFile(fileno(file)), whole);
  std::fclose(file);
}

TEST(ContentHashTest, OnlyLowercaseHexOfTheRightLengthIsAHash) {
  std::string hash = *Sha256Hex("abc");
  EXPECT_TRUE(IsSha256Hex(hash));
  EXPECT_FALSE(IsSha256Hex(hash.substr(1)));
  std::string upper = hash;
  upper[0] = 'B';
  EXPECT_FALSE(IsSha256Hex(upper));
  EXPECT_FALSE(IsSha256Hex("../" + hash.substr(3)));
}

}  // namespace
}  // namespace cohort::store
