#include "api/web_files.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <utility>

namespace cohort::api {
namespace {

namespace fs = std::filesystem;

// The only kinds of file served: what esbuild writes, and the page's icons.
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kContentTypes{{
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
}};

bool PlainName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return false;
  }
  return true;
}

Status NotFound(std::string_view name) {
  return Status::NotFound(fmt::format("no such file: {}", name));
}

}  // namespace

StatusOr<WebFile> FindWebFile(const std::string& web_dir, std::string_view name) {
  if (!PlainName(name)) return NotFound(name);
  std::string_view type;
  for (const auto& [extension, content_type] : kContentTypes) {
    if (name.size() > extension.size() && name.ends_with(extension)) type = content_type;
  }
  if (type.empty()) return NotFound(name);
  // A link inside the directory may point anywhere: the real path must still be inside it.
  std::error_code ec;
  fs::path dir = fs::canonical(web_dir, ec);
  if (ec) return Status::NotFound(fmt::format("no web directory at {}", web_dir));
  fs::path path = fs::canonical(dir / std::string(name), ec);
  if (ec || path.parent_path() != dir || !fs::is_regular_file(path, ec)) return NotFound(name);
  return WebFile{path.string(), std::string(type)};
}

StatusOr<std::string> ReadWebFile(const WebFile& file) {
  std::ifstream in(file.path, std::ios::binary);
  if (!in) return NotFound(fs::path(file.path).filename().string());
  std::string bytes;
  char buffer[64 * 1024];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    bytes.append(buffer, static_cast<size_t>(in.gcount()));
    if (bytes.size() > kMaxWebFileBytes) {
      return Status::Internal(
          fmt::format("{} is larger than {} bytes", file.path, kMaxWebFileBytes));
    }
  }
  return bytes;
}

}  // namespace cohort::api
