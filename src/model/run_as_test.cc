#include "model/run_as.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort {
namespace {

TEST(UnixAccountName, AcceptsWhatUseraddAccepts) {
  for (const char* ok : {"ada", "root", "a", "ada.lovelace", "_apt", "cohort-t-1x2", "Ada", "host$",
                         "systemd-network", "u1000"}) {
    EXPECT_EQ(UnixAccountNameProblem(ok), std::nullopt) << ok;
  }
}

TEST(UnixAccountName, RefusesWhatCouldNotBeALogin) {
  const std::string kRule =
      "must be 1 to 32 letters, digits, '.', '_' or '-' (and may end in '$'), not starting with "
      "'-'";
  for (const char* bad : {"", "-ada", "ada@example.com", "a b", "ada/x", "$", "a$b", "é",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    EXPECT_EQ(UnixAccountNameProblem(bad), kRule) << bad;
  }
  EXPECT_EQ(UnixAccountNameProblem(std::string("a\0b", 3)), kRule);
  EXPECT_EQ(UnixAccountNameProblem("1000"), "must not be all digits: it would read as a uid");
  EXPECT_EQ(UnixAccountNameProblem(".."), "must not be \".\" or \"..\"");
}

}  // namespace
}  // namespace cohort
