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
#include "remote/pusher.h"
#include "remote/state.h"
#include "remote/stream.h"
#include "remote/target.h"
#include "remote/transfer.h"
#include "ki/utc.h"

namespace ki::remote {
namespace {

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

}  // namespace

std::string RerunAdvice(const Target& target, const char* what) {
  if (target.FailedForGood()) return std::string("once what follows is fixed, the same ki push will ") + what + " from there";
  return std::string("run the same ki push again to ") + what;
}

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

}  // namespace ki::remote

namespace ki {

using remote::Pusher;

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
