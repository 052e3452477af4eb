#include "remote/curl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace ki::remote {
namespace {

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

Result<const CurlApi*> Curl() {
  static std::once_flag once;
  static CurlApi api;
  static std::string error;
  std::call_once(once, [] {
    // Never dlclose'd: the handle lives until exit, as a linked library would.
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      error = std::string("cannot load libcurl (install libcurl4): ") + (why ? why : "unknown error");
      return;
    }
    bool ok = Bind(lib, "curl_global_init", &api.global_init) && Bind(lib, "curl_easy_init", &api.easy_init) &&
              Bind(lib, "curl_easy_cleanup", &api.easy_cleanup) && Bind(lib, "curl_easy_reset", &api.easy_reset) &&
              Bind(lib, "curl_easy_setopt", &api.easy_setopt) && Bind(lib, "curl_easy_perform", &api.easy_perform) &&
              Bind(lib, "curl_easy_getinfo", &api.easy_getinfo) &&
              Bind(lib, "curl_easy_strerror", &api.easy_strerror) &&
              Bind(lib, "curl_slist_append", &api.slist_append) &&
              Bind(lib, "curl_slist_free_all", &api.slist_free_all);
    if (!ok) {
      error = "libcurl.so.4 lacks an expected function";
      return;
    }
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) error = "curl_global_init failed";
  });
  if (!error.empty()) return Status::IOError(error);
  return &api;
}

}  // namespace ki::remote
