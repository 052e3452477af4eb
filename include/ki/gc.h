// ki gc: removes the objects nothing keeps alive that are older than a grace
// period, then compacts the index file so that the space comes back
// (docs/format.md, "ki gc"; docs/cli.md, "ki gc").
//
// What keeps an object alive: a name (every manifest stored under a name,
// not only its latest holder), a tag (ki/tag.h), what other modules' state
// holds (attestations and their subjects, catalog import objects and the
// facts about a kept run, run and flashinfer-bench tables, fleet sets and
// context blobs: each module says so through a GcReferences it registers),
// and everything those reach through references, document links and the
// modules' edges.
//
// Safety: gc holds the store lock exclusive (src/odb/store_lock.h) from
// before it marks until data.mdb is replaced, so no other process has the
// store open meanwhile (every open holds it shared); the deletes are one
// LMDB transaction, loose files are removed only after it commits, and the
// compacted index is a copy renamed over data.mdb. Killed at any moment, it
// loses nothing that was reachable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ki/digest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

// A module's part in what keeps objects alive. Registered before any gc
// (RegisterGcReferences); not owned, it must outlive every gc.
class GcReferences {
 public:
  virtual ~GcReferences() = default;
  // The module's tables (`<module>.<table>`) whose digests this accounts
  // for, derived or recorded. gc refuses a store holding a non-empty table
  // that neither the store, a derived index nor a registered GcReferences
  // claims: such a table could hold the only reference to an object.
  virtual std::vector<std::string_view> Tables() const = 0;
  // Objects the module's recorded state keeps alive.
  virtual Status Roots(Store& store, const std::function<void(const Digest&)>& add) {
    (void)store;
    (void)add;
    return Status::OK();
  }
  // Whether a held object is kept for what it is (an attestation envelope,
  // a catalog import object), whatever reaches it.
  virtual bool IsRoot(const ObjectInfo& info) const {
    (void)info;
    return false;
  }
  // What a reached object keeps alive beyond its references and document
  // (a run its facts objects and attestations); `field` says how, for
  // messages.
  virtual Status Edges(Store& store, const ObjectInfo& reached,
                       const std::function<void(const Digest&, std::string_view field)>& add) {
    (void)store;
    (void)reached;
    (void)add;
    return Status::OK();
  }
  // Called inside gc's delete batch, before compaction restarts the
  // store's generation (ki/generation.h: the compacted copy begins its
  // transaction count again): drops what the module keeps that is valid
  // only while the generation never goes back (remote.state's rows of
  // unchanged pushes).
  virtual Status BeforeCompaction(Batch& batch) {
    (void)batch;
    return Status::OK();
  }
};
// Registering twice is a no-op.
void RegisterGcReferences(GcReferences* refs);

// Recorded tables whose digests keep objects alive: the first `key_digests`
// 32-byte pieces of each key, and with `value_digests` the value when it is
// a digest (32 raw bytes or `sha256:<hex>` text) or JSON naming digests
// (every such string in it). Reading too much is safe: a digest the store
// does not hold keeps nothing alive.
struct GcTable {
  std::string_view name;
  int key_digests = 0;
  bool value_digests = false;
};
class GcTableReferences : public GcReferences {
 public:
  // `root_media_types`: blobs of these media types are roots.
  GcTableReferences(std::vector<GcTable> tables, std::vector<std::string_view> root_media_types = {})
      : tables_(std::move(tables)), media_types_(std::move(root_media_types)) {}
  std::vector<std::string_view> Tables() const override;
  Status Roots(Store& store, const std::function<void(const Digest&)>& add) override;
  bool IsRoot(const ObjectInfo& info) const override;

 private:
  std::vector<GcTable> tables_;
  std::vector<std::string_view> media_types_;
};

// Each module's references, defined in its folder (src/<module>/gc_refs.cc).
// ki gc registers them all before it collects; one that is missing makes
// gc refuse the store (GcReferences::Tables), not lose objects.
namespace catalog {
void RegisterGcRoots();
}
namespace run {
void RegisterGcRoots();
}
namespace fib {
void RegisterGcRoots();
}
namespace fleet {
void RegisterGcRoots();
}
void RegisterSignGcRoots();
void RegisterRemoteGcRoots();
// All of the above.
void RegisterAllGcRoots();

inline constexpr int64_t kDefaultGcGraceSeconds = 14 * 24 * 3600;  // 2 weeks

// "2w", "36h", "90m", "45s", "3d", "0": a whole number with one suffix
// (s, m, h, d, w; none means seconds). InvalidInput otherwise.
Result<int64_t> ParseGcDuration(std::string_view text);

struct GcOptions {
  int64_t grace_seconds = kDefaultGcGraceSeconds;
  // Lists what would go; takes the lock shared, writes nothing.
  bool dry_run = false;
  // Unix seconds; nullopt: the clock (tests set it).
  std::optional<int64_t> now;
  // Called once when gc has to wait for other processes to close the store.
  std::function<void()> waiting;
};

struct GcRemoved {
  Digest digest;
  std::string what;  // "blob text/plain", "BenchmarkRun"
  uint64_t size = 0, stored_size = 0;
  std::optional<int64_t> added;  // Unix seconds; nullopt: unknown (only with grace 0)
};

// Bytes the store takes on disk.
struct GcSizes {
  uint64_t index_bytes = 0;  // index/data.mdb
  uint64_t loose_files = 0, loose_bytes = 0;
};

struct GcReport {
  uint64_t objects = 0;    // held before
  uint64_t reachable = 0;  // kept because something keeps them alive
  uint64_t young = 0;      // unreachable but within the grace period: kept
  // Unreachable, of unknown age (no added time in its meta entry: a store written before
  // ki recorded it): kept, and now dated (not in a dry run), so that they
  // go a grace period from now.
  uint64_t undated = 0;
  std::vector<GcRemoved> removed;  // in digest order; a dry run: what would go
  uint64_t removed_bytes = 0, removed_stored_bytes = 0;
  GcSizes before, after;  // after == before in a dry run
  bool compacted = false;
  std::vector<std::string> notes;
};

// Collects garbage in the store `store` was opened on (read-write). The
// store is closed first (gc reopens it under the exclusive lock), so the
// caller must hold no other Store of it in this process: gc would wait on
// its lock for ever.
Result<GcReport> CollectGarbage(std::unique_ptr<Store> store, const GcOptions& opts);

}  // namespace ki
