// The two kinds of remote behind one interface: an OCI registry over HTTP
// (registry.cc) and an OCI image layout directory (layout.cc).
//
// A Target is shared by the worker threads of one push or pull; each worker
// opens its own Conn (for a registry: its own kept-alive connection).
// Every Conn method verifies what it returns: GetBlob returns bytes that
// hash to the digest asked for and have the size announced (GetBlobTo
// checks the same of what it passed to its sink, and fails otherwise);
// GetManifest returns the body and the digest it hashes to.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/env.h"
#include "ki/remote.h"
#include "ki/status.h"
#include "remote/stream.h"

namespace ki::remote {

inline constexpr std::string_view kOciManifestType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciIndexType = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciEmptyType = "application/vnd.oci.empty.v1+json";

struct FetchedManifest {
  std::string bytes;
  std::string media_type;  // what the server said (Content-Type), "" for a layout
  Digest digest;           // SHA-256 of bytes
};

class Conn {
 public:
  virtual ~Conn() = default;
  virtual Result<bool> HasBlob(const Digest& d, uint64_t size) = 0;
  virtual Status PutBlob(const Digest& d, std::string_view bytes) = 0;
  // Bytes checked against `d` and `size` (and size against the limit).
  virtual Result<std::string> GetBlob(const Digest& d, uint64_t size) = 0;
  // The streamed forms, for blobs too large to hold (TransferOptions::
  // stream_above): PutBlobFrom uploads the `size` bytes `src` gives, which
  // hash to `d`; GetBlobTo passes the blob to `sink` as it arrives, never
  // more than `size` bytes, and fails (Corruption) when they are fewer or
  // do not hash to `d`: the caller then discards what the sink got. No
  // size limit (the caller decides).
  virtual Status PutBlobFrom(const Digest& d, uint64_t size, BlobSource& src) = 0;
  virtual Status GetBlobTo(const Digest& d, uint64_t size, BlobSink& sink) = 0;
  // NotFound when the remote has no such tag or digest. A digest reference
  // is checked against the body.
  virtual Result<FetchedManifest> GetManifest(std::string_view ref) = 0;
  // GetManifest in one attempt, for a guess that may well be wrong (a ki
  // digest tried as a manifest digest: distribution 2.8 answers 500 for
  // the digest of a blob, which is not worth retrying with backoff).
  virtual Result<FetchedManifest> ProbeManifest(std::string_view ref) { return GetManifest(ref); }
  // The digest a tag points at now (nullopt: absent).
  virtual Result<std::optional<Digest>> ResolveTag(std::string_view tag) = 0;
  // Stores a manifest under a tag or its digest. *subject_indexed is set
  // when the remote indexed its subject itself (OCI-Subject header).
  virtual Status PutManifest(std::string_view ref, std::string_view bytes, std::string_view media_type,
                             bool* subject_indexed) = 0;
  // The referrers API's index for `subject`; nullopt when the remote has no
  // referrers API (the caller then reads the sha256-<hex> tag).
  virtual Result<std::optional<std::string>> Referrers(const Digest& subject) = 0;
  // Every tag of the repository (the tags/list API, all pages); nullopt
  // when the remote cannot list them cheaply (then ask tag by tag).
  virtual Result<std::optional<std::vector<std::string>>> ListTags() {
    return std::optional<std::vector<std::string>>();
  }
};

class Target {
 public:
  virtual ~Target() = default;
  virtual Result<std::unique_ptr<Conn>> Connect() = 0;
  virtual uint64_t requests() const = 0;
  virtual std::string describe() const = 0;
  // Makes what was written durable (a layout fsyncs; a registry: nothing).
  virtual Status Finish() = 0;
  // True once a request failed in a way that running the command again
  // cannot cure (a TLS handshake with a plain-http server, a login the
  // registry refused): the command's error then does not advise a re-run.
  virtual bool FailedForGood() const { return false; }
};

enum class Access { kPull, kPush };

// Runs fn(conn, i) for i in [0, count) on up to `parallelism` workers (the
// calling thread and parallelism - 1 others), each with its own connection.
// Stops at the first failure and returns it; an exception thrown by fn or
// Connect is such a failure (IOError "internal error ..."), never one that
// leaves a worker thread.
Status RunParallel(Target& target, int parallelism, size_t count,
                   const std::function<Status(Conn&, size_t)>& fn);

// `env` reads and writes the target's local files: a layout's directory,
// the docker config a registry's credentials come from. Push and pull pass
// their store's (EnvOf), so a fault-injection Env reaches them too.
Result<std::unique_ptr<Target>> OpenRegistry(const RemoteUrl& url, const TransferOptions& opts, Access access,
                                             Env& env);
Result<std::unique_ptr<Target>> OpenLayout(const RemoteUrl& url, const TransferOptions& opts, Access access,
                                           Env& env);
// FindCredentials (remote.h), its docker config read through `env`.
Result<Credentials> FindCredentials(Env& env, std::string_view host);

// WWW-Authenticate: `Bearer realm="...",service="...",scope="..."` or `Basic realm=...`.
struct Challenge {
  std::string scheme;  // lower-case: "bearer", "basic"
  std::string realm, service, scope;
};
bool ParseChallenge(std::string_view header, Challenge* out);

// Whether a Bearer token realm may receive the registry's Basic
// credentials: nullopt when it may, else why not (registry.cc has the rule,
// docs/cli.md "Credentials" states it). Both URLs as ParseHttpUrl gives them.
struct UrlParts;
std::optional<std::string> WithholdCredentialsFrom(const UrlParts& realm, const UrlParts& registry);

}  // namespace ki::remote
