// A small HTTP/1.1 client over one libcurl easy handle.
//
// One HttpClient belongs to one thread and keeps its connection alive
// between requests (curl_easy_reset keeps the connection cache). Redirects
// are not followed here: the registry layer decides, per hop, whether the
// new origin may see credentials. Response bodies are capped while they
// arrive, so a hostile server cannot make us allocate what it announces.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ki/remote.h"
#include "ki/status.h"
#include "remote/stream.h"

namespace ki::remote {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT, PATCH, DELETE
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;      // sent for POST/PUT/PATCH (may be empty)
  // Instead of `body`: upload_size bytes read from `upload` while they are
  // sent (a blob too large to hold); rewound before each Perform.
  BlobSource* upload = nullptr;
  uint64_t upload_size = 0;
  uint64_t max_body = 4 << 20;  // a longer response body is refused
  // A 200 response's body goes to `download` as it arrives (still capped
  // by max_body) instead of into HttpResponse::body, which then keeps only
  // other statuses' bodies, at most 64 KiB of them (an error page).
  // Restarted before each Perform.
  BlobSink* download = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names; repeated headers keep the first
  std::string body;
  std::string Header(std::string_view name) const;  // "" when absent
};

// Why a request failed without an HTTP status. kTimedOut: it hit a limit
// of HttpLimits (too slow, past its deadline, no connection in time),
// which one more attempt may cure and more attempts only prolong.
// kPermanent: a TLS handshake that failed (a plain-http server, a bad
// certificate): running the command again changes nothing, so nothing
// advises it.
enum class Transport { kOk, kRetryable, kTimedOut, kFatal, kPermanent };

// Every request is bounded in time (remote.h, TransferTimeouts).
using HttpLimits = TransferTimeouts;
// The deadline of a request that has moved (or, for the most it may take,
// may carry) `bytes`, in seconds (0: none): deadline_s plus one second per
// min_rate bytes. Perform checks both: the first while the request runs,
// the second as curl's fixed timeout.
long RequestDeadline(const HttpLimits& limits, uint64_t bytes);

class HttpClient {
 public:
  explicit HttpClient(HttpLimits limits);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Performs one request. On transport failure (refused, reset, truncated,
  // stalled, too slow, past its deadline, over max_body) returns
  // IOError/Corruption and sets *transport.
  Result<HttpResponse> Perform(const HttpRequest& req, Transport* transport);

 private:
  std::string TimeoutReason(const char* curl_error, long deadline, double elapsed) const;
  std::string OverallDeadlineReason() const;
  // Why a TLS handshake with `url`'s server failed, and what fixes it: asks
  // the same host and port over plain http once (HEAD /v2/, 5 s at most),
  // so that a registry without TLS is named as such.
  std::string TlsDiagnosis(const std::string& url, const std::string& detail);

  const struct CurlApi* api_ = nullptr;  // libcurl, loaded on first use
  Status load_error_;
  void* curl_ = nullptr;  // CURL*
  HttpLimits limits_;
};

// URL pieces for origin checks and resolving Location headers.
struct UrlParts {
  std::string scheme, host, port, path;  // port always filled (80/443 defaults)
  std::string origin() const { return scheme + "://" + host + ":" + port; }
};
bool ParseHttpUrl(std::string_view url, UrlParts* out);
// Resolves a Location header against the URL of the request that got it.
std::string ResolveLocation(std::string_view base_url, std::string_view location);
std::string UrlEscape(std::string_view s);  // for query values
std::string Base64Encode(std::string_view in);
bool Base64Decode(std::string_view in, std::string* out);

}  // namespace ki::remote
