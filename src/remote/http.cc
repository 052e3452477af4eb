// HttpClient over libcurl (see http.h).
#include "remote/http.h"

#include "remote/curl_api.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace ki::remote {

namespace {


std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// What an error page may hold while the body of a 200 goes to a BlobSink.
constexpr uint64_t kErrorBodyMax = 64 << 10;

struct Sink {
  HttpResponse* resp;
  uint64_t max_body;
  bool over_limit = false;
  bool head = false;
  BlobSink* download = nullptr;  // the body of a 200 goes here
  long status = 0;               // of the response being received
  uint64_t streamed = 0;         // bytes given to `download`
  Status error;                  // what `download` answered, when it failed
};

// The upload of HttpRequest::upload: curl asks for the body piece by piece.
struct Upload {
  BlobSource* source;
  Status error;  // what `source` answered, when it failed
};

size_t OnRead(char* buf, size_t size, size_t n, void* user) {
  auto* up = static_cast<Upload*>(user);
  auto got = up->source->Read(buf, size * n);
  if (!got.ok()) {
    up->error = got.status();
    return CURL_READFUNC_ABORT;
  }
  return *got;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") {
    sink->resp->headers.clear();  // a new response (after 100 Continue)
    auto sp = line.find(' ');
    sink->status = sp == std::string_view::npos ? 0 : std::strtol(std::string(line.substr(sp + 1, 3)).c_str(), nullptr, 10);
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name = Lower(Trim(line.substr(0, colon)));
  std::string value(Trim(line.substr(colon + 1)));
  if (name == "content-length" && !sink->head) {
    // An announced body over the cap is refused before a byte of it arrives.
    char* end = nullptr;
    unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (v > sink->max_body) {
      sink->over_limit = true;
      return 0;
    }
    // The body's final size up front (bounded by max_body, so a lying
    // header costs at most that): a large blob is then received into one
    // buffer instead of a string that doubles, which held up to twice the
    // blob while it grew.
    // Not for a body that goes to a BlobSink: that one is never held.
    if (!sink->download && end && *end == '\0' && v > sink->resp->body.capacity()) sink->resp->body.reserve(v);
  }
  sink->resp->headers.emplace(std::move(name), std::move(value));
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t len = size * n;
  if (sink->download && sink->status == 200) {
    if (sink->streamed + len > sink->max_body) {
      sink->over_limit = true;
      return 0;
    }
    sink->streamed += len;
    Status st = sink->download->Append(std::string_view(data, len));
    if (!st.ok()) {
      sink->error = std::move(st);
      return 0;
    }
    return len;
  }
  const uint64_t held_max = sink->download ? std::min<uint64_t>(sink->max_body, kErrorBodyMax) : sink->max_body;
  if (sink->resp->body.size() + len > held_max) {
    sink->over_limit = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  sink->resp->body.append(data, len);
  return len;
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? std::string() : it->second;
}

namespace {

bool IsTlsFailure(CURLcode rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      return true;
    default:
      return false;
  }
}

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

// The deadline as the request runs (RequestDeadline over the bytes moved
// so far, not the bytes it may carry): CURLOPT_TIMEOUT alone is fixed when
// the request starts, from a size the server announced, so a server that
// keeps just above the low-speed limit into a body announced as GBs was
// given hours per attempt. Here each second past deadline_s must be paid
// for by min_rate bytes that actually moved, either way.
struct Pace {
  const HttpLimits* limits;
  std::chrono::steady_clock::time_point started;
  bool over = false;   // aborted here
  bool over_total = false;  // aborted here: the whole push's or pull's deadline passed
  long allowed = 0;    // the deadline it was past, in seconds
  uint64_t moved = 0;  // bytes moved by then
  double elapsed = 0;
};

int OnProgress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* p = static_cast<Pace*>(user);
  if (p->limits->end && std::chrono::steady_clock::now() >= *p->limits->end) {
    p->over_total = true;
    return 1;
  }
  const uint64_t moved = uint64_t(std::max<curl_off_t>(0, dlnow)) + uint64_t(std::max<curl_off_t>(0, ulnow));
  const long allowed = RequestDeadline(*p->limits, moved);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - p->started).count();
  if (allowed <= 0 || elapsed <= double(allowed)) return 0;
  p->over = true;
  p->allowed = allowed;
  p->moved = moved;
  p->elapsed = elapsed;
  return 1;  // aborts the transfer (CURLE_ABORTED_BY_CALLBACK)
}

}  // namespace

std::string HttpClient::TlsDiagnosis(const std::string& url, const std::string& detail) {
  UrlParts p;
  if (!ParseHttpUrl(url, &p) || p.scheme != "https") return "TLS failure: " + detail;
  const std::string host = p.host + ":" + p.port;
  CURL* h = static_cast<CURL*>(curl_);
  api_->easy_reset(h);
  const std::string probe = "http://" + host + "/v2/";
  api_->easy_setopt(h, CURLOPT_URL, probe.c_str());
  api_->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
  api_->easy_setopt(h, CURLOPT_NOBODY, 1L);
  api_->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  api_->easy_setopt(h, CURLOPT_NOPROXY, "*");
  api_->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
  api_->easy_setopt(h, CURLOPT_TIMEOUT, 5L);
  api_->easy_setopt(h, CURLOPT_HEADERFUNCTION, Discard);
  api_->easy_setopt(h, CURLOPT_WRITEFUNCTION, Discard);
  long status = 0;
  bool plain = api_->easy_perform(h) == CURLE_OK &&
               api_->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status > 0;
  if (!plain) {
    return "the TLS handshake with " + host + " failed: " + detail +
           " (a re-run will not help: check the registry's certificate and the URL's port)";
  }
  std::string msg = "the TLS handshake failed (" + detail + "): " + host +
                    " answers plain http, not https";
  if (!IsLoopbackHost(host)) return msg + "; ki reaches registries over https, except loopback ones";
  return msg + ". For a loopback registry without TLS pass --insecure; for a configured remote, mark it so "
               "(ki remote set-url NAME URL --insecure)";
}

long RequestDeadline(const HttpLimits& limits, uint64_t bytes) {
  if (limits.deadline_s <= 0) return 0;
  uint64_t extra = bytes / std::max<uint64_t>(1, limits.min_rate);
  // Saturates: a deadline of years is no deadline, but stays one.
  constexpr uint64_t kMax = uint64_t(1) << 40;
  return long(std::min<uint64_t>(kMax, uint64_t(limits.deadline_s) + extra));
}

// Which limit a timed-out request hit, and the option that raises it. curl
// reports all three as CURLE_OPERATION_TIMEDOUT.
std::string HttpClient::OverallDeadlineReason() const {
  return "the push or pull ran past its whole deadline of " + std::to_string(limits_.total_s) +
         " s (--total-timeout)";
}

std::string HttpClient::TimeoutReason(const char* curl_error, long deadline, double elapsed) const {
  // libcurl's own text ("Operation too slow. Less than 1024 bytes/sec
  // transferred the last 30 seconds") tells the low-speed abort apart.
  if (std::string_view(curl_error).starts_with("Operation too slow")) {
    return "the transfer stayed below " + std::to_string(limits_.low_speed_bytes) + " bytes/s for " +
           std::to_string(limits_.low_speed_time_s) +
           " s: the server stalled or sends too slowly (--low-speed-limit, --low-speed-time)";
  }
  if (deadline > 0 && elapsed + 0.5 >= double(deadline)) {
    return "not complete within its deadline of " + std::to_string(deadline) + " s (" +
           std::to_string(limits_.deadline_s) + " s plus 1 s per " + std::to_string(limits_.min_rate) +
           " bytes it may carry: --timeout, --min-rate)";
  }
  return "no connection within " + std::to_string(limits_.connect_s) + " s (--connect-timeout)";
}

HttpClient::HttpClient(HttpLimits limits) : limits_(limits) {
  auto api = Curl();
  if (!api.ok()) {
    load_error_ = api.status();
    return;
  }
  api_ = *api;
  curl_ = api_->easy_init();
}

HttpClient::~HttpClient() {
  if (curl_) api_->easy_cleanup(static_cast<CURL*>(curl_));
}

Result<HttpResponse> HttpClient::Perform(const HttpRequest& req, Transport* transport) {
  *transport = Transport::kFatal;
  if (!api_) return load_error_;
  CURL* h = static_cast<CURL*>(curl_);
  if (!h) return Status::IOError("cannot initialise libcurl");
  api_->easy_reset(h);  // keeps the connection cache: keep-alive across requests
  HttpResponse resp;
  Sink sink{&resp, req.max_body};
  sink.head = req.method == "HEAD";
  sink.download = req.download;
  // A retried request starts its body over, both ways.
  if (req.download) KI_RETURN_IF_ERROR(req.download->Restart());
  Upload upload{req.upload, Status::OK()};
  if (req.upload) KI_RETURN_IF_ERROR(req.upload->Rewind());
  api_->easy_setopt(h, CURLOPT_URL, req.url.c_str());
  api_->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  api_->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  api_->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  api_->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, limits_.connect_s);
  api_->easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, limits_.low_speed_bytes);
  api_->easy_setopt(h, CURLOPT_LOW_SPEED_TIME, limits_.low_speed_time_s);
  // What the request may carry: its upload, or, downloading, its cap.
  const uint64_t carried = req.upload ? req.upload_size : !req.body.empty() ? req.body.size()
                           : req.method == "HEAD"                         ? 0
                                                                          : req.max_body;
  // Two deadlines: the most this request may take (CURLOPT_TIMEOUT, from
  // what it may carry), and, checked about once a second while it runs,
  // the one its bytes moved so far have earned (Pace).
  long deadline = RequestDeadline(limits_, carried);
  // And no longer than what is left of the whole push's or pull's.
  if (limits_.end) {
    const auto left = *limits_.end - std::chrono::steady_clock::now();
    if (left <= std::chrono::seconds(0)) {
      *transport = Transport::kTimedOut;
      return Status::IOError(req.method + " " + req.url + ": " + OverallDeadlineReason());
    }
    const long left_s = long(std::chrono::ceil<std::chrono::seconds>(left).count());
    if (deadline <= 0 || left_s < deadline) deadline = left_s;
  }
  api_->easy_setopt(h, CURLOPT_TIMEOUT, deadline);
  Pace pace{&limits_, std::chrono::steady_clock::now()};
  if (limits_.deadline_s > 0 || limits_.end) {
    api_->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    api_->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
    api_->easy_setopt(h, CURLOPT_XFERINFODATA, &pace);
  }
  char curl_error[CURL_ERROR_SIZE] = "";
  api_->easy_setopt(h, CURLOPT_ERRORBUFFER, curl_error);
  api_->easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  api_->easy_setopt(h, CURLOPT_HEADERDATA, &sink);
  api_->easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  api_->easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  api_->easy_setopt(h, CURLOPT_USERAGENT, "ki/" KI_VERSION);
  // Proxies from the environment do not apply: a registry is reached directly.
  api_->easy_setopt(h, CURLOPT_NOPROXY, "*");

  struct curl_slist* hdrs = nullptr;
  bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  bool has_ct = false;
  for (const auto& [k, v] : req.headers) {
    if (Lower(k) == "content-type") has_ct = true;
    hdrs = api_->slist_append(hdrs, (k + ": " + v).c_str());
  }
  if (has_body) {
    if (!has_ct) hdrs = api_->slist_append(hdrs, "Content-Type: application/octet-stream");
    hdrs = api_->slist_append(hdrs, "Expect:");  // no 100-continue round trip
    if (req.upload) {
      // Read while sent, with its length up front (Content-Length, not
      // chunked transfer encoding, which registries need not accept).
      api_->easy_setopt(h, CURLOPT_UPLOAD, 1L);
      api_->easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
      api_->easy_setopt(h, CURLOPT_READDATA, &upload);
      api_->easy_setopt(h, CURLOPT_INFILESIZE_LARGE, curl_off_t(req.upload_size));
      if (req.method != "PUT") api_->easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    } else {
      api_->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(req.body.size()));
      api_->easy_setopt(h, CURLOPT_POSTFIELDS, req.body.empty() ? "" : req.body.data());
      if (req.method != "POST") api_->easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }
  } else if (req.method == "HEAD") {
    api_->easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method != "GET") {
    api_->easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  api_->easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  const auto started = std::chrono::steady_clock::now();
  pace.started = started;
  CURLcode rc = api_->easy_perform(h);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  api_->slist_free_all(hdrs);
  api_->easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);  // curl_error goes out of scope
  api_->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
  std::string where = req.method + " " + req.url;
  // The source's or the sink's own failure (a damaged object, a full disk)
  // says more than curl's "aborted by callback", and is not retried.
  if (!upload.error.ok()) return upload.error;
  if (!sink.error.ok()) return sink.error;
  if (sink.over_limit) {
    return Status::Corruption(where + ": response body is larger than the limit of " +
                              std::to_string(req.max_body) + " bytes");
  }
  if (pace.over_total || (rc == CURLE_OPERATION_TIMEDOUT && limits_.end &&
                          std::chrono::steady_clock::now() + std::chrono::milliseconds(500) >= *limits_.end)) {
    *transport = Transport::kTimedOut;
    return Status::IOError(where + ": " + OverallDeadlineReason());
  }
  if (pace.over) {
    *transport = Transport::kTimedOut;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", pace.elapsed);
    return Status::IOError(where + ": " + std::to_string(pace.moved) + " bytes in " + secs +
                           " s, past the deadline of " +
                           std::to_string(pace.allowed) + " s that they earn (" + std::to_string(limits_.deadline_s) +
                           " s plus 1 s per " + std::to_string(limits_.min_rate) +
                           " bytes moved): the server sends too slowly (--timeout, --min-rate)");
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    *transport = Transport::kTimedOut;
    return Status::IOError(where + ": " + TimeoutReason(curl_error, deadline, elapsed));
  }
  if (rc != CURLE_OK) {
    switch (rc) {
      case CURLE_COULDNT_CONNECT:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_PARTIAL_FILE:
      case CURLE_GOT_NOTHING:
        *transport = Transport::kRetryable;
        break;
      default:
        break;
    }
    std::string what = api_->easy_strerror(rc);
    if (curl_error[0] != '\0' && what != curl_error) what += " (" + std::string(curl_error) + ")";
    if (rc == CURLE_PARTIAL_FILE) what = "truncated response body (the connection closed early)";
    if (IsTlsFailure(rc)) {
      *transport = Transport::kPermanent;
      return Status::IOError(where + ": " + TlsDiagnosis(req.url, what));
    }
    return Status::IOError(where + ": " + what);
  }
  *transport = Transport::kOk;
  return resp;
}

bool ParseHttpUrl(std::string_view url, UrlParts* out) {
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return false;
  out->scheme = Lower(url.substr(0, sep));
  if (out->scheme != "http" && out->scheme != "https") return false;
  std::string_view rest = url.substr(sep + 3);
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  out->path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos || authority.empty()) return false;
  std::string_view host = authority, port;
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return false;
      port = authority.substr(close + 2);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  out->host = Lower(host);
  out->port = port.empty() ? (out->scheme == "https" ? "443" : "80") : std::string(port);
  return !out->host.empty();
}

std::string ResolveLocation(std::string_view base_url, std::string_view location) {
  if (location.find("://") != std::string_view::npos) return std::string(location);
  UrlParts base;
  if (!ParseHttpUrl(base_url, &base)) return std::string(location);
  std::string prefix = base.scheme + "://" + base.host + ":" + base.port;
  if (location.substr(0, 2) == "//") return base.scheme + ":" + std::string(location);
  if (!location.empty() && location.front() == '/') return prefix + std::string(location);
  std::string dir = base.path.substr(0, base.path.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  return prefix + dir + std::string(location);
}

std::string UrlEscape(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(char(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Base64Encode(std::string_view in) {
  static const char* kAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = uint8_t(in[i]) << 16 | uint8_t(in[i + 1]) << 8 | uint8_t(in[i + 2]);
    out += {kAlpha[v >> 18], kAlpha[(v >> 12) & 63], kAlpha[(v >> 6) & 63], kAlpha[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {kAlpha[v >> 18], kAlpha[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16 | uint8_t(in[i + 1]) << 8;
    out += {kAlpha[v >> 18], kAlpha[(v >> 12) & 63], kAlpha[(v >> 6) & 63], '='};
  }
  return out;
}

bool Base64Decode(std::string_view in, std::string* out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '=') {
      pad++;
      continue;
    }
    if (pad) return false;  // data after padding
    int v = val(c);
    if (v < 0) return false;
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(char((acc >> bits) & 0xff));
    }
  }
  return pad <= 2;
}

}  // namespace ki::remote
