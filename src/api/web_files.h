// The dashboard's files (docs/observability.md, "Dashboard"): which file of the web directory a
// request names, and its bytes. The page holds no data (every datum comes from the API, with a
// token), so these answers are public; what they must never do is reach outside the directory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::api {

// The dashboard's files are a few hundred KiB; anything far larger is not one of them.
inline constexpr uint64_t kMaxWebFileBytes = 4 * 1024 * 1024;

struct WebFile {
  std::string path;          // inside the web directory
  std::string content_type;  // from the extension
};

// The file that `name` (one decoded path segment, e.g. "app.js") names inside `web_dir`.
// kNotFound for anything else: an empty name, one with '/', '\\', NUL or other control
// characters, "." or "..", a name starting with '.', an extension outside the fixed set
// (.html .js .css .svg .png .ico .txt), a path that resolves (through links) outside the
// directory, or no such regular file.
StatusOr<WebFile> FindWebFile(const std::string& web_dir, std::string_view name);

// The file's bytes; kNotFound if it went away, kInternal past kMaxWebFileBytes (not a dashboard
// file).
StatusOr<std::string> ReadWebFile(const WebFile& file);

}  // namespace cohort::api
