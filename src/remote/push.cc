// Push (remote.h): the order of operations that makes a failed push
// invisible, one method per phase of Pusher::Run:
//
// CollectClosures (every ref's closure) -> PlanBundle (a bundle's union
// and its parts, refused before anything is sent when too many) ->
// PlanBlobs (unique blobs the registry is not known to hold) -> StartPack
// (a bundle's pack is built meanwhile, unless remote.state knows the pack
// of the same objects under the same tag) -> UploadBlobs (HEAD, upload
// what is missing; N workers, one connection each) -> PrepareBundle (the
// pack and the index that names it) -> WriteBundle (the pack blob, parts,
// pack manifest, then the index) or WriteClosures (image
// manifests under their tags, attestation referrers and the sha256-<hex>
// fallback index). The manifests go last: a tag never names a manifest
// whose blobs are absent.
//
// Blobs over TransferOptions::stream_above are never held whole: they are
// read from the store into the upload by the store's blob reader, which
// curl pulls from (StoredBlob).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "json/fields.h"
#include "ki/generation.h"
#include "ki/json.h"
#include "ki/store_env.h"
#include "remote/listing.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/state.h"
#include "remote/stream.h"
#include "remote/target.h"
#include "remote/transfer.h"
#include "ki/utc.h"

namespace ki {

using remote::Closure;
using remote::Conn;
using remote::Layer;
using remote::PackRow;
using remote::RunParallel;
using remote::Target;

namespace {

// What a streamed upload counts against TransferOptions::push_buffer_bytes:
// its reader's input buffer, zstd's output buffer and window, and curl's
// own buffer, a few MiB whatever the object's size.
constexpr uint64_t kStreamedHold = 4 << 20;

// What a failed push tells the user to do next: run it again where that
// can help (a dropped connection, a registry error, a time limit), and
// where it cannot (Target::FailedForGood), only that a run after the fix
// picks up where this one stopped.
std::string RerunAdvice(const Target& target, const char* what) {
  if (target.FailedForGood()) return std::string("once what follows is fixed, the same ki push will ") + what + " from there";
  return std::string("run the same ki push again to ") + what;
}

// Adds `desc` to the sha256-<hex> index of `subject` (the referrers tag
// schema of the distribution-spec, for registries without the API).
Status AddToFallbackIndex(Conn& conn, const Digest& subject, const Json& desc, const TransferOptions& opts) {
  std::string tag = remote::FallbackTag(subject);
  Json index = {{"schemaVersion", 2}, {"mediaType", remote::kOciIndexType}, {"manifests", Json::array()}};
  auto cur = conn.GetManifest(tag);
  if (cur.ok()) {
    ParseLimits limits;
    limits.max_bytes = opts.max_manifest_size;
    auto j = ParseDocument(cur->bytes, DocFormat::kJson, tag, limits);
    if (j.ok() && j->is_object() && j->contains("manifests") && (*j)["manifests"].is_array()) index = std::move(*j);
  } else if (!cur.status().IsNotFound()) {
    return cur.status();
  }
  for (const Json& m : index["manifests"])
    if (StringOr(m, "digest") == desc["digest"]) return Status::OK();
  index["manifests"].push_back(desc);
  return conn.PutManifest(tag, index.dump(), remote::kOciIndexType, nullptr);
}

// SHA-256 over fields, each prefixed by its length (8 bytes little-endian),
// so that no two lists of fields hash alike: the keys of remote.state's
// 'i' and 'u' rows (docs/format.md, "Remote state").
class FieldHash {
 public:
  void Put(std::string_view field) {
    const uint64_t n = field.size();
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = char(n >> (8 * i));
    h_.Update(std::string_view(len, 8));
    h_.Update(field);
  }
  Digest Finish() { return h_.Finish(); }

 private:
  Sha256 h_;
};

// A bundle's pack (pack.h): every object of `layers` up to kPackEntryMax,
// in layer order, read (and so re-hashed) from the store.
Result<std::string> BuildPack(Store& store, const std::vector<Layer>& layers, uint64_t* objects) {
  uint64_t tar_bytes = 1024;
  for (const Layer& l : layers)
    if (l.size <= remote::kPackEntryMax) tar_bytes += remote::PackEntryBytes(l.size);
  remote::PackWriter pack(tar_bytes);
  for (const Layer& l : layers) {
    if (l.size > remote::kPackEntryMax) continue;
    KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(l.digest));
    if (bytes.size() != l.size) {
      return Status::Corruption(l.digest.str() + " has " + std::to_string(bytes.size()) + " bytes, the store said " +
                                std::to_string(l.size));
    }
    KI_RETURN_IF_ERROR(pack.Add(l.digest, bytes));
  }
  *objects = pack.entries();
  return pack.Finish();
}

// The key of the pack BuildPack makes of `layers` (pack.h, PackKey).
Digest PackKeyOf(const std::vector<Layer>& layers) {
  remote::PackKey key;
  for (const Layer& l : layers)
    if (l.size <= remote::kPackEntryMax) key.Add(l.digest, l.size);
  return key.Finish();
}

class Pusher {
 public:
  Pusher(Store& store, const RemoteUrl& url, const TransferOptions& opts) : store_(store), url_(url), opts_(opts) {}
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  using Named = std::vector<std::pair<std::string, Digest>>;  // (ref as named, root)

  Result<PushReport> Run(const std::vector<std::string>& refs);
  // Every object as a root of the bundle (PushAll).
  Result<PushReport> RunAll();

 private:
  struct Item {
    Digest digest;
    uint64_t size;
  };

  bool bundle() const { return !opts_.bundle_tag.empty(); }
  // A packed bundle (format 2): objects of at most kPackEntryMax bytes
  // travel only in the pack, described by the table of contents.
  bool packed() const { return bundle() && opts_.use_pack && opts_.bundle_format >= 2; }
  std::vector<std::vector<uint32_t>> ClosureIndices() const;
  Digest BundleKey() const;
  Status BuildToc();
  Status CheckBundleTag() const;
  // Each ref resolved, in order, a root named twice kept once.
  Result<Named> ResolveRoots(const std::vector<std::string>& refs);
  // PushAll's roots: every object but the documents a manifest links.
  Result<Named> AllRoots();
  Result<PushReport> RunNamed(const Named& named);
  // What decides a bundle besides the objects (remote.state's 'u' row):
  // whether it is every object, the refs as named, their roots, and the
  // options that shape it.
  Digest UnchangedKey(const Named& named) const;
  // The bundle pushed last, while nothing was committed to the store since
  // and its tag still names it: the report such a push would give, from
  // remote.state's 'u' row, after one HEAD. False: push as usual.
  Result<bool> TryUnchanged(const Named& named);
  Status CollectClosures(const Named& named);
  Status PlanBundle();
  void PlanBlobs();
  void StartPack();
  Status UploadBlobs();
  Status PrepareBundle();
  Status WriteBundle();
  Status WriteClosures();
  Status WriteClosure(Conn& conn, size_t r);
  // Adds what this push wrote to the remote's listing (listing.h), when it
  // wrote a tag.
  Status WriteListing();

  // Uploads item i (read from the store, streamed when large).
  Status Upload(Conn& conn, size_t i);
  // Re-checks a closure whose manifest the registry refused although
  // remote.state said it held every blob (a registry wiped or
  // garbage-collected since): HEAD each, upload what is gone. True when
  // something was missing.
  Result<bool> Recheck(Conn& conn, const std::vector<Layer>& layers);
  // PUT a manifest under `ref`; if refused and the closure relied on
  // remote.state, re-check its blobs and try once more.
  Status PutImageManifest(Conn& conn, const std::vector<Layer>& layers, const std::string& ref,
                          const std::string& manifest);
  // remote.state is a cache: failing to write it loses requests, not data.
  void SaveState();
  void CountSent();
  void RecordUnchanged();

  // A bundle's pack and index.
  void SetPack(const PackRow& p, bool built);
  Status TakeBuiltPack();  // the pack once built: named by the index, and recorded for the next push
  void ComposeIndex();
  Result<bool> TagNamesIndex(Conn& conn);  // written before (remote.state), and a HEAD says the tag still names it
  Status WriteBundleManifests();

  Store& store_;
  const RemoteUrl& url_;
  const TransferOptions& opts_;
  PushReport report_;
  std::vector<Closure> closures_;
  // A bundle: the union of the closures, each object once, in closure
  // order, and the parts that list it.
  std::vector<Layer> all_;
  std::vector<Layer> loose_;  // packed: the objects that travel as blobs of their own (the parts list them)
  std::vector<std::string> parts_;
  std::string toc_bytes_;     // packed: the table of contents, compressed ("" until built)
  remote::PartRef toc_ref_;   // its digest and size (from remote.state's 'i' row until built)
  Digest bundle_key_;         // packed: BundleKey()
  PackRow pack_row_;          // what SetPack was given
  bool pack_built_ = false;
  remote::RemoteState state_;
  remote::StateUpdate learnt_;
  Digest unchanged_key_;                   // UnchangedKey of this push's refs
  bool every_object_ = false;              // PushAll
  bool tried_unchanged_ = false;           // TryUnchanged asked already (one HEAD a push)
  std::optional<uint64_t> start_generation_;  // the store's, before any closure was read
  std::unique_ptr<Target> target_;

  // Unique blobs over every closure, the empty config first.
  std::vector<Item> items_;
  std::unordered_map<Digest, size_t> index_of_;
  std::vector<uint8_t> sent_;
  std::vector<size_t> todo_;  // items the registry is not known to hold
  std::mutex recheck_mu_;     // items' `sent` flags are shared by closures

  std::atomic<uint64_t> bytes_up_{0}, n_streamed_{0}, n_sent_{0}, n_unasked_{0}, n_checked_{0};
  std::atomic<int> miss_streak_{0};
  std::atomic<size_t> written_{0};
  std::atomic<bool> tag_written_{false};  // a manifest was put under a tag (the listing may need the row)
  // Object bytes read for upload at once (push_buffer_bytes): a worker waits
  // before reading an object that would pass the budget; one larger than
  // the budget goes when nothing else is in flight.
  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  uint64_t in_flight_ = 0;

  // The bundle's pack, index and the pack's manifest.
  Digest pack_key_;
  std::optional<PackRow> known_pack_;
  std::optional<Result<std::string>> pack_bytes_;
  uint64_t pack_objects_ = 0;
  std::string pack_manifest_, index_;
  Digest index_digest_;
  // Declared last, so that it is joined before what it reads goes away.
  std::jthread packer_;
};

Result<Pusher::Named> Pusher::ResolveRoots(const std::vector<std::string>& refs) {
  Named out;
  std::unordered_set<Digest> roots;
  for (const auto& ref : refs) {
    KI_ASSIGN_OR_RETURN(Digest root, store_.Resolve(ref));
    if (roots.insert(root).second) out.emplace_back(ref, root);  // named twice: pushed once
  }
  return out;
}

Result<Pusher::Named> Pusher::AllRoots() {
  // Documents travel as their manifests' documents: sent as roots of
  // their own they would arrive as plain blobs, unlinked, and their
  // manifests without their names. A document no manifest links (a second
  // name's) is a root like any blob. The store says which document a
  // manifest links (DocumentOf); asked after the scan, not inside it.
  std::vector<ObjectInfo> all;
  KI_RETURN_IF_ERROR(store_.ForEachObject([&](const ObjectInfo& info) {
    all.push_back(info);
    return true;
  }));
  std::unordered_set<Digest> linked;
  for (const ObjectInfo& info : all) {
    if (info.type != ObjectType::kManifest) continue;
    KI_ASSIGN_OR_RETURN(std::optional<Digest> doc, store_.DocumentOf(info.digest));
    if (doc) linked.insert(*doc);
  }
  Named out;
  for (const ObjectInfo& info : all) {
    if (!linked.count(info.digest)) out.emplace_back(info.digest.str(), info.digest);
  }
  return out;
}

Digest Pusher::UnchangedKey(const Named& named) const {
  FieldHash h;
  h.Put("ki.push-unchanged/2");
  h.Put(every_object_ ? "every object" : "refs");
  h.Put(opts_.bundle_tag);
  h.Put(std::to_string(opts_.bundle_format));
  h.Put(opts_.use_pack ? "pack" : "no pack");
  h.Put(std::to_string(opts_.bundle_part_bytes));
  h.Put(std::to_string(opts_.max_layers));
  h.Put(opts_.digest_tags ? "digest tags" : "");
  for (const auto& [ref, root] : named) {
    h.Put(ref);
    h.Put(root.raw());
  }
  return h.Finish();
}

Result<bool> Pusher::TryUnchanged(const Named& named) {
  tried_unchanged_ = true;
  KI_ASSIGN_OR_RETURN(uint64_t generation, StoreGeneration(store_));
  KI_ASSIGN_OR_RETURN(auto row, remote::LoadUnchanged(store_, url_, opts_.bundle_tag));
  if (!row || row->generation != generation) return false;
  if (UnchangedKey(named) != row->key || named.size() != row->refs.size()) return false;
  KI_ASSIGN_OR_RETURN(target_, remote::OpenTarget(url_, opts_, remote::Access::kPush, EnvOf(store_)));
  KI_ASSIGN_OR_RETURN(auto conn, target_->Connect());
  KI_ASSIGN_OR_RETURN(auto now, conn->ResolveTag(opts_.bundle_tag));
  conn.reset();
  if (!now || *now != row->index) return false;  // the tag moved: push as usual
  for (const auto& r : row->refs) {
    PushedRef pr;
    pr.ref = r.ref.empty() ? r.root.str() : r.ref;
    pr.root = r.root;
    pr.tag = opts_.bundle_tag;
    pr.manifest = row->index;
    pr.objects = pr.skipped = r.objects;
    pr.attestations = r.attestations;
    report_.refs.push_back(std::move(pr));
  }
  report_.blobs_known = row->unique_blobs;
  report_.pack = row->pack;
  KI_RETURN_IF_ERROR(target_->Finish());
  report_.http_requests = target_->requests();
  return true;
}

Status Pusher::CollectClosures(const Named& named) {
  remote::ClosureCache cache;
  unchanged_key_ = UnchangedKey(named);
  for (const auto& [ref, root] : named) {
    KI_ASSIGN_OR_RETURN(Closure c, remote::CollectClosure(store_, root, ref, &cache));
    PushedRef pr;
    pr.ref = ref;
    pr.root = root;
    pr.tag = c.name.empty() ? "ki-" + root.hex() : SanitizeTag(c.name);
    pr.objects = c.layers.size();
    for (const Layer& l : c.layers) pr.attestations += l.role == remote::Role::kAttestation;
    report_.refs.push_back(std::move(pr));
    closures_.push_back(std::move(c));
  }
  return Status::OK();
}

Status Pusher::PlanBundle() {
  if (!bundle()) return Status::OK();
  std::unordered_set<Digest> in_bundle;
  for (const Closure& c : closures_)
    for (const Layer& l : c.layers)
      if (in_bundle.insert(l.digest).second) all_.push_back(l);
  if (packed()) {
    for (const Layer& l : all_)
      if (l.size > remote::kPackEntryMax) loose_.push_back(l);
    parts_ = remote::BundleParts(loose_, opts_.bundle_part_bytes, true);
  } else {
    parts_ = remote::BundleParts(all_, opts_.bundle_part_bytes);
  }
  if (parts_.size() > remote::kBundleMaxParts) {
    return Status::InvalidInput("the bundle " + opts_.bundle_tag + " would need " + std::to_string(parts_.size()) +
                                " parts of at most " + std::to_string(opts_.bundle_part_bytes) + " bytes, more than the " +
                                std::to_string(remote::kBundleMaxParts) + " a bundle may have; nothing was sent");
  }
  if (packed()) bundle_key_ = BundleKey();
  return Status::OK();
}

// Every root's closure as indices into all_ (the root's own first).
std::vector<std::vector<uint32_t>> Pusher::ClosureIndices() const {
  std::unordered_map<Digest, uint32_t> at;
  for (const Layer& l : all_) at.emplace(l.digest, uint32_t(at.size()));
  std::vector<std::vector<uint32_t>> out;
  for (const Closure& c : closures_) {
    std::vector<uint32_t> k;
    k.reserve(c.layers.size());
    k.push_back(at[c.root]);
    for (const Layer& l : c.layers)
      if (l.digest != c.root) k.push_back(at[l.digest]);
    out.push_back(std::move(k));
  }
  return out;
}

// What the table of contents is made of, hashed: every field of every
// object's descriptor and every root's name, kind and closure, each
// length-prefixed. Equal keys give the same table (remote.state's 'i' row).
Digest Pusher::BundleKey() const {
  FieldHash h;
  h.Put("ki.toc/1");
  for (const Layer& l : all_) {
    h.Put(l.digest.raw());
    h.Put(std::to_string(l.size));
    h.Put(remote::RoleName(l.role));
    h.Put(l.media_type);
    h.Put(l.kind ? KindName(*l.kind) : "");
    h.Put(l.document_of ? l.document_of->raw() : "");
    h.Put(l.subject ? l.subject->raw() : "");
    h.Put(l.index_value);
    h.Put(l.title);
  }
  const auto closures = ClosureIndices();
  for (size_t r = 0; r < closures_.size(); ++r) {
    h.Put(closures_[r].root.raw());
    h.Put(closures_[r].name);
    h.Put(closures_[r].root_kind ? KindName(*closures_[r].root_kind) : "");
    std::string k;
    for (uint32_t i : closures[r]) k.append(reinterpret_cast<const char*>(&i), 4);
    h.Put(k);
  }
  return h.Finish();
}

// The table of contents: every object, and every root's closure as
// indices into them (a pull of one root reads only its closure).
Status Pusher::BuildToc() {
  remote::BundleToc toc;
  const auto closures = ClosureIndices();
  for (size_t r = 0; r < closures_.size(); ++r) {
    remote::TocRoot t;
    t.digest = closures_[r].root;
    t.name = closures_[r].name;
    t.kind = closures_[r].root_kind;
    t.closure = closures[r];
    toc.roots.push_back(std::move(t));
  }
  toc.objects = all_;
  KI_ASSIGN_OR_RETURN(toc_bytes_, remote::CompressToc(remote::TocJson(toc)));
  toc_ref_ = remote::PartRef{Sha256Of(toc_bytes_), toc_bytes_.size()};
  learnt_.Bundle(opts_.bundle_tag, remote::BundleRow{bundle_key_, toc_ref_.digest, toc_ref_.size});
  return Status::OK();
}

void Pusher::PlanBlobs() {
  items_.push_back({remote::EmptyConfigDigest(), 2});
  std::unordered_set<Digest> seen{remote::EmptyConfigDigest()};
  for (const Closure& c : closures_)
    for (const Layer& l : c.layers)
      if ((!packed() || l.size > remote::kPackEntryMax) && seen.insert(l.digest).second) items_.push_back({l.digest, l.size});
  sent_.assign(items_.size(), 0);
  for (size_t i = 0; i < items_.size(); ++i) {
    index_of_[items_[i].digest] = i;
    if (state_.blobs.count(items_[i].digest)) report_.blobs_known++;
    else todo_.push_back(i);
  }
}

// A bundle's pack is built while the blobs upload: reading and compressing
// every object is CPU, the uploads mostly wait on the registry. Unless
// remote.state has the pack of these very objects: then it is built only
// if the tag turns out not to name this bundle any more.
void Pusher::StartPack() {
  if (all_.empty() || !opts_.use_pack) return;
  pack_key_ = PackKeyOf(all_);
  auto it = state_.packs.find(opts_.bundle_tag);
  if (it != state_.packs.end() && it->second.key == pack_key_) known_pack_ = it->second;
  else packer_ = std::jthread([this] { pack_bytes_ = BuildPack(store_, all_, &pack_objects_); });
}

Status Pusher::Upload(Conn& conn, size_t i) {
  const bool streamed = i != 0 && items_[i].size > opts_.stream_above;
  // A streamed object holds its reader's buffers, not itself.
  const uint64_t n = streamed ? std::min<uint64_t>(items_[i].size, kStreamedHold) : items_[i].size;
  {
    std::unique_lock<std::mutex> l(flight_mu_);
    flight_cv_.wait(l, [&] { return in_flight_ == 0 || in_flight_ + n <= opts_.push_buffer_bytes; });
    in_flight_ += n;
    report_.peak_bytes_in_flight = std::max(report_.peak_bytes_in_flight, in_flight_);
  }
  struct Landed {  // gives the budget back on every path out
    Pusher* p;
    uint64_t n;
    ~Landed() {
      std::lock_guard<std::mutex> l(p->flight_mu_);
      p->in_flight_ -= n;
      p->flight_cv_.notify_all();
    }
  } landed{this, n};
  if (streamed) {
    // The reader re-hashes as it reads: what we upload is what the digest names.
    remote::StoredBlob source(store_, items_[i].digest);
    KI_RETURN_IF_ERROR(conn.PutBlobFrom(items_[i].digest, items_[i].size, source));
    bytes_up_ += items_[i].size;
    n_streamed_++;
    sent_[i] = 1;
    learnt_.Blob(items_[i].digest);
    return Status::OK();
  }
  std::string bytes;
  if (i == 0) {
    bytes = std::string(remote::EmptyConfig());
  } else {
    // Read re-hashes: what we upload is what the digest names.
    KI_ASSIGN_OR_RETURN(bytes, store_.Read(items_[i].digest));
  }
  KI_RETURN_IF_ERROR(conn.PutBlob(items_[i].digest, bytes));
  bytes_up_ += bytes.size();
  sent_[i] = 1;
  learnt_.Blob(items_[i].digest);
  return Status::OK();
}

Status Pusher::UploadBlobs() {
  remote::Progress progress(opts_, items_.size());
  if (report_.blobs_known) progress.Add(report_.blobs_known, 0);
  Status st = RunParallel(*target_, opts_.push_jobs, todo_.size(), [&](Conn& conn, size_t k) -> Status {
    size_t i = todo_[k];
    const Item& it = items_[i];
    // A HEAD costs a request and saves two (POST + PUT) only when it hits:
    // once they keep missing, ask only one blob in head_sample.
    bool blind = opts_.blind_after_misses > 0 && miss_streak_.load() >= opts_.blind_after_misses &&
                 (opts_.head_sample <= 0 || k % size_t(opts_.head_sample) != 0);
    if (!blind) {
      n_checked_++;
      KI_ASSIGN_OR_RETURN(bool has, conn.HasBlob(it.digest, it.size));
      if (has) {
        miss_streak_ = 0;
        learnt_.Blob(it.digest);
        progress.Add(1, 0);
        return Status::OK();
      }
      miss_streak_++;
    } else {
      n_unasked_++;
    }
    KI_RETURN_IF_ERROR(Upload(conn, i));
    n_sent_++;
    progress.Add(1, it.size);
    return Status::OK();
  });
  report_.blobs_checked = n_checked_;
  report_.blobs_sent = n_sent_;
  report_.blobs_sent_unasked = n_unasked_;
  report_.http_requests = target_->requests();
  if (!st.ok()) {
    (void)target_->Finish();  // a layout keeps the blobs it got, so a re-run resumes
    SaveState();              // and a registry's re-run skips what was uploaded
    return st.WithContext("push to " + url_.str() + " is incomplete: " + std::to_string(n_sent_.load()) +
                          " objects were uploaded and no manifest or tag was written; " + RerunAdvice(*target_, "resume"));
  }
  return Status::OK();
}

Result<bool> Pusher::Recheck(Conn& conn, const std::vector<Layer>& layers) {
  bool missing = false;
  std::vector<size_t> idx{0};
  for (const Layer& l : layers) idx.push_back(index_of_[l.digest]);
  for (size_t i : idx) {
    if (!state_.blobs.count(items_[i].digest)) continue;  // checked or sent by this push
    KI_ASSIGN_OR_RETURN(bool has, conn.HasBlob(items_[i].digest, items_[i].size));
    if (has) continue;
    missing = true;
    learnt_.Gone(items_[i].digest);
    std::lock_guard<std::mutex> l(recheck_mu_);
    if (!sent_[i]) KI_RETURN_IF_ERROR(Upload(conn, i));
  }
  return missing;
}

Status Pusher::PutImageManifest(Conn& conn, const std::vector<Layer>& layers, const std::string& ref,
                                const std::string& manifest) {
  Status put = conn.PutManifest(ref, manifest, remote::kOciManifestType, nullptr);
  if (put.ok() || state_.blobs.empty()) return put;
  KI_ASSIGN_OR_RETURN(bool missing, Recheck(conn, layers));
  if (!missing) return put;
  return conn.PutManifest(ref, manifest, remote::kOciManifestType, nullptr);
}

void Pusher::SaveState() {
  if (!state_.enabled) return;
  Status st = [&]() -> Status {
    KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
    if (learnt_.unchanged) {
      // The row holds only if nothing was committed between the closures'
      // reads and this commit (another process's ki add of an attestation
      // would otherwise be missed by the next push): else it is written
      // with a generation no store reaches, retiring the row before it.
      KI_ASSIGN_OR_RETURN(uint64_t g, BatchGeneration(*batch));
      learnt_.unchanged->second.generation =
          start_generation_ && g == *start_generation_ + 1 ? g : std::numeric_limits<uint64_t>::max();
    }
    KI_RETURN_IF_ERROR(remote::WriteState(*batch, state_, learnt_));
    return batch->Commit();
  }();
  if (!st.ok()) report_.warnings.push_back("could not record what " + url_.str() + " holds: " + st.message());
}

void Pusher::CountSent() {
  for (size_t r = 0; r < closures_.size(); ++r) {
    PushedRef& pr = report_.refs[r];
    pr.sent = pr.skipped = pr.bytes_sent = 0;
    for (const Layer& l : closures_[r].layers) {
      auto it = index_of_.find(l.digest);
      // A packed object was sent when its pack was.
      bool sent = it == index_of_.end() ? report_.pack && report_.pack->sent : sent_[it->second];
      if (sent) {
        pr.sent++;
        pr.bytes_sent += l.size;
      } else {
        pr.skipped++;
      }
    }
  }
}

void Pusher::SetPack(const PackRow& p, bool built) {
  pack_row_ = p;
  pack_built_ = built;
  report_.pack.reset();
  pack_manifest_.clear();
  if (p.objects == 0 && !packed()) return;  // no object small enough: no pack
  report_.pack = PushReport::Pack{p.digest, p.size, p.objects, false, built};
  pack_manifest_ = remote::PackManifest(p.digest, p.size, p.objects, packed() ? &toc_ref_ : nullptr);
}

Status Pusher::TakeBuiltPack() {
  if (packer_.joinable()) packer_.join();
  if (!pack_bytes_) return Status::OK();  // use_pack off, or nothing in the bundle
  KI_RETURN_IF_ERROR(pack_bytes_->status());
  PackRow row{pack_key_, Sha256Of(**pack_bytes_), (*pack_bytes_)->size(), pack_objects_};
  learnt_.Pack(opts_.bundle_tag, row);
  SetPack(row, true);
  return Status::OK();
}

void Pusher::ComposeIndex() {
  index_ = remote::BundleIndex(parts_, closures_.size(), report_.pack ? &pack_manifest_ : nullptr, packed());
  index_digest_ = Sha256Of(index_);
  for (PushedRef& pr : report_.refs) {
    pr.tag = opts_.bundle_tag;
    pr.manifest = index_digest_;
  }
}

Result<bool> Pusher::TagNamesIndex(Conn& conn) {
  auto known = state_.tags.find(opts_.bundle_tag);
  if (known == state_.tags.end() || known->second != index_digest_) return false;
  KI_ASSIGN_OR_RETURN(auto now, conn.ResolveTag(opts_.bundle_tag));
  return now && *now == index_digest_;
}

// The bundle's pack (known from remote.state, or built by StartPack's
// thread) and the index that names it, before any manifest is written.
Status Pusher::PrepareBundle() {
  if (packed()) {
    auto row = state_.bundles.find(opts_.bundle_tag);
    if (row != state_.bundles.end() && row->second.key == bundle_key_) {
      toc_ref_ = remote::PartRef{row->second.toc, row->second.toc_size};
    } else {
      KI_RETURN_IF_ERROR(BuildToc());
    }
  }
  if (known_pack_) {
    SetPack(*known_pack_, false);
  } else if (Status built = TakeBuiltPack(); !built.ok()) {
    (void)target_->Finish();
    SaveState();
    return built.WithContext("push to " + url_.str() + " is incomplete: every object was uploaded, "
                             "but the bundle's pack could not be built (no manifest was written)");
  }
  ComposeIndex();
  return Status::OK();
}

// One bundle: its parts, its pack (blob, then the manifest naming it),
// then the index under the tag (last, as a closure manifest is).
Status Pusher::WriteBundle() {
  Status st = WriteBundleManifests();
  if (st.ok()) written_ = closures_.size();
  return st;
}

Status Pusher::WriteBundleManifests() {
  KI_ASSIGN_OR_RETURN(auto conn, target_->Connect());
  KI_ASSIGN_OR_RETURN(bool unchanged, TagNamesIndex(*conn));
  if (unchanged) return Status::OK();
  if (packed() && toc_bytes_.empty()) {
    // remote.state's 'i' row composed the index; what is written is built.
    KI_RETURN_IF_ERROR(BuildToc());
    SetPack(pack_row_, pack_built_);
    ComposeIndex();
    KI_ASSIGN_OR_RETURN(unchanged, TagNamesIndex(*conn));
    if (unchanged) return Status::OK();
  }
  if (known_pack_) {
    // remote.state's row only recognises a bundle the registry holds:
    // an index is written only with a pack built from the objects.
    known_pack_.reset();
    pack_bytes_ = BuildPack(store_, all_, &pack_objects_);
    KI_RETURN_IF_ERROR(TakeBuiltPack().WithContext("the bundle's pack could not be built"));
    ComposeIndex();
    KI_ASSIGN_OR_RETURN(unchanged, TagNamesIndex(*conn));
    if (unchanged) return Status::OK();
  }
  if (report_.pack) {
    // The pack blob: asked about first (a re-push of a bundle whose
    // index changed keeps the same pack when its objects did not).
    KI_ASSIGN_OR_RETURN(bool has, conn->HasBlob(report_.pack->digest, report_.pack->size));
    if (!has) {
      KI_RETURN_IF_ERROR(conn->PutBlob(report_.pack->digest, **pack_bytes_));
      report_.pack->sent = true;
    }
    pack_bytes_.reset();
    if (packed()) {
      // Its table of contents, as the pack.
      KI_ASSIGN_OR_RETURN(bool has_toc, conn->HasBlob(toc_ref_.digest, toc_ref_.size));
      if (!has_toc) KI_RETURN_IF_ERROR(conn->PutBlob(toc_ref_.digest, toc_bytes_));
      learnt_.Blob(toc_ref_.digest);
    }
    learnt_.Blob(report_.pack->digest);
  }
  conn.reset();
  // Parts by digest; each part's layers are the slice it lists.
  const std::vector<Layer>& listed = packed() ? loose_ : all_;
  std::vector<std::vector<Layer>> part_layers(parts_.size());
  for (size_t p = 0, next = 0; p < parts_.size(); ++p) {
    size_t n = Json::parse(parts_[p])["layers"].size();
    part_layers[p].assign(listed.begin() + next, listed.begin() + next + n);
    next += n;
  }
  KI_RETURN_IF_ERROR(RunParallel(*target_, opts_.push_jobs, parts_.size(), [&](Conn& c, size_t p) -> Status {
    return PutImageManifest(c, part_layers[p], Sha256Of(parts_[p]).str(), parts_[p]);
  }));
  KI_ASSIGN_OR_RETURN(conn, target_->Connect());
  if (report_.pack) {
    KI_RETURN_IF_ERROR(conn->PutManifest(Sha256Of(pack_manifest_).str(), pack_manifest_, remote::kOciManifestType, nullptr));
  }
  KI_RETURN_IF_ERROR(conn->PutManifest(opts_.bundle_tag, index_, remote::kOciIndexType, nullptr));
  learnt_.Tag(opts_.bundle_tag, index_digest_);
  tag_written_ = true;
  return Status::OK();
}

// Manifests last, in parallel too (thousands of records per push).
Status Pusher::WriteClosures() {
  return RunParallel(*target_, opts_.push_jobs, closures_.size(), [&](Conn& conn, size_t r) { return WriteClosure(conn, r); });
}

Status Pusher::WriteClosure(Conn& conn, size_t r) {
  PushedRef& pr = report_.refs[r];
  std::string manifest = remote::ImageManifest(closures_[r]);
  pr.manifest = Sha256Of(manifest);
  std::vector<std::string> tags{pr.tag};
  // `ki pull REMOTE <ki digest>` finds a named root through this tag.
  std::string digest_tag = "ki-" + pr.root.hex();
  if (opts_.digest_tags && pr.tag != digest_tag) tags.push_back(digest_tag);
  for (const std::string& tag : tags) {
    auto known = state_.tags.find(tag);
    if (known != state_.tags.end() && known->second == pr.manifest) {
      // Written before: a HEAD confirms it still is (tags move).
      KI_ASSIGN_OR_RETURN(auto now, conn.ResolveTag(tag));
      if (now && *now == pr.manifest) continue;
    }
    KI_RETURN_IF_ERROR(PutImageManifest(conn, closures_[r].layers, tag, manifest));
    learnt_.Tag(tag, pr.manifest);
    tag_written_ = true;
  }
  for (const Layer& l : closures_[r].layers) {
    if (l.role != remote::Role::kAttestation) continue;
    std::string ref_manifest = remote::AttestationManifest(l, pr.manifest, manifest.size());
    Digest rd = Sha256Of(ref_manifest);
    if (state_.referrers.count(rd)) continue;
    bool indexed = false;
    KI_RETURN_IF_ERROR(conn.PutManifest(rd.str(), ref_manifest, remote::kOciManifestType, &indexed));
    if (!indexed) {
      // Roots are distinct, so no two workers update one subject's index.
      Json desc = {{"mediaType", remote::kOciManifestType},
                   {"digest", rd.str()},
                   {"size", ref_manifest.size()},
                   {"artifactType", kDsseMediaType},
                   {"annotations", {{std::string(kAnnSubject), l.subject->str()}}}};
      KI_RETURN_IF_ERROR(AddToFallbackIndex(conn, pr.manifest, desc, opts_));
    }
    learnt_.Referrer(rd);
  }
  written_++;
  return Status::OK();
}

Status Pusher::WriteListing() {
  if (!tag_written_) return Status::OK();
  std::vector<RemoteEntry> rows;
  const std::string now = UtcNow();
  if (bundle()) {
    RemoteEntry e;
    e.tag = opts_.bundle_tag;
    e.manifest = index_digest_;
    e.bundle = true;
    e.roots = closures_.size();
    e.pushed_at = now;
    rows.push_back(std::move(e));
  } else {
    for (size_t r = 0; r < closures_.size(); ++r) {
      RemoteEntry e;
      e.tag = report_.refs[r].tag;
      e.manifest = report_.refs[r].manifest;
      e.root = closures_[r].root;
      e.name = closures_[r].name;
      if (closures_[r].root_kind) e.kind = std::string(KindName(*closures_[r].root_kind));
      e.pushed_at = now;
      rows.push_back(std::move(e));
    }
  }
  KI_ASSIGN_OR_RETURN(auto conn, target_->Connect());
  return remote::UpdateListing(*conn, std::move(rows), opts_);
}

Status Pusher::CheckBundleTag() const {
  if (bundle() && !IsValidTag(opts_.bundle_tag)) {
    return Status::Usage("'" + opts_.bundle_tag + "' is not a valid OCI tag");
  }
  return Status::OK();
}

Result<PushReport> Pusher::Run(const std::vector<std::string>& refs) {
  KI_RETURN_IF_ERROR(CheckBundleTag());
  KI_ASSIGN_OR_RETURN(Named named, ResolveRoots(refs));
  return RunNamed(named);
}

Result<PushReport> Pusher::RunAll() {
  if (!bundle()) return Status::Usage("pushing every object needs a bundle tag (--bundle TAG)");
  KI_RETURN_IF_ERROR(CheckBundleTag());
  every_object_ = true;
  // Unchanged since the last such push: the 'u' row's roots are the
  // store's, and the store is not scanned at all.
  if (opts_.use_remote_state && url_.scheme == RemoteUrl::Scheme::kRegistry) {
    KI_ASSIGN_OR_RETURN(uint64_t generation, StoreGeneration(store_));
    KI_ASSIGN_OR_RETURN(auto row, remote::LoadUnchanged(store_, url_, opts_.bundle_tag));
    if (row && row->generation == generation) {
      Named named;
      for (const auto& r : row->refs) named.emplace_back(r.ref.empty() ? r.root.str() : r.ref, r.root);
      KI_ASSIGN_OR_RETURN(bool unchanged, TryUnchanged(named));
      if (unchanged) return std::move(report_);
      report_ = PushReport();
    }
  }
  KI_ASSIGN_OR_RETURN(Named named, AllRoots());
  if (named.empty()) return Status::NotFound("the store holds no objects to push");
  return RunNamed(named);
}

Result<PushReport> Pusher::RunNamed(const Named& named) {
  if (bundle() && opts_.use_remote_state && url_.scheme == RemoteUrl::Scheme::kRegistry && !tried_unchanged_) {
    KI_ASSIGN_OR_RETURN(bool unchanged, TryUnchanged(named));
    if (unchanged) return std::move(report_);
    report_ = PushReport();
  }
  KI_ASSIGN_OR_RETURN(start_generation_, StoreGeneration(store_));
  KI_RETURN_IF_ERROR(CollectClosures(named));
  KI_RETURN_IF_ERROR(PlanBundle());
  KI_ASSIGN_OR_RETURN(state_, remote::LoadState(store_, url_));
  if (!opts_.use_remote_state) state_.Clear();
  if (!target_) {
    KI_ASSIGN_OR_RETURN(target_, remote::OpenTarget(url_, opts_, remote::Access::kPush, EnvOf(store_)));
  }
  PlanBlobs();
  StartPack();
  KI_RETURN_IF_ERROR(UploadBlobs());
  if (bundle()) KI_RETURN_IF_ERROR(PrepareBundle());
  Status mst = bundle() ? WriteBundle() : WriteClosures();
  if (mst.ok()) {
    // A cache of what the tags say: failing to update it is a warning.
    Status ls = WriteListing();
    if (!ls.ok()) report_.warnings.push_back("could not update the listing of " + url_.str() + ": " + ls.message());
  }
  Status fin = target_->Finish();
  report_.http_requests = target_->requests();
  report_.blobs_sent = 0;
  for (uint8_t s : sent_) report_.blobs_sent += s;
  report_.bytes_sent = bytes_up_;
  report_.blobs_streamed = n_streamed_;
  CountSent();
  if (bundle() && mst.ok() && fin.ok()) RecordUnchanged();
  SaveState();
  if (!mst.ok()) {
    return mst.WithContext("push to " + url_.str() + " is incomplete: every object was uploaded, but only " +
                           std::to_string(written_.load()) + " of " + std::to_string(closures_.size()) +
                           " refs were written; " + RerunAdvice(*target_, "finish"));
  }
  KI_RETURN_IF_ERROR(fin);
  return std::move(report_);
}

// What the next push of the same refs reports while the store is
// unchanged: this bundle, every blob known, nothing sent (remote.state's
// 'u' row; SaveState gives it its generation).
void Pusher::RecordUnchanged() {
  remote::UnchangedRow u;
  u.key = unchanged_key_;
  u.index = index_digest_;
  u.unique_blobs = items_.size();
  if (report_.pack) {
    u.pack = *report_.pack;
    u.pack->sent = false;
    u.pack->built = false;
  }
  for (const PushedRef& pr : report_.refs) {
    remote::UnchangedRow::Ref r;
    r.ref = pr.ref == pr.root.str() ? "" : pr.ref;
    r.root = pr.root;
    r.objects = uint32_t(pr.objects);
    r.attestations = uint32_t(pr.attestations);
    u.refs.push_back(std::move(r));
  }
  learnt_.unchanged.emplace(opts_.bundle_tag, std::move(u));
}

}  // namespace

Result<PushReport> Push(Store& store, const RemoteUrl& url, const std::vector<std::string>& refs,
                        const TransferOptions& opts) {
  const TransferOptions bounded = WithOverallDeadline(opts);  // Pusher keeps a reference
  Pusher pusher(store, url, bounded);
  return pusher.Run(refs);
}

Result<PushReport> PushAll(Store& store, const RemoteUrl& url, const TransferOptions& opts) {
  const TransferOptions bounded = WithOverallDeadline(opts);  // Pusher keeps a reference
  Pusher pusher(store, url, bounded);
  return pusher.RunAll();
}

}  // namespace ki
