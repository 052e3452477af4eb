// The store's implementation types, shared by its files (internal to
// src/odb): LmdbStore (store.cc: open and reads; resolve.cc; audit.cc:
// verify, audit and the derived-index comparison; reindex.cc: reindex and
// format upgrades), LmdbBatch (batch.cc: every write) and ShadowBatch
// (audit.cc: the overlay a derived index is rebuilt into for comparison).
// Format: docs/format.md. Module map: docs/architecture.md.
#pragma once

#include "ki/store.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "index/lmdb.h"
#include "odb/dict.h"
#include "odb/frame.h"
#include "odb/store_lock.h"
#include "odb/tables.h"

namespace ki::odb {

// obj[outer][key] when it is a string, else "" (whatever obj is): a
// document's metadata.name or .title, an environment's hardware.product.
std::string NestedString(const Json& obj, std::string_view outer, std::string_view key);

// A name for a scratch file under objects/incoming, unique among the
// processes writing to the store.
std::string ScratchName();

// Removes the scratch files it holds on every way out of a streamed write.
struct ScratchFiles {
  Env* env;
  std::vector<std::string> paths;
  ~ScratchFiles() {
    for (const auto& p : paths) (void)env->RemoveFile(p);  // best effort: audit notes leftovers
  }
};

inline Status Discard(std::string_view) { return Status::OK(); }

// A frame's header says what the index entry says (type, kind, size, media
// type): a flipped byte on either side is a fault.
bool FrameAgrees(const FrameHeader& h, const ObjectInfo& info);

// "BenchmarkRun", "blob text/plain": what an object is, for messages.
std::string Describe(const ObjectInfo& info);

// Every registered DerivedIndex (RegisterDerivedIndex), in order.
std::vector<DerivedIndex*>& DerivedIndexes();
// Every derived index's tables emptied in `batch` and filled again from
// `objects` (what gc keeps, or every object: the format-15 upgrade).
Status RefillDerivedIndexes(Batch& batch, const std::vector<ObjectInfo>& objects);

// Calls fn for each key of `dbi` that starts with prefix, in key order,
// until fn returns false.
Status ScanTable(lmdb::Txn& txn, MDB_dbi dbi, std::string_view prefix,
                 const std::function<bool(std::string_view, std::string_view)>& fn);

class LmdbStore;

// Contents that audit's pass over every object read whole and re-hashed
// (a blob kept in the index database, every manifest), by digest: what a
// derived index rebuilt for comparison reads, instead of reading,
// decompressing and re-hashing each object a second time. An object is
// its digest's one content, so a read answered here says what the store
// would (one whose check failed is not here: its read goes to the store).
// A manifest is kept parsed as the pass parsed it (its canonical bytes are
// its content): the group index reads thousands of runs and workloads, and
// parsing each again was most of the rebuild's time.
struct VerifiedContent {
  ObjectType type{};
  std::string raw;                           // a blob's content
  std::shared_ptr<const Manifest> manifest;  // a manifest, parsed
  std::string_view bytes() const { return manifest ? std::string_view(manifest->canonical) : raw; }
};
using VerifiedContents = std::unordered_map<Digest, VerifiedContent>;

// A KernelIndex document blob (either media type): what names come from.
bool IsDocument(const ObjectInfo& info);

// What one document blob reads as: the manifest it holds and the name
// (metadata.name, "" when none) it gives it. names.cc.
struct DocumentGives {
  Digest document, manifest;
  Kind kind{};
  std::string name;
};

// The nameset keys ("Kind/name" + digest) that `gives` give the held
// manifests (`manifests`: digest -> kind): each document's name, for the
// manifest it reads as when the store holds it as that kind. names.cc.
std::set<std::string> DocumentNameSet(const std::vector<DocumentGives>& gives,
                                      const std::unordered_map<Digest, Kind>& manifests);

// A nameset key's kind, name and digest; nullopt when it is not
// "Kind/name" + digest (a damaged key). names.cc.
std::optional<std::tuple<Kind, std::string, Digest>> SplitNameSetKey(std::string_view key);

class LmdbBatch final : public Batch {
 public:
  LmdbBatch(LmdbStore* store, lmdb::Txn txn) : store_(store), txn_(std::move(txn)) {}
  ~LmdbBatch() override;

  Result<PutResult> PutBlob(std::string_view bytes, std::string_view media_type) override {
    return PutObject(ObjectType::kBlob, 0, media_type, bytes, Sha256Of(bytes));
  }
  using Batch::PutBlobStream;
  Result<PutResult> PutBlobStream(SequentialFile& in, std::string_view media_type, const std::string& where,
                                  const std::optional<Digest>& expected) override;
  Result<PutResult> PutManifest(const Manifest& m, std::optional<std::string_view> document,
                                std::string_view document_media_type) override;
  Result<PutResult> PutEncodedManifest(const EncodedManifest& m) override;
  Result<std::vector<PutResult>> PutEncodedManifests(const std::vector<EncodedManifest>& ms) override;
  Status SetName(Kind kind, std::string_view name, const Digest& target) override;
  // SetName's two halves: `target` carries the name (namesof, nameset), and
  // is the name's latest holder (names).
  Status RecordName(Kind kind, std::string_view name, const Digest& target);
  Status PointName(Kind kind, std::string_view name, const Digest& target);
  // Each key with `prefix` and its value as this batch sees them (what is
  // staged over what LMDB holds), in key order, without flushing the
  // staged rows.
  Status ForEachHeld(MDB_dbi dbi, std::string_view prefix,
                     const std::function<void(std::string_view, std::string_view)>& fn);
  // Deletes a nameset or namesof entry no document gives (reindex);
  // `holder`, when held, goes to the derived indexes as a renamed manifest
  // does (what they show of it may change with its names).
  Status DropRecordedName(std::string_view table, std::string_view key, const Digest& holder);
  Status RecordAbsent(const AbsentInfo& info) override;
  Status Put(std::string_view table, std::string_view key, std::string_view value) override {
    KI_RETURN_IF_ERROR(FlushFor(table));
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    return PutKV(dbi, key, value);
  }
  Status Delete(std::string_view table, std::string_view key) override {
    KI_RETURN_IF_ERROR(FlushFor(table));
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    return DelKV(dbi, key);
  }
  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    KI_RETURN_IF_ERROR(FlushFor(table));
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    KI_ASSIGN_OR_RETURN(auto v, GetKV(dbi, key));
    if (!v) return std::optional<std::string>();
    return std::optional<std::string>(std::string(*v));
  }
  Status Scan(std::string_view table, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override;
  Result<bool> Has(const Digest& d) override;
  Result<std::optional<ObjectInfo>> Stat(const Digest& d) override;
  Result<std::string> Read(const Digest& d) override;
  Result<Manifest> ReadManifest(const Digest& d) override;
  Result<std::shared_ptr<const Manifest>> ViewManifest(const Digest& d) override;
  // refs inside this batch: each referrer's digest from its key (format
  // 11 and before) or from its number's objects row.
  Result<std::vector<Digest>> ReferrersOf(const Digest& d) override;
  Status DropTable(std::string_view table) override {
    KI_RETURN_IF_ERROR(FlushFor(table));
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    last_.erase(dbi);
    DiscardStaged(dbi);  // what the batch wrote there before goes with the table
    return txn_.Drop(dbi);
  }
  // Objects this batch put are numbered before they are written (pending_,
  // pending_numbers_), so both see them.
  Result<std::optional<Digest>> DigestOfNumber(uint32_t n) override;
  // A batch writes the newest layout: a store opened for writing is
  // upgraded at open (the upgrade's own batch writes it too).
  int format_version() const override { return kFormatVersion; }
  Status Commit() override;
  // Format 13 or 14 -> 15 (catalog tables keyed by object numbers): every
  // derived index's tables emptied and rebuilt from every object the store
  // holds, as ki gc rebuilds them (the upgrade's last step).
  Status RebuildDerivedIndexes();
  // Empties a table if the store has one of that name (DropTable would
  // create it): what an upgrade does to a table a format no longer keeps.
  Status DropTableIfPresent(std::string_view table);

  // Makes sure the store holds the dictionary with this ID before a frame
  // that names it is written: a built-in one is stored (once per batch) if
  // the store does not hold it. An ID neither held nor built in is
  // InvalidInput.
  Status EnsureDictionary(uint32_t id);
  // Files a dictionary object under its ID in `dicts` (the smallest digest
  // of several with one ID); bytes that are not a dictionary are not filed.
  Status IndexDictionary(const Digest& d, std::string_view raw);

  // Used by Reindex(): the frame is already on disk. `added`: when the
  // store first indexed it (carried over from the entry replaced), nullopt
  // for now.
  Status IndexFrame(const Digest& d, const odb::FrameHeader& h, Location loc, uint64_t stored_size,
                    std::string_view raw, std::optional<int64_t> added, uint32_t number);
  // Object numbers (format 10, docs/format.md "Index"). NumberFor: the
  // number the store has for d (a pending object's, its meta entry's),
  // else the next one; NewNumber: the next one (`seq`, written with the
  // batch). Numbers start at 1 and are never given twice.
  Result<uint32_t> NumberFor(const Digest& d);
  // The number of an objects row that holds d's digest but that no meta
  // entry names (a damaged frame reindex left out), 0 when none: what
  // NumberFor gives d, so that its good bytes replace that row.
  Result<uint32_t> OrphanRowNumber(const Digest& d);
  Result<uint32_t> NewNumber();
  // Makes every number up to `largest` given (seq raised above it): a
  // rebuild that keeps numbers never gives one of them again.
  Status ReserveNumbersThrough(uint32_t largest);
  // What a rebuild of meta carries over: each entry's number (of two that
  // claim one, the first in digest order), with seq raised above them all.
  Result<std::unordered_map<Digest, uint32_t>> CarriedNumbers();
  // Format 9 -> 10: every meta entry without a number numbered, in digest
  // order, then RekeyByNumber.
  Status NumberObjects();
  // docs and namesof keys that start with a held object's digest written
  // again with its number (the upgrade to format 10; a reindex of a store
  // of format 1).
  Status RekeyByNumber();
  // When the store first indexed each object, as its meta entries say
  // (format 6) or, for those without one, the `added` table of format 5
  // and before: what a rebuild of meta carries over.
  Result<std::unordered_map<Digest, int64_t>> AddedTimes();
  // Format 5 -> 6: every meta value packed again in format 6's layout with
  // its object's added time; `added` emptied.
  Status FoldAddedIntoMeta();
  // Format 6 -> 7: every refs key whose field has a code written again
  // with it (RefKey).
  Status RecodeRefFields();
  // Format 10 -> 11: a table the store declares a set table (refs) that is
  // still a plain one is made one,
  // holding the same keys (values, which a set table has not, are
  // dropped: refs' artifact URIs, which nothing reads). A key of 32 bytes
  // or fewer, which no such table's writer makes, is left out.
  Status MakeSetTable(std::string_view table);
  // Format 11 -> 12: objects keyed by number (each row the digest and the
  // frame; a loose object's the digest alone) and refs keys' referrers
  // written as numbers; then store_->objects_numbered(). Whatever holds the
  // format-12 layout already is left as it is (idempotent).
  Status KeyObjectsByNumber();
  // Format 12: every objects row's number by digest (of two rows that hold
  // one digest, the first), for a rebuild of meta to keep them.
  Result<std::unordered_map<Digest, uint32_t>> ObjectRowNumbers();
  // After a rebuild of meta (reindex): a row that holds no bytes and whose
  // digest meta does not give that number as a loose object's (its file is
  // gone), and a second row of an object meta numbers otherwise (the bytes
  // are the row it was indexed from), are removed. A frame that was not
  // indexed (damaged) stays, a fault audit reports.
  Status DropStaleObjectRows();
  // Format 10 -> 11: each names entry ("Kind/name" -> the latest holder)
  // becomes that holder's nameset entry marked kNameLatest (recorded
  // there if it was not), and names is emptied.
  Status FoldNamesIntoNameSet();
  lmdb::Txn& txn() { return txn_; }
  Result<MDB_dbi> Table(std::string_view name);

 private:
  Result<PutResult> PutObject(ObjectType type, uint8_t kind, std::string_view media_type,
                              std::string_view raw, const Digest& d);
  // Every write of the batch goes through these. Writes to a table other
  // than objects, meta and dicts are staged (staged_): held back, and
  // written in key order when the table is scanned, dropped or the batch
  // commits; GetKV reads through them. WriteKV puts a key that sorts after
  // every key of its table through LMDB's append path, which starts a new
  // page instead of splitting the last one in half, so that a table a
  // batch fills (an import, a reindex) ends with full pages instead of the
  // half-full ones of writes in the order they arise (barenames was 51%
  // full, catalog.events 62%: bench/results/catalog-2026-12-02.md). Other
  // writes are ordinary puts.
  Status PutKV(MDB_dbi dbi, std::string_view key, std::string_view value);
  Status WriteKV(MDB_dbi dbi, std::string_view key, std::string_view value);
  Result<char*> ReserveKV(MDB_dbi dbi, std::string_view key, size_t size);
  Result<bool> SortsLast(MDB_dbi dbi, std::string_view key);
  Status DelKV(MDB_dbi dbi, std::string_view key);
  // Deletes now, forgetting the key if it was the table's remembered last one.
  Status EraseKV(MDB_dbi dbi, std::string_view key) {
    if (auto it = last_.find(dbi); it != last_.end() && it->second && *it->second == key) last_.erase(it);
    return txn_.Del(dbi, key);
  }
  // A key's value as the batch has it: staged, else in the transaction.
  Result<std::optional<std::string_view>> GetKV(MDB_dbi dbi, std::string_view key);
  // Writes a table's staged entries (or every table's) in key order.
  Status FlushStaged(MDB_dbi dbi);
  Status FlushAllStaged();
  void DiscardStaged(MDB_dbi dbi) {
    if (auto it = staged_.find(dbi); it != staged_.end()) staged_.erase(it);
  }
  void RememberLast(MDB_dbi dbi, std::string_view key) {
    auto& slot = last_[dbi];
    if (slot) slot->assign(key);
    else slot.emplace(key);
  }
  // Checks the size and whether the object is stored intact; false: write it.
  Result<bool> Exists(uint64_t raw_size, const Digest& d);
  // Whether the store holds the object and its stored copy checks out
  // (re-hashed). A damaged copy is false, so that the same bytes, written
  // again (ki add, ki pull), replace it instead of being skipped as held.
  Result<bool> HeldIntact(const Digest& d);
  Status WriteObject(const EncodedObject& o);
  // The added time of a meta entry about to be written for d: the one the
  // entry it replaces has (a damaged copy written again keeps its age),
  // else the batch's now.
  Result<int64_t> AddedFor(MDB_dbi meta, const Digest& d);
  int64_t Now();
  // What PutManifest and PutEncodedManifest share after the object is put.
  Status LinkManifest(Kind kind, const Digest& d, bool existed, const std::vector<Reference>* refs,
                      const Manifest* m, std::optional<Digest> document, std::string_view name);

  LmdbStore* store_;
  lmdb::Txn txn_;
  std::map<std::string, MDB_dbi, std::less<>> opened_;
  // The last key of each table written to (nullopt: the table is empty).
  std::unordered_map<MDB_dbi, std::optional<std::string>> last_;
  std::vector<std::string> new_loose_files_;  // removed again if we do not commit
  std::set<std::string> dirs_to_sync_;
  // Objects this batch indexed that the store did not hold, for the
  // derived indexes (DerivedIndex::Update at Commit).
  std::vector<ObjectInfo> arrived_;
  // Manifests handed in parsed (EncodedManifest::parsed), for ViewManifest.
  std::unordered_map<Digest, std::shared_ptr<const Manifest>> parsed_;
  // Manifests held before that this batch gave a new name (RecordName).
  std::vector<ObjectInfo> renamed_;
  std::unordered_set<Digest> named_;
  std::unordered_set<uint32_t> dicts_ensured_;
  int64_t now_ = 0;  // Unix seconds, read once a batch (Now)
  uint32_t next_number_ = 0;  // 0 until read from seq (NewNumber)
  std::unordered_map<Digest, uint32_t> carried_;  // CarriedNumbers' (NumberFor)
  std::optional<std::unordered_map<Digest, uint32_t>> orphans_;  // OrphanRowNumber's, read once
  // New objects kept in LMDB, held back (until Commit, a use of their
  // tables by name, or kPendingLimit bytes) and then written in digest
  // order: a batch's objects, in whatever order they were put, then fill
  // LMDB's pages instead of splitting them (an import puts its facts
  // objects after its manifests). Reads in the batch see them. A loose
  // object's meta entry waits here too (its frame is its file; `frame` is
  // empty), so that meta is written in digest order as a whole.
  struct PendingObject {
    ObjectInfo info;
    std::string frame;
  };
  static constexpr size_t kPendingLimit = 256 << 20;
  // Staged writes (PutKV): key -> value, nullopt a delete. Tables read
  // directly through the transaction (objects and meta, which pending_
  // holds back instead; dicts, which frame decoding reads) are not staged.
  using StagedTable = std::map<std::string, std::optional<std::string>, std::less<>>;
  std::unordered_map<MDB_dbi, StagedTable> staged_;
  std::unordered_set<MDB_dbi> unstaged_;
  size_t staged_bytes_ = 0;
  static constexpr size_t kStagedLimit = 64 << 20;
  std::map<Digest, PendingObject> pending_;
  // pending_'s digests by number (DigestOfNumber), emptied with it.
  std::unordered_map<uint32_t, Digest> pending_numbers_;
  size_t pending_bytes_ = 0;
  Status FlushPending();
  Status FlushFor(std::string_view table) {
    return table == kObjects || table == kMeta ? FlushPending() : Status::OK();
  }
  bool committed_ = false;
};

class LmdbStore final : public Store {
 public:
  LmdbStore(std::string dir, StoreOptions opts) : dir_(std::move(dir)), opts_(opts) {
    if (!opts_.env) opts_.env = Env::Default();
  }

  // Takes the store lock shared (store_lock.h), unless the caller holds it
  // (UseCallersLock: ki gc's exclusive one), then opens the environment.
  Status Open(OpenMode mode);
  // Before Open: the caller holds the store lock for as long as this store
  // is open (and beyond: gc replaces data.mdb after closing it).
  void UseCallersLock() { callers_lock_ = true; }

  // A read transaction: the snapshot when this thread holds one, else a
  // transaction of its own that ends with this object.
  class ReadTxn {
   public:
    explicit ReadTxn(lmdb::Txn* snapshot) : snapshot_(snapshot) {}
    explicit ReadTxn(lmdb::Txn own) : own_(std::move(own)) {}
    lmdb::Txn& operator*() { return snapshot_ ? *snapshot_ : own_; }

   private:
    lmdb::Txn* snapshot_ = nullptr;
    lmdb::Txn own_;
  };
  Result<ReadTxn> BeginRead();
  // The snapshot (StoreOptions::snapshot_reads) seen from a second thread:
  // a read transaction of that thread's own, begun where it is made, which
  // that thread's reads (BeginRead) go through while it lives. held() is
  // false when the store holds no snapshot, or when a writer committed
  // since the snapshot began (the two would see two commits: LMDB's
  // transaction IDs differ); the thread's reads are then its own, as
  // without one. Made, used and ended on one thread.
  class SameSnapshot {
   public:
    explicit SameSnapshot(LmdbStore* store);
    ~SameSnapshot();
    SameSnapshot(const SameSnapshot&) = delete;
    SameSnapshot& operator=(const SameSnapshot&) = delete;
    bool held() const { return held_; }

   private:
    lmdb::Txn txn_;
    bool held_ = false;
  };

  const std::string& path() const override { return dir_; }
  Env* env() const { return opts_.env; }
  const StoreOptions& options() const { return opts_; }
  lmdb::Environment& lmdb() { return lmdb_; }

  Result<std::optional<ObjectInfo>> Stat(const Digest& d) override;

  Result<std::optional<ObjectInfo>> StatIn(lmdb::Txn& txn, const Digest& d);

  Result<std::optional<AbsentInfo>> StatAbsent(const Digest& d) override;

  // Reads a frame as stored, without decoding.
  Result<std::string> ReadFrame(const ObjectInfo& info);
  Result<std::string> ReadFrameIn(lmdb::Txn& txn, const ObjectInfo& info);
  Result<std::string> ReadLooseFrame(const ObjectInfo& info);

  // Decodes a frame and checks that it is what the index says it is. A
  // dictionary the frame needs is read through `txn` (nullptr: a read
  // transaction of its own); when that is what failed, *dict_fault is set
  // to its ID.
  Result<std::string> DecodeChecked(const ObjectInfo& info, std::string_view frame, uint32_t* dict_fault = nullptr) {
    return DecodeCheckedIn(nullptr, info, frame, dict_fault);
  }
  Result<std::string> DecodeCheckedIn(lmdb::Txn* txn, const ObjectInfo& info, std::string_view frame,
                                      uint32_t* dict_fault = nullptr);
  // DecodeCheckedIn in two steps: PlanDecode reads what the frame needs
  // from the index (its header checked against the entry, its dictionary),
  // DecodePlanned decodes and re-hashes, touching no LMDB transaction, so
  // it may run on another thread than the one holding the read snapshot.
  // The frame a based frame is based on (frame.h, FrameBase), as PlanDecode
  // read it from its objects row: decoded and re-hashed by DecodePlanned.
  struct BaseFrame {
    Digest digest;
    std::string frame;
    FrameHeader header;
    std::shared_ptr<const Dictionary> dict;
  };
  struct DecodePlan {
    FrameHeader header;
    std::shared_ptr<const Dictionary> dict;
    std::shared_ptr<const BaseFrame> base;  // a based frame's base
  };
  // A based frame's base, read from the row of its number (through `txn`;
  // nullptr: a read transaction of its own) and checked to be a frame that
  // is not itself based; `where` names the based frame.
  // `dictionary_for`, when given, finds the base's dictionary instead of
  // the dicts table (a reindex, which refills that table as it goes).
  using DictionaryFor = std::function<Result<std::shared_ptr<const Dictionary>>(const FrameHeader&, const std::string&)>;
  Result<std::shared_ptr<const BaseFrame>> PlanBase(lmdb::Txn* txn, const FrameBase& base, const std::string& where,
                                                    uint32_t* dict_fault = nullptr,
                                                    const DictionaryFor& dictionary_for = nullptr);
  // The base's bytes, decoded and re-hashed: Corruption naming the base
  // when they are not what its digest says.
  Result<std::string> DecodeBase(const BaseFrame& base, const std::string& where, uint32_t* dict_fault = nullptr);
  Result<DecodePlan> PlanDecode(lmdb::Txn* txn, const ObjectInfo& info, std::string_view frame,
                                uint32_t* dict_fault = nullptr);
  Result<std::string> DecodePlanned(const ObjectInfo& info, std::string_view frame, const DecodePlan& plan,
                                    uint32_t* dict_fault = nullptr);

  // The dictionary with this ID, as the store holds it (`dicts`, then the
  // object, re-hashed): Corruption naming it when the store does not hold
  // it or its bytes are damaged; `where` names the frame that needs it.
  // Cached per store: reads run on several threads.
  Result<std::shared_ptr<const Dictionary>> FrameDictionary(lmdb::Txn& txn, uint32_t id, const std::string& where);
  Result<std::shared_ptr<const Dictionary>> FrameDictionary(uint32_t id, const std::string& where);
  // Corruption naming the dictionary when its bytes do not hash to its
  // digest (and it leaves the cache).
  Status CheckDictionary(const Dictionary& dict, const std::string& where);
  // A dictionary whose object a batch is storing (the same bytes).
  void CacheDictionary(std::shared_ptr<const Dictionary> d) {
    std::lock_guard<std::mutex> lock(dict_mu_);
    dicts_[d->id()] = std::move(d);
  }

  Result<std::string> Read(const Digest& d) override;

  Status ReadStream(const Digest& d, const std::function<Status(std::string_view)>& out) override;

  // Whether the loose file at `path` (not indexed) holds the object `d`
  // names: OK, or why not. A file that does not is never adopted: a write
  // of the object's good bytes replaces it, and until then audit reports
  // it as a fault.
  Status CheckUnindexedLoose(const std::string& path, const Digest& d);
  // The same for a frame kept in LMDB that no index entry names.
  Status CheckUnindexedFrame(std::string_view frame, const Digest& d);

  // A loose object's frame opened for a streamed read (StreamLoose, a
  // BlobReader): its file, its header, checked against the index, and the
  // dictionary it needs, checked, all before any byte goes out.
  struct LooseFrame {
    std::unique_ptr<SequentialFile> file;
    FrameHeader header;
    std::shared_ptr<const Dictionary> dict;
  };
  Result<LooseFrame> OpenLooseFrame(const ObjectInfo& info);

  // A loose object's frame decoded and checked as it is read: the header
  // against the index before any byte goes out, the content hash at the end.
  Status StreamLoose(const ObjectInfo& info, const std::function<Status(std::string_view)>& out);

  Result<Manifest> ReadManifest(const Digest& d) override;

  Result<std::optional<Digest>> DocumentOf(const Digest& d) override;

  Result<std::optional<Json>> ReadDocument(const Digest& d) override;

  Result<std::vector<Digest>> LookupName(Kind kind, std::string_view name) override;

  Result<std::vector<std::string>> NamesOf(const Digest& d) override;
  Result<std::vector<std::string>> NamesOf(const ObjectInfo& info) override;

  Result<Digest> Resolve(std::string_view ref) override;

  Status ForEachObject(const std::function<bool(const ObjectInfo&)>& fn) override;

  Status ForEachOfKind(Kind kind, const std::function<bool(const Digest&)>& fn) override;

  Result<std::vector<std::pair<Digest, std::string>>> Referrers(const Digest& d) override;

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override;

  Status Scan(std::string_view table, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override;

  Status ScanIn(lmdb::Txn& txn, std::string_view table, std::string_view prefix,
                const std::function<bool(std::string_view, std::string_view)>& fn);

  Result<std::unique_ptr<Batch>> NewBatch() override;

  EncodedManifest EncodeManifest(const Manifest& m, std::optional<std::string_view> document,
                                 std::string_view document_media_type) const override;

  // What Verify and ki gc share: every object `roots` (digest, how it was
  // reached) reach through references, document links and `more`, each
  // visited once, breadth first. A held manifest is read, re-hashed and
  // parsed (a fault stops the walk there: its references are unknown); a
  // blob is re-hashed only with WalkRead::kEvery (Verify), else only
  // looked up (gc needs to know it is held, not that its bytes are good).
  // `visit` gets the object's check (missing, corrupt or ok); an error it
  // returns ends the walk. `more` (may be empty) adds the edges of a held
  // object that its bytes do not carry (ki gc's module references).
  enum class WalkRead { kEvery, kManifests };
  using WalkEdges = std::function<Status(const ObjectInfo&, std::vector<std::pair<Digest, std::string>>*)>;
  Status Walk(const std::vector<std::pair<Digest, std::string>>& roots, WalkRead read, const WalkEdges& more,
              const std::function<Status(const CheckEntry&)>& visit);
  Result<VerifyReport> Verify(const Digest& root) override;
  Result<AuditReport> Audit() override;
  Result<AuditReport> Reindex() override;
  Status RecordDocumentNames();
  int format_version() const override { return format_version_; }
  Result<std::optional<Digest>> DigestOfNumber(uint32_t n) override;
  // Whether docs and namesof keys hold object numbers (format 10) rather
  // than digests (a store of format 9 or before, read as it is).
  bool numbered() const { return numbered_; }
  // Whether `objects` is keyed by object number and refs keys hold their
  // referrer's number (format 12) rather than digests (a store of format 11
  // or before, read as it is). KeyObjectsByNumber sets it once it has
  // rewritten both.
  bool objects_numbered() const { return objects_numbered_; }
  void set_objects_numbered() { objects_numbered_ = true; }
  // The key of an object's objects row (its number, or its digest).
  std::string ObjectsKey(const ObjectInfo& info) const {
    return objects_numbered_ ? NumberKey(info.number) : std::string(info.digest.raw());
  }
  // A referrer's part of a refs key (RefKey): its number or its digest,
  // as its objects row is keyed.
  std::string RefReferrerPart(const ObjectInfo& referrer) const { return ObjectsKey(referrer); }
  // A refs key split into its target, its referrer's key part and the
  // field's bytes (RefField reads them); nullopt for a key too short.
  struct RefKeyParts {
    Digest target;
    std::string_view referrer;
    std::string_view field;
  };
  std::optional<RefKeyParts> SplitRefKey(std::string_view key) const;
  // The referrer a refs key part names: its digest, or (format 12) the
  // digest numbered so in `by_number`; nullopt when none is.
  std::optional<Digest> ReferrerOf(std::string_view part, const std::unordered_map<uint32_t, Digest>& by_number) const;
  // The digest of the object numbered `n`, from its objects row (format 12);
  // nullopt when no row holds it.
  Result<std::optional<Digest>> DigestOfNumberIn(lmdb::Txn& txn, uint32_t n);
  // The tables kept as set tables (lmdb.h): refs.
  std::vector<std::string_view> SetTables() const;
  // Every held object by its number (a meta scan): what reading a
  // numbered key back takes. Entries without a number are left out.
  Result<std::unordered_map<uint32_t, Digest>> ObjectsByNumber();
  // A namesof key's holder and name, in either layout (numbered()); the
  // holder is nullopt when the key part names no held object.
  struct NamesOfEntry {
    std::optional<Digest> holder;
    std::string_view name;  // "Kind/name"
    bool well_formed = false;
  };
  NamesOfEntry SplitNamesOf(std::string_view key, const std::unordered_map<uint32_t, Digest>& by_number) const;
  // A docs key's manifest, in either layout.
  std::optional<Digest> DocsKeyHolder(std::string_view key, const std::unordered_map<uint32_t, Digest>& by_number) const;
  // Format 1 -> 2: each derived index turns what it kept in tables into
  // objects, then every derived table is rebuilt, then FORMAT is rewritten.
  // Killed at any point, the store stays format 1 (or is already 2) and
  // the next open upgrades it again; nothing is lost.
  Status Upgrade();
  // `faulty`: objects whose own bytes are faults (left out, as reindex
  // leaves them out). `verified`: contents Audit has re-hashed already,
  // which the indexes read from there instead of the store.
  Status CheckDerived(const std::vector<ObjectInfo>& infos, const std::unordered_set<Digest>& faulty,
                      const VerifiedContents& verified, AuditReport* report);
  // What the store's own derived tables must hold, gathered by Audit as it
  // reads every manifest (and dictionary).
  struct ExpectedTables {
    // Key -> value: the reference's artifact URI.
    std::unordered_map<std::string, std::string> refs;
    std::map<uint32_t, Digest> dicts;
    // nameset keys: what the documents give (DocumentNameSet).
    std::set<std::string> names;
    // What each document that reads gives, in digest order.
    std::vector<DocumentGives> documents;
    // Every held object by its number (ObjectsByNumber).
    std::unordered_map<uint32_t, Digest> by_number;
  };
  // Format 10's numbers: every object has one, no two share one, and seq's
  // next number is above them all.
  Status CheckNumbers(const std::vector<ObjectInfo>& infos, AuditReport* report);
  // Format 12's objects rows: each holds an object's digest under the number
  // its index entry gives, with its frame (collected into unindexed_frames
  // when no entry names it so, as audit's step 2 reports frames) or, for a
  // loose object, alone; every loose object has its row.
  Status CheckObjectRows(const std::vector<ObjectInfo>& infos,
                         std::vector<std::pair<Digest, std::string>>* unindexed_frames, AuditReport* report);
  Status CheckStoreTables(const ExpectedTables& want, const std::unordered_set<Digest>& indexed,
                          AuditReport* report);
  // Each document of `gives` that no docs entry links, with the held
  // manifest it holds, when that manifest has no document linked at all (a
  // lost link: audit reports it, reindex restores it).
  Status ForEachUnlinkedDocument(const std::vector<DocumentGives>& gives, const std::unordered_set<Digest>& linked,
                                 const std::function<void(const Digest&, const Digest&)>& fn);
  // What a document blob gives (nullopt when it is not one or its bytes do
  // not read: a fault of their own). `bytes`: its content, already read and
  // re-hashed (audit's pass over every object), or nullptr to read it.
  // names.cc.
  std::optional<DocumentGives> DocumentGivesOf(const ObjectInfo& info, const std::string* bytes);
  // DocumentGivesOf of every document the store holds, in digest order.
  Result<std::vector<DocumentGives>> EveryDocumentGives();
  // Every name the documents the store holds give its manifests, as
  // nameset keys (DocumentNameSet of `gives`, which EveryDocumentGives or
  // audit's pass gathered): names are recorded only from documents, so
  // names, nameset and namesof must agree with this, and reindex rebuilds
  // them from it. names.cc.
  Result<std::set<std::string>> DocumentNames(const std::vector<DocumentGives>& gives);

 private:
  // Checks one object: bytes re-hashed, frame agrees with the index.
  // *dict_fault: as DecodeChecked sets it.
  CheckEntry Check(const ObjectInfo& info, std::string* raw_out, uint32_t* dict_fault = nullptr);
  // Check of an object whose bytes are not wanted and that is a loose file
  // (a blob, or `want_raw` false): streamed through, never held whole.
  static bool Streamed(const ObjectInfo& info, bool want_raw);
  // Check of any other object in two steps, as DecodeCheckedIn's: the frame
  // read and planned on the thread holding the read snapshot (FetchFrame),
  // then decoded and re-hashed on any thread (CheckFetched).
  struct FetchedFrame {
    Status read;     // reading the frame failed
    std::string frame;
    Status planned;  // PlanDecode failed
    DecodePlan plan;
    uint32_t dict = 0;  // PlanDecode's dict_fault
  };
  FetchedFrame FetchFrame(const ObjectInfo& info);
  CheckEntry CheckFetched(const ObjectInfo& info, const FetchedFrame& f, std::string* raw_out,
                          uint32_t* dict_fault = nullptr);
  // Audit's step 1 for one object, as CheckEveryObject gives it.
  struct ObjectCheck {
    CheckEntry e;
    uint32_t dict_fault = 0;  // as Check sets it
    std::string raw;          // the content, when read whole (and for a dictionary)
    bool read = false;        // raw is the content, re-hashed
    // A manifest that read: it parses and agrees with its header, and its
    // references (what refs must hold for it); parsed, it moves to
    // VerifiedContent (raw is then empty: its canonical bytes are raw).
    Status agrees;
    std::shared_ptr<const Manifest> manifest;
    std::vector<Reference> refs;
    // A document: what it gives (nullopt: it does not read as a manifest).
    std::optional<DocumentGives> gives;
    bool gives_unread = false;  // (internal) read again after the threads
    // A document read whole whose gives the caller reads from its bytes
    // (GivesRead::kLater).
    bool gives_later = false;
  };
  // Check of every object of `infos`, with each manifest parsed against its
  // header and each document's name: on two threads when the machine has
  // them, the result in `infos`' order (object_pass.cc).
  // Where a document's gives are read: in the pass, or by the caller from
  // the bytes the pass kept (Audit: beside the catalog's rebuild).
  enum class GivesRead { kInPass, kLater };
  Result<std::vector<ObjectCheck>> CheckEveryObject(const std::vector<ObjectInfo>& infos, GivesRead names);
  // Whether audit's work may take a second thread: the machine has two
  // cores and KI_AUDIT_THREADS is not 1 (object_pass.cc).
  static bool SecondAuditThread();
  // Whether the pass keeps an object's bytes (all it reads whole).
  static bool WantsContent(const ObjectInfo& info);
  // The parsing part of an object's check, on either thread.
  void CheckContent(const ObjectInfo& info, GivesRead names, ObjectCheck* c);
  // The entry for what the check found: `s`, with the frame's version and
  // stored size, and the dictionary to blame (0: none).
  CheckEntry CheckOutcome(const ObjectInfo& info, Status s, uint8_t version, uint64_t stored, uint32_t dict,
                          uint32_t* dict_fault);

  std::string dir_;
  StoreOptions opts_;
  bool read_only_ = true;
  int format_version_ = kFormatVersion;
  bool numbered_ = true;
  bool objects_numbered_ = true;
  // Declared before lmdb_: released only after the environment is closed.
  StoreLock lock_;
  bool callers_lock_ = false;
  lmdb::Environment lmdb_;
  std::mutex dict_mu_;
  std::unordered_map<uint32_t, std::shared_ptr<const Dictionary>> dicts_;
  // StoreOptions::snapshot_reads; declared after lmdb_ so that it ends first.
  lmdb::Txn snapshot_;
  std::thread::id snapshot_thread_;
};

// ---------------------------------------------------------------- derived-index overlay

// What Audit rebuilds a derived index into: the index's own tables start
// empty and live in memory; every other read goes to the store as it is.
// Nothing is written to the store (Audit may run on a read-only store, and
// beside a writer).
class ShadowBatch final : public Batch {
 public:
  using TableMap = std::map<std::string, std::string, std::less<>>;
  // `verified` (may be null) answers Read and ReadManifest for what it holds.
  // `faulty` (may be null): objects audit found damaged, which the index
  // reads as not held, as after ki audit --reindex (which indexes none of
  // them): a run whose implementation is damaged is compared as a run
  // lacking it, and the damaged frame is not read again (that read failed
  // the whole audit, instead of reporting the object).
  ShadowBatch(LmdbStore* store, const std::vector<std::string_view>& owned, const VerifiedContents* verified = nullptr,
              const std::unordered_set<Digest>* faulty = nullptr);

  Result<PutResult> PutBlob(std::string_view, std::string_view) override { return Refused(); }
  using Batch::PutBlobStream;
  Result<PutResult> PutBlobStream(SequentialFile&, std::string_view, const std::string&,
                                  const std::optional<Digest>&) override {
    return Refused();
  }
  Result<PutResult> PutManifest(const Manifest&, std::optional<std::string_view>, std::string_view) override {
    return Refused();
  }
  Result<PutResult> PutEncodedManifest(const EncodedManifest&) override { return Refused(); }
  Result<std::vector<PutResult>> PutEncodedManifests(const std::vector<EncodedManifest>&) override {
    return Refused();
  }
  Status SetName(Kind, std::string_view, const Digest&) override { return Refused(); }
  Status RecordAbsent(const AbsentInfo&) override { return Refused(); }
  Status Put(std::string_view table, std::string_view key, std::string_view value) override {
    auto it = tables_.find(table);
    if (it == tables_.end()) return Refused();
    it->second.insert_or_assign(std::string(key), std::string(value));
    return Status::OK();
  }
  Status Delete(std::string_view table, std::string_view key) override {
    auto it = tables_.find(table);
    if (it == tables_.end()) return Refused();
    if (auto k = it->second.find(key); k != it->second.end()) it->second.erase(k);
    return Status::OK();
  }
  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override;
  Status Scan(std::string_view table, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override;
  Result<bool> Has(const Digest& d) override;
  Result<std::optional<ObjectInfo>> Stat(const Digest& d) override;
  Result<std::string> Read(const Digest& d) override;
  Result<Manifest> ReadManifest(const Digest& d) override;
  Result<std::shared_ptr<const Manifest>> ViewManifest(const Digest& d) override;
  // The store's name tables as they are, of a damaged object too (Stat
  // hides those): what the indexes read of them, as a reindex's batch sees.
  Result<std::vector<std::string>> NamesOf(const Digest& d) override { return store_->NamesOf(d); }
  Result<std::optional<Digest>> DocumentOf(const Digest& d) override { return store_->DocumentOf(d); }
  // refs as the store holds them (refs is odb's, never an index's own).
  Result<std::vector<Digest>> ReferrersOf(const Digest& d) override;
  Status DropTable(std::string_view table) override {
    auto it = tables_.find(table);
    if (it == tables_.end()) return Refused();
    it->second.clear();
    return Status::OK();
  }
  Result<std::optional<Digest>> DigestOfNumber(uint32_t n) override;
  // The store's layout as it is: an index rebuilt for comparison must spell
  // its tables as those in place (a store of an older format opened
  // read-only keeps its own until it is upgraded).
  int format_version() const override { return format_; }
  // The layout its index's tables hold (DerivedIndex::HeldFormat).
  void set_format_version(int format) { format_ = format; }
  Status Commit() override { return Refused(); }

  const std::map<std::string, TableMap, std::less<>>& tables() const { return tables_; }

 private:
  static Status Refused() {
    return Status::InvalidInput("internal: a derived index wrote outside its own tables during audit");
  }
  bool Faulty(const Digest& d) const { return faulty_ && faulty_->count(d); }
  LmdbStore* store_;
  const VerifiedContents* verified_;
  const std::unordered_set<Digest>* faulty_;
  std::map<std::string, TableMap, std::less<>> tables_;
  int format_;
};

}  // namespace ki::odb
