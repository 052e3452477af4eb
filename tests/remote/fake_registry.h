// A small HTTP/1.1 server on 127.0.0.1 (ephemeral port) and, on top of it,
// an in-memory OCI registry whose every answer a test can replace: the
// hostile registry of tests/remote/remote_test.cc.
//
// Header-only because tests/CMakeLists.txt builds each folder from its
// *_test.cc files.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"

namespace ki::test {

struct HttpReq {
  std::string method, path, query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string Header(const std::string& n) const {
    auto it = headers.find(n);
    return it == headers.end() ? "" : it->second;
  }
};

struct HttpReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  long declared_length = -1;  // >= 0: the Content-Length sent, whatever the body is
  bool close = false;         // close the connection after this reply
  // A hostile server's pace: the body goes out `drip_bytes` at a time, one
  // piece every `drip_ms` (0: all at once), and after `stall_after` bytes
  // (-1: never) nothing more is sent while the connection stays open,
  // until the client gives up or the server stops.
  size_t drip_bytes = 0;
  int drip_ms = 0;
  long stall_after = -1;
};

class HttpServer {
 public:
  // On `address` (another loopback address, 127.1.0.1, is "another host"
  // to a client of 127.0.0.1: Linux routes all of 127/8 to lo).
  explicit HttpServer(std::function<HttpReply(const HttpReq&)> handler, const char* address = "127.0.0.1")
      : handler_(std::move(handler)), address_(address) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (::inet_pton(AF_INET, address, &a.sin_addr) != 1) std::abort();
    a.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0) std::abort();
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~HttpServer() {
    stop_ = true;
    accept_thread_.join();
    {
      std::lock_guard<std::mutex> l(mu_);
      for (int c : conns_) ::shutdown(c, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    ::close(fd_);
  }

  int port() const { return port_; }
  std::string host() const { return address_ + ":" + std::to_string(port_); }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::lock_guard<std::mutex> l(mu_);
      conns_.push_back(c);
      workers_.emplace_back([this, c] { Serve(c); });
    }
  }

  static bool ReadMore(int c, std::string* buf) {
    char tmp[65536];
    ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf->append(tmp, size_t(n));
    return true;
  }

  void Serve(int c) {
    std::string buf;
    // A TLS ClientHello (record type 0x16) to this plain-http server: a 400
    // at once, as Go's net/http (the CNCF registry) answers one.
    if (!ReadMore(c, &buf)) return Close(c);
    if (buf[0] == '\x16') {
      (void)SendAll(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return Close(c);
    }
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos)
        if (!ReadMore(c, &buf)) return Close(c);
      HttpReq req;
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      size_t line_end = head.find("\r\n");
      std::string line = head.substr(0, line_end);
      size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      req.method = line.substr(0, sp1);
      std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      req.path = target.substr(0, target.find('?'));
      if (target.find('?') != std::string::npos) req.query = target.substr(target.find('?') + 1);
      size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
      while (pos < head.size()) {
        size_t e = head.find("\r\n", pos);
        if (e == std::string::npos) e = head.size();
        std::string h = head.substr(pos, e - pos);
        pos = e + 2;
        auto colon = h.find(':');
        if (colon == std::string::npos) continue;
        std::string name = h.substr(0, colon);
        for (auto& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        std::string value = h.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        req.headers[name] = value;
      }
      size_t want = req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
      while (buf.size() < want)
        if (!ReadMore(c, &buf)) return Close(c);
      req.body = buf.substr(0, want);
      buf.erase(0, want);

      HttpReply r = handler_(req);
      std::string out = "HTTP/1.1 " + std::to_string(r.status) + " X\r\n";
      bool has_len = false;
      for (auto& [k, v] : r.headers) {
        out += k + ": " + v + "\r\n";
        if (k == "Content-Length") has_len = true;
      }
      if (!has_len) {
        long len = r.declared_length >= 0 ? r.declared_length : long(r.body.size());
        out += "Content-Length: " + std::to_string(len) + "\r\n";
      }
      if (r.close) out += "Connection: close\r\n";
      out += "\r\n";
      const bool paced = r.drip_ms > 0 || r.stall_after >= 0;
      if (req.method != "HEAD" && !paced) out += r.body;
      if (!SendAll(c, out)) return Close(c);
      if (req.method != "HEAD" && paced) {
        size_t piece = r.drip_ms > 0 && r.drip_bytes > 0 ? r.drip_bytes : r.body.size();
        for (size_t off = 0; off < r.body.size(); off += piece) {
          if (r.stall_after >= 0 && off >= size_t(r.stall_after)) {
            while (!stop_ && Open(c)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
            return Close(c);
          }
          size_t n = std::min(piece, r.body.size() - off);
          if (r.stall_after >= 0) n = std::min(n, size_t(r.stall_after) - off);
          if (!SendAll(c, r.body.substr(off, n))) return Close(c);
          if (r.drip_ms > 0) {
            for (int waited = 0; waited < r.drip_ms && !stop_; waited += 10)
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          if (stop_ || !Open(c)) return Close(c);
        }
      }
      if (r.close || (r.declared_length >= 0 && size_t(r.declared_length) != r.body.size())) return Close(c);
    }
  }

  bool SendAll(int c, std::string_view out) {
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::send(c, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return true;
  }

  // False once the client has closed its end (a paced reply stops then).
  static bool Open(int c) {
    pollfd p{c, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    if (p.revents & (POLLHUP | POLLERR)) return false;
    char b;
    return ::recv(c, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
  }

  void Close(int c) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& x : conns_)
      if (x == c) x = -1;
    ::close(c);
  }

  std::function<HttpReply(const HttpReq&)> handler_;
  std::string address_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> workers_;
};

// An in-memory distribution-spec registry (one server, any repository).
class FakeRegistry {
 public:
  // Returns a reply to replace the registry's own, or nullopt.
  using Intercept = std::function<std::optional<HttpReply>(const HttpReq&)>;

  FakeRegistry() : server_([this](const HttpReq& r) { return Handle(r); }) {}

  std::string host() const { return server_.host(); }
  int port() const { return server_.port(); }

  void SetIntercept(Intercept f) {
    std::lock_guard<std::mutex> l(mu_);
    intercept_ = std::move(f);
  }
  // Require `Authorization: <value>` on /v2/ requests; `challenge` is the
  // WWW-Authenticate header of the 401.
  void RequireAuth(std::string value, std::string challenge) {
    std::lock_guard<std::mutex> l(mu_);
    auth_ = std::move(value);
    challenge_ = std::move(challenge);
  }
  // A /token endpoint that wants `Authorization: <basic>` and returns `token`.
  void ServeToken(std::string basic, std::string token) {
    std::lock_guard<std::mutex> l(mu_);
    token_basic_ = std::move(basic);
    token_ = std::move(token);
  }

  std::vector<HttpReq> log() {
    std::lock_guard<std::mutex> l(mu_);
    return log_;
  }
  size_t Count(const std::string& method, const std::string& path_part) {
    size_t n = 0;
    for (const auto& r : log())
      if (r.method == method && r.path.find(path_part) != std::string::npos) n++;
    return n;
  }
  void ClearLog() {
    std::lock_guard<std::mutex> l(mu_);
    log_.clear();
  }
  bool HasTag(const std::string& tag) {
    std::lock_guard<std::mutex> l(mu_);
    return tags_.count(tag) > 0;
  }
  std::optional<std::string> Manifest(const std::string& ref) {
    std::lock_guard<std::mutex> l(mu_);
    std::string d = tags_.count(ref) ? tags_[ref] : ref;
    if (!manifests_.count(d)) return std::nullopt;
    return manifests_[d].first;
  }
  void PutManifestDirect(const std::string& tag, const std::string& bytes, const std::string& type) {
    std::lock_guard<std::mutex> l(mu_);
    std::string d = Sha256Of(bytes).str();
    manifests_[d] = {bytes, type};
    tags_[tag] = d;
  }
  void PutBlobDirect(const std::string& bytes) {
    std::lock_guard<std::mutex> l(mu_);
    blobs_[Sha256Of(bytes).str()] = bytes;
  }
  // Forgets every blob, manifest and tag, as a registry re-created at the
  // same address would.
  void Wipe() {
    std::lock_guard<std::mutex> l(mu_);
    blobs_.clear();
    uploads_.clear();
    tags_.clear();
    manifests_.clear();
  }
  // Take `POST .../blobs/uploads/?digest=` with the blob as its body in
  // one request (201), as the distribution-spec allows; off by default, as
  // in distribution 2.8, which ignores the digest and opens a session.
  void AcceptSingleRequestUploads(bool on) {
    std::lock_guard<std::mutex> l(mu_);
    single_request_ = on;
  }
  size_t blob_count() {
    std::lock_guard<std::mutex> l(mu_);
    return blobs_.size();
  }
  bool HasBlob(const std::string& digest) {
    std::lock_guard<std::mutex> l(mu_);
    return blobs_.count(digest) > 0;
  }

 private:
  static HttpReply Json(int status, std::string body) {
    HttpReply r;
    r.status = status;
    r.body = std::move(body);
    r.headers.emplace_back("Content-Type", "application/json");
    return r;
  }

  HttpReply Handle(const HttpReq& req) {
    Intercept icpt;
    {
      std::lock_guard<std::mutex> l(mu_);
      log_.push_back(req);
      icpt = intercept_;
    }
    if (icpt) {
      if (auto r = icpt(req)) return *r;
    }
    std::lock_guard<std::mutex> l(mu_);
    if (req.path == "/token") {
      if (req.Header("authorization") != token_basic_) return Json(401, "{}");
      return Json(200, "{\"token\":\"" + token_ + "\"}");
    }
    if (!auth_.empty() && req.Header("authorization") != auth_) {
      HttpReply r = Json(401, "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}");
      r.headers.emplace_back("WWW-Authenticate", challenge_);
      return r;
    }
    const std::string& p = req.path;
    if (p == "/v2/") return Json(200, "{}");
    if (p.size() > 10 && p.compare(p.size() - 10, 10, "/tags/list") == 0 && req.method == "GET") return TagList(req, p);
    // /v2/<repo>/<kind>/<rest>
    for (const char* kind : {"/blobs/uploads/", "/blobs/", "/manifests/", "/referrers/"}) {
      auto at = p.find(kind);
      if (at == std::string::npos) continue;
      std::string rest = p.substr(at + std::strlen(kind));
      std::string k = kind;
      if (k == "/blobs/uploads/") return Upload(req, p.substr(0, at + k.size()), rest);
      if (k == "/blobs/") return Blob(rest);
      if (k == "/manifests/") return ManifestReq(req, rest);
      return Json(404, "{\"errors\":[{\"code\":\"NOT FOUND\"}]}");
    }
    return Json(404, "{}");
  }

  HttpReply Blob(const std::string& digest) {
    auto it = blobs_.find(digest);
    if (it == blobs_.end()) return Json(404, "{\"errors\":[{\"code\":\"BLOB_UNKNOWN\"}]}");
    HttpReply r;
    r.body = it->second;
    r.headers.emplace_back("Docker-Content-Digest", digest);
    return r;
  }

  static std::string QueryDigest(const std::string& query) {
    std::string digest = query.substr(query.find("digest=") + 7);
    digest = digest.substr(0, digest.find('&'));
    auto pct = digest.find("%3A");
    if (pct != std::string::npos) digest.replace(pct, 3, ":");
    return digest;
  }

  HttpReply Upload(const HttpReq& req, const std::string& prefix, const std::string& id) {
    if (req.method == "POST" && single_request_ && req.query.find("digest=") != std::string::npos) {
      std::string digest = QueryDigest(req.query);
      if (Sha256Of(req.body).str() != digest) return Json(400, "{\"errors\":[{\"code\":\"DIGEST_INVALID\"}]}");
      blobs_[digest] = req.body;
      HttpReply r;
      r.status = 201;
      r.headers.emplace_back("Docker-Content-Digest", digest);
      return r;
    }
    if (req.method == "POST") {
      std::string nid = std::to_string(next_upload_++);
      uploads_[nid] = "";
      HttpReply r;
      r.status = 202;
      r.headers.emplace_back("Location", prefix + nid);
      return r;
    }
    auto it = uploads_.find(id);
    if (it == uploads_.end()) return Json(404, "{\"errors\":[{\"code\":\"BLOB_UPLOAD_UNKNOWN\"}]}");
    it->second += req.body;
    if (req.method == "PATCH") {
      HttpReply r;
      r.status = 202;
      r.headers.emplace_back("Location", prefix + id);
      return r;
    }
    if (req.method == "PUT") {
      std::string digest = QueryDigest(req.query);
      if (Sha256Of(it->second).str() != digest) return Json(400, "{\"errors\":[{\"code\":\"DIGEST_INVALID\"}]}");
      blobs_[digest] = it->second;
      uploads_.erase(it);
      HttpReply r;
      r.status = 201;
      r.headers.emplace_back("Docker-Content-Digest", digest);
      return r;
    }
    return Json(405, "{}");
  }

  // tags/list in pages of `n` (default 2, so that tests follow Link headers).
  HttpReply TagList(const HttpReq& req, const std::string& path) {
    size_t n = 2;
    std::string last;
    for (const char* key : {"n=", "last="}) {
      auto at = req.query.find(key);
      if (at == std::string::npos) continue;
      std::string v = req.query.substr(at + std::strlen(key));
      v = v.substr(0, v.find('&'));
      if (key[0] == 'n') n = std::stoul(v);
      else last = v;
    }
    ki::Json j = {{"name", "ki/test"}, {"tags", ki::Json::array()}};
    std::string next;
    for (auto it = last.empty() ? tags_.begin() : tags_.upper_bound(last); it != tags_.end(); ++it) {
      if (j["tags"].size() == n) {
        next = j["tags"].back().get<std::string>();
        break;
      }
      j["tags"].push_back(it->first);
    }
    HttpReply r = Json(200, j.dump());
    if (!next.empty()) r.headers.emplace_back("Link", "<" + path + "?n=" + std::to_string(n) + "&last=" + next + ">; rel=\"next\"");
    return r;
  }

  HttpReply ManifestReq(const HttpReq& req, const std::string& ref) {
    if (req.method == "PUT") {
      // As distribution does: an image manifest's blobs must be there.
      ki::Json m = ki::Json::parse(req.body, nullptr, false);
      if (m.is_object() && m.contains("layers") && m["layers"].is_array()) {
        std::vector<ki::Json> descs(m["layers"].begin(), m["layers"].end());
        if (m.contains("config")) descs.push_back(m["config"]);
        for (const ki::Json& l : descs) {
          if (!l.is_object() || !blobs_.count(l.value("digest", std::string()))) {
            return Json(400, "{\"errors\":[{\"code\":\"MANIFEST_BLOB_UNKNOWN\"}]}");
          }
        }
      }
      std::string d = Sha256Of(req.body).str();
      manifests_[d] = {req.body, req.Header("content-type")};
      if (ref.rfind("sha256:", 0) != 0) tags_[ref] = d;
      HttpReply r;
      r.status = 201;
      r.headers.emplace_back("Docker-Content-Digest", d);
      return r;
    }
    std::string d = tags_.count(ref) ? tags_[ref] : ref;
    auto it = manifests_.find(d);
    if (it == manifests_.end()) return Json(404, "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\"}]}");
    HttpReply r;
    r.body = it->second.first;
    r.headers.emplace_back("Content-Type", it->second.second);
    r.headers.emplace_back("Docker-Content-Digest", d);
    return r;
  }

  std::mutex mu_;
  Intercept intercept_;
  std::string auth_, challenge_, token_basic_, token_;
  std::vector<HttpReq> log_;
  std::map<std::string, std::string> blobs_, uploads_, tags_;
  std::map<std::string, std::pair<std::string, std::string>> manifests_;
  int next_upload_ = 1;
  bool single_request_ = false;
  HttpServer server_;  // last: stops (and joins) before the state above goes away
};

}  // namespace ki::test
