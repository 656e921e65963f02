// libcurl, loaded the first time the S3 backend needs it (dlopen of libcurl.so.4) rather than
// linked: a binary that links the store but never speaks S3 does not load libcurl and the ~30
// libraries it pulls in (Kerberos, LDAP, GnuTLS, ...). That is every task's supervisor
// (cohort-run-task), which restores and pushes checkpoints through the store and starts once per
// task: loading libcurl cost about 6 ms per start here, more than a whole task start
// (docs/performance.md).
#pragma once

#include <curl/curl.h>

#include "common/status.h"

namespace cohort::store {

// The functions of libcurl's that the S3 backend calls, by their libcurl names without "curl_".
struct CurlLibrary {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL* curl);
  void (*easy_reset)(CURL* curl);
  CURLcode (*easy_setopt)(CURL* curl, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL* curl);
  const char* (*easy_strerror)(CURLcode code);
  curl_slist* (*slist_append)(curl_slist* list, const char* text);
  void (*slist_free_all)(curl_slist* list);
};

// The library, loaded and initialised (curl_global_init) once, thread-safe. kUnavailable naming
// the package to install when it cannot be loaded.
StatusOr<const CurlLibrary*> LoadCurl();

}  // namespace cohort::store
