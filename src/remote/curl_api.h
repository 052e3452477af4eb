// libcurl, loaded on first use with dlopen.
//
// Why not link it: libcurl pulls in some thirty shared libraries (TLS,
// Kerberos, LDAP, IDN, ...), and loading them costs ~20 ms at every start of
// `ki`, also for commands that never touch the network (`ki resolve` and
// `ki show` are meant to take under 10 ms). Only push and pull pay for it.
#pragma once

#include <curl/curl.h>

#include "ki/status.h"

namespace ki::remote {

struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Loads libcurl (libcurl.so.4) once per process and runs curl_global_init.
// IOError naming the library when it is not installed.
Result<const CurlApi*> Curl();

}  // namespace ki::remote
