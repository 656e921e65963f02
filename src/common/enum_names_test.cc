#include "common/enum_names.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

enum class Color { kRed, kDarkBlue, kGreen };
constexpr auto kColorNames = std::to_array<EnumName<Color>>({
    {Color::kRed, "red"},
    {Color::kDarkBlue, "dark-blue"},
    {Color::kGreen, "green"},
});

TEST(EnumNames, NamesParsesAndListsFromOneTable) {
  static_assert(std::string_view(NameOf(kColorNames, Color::kDarkBlue)) == "dark-blue");
  EXPECT_STREQ(NameOf(kColorNames, static_cast<Color>(7)), "UNKNOWN");
  EXPECT_STREQ(NameOf(kColorNames, static_cast<Color>(7), "red"), "red");
  EXPECT_EQ(Parse(kColorNames, "green"), Color::kGreen);
  EXPECT_EQ(Parse(kColorNames, "Green"), std::nullopt);
  EXPECT_EQ(Parse(kColorNames, "DARK-Blue", MatchCase::kIgnoreAsciiCase), Color::kDarkBlue);
  EXPECT_EQ(Parse(kColorNames, "gree"), std::nullopt);
  EXPECT_EQ(Parse(kColorNames, ""), std::nullopt);
  EXPECT_EQ(NameList(kColorNames), "red, dark-blue or green");
  EXPECT_EQ(NameList(kColorNames, ", "), "red, dark-blue, green");
  for (const auto& [value, name] : kColorNames) EXPECT_EQ(Parse(kColorNames, name), value);
}

}  // namespace
}  // namespace cohort
