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
  std::string path;          // inside the web directory: the file, or its gzip sibling
  std::string content_type;  // from the extension
  bool gzip = false;         // `path` is NAME.gz: the bytes go with Content-Encoding: gzip
};

// Whether an Accept-Encoding header takes gzip (RFC 9110): `gzip` or `x-gzip`, in any case,
// or else `*`, with no weight or a weight above 0 (`gzip;q=0` refuses it). Unparsable weights
// refuse.
bool AcceptsGzip(std::string_view accept_encoding);

// The file that `name` (one decoded path segment, e.g. "app.js") names inside `web_dir`.
// kNotFound for anything else: an empty name, one with '/', '\\', NUL or other control
// characters, "." or "..", a name starting with '.', an extension outside the fixed set
// (.html .js .css .svg .png .ico .txt), a path that resolves (through links) outside the
// directory, or no such regular file. With `gzip`, the file's compressed sibling NAME.gz
// (which the build writes) instead, if it is a regular file inside the directory and not older
// than the file (one older was compressed before the file last changed).
StatusOr<WebFile> FindWebFile(const std::string& web_dir, std::string_view name, bool gzip = false);

// The file's bytes; kNotFound if it went away, kInternal past kMaxWebFileBytes (not a dashboard
// file).
StatusOr<std::string> ReadWebFile(const WebFile& file);

}  // namespace cohort::api
