#include "api/web_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "common/strings.h"

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

// A qvalue (RFC 9110: "0" to "1" with at most three decimals) above 0; false if unparsable.
bool WeightAboveZero(std::string_view q) {
  if (q.empty() || q.size() > 5 || (q[0] != '0' && q[0] != '1')) return false;
  if (q.size() > 1 && q[1] != '.') return false;
  bool nonzero = q[0] == '1';
  for (char c : q.substr(std::min<size_t>(q.size(), 2))) {
    if (c < '0' || c > '9' || (q[0] == '1' && c != '0')) return false;
    nonzero = nonzero || c != '0';
  }
  return nonzero;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The regular file `dir`/`name`, through links, if it stays inside `dir`.
std::optional<fs::path> InsideDirectory(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  fs::path path = fs::canonical(dir / name, ec);
  if (ec || path.parent_path() != dir || !fs::is_regular_file(path, ec)) return std::nullopt;
  return path;
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  std::optional<bool> gzip;
  std::optional<bool> any;
  for (const std::string& item : Split(accept_encoding, ',')) {
    std::vector<std::string> parts = Split(item, ';');
    const std::string coding = Lower(Trim(parts[0]));
    bool accepted = true;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string_view param = Trim(parts[i]);
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        accepted = WeightAboveZero(param.substr(2));
      }
    }
    if (coding == "gzip" || coding == "x-gzip") {
      gzip = gzip.value_or(false) || accepted;
    } else if (coding == "*") {
      any = any.value_or(false) || accepted;
    }
  }
  return gzip.has_value() ? *gzip : any.value_or(false);
}

StatusOr<WebFile> FindWebFile(const std::string& web_dir, std::string_view name, bool gzip) {
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
  auto path = InsideDirectory(dir, std::string(name));
  if (!path) return NotFound(name);
  if (gzip) {
    if (auto packed = InsideDirectory(dir, std::string(name) + ".gz")) {
      std::error_code packed_ec;
      std::error_code plain_ec;
      auto packed_time = fs::last_write_time(*packed, packed_ec);
      auto plain_time = fs::last_write_time(*path, plain_ec);
      if (!packed_ec && !plain_ec && packed_time >= plain_time) {
        return WebFile{packed->string(), std::string(type), true};
      }
    }
  }
  return WebFile{path->string(), std::string(type)};
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
