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
//
// The phases live in three files: this one, pull_bundle.cc (a bundle's
// parts, table of contents and pack) and pull_store.cc (storing what
// arrived); puller.h declares the Puller they share.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "json/fields.h"
#include "ki/env.h"
#include "ki/json.h"
#include "ki/sign.h"
#include "ki/store_env.h"
#include "remote/listing.h"
#include "remote/puller.h"

namespace ki::remote {

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

}  // namespace ki::remote

namespace ki {

Result<PullReport> Pull(Store& store, const RemoteUrl& url, const std::vector<std::string>& refs,
                        const TransferOptions& opts) {
  const TransferOptions bounded = WithOverallDeadline(opts);  // the Puller keeps a reference
  remote::Puller puller(store, url, bounded);
  return puller.Run(refs);
}

}  // namespace ki
