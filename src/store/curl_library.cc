#include "store/curl_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

namespace cohort::store {
namespace {

constexpr const char* kLibcurl = "libcurl.so.4";

template <typename F>
bool Bind(void* handle, const char* name, F& f) {
  f = reinterpret_cast<F>(::dlsym(handle, name));
  return f != nullptr;
}

}  // namespace

StatusOr<const CurlLibrary*> LoadCurl() {
  static std::once_flag once;
  static CurlLibrary library;
  static Status loaded;
  std::call_once(once, [] {
    // Never closed: its functions are used until the process exits.
    void* handle = ::dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      loaded = Status::Unavailable(
          fmt::format("cannot load {} for the S3 store ({}): install Debian's libcurl4", kLibcurl,
                      why ? why : "unknown error"));
      return;
    }
    CurlLibrary& l = library;
    if (!Bind(handle, "curl_global_init", l.global_init) ||
        !Bind(handle, "curl_easy_init", l.easy_init) ||
        !Bind(handle, "curl_easy_cleanup", l.easy_cleanup) ||
        !Bind(handle, "curl_easy_reset", l.easy_reset) ||
        !Bind(handle, "curl_easy_setopt", l.easy_setopt) ||
        !Bind(handle, "curl_easy_perform", l.easy_perform) ||
        !Bind(handle, "curl_easy_strerror", l.easy_strerror) ||
        !Bind(handle, "curl_slist_append", l.slist_append) ||
        !Bind(handle, "curl_slist_free_all", l.slist_free_all)) {
      loaded = Status::Unavailable(
          fmt::format("{} lacks a function the S3 store calls: {}", kLibcurl, ::dlerror()));
      return;
    }
    if (CURLcode rc = l.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
      loaded = Status::Unavailable(fmt::format("curl_global_init failed ({})", int(rc)));
    }
  });
  if (!loaded.ok()) return loaded;
  return &library;
}

}  // namespace cohort::store
