// An OCI distribution-spec registry as a remote (target.h).
//
// Requests go through RegistryConn::Send, which adds credentials only for
// the registry's own origin (scheme, host and port), follows at most a few
// redirects, refuses an https -> http downgrade, and answers a 401 by
// running the Basic or Bearer handshake once. Operations retry on 5xx, 429
// and connection failures with exponential backoff, then fail saying how
// many attempts were made.
#include <chrono>
#include <mutex>
#include <thread>

#include "ki/json.h"
#include "remote/http.h"
#include "remote/target.h"

namespace ki::remote {

namespace {

bool Retryable(long status) { return status >= 500 || status == 429 || status == 408; }

std::string Snippet(const std::string& body) {
  std::string s = body.substr(0, 200);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}

Status HttpStatusError(const std::string& what, const HttpResponse& r, const std::string& withheld = "") {
  std::string msg = what + ": HTTP " + std::to_string(r.status);
  if (!r.body.empty()) msg += " (" + Snippet(r.body) + ")";
  if (r.status == 401 && !withheld.empty()) return Status::IOError(msg + "; authentication failed: " + withheld);
  if (r.status == 401) return Status::IOError(msg + "; authentication failed (set KI_REGISTRY_USER/KI_REGISTRY_PASSWORD or docker login)");
  if (r.status == 403) return Status::IOError(msg + "; access denied");
  if (r.status == 404) return Status::NotFound(msg);
  return Status::IOError(msg);
}

// True for an IPv4 or bracketed IPv6 literal: an address has no site.
bool IsAddress(const std::string& host) {
  if (!host.empty() && host.front() == '[') return true;
  return !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
}

class RegistryTarget;

class RegistryConn final : public Conn {
 public:
  explicit RegistryConn(RegistryTarget* t);

  Result<bool> HasBlob(const Digest& d, uint64_t size) override;
  Status PutBlob(const Digest& d, std::string_view bytes) override;
  Result<std::string> GetBlob(const Digest& d, uint64_t size) override;
  Status PutBlobFrom(const Digest& d, uint64_t size, BlobSource& src) override;
  Status GetBlobTo(const Digest& d, uint64_t size, BlobSink& sink) override;
  Result<FetchedManifest> GetManifest(std::string_view ref) override;
  Result<FetchedManifest> ProbeManifest(std::string_view ref) override;
  Result<std::optional<Digest>> ResolveTag(std::string_view tag) override;
  Status PutManifest(std::string_view ref, std::string_view bytes, std::string_view media_type,
                     bool* subject_indexed) override;
  Result<std::optional<std::string>> Referrers(const Digest& subject) override;
  Result<std::optional<std::vector<std::string>>> ListTags() override;

 private:
  // One logical request: credentials, redirects, one authentication round.
  Result<HttpResponse> Send(HttpRequest req, Transport* tr);
  // Send, retried on 5xx/429/connection failure. A non-retryable HTTP
  // status is returned as a response for the caller to judge.
  Result<HttpResponse> SendRetry(const HttpRequest& req, const std::string& what);
  // Runs `attempt` (which sets *retry when it failed transiently) up to
  // max_attempts times with backoff.
  Status Retry(const std::string& what, const std::function<Status(bool* retry)>& attempt);
  void Backoff(int attempt);
  // Whether a request that failed with `tr` is worth another attempt: a
  // dropped connection is, a timed-out one only TransferTimeouts::attempts
  // times per operation (a server that drips would drip again).
  bool Retries(Transport tr);
  int timeouts_ = 0;  // of the operation Retry runs now
  // An upload's bytes: held, or read from a source while they are sent.
  struct Body {
    std::string_view bytes;
    BlobSource* source = nullptr;  // set: `size` bytes from here instead of `bytes`
    uint64_t size = 0;
  };
  Status Upload(const Digest& d, const Body& body, bool chunked, bool* retry, bool* refused);
  Status PutBody(const Digest& d, const Body& body);
  Result<FetchedManifest> FetchManifest(std::string_view ref, bool retry);
  // HttpStatusError, saying so when a 401 follows credentials withheld from
  // a token realm.
  Status StatusError(const std::string& what, const HttpResponse& r);

  RegistryTarget* t_;
  HttpClient http_;
};

class RegistryTarget final : public Target {
 public:
  RegistryTarget(RemoteUrl url, TransferOptions opts, Access access, Env& env)
      : url_(std::move(url)), opts_(std::move(opts)), access_(access), env_(env) {
    ParseHttpUrl(url_.base() + "/", &origin_);
  }

  Status Init() {
    if (opts_.credentials) {
      creds_ = *opts_.credentials;
    } else {
      KI_ASSIGN_OR_RETURN(creds_, FindCredentials(env_, url_.host));
    }
    return Status::OK();
  }

  Result<std::unique_ptr<Conn>> Connect() override { return std::unique_ptr<Conn>(new RegistryConn(this)); }
  uint64_t requests() const override { return requests_.load(); }
  std::string describe() const override { return url_.str(); }
  Status Finish() override { return Status::OK(); }
  bool FailedForGood() const override { return for_good_.load(); }

  // Single-request uploads (`POST .../blobs/uploads/?digest=` with the
  // body, distribution-spec "POST then PUT" folded into one request): used
  // while the registry answers them with 201; the first answer that is not
  // (distribution 2.8 ignores the digest and opens a session: 202) turns
  // them off for this push. Only blobs up to kSingleProbeMax probe, so a
  // registry that ignores the body costs at most that much sent twice.
  static constexpr uint64_t kSingleProbeMax = 256 << 10;
  bool TrySingleRequest(uint64_t size) const {
    int s = single_.load();
    return s > 0 || (s == 0 && size <= kSingleProbeMax);
  }
  void SingleRequestWorks(bool works) {
    if (!works) {
      single_ = -1;  // a refusal wins over an earlier success
      return;
    }
    int unknown = 0;
    single_.compare_exchange_strong(unknown, 1);
  }

  std::string RepoUrl(std::string_view tail) const { return url_.base() + "/v2/" + url_.repository + "/" + std::string(tail); }

  // The Authorization value to send now ("" for none) and its generation.
  std::pair<std::string, uint64_t> Auth() {
    std::lock_guard<std::mutex> l(mu_);
    return {auth_, auth_gen_};
  }

  // Answers a 401 whose request carried generation `gen`.
  Status Authenticate(const std::string& www_authenticate, uint64_t gen) {
    std::lock_guard<std::mutex> l(mu_);
    if (gen != auth_gen_) return Status::OK();  // another thread already did
    Challenge ch;
    if (!ParseChallenge(www_authenticate, &ch)) {
      return Status::IOError(url_.host + " asks for authentication with an unsupported challenge '" +
                             Snippet(www_authenticate) + "'");
    }
    if (ch.scheme == "basic") {
      if (creds_.empty()) {
        return Status::IOError(url_.host + " requires a login: set KI_REGISTRY_USER and KI_REGISTRY_PASSWORD, or docker login");
      }
      auth_ = "Basic " + Base64Encode(creds_.username + ":" + creds_.password);
      auth_gen_++;
      return Status::OK();
    }
    // Bearer: fetch a token from the realm the registry names.
    UrlParts realm;
    if (!ParseHttpUrl(ch.realm, &realm)) return Status::IOError(url_.host + ": bad token realm '" + Snippet(ch.realm) + "'");
    if (realm.scheme == "http" && !(url_.insecure && IsLoopbackHost(realm.host + ":" + realm.port))) {
      return Status::IOError(url_.host + ": refusing a token realm over plain http (" + ch.realm + ")");
    }
    std::string scope = access_ == Access::kPush ? "repository:" + url_.repository + ":pull,push"
                        : !ch.scope.empty()      ? ch.scope
                                                 : "repository:" + url_.repository + ":pull";
    std::string q = ch.realm + (ch.realm.find('?') == std::string::npos ? "?" : "&");
    if (!ch.service.empty()) q += "service=" + UrlEscape(ch.service) + "&";
    q += "scope=" + UrlEscape(scope);
    HttpRequest req;
    req.url = q;
    req.max_body = 1 << 20;
    // Credentials go to the realm only where WithholdCredentialsFrom
    // allows; anything else gets an anonymous token request, which is
    // enough for a public repository, and a login that the registry then
    // refuses says why the password was not sent.
    withheld_.clear();
    if (!creds_.empty()) {
      if (auto why = WithholdCredentialsFrom(realm, origin_)) {
        withheld_ = "the credentials were not sent to the token realm " + ch.realm + " (" + *why +
                    "; ki sends them only to the registry's own origin, or over https to its host or site)";
      } else {
        req.headers.emplace_back("Authorization", "Basic " + Base64Encode(creds_.username + ":" + creds_.password));
      }
    }
    HttpClient client(opts_.timeouts);
    Transport tr;
    requests_++;
    KI_ASSIGN_OR_RETURN(HttpResponse r, client.Perform(req, &tr));
    if (r.status != 200) {
      Status st = HttpStatusError("token request to " + realm.host, r);
      return withheld_.empty() ? st : Status::IOError(st.message() + "; " + withheld_);
    }
    Json j = Json::parse(r.body, nullptr, false);
    std::string token;
    if (j.is_object()) {
      if (j.contains("token") && j["token"].is_string()) token = j["token"];
      else if (j.contains("access_token") && j["access_token"].is_string()) token = j["access_token"];
    }
    if (token.empty() || token.find_first_of("\r\n") != std::string::npos) {
      return Status::IOError("token request to " + realm.host + ": no usable token in the response");
    }
    auth_ = "Bearer " + token;
    auth_gen_++;
    return Status::OK();
  }

  RemoteUrl url_;
  TransferOptions opts_;
  Access access_;
  Env& env_;
  UrlParts origin_;
  Credentials creds_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<int> single_{0};  // single-request uploads: 0 unknown, 1 taken, -1 not
  std::atomic<bool> for_good_{false};  // FailedForGood

  // Why the last token request went without the credentials ("" when it
  // had them or there were none): added to a 401 that follows.
  std::string Withheld() {
    std::lock_guard<std::mutex> l(mu_);
    return withheld_;
  }

 private:
  std::mutex mu_;
  std::string auth_;
  uint64_t auth_gen_ = 0;
  std::string withheld_;
};

RegistryConn::RegistryConn(RegistryTarget* t) : t_(t), http_(t->opts_.timeouts) {}

Status RegistryConn::StatusError(const std::string& what, const HttpResponse& r) {
  if (r.status == 401 || r.status == 403) t_->for_good_ = true;
  return HttpStatusError(what, r, r.status == 401 ? t_->Withheld() : "");
}

Result<HttpResponse> RegistryConn::Send(HttpRequest req, Transport* tr) {
  bool authenticated = false;
  for (int hop = 0; hop < 6; ++hop) {
    UrlParts p;
    if (!ParseHttpUrl(req.url, &p)) return Status::IOError("the registry sent an unusable URL '" + Snippet(req.url) + "'");
    bool same_origin = p.origin() == t_->origin_.origin();
    if (t_->origin_.scheme == "https" && p.scheme != "https") {
      return Status::IOError("refusing to follow " + req.url + ": it downgrades https to http");
    }
    HttpRequest sent = req;
    auto [auth, gen] = t_->Auth();
    // Credentials (and tokens) never leave the registry's origin: an upload
    // Location or a redirect may name a storage backend or another host.
    if (same_origin && !auth.empty()) sent.headers.emplace_back("Authorization", auth);
    t_->requests_++;
    auto got = http_.Perform(sent, tr);
    if (!got.ok()) {
      if (*tr == Transport::kPermanent) t_->for_good_ = true;
      return got.status();
    }
    HttpResponse r = std::move(got).value();
    if (r.status == 401 && same_origin && !authenticated && !r.Header("www-authenticate").empty()) {
      authenticated = true;
      if (Status a = t_->Authenticate(r.Header("www-authenticate"), gen); !a.ok()) {
        t_->for_good_ = true;  // no login, an unusable challenge or token realm
        return a;
      }
      --hop;
      continue;
    }
    if ((r.status == 301 || r.status == 302 || r.status == 303 || r.status == 307 || r.status == 308) &&
        !r.Header("location").empty()) {
      req.url = ResolveLocation(req.url, r.Header("location"));
      if (r.status == 303) {
        req.method = "GET";
        req.body = {};
      }
      continue;
    }
    return r;
  }
  *tr = Transport::kFatal;
  return Status::IOError(req.method + " " + req.url + ": too many redirects");
}

void RegistryConn::Backoff(int attempt) {
  int ms = t_->opts_.backoff_initial_ms << std::min(attempt, 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 10000)));
}

bool RegistryConn::Retries(Transport tr) {
  // Past the whole push's or pull's deadline nothing is tried again.
  const auto& end = t_->opts_.timeouts.end;
  if (end && std::chrono::steady_clock::now() >= *end) return false;
  if (tr == Transport::kRetryable) return true;
  return tr == Transport::kTimedOut && ++timeouts_ < std::max(1, t_->opts_.timeouts.attempts);
}

Status RegistryConn::Retry(const std::string& what, const std::function<Status(bool*)>& attempt) {
  Status last;
  int n = std::max(1, t_->opts_.max_attempts);
  timeouts_ = 0;
  for (int i = 0; i < n; ++i) {
    bool retry = false;
    last = attempt(&retry);
    if (last.ok()) return last;
    if (!retry || i + 1 == n) {
      if (i == 0) return last;
      return last.WithContext(what + ": gave up after " + std::to_string(i + 1) + " attempts");
    }
    Backoff(i);
  }
  return last;
}

Result<HttpResponse> RegistryConn::SendRetry(const HttpRequest& req, const std::string& what) {
  std::optional<HttpResponse> out;
  Status st = Retry(what, [&](bool* retry) -> Status {
    Transport tr;
    auto r = Send(req, &tr);
    if (!r.ok()) {
      *retry = Retries(tr);
      return r.status();
    }
    if (Retryable(r->status)) {
      *retry = true;
      return StatusError(what, *r);
    }
    out = std::move(r).value();
    return Status::OK();
  });
  if (!st.ok()) return st;
  return std::move(*out);
}

Result<bool> RegistryConn::HasBlob(const Digest& d, uint64_t size) {
  HttpRequest req;
  req.method = "HEAD";
  req.url = t_->RepoUrl("blobs/" + d.str());
  KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, "HEAD blob " + d.str()));
  if (r.status == 404) return false;
  if (r.status != 200) return StatusError("HEAD blob " + d.str(), r);
  // A registry that holds other bytes under this digest is not trusted to
  // have ours: upload again (the registry will verify the digest).
  std::string len = r.Header("content-length");
  if (!len.empty() && len != std::to_string(size)) return false;
  return true;
}

Status RegistryConn::Upload(const Digest& d, const Body& body, bool chunked, bool* retry, bool* refused) {
  std::string what = "upload of " + d.str();
  const std::string_view bytes = body.bytes;
  const uint64_t size = body.source ? body.size : bytes.size();
  HttpRequest start;
  start.method = "POST";
  start.url = t_->RepoUrl("blobs/uploads/");
  // A streamed blob never goes in the POST: a registry that ignored it
  // would have been sent the whole blob for nothing.
  bool single = !chunked && !body.source && t_->TrySingleRequest(size);
  if (single) {
    start.url += "?digest=" + UrlEscape(d.str());
    start.body = bytes;
  }
  Transport tr;
  auto r = Send(start, &tr);
  if (!r.ok()) return *retry = Retries(tr), r.status();
  if (single && r->status == 201) {
    t_->SingleRequestWorks(true);
    return Status::OK();
  }
  if (single && r->status != 202 && !Retryable(r->status)) {
    // Refused outright (a registry that wants POST then PUT may say 400,
    // 404, 405 or 415): the two-request upload, at once.
    t_->SingleRequestWorks(false);
    return Upload(d, body, chunked, retry, refused);
  }
  if (r->status != 202 || r->Header("location").empty()) {
    *retry = Retryable(r->status);
    return StatusError(what + " (POST)", *r);
  }
  // A 202 to a single-request upload: the registry opened an upload
  // session instead. It either ignored the body (distribution 2.8: "Range:
  // 0-0") or kept it as the session's first bytes; the PUT below sends the
  // body only in the first case.
  bool body_taken = false;
  if (single) {
    t_->SingleRequestWorks(false);
    body_taken = bytes.size() > 1 && r->Header("range") == "0-" + std::to_string(bytes.size() - 1);
  }
  std::string loc = ResolveLocation(start.url, r->Header("location"));
  if (chunked) {
    uint64_t chunk = std::max<uint64_t>(1, t_->opts_.chunk_size);
    // A streamed blob's chunk is read into memory, one at a time: a PATCH
    // is sent as a whole, and the source can only start over from its
    // first byte, not from a chunk's.
    std::string buf;
    if (body.source) KI_RETURN_IF_ERROR(body.source->Rewind());
    for (uint64_t off = 0; off < size; off += chunk) {
      HttpRequest patch;
      patch.method = "PATCH";
      patch.url = loc;
      if (body.source) {
        buf.resize(std::min(chunk, size - off));
        for (size_t have = 0; have < buf.size();) {
          KI_ASSIGN_OR_RETURN(size_t n, body.source->Read(buf.data() + have, buf.size() - have));
          if (n == 0) return Status::Corruption(what + ": the object ended after " + std::to_string(off + have) + " of " + std::to_string(size) + " bytes");
          have += n;
        }
        patch.body = buf;
      } else {
        patch.body = bytes.substr(off, chunk);
      }
      patch.headers.emplace_back("Content-Range", std::to_string(off) + "-" + std::to_string(off + patch.body.size() - 1));
      r = Send(patch, &tr);
      if (!r.ok()) return *retry = Retries(tr), r.status();
      if (r->status != 202 || r->Header("location").empty()) {
        *retry = Retryable(r->status);
        return StatusError(what + " (PATCH)", *r);
      }
      loc = ResolveLocation(loc, r->Header("location"));
    }
  }
  HttpRequest put;
  put.method = "PUT";
  put.url = loc + (loc.find('?') == std::string::npos ? "?" : "&") + "digest=" + UrlEscape(d.str());
  if (!chunked && !body_taken) {
    if (body.source) {
      // One monolithic PUT with Content-Length (distribution-spec, "Pushing
      // a blob monolithically"), read from the source as curl sends it.
      put.upload = body.source;
      put.upload_size = size;
    } else {
      put.body = bytes;
    }
  }
  r = Send(put, &tr);
  if (!r.ok()) return *retry = Retries(tr), r.status();
  if (r->status != 201) {
    *retry = Retryable(r->status);
    // A registry that will not take the blob in one request (413, or a
    // 4xx about the range) gets it in PATCH chunks instead.
    *refused = !chunked && (r->status == 413 || r->status == 416 || r->status == 400 || r->status == 405);
    return StatusError(what + " (PUT)", *r);
  }
  return Status::OK();
}

Status RegistryConn::PutBody(const Digest& d, const Body& body) {
  bool chunked = t_->opts_.force_chunked;
  return Retry("upload of " + d.str(), [&](bool* retry) -> Status {
    bool refused = false;
    Status st = Upload(d, body, chunked, retry, &refused);
    if (!st.ok() && refused) {
      chunked = true;
      st = Upload(d, body, true, retry, &refused);
    }
    return st;
  });
}

Status RegistryConn::PutBlob(const Digest& d, std::string_view bytes) { return PutBody(d, Body{bytes}); }

Status RegistryConn::PutBlobFrom(const Digest& d, uint64_t size, BlobSource& src) {
  return PutBody(d, Body{{}, &src, size});
}

Status RegistryConn::GetBlobTo(const Digest& d, uint64_t size, BlobSink& sink) {
  HttpRequest req;
  req.url = t_->RepoUrl("blobs/" + d.str());
  req.max_body = size;  // one byte more than announced aborts the transfer
  CheckedSink checked(sink);
  req.download = &checked;
  KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, "GET blob " + d.str()));
  if (r.status != 200) return StatusError("GET blob " + d.str(), r);
  return checked.Check(d, size, "blob " + d.str() + " from the registry");
}

Result<std::string> RegistryConn::GetBlob(const Digest& d, uint64_t size) {
  if (size > t_->opts_.max_blob_size) {
    return Status::InvalidInput("blob " + d.str() + " is announced at " + std::to_string(size) +
                                " bytes, over the limit of " + std::to_string(t_->opts_.max_blob_size));
  }
  HttpRequest req;
  req.url = t_->RepoUrl("blobs/" + d.str());
  req.max_body = size;  // one byte more than announced aborts the transfer
  KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, "GET blob " + d.str()));
  if (r.status != 200) return StatusError("GET blob " + d.str(), r);
  if (r.body.size() != size) {
    return Status::Corruption("blob " + d.str() + ": received " + std::to_string(r.body.size()) +
                              " bytes, the manifest announces " + std::to_string(size));
  }
  Digest got = Sha256Of(r.body);
  if (got != d) return Status::Corruption("blob " + d.str() + ": the registry sent bytes that hash to " + got.str());
  return std::move(r.body);
}

Result<FetchedManifest> RegistryConn::GetManifest(std::string_view ref) { return FetchManifest(ref, true); }
Result<FetchedManifest> RegistryConn::ProbeManifest(std::string_view ref) { return FetchManifest(ref, false); }

Result<FetchedManifest> RegistryConn::FetchManifest(std::string_view ref, bool retry) {
  HttpRequest req;
  req.url = t_->RepoUrl("manifests/" + std::string(ref));
  req.max_body = t_->opts_.max_manifest_size;
  req.headers.emplace_back("Accept", std::string(kOciManifestType) + ", " + std::string(kOciIndexType));
  std::string what = "GET manifest " + std::string(ref);
  Transport tr;
  KI_ASSIGN_OR_RETURN(HttpResponse r, retry ? SendRetry(req, what) : Send(req, &tr));
  if (r.status == 404) return Status::NotFound(t_->url_.str() + " has no manifest '" + std::string(ref) + "'");
  if (r.status != 200) return StatusError(what, r);
  FetchedManifest m;
  m.digest = Sha256Of(r.body);
  m.media_type = r.Header("content-type");
  if (auto semi = m.media_type.find(';'); semi != std::string::npos) m.media_type.resize(semi);
  if (Digest::IsValid(ref) && m.digest.str() != ref) {
    return Status::Corruption(what + ": the body hashes to " + m.digest.str());
  }
  std::string claimed = r.Header("docker-content-digest");
  if (!claimed.empty() && claimed != m.digest.str()) {
    return Status::Corruption(what + ": the registry says " + Snippet(claimed) + " but the body hashes to " + m.digest.str());
  }
  m.bytes = std::move(r.body);
  return m;
}

Result<std::optional<Digest>> RegistryConn::ResolveTag(std::string_view tag) {
  HttpRequest req;
  req.method = "HEAD";
  req.url = t_->RepoUrl("manifests/" + std::string(tag));
  req.headers.emplace_back("Accept", std::string(kOciManifestType) + ", " + std::string(kOciIndexType));
  KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, "HEAD manifest " + std::string(tag)));
  if (r.status == 404) return std::optional<Digest>();
  if (r.status != 200) return StatusError("HEAD manifest " + std::string(tag), r);
  auto d = Digest::Parse(r.Header("docker-content-digest"));
  if (d.ok()) return std::optional<Digest>(*d);
  auto m = GetManifest(tag);  // no digest header: hash the body
  if (!m.ok()) return m.status();
  return std::optional<Digest>(m->digest);
}

Status RegistryConn::PutManifest(std::string_view ref, std::string_view bytes, std::string_view media_type,
                                 bool* subject_indexed) {
  HttpRequest req;
  req.method = "PUT";
  req.url = t_->RepoUrl("manifests/" + std::string(ref));
  req.body = bytes;
  req.headers.emplace_back("Content-Type", std::string(media_type));
  std::string what = "PUT manifest " + std::string(ref);
  KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, what));
  if (r.status != 201 && r.status != 200) return StatusError(what, r);
  if (subject_indexed) *subject_indexed = !r.Header("oci-subject").empty();
  return Status::OK();
}

Result<std::optional<std::string>> RegistryConn::Referrers(const Digest& subject) {
  HttpRequest req;
  req.url = t_->RepoUrl("referrers/" + subject.str());
  req.max_body = t_->opts_.max_manifest_size;
  KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, "GET referrers " + subject.str()));
  std::string ct = r.Header("content-type");
  if (r.status == 200 && ct.rfind(std::string(kOciIndexType), 0) == 0) return std::optional<std::string>(std::move(r.body));
  if (r.status == 200 || r.status == 404 || r.status == 400 || r.status == 405) return std::optional<std::string>();
  return StatusError("GET referrers " + subject.str(), r);
}

// The URL in a `Link: <URL>; rel="next"` header, "" when there is none.
std::string NextLink(const std::string& link) {
  if (link.find("rel=\"next\"") == std::string::npos && link.find("rel=next") == std::string::npos) return "";
  auto open = link.find('<');
  auto close = link.find('>', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return link.substr(open + 1, close - open - 1);
}

Result<std::optional<std::vector<std::string>>> RegistryConn::ListTags() {
  // Tags are at most 128 bytes: 64 MiB per page is far more than any
  // registry sends, and still a cap.
  constexpr uint64_t kMaxPage = 64ull << 20;
  constexpr int kMaxPages = 1000;
  std::vector<std::string> tags;
  HttpRequest req;
  // Pages of 1000 (the distribution-spec's `n`; the registry may send
  // fewer), each next page where its Link header says (`last` in it).
  req.url = t_->RepoUrl("tags/list") + "?n=" + std::to_string(std::max<size_t>(1, t_->opts_.tag_page));
  req.max_body = kMaxPage;
  for (int page = 0; page < kMaxPages; ++page) {
    KI_ASSIGN_OR_RETURN(HttpResponse r, SendRetry(req, "GET tags/list"));
    if (r.status == 404 && page == 0) return std::optional<std::vector<std::string>>(std::move(tags));  // no tags yet
    if (r.status == 400 || r.status == 405 || r.status == 501) return std::optional<std::vector<std::string>>();
    if (r.status != 200) return StatusError("GET tags/list", r);
    Json j = Json::parse(r.body, nullptr, false);
    if (!j.is_object()) return std::optional<std::vector<std::string>>();  // not the API: ask per tag
    if (j.contains("tags") && j["tags"].is_array()) {
      for (const Json& t : j["tags"])
        if (t.is_string()) tags.push_back(t.get<std::string>());
    }
    std::string next = NextLink(r.Header("link"));
    if (next.empty()) return std::optional<std::vector<std::string>>(std::move(tags));
    req.url = ResolveLocation(req.url, next);
  }
  return Status::IOError("GET tags/list: more than " + std::to_string(kMaxPages) + " pages");
}

}  // namespace

Result<std::unique_ptr<Target>> OpenRegistry(const RemoteUrl& url, const TransferOptions& opts, Access access,
                                             Env& env) {
  auto t = std::make_unique<RegistryTarget>(url, opts, access, env);
  KI_RETURN_IF_ERROR(t->Init());
  return std::unique_ptr<Target>(std::move(t));
}

// Whether the token realm `realm` may receive the registry's Basic
// credentials (docs/cli.md, "Credentials"). Only two cases:
//  - the realm is the registry's own origin (scheme, host and port): it
//    already receives them, over http too when the remote is insecure;
//  - the realm is https and its host is the registry's host, or lies in
//    the registry host's parent domain (registry-1.docker.io ->
//    auth.docker.io, registry.gitlab.com -> gitlab.com), when that parent
//    has at least two labels: ghcr.io's parent "io" makes no site, so
//    ghcr.io's realm must be ghcr.io itself.
// Never to an address other than the registry's own (127.1.0.1 and
// 127.0.0.1 "share" nothing), nor to another port over plain http. The
// reason when not, for the error a refused login then gets.
std::optional<std::string> WithholdCredentialsFrom(const UrlParts& realm, const UrlParts& registry) {
  if (realm.origin() == registry.origin()) return std::nullopt;
  if (realm.scheme != "https") return "the realm is plain http on another origin than the registry's";
  if (realm.host == registry.host) return std::nullopt;
  if (IsAddress(realm.host) || IsAddress(registry.host)) return "the realm is on another host";
  auto dot = registry.host.find('.');
  std::string parent = dot == std::string::npos ? "" : registry.host.substr(dot + 1);
  bool site = parent.find('.') != std::string::npos;
  if (site && (realm.host == parent || realm.host.ends_with("." + parent))) return std::nullopt;
  return "the realm is not on the registry's site";
}

bool ParseChallenge(std::string_view header, Challenge* out) {
  auto sp = header.find(' ');
  std::string scheme(header.substr(0, sp));
  for (auto& c : scheme) c = char(std::tolower(static_cast<unsigned char>(c)));
  out->scheme = scheme;
  if (scheme != "basic" && scheme != "bearer") return false;
  std::string_view rest = sp == std::string_view::npos ? std::string_view() : header.substr(sp + 1);
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == ',')) rest.remove_prefix(1);
    auto eq = rest.find('=');
    if (eq == std::string_view::npos) break;
    std::string key(rest.substr(0, eq));
    for (auto& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
    rest.remove_prefix(eq + 1);
    std::string value;
    if (!rest.empty() && rest.front() == '"') {
      rest.remove_prefix(1);
      while (!rest.empty() && rest.front() != '"') {
        if (rest.front() == '\\' && rest.size() > 1) rest.remove_prefix(1);
        value.push_back(rest.front());
        rest.remove_prefix(1);
      }
      if (!rest.empty()) rest.remove_prefix(1);
    } else {
      auto comma = rest.find(',');
      value = std::string(rest.substr(0, comma));
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma);
    }
    if (key == "realm") out->realm = value;
    else if (key == "service") out->service = value;
    else if (key == "scope") out->scope = value;
  }
  return scheme == "basic" || !out->realm.empty();
}

}  // namespace ki::remote
