// Pull (remote.h): everything checked before it is stored, one method per
// phase of Puller::Run:
//
// FetchRefs (every ref's image manifest, checked: media type,
// artifactType, every descriptor) -> FetchParts (a bundle's parts, in
// parallel) -> FetchReferrers (attestations attached as referrers) ->
// Merge (one item per digest, marked when the store holds it) ->
// PlanManifests (which manifest objects get stored and what each waits
// for) -> ReadPacks (a bundle's pack, when the store lacks enough of its
// objects, each entry checked against its layer) -> FetchBlobs (every
// other blob the store lacks, each checked for size and digest as it
// arrives; the worker that brings a manifest's last piece parses, checks
// and encodes it) -> RecheckTags -> CheckAttestations -> StoreAll (one
// Batch that only writes). Manifests, names and attestations are written
// only when everything is verified; verified blobs past
// TransferOptions::pull_buffer_bytes go in batches of their own as they
// arrive (Hold), so that memory stays bounded.
//
// Blobs over TransferOptions::stream_above are never held whole: each is
// downloaded into one of the store's blob writers (its scratch file),
// checked as it arrives, and stored at once, in a batch of its own
// (StreamBlob).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "json/fields.h"
#include "ki/blob_stream.h"
#include "ki/env.h"
#include "ki/json.h"
#include "ki/sign.h"
#include "ki/store_env.h"
#include "remote/listing.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/state.h"
#include "remote/target.h"
#include "remote/transfer.h"

namespace ki {

using remote::Conn;
using remote::Layer;
using remote::RunParallel;
using remote::Target;

namespace {

// A request's fixed cost (a round trip, and a registry's per-request CPU:
// 1.5-5 ms for a blob GET on Debian's registry) counted as bytes of
// transfer. A pack is fetched when it costs no more than the objects the
// store lacks would one by one: pack size <= their bytes + this per object.
constexpr uint64_t kRequestCostBytes = 32 << 10;

bool PackWorthFetching(uint64_t pack_size, uint64_t missing, uint64_t missing_bytes) {
  return missing > 0 && pack_size <= missing_bytes + missing * kRequestCostBytes;
}

struct PullItem {
  Layer layer;
  bool present = false;   // held by the store already
  std::string bytes;      // fetched (or read locally when needed)
  // A manifest to store: encoded (checked, framed, compressed) on a
  // download worker as soon as its object and document are both at hand,
  // so that the batch at the end only writes.
  std::optional<EncodedManifest> encoded;
  Status prepared;
  bool received = false;   // bytes are here, checked (from a pack or a GET)
  bool from_pack = false;
  bool stored = false;     // written by an early blob batch (TransferOptions::pull_buffer_bytes)
  // A blob over TransferOptions::stream_above: never in `bytes`, stored
  // by the worker that downloaded it.
  bool streamed = false;
};

// What one ref's manifest said, until Merge folds it into the items.
struct RefFetch {
  PulledRef pr;
  // What the ref named on the remote: not a tag or manifest there, so it
  // is read against the remote's listing (ResolveNames), which sets `want`.
  bool unresolved = false;
  std::string want;                // the tag or manifest digest to fetch ("" : from the ref)
  std::string tag;                 // "" when pulled by manifest digest
  std::vector<Layer> layers;       // the image manifest's
  std::vector<Layer> attached;     // attestations found as referrers
  std::string referrers;           // the referrers index (API or fallback tag), "" when none
  bool bundle = false;             // an image index of bundle parts (no referrers)
  std::vector<remote::PartRef> parts;  // a bundle's part manifests, fetched after the refs
  std::optional<remote::PartRef> pack;  // a bundle's pack manifest, fetched if worth it
  // The pack manifest itself when the part fetches read it already (an
  // index without artifactType fields: checked against its digest and
  // the index's size), so that it is not fetched twice.
  std::optional<remote::FetchedManifest> pack_manifest;
  // A packed bundle (format 2): its objects of at most kPackEntryMax bytes
  // are only in the pack, whose blob and table of contents its manifest
  // names; `packed_sizes` are those objects (all of the bundle's, also
  // when only one root's closure is pulled: the pack holds them all).
  bool packed = false;
  std::optional<Digest> select;  // pull only this root's closure out of the bundle
  std::optional<remote::PartRef> pack_blob;
  std::unordered_map<Digest, uint64_t> packed_sizes;
};

// An attestation row to file: the subject, the envelope, the row's value.
struct AttRow {
  Digest subject, envelope;
  std::string value;
  size_t ref;  // the ref whose manifest brought it (counts it, gets its warning)
};

class Puller {
 public:
  Puller(Store& store, const RemoteUrl& url, const TransferOptions& opts) : store_(store), url_(url), opts_(opts) {}
  Puller(const Puller&) = delete;
  Puller& operator=(const Puller&) = delete;

  Result<PullReport> Run(const std::vector<std::string>& refs);

 private:
  Status FetchRefs();
  Status ResolveNames();
  Status FetchRef(Conn& c, size_t r);
  Status FetchParts();
  Status FetchTocs();
  Status FetchToc(Conn& c, size_t r);
  Status FetchReferrers();
  Status ReadReferrers(Conn& c, RefFetch& f);
  Status Merge();
  Status AddItem(const Layer& l);
  void PlanManifests();
  Status ReadPacks();
  Status ReadPack(size_t r, uint64_t* delivered, std::optional<Digest>* pack_digest);
  Status ReadPackBlob(Conn& conn, size_t r, const remote::PartRef& blob,
                      const std::unordered_map<Digest, uint64_t>& in_bundle, const remote::PackReadLimits& limits,
                      uint64_t* delivered, std::optional<Digest>* pack_digest);
  Status FetchBlobs();
  Status FetchBlob(Conn& c, size_t i);
  void RecheckTags();
  Status CheckAttestations();
  Status StoreAll();
  void Count();

  // The bytes of an item: fetched, or read from the store when present.
  Result<std::string*> BytesOf(PullItem& p);
  // Checks and encodes manifest item `i` (its bytes and its document's are
  // here or in the store); the errors are reported after the downloads, in
  // item order.
  Status Prepare(size_t i);
  // A piece of a manifest is here: true when it was the last.
  bool Completes(size_t i);
  // Let go of a verified role-blob item's bytes past the buffer.
  Status Hold(size_t i);
  Status WriteBlobs(const std::vector<size_t>& to_write);
  // Downloads a streamed blob into a scratch file and stores it.
  Status StreamBlob(Conn& c, size_t i);
  // What a failure leaves in the store, for its message.
  std::string StoredNote() const;

  Store& store_;
  const RemoteUrl& url_;
  const TransferOptions& opts_;
  std::vector<std::string> refs_;
  PullReport report_;
  remote::RemoteState state_;
  std::unique_ptr<Target> target_;

  std::vector<RefFetch> fetches_;
  // After Merge: one item per digest; per ref, the digests its manifest
  // lists, its tag, its pack.
  std::vector<PullItem> items_;
  std::unordered_map<Digest, size_t> item_of_;
  std::vector<std::vector<Digest>> ref_layers_;
  std::vector<AttRow> rows_;
  std::vector<std::string> tags_;
  std::vector<std::optional<remote::PartRef>> packs_;
  std::vector<std::optional<remote::FetchedManifest>> pack_manifests_;
  std::vector<uint8_t> packed_;
  std::vector<std::optional<remote::PartRef>> pack_blobs_of_;
  std::vector<std::unordered_map<Digest, uint64_t>> packed_sizes_;

  // Which manifests get stored, and what each waits for: its object and
  // its document (when the pull has one), those the store lacks arriving
  // over the network. Documents go in with their manifest.
  std::unordered_map<Digest, size_t> document_for_;  // manifest digest -> item of its document
  std::vector<size_t> manifest_of_;                  // item -> the manifest item it completes
  std::unique_ptr<std::atomic<int>[]> waiting_;
  std::vector<size_t> to_store_;  // manifest items to store, in item order
  std::unique_ptr<remote::Progress> progress_;

  // Verified blobs wait in memory for the batch at the end, up to
  // pull_buffer_bytes (TransferOptions). Once half the buffer is held, one
  // worker writes what is held in a batch of its own and lets it go, while
  // the others keep downloading; a worker that would take the total held
  // and being written past the buffer waits for that write (downloads are
  // faster than fsynced writes: without the wait each worker piled up a
  // buffer's worth, 1072 MiB held for a 256 MiB buffer; bench/results/
  // pull-memory-2026-11-30.md). Only role-blob items: nothing reads their
  // bytes once they are verified (a manifest waits on its object and
  // document, the end checks attestations), so writing them early skips
  // no check. One writer at a time (one Batch per store).
  std::mutex held_mu_;  // guards held_ .. writing_
  std::condition_variable write_done_;
  std::vector<size_t> held_;
  uint64_t held_bytes_ = 0, writing_bytes_ = 0;
  bool writing_ = false;
  std::atomic<uint64_t> written_early_{0};
  std::mutex batch_mu_;  // one Batch at a time: the early blob writes and the streamed blobs
  std::atomic<uint64_t> streamed_stored_{0};

  std::vector<size_t> ready_;  // manifests a pack completed: prepared on the download workers
  std::vector<Digest> pack_blobs_;
  uint64_t n_from_pack_ = 0;
  std::vector<size_t> need_;  // items fetched one by one
  std::unordered_set<Digest> envelopes_filed_;
};

Status Puller::FetchRef(Conn& c, size_t r) {
  RefFetch& f = fetches_[r];
  const std::string& ref = refs_[r];
  f.pr.ref = ref;
  std::string want = f.want.empty() ? ref : f.want;
  Result<remote::FetchedManifest> fetched = Status::NotFound("");
  if (!f.want.empty()) {
    fetched = c.GetManifest(want);  // what the listing said
  } else {
    if (!Digest::IsValid(ref) && !IsValidTag(ref)) want = SanitizeTag(ref);
    // A digest is first read as a ki digest (push tags unnamed roots, and
    // named ones with --digest-tags, ki-<hex>), then as an OCI manifest
    // digest. In that order because a registry asked for a manifest by the
    // digest of a blob it holds may answer 500 (distribution 2.8 does).
    if (Digest::IsValid(ref)) want = "ki-" + ref.substr(7);
    fetched = IsValidTag(want) || Digest::IsValid(want) ? c.GetManifest(want) : Result<remote::FetchedManifest>(Status::NotFound(""));
    if (!fetched.ok() && fetched.status().IsNotFound() && Digest::IsValid(ref)) {
      want = ref;
      fetched = c.ProbeManifest(want);
      if (!fetched.ok() && !fetched.status().IsCorruption()) fetched = Status::NotFound(fetched.status().message());
    }
    // Neither a tag nor a manifest: a name the remote's listing may know.
    if (!fetched.ok() && fetched.status().IsNotFound()) {
      f.unresolved = true;
      return Status::OK();
    }
  }
  if (!fetched.ok()) return fetched.status();
  f.tag = Digest::IsValid(want) ? "" : want;
  f.pr.manifest = fetched->digest;
  bool index = fetched->media_type == remote::kOciIndexType;
  if (fetched->media_type.empty() && fetched->bytes.find(remote::kOciIndexType) != std::string::npos) {
    Json j = Json::parse(fetched->bytes, nullptr, false);  // a layout says no media type: look
    index = StringOr(j, "mediaType") == remote::kOciIndexType;
  }
  if (index) {
    // A bundle: every part, by digest (GetManifest checks the hash), and
    // the size its descriptor announced.
    f.bundle = true;
    auto parts = remote::ParseBundleIndex(fetched->bytes, fetched->media_type, opts_);
    if (!parts.ok()) return parts.status().WithContext(url_.str() + " " + ref);
    f.parts = std::move(parts->parts);
    f.pack = parts->pack;
    f.packed = parts->packed;
    return Status::OK();
  }
  auto closure = remote::ParseImageManifest(fetched->bytes, fetched->media_type, opts_);
  if (!closure.ok()) return closure.status().WithContext(url_.str() + " " + ref);
  f.pr.root = closure->root;
  f.pr.objects = closure->layers.size();
  f.layers = std::move(closure->layers);
  return Status::OK();
}

// 1. Every ref's manifest, in parallel.
Status Puller::FetchRefs() {
  fetches_.resize(refs_.size());
  Status st = RunParallel(*target_, opts_.pull_jobs, refs_.size(), [&](Conn& c, size_t r) { return FetchRef(c, r); });
  report_.http_requests = target_->requests();
  return st;
}

// Refs that named no tag or manifest: read against the remote's listing
// (a ki digest, a prefix, <Kind>/<name>, a bare name; ResolveOnRemote),
// then fetched by the manifest digest it gives. A root held by a bundle
// is pulled out of it: the bundle's index, and that root's closure only.
Status Puller::ResolveNames() {
  std::vector<size_t> todo;
  for (size_t r = 0; r < fetches_.size(); ++r)
    if (fetches_[r].unresolved) todo.push_back(r);
  if (todo.empty()) return Status::OK();
  KI_ASSIGN_OR_RETURN(auto conn, target_->Connect());
  KI_ASSIGN_OR_RETURN(RemoteListing listing, remote::ReadRemoteListing(*conn, opts_, true));
  for (size_t r : todo) {
    KI_ASSIGN_OR_RETURN(RemoteEntry e, ResolveOnRemote(listing, refs_[r], url_.str()));
    RefFetch& f = fetches_[r];
    f.unresolved = false;
    f.want = e.manifest.str();
    if (e.in_bundle) f.select = e.root;
    KI_RETURN_IF_ERROR(FetchRef(*conn, r));
    if (f.unresolved) return Status::NotFound(url_.str() + ": the listing names " + e.manifest.str() + " for " + refs_[r] + ", which the remote lacks");
  }
  report_.http_requests = target_->requests();
  return Status::OK();
}

// Bundle parts (a few MiB of JSON each), all in parallel: each one
// fetched by digest and parsed on its own worker.
Status Puller::FetchParts() {
  struct PartFetch {
    size_t ref, part;
    std::vector<Layer> layers;
    std::optional<remote::FetchedManifest> pack;  // an untyped entry that turned out to be the pack's manifest
  };
  std::vector<PartFetch> part_fetches;
  for (size_t r = 0; r < fetches_.size(); ++r)
    for (size_t k = 0; k < fetches_[r].parts.size(); ++k) part_fetches.push_back({r, k, {}, {}});
  // max_layers bounds a whole bundle, not only each part: 10,000 parts of
  // 4 MiB could otherwise list hundreds of millions of layers, all held.
  std::unique_ptr<std::atomic<uint64_t>[]> bundle_layers(new std::atomic<uint64_t>[fetches_.size()]);
  for (size_t r = 0; r < fetches_.size(); ++r) bundle_layers[r] = 0;
  Status st = RunParallel(*target_, opts_.pull_jobs, part_fetches.size(), [&](Conn& c, size_t j) -> Status {
    PartFetch& pf = part_fetches[j];
    const std::string& ref = refs_[pf.ref];
    const remote::PartRef& part = fetches_[pf.ref].parts[pf.part];
    KI_ASSIGN_OR_RETURN(auto pm, c.GetManifest(part.digest.str()));
    if (pm.bytes.size() != part.size) {
      return Status::Corruption(url_.str() + " " + ref + ": part " + part.digest.str() + " has " +
                                std::to_string(pm.bytes.size()) + " bytes, the index says " + std::to_string(part.size));
    }
    auto layers = remote::ParseBundlePart(pm.bytes, pm.media_type, opts_);
    if (!layers.ok()) {
      // An untyped entry that is no part may be the pack's manifest (small:
      // looked at only then, so a part's JSON is parsed once).
      if (!part.typed) {
        Json peek = Json::parse(pm.bytes, nullptr, false);
        if (StringOr(peek, "artifactType") == kOciPackType) {
          pf.pack = std::move(pm);  // checked when (and if) the pack is used
          return Status::OK();
        }
      }
      return layers.status().WithContext(url_.str() + " " + ref + " part " + part.digest.str());
    }
    if ((bundle_layers[pf.ref] += layers->size()) > opts_.max_layers) {
      return Status::InvalidInput(url_.str() + " " + ref + ": remote bundle lists more than " +
                                  std::to_string(opts_.max_layers) + " objects in its parts");
    }
    pf.layers = std::move(*layers);
    return Status::OK();
  });
  report_.http_requests = target_->requests();
  if (!st.ok()) return st;
  for (PartFetch& pf : part_fetches) {  // in index order
    RefFetch& f = fetches_[pf.ref];
    if (pf.pack) {
      if (f.pack) return Status::InvalidInput(url_.str() + " " + refs_[pf.ref] + ": remote bundle index: more than one pack");
      f.pack = f.parts[pf.part];
      f.pack_manifest = std::move(pf.pack);
      continue;
    }
    for (Layer& l : pf.layers) f.layers.push_back(std::move(l));
    f.pr.objects = f.layers.size();
  }
  // ParseBundleIndex let an untyped index list one part too many, in case
  // one of them was the pack's manifest: now that each said what it is,
  // the parts are counted.
  for (size_t r = 0; r < fetches_.size(); ++r) {
    size_t parts = fetches_[r].parts.size() - (fetches_[r].pack_manifest ? 1 : 0);
    if (fetches_[r].bundle && parts > remote::kBundleMaxParts) {
      return Status::InvalidInput(url_.str() + " " + refs_[r] + ": remote bundle index: " + std::to_string(parts) +
                                  " parts, more than " + std::to_string(remote::kBundleMaxParts));
    }
  }
  return Status::OK();
}

// A packed bundle's pack manifest (unless an untyped index made the part
// fetches read it already) and its table of contents, which says what the
// bundle holds: every object, or the closure of the one root asked for.
Status Puller::FetchTocs() {
  Status st = RunParallel(*target_, opts_.pull_jobs, fetches_.size(), [&](Conn& c, size_t r) { return FetchToc(c, r); });
  report_.http_requests = target_->requests();
  return st;
}

Status Puller::FetchToc(Conn& c, size_t r) {
  RefFetch& f = fetches_[r];
  const std::string where = url_.str() + " " + refs_[r];
  if (!f.packed) {
    if (f.select) return Status::InvalidInput(where + ": a bundle without a table of contents (format 1) cannot be pulled root by root");
    return Status::OK();
  }
  if (!f.pack) return Status::InvalidInput(where + ": remote bundle index: a packed bundle (format 2) without a pack");
  remote::FetchedManifest pm;
  if (f.pack_manifest) {
    pm = std::move(*f.pack_manifest);
    f.pack_manifest.reset();
  } else {
    KI_ASSIGN_OR_RETURN(pm, c.GetManifest(f.pack->digest.str()));
  }
  if (pm.bytes.size() != f.pack->size) {
    return Status::Corruption(where + ": the pack manifest has " + std::to_string(pm.bytes.size()) +
                              " bytes, the index says " + std::to_string(f.pack->size));
  }
  std::optional<remote::PartRef> toc_ref;
  auto blob = remote::ParsePackManifest(pm.bytes, pm.media_type, opts_, &toc_ref);
  if (!blob.ok()) return blob.status().WithContext(where);
  if (!toc_ref) return Status::InvalidInput(where + ": a packed bundle's pack manifest without a table of contents");
  f.pack_blob = *blob;
  KI_ASSIGN_OR_RETURN(std::string z, c.GetBlob(toc_ref->digest, toc_ref->size));
  // Decompressed, at most what max_layers descriptors and closures can
  // take (4 KiB per object is several times what push writes).
  const uint64_t max_json = std::min<uint64_t>(opts_.max_blob_size, std::max<uint64_t>(opts_.max_layers, 1) << 12);
  KI_ASSIGN_OR_RETURN(std::string json, remote::DecompressToc(z, max_json));
  auto toc = remote::ParseToc(json, opts_);
  if (!toc.ok()) return toc.status().WithContext(where);
  std::unordered_map<Digest, size_t> at;
  for (size_t i = 0; i < toc->objects.size(); ++i) {
    at.emplace(toc->objects[i].digest, i);
    if (toc->objects[i].size <= remote::kPackEntryMax) f.packed_sizes.emplace(toc->objects[i].digest, toc->objects[i].size);
  }
  // The parts list the objects that are blobs of their own: each one the
  // table of contents lists too, with the same size.
  for (const Layer& l : f.layers) {
    auto it = at.find(l.digest);
    if (it == at.end() || toc->objects[it->second].size != l.size || l.size <= remote::kPackEntryMax) {
      return Status::InvalidInput(where + ": part layer " + l.digest.str() + " disagrees with the table of contents");
    }
  }
  f.layers.clear();
  if (!f.select) {
    f.layers = std::move(toc->objects);
  } else {
    const remote::TocRoot* root = nullptr;
    for (const remote::TocRoot& t : toc->roots)
      if (t.digest == *f.select) root = &t;
    if (!root) return Status::NotFound(where + " has no root " + f.select->str());
    std::unordered_set<uint32_t> seen;
    for (uint32_t k : root->closure)
      if (seen.insert(k).second) f.layers.push_back(toc->objects[k]);
    f.pr.root = *f.select;
  }
  f.pr.objects = f.layers.size();
  return Status::OK();
}

// Attestations attached later, as referrers of a manifest: through the
// referrers API when the remote has one (asked once, then per manifest),
// else through the sha256-<hex> tags, which one tags/list tells apart
// from the (usual) manifests that have none.
Status Puller::FetchReferrers() {
  size_t first = 0;  // the first closure (bundles have no referrers)
  while (first < fetches_.size() && fetches_[first].bundle) ++first;
  if (first < fetches_.size()) {
    KI_ASSIGN_OR_RETURN(auto probe_conn, target_->Connect());
    KI_ASSIGN_OR_RETURN(auto probe, probe_conn->Referrers(fetches_[first].pr.manifest));
    bool api = probe.has_value();
    if (api) fetches_[first].referrers = std::move(*probe);
    std::optional<std::unordered_set<std::string>> fallback_tags;
    size_t closures = 0;
    for (const RefFetch& f : fetches_) closures += !f.bundle;
    if (!api && closures >= opts_.tag_list_min_refs) {
      KI_ASSIGN_OR_RETURN(auto listed, probe_conn->ListTags());
      if (listed) {
        fallback_tags.emplace();
        for (std::string& t : *listed)
          if (t.rfind("sha256-", 0) == 0) fallback_tags->insert(std::move(t));
      }
    }
    probe_conn.reset();
    Status st = RunParallel(*target_, opts_.pull_jobs, fetches_.size(), [&](Conn& c, size_t r) -> Status {
      RefFetch& f = fetches_[r];
      if (f.bundle) return Status::OK();
      if (api) {
        if (r == first) return Status::OK();
        KI_ASSIGN_OR_RETURN(auto idx, c.Referrers(f.pr.manifest));
        if (idx) f.referrers = std::move(*idx);
        return Status::OK();
      }
      std::string tag = remote::FallbackTag(f.pr.manifest);
      if (fallback_tags && !fallback_tags->count(tag)) return Status::OK();
      auto fb = c.GetManifest(tag);
      if (fb.ok()) f.referrers = std::move(fb->bytes);
      else if (!fb.status().IsNotFound()) return fb.status();
      return Status::OK();
    });
    report_.http_requests = target_->requests();
    if (!st.ok()) return st;
  }
  Status st = RunParallel(*target_, opts_.pull_jobs, fetches_.size(),
                          [&](Conn& c, size_t r) { return ReadReferrers(c, fetches_[r]); });
  report_.http_requests = target_->requests();
  return st;
}

Status Puller::ReadReferrers(Conn& c, RefFetch& f) {
  if (f.referrers.empty()) return Status::OK();
  ParseLimits limits;
  limits.max_bytes = opts_.max_manifest_size;
  auto idx = ParseDocument(f.referrers, DocFormat::kJson, "referrers of " + f.pr.manifest.str(), limits);
  f.referrers.clear();
  if (!idx.ok() || !idx->is_object() || !idx->contains("manifests") || !(*idx)["manifests"].is_array()) {
    f.pr.warnings.push_back("ignored a malformed referrers index for " + f.pr.manifest.str());
    return Status::OK();
  }
  for (const Json& d : (*idx)["manifests"]) {
    // Entries of other types (or of other shapes) are not ours to read.
    if (StringOr(d, "artifactType") != kDsseMediaType) continue;
    auto rd = Digest::Parse(StringOr(d, "digest"));
    if (!rd.ok()) continue;
    auto rm = c.GetManifest(rd->str());
    if (!rm.ok()) {
      f.pr.warnings.push_back("referrer " + rd->str() + ": " + rm.status().message());
      continue;
    }
    auto att = remote::ParseAttestationManifest(rm->bytes, rm->media_type, f.pr.manifest, opts_);
    if (!att.ok()) {
      f.pr.warnings.push_back("referrer " + rd->str() + " ignored: " + att.status().message());
      continue;
    }
    f.attached.push_back(std::move(*att));
  }
  return Status::OK();
}

Status Puller::AddItem(const Layer& l) {
  auto it = item_of_.find(l.digest);
  if (it != item_of_.end()) {
    if (items_[it->second].layer.size != l.size) {
      return Status::InvalidInput("remote manifests disagree on the size of " + l.digest.str());
    }
    return Status::OK();
  }
  KI_ASSIGN_OR_RETURN(auto info, store_.Stat(l.digest));
  PullItem p;
  p.layer = l;
  p.present = info.has_value();
  p.streamed = !p.present && l.role == remote::Role::kBlob && l.size > opts_.stream_above;
  if (info && info->size != l.size) {
    return Status::InvalidInput("remote says " + l.digest.str() + " has " + std::to_string(l.size) +
                                " bytes; the local copy has " + std::to_string(info->size));
  }
  item_of_[l.digest] = items_.size();
  items_.push_back(std::move(p));
  return Status::OK();
}

// 2. Merge: one item per digest, marked when the store holds it already.
Status Puller::Merge() {
  std::set<std::pair<Digest, Digest>> row_keys;
  for (RefFetch& f : fetches_) {
    ref_layers_.emplace_back();
    for (const std::vector<Layer>* list : {&f.layers, &f.attached}) {
      for (const Layer& l : *list) {
        if (l.role == remote::Role::kAttestation && !row_keys.insert({*l.subject, l.digest}).second) continue;
        KI_RETURN_IF_ERROR(AddItem(l));
        ref_layers_.back().push_back(l.digest);
        if (l.role == remote::Role::kAttestation) {
          rows_.push_back({*l.subject, l.digest, l.index_value, report_.refs.size()});
          f.pr.attestations++;
        }
      }
    }
    report_.refs.push_back(f.pr);
  }
  for (RefFetch& f : fetches_) {
    tags_.push_back(f.tag);
    packs_.push_back(f.pack);
    pack_manifests_.push_back(std::move(f.pack_manifest));
    packed_.push_back(f.packed);
    pack_blobs_of_.push_back(f.pack_blob);
    packed_sizes_.push_back(std::move(f.packed_sizes));
  }
  fetches_.clear();
  return Status::OK();
}

void Puller::PlanManifests() {
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].layer.role == remote::Role::kDocument) document_for_[*items_[i].layer.document_of] = i;
  manifest_of_.assign(items_.size(), SIZE_MAX);
  waiting_.reset(new std::atomic<int>[items_.size()]);
  for (size_t i = 0; i < items_.size(); ++i) {
    waiting_[i] = 0;
    if (items_[i].layer.role != remote::Role::kManifest) continue;
    auto doc_it = document_for_.find(items_[i].layer.digest);
    bool doc_needed = doc_it != document_for_.end() && !items_[doc_it->second].present;
    if (items_[i].present && !doc_needed) continue;
    to_store_.push_back(i);
    if (!items_[i].present) {
      manifest_of_[i] = i;
      waiting_[i]++;
    }
    if (doc_needed) {
      manifest_of_[doc_it->second] = i;
      waiting_[i]++;
    }
  }
  uint64_t lacking = 0;
  for (const PullItem& p : items_) lacking += !p.present;
  progress_ = std::make_unique<remote::Progress>(opts_, lacking);
}

Result<std::string*> Puller::BytesOf(PullItem& p) {
  if (p.present && p.bytes.empty() && p.layer.size > 0) {
    KI_ASSIGN_OR_RETURN(p.bytes, store_.Read(p.layer.digest));
  }
  return &p.bytes;
}

Status Puller::Prepare(size_t i) {
  PullItem& p = items_[i];
  const Layer& l = p.layer;
  KI_ASSIGN_OR_RETURN(std::string * raw, BytesOf(p));
  auto m = ManifestFromCanonical(*raw, l.digest.str());
  if (!m.ok()) return m.status().WithContext("pulled manifest object " + l.digest.str());
  if (m->digest != l.digest || m->canonical != *raw) {
    return Status::InvalidInput("pulled manifest object " + l.digest.str() + " is not in canonical form");
  }
  auto doc_it = document_for_.find(l.digest);
  if (doc_it == document_for_.end()) {
    p.encoded = store_.EncodeManifest(*m, std::nullopt, "");
    return Status::OK();
  }
  PullItem& dp = items_[doc_it->second];
  KI_ASSIGN_OR_RETURN(std::string * doc, BytesOf(dp));
  DocFormat fmt = dp.layer.media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
  ParseLimits limits;
  limits.max_bytes = std::max<uint64_t>(limits.max_bytes, doc->size());
  KI_ASSIGN_OR_RETURN(Json dj, ParseDocument(*doc, fmt, dp.layer.digest.str(), limits));
  auto full = ManifestFromJson(std::move(dj), dp.layer.digest.str());
  if (!full.ok() || full->digest != l.digest) {
    return Status::InvalidInput("pulled document " + dp.layer.digest.str() + " is not a document of " +
                                l.digest.str());
  }
  p.encoded = store_.EncodeManifest(*full, *doc, dp.layer.media_type);
  return Status::OK();
}

bool Puller::Completes(size_t i) {
  size_t m = manifest_of_[i];
  return m != SIZE_MAX && --waiting_[m] == 0;
}

Status Puller::WriteBlobs(const std::vector<size_t>& to_write) {
  std::lock_guard<std::mutex> bl(batch_mu_);
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  for (size_t k : to_write) KI_RETURN_IF_ERROR(batch->PutBlob(items_[k].bytes, items_[k].layer.media_type).status());
  KI_RETURN_IF_ERROR(batch->Commit());
  for (size_t k : to_write) {
    items_[k].stored = true;
    std::string().swap(items_[k].bytes);
  }
  written_early_ += to_write.size();
  return Status::OK();
}

Status Puller::Hold(size_t i) {
  if (items_[i].layer.role != remote::Role::kBlob) return Status::OK();
  std::unique_lock<std::mutex> l(held_mu_);
  held_.push_back(i);
  held_bytes_ += items_[i].bytes.size();
  report_.peak_blob_bytes_held = std::max(report_.peak_blob_bytes_held, held_bytes_ + writing_bytes_);
  for (;;) {
    if (!writing_ && held_bytes_ * 2 > opts_.pull_buffer_bytes) {
      std::vector<size_t> to_write;
      to_write.swap(held_);
      writing_bytes_ = held_bytes_;
      held_bytes_ = 0;
      writing_ = true;
      l.unlock();
      Status ws = WriteBlobs(to_write);
      l.lock();
      writing_ = false;
      writing_bytes_ = 0;
      write_done_.notify_all();
      if (!ws.ok()) {
        // Not written: back to the held ones, for the batch at the end.
        for (size_t k : to_write) held_bytes_ += items_[k].bytes.size();
        held_.insert(held_.end(), to_write.begin(), to_write.end());
        return ws.WithContext("writing verified blobs to the store");
      }
      continue;  // others may have added meanwhile
    }
    if (held_bytes_ + writing_bytes_ <= opts_.pull_buffer_bytes || !writing_) return Status::OK();
    write_done_.wait(l);
  }
}

// A streamed blob: downloaded into a scratch file, checked as it arrives
// (GetBlobTo), then stored from that file in a batch of its own, as the
// early blob writes are (and for the same reason, nothing reads a blob's
// bytes after its check). The scratch file goes away on every way out.
Status Puller::StreamBlob(Conn& c, size_t i) {
  PullItem& p = items_[i];
  KI_ASSIGN_OR_RETURN(auto writer, OpenBlobWriter(store_, "blob " + p.layer.digest.str() + " from the remote"));
  remote::WriterSink sink(*writer);
  KI_RETURN_IF_ERROR(c.GetBlobTo(p.layer.digest, p.layer.size, sink));
  std::lock_guard<std::mutex> bl(batch_mu_);
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  // Hashed on arrival: the store reads the scratch file once, to compress
  // it, and refuses it (Corruption) if it no longer hashes to the digest.
  KI_RETURN_IF_ERROR(writer->Finish(*batch, p.layer.media_type, p.layer.digest).status());
  KI_RETURN_IF_ERROR(batch->Commit().WithContext("writing verified blob " + p.layer.digest.str() + " to the store"));
  p.stored = true;
  streamed_stored_++;
  return Status::OK();
}

std::string Puller::StoredNote() const {
  const uint64_t n = written_early_ + streamed_stored_;
  if (n == 0) return "nothing was stored";
  return "no manifest, name or attestation was stored; the " + std::to_string(n) +
         " verified blobs written before the failure stay, and a re-run does not fetch them again";
}

// Packs first: a bundle whose missing objects would cost more one by one
// than its pack gets them from the pack. Every entry is checked against
// the layer of its digest (size, SHA-256) before it is used; a pack that
// fails a check stops being read, what it delivered before stays (it was
// verified), and the rest is fetched one by one (FetchBlobs).
Status Puller::ReadPacks() {
  for (size_t r = 0; r < packs_.size(); ++r) {
    if (!packs_[r] || (!opts_.use_pack && !packed_[r])) continue;
    uint64_t delivered = 0;
    std::optional<Digest> pack_digest;
    Status ps = ReadPack(r, &delivered, &pack_digest);
    n_from_pack_ += delivered;
    if (!ps.ok() && packed_[r]) {
      report_.http_requests = target_->requests();
      return ps.WithContext("pull from " + url_.str() + " failed (" + StoredNote() + "; a packed bundle's objects of at most 1 MiB " +
                            "have no other copy on the remote than its pack): pack " +
                            (pack_digest ? pack_digest->str() : packs_[r]->digest.str()) + " of " + refs_[r] + " refused");
    }
    if (!ps.ok()) {
      report_.refs[r].warnings.push_back("pack " + (pack_digest ? pack_digest->str() : packs_[r]->digest.str()) +
                                         " refused (" + ps.message() + "); " + std::to_string(delivered) +
                                         " verified objects taken from it, the others fetched one by one");
    }
  }
  report_.http_requests = target_->requests();
  // What a packed bundle's pack should have carried and did not: no other
  // copy to fetch.
  for (size_t r = 0; r < packs_.size(); ++r) {
    if (!packed_[r]) continue;
    for (const Digest& d : ref_layers_[r]) {
      const PullItem& p = items_[item_of_[d]];
      if (!p.present && !p.received && packed_sizes_[r].count(d)) {
        return Status::InvalidInput("pull from " + url_.str() + " failed: the pack of " + refs_[r] + " lacks " + d.str() +
                                    ", which its table of contents lists; " + StoredNote());
      }
    }
  }
  return Status::OK();
}

Status Puller::ReadPack(size_t r, uint64_t* delivered, std::optional<Digest>* pack_digest) {
  uint64_t missing = 0, missing_bytes = 0;
  remote::PackReadLimits limits;
  limits.max_tar_bytes = remote::kPackTrailerMax;
  std::unordered_map<Digest, uint64_t> in_bundle;
  if (packed_[r]) {
    in_bundle = packed_sizes_[r];  // the pack holds the whole bundle's, whatever this pull takes
    for (const auto& [d, size] : in_bundle) limits.max_tar_bytes += remote::PackEntryBytes(size);
  }
  for (const Digest& d : ref_layers_[r]) {
    const PullItem& p = items_[item_of_[d]];
    if (!packed_[r]) {
      in_bundle.emplace(d, p.layer.size);
      limits.max_tar_bytes += remote::PackEntryBytes(p.layer.size);
    } else if (!in_bundle.count(d)) {
      continue;  // a blob of its own
    }
    if (!p.present && !p.received) {
      missing++;
      missing_bytes += p.layer.size;
    }
  }
  if (missing == 0) return Status::OK();  // not even the pack's manifest is asked for
  KI_ASSIGN_OR_RETURN(auto conn, target_->Connect());
  if (packed_[r]) return ReadPackBlob(*conn, r, *pack_blobs_of_[r], in_bundle, limits, delivered, pack_digest);
  remote::FetchedManifest pm;
  if (pack_manifests_[r]) {
    pm = std::move(*pack_manifests_[r]);
  } else {
    KI_ASSIGN_OR_RETURN(pm, conn->GetManifest(packs_[r]->digest.str()));
  }
  if (pm.bytes.size() != packs_[r]->size) {
    return Status::Corruption("its manifest has " + std::to_string(pm.bytes.size()) + " bytes, the index says " +
                              std::to_string(packs_[r]->size));
  }
  KI_ASSIGN_OR_RETURN(remote::PartRef blob, remote::ParsePackManifest(pm.bytes, pm.media_type, opts_));
  if (!PackWorthFetching(blob.size, missing, missing_bytes)) {
    *pack_digest = blob.digest;
    pack_blobs_.push_back(blob.digest);
    return Status::OK();
  }
  return ReadPackBlob(*conn, r, blob, in_bundle, limits, delivered, pack_digest);
}

Status Puller::ReadPackBlob(Conn& conn, size_t r, const remote::PartRef& blob,
                            const std::unordered_map<Digest, uint64_t>& in_bundle, const remote::PackReadLimits& limits,
                            uint64_t* delivered, std::optional<Digest>* pack_digest) {
  (void)r;
  *pack_digest = blob.digest;
  pack_blobs_.push_back(blob.digest);
  KI_ASSIGN_OR_RETURN(std::string pack, conn.GetBlob(blob.digest, blob.size));
  report_.packs_received++;
  report_.pack_bytes_received += pack.size();
  auto expected = [&](const Digest& d) -> std::optional<uint64_t> {
    auto it = in_bundle.find(d);
    if (it == in_bundle.end()) return std::nullopt;
    return it->second;
  };
  return remote::ReadPack(pack, limits, expected, [&](const Digest& d, std::string&& bytes) -> Status {
    auto at = item_of_.find(d);
    if (at == item_of_.end()) return Status::OK();  // not in what this pull takes (one root out of a bundle)
    size_t i = at->second;
    PullItem& p = items_[i];
    if (p.present || p.received) return Status::OK();
    p.bytes = std::move(bytes);
    p.received = p.from_pack = true;
    (*delivered)++;
    progress_->Add(1, p.layer.size);
    if (Completes(i)) ready_.push_back(manifest_of_[i]);
    // Let go of the entry's bytes past the buffer. A store error here
    // refuses the rest of the pack, and the one-by-one fetch meets it
    // again and fails the pull; the entries held stay for the end.
    return Hold(i);
  });
}

Status Puller::FetchBlob(Conn& c, size_t i) {
  PullItem& p = items_[i];
  if (p.streamed) {
    KI_RETURN_IF_ERROR(StreamBlob(c, i));
    p.received = true;
    progress_->Add(1, p.layer.size);
    if (Completes(i)) items_[manifest_of_[i]].prepared = Prepare(manifest_of_[i]);
    return Status::OK();
  }
  KI_ASSIGN_OR_RETURN(p.bytes, c.GetBlob(p.layer.digest, p.layer.size));
  p.received = true;
  progress_->Add(1, p.bytes.size());
  KI_RETURN_IF_ERROR(Hold(i));
  if (Completes(i)) items_[manifest_of_[i]].prepared = Prepare(manifest_of_[i]);
  return Status::OK();
}

// Fetch what is still lacking, in parallel; each blob is checked on
// arrival, and the worker that brings the last piece of a manifest
// prepares it while the others keep downloading. Manifests that packs
// completed are prepared by the same workers once the downloads are done.
Status Puller::FetchBlobs() {
  for (size_t i = 0; i < items_.size(); ++i)
    if (!items_[i].present && !items_[i].received) need_.push_back(i);
  Status st = RunParallel(*target_, opts_.pull_jobs, need_.size() + ready_.size(), [&](Conn& c, size_t k) -> Status {
    if (k >= need_.size()) {
      size_t m = ready_[k - need_.size()];
      items_[m].prepared = Prepare(m);
      return Status::OK();
    }
    return FetchBlob(c, need_[k]);
  });
  report_.http_requests = target_->requests();
  report_.blobs_written_early = written_early_;
  report_.blobs_streamed = streamed_stored_;
  if (!st.ok()) return st.WithContext("pull from " + url_.str() + " failed; " + StoredNote());
  return Status::OK();
}

// A tag that moved meanwhile: what we pulled is the manifest we read
// first, complete and verified; say so.
void Puller::RecheckTags() {
  size_t n_tags = 0;
  for (const std::string& t : tags_) n_tags += !t.empty();
  if (n_tags > opts_.tag_recheck_max) return;
  (void)RunParallel(*target_, opts_.pull_jobs, report_.refs.size(), [&](Conn& c, size_t r) -> Status {
    if (tags_[r].empty()) return Status::OK();
    auto now = c.ResolveTag(tags_[r]);
    if (now.ok() && *now && **now != report_.refs[r].manifest) {
      report_.refs[r].warnings.push_back("the tag " + tags_[r] + " moved during the pull (now " + (*now)->str() +
                                         "); pulled " + report_.refs[r].manifest.str());
    }
    return Status::OK();
  });
}

// Attestations: each (subject, envelope) row is checked as `ki sign
// --envelope` checks an envelope before filing it (CheckEnvelope: its
// shape, its statement, that the statement names the subject, the
// signatures by the keys we know). A faulty one is not stored, neither the
// row nor (unless a sound row files it too) the envelope, and the ref that
// brought it warns: it is a signer's claim that fails, not the transfer,
// and `ki verify` and `ki audit` would otherwise report it as a fault of
// this store from now on.
Status Puller::CheckAttestations() {
  std::vector<AttRow> sound;
  for (AttRow& r : rows_) {
    KI_ASSIGN_OR_RETURN(std::string * bytes, BytesOf(items_[item_of_[r.envelope]]));
    std::string fault = remote::AttestationFault(*bytes, r.envelope, r.subject, opts_.attestation_keys);
    if (!fault.empty()) {
      PulledRef& pr = report_.refs[r.ref];
      pr.attestations--;
      pr.warnings.push_back("attestation " + r.envelope.str() + " of " + r.subject.str() + " not stored: " + fault);
      continue;
    }
    envelopes_filed_.insert(r.envelope);
    sound.push_back(std::move(r));
  }
  rows_ = std::move(sound);
  return Status::OK();
}

// Everything is verified: build the batch. Blobs first, then every
// manifest in one PutEncodedManifests (written table by table in key
// order, as a bulk add does).
Status Puller::StoreAll() {
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  for (PullItem& p : items_) {
    const Layer& l = p.layer;
    if (l.role != remote::Role::kBlob && l.role != remote::Role::kAttestation) continue;
    if (p.present || p.stored) continue;
    if (l.role == remote::Role::kAttestation && !envelopes_filed_.count(l.digest)) continue;  // faulty: warned above
    KI_RETURN_IF_ERROR(batch->PutBlob(p.bytes, l.media_type).status());
  }
  std::vector<EncodedManifest> manifests;
  manifests.reserve(to_store_.size());
  for (size_t i : to_store_) {
    if (!items_[i].prepared.ok()) return items_[i].prepared.WithContext("pull from " + url_.str() + " failed (" + StoredNote() + ")");
    // Every manifest in to_store waits for at least one piece from the
    // remote (the others are in the store already), and whoever brought
    // its last piece prepared it: unprepared means that bookkeeping broke.
    if (!items_[i].encoded) {
      return Status::Corruption("internal error: pulled manifest " + items_[i].layer.digest.str() +
                                " was never checked; " + StoredNote());
    }
    manifests.push_back(std::move(*items_[i].encoded));
    items_[i].encoded.reset();
  }
  KI_RETURN_IF_ERROR(batch->PutEncodedManifests(manifests).status());
  manifests.clear();
  for (const AttRow& r : rows_) KI_RETURN_IF_ERROR(FileAttestationRow(*batch, r.subject, r.envelope, r.value));
  // The registry served manifests naming these blobs: it holds them (a
  // later push to it need not ask), and the tags named those manifests.
  remote::StateUpdate learnt;
  learnt.blobs.push_back(remote::EmptyConfigDigest());
  for (const PullItem& p : items_) learnt.blobs.push_back(p.layer.digest);
  for (const Digest& d : pack_blobs_) learnt.blobs.push_back(d);  // named by a manifest the registry served
  for (size_t r = 0; r < tags_.size(); ++r)
    if (!tags_[r].empty()) learnt.tags.emplace_back(tags_[r], report_.refs[r].manifest);
  KI_RETURN_IF_ERROR(remote::WriteState(*batch, state_, learnt));
  return batch->Commit();
}

void Puller::Count() {
  report_.blobs_received = need_.size() + n_from_pack_;
  report_.blobs_from_pack = n_from_pack_;
  for (const PullItem& p : items_)
    if (p.received) report_.bytes_received += p.layer.size;
  for (size_t r = 0; r < report_.refs.size(); ++r) {
    PulledRef& pr = report_.refs[r];
    for (const Digest& d : ref_layers_[r]) {
      const PullItem& p = items_[item_of_[d]];
      if (p.present) {
        pr.present++;
      } else {
        pr.received++;
        pr.from_pack += p.from_pack;
        pr.bytes_received += p.layer.size;
      }
    }
  }
  report_.http_requests = target_->requests();
}

Result<PullReport> Puller::Run(const std::vector<std::string>& refs) {
  refs_ = refs;
  KI_ASSIGN_OR_RETURN(state_, remote::LoadState(store_, url_));
  KI_ASSIGN_OR_RETURN(target_, remote::OpenTarget(url_, opts_, remote::Access::kPull, EnvOf(store_)));
  KI_RETURN_IF_ERROR(FetchRefs());
  KI_RETURN_IF_ERROR(ResolveNames());
  KI_RETURN_IF_ERROR(FetchParts());
  KI_RETURN_IF_ERROR(FetchTocs());
  KI_RETURN_IF_ERROR(FetchReferrers());
  KI_RETURN_IF_ERROR(Merge());
  PlanManifests();
  KI_RETURN_IF_ERROR(ReadPacks());
  KI_RETURN_IF_ERROR(FetchBlobs());
  RecheckTags();
  KI_RETURN_IF_ERROR(CheckAttestations());
  KI_RETURN_IF_ERROR(StoreAll());
  Count();
  return std::move(report_);
}

}  // namespace

Result<PullReport> Pull(Store& store, const RemoteUrl& url, const std::vector<std::string>& refs,
                        const TransferOptions& opts) {
  Puller puller(store, url, opts);
  return puller.Run(refs);
}

}  // namespace ki
