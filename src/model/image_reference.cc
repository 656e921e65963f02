#include "model/image_reference.h"

#include <fmt/format.h>

#include <cctype>

#include "common/strings.h"

namespace cohort {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// alpha-numeric (separator alpha-numeric)*, where a separator is '.', '_', "__" or any run of
// '-': so a component starts and ends with a lowercase letter or digit.
std::optional<std::string> PathComponentProblem(std::string_view c) {
  if (c.empty()) return "has an empty path component (two '/' in a row, or one at an end)";
  for (char ch : c) {
    if (!IsLowerAlnum(ch) && ch != '-' && ch != '.' && ch != '_') {
      return fmt::format(
          "path component \"{}\" may only hold lowercase letters, digits, '.', '_' and '-'", c);
    }
  }
  if (!IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) {
    return fmt::format("path component \"{}\" must start and end with a lowercase letter or digit",
                       c);
  }
  for (size_t i = 0; i < c.size(); ++i) {
    char ch = c[i];
    if (IsLowerAlnum(ch) || ch == '-') continue;
    if (ch == '.' || ch == '_') {
      // '.', '_' or "__" between two alphanumerics.
      size_t run = (ch == '_' && i + 1 < c.size() && c[i + 1] == '_') ? 2 : 1;
      if (!IsLowerAlnum(c[i + run])) {
        return fmt::format("path component \"{}\" has '{}' that is not between letters or digits",
                           c, ch);
      }
      i += run - 1;
      continue;
    }
    return fmt::format(
        "path component \"{}\" may only hold lowercase letters, digits, '.', '_' and '-'", c);
  }
  return std::nullopt;
}

std::optional<std::string> HostProblem(std::string_view host) {
  if (host.empty()) return "has an empty host";
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return "an IPv6 host must be written [ADDRESS]";
    for (char c : host.substr(1, host.size() - 2)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':') {
        return fmt::format("\"{}\" is not an IPv6 address", host);
      }
    }
    return std::nullopt;
  }
  for (std::string_view label : Split(host, '.')) {
    if (label.empty() || label.size() > 63) {
      return fmt::format("host \"{}\" has an empty or overlong label", host);
    }
    if (!std::isalnum(static_cast<unsigned char>(label.front())) ||
        !std::isalnum(static_cast<unsigned char>(label.back()))) {
      return fmt::format("host \"{}\": each label must start and end with a letter or digit", host);
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
        return fmt::format("host \"{}\" may only hold letters, digits, '-' and '.'", host);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> RegistryProblem(std::string_view registry) {
  if (registry.size() > 255) return "is longer than 255 characters";
  std::string_view host = registry;
  size_t colon = registry.rfind(':');
  bool bracketed = !registry.empty() && registry.front() == '[';
  if (colon != std::string_view::npos && (!bracketed || colon > registry.rfind(']'))) {
    host = registry.substr(0, colon);
    std::string_view port = registry.substr(colon + 1);
    bool digits =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535) {
      return fmt::format("port \"{}\" must be a number from 1 to 65535", port);
    }
  }
  return HostProblem(host);
}

// Whether the first component of a name is a registry: Docker's rule, which podman follows.
bool LooksLikeRegistry(std::string_view first) {
  return first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos ||
         first == "localhost" ||
         std::any_of(first.begin(), first.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

}  // namespace

std::string ImageReference::ToString() const {
  std::string out = registry.empty() ? repository : registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

StatusOr<ImageReference> ParseImageReference(std::string_view text) {
  auto fail = [&](const std::string& why) {
    return Status::InvalidArgument(
        fmt::format("\"{}\" is not an image reference: {}", text.substr(0, 100), why));
  };
  if (text.empty()) return fail("it is empty; use [REGISTRY/]REPOSITORY[:TAG][@DIGEST]");
  if (text.size() > kMaxImageReferenceLength) {
    return fail(fmt::format("it is longer than {} characters", kMaxImageReferenceLength));
  }
  ImageReference ref;
  std::string_view rest = text;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    std::string_view digest = rest.substr(at + 1);
    rest = rest.substr(0, at);
    constexpr std::string_view kSha256 = "sha256:";
    bool hex = digest.size() == kSha256.size() + 64 &&
               digest.substr(0, kSha256.size()) == kSha256 &&
               std::all_of(digest.begin() + kSha256.size(), digest.end(),
                           [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (!hex)
      return fail(fmt::format("digest \"{}\" must be sha256: and 64 lowercase hex digits",
                              digest.substr(0, 80)));
    ref.digest = std::string(digest);
  }
  // A tag follows the last ':' after the last '/' (a registry's port comes before a '/').
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    std::string_view tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (tag.empty() || tag.size() > 128) return fail("a tag must have 1 to 128 characters");
    if (!IsWordChar(tag.front())) {
      return fail(fmt::format("tag \"{}\" must start with a letter, digit or '_'", tag));
    }
    for (char c : tag) {
      if (!IsWordChar(c) && c != '.' && c != '-') {
        return fail(fmt::format("tag \"{}\" may only hold letters, digits, '_', '.' and '-'", tag));
      }
    }
    ref.tag = std::string(tag);
  }
  if (size_t first = rest.find('/');
      first != std::string_view::npos && LooksLikeRegistry(rest.substr(0, first))) {
    ref.registry = std::string(rest.substr(0, first));
    rest = rest.substr(first + 1);
    if (auto problem = RegistryProblem(ref.registry)) {
      return fail(fmt::format("registry \"{}\": {}", ref.registry, *problem));
    }
  }
  if (rest.empty()) return fail("it names no repository");
  if (rest.size() > kMaxImageRepositoryLength) {
    return fail(
        fmt::format("the repository is longer than {} characters", kMaxImageRepositoryLength));
  }
  for (std::string_view component : Split(rest, '/')) {
    if (auto problem = PathComponentProblem(component)) return fail("the repository " + *problem);
  }
  ref.repository = std::string(rest);
  return ref;
}

Status ValidateImageRegistry(std::string_view registry) {
  if (auto problem = RegistryProblem(registry)) {
    return Status::InvalidArgument(
        fmt::format("\"{}\" is not a registry HOST[:PORT]: {}", registry.substr(0, 100), *problem));
  }
  return Status::Ok();
}

}  // namespace cohort
