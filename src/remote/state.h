// remote.state (docs/format.md, "Remote state"): what each registry is
// known to hold, as git's remote-tracking refs record a remote's branches.
// A cache: dropping it costs requests, never correctness.
//
// Rows under an 8-byte prefix naming the registry (SHA-256 of its URL), then
//   'b' + raw digest           -> ""                 the registry holds this blob
//   't' + tag                  -> raw manifest digest the tag named when last written or read
//   'r' + raw manifest digest  -> ""                 a referrer manifest written and indexed
//   'p' + bundle tag           -> PackRow (80 bytes) the pack last built for the bundle pushed under the tag
//   'i' + bundle tag           -> BundleRow (72 bytes) the table of contents of the packed bundle pushed under the tag
//   'u' + bundle tag           -> UnchangedRow        what the last push of the bundle reported, at what store generation
// Only registries have one: a layout answers HEAD from its own directory.
//
// Thread-safety: StateUpdate's adders may be called from any thread; the
// rest is one thread's.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ki/digest.h"
#include "ki/remote.h"
#include "ki/store.h"

namespace ki::remote {

// What a push needs of a pack to write its manifest and the bundle's
// index, under the key of what the pack holds: a later push of the same
// objects under the same tag knows the index it would write without
// building the pack again.
struct PackRow {
  Digest key;      // PackKey of the bundle's packed objects
  Digest digest;   // the pack blob
  uint64_t size = 0;
  uint64_t objects = 0;  // entries; 0: no object was small enough, the bundle has no pack
};

// A packed bundle's table of contents under the key of what it lists
// (BundleKey in push.cc: every object's descriptor, every root's closure),
// so that a re-push of the same bundle composes its index without
// building the table (most of an unchanged re-push's CPU).
struct BundleRow {
  Digest key;
  Digest toc;
  uint64_t toc_size = 0;
};

// The last successful push of a bundle, kept so that pushing the same refs
// again while the store is unchanged (the same generation,
// include/ki/generation.h: no commit since this row's) costs one HEAD of
// the tag instead of collecting every closure again: the push would find
// the same bundle, every blob known, and write nothing. `key` hashes the
// refs as named, the roots they resolved to and every option that shapes
// the bundle (push.cc, UnchangedKey).
struct UnchangedRow {
  uint64_t generation = 0;
  Digest key;
  Digest index;           // the bundle's index, the manifest its tag names
  uint64_t unique_blobs = 0;  // PushReport::blobs_known of such a push
  std::optional<PushReport::Pack> pack;
  struct Ref {
    std::string ref;  // as named; "" when it is the root's digest as ki prints it
    Digest root;
    uint32_t objects = 0, attestations = 0;
  };
  std::vector<Ref> refs;
};
std::string EncodeUnchangedRow(const UnchangedRow& u);
std::optional<UnchangedRow> DecodeUnchangedRow(std::string_view v);  // nullopt: malformed or a later format
// The row of `tag` at `url`'s registry, when there is one.
Result<std::optional<UnchangedRow>> LoadUnchanged(Store& store, const RemoteUrl& url, const std::string& tag);

struct RemoteState {
  bool enabled = false;  // false for a layout: nothing is read or written
  std::string prefix;
  std::unordered_set<Digest> blobs, referrers;
  std::unordered_map<std::string, Digest> tags;
  std::unordered_map<std::string, PackRow> packs;  // by bundle tag
  std::unordered_map<std::string, BundleRow> bundles;  // by bundle tag
  void Clear() {
    bundles.clear();
    blobs.clear();
    referrers.clear();
    tags.clear();
    packs.clear();
  }
};

Result<RemoteState> LoadState(Store& store, const RemoteUrl& url);

// What one transfer learnt about the registry, written to remote.state.
struct StateUpdate {
  std::mutex mu;
  std::vector<Digest> blobs, gone, referrers;
  std::vector<std::pair<std::string, Digest>> tags;
  std::vector<std::pair<std::string, PackRow>> packs;
  std::vector<std::pair<std::string, BundleRow>> bundles;
  std::optional<std::pair<std::string, UnchangedRow>> unchanged;  // one thread's (Pusher::Run)
  void Bundle(const std::string& tag, const BundleRow& b) {
    std::lock_guard<std::mutex> l(mu);
    bundles.emplace_back(tag, b);
  }
  void Blob(const Digest& d) {
    std::lock_guard<std::mutex> l(mu);
    blobs.push_back(d);
  }
  void Gone(const Digest& d) {
    std::lock_guard<std::mutex> l(mu);
    gone.push_back(d);
  }
  void Tag(const std::string& t, const Digest& m) {
    std::lock_guard<std::mutex> l(mu);
    tags.emplace_back(t, m);
  }
  void Referrer(const Digest& d) {
    std::lock_guard<std::mutex> l(mu);
    referrers.push_back(d);
  }
  void Pack(const std::string& tag, const PackRow& p) {
    std::lock_guard<std::mutex> l(mu);
    packs.emplace_back(tag, p);
  }
};

// Writes the rows `u` adds to `old` (only those that change something).
Status WriteState(Batch& batch, const RemoteState& old, const StateUpdate& u);

}  // namespace ki::remote
