// A pull's reading of a bundle (Puller, puller.h): its parts, the table of
// contents of a packed bundle, and its pack, each entry checked against
// the layer of its digest before it is used.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "json/fields.h"
#include "ki/json.h"
#include "remote/puller.h"

namespace ki::remote {
namespace {

// A request's fixed cost (a round trip, and a registry's per-request CPU:
// 1.5-5 ms for a blob GET on Debian's registry) counted as bytes of
// transfer. A pack is fetched when it costs no more than the objects the
// store lacks would one by one: pack size <= their bytes + this per object.
constexpr uint64_t kRequestCostBytes = 32 << 10;

bool PackWorthFetching(uint64_t pack_size, uint64_t missing, uint64_t missing_bytes) {
  return missing > 0 && pack_size <= missing_bytes + missing * kRequestCostBytes;
}

}  // namespace

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

}  // namespace ki::remote
