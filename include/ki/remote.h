// Remote: ki push / ki pull over OCI registries and OCI image layouts.
//
// A remote is an OCI distribution-spec registry (`oci://HOST[:PORT]/REPO`,
// https unless marked insecure, which is allowed for loopback hosts only) or
// an OCI image layout directory (`oci-layout:DIR`). The mapping of ki
// objects onto OCI blobs and image manifests is normative and written down
// in docs/format.md ("Remotes: the OCI mapping"); the constants below are
// the names it uses.
//
// Push uploads what the remote lacks, blobs in parallel over kept-alive
// connections, the image manifest last, so that a failed push is never
// visible under its tag and a re-run resumes from the blobs already there.
// What a registry is known to hold (blobs pushed or pulled, tags written)
// is remembered in the store's remote.state table, as git keeps
// remote-tracking refs: a re-push asks the registry nothing about those
// blobs. Other blobs are asked about with HEAD until HEADs keep missing
// (a fresh repository), then uploaded directly with a HEAD now and then to
// notice when they start to hit. Pull fetches the image manifest and every
// blob it lists that the store lacks, checks each digest and size, and
// stores everything in one Batch: nothing unverified enters the store. A
// bundle is carried by its pack, one blob holding all its objects of at
// most 1 MiB, and a table of contents naming every object and every root's
// closure (docs/format.md, "Packed bundles"): a push or pull of a whole
// store is a handful of requests, and one root can be pulled out of it.
// Every push also updates the remote's listing (ki-listing), which pull
// reads names against and ListRemote lists.
//
// Thread-safety: Push and Pull use worker threads internally; the Store
// passed in must not be written by anybody else meanwhile (one Batch at a
// time, as store.h says). The functions themselves may not be called
// concurrently on one Store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

struct KeySources;  // sign.h

// ---------------------------------------------------------------- names

// The artifactType of the image manifest that carries a ki object closure.
inline constexpr std::string_view kOciArtifactType = "application/vnd.kernelindex.ki.closure.v1+json";
// The artifactType of a bundle: an image index of image manifests whose
// layers together are the closures of many roots (ki push --bundle).
inline constexpr std::string_view kOciBundleType = "application/vnd.kernelindex.ki.bundle.v1+json";
// The artifactType of the image manifest that references a bundle's pack,
// and the media type of its one layer: a zstd-compressed ustar archive of
// the bundle's objects, so that a pull fetches one blob instead of one per
// object (docs/format.md, "Bundles").
inline constexpr std::string_view kOciPackType = "application/vnd.kernelindex.ki.pack.v1";
inline constexpr std::string_view kOciPackMediaType = "application/vnd.kernelindex.ki.pack.v1.tar+zstd";
// A packed bundle's table of contents (the pack manifest's second layer):
// zstd-compressed JSON naming every object and every root's closure.
inline constexpr std::string_view kOciTocMediaType = "application/vnd.kernelindex.ki.toc.v1.json+zstd";
// The artifactType of a referrer manifest that attaches one DSSE envelope.
inline constexpr std::string_view kDsseMediaType = "application/vnd.dsse.envelope.v1+json";
// ki's media type of a stored manifest object (what Store records).
inline constexpr std::string_view kManifestObjectMediaType = "application/vnd.kernelindex.manifest+json";
// The store table of configured remotes: name -> JSON {"url", "insecure"}.
inline constexpr std::string_view kRemoteConfigTable = "remote.config";
// What each registry is known to hold (docs/format.md, "Remote state"). A
// cache: dropping it costs requests, never correctness.
inline constexpr std::string_view kRemoteStateTable = "remote.state";

// Annotation keys (docs/format.md lists them all).
inline constexpr std::string_view kAnnTitle = "org.opencontainers.image.title";
inline constexpr std::string_view kAnnRefName = "org.opencontainers.image.ref.name";
inline constexpr std::string_view kAnnRole = "dev.kernelindex.ki.role";        // manifest|document|blob|attestation
inline constexpr std::string_view kAnnKind = "dev.kernelindex.ki.kind";        // KernelIndex kind
inline constexpr std::string_view kAnnMediaType = "dev.kernelindex.ki.media-type";
inline constexpr std::string_view kAnnDocumentOf = "dev.kernelindex.ki.document-of";
inline constexpr std::string_view kAnnSubject = "dev.kernelindex.ki.subject";
inline constexpr std::string_view kAnnIndexValue = "dev.kernelindex.ki.index-value";  // hex
inline constexpr std::string_view kAnnRoot = "dev.kernelindex.ki.root";
inline constexpr std::string_view kAnnName = "dev.kernelindex.ki.name";
inline constexpr std::string_view kAnnFormat = "dev.kernelindex.ki.format";
inline constexpr std::string_view kAnnPart = "dev.kernelindex.ki.part";    // bundle part "<i>/<n>"
inline constexpr std::string_view kAnnRoots = "dev.kernelindex.ki.roots";  // bundle: how many roots
inline constexpr std::string_view kAnnPackObjects = "dev.kernelindex.ki.pack-objects";  // pack: entries

// ---------------------------------------------------------------- URLs

struct RemoteUrl {
  enum class Scheme { kRegistry, kLayout };
  Scheme scheme = Scheme::kRegistry;
  std::string host;        // registry: "host" or "host:port" (IPv6 in brackets)
  std::string repository;  // registry: "team/evidence"
  std::string dir;         // layout: the directory
  bool insecure = false;   // registry: plain http (loopback hosts only)

  std::string str() const;   // the URL as the user writes it
  std::string base() const;  // "https://host:port" or "http://..." (registry only)
};

// Parses `oci://HOST[:PORT]/REPO` or `oci-layout:DIR`. `insecure` asks for
// plain http and is refused unless HOST is loopback (localhost, 127.x, ::1).
Result<RemoteUrl> ParseRemoteUrl(std::string_view url, bool insecure);

// True for localhost, 127.0.0.0/8 and [::1] (with or without a port).
bool IsLoopbackHost(std::string_view host_port);

// The OCI tag for a ki name: "<Kind>/<name>" becomes "<Kind>.<name>",
// characters outside the tag grammar [A-Za-z0-9_][A-Za-z0-9._-]{0,127}
// become '_', and a name that had to be cut to 128 characters ends in
// '-' + 12 hex digits of its SHA-256 so that two long names stay apart.
std::string SanitizeTag(std::string_view ki_name);
bool IsValidTag(std::string_view tag);

// A title annotation is used as a relative file name by standard clients
// (and by anything that writes layers to files). Safe: non-empty, at most
// 255 bytes, relative, no "." or ".." component, no backslash, no control
// characters, no empty component.
bool IsSafeTitle(std::string_view title);

// ---------------------------------------------------------------- config

struct RemoteConfig {
  std::string name;
  std::string url;
  bool insecure = false;
};

// Remotes live in the store (table remote.config), so they are written
// atomically with everything else and travel with the store directory.
Status AddRemote(Store& store, const RemoteConfig& remote);  // InvalidInput if the name exists
Status RemoveRemote(Store& store, std::string_view name);    // NotFound if absent
Result<std::vector<RemoteConfig>> ListRemotes(Store& store);
// Points a configured remote at another URL (InvalidInput when the URL or
// --insecure is refused, NotFound when no remote has the name); what
// remote.state knew of the old URL stays under it (it is keyed by URL).
Status SetRemoteUrl(Store& store, const RemoteConfig& remote);
// What remote.state knows of a registry (docs/format.md, "Remote state").
struct RemoteStateSummary {
  uint64_t blobs = 0, referrers = 0, packs = 0;
  std::vector<std::pair<std::string, Digest>> tags;  // tag -> manifest, sorted by tag
};
Result<RemoteStateSummary> SummarizeRemoteState(Store& store, const RemoteUrl& url);
// A configured name, or else a URL given directly on the command line.
Result<RemoteUrl> LookupRemote(Store& store, std::string_view name_or_url, bool insecure);

// ---------------------------------------------------------------- credentials

struct Credentials {
  std::string username, password;  // both empty: anonymous
  bool empty() const { return username.empty() && password.empty(); }
};

// KI_REGISTRY_USER / KI_REGISTRY_PASSWORD, else the docker config file
// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json) entry for `host`
// ("auth" base64 or "username"/"password"; credential helpers are not run).
Result<Credentials> FindCredentials(std::string_view host);
// Parses a docker config.json text for `host` (exposed for tests).
Result<Credentials> CredentialsFromDockerConfig(std::string_view config_json, std::string_view host);

// ---------------------------------------------------------------- transfer

struct TransferProgress {
  uint64_t objects_done = 0, objects_total = 0;
  uint64_t bytes_done = 0;
};

// Time limits of every request to a registry, so that no server can keep
// a push or pull waiting without end (docs/cli.md, "Time limits"; the CLI's
// --connect-timeout, --low-speed-limit, --low-speed-time, --timeout and
// --min-rate set them). A request that hits one fails with IOError saying
// which limit and which option raises it; it is tried `attempts` times in
// all (a stall may be the network's, once), not max_attempts.
struct TransferTimeouts {
  long connect_s = 15;
  // Aborted when slower than low_speed_bytes a second for low_speed_time_s
  // seconds (libcurl's CURLOPT_LOW_SPEED_LIMIT / _TIME), either way: a
  // server that drips, or stalls, or never answers. 1 KiB/s is far below
  // any working link and far above a drip.
  long low_speed_bytes = 1024;
  long low_speed_time_s = 30;
  // Aborted when the request has run longer than deadline_s plus one
  // second per min_rate bytes it has moved so far (checked while it runs:
  // a size the server announces earns nothing), and at the latest after
  // deadline_s plus one second per min_rate bytes it may carry (an
  // upload's length; for a download, the most it may receive: a blob's
  // announced size, a manifest's cap). So a server that keeps just above
  // the low-speed limit still ends, after about deadline_s. 0: no deadline.
  long deadline_s = 300;
  uint64_t min_rate = 64 << 10;
  int attempts = 2;
  // The whole push or pull: ended once it has run longer than total_s
  // seconds, whatever each request earned (0: no such bound). Push and
  // Pull set `end` from it as they start (when it is not set already);
  // every request checks it as it starts and about once a second while it
  // runs, and is given no longer than what is left.
  long total_s = 0;
  std::optional<std::chrono::steady_clock::time_point> end;
};

struct TransferOptions {
  // Connections (one worker thread each) of Push and of Pull; the CLI's
  // --jobs defaults are these. Measured on a 2-core machine against
  // Debian's registry (bench/results/remote-2026-11-30.md): an upload waits
  // on the registry's fsyncs, so 8 keep it busy, while a download is pure
  // registry CPU, where 8 only added scheduling to 4.
  int push_jobs = 8;
  int pull_jobs = 4;
  // Blobs larger than this are streamed both ways instead of held whole:
  // push reads them from the store piece by piece into the upload, pull
  // downloads them (role blob only) into a scratch file under the store's
  // objects/incoming, checked as they arrive, and stores that file through
  // Batch::PutBlobStream (docs/format.md, "Pull"). 1 MiB, as `ki add`: below
  // it, holding an object costs nothing worth a scratch file's write and
  // fsync, and keeps it in the paths that batch many small objects (packs,
  // the pull buffer's batches).
  uint64_t stream_above = 1ull << 20;
  // Objects held whole in memory (everything not streamed: manifests,
  // documents, attestations, blobs up to stream_above, packs) are refused
  // over this size, announced or received. Streamed blobs have no cap.
  uint64_t max_blob_size = 4ull << 30;
  uint64_t max_manifest_size = 4ull << 20;   // OCI manifests and indexes
  uint64_t max_layers = 1000000;
  uint64_t chunk_size = 16ull << 20;         // PATCH chunk when a monolithic PUT is refused
  bool force_chunked = false;                // tests: always use PATCH
  int max_attempts = 5;                      // per request, on 5xx / connection failure
  int backoff_initial_ms = 200;              // doubled per attempt
  TransferTimeouts timeouts;
  std::optional<Credentials> credentials;    // unset: FindCredentials(host)
  // Push: also tag each named root `ki-<hex of its ki digest>` (unnamed
  // roots always get that tag, it is their only one).
  bool digest_tags = false;
  // Push: when set, every ref's closure goes into one bundle under this
  // tag (docs/format.md, "Bundles") instead of one image manifest per ref:
  // a few manifests for a whole store instead of one per record.
  std::string bundle_tag;
  uint64_t bundle_part_bytes = 3ull << 20;  // a part manifest's size budget (registries cap at 4 MiB)
  // Push of a bundle: also write its pack (all its objects in one blob).
  // Pull of a bundle: fetch the pack when the objects the store lacks would
  // cost more one by one (docs/format.md, "Bundles"). Off: one blob per
  // object both ways.
  bool use_pack = true;
  // Push of a bundle with use_pack: 2, a packed bundle (its objects of at
  // most 1 MiB only in the pack, with a table of contents); 1, every object
  // also its own blob (what ki wrote before 2026-12-01: kept so that such
  // remotes stay readable, and tested). docs/format.md, "Bundles".
  int bundle_format = 2;
  // The tags/list page size asked for (the distribution-spec's `n`).
  size_t tag_page = 1000;
  // Push: trust remote.state (skip blobs the registry is known to hold,
  // HEAD a tag instead of re-writing it). Off: ask about everything again.
  bool use_remote_state = true;
  // Push: after this many HEADs in a row found nothing, upload without
  // asking (a PUT of a blob the registry has is harmless), asking one in
  // `head_sample` to notice hits. 0: always HEAD first.
  int blind_after_misses = 16;
  int head_sample = 16;
  // Pull: re-read each tag after the blobs to report one that moved, for
  // pulls of at most this many tags (everything after the first read goes
  // by digest whatever the answer).
  size_t tag_recheck_max = 64;
  // Pull from a registry without the referrers API: from this many
  // closures on, one tags/list (all pages) tells which have a sha256-<hex>
  // referrers tag; below it, each tag is asked for (cheaper for a few refs
  // in a repository of many tags).
  size_t tag_list_min_refs = 8;
  // Pull: verified blobs (role blob: tensors, logs, sources; never
  // manifests, documents or attestations) held in memory up to this many
  // bytes; from half of it on, those held are written in a store batch of
  // their own and let go, and downloads wait while held and being-written
  // bytes would pass it, so a pull of many large blobs needs memory for this
  // much plus the blobs in flight, not for all it fetches. Manifests, names and
  // attestations are still written together at the end, only once everything
  // is verified: a pull that fails after such a write leaves the blobs it
  // wrote (verified, unnamed objects that a re-run does not fetch again) and
  // nothing else. docs/format.md, "Pull".
  uint64_t pull_buffer_bytes = 256ull << 20;
  // Push: object bytes read for upload at once, across the workers; a
  // worker waits before reading an object that would pass this (one larger
  // than it goes alone), so 8 workers on large tensors do not hold 8 of them.
  uint64_t push_buffer_bytes = 256ull << 20;
  // Pull: the keys an attestation's signatures are checked with, as `ki
  // sign --envelope` checks an envelope before filing it (sign.h,
  // CheckEnvelope); not owned. Null: no keys, so only what needs none is
  // checked (the envelope's shape, its statement and subject, a signature
  // by the key the statement names).
  const KeySources* attestation_keys = nullptr;
  std::function<void(const TransferProgress&)> progress;  // called from worker threads, serialised
};

// `opts` with timeouts.end set from timeouts.total_s, counted from now.
TransferOptions WithOverallDeadline(TransferOptions opts);

struct PushedRef {
  std::string ref;          // what the user named
  Digest root;              // the ki object
  std::string tag;          // the OCI tag written
  Digest manifest;          // the OCI image manifest's digest
  uint64_t objects = 0;     // layers in the closure
  uint64_t sent = 0, skipped = 0, bytes_sent = 0;
  uint64_t attestations = 0;
};

struct PushReport {
  std::vector<PushedRef> refs;
  uint64_t http_requests = 0;
  // Unique blobs: skipped because remote.state says the registry holds
  // them; asked about with HEAD; uploaded; uploaded without asking first.
  uint64_t blobs_known = 0, blobs_checked = 0, blobs_sent = 0, blobs_sent_unasked = 0;
  uint64_t bytes_sent = 0;  // of the unique blobs uploaded
  uint64_t peak_bytes_in_flight = 0;  // the most object bytes read for upload at once (push_buffer_bytes)
  uint64_t blobs_streamed = 0;  // of blobs_sent: streamed from the store (TransferOptions::stream_above)
  // A bundle's pack, when it has one (not with use_pack off, nor when no
  // object is small enough for it).
  struct Pack {
    Digest digest;
    uint64_t size = 0;     // compressed, as stored
    uint64_t objects = 0;  // entries
    bool sent = false;     // false: the remote had it
    // false: neither built nor sent; remote.state recorded it for these
    // objects, and the tag still named this very bundle.
    bool built = true;
  };
  std::optional<Pack> pack;
  std::vector<std::string> warnings;  // e.g. remote.state could not be written
};

struct PulledRef {
  std::string ref;
  Digest manifest;          // the OCI image manifest pulled
  std::optional<Digest> root;
  uint64_t objects = 0, received = 0, present = 0, bytes_received = 0;
  uint64_t from_pack = 0;   // of `received`: taken from a bundle's pack
  uint64_t attestations = 0;
  std::vector<std::string> warnings;  // e.g. the tag moved during the pull, a pack was refused
};

struct PullReport {
  std::vector<PulledRef> refs;
  uint64_t http_requests = 0;
  uint64_t blobs_received = 0, bytes_received = 0;  // unique objects received (raw bytes)
  uint64_t blobs_from_pack = 0;                     // of those, taken from packs
  uint64_t packs_received = 0, pack_bytes_received = 0;  // packs downloaded (compressed bytes)
  // Blobs written before the end because more than pull_buffer_bytes of
  // them were held (0 for most pulls), and the most blob bytes held at once.
  uint64_t blobs_written_early = 0;
  uint64_t peak_blob_bytes_held = 0;
  // Blobs over TransferOptions::stream_above: downloaded to a scratch file
  // and each stored in a batch of its own as soon as it was verified.
  uint64_t blobs_streamed = 0;
};

// ---------------------------------------------------------------- listing

// One row of what a remote holds: a root pushed as its own image manifest,
// a bundle, or a root a bundle holds (docs/format.md, "Listing").
struct RemoteEntry {
  std::string tag;             // the tag naming it (for a root in a bundle: the bundle's)
  Digest manifest;             // the image manifest or bundle index that tag names
  std::optional<Digest> root;  // the ki object (unset for a bundle itself, and a tag ki did not list)
  std::string kind, name;      // "" when unknown or unnamed; name is "<Kind>/<name>"
  bool bundle = false;         // the bundle itself
  bool in_bundle = false;      // a root the bundle under `tag` holds
  uint64_t roots = 0;          // a bundle: how many roots it holds
  std::string pushed_at;       // RFC 3339 UTC when first pushed so; "" when unknown
};

struct RemoteListing {
  std::vector<RemoteEntry> entries;    // listed rows, then the roots of its packed bundles
  std::vector<std::string> unlisted;   // tags the listing does not name (nor ki's own: ki-listing, sha256-<hex>)
  std::vector<std::string> warnings;   // e.g. an unreadable listing
  uint64_t http_requests = 0;
};

// What REMOTE holds: its listing, the roots of every packed bundle it
// names (`bundle_roots`: three requests a bundle), and its tags (paginated
// tag list, n/last and Link; a layout's index.json), in a number of
// requests that does not grow with the roots.
Result<RemoteListing> ListRemote(const RemoteUrl& remote, const TransferOptions& opts, bool bundle_roots = true);

// Which entry REF names, as Store::Resolve reads a ref: a full ki digest,
// a unique hex prefix of at least 4 digits (with or without sha256:),
// <Kind>/<name>, a bare name, or a tag. NotFound / Ambiguous (listing the
// candidates, as ki resolve does) / InvalidInput (a prefix under 4 digits).
Result<RemoteEntry> ResolveOnRemote(const RemoteListing& listing, std::string_view ref, std::string_view remote);

// Pushes each REF (anything Store::Resolve accepts) with its closure.
// On failure the Status says how far it got (blobs uploaded, manifest not
// written) and that a re-run resumes. Writes remote.state when the store
// is writable (a read-only store only adds a warning).
Result<PushReport> Push(Store& store, const RemoteUrl& remote, const std::vector<std::string>& refs,
                        const TransferOptions& opts = {});

// Every object of the store as one bundle under opts.bundle_tag (which
// must be set): `ki push --bundle TAG --all`, so that a clone answers what
// this store answers. Each object is a root but the documents a manifest
// links (they travel as their manifests' documents). While nothing was
// committed to the store since the last such push to this registry and
// the tag still names that bundle, the store is not scanned: one HEAD.
// NotFound when the store holds no objects.
Result<PushReport> PushAll(Store& store, const RemoteUrl& remote, const TransferOptions& opts);

// Every tag of the remote (a registry's tags/list, every page; a layout's
// index.json), so that a caller asking about many tags (ki fleet: which
// runs have results) asks once. A repository that does not exist yet has
// none. IOError when the remote cannot list them (a registry without the
// tags API).
Result<std::vector<std::string>> ListTags(const RemoteUrl& remote, const TransferOptions& opts = {});

// Pulls each REF: a tag, a ki name (sanitised as push does), or an OCI
// manifest digest `sha256:...`; failing those, any name ResolveOnRemote
// reads against the remote's listing (a root inside a bundle is pulled
// out of it with its closure alone).
Result<PullReport> Pull(Store& store, const RemoteUrl& remote, const std::vector<std::string>& refs,
                        const TransferOptions& opts = {});

}  // namespace ki
