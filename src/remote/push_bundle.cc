// Push of a bundle (pusher.h): its plan (the union of the closures and
// the parts that list it), its table of contents, its pack (built on a
// thread of its own while blobs upload) and the index that names them all.
#include <algorithm>
#include <limits>
#include <unordered_set>

#include "json/fields.h"
#include "remote/pusher.h"

namespace ki::remote {
namespace {

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

}  // namespace

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

Status Pusher::CheckBundleTag() const {
  if (bundle() && !IsValidTag(opts_.bundle_tag)) {
    return Status::Usage("'" + opts_.bundle_tag + "' is not a valid OCI tag");
  }
  return Status::OK();
}




}  // namespace ki::remote
