// Store: a ki object store on local disk (`.ki/`).
//
// Objects are blobs (raw bytes) or manifests (canonical KernelIndex identity
// bodies), addressed by the SHA-256 of those bytes. Object bytes are framed
// and zstd-compressed (docs/format.md, "Object frame"); small frames live in
// LMDB next to the index, large ones as loose files under objects/. LMDB
// holds the index: object metadata, names, reverse references, kinds, and
// tables that other modules (catalog, signing) own.
//
// Writes go through a Batch: nothing is visible until Commit(), and Commit()
// is atomic and durable (loose files fsynced and their directories synced
// first, then one LMDB commit). A Batch destroyed without Commit() stores
// nothing and removes the loose files it created.
//
// Reads re-hash the bytes before returning them.
//
// Thread-safety: one Store per process per directory (LMDB's rule). Read
// calls may be made from several threads; one Batch at a time.
//
// Consistency: each read call sees the latest commit as of that call, so
// two calls may see two commits; StoreOptions::snapshot_reads pins one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/env.h"
#include "ki/manifest.h"
#include "ki/status.h"

namespace ki {

// Values are persisted: never renumber.
enum class ObjectType : uint8_t { kBlob = 1, kManifest = 2 };
enum class Location : uint8_t { kIndex = 1, kLoose = 2 };

struct ObjectInfo {
  Digest digest;
  ObjectType type = ObjectType::kBlob;
  std::optional<Kind> kind;  // manifests only
  uint64_t size = 0;         // raw bytes
  uint64_t stored_size = 0;  // frame bytes on disk
  std::string media_type;
  Location location = Location::kIndex;
  // The store's own number for the object (store format 10, docs/format.md
  // "Index"): what the index's keys hold instead of its 32-byte digest.
  // Local to one store, never sent anywhere; 0 in a store of format 9 or
  // before read as it is.
  uint32_t number = 0;
};

// A digest the store knows of without holding its bytes (a referenced log
// that was never published, an artifact whose body an export left out).
struct AbsentInfo {
  Digest digest;
  std::string media_type;  // may be empty
  std::optional<uint64_t> size;
  std::string uri;
};

struct PutResult {
  Digest digest;
  bool existed = false;
};

// Media type of a manifest's original document (kept as a blob).
inline constexpr std::string_view kDocumentMediaTypeJson = "application/vnd.kernelindex.document+json";
inline constexpr std::string_view kDocumentMediaTypeYaml = "application/vnd.kernelindex.document+yaml";
// Guesses a blob's media type from a file name's extension.
std::string GuessMediaType(std::string_view filename);

enum class OpenMode { kReadOnly, kReadWrite };

// Store formats a module's tables depend on (docs/format.md, "Format
// versions"): Store::format_version() and Batch::format_version() say
// which layout a table holds.
// Catalog tables keyed by object numbers instead of digests.
inline constexpr int kFormatCatalogNumbers = 15;

struct StoreOptions {
  Env* env = nullptr;                    // nullptr: Env::Default()
  uint64_t map_size = 64ull << 30;       // LMDB map (virtual; the file grows as needed)
  uint64_t loose_threshold = 64 << 10;   // frames larger than this are loose files
  // Objects held whole in memory are refused past this size: read whole
  // (Read, ReadManifest, push), written from memory (PutBlob, manifests),
  // kept in LMDB. Loose blobs written by PutBlobStream and read by
  // ReadStream, Verify, Audit and Reindex go a piece at a time and have no
  // cap (docs/format.md, "Where object bytes live").
  uint64_t max_object_size = 4ull << 30;
  int zstd_level = 3;
  // Read-only opens only. Reads made on the opening thread go through one
  // LMDB read transaction begun at open and ended when the Store is
  // destroyed: a command sees one consistent state of the store even while
  // another process commits (a run and its rank from the same commit), and
  // pays for one transaction instead of one per read. Other threads read
  // through transactions of their own, as without it. Keep such a Store
  // short-lived: LMDB cannot reuse pages freed after the snapshot while it
  // is held.
  bool snapshot_reads = false;
};

class Store;

// One object's frame, encoded ahead of its Batch (Store::EncodeManifest).
struct EncodedObject {
  Digest digest;  // of the raw bytes
  ObjectType type = ObjectType::kBlob;
  uint8_t kind = 0;  // Kind value for manifests, 0 for blobs
  std::string media_type;
  uint64_t raw_size = 0;
  std::string frame;  // docs/format.md, "Object frame"
  // A manifest's document may also come as a frame based on the manifest
  // (docs/format.md, "Based frames"), its base's number not yet set: the
  // batch stores it in place of `frame` when the manifest `base` is held in
  // the index by then (it numbers it), `frame` otherwise. Empty: none.
  std::string based_frame;
  Digest base;
};

// What Batch::PutManifest computes before it writes (frames, digests,
// references, name), done off the writer's thread: a bulk import encodes
// on its worker threads and keeps the single LMDB writer to the writes.
struct EncodedManifest {
  Kind kind{};
  Digest digest;
  std::string name;  // metadata.name, or "" when absent
  EncodedObject object;
  std::vector<Reference> references;
  std::optional<EncodedObject> document;
  // The manifest itself, when the caller keeps it parsed (optional): the
  // batch that stores this answers ViewManifest with it until it commits,
  // so the derived indexes do not decode and parse again what an import's
  // workers just built.
  std::shared_ptr<const Manifest> parsed;
};

// An atomic unit of writes. Obtain from Store::NewBatch().
class Batch {
 public:
  virtual ~Batch() = default;
  virtual Result<PutResult> PutBlob(std::string_view bytes, std::string_view media_type) = 0;
  // PutBlob for the bytes of `in`, hashed and compressed front to back
  // with memory bounded whatever their size, into the frame PutBlob writes
  // for the same bytes. A regular file is mapped whole (one changed while
  // it is read is InvalidInput); anything else (a pipe) is first copied to
  // a scratch file, which is mapped. `where` names the input in errors.
  // A file whose content the store already holds is hashed first and
  // skipped, nothing compressed or written.
  Result<PutResult> PutBlobStream(SequentialFile& in, std::string_view media_type, const std::string& where) {
    return PutBlobStream(in, media_type, where, std::nullopt);
  }
  // The same for bytes the caller has already hashed to `expected` (a pull
  // checks every byte as it arrives): whether the store holds them is then
  // known without reading them, and a new input is read once, not twice.
  // The one pass must still hash to `expected` (Corruption if not).
  virtual Result<PutResult> PutBlobStream(SequentialFile& in, std::string_view media_type, const std::string& where,
                                          const std::optional<Digest>& expected) = 0;
  // Stores the manifest object and indexes its kind and references. When
  // `document` is given (the original text, metadata included), it is
  // stored as a blob linked to the manifest, and its metadata.name is
  // recorded as one of the manifests `<Kind>/<name>` names (a name may name
  // several: metadata is not identity; Resolve calls such a name ambiguous).
  virtual Result<PutResult> PutManifest(const Manifest& m, std::optional<std::string_view> document,
                                        std::string_view document_media_type) = 0;
  // The same as PutManifest for a manifest encoded by Store::EncodeManifest
  // (of this store: its frames follow this store's options).
  virtual Result<PutResult> PutEncodedManifest(const EncodedManifest& m) = 0;
  // The same as PutEncodedManifest for each entry in turn (results in list
  // order; an entry whose object an earlier one put finds it existing), but
  // written table by table in key order: a bulk load then appends to LMDB's
  // tables instead of splitting pages at random.
  virtual Result<std::vector<PutResult>> PutEncodedManifests(const std::vector<EncodedManifest>& ms) = 0;
  // Records that `target` carries `<Kind>/<name>`, and makes it the name's
  // latest holder. Earlier holders keep the name too.
  virtual Status SetName(Kind kind, std::string_view name, const Digest& target) = 0;
  virtual Status RecordAbsent(const AbsentInfo& info) = 0;
  // Generic tables for other modules (catalog, signing): byte keys and values.
  virtual Status Put(std::string_view table, std::string_view key, std::string_view value) = 0;
  virtual Status Delete(std::string_view table, std::string_view key) = 0;
  virtual Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;
  // Store::Scan inside this batch: sees what the batch has written so far.
  virtual Status Scan(std::string_view table, std::string_view prefix,
                      const std::function<bool(std::string_view key, std::string_view value)>& fn) = 0;
  virtual Result<bool> Has(const Digest& d) = 0;
  // Reads inside this batch: objects it has stored are visible, and every
  // read re-hashes the bytes, as Store's reads do.
  virtual Result<std::optional<ObjectInfo>> Stat(const Digest& d) = 0;
  virtual Result<std::string> Read(const Digest& d) = 0;
  virtual Result<Manifest> ReadManifest(const Digest& d) = 0;
  // ReadManifest for a reader that only looks (a derived index): the batch
  // may answer with a manifest it already holds parsed (handed to it with
  // EncodedManifest::parsed, or parsed by audit's pass over every object)
  // instead of reading, decoding and parsing it again. The same manifest.
  virtual Result<std::shared_ptr<const Manifest>> ViewManifest(const Digest& d) {
    KI_ASSIGN_OR_RETURN(Manifest m, ReadManifest(d));
    return std::make_shared<const Manifest>(std::move(m));
  }
  // Every "Kind/name" a held object is stored under, and the document
  // blob linked to a manifest (none: nullopt), as this batch sees them: what
  // a derived index may read of the store's name tables, whose keys hold
  // the store's own object numbers.
  virtual Result<std::vector<std::string>> NamesOf(const Digest& d);
  virtual Result<std::optional<Digest>> DocumentOf(const Digest& d);
  // The objects whose manifests reference `d` (the refs table), in digest
  // order, each once, as this batch sees them: what a derived index may
  // read of refs, whose keys hold the store's own object numbers.
  virtual Result<std::vector<Digest>> ReferrersOf(const Digest& d) = 0;
  // Empties a generic table (a derived index's, or one an upgrade retires).
  virtual Status DropTable(std::string_view table) = 0;
  // The store's own number for an object it holds, as this batch sees it
  // (an object the batch stored has its number already); nullopt when the
  // object is not held (or, in a store of format 9 or before, has none).
  // Numbers are local to one store: what a module's table may key by
  // instead of a 32-byte digest, never what it sends anywhere.
  virtual Result<std::optional<uint32_t>> NumberOf(const Digest& d);
  // The digest of the object numbered `n`, as this batch sees it; nullopt
  // when no held object has that number.
  virtual Result<std::optional<Digest>> DigestOfNumber(uint32_t n) = 0;
  // The store format whose layout this batch writes: the store's own
  // (kFormatVersion for a store opened for writing, which is upgraded at
  // open; the format of the store as it is for audit's rebuild of a store
  // opened read-only).
  virtual int format_version() const = 0;
  virtual Status Commit() = 0;
};

// A module's index that is a function of the objects alone (catalog's
// comparison groups, docs/format.md "Catalog tables"). Every Batch calls
// each registered index's Update, inside its transaction, just before it
// commits, with the objects it stored that the store did not hold; so a
// record joins what it belongs to by whatever path it arrives (add, pull,
// import, run), in any order. Reindex empties the index's tables and calls
// Update with every object; Audit does the same into a scratch overlay and
// reports each entry that differs from the tables in place.
class DerivedIndex {
 public:
  virtual ~DerivedIndex() = default;
  // The tables it owns (`<module>.<table>`), and nothing else it writes.
  virtual std::vector<std::string_view> Tables() const = 0;
  // `arrived` is in the order the batch stored the objects.
  virtual Status Update(Batch& batch, const std::vector<ObjectInfo>& arrived) = 0;
  // A key of one of its tables as audit prints it. The default: a 32-byte
  // key as `sha256:…`, a 64-byte one as `<digest> run <digest>` (a cohort
  // and a run), else `0x` and hex (lmdb::KeyText).
  virtual std::string DescribeKey(std::string_view table, std::string_view key) const;
  // Does the value in place (`stored`) say what the objects give (`want`,
  // as this ki encodes it)? Byte equality by default; an index whose
  // values an older store format spelled otherwise accepts those too, so
  // that audit of a store not yet upgraded reports no fault.
  virtual bool SameValue(std::string_view table, std::string_view stored, std::string_view want) const {
    (void)table;
    return stored == want;
  }
  // The store format whose layout the index's tables in `store` hold: the
  // store's own (the default), or a newer one when an upgrade committed its
  // rebuilt tables and was killed before FORMAT was rewritten. Audit
  // rebuilds the index in that layout to compare it with the tables.
  virtual int HeldFormat(Store& store) const;
  // Turns what the module kept in tables in store format `from` into
  // objects (inside `batch`); the store then rebuilds every derived table.
  virtual Status Upgrade(Batch& batch, int from) {
    (void)batch;
    (void)from;
    return Status::OK();
  }
};
// Registers `index` (not owned; it must outlive every store) for every
// batch, reindex and audit of this process. Registering twice is a no-op.
void RegisterDerivedIndex(DerivedIndex* index);

enum class CheckState { kOk, kCorrupt, kMissing };
std::string_view CheckStateName(CheckState s);

struct CheckEntry {
  Digest digest;
  CheckState state = CheckState::kOk;
  std::string what;    // "BenchmarkRun", "blob text/plain", or "unknown" for missing
  std::string via;     // how it was reached: "<referrer digest> /spec/protocolDigest", or "root"
  std::string detail;  // for corrupt: what did not match
};

struct VerifyReport {
  std::vector<CheckEntry> entries;
  bool HasFaults() const;
};

struct AuditReport {
  uint64_t objects = 0, bytes = 0;
  std::vector<CheckEntry> faults;             // corrupt objects and index inconsistencies
  std::vector<CheckEntry> missing;            // referenced but absent (not faults)
  std::vector<std::string> notes;             // e.g. unindexed loose files adopted by --reindex
  bool HasFaults() const { return !faults.empty(); }
};

class Store {
 public:
  virtual ~Store() = default;

  // Creates `<dir>/.ki` (dir is created if needed). An existing store is
  // opened instead (as `git init` does), so set-up scripts can run twice.
  static Result<std::unique_ptr<Store>> Init(const std::string& dir, const StoreOptions& opts = {});
  // Opens a store directory (the `.ki` directory itself).
  static Result<std::unique_ptr<Store>> Open(const std::string& ki_dir, OpenMode mode,
                                             const StoreOptions& opts = {});
  // The nearest `.ki` directory at or above `start`, as git finds `.git`.
  static Result<std::string> Discover(const std::string& start);

  virtual const std::string& path() const = 0;

  // --- reading ---
  virtual Result<std::optional<ObjectInfo>> Stat(const Digest& d) = 0;
  virtual Result<std::optional<AbsentInfo>> StatAbsent(const Digest& d) = 0;
  // Verified bytes. NotFound when the store does not hold them, Corruption
  // when they do not hash to `d`.
  // Objects over StoreOptions::max_object_size are InvalidInput (ReadStream
  // reads them).
  virtual Result<std::string> Read(const Digest& d) = 0;
  // The verified bytes of `d`, passed to `out` in pieces. An object kept in
  // LMDB is checked whole before its bytes go out; a loose object is
  // decoded and hashed as it is read, with bounded memory and no size cap,
  // so when it is corrupt, bytes before the fault (all of them, for a
  // content hash that does not match) have already gone to `out` when
  // Corruption is returned. An error `out` returns ends the read and is
  // returned as it is.
  virtual Status ReadStream(const Digest& d, const std::function<Status(std::string_view)>& out) = 0;
  virtual Result<Manifest> ReadManifest(const Digest& d) = 0;
  // The original document (metadata included) of a manifest, when stored.
  virtual Result<std::optional<Json>> ReadDocument(const Digest& d) = 0;
  virtual Result<std::optional<Digest>> DocumentOf(const Digest& d) = 0;

  // REF: full digest; hex prefix (>= 4 hex digits, with or without
  // `sha256:`); `<Kind>/<name>` or a bare metadata name, when exactly one
  // manifest carries it. NotFound / Ambiguous (listing candidates, with
  // their titles) / InvalidInput (prefix too short).
  virtual Result<Digest> Resolve(std::string_view ref) = 0;
  // Every name a manifest was stored under, "<Kind>/<name>", in order.
  virtual Result<std::vector<std::string>> NamesOf(const Digest& d) = 0;
  // The same for an object whose ObjectInfo the caller holds (from
  // ForEachObject or Stat): a store keyed by object number then looks the
  // number up no second time (ki ls asks for every object's names).
  virtual Result<std::vector<std::string>> NamesOf(const ObjectInfo& info) { return NamesOf(info.digest); }
  // Every manifest stored under `<Kind>/<name>`: the latest first, then the
  // others in digest order. Empty when none.
  virtual Result<std::vector<Digest>> LookupName(Kind kind, std::string_view name) = 0;

  // Every object, or every manifest of a kind, in digest order.
  virtual Status ForEachObject(const std::function<bool(const ObjectInfo&)>& fn) = 0;
  virtual Status ForEachOfKind(Kind kind, const std::function<bool(const Digest&)>& fn) = 0;
  // Objects whose manifests name `d` (reverse references), with the field.
  virtual Result<std::vector<std::pair<Digest, std::string>>> Referrers(const Digest& d) = 0;

  // The store's number for an object it holds, and the object of a number
  // (Batch::NumberOf, Batch::DigestOfNumber); nullopt when none.
  virtual Result<std::optional<uint32_t>> NumberOf(const Digest& d);
  virtual Result<std::optional<Digest>> DigestOfNumber(uint32_t n) = 0;
  // The format of the store as it is (FORMAT's number): a store opened
  // read-only is read in its own format's layout, one opened for writing
  // is upgraded at open.
  virtual int format_version() const = 0;

  // Generic tables (see Batch::Put).
  virtual Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;
  // Calls fn for each key starting with prefix, in key order, until it returns false.
  virtual Status Scan(std::string_view table, std::string_view prefix,
                      const std::function<bool(std::string_view key, std::string_view value)>& fn) = 0;

  // --- writing ---
  virtual Result<std::unique_ptr<Batch>> NewBatch() = 0;
  // Encodes a manifest (and its document) for Batch::PutEncodedManifest.
  // Pure: safe to call from any thread, while a Batch is open.
  virtual EncodedManifest EncodeManifest(const Manifest& m, std::optional<std::string_view> document,
                                         std::string_view document_media_type) const = 0;

  // --- checking ---
  // Re-hashes `root` and every object it reaches through references and
  // document links. Missing objects are reported, not faults.
  virtual Result<VerifyReport> Verify(const Digest& root) = 0;
  virtual Result<AuditReport> Audit() = 0;
  // Rebuilds every derived index table from the objects themselves.
  virtual Result<AuditReport> Reindex() = 0;
};

}  // namespace ki
