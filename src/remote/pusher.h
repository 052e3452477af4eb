// The state of one push (remote.h's Push and PushAll), shared by the files
// that hold its phases: push.cc (the roots, closures, blob uploads, image
// manifests and the run as a whole) and push_bundle.cc (a bundle's plan,
// table of contents, pack and index). Internal to src/remote.
//
// Thread-safety: Run is one thread's; UploadBlobs and WriteClosures run
// workers of their own (RunParallel), which share what the members'
// comments say they guard; the pack is built on a thread of its own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ki/digest.h"
#include "ki/remote.h"
#include "ki/store.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/state.h"
#include "remote/target.h"
#include "remote/transfer.h"

namespace ki::remote {

// What a streamed upload counts against TransferOptions::push_buffer_bytes:
// its reader's input buffer, zstd's output buffer and window, and curl's
// own buffer, a few MiB whatever the object's size.
inline constexpr uint64_t kStreamedHold = 4 << 20;

// What a failed push tells the user to do next: run it again where that
// can help (a dropped connection, a registry error, a time limit), and
// where it cannot (Target::FailedForGood), only that a run after the fix
// picks up where this one stopped.
std::string RerunAdvice(const Target& target, const char* what);

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

}  // namespace ki::remote
