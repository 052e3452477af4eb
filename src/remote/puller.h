// The state of one pull (remote.h's Pull), shared by the files that hold
// its phases: pull.cc (the refs, names, referrers, the plan, the blob
// downloads and the run as a whole), pull_bundle.cc (a bundle's parts,
// table of contents and pack) and pull_store.cc (what arrived, held,
// checked, encoded and written to the store). Internal to src/remote.
//
// Thread-safety: Run is one thread's; its phases run workers of their own
// (RunParallel), which share what the members' comments say they guard.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ki/remote.h"
#include "ki/store.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/state.h"
#include "remote/target.h"
#include "remote/transfer.h"

namespace ki::remote {

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

}  // namespace ki::remote
