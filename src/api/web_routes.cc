// The dashboard's page and files (api/web_files.h): public, since they hold no data.
#include <fmt/format.h>

#include "api/api_server.h"
#include "api/web_files.h"

namespace cohort::api {
namespace {

// The page loads only its own files and talks only to its own origin: an injected script or a
// link to another site would not run. nosniff keeps a browser from running a file of another
// type as script. Files keep their names across builds, so the browser asks again each time
// (no-cache revalidates; they are small). The same name may come compressed or not, by the
// request's Accept-Encoding: a cache must tell them apart (Vary).
void AddWebHeaders(HttpResponse& response) {
  response.headers.emplace_back("Content-Security-Policy",
                                "default-src 'self'; frame-ancestors 'none'");
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("Vary", "Accept-Encoding");
}

}  // namespace

StatusOr<HttpResponse> ApiServer::ServeWeb(const Call& call, std::string_view name) {
  if (web_dir_.empty()) {
    return Status::NotFound("this master serves no dashboard (cohortd master --web-dir)");
  }
  // The build writes each file gzipped beside it (web/build.mjs): a third of the bytes.
  auto accept = call.request.headers.find("accept-encoding");
  const bool gzip = accept != call.request.headers.end() && AcceptsGzip(accept->second);
  COHORT_ASSIGN_OR_RETURN(auto file, FindWebFile(web_dir_, name, gzip));
  // Read on the event loop: a few hundred KiB from the page cache, once per page load.
  COHORT_ASSIGN_OR_RETURN(auto bytes, ReadWebFile(file));
  HttpResponse response{200, file.content_type, std::move(bytes)};
  AddWebHeaders(response);
  if (file.gzip) response.headers.emplace_back("Content-Encoding", "gzip");
  return response;
}

StatusOr<HttpResponse> ApiServer::WebPage(const Call& call) { return ServeWeb(call, "index.html"); }

StatusOr<HttpResponse> ApiServer::WebAsset(const Call& call) {
  return ServeWeb(call, call.params.at("file"));
}

}  // namespace cohort::api
