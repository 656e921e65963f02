// The names of an enum's values as one table, so that printing, parsing and the list of allowed
// names in an error message can never disagree:
//
//   inline constexpr auto kPolicyNames = std::to_array<EnumName<Policy>>(
//       {{Policy::kFairShare, "default"}, {Policy::kFifo, "fifo"}});
//   const char* PolicyName(Policy p) { return NameOf(kPolicyNames, p); }
//   std::optional<Policy> p = Parse(kPolicyNames, "fifo");
//   NameList(kPolicyNames)  // "default or fifo"
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cohort {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

template <typename E, size_t N>
using EnumNames = std::array<EnumName<E>, N>;

enum class MatchCase { kExact, kIgnoreAsciiCase };

// The name of `value`; `unknown` for a value the table lacks (only a cast can make one).
template <typename E, size_t N>
constexpr const char* NameOf(const EnumNames<E, N>& table, E value,
                             const char* unknown = "UNKNOWN") {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return unknown;
}

// The value named `text`, if any.
template <typename E, size_t N>
constexpr std::optional<E> Parse(const EnumNames<E, N>& table, std::string_view text,
                                 MatchCase match = MatchCase::kExact) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (const auto& entry : table) {
    std::string_view name = entry.name;
    if (name.size() != text.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = match == MatchCase::kExact ? name[i] == text[i] : lower(name[i]) == lower(text[i]);
    }
    if (same) return entry.value;
  }
  return std::nullopt;
}

// Every name in table order, for messages: "a, b or c" (`last` goes before the last one).
template <typename E, size_t N>
std::string NameList(const EnumNames<E, N>& table, std::string_view last = " or ") {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? last : std::string_view(", ");
    out += table[i].name;
  }
  return out;
}

}  // namespace cohort
