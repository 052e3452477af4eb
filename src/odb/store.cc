// The local object store: frames in LMDB or loose files, index in LMDB.
// Format: docs/format.md. Module map: docs/architecture.md.
#include "ki/store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <filesystem>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "index/lmdb.h"
#include "json/fields.h"
#include "odb/frame.h"
#include "odb/tables.h"

namespace ki {

using odb::kAbsent;
using odb::kBareNames;
using odb::kDocs;
using odb::kKinds;
using odb::kMeta;
using odb::kNames;
using odb::kNamesOf;
using odb::kNameSet;
using odb::kObjects;
using odb::kRefs;

namespace {

constexpr std::string_view kFormatFile = "FORMAT";
// Format 2 (2026-12): catalog facts are objects and every catalog table is
// derived. A format-1 store is upgraded when it is opened (Store::Open).
constexpr std::string_view kFormatLine = "ki-store 2\n";
constexpr std::string_view kFormatLineV1 = "ki-store 1\n";
constexpr std::string_view kIndexDir = "index";

std::string KindKey(Kind k, const Digest& d) {
  std::string key(1, char(uint8_t(k)));
  key.append(d.raw());
  return key;
}

std::string NameKey(Kind k, std::string_view name) {
  return std::string(KindName(k)) + "/" + std::string(name);
}

// obj[outer][key] when it is a string, else "" (whatever obj is): a
// document's metadata.name or .title, an environment's hardware.product.
std::string NestedString(const Json& obj, std::string_view outer, std::string_view key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(outer);
  return it == obj.end() ? "" : StringOr(*it, key);
}

// nameset: "Kind/name" + digest. metadata.name is at most 200 characters
// (the KernelIndex schemas), so the key is far below LMDB's limit.
std::string NameSetKey(Kind k, std::string_view name, const Digest& d) {
  std::string key = NameKey(k, name);
  key.append(d.raw());
  return key;
}

// refs: target + referrer + JSON pointer of the field. The pointer runs
// through user-chosen names (tensors have no length limit), so the key is
// fitted to LMDB's limit; Referrers shows a shortened field with "…".
std::string RefKey(const Digest& target, const Digest& referrer, std::string_view field) {
  std::string key(target.raw());
  key.append(referrer.raw());
  key.append(field);
  return lmdb::FitKey(std::move(key));
}

std::string BareNameKey(Kind k, std::string_view name) {
  std::string key(name);
  key.push_back('\0');
  key.append(KindName(k));
  return key;
}

std::string AbsentValue(const AbsentInfo& a) {
  Json j = Json::object();
  if (!a.media_type.empty()) j["mediaType"] = a.media_type;
  if (a.size) j["size"] = *a.size;
  if (!a.uri.empty()) j["uri"] = a.uri;
  return j.dump();
}

AbsentInfo ParseAbsent(const Digest& d, std::string_view v) {
  AbsentInfo a;
  a.digest = d;
  Json j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (j.contains("mediaType") && j["mediaType"].is_string()) a.media_type = j["mediaType"];
    if (j.contains("size") && j["size"].is_number_unsigned()) a.size = j["size"].get<uint64_t>();
    if (j.contains("uri") && j["uri"].is_string()) a.uri = j["uri"];
  }
  return a;
}

// A name for a scratch file under objects/incoming, unique among the
// processes writing to the store.
std::string ScratchName() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// Removes the scratch files it holds on every way out of a streamed write.
struct ScratchFiles {
  Env* env;
  std::vector<std::string> paths;
  ~ScratchFiles() {
    for (const auto& p : paths) (void)env->RemoveFile(p);  // best effort: audit notes leftovers
  }
};

Status Discard(std::string_view) { return Status::OK(); }

std::string Describe(const ObjectInfo& info) {
  if (info.type == ObjectType::kManifest && info.kind) return std::string(KindName(*info.kind));
  return "blob " + info.media_type;
}

class LmdbStore;

std::vector<DerivedIndex*>& DerivedIndexes() {
  static std::vector<DerivedIndex*> indexes;
  return indexes;
}

// Calls fn for each key of `dbi` that starts with prefix, in key order,
// until fn returns false.
Status ScanTable(lmdb::Txn& txn, MDB_dbi dbi, std::string_view prefix,
                 const std::function<bool(std::string_view, std::string_view)>& fn) {
  KI_ASSIGN_OR_RETURN(auto cur, lmdb::Cursor::Open(txn, dbi));
  KI_ASSIGN_OR_RETURN(bool more, cur.Seek(prefix));
  while (more) {
    if (cur.key().substr(0, prefix.size()) != prefix) break;
    if (!fn(cur.key(), cur.value())) break;
    KI_ASSIGN_OR_RETURN(more, cur.Next());
  }
  return Status::OK();
}

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
  // is the name's latest holder (names, barenames).
  Status RecordName(Kind kind, std::string_view name, const Digest& target);
  Status PointName(Kind kind, std::string_view name, const Digest& target);
  Status RecordAbsent(const AbsentInfo& info) override;
  Status Put(std::string_view table, std::string_view key, std::string_view value) override {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    return PutKV(dbi, key, value);
  }
  Status Delete(std::string_view table, std::string_view key) override {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    return DelKV(dbi, key);
  }
  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    KI_ASSIGN_OR_RETURN(auto v, txn_.Get(dbi, key));
    if (!v) return std::optional<std::string>();
    return std::optional<std::string>(std::string(*v));
  }
  Status Scan(std::string_view table, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override;
  Result<bool> Has(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
    KI_ASSIGN_OR_RETURN(auto v, txn_.Get(meta, d.raw()));
    return v.has_value();
  }
  Result<std::optional<ObjectInfo>> Stat(const Digest& d) override;
  Result<std::string> Read(const Digest& d) override;
  Result<Manifest> ReadManifest(const Digest& d) override;
  Status DropTable(std::string_view table) override {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    last_.erase(dbi);
    return txn_.Drop(dbi);
  }
  Status Commit() override;

  // Used by Reindex(): the frame is already on disk.
  Status IndexFrame(const Digest& d, const odb::FrameHeader& h, Location loc, uint64_t stored_size,
                    std::string_view raw);
  lmdb::Txn& txn() { return txn_; }
  Result<MDB_dbi> Table(std::string_view name);

 private:
  Result<PutResult> PutObject(ObjectType type, uint8_t kind, std::string_view media_type,
                              std::string_view raw, const Digest& d);
  // Every write of the batch goes through these: a key that sorts after
  // every key of its table is put through LMDB's append path, which starts
  // a new page instead of splitting the last one in half. Writes in key
  // order (a bulk import sorts them) then fill pages; other writes are
  // ordinary puts.
  Status PutKV(MDB_dbi dbi, std::string_view key, std::string_view value);
  Result<char*> ReserveKV(MDB_dbi dbi, std::string_view key, size_t size);
  Result<bool> SortsLast(MDB_dbi dbi, std::string_view key);
  // Deletes, forgetting the key if it was the table's remembered last one.
  Status DelKV(MDB_dbi dbi, std::string_view key) {
    if (auto it = last_.find(dbi); it != last_.end() && it->second && *it->second == key) last_.erase(it);
    return txn_.Del(dbi, key);
  }
  void RememberLast(MDB_dbi dbi, std::string_view key) {
    auto& slot = last_[dbi];
    if (slot) slot->assign(key);
    else slot.emplace(key);
  }
  // Checks the size and whether the object is stored; false: write it.
  Result<bool> Exists(uint64_t raw_size, const Digest& d);
  Status WriteObject(const EncodedObject& o, bool index_kind = true);
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
  // Manifests held before that this batch gave a new name (RecordName).
  std::vector<ObjectInfo> renamed_;
  std::unordered_set<Digest> named_;
  bool committed_ = false;
};

class LmdbStore final : public Store {
 public:
  LmdbStore(std::string dir, StoreOptions opts) : dir_(std::move(dir)), opts_(opts) {
    if (!opts_.env) opts_.env = Env::Default();
  }

  Status Open(OpenMode mode) {
    KI_ASSIGN_OR_RETURN(std::string fmt, env()->ReadFile(dir_ + "/" + std::string(kFormatFile), 4096));
    if (fmt == kFormatLineV1) {
      format_version_ = 1;
    } else if (fmt != kFormatLine) {
      return Status::InvalidInput(dir_ + ": unsupported store format '" + fmt.substr(0, fmt.find('\n')) +
                                  "' (this ki reads 'ki-store 2', and upgrades 'ki-store 1')");
    }
    read_only_ = mode == OpenMode::kReadOnly;
    if (!read_only_ && !env()->IsWritableDir(dir_)) {
      return Status::IOError("the store " + dir_ + " is not writable");
    }
    KI_RETURN_IF_ERROR(lmdb_.Open(dir_ + "/" + std::string(kIndexDir), opts_.map_size, read_only_));
    KI_RETURN_IF_ERROR(
        lmdb_.OpenAllTables({kObjects, kMeta, kKinds, kRefs, kAbsent, kNames, kBareNames, kNamesOf, kNameSet, kDocs}));
    if (opts_.snapshot_reads) {
      // A writer would not see its own commits through the snapshot.
      if (!read_only_) return Status::InvalidInput("snapshot_reads needs a store opened read-only");
      KI_ASSIGN_OR_RETURN(snapshot_, lmdb::Txn::Begin(lmdb_, false));
      snapshot_thread_ = std::this_thread::get_id();
    }
    return Status::OK();
  }

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
  Result<ReadTxn> BeginRead() {
    if (snapshot_.get() && std::this_thread::get_id() == snapshot_thread_) return ReadTxn(&snapshot_);
    KI_ASSIGN_OR_RETURN(auto txn, lmdb::Txn::Begin(lmdb_, false));
    return ReadTxn(std::move(txn));
  }

  const std::string& path() const override { return dir_; }
  Env* env() const { return opts_.env; }
  const StoreOptions& options() const { return opts_; }
  lmdb::Environment& lmdb() { return lmdb_; }

  Result<std::optional<ObjectInfo>> Stat(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(auto read, BeginRead());
    lmdb::Txn& txn = *read;
    return StatIn(txn, d);
  }

  Result<std::optional<ObjectInfo>> StatIn(lmdb::Txn& txn, const Digest& d) {
    KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, kMeta));
    if (!dbi) return std::optional<ObjectInfo>();
    KI_ASSIGN_OR_RETURN(auto v, txn.Get(*dbi, d.raw()));
    if (!v) return std::optional<ObjectInfo>();
    ObjectInfo info;
    if (!odb::UnpackMeta(d.raw(), *v, &info)) {
      return Status::Corruption("index entry of " + d.str() + " is malformed");
    }
    return std::optional<ObjectInfo>(std::move(info));
  }

  Result<std::optional<AbsentInfo>> StatAbsent(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(auto v, Get(kAbsent, d.raw()));
    if (!v) return std::optional<AbsentInfo>();
    return std::optional<AbsentInfo>(ParseAbsent(d, *v));
  }

  // Reads a frame as stored, without decoding.
  Result<std::string> ReadFrame(const ObjectInfo& info) {
    if (info.location == Location::kLoose) return ReadLooseFrame(info);
    KI_ASSIGN_OR_RETURN(auto read, BeginRead());
    return ReadFrameIn(*read, info);
  }
  Result<std::string> ReadFrameIn(lmdb::Txn& txn, const ObjectInfo& info) {
    if (info.location == Location::kLoose) return ReadLooseFrame(info);
    KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, kObjects));
    std::optional<std::string_view> v;
    if (dbi) {
      KI_ASSIGN_OR_RETURN(v, txn.Get(*dbi, info.digest.raw()));
    }
    if (!v) return Status::Corruption(info.digest.str() + ": indexed, but its bytes are not in the store");
    return std::string(*v);  // copied out: LMDB data is valid only inside the txn
  }
  Result<std::string> ReadLooseFrame(const ObjectInfo& info) {
    {
      auto r = env()->ReadFile(odb::LoosePath(dir_, info.digest), opts_.max_object_size + (1 << 20));
      if (!r.ok() && r.status().IsNotFound()) {
        return Status::Corruption(info.digest.str() + ": loose object file is missing");
      }
      return r;
    }
  }

  // Decodes a frame and checks that it is what the index says it is.
  Result<std::string> DecodeChecked(const ObjectInfo& info, std::string_view frame) {
    std::string where = info.digest.str();
    KI_ASSIGN_OR_RETURN(auto h, odb::ParseFrameHeader(frame, where));
    if (h.type != info.type || h.raw_size != info.size ||
        (info.kind && h.kind != uint8_t(*info.kind))) {
      return Status::Corruption(where + ": frame header disagrees with the index");
    }
    KI_ASSIGN_OR_RETURN(std::string raw, odb::DecodeFrame(frame, h, opts_.max_object_size, where));
    Digest got = Sha256Of(raw);
    if (got != info.digest) {
      return Status::Corruption(where + ": content hashes to " + got.str());
    }
    return raw;
  }

  Result<std::string> Read(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (!info) return Status::NotFound(d.str() + " is not in the store");
    if (info->size > opts_.max_object_size) {
      return Status::InvalidInput(d.str() + " is " + std::to_string(info->size) + " bytes, over the limit of " +
                                  std::to_string(opts_.max_object_size) +
                                  " for an object read whole into memory (ki cat streams it)");
    }
    KI_ASSIGN_OR_RETURN(std::string frame, ReadFrame(*info));
    return DecodeChecked(*info, frame);
  }

  Status ReadStream(const Digest& d, const std::function<Status(std::string_view)>& out) override {
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (!info) return Status::NotFound(d.str() + " is not in the store");
    if (info->location == Location::kLoose) return StreamLoose(*info, out);
    KI_ASSIGN_OR_RETURN(std::string frame, ReadFrame(*info));
    KI_ASSIGN_OR_RETURN(std::string raw, DecodeChecked(*info, frame));
    return out(raw);
  }

  // A loose object's frame decoded and checked as it is read: the header
  // against the index before any byte goes out, the content hash at the end.
  Status StreamLoose(const ObjectInfo& info, const std::function<Status(std::string_view)>& out) {
    std::string where = info.digest.str();
    auto file = env()->NewSequentialFile(odb::LoosePath(dir_, info.digest));
    if (!file.ok()) {
      if (file.status().IsNotFound()) return Status::Corruption(where + ": loose object file is missing");
      return file.status();
    }
    KI_ASSIGN_OR_RETURN(auto h, odb::ReadFrameHeader(**file, where));
    if (h.type != info.type || h.raw_size != info.size || (info.kind && h.kind != uint8_t(*info.kind))) {
      return Status::Corruption(where + ": frame header disagrees with the index");
    }
    KI_ASSIGN_OR_RETURN(Digest got, odb::DecodeFrameStream(**file, h, where, out));
    if (got != info.digest) return Status::Corruption(where + ": content hashes to " + got.str());
    return Status::OK();
  }

  Result<Manifest> ReadManifest(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (!info) return Status::NotFound(d.str() + " is not in the store");
    if (info->type != ObjectType::kManifest) return Status::InvalidInput(d.str() + " is a blob, not a manifest");
    KI_ASSIGN_OR_RETURN(std::string frame, ReadFrame(*info));
    KI_ASSIGN_OR_RETURN(std::string raw, DecodeChecked(*info, frame));
    // The bytes were validated when stored and have just been re-hashed.
    auto m = ManifestFromStored(raw, d);
    if (!m.ok()) return Status::Corruption(m.status().message());
    return m;
  }

  Result<std::optional<Digest>> DocumentOf(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(auto v, Get(kDocs, d.raw()));
    if (!v || v->size() != 32) return std::optional<Digest>();
    return std::optional<Digest>(Digest::FromRaw(*v));
  }

  Result<std::optional<Json>> ReadDocument(const Digest& d) override {
    KI_ASSIGN_OR_RETURN(auto doc, DocumentOf(d));
    if (!doc) return std::optional<Json>();
    KI_ASSIGN_OR_RETURN(auto info, Stat(*doc));
    if (!info) return std::optional<Json>();
    KI_ASSIGN_OR_RETURN(std::string bytes, Read(*doc));
    DocFormat fmt = info->media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
    ParseLimits limits;
    limits.max_bytes = opts_.max_object_size;
    KI_ASSIGN_OR_RETURN(Json j, ParseDocument(bytes, fmt, doc->str(), limits));
    return std::optional<Json>(std::move(j));
  }

  Result<std::vector<Digest>> LookupName(Kind kind, std::string_view name) override {
    std::vector<Digest> out;
    const std::string key = NameKey(kind, name);
    KI_ASSIGN_OR_RETURN(auto latest, Get(kNames, key));
    if (latest && latest->size() == 32) out.push_back(Digest::FromRaw(*latest));
    // A store written before nameset existed has only the latest holder; a
    // reindex or a new add of the name records the others (format.md).
    KI_RETURN_IF_ERROR(Scan(kNameSet, key, [&](std::string_view k, std::string_view) {
      if (k.size() != key.size() + 32) return true;  // a longer name that starts with this one
      Digest d = Digest::FromRaw(k.substr(key.size()));
      if (out.empty() || !(out[0] == d)) out.push_back(d);
      return true;
    }));
    return out;
  }

  Result<std::vector<std::string>> NamesOf(const Digest& d) override {
    std::vector<std::string> out;
    KI_RETURN_IF_ERROR(Scan(kNamesOf, d.raw(), [&](std::string_view k, std::string_view) {
      out.emplace_back(k.substr(32));
      return true;
    }));
    return out;
  }

  Result<Digest> Resolve(std::string_view ref) override;

  Status ForEachObject(const std::function<bool(const ObjectInfo&)>& fn) override {
    ObjectInfo info;
    Status bad;
    KI_RETURN_IF_ERROR(Scan(kMeta, "", [&](std::string_view k, std::string_view v) {
      if (!odb::UnpackMeta(k, v, &info)) {
        bad = Status::Corruption("malformed index entry in table meta");
        return false;
      }
      return fn(info);
    }));
    return bad;
  }

  Status ForEachOfKind(Kind kind, const std::function<bool(const Digest&)>& fn) override {
    std::string prefix(1, char(uint8_t(kind)));
    return Scan(kKinds, prefix, [&](std::string_view k, std::string_view) {
      return k.size() == 33 ? fn(Digest::FromRaw(k.substr(1))) : true;
    });
  }

  Result<std::vector<std::pair<Digest, std::string>>> Referrers(const Digest& d) override {
    std::vector<std::pair<Digest, std::string>> out;
    KI_RETURN_IF_ERROR(Scan(kRefs, d.raw(), [&](std::string_view k, std::string_view) {
      if (k.size() >= 64) out.emplace_back(Digest::FromRaw(k.substr(32, 32)), lmdb::KeyText(k.substr(64)));
      return true;
    }));
    return out;
  }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    KI_ASSIGN_OR_RETURN(auto read, BeginRead());
    lmdb::Txn& txn = *read;
    KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, table));
    if (!dbi) return std::optional<std::string>();
    KI_ASSIGN_OR_RETURN(auto v, txn.Get(*dbi, key));
    if (!v) return std::optional<std::string>();
    return std::optional<std::string>(std::string(*v));
  }

  Status Scan(std::string_view table, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override {
    KI_ASSIGN_OR_RETURN(auto read, BeginRead());
    lmdb::Txn& txn = *read;
    return ScanIn(txn, table, prefix, fn);
  }

  Status ScanIn(lmdb::Txn& txn, std::string_view table, std::string_view prefix,
                const std::function<bool(std::string_view, std::string_view)>& fn) {
    KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, table));
    if (!dbi) return Status::OK();
    return ScanTable(txn, *dbi, prefix, fn);
  }

  Result<std::unique_ptr<Batch>> NewBatch() override {
    if (read_only_) return Status::IOError("the store was opened read-only");
    KI_ASSIGN_OR_RETURN(auto txn, lmdb_.BeginWrite());
    return std::unique_ptr<Batch>(new LmdbBatch(this, std::move(txn)));
  }

  EncodedManifest EncodeManifest(const Manifest& m, std::optional<std::string_view> document,
                                 std::string_view document_media_type) const override {
    EncodedManifest e;
    e.kind = m.kind;
    e.digest = m.digest;
    e.name = m.name();
    e.object.digest = m.digest;
    e.object.type = ObjectType::kManifest;
    e.object.kind = uint8_t(m.kind);
    e.object.media_type = "application/vnd.kernelindex.manifest+json";
    e.object.raw_size = m.canonical.size();
    e.object.frame = odb::EncodeFrame(ObjectType::kManifest, uint8_t(m.kind), e.object.media_type, m.canonical,
                                      opts_.zstd_level);
    e.references = ExtractReferences(m);
    if (document) {
      EncodedObject& d = e.document.emplace();
      d.digest = Sha256Of(*document);
      d.type = ObjectType::kBlob;
      d.media_type = std::string(document_media_type);
      d.raw_size = document->size();
      d.frame = odb::EncodeFrame(ObjectType::kBlob, 0, document_media_type, *document, opts_.zstd_level);
    }
    return e;
  }

  Result<VerifyReport> Verify(const Digest& root) override;
  Result<AuditReport> Audit() override;
  Result<AuditReport> Reindex() override;
  Status RecordDocumentNames();
  int format_version() const { return format_version_; }
  // Format 1 -> 2: each derived index turns what it kept in tables into
  // objects, then every derived table is rebuilt, then FORMAT is rewritten.
  // Killed at any point, the store stays format 1 (or is already 2) and
  // the next open upgrades it again; nothing is lost.
  Status Upgrade();
  Status CheckDerived(const std::vector<ObjectInfo>& infos, AuditReport* report);

 private:
  // Checks one object: bytes re-hashed, frame agrees with the index.
  CheckEntry Check(const ObjectInfo& info, std::string* raw_out);

  std::string dir_;
  StoreOptions opts_;
  bool read_only_ = true;
  int format_version_ = 2;
  lmdb::Environment lmdb_;
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
  ShadowBatch(LmdbStore* store, const std::vector<std::string_view>& owned);

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
  Status DropTable(std::string_view table) override {
    auto it = tables_.find(table);
    if (it == tables_.end()) return Refused();
    it->second.clear();
    return Status::OK();
  }
  Status Commit() override { return Refused(); }

  const std::map<std::string, TableMap, std::less<>>& tables() const { return tables_; }

 private:
  static Status Refused() {
    return Status::InvalidInput("internal: a derived index wrote outside its own tables during audit");
  }
  LmdbStore* store_;
  std::map<std::string, TableMap, std::less<>> tables_;
};

// ---------------------------------------------------------------- Batch

Status LmdbBatch::Scan(std::string_view table, std::string_view prefix,
                       const std::function<bool(std::string_view, std::string_view)>& fn) {
  KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
  return ScanTable(txn_, dbi, prefix, fn);
}

Result<std::optional<ObjectInfo>> LmdbBatch::Stat(const Digest& d) { return store_->StatIn(txn_, d); }

Result<std::string> LmdbBatch::Read(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->size > store_->options().max_object_size) {
    return Status::InvalidInput(d.str() + " is over the limit for an object read whole into memory");
  }
  KI_ASSIGN_OR_RETURN(std::string frame, store_->ReadFrameIn(txn_, *info));
  return store_->DecodeChecked(*info, frame);
}

Result<Manifest> LmdbBatch::ReadManifest(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->type != ObjectType::kManifest) return Status::InvalidInput(d.str() + " is a blob, not a manifest");
  KI_ASSIGN_OR_RETURN(std::string raw, Read(d));
  auto m = ManifestFromStored(raw, d);
  if (!m.ok()) return Status::Corruption(m.status().message());
  return m;
}

ShadowBatch::ShadowBatch(LmdbStore* store, const std::vector<std::string_view>& owned) : store_(store) {
  for (auto t : owned) tables_[std::string(t)];
}

Result<std::optional<std::string>> ShadowBatch::Get(std::string_view table, std::string_view key) {
  auto it = tables_.find(table);
  if (it == tables_.end()) return store_->Get(table, key);
  auto k = it->second.find(key);
  if (k == it->second.end()) return std::optional<std::string>();
  return std::optional<std::string>(k->second);
}

Status ShadowBatch::Scan(std::string_view table, std::string_view prefix,
                         const std::function<bool(std::string_view, std::string_view)>& fn) {
  auto it = tables_.find(table);
  if (it == tables_.end()) return store_->Scan(table, prefix, fn);
  for (auto k = it->second.lower_bound(prefix); k != it->second.end(); ++k) {
    if (std::string_view(k->first).substr(0, prefix.size()) != prefix) break;
    if (!fn(k->first, k->second)) break;
  }
  return Status::OK();
}

Result<bool> ShadowBatch::Has(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, store_->Stat(d));
  return info.has_value();
}
Result<std::optional<ObjectInfo>> ShadowBatch::Stat(const Digest& d) { return store_->Stat(d); }
Result<std::string> ShadowBatch::Read(const Digest& d) { return store_->Read(d); }
Result<Manifest> ShadowBatch::ReadManifest(const Digest& d) { return store_->ReadManifest(d); }

LmdbBatch::~LmdbBatch() {
  if (!committed_) {
    txn_.Abort();
    // Pages an aborted or failed commit wrote past the end go back to the
    // file system (docs/format.md, "Index"); best effort.
    (void)store_->lmdb().TrimFile();
    // Best effort: a file left behind is an unindexed orphan audit reports.
    for (const auto& f : new_loose_files_) (void)store_->env()->RemoveFile(f);
  }
}

Result<bool> LmdbBatch::SortsLast(MDB_dbi dbi, std::string_view key) {
  auto it = last_.find(dbi);
  if (it == last_.end()) {
    MDB_cursor* c = nullptr;
    int rc = mdb_cursor_open(txn_.get(), dbi, &c);
    if (rc) return Status::IOError(std::string("LMDB cursor: ") + mdb_strerror(rc));
    MDB_val k{}, v{};
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND) return Status::IOError(std::string("LMDB cursor: ") + mdb_strerror(rc));
    std::optional<std::string> last;
    if (rc == 0) last.emplace(static_cast<const char*>(k.mv_data), k.mv_size);
    it = last_.emplace(dbi, std::move(last)).first;
  }
  // LMDB orders keys as memcmp, then shorter first: string_view's order.
  return !it->second || key > std::string_view(*it->second);
}

Status LmdbBatch::PutKV(MDB_dbi dbi, std::string_view key, std::string_view value) {
  KI_ASSIGN_OR_RETURN(bool last, SortsLast(dbi, key));
  if (last) {
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{value.size(), const_cast<char*>(value.data())};
    int rc = mdb_put(txn_.get(), dbi, &k, &v, MDB_APPEND);
    if (rc == 0) {
      RememberLast(dbi, key);
      return Status::OK();
    }
    if (rc != MDB_KEYEXIST) return txn_.Put(dbi, key, value);  // the ordinary path reports it
    last_.erase(dbi);  // LMDB knows better: re-read the last key next time
  }
  return txn_.Put(dbi, key, value);
}

Result<char*> LmdbBatch::ReserveKV(MDB_dbi dbi, std::string_view key, size_t size) {
  KI_ASSIGN_OR_RETURN(bool last, SortsLast(dbi, key));
  if (last) {
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{size, nullptr};
    int rc = mdb_put(txn_.get(), dbi, &k, &v, MDB_RESERVE | MDB_APPEND);
    if (rc == 0) {
      RememberLast(dbi, key);
      return static_cast<char*>(v.mv_data);
    }
    if (rc == MDB_KEYEXIST) last_.erase(dbi);
  }
  return txn_.Reserve(dbi, key, size);
}

Result<MDB_dbi> LmdbBatch::Table(std::string_view name) {
  if (auto it = opened_.find(name); it != opened_.end()) return it->second;
  KI_ASSIGN_OR_RETURN(auto dbi, store_->lmdb().Table(txn_, name));
  opened_.emplace(std::string(name), *dbi);
  return *dbi;
}

Result<bool> LmdbBatch::Exists(uint64_t raw_size, const Digest& d) {
  if (raw_size > store_->options().max_object_size) {
    return Status::InvalidInput("object of " + std::to_string(raw_size) + " bytes is over the limit of " +
                                std::to_string(store_->options().max_object_size));
  }
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_ASSIGN_OR_RETURN(auto existing, txn_.Get(meta, d.raw()));
  return existing.has_value();
}

Result<PutResult> LmdbBatch::PutObject(ObjectType type, uint8_t kind, std::string_view media_type,
                                       std::string_view raw, const Digest& d) {
  KI_ASSIGN_OR_RETURN(bool existed, Exists(raw.size(), d));
  if (existed) return PutResult{d, true};
  EncodedObject o;
  o.digest = d;
  o.type = type;
  o.kind = kind;
  o.media_type = std::string(media_type);
  o.raw_size = raw.size();
  o.frame = odb::EncodeFrame(type, kind, media_type, raw, store_->options().zstd_level);
  KI_RETURN_IF_ERROR(WriteObject(o));
  return PutResult{d, false};
}

Result<PutResult> LmdbBatch::PutBlobStream(SequentialFile& in, std::string_view media_type,
                                           const std::string& where, const std::optional<Digest>& expected) {
  Env* env = store_->env();
  const StoreOptions& opts = store_->options();
  const std::string incoming = store_->path() + "/objects/" + std::string(odb::kIncomingDir);
  KI_RETURN_IF_ERROR(env->CreateDirs(incoming));
  ScratchFiles scratch{env, {}};
  KI_ASSIGN_OR_RETURN(FileStat st, in.Stat());
  if (st.directory) return Status::InvalidInput(where + " is a directory");
  if (expected) {
    KI_ASSIGN_OR_RETURN(bool held, Has(*expected));
    if (held) return PutResult{*expected, true};
  }
  // The frame is compressed over the input mapped whole (EncodeFrameStream
  // says why); what cannot be mapped (a pipe, or a file that reports no
  // size) is copied to a scratch file first, and that is mapped.
  std::unique_ptr<MappedFile> map;
  bool direct = false;
  if (st.regular && st.size > 0) {
    auto mapped = in.Map();  // an Env's wrapper may not map: then copied like a pipe
    direct = mapped.ok();
    if (direct) map = std::move(mapped).value();
  }
  if (!direct) {
    std::string path = incoming + "/" + ScratchName() + ".in";
    KI_ASSIGN_OR_RETURN(auto copy, env->NewAtomicFile(path));
    std::string buf(1 << 20, '\0');
    for (;;) {
      KI_ASSIGN_OR_RETURN(size_t n, in.Read(buf.data(), buf.size()));
      if (n == 0) break;
      KI_RETURN_IF_ERROR(copy->Append(std::string_view(buf.data(), n)));
    }
    KI_RETURN_IF_ERROR(copy->Commit(Durability::kNone));  // scratch: never read after a crash
    scratch.paths.push_back(path);
    KI_ASSIGN_OR_RETURN(auto spooled, env->NewSequentialFile(path));
    KI_ASSIGN_OR_RETURN(map, spooled->Map());
  }
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  // Is the file's content already stored? Hashing it first costs a read
  // that SHA-256 does several times faster than zstd -3 compresses, and
  // spares an object already held the compression and a scratch write of
  // all of it (bench/results/blob-2026-11-30-readd.md). A pipe cannot be
  // read twice: its scratch copy goes through the one pass below.
  std::optional<Digest> hashed_first;
  if (direct && !expected) {
    KI_ASSIGN_OR_RETURN(hashed_first, odb::HashMapped(*map, where));
    KI_ASSIGN_OR_RETURN(auto held, txn_.Get(meta, hashed_first->raw()));
    if (held) {
      map.reset();
      KI_ASSIGN_OR_RETURN(FileStat now, in.Stat());
      if (now.size != st.size || now.mtime_ns != st.mtime_ns || now.ctime_ns != st.ctime_ns) {
        return Status::InvalidInput(where + ": changed while it was read; nothing was stored");
      }
      return PutResult{*hashed_first, true};
    }
    // Mapped again: the pass below releases the pages behind it as it goes,
    // which a mapping that the hash pass released whole would not do.
    map.reset();
    KI_ASSIGN_OR_RETURN(map, in.Map());
  }
  const uint64_t size = map->data().size();
  // The frame goes to a scratch name: its loose path is known at its end.
  const std::string staged = incoming + "/" + ScratchName();
  KI_ASSIGN_OR_RETURN(auto file, env->NewAtomicFile(staged));
  KI_ASSIGN_OR_RETURN(odb::StreamedFrame s,
                      odb::EncodeFrameStream(*map, ObjectType::kBlob, 0, media_type, opts.zstd_level, where,
                                             [&](std::string_view b) { return file->Append(b); }));
  map.reset();
  if (direct) {
    // zstd and the hash read the file at slightly different times: a file
    // written meanwhile could give a frame that is not what the digest
    // names, so it is refused (as git refuses a racily changed file).
    // The digest is the one the frame pass computed (zstd and SHA-256 read
    // the same pages together); the first pass must agree with it.
    KI_ASSIGN_OR_RETURN(FileStat now, in.Stat());
    if (now.size != st.size || now.mtime_ns != st.mtime_ns || now.ctime_ns != st.ctime_ns ||
        (hashed_first && *hashed_first != s.digest)) {
      return Status::InvalidInput(where + ": changed while it was read; nothing was stored");
    }
  }
  if (expected && s.digest != *expected) {
    return Status::Corruption(where + " hashes to " + s.digest.str() + ", not the " + expected->str() +
                              " it was checked to be; nothing was stored");
  }
  const Digest& d = s.digest;
  KI_ASSIGN_OR_RETURN(auto existing, txn_.Get(meta, d.raw()));
  if (existing) return PutResult{d, true};  // not rewritten; `file` removes its temporary
  const std::string header = odb::EncodeFrameHeader(ObjectType::kBlob, 0, media_type, size, false);
  const uint64_t frame_size = s.smaller ? s.written : header.size() + size;
  if (frame_size <= opts.loose_threshold) {
    // Small enough for LMDB: decoded back and put as PutBlob puts it.
    KI_RETURN_IF_ERROR(file->Commit(Durability::kNone));
    scratch.paths.push_back(staged);
    KI_ASSIGN_OR_RETURN(std::string frame, env->ReadFile(staged, s.written));
    if (s.smaller) {
      // Already the frame PutBlob writes (its raw bytes may be far larger:
      // they are not decoded).
      EncodedObject o;
      o.digest = d;
      o.type = ObjectType::kBlob;
      o.media_type = std::string(media_type);
      o.raw_size = size;
      o.frame = std::move(frame);
      KI_RETURN_IF_ERROR(WriteObject(o));
      return PutResult{d, false};
    }
    // Stored raw: at most 64 KiB of them.
    KI_ASSIGN_OR_RETURN(auto h, odb::ParseFrameHeader(frame, staged));
    KI_ASSIGN_OR_RETURN(std::string raw, odb::DecodeFrame(frame, h, opts.loose_threshold, staged));
    if (Sha256Of(raw) != d) return Status::IOError(staged + ": read back other bytes than were written");
    return PutObject(ObjectType::kBlob, 0, media_type, raw, d);
  }
  const std::string path = odb::LoosePath(store_->path(), d);
  const std::string dir = path.substr(0, path.rfind('/'));
  KI_RETURN_IF_ERROR(env->CreateDirs(dir));
  if (env->Exists(path)) {
    // An unindexed loose file of an interrupted write: kept, as WriteObject
    // keeps it, and its directory synced before the index names it (the
    // killed writer may have renamed it without that sync).
    dirs_to_sync_.insert(dir);
  } else if (s.smaller) {
    KI_RETURN_IF_ERROR(file->Commit(Durability::kSync));
    scratch.paths.push_back(staged);
    KI_RETURN_IF_ERROR(env->Rename(staged, path));
    scratch.paths.pop_back();
    new_loose_files_.push_back(path);
    dirs_to_sync_.insert(dir);
  } else {
    // Compression did not make it smaller, so the format stores it raw.
    // The compressed frame just written is the one copy of the bytes (a
    // pipe cannot be read twice): it is decoded into the raw frame.
    KI_RETURN_IF_ERROR(file->Commit(Durability::kNone));
    scratch.paths.push_back(staged);
    KI_ASSIGN_OR_RETURN(auto z, env->NewSequentialFile(staged));
    KI_ASSIGN_OR_RETURN(auto zh, odb::ReadFrameHeader(*z, staged));
    KI_ASSIGN_OR_RETURN(auto raw_file, env->NewAtomicFile(path));
    KI_RETURN_IF_ERROR(raw_file->Append(header));
    KI_ASSIGN_OR_RETURN(Digest again, odb::DecodeFrameStream(*z, zh, staged, [&](std::string_view b) {
                          return raw_file->Append(b);
                        }));
    if (again != d) return Status::IOError(staged + ": read back other bytes than were written");
    KI_RETURN_IF_ERROR(raw_file->Commit(Durability::kSync));
    new_loose_files_.push_back(path);
    dirs_to_sync_.insert(dir);
  }
  ObjectInfo info;
  info.digest = d;
  info.type = ObjectType::kBlob;
  info.size = size;
  info.stored_size = frame_size;
  info.media_type = std::string(media_type);
  info.location = Location::kLoose;
  KI_RETURN_IF_ERROR(PutKV(meta, d.raw(), odb::PackMeta(info)));
  arrived_.push_back(info);
  return PutResult{d, false};
}

Status LmdbBatch::WriteObject(const EncodedObject& o, bool index_kind) {
  const Digest& d = o.digest;
  const std::string& frame = o.frame;
  ObjectInfo info;
  info.digest = d;
  info.type = o.type;
  if (o.type == ObjectType::kManifest) info.kind = Kind(o.kind);
  info.size = o.raw_size;
  info.stored_size = frame.size();
  info.media_type = o.media_type;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  if (frame.size() > store_->options().loose_threshold) {
    // Large objects live as files: LMDB would copy them through its pages
    // on every write and keep the map large. Each is fsynced before its
    // rename; the directories are synced once at Commit.
    info.location = Location::kLoose;
    std::string path = odb::LoosePath(store_->path(), d);
    std::string dir = path.substr(0, path.rfind('/'));
    if (!store_->env()->Exists(path)) {
      KI_RETURN_IF_ERROR(store_->env()->CreateDirs(dir));
      KI_RETURN_IF_ERROR(store_->env()->WriteFileAtomic(path, frame, Durability::kSync));
      new_loose_files_.push_back(path);
    }
    // Also when the file is there already: the index does not hold the
    // object, so the file is a killed writer's, renamed into place but
    // perhaps before its directory was synced. The index must not name a
    // file whose name a crash could still take away.
    dirs_to_sync_.insert(dir);
  } else {
    info.location = Location::kIndex;
    KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
    KI_ASSIGN_OR_RETURN(char* dst, ReserveKV(objects, d.raw(), frame.size()));
    std::memcpy(dst, frame.data(), frame.size());
  }
  KI_RETURN_IF_ERROR(PutKV(meta, d.raw(), odb::PackMeta(info)));
  arrived_.push_back(info);
  if (o.type == ObjectType::kManifest && index_kind) {
    KI_ASSIGN_OR_RETURN(MDB_dbi kinds, Table(kKinds));
    KI_RETURN_IF_ERROR(PutKV(kinds, KindKey(Kind(o.kind), d), ""));
  }
  return Status::OK();
}

Status LmdbBatch::LinkManifest(Kind kind, const Digest& d, bool existed, const std::vector<Reference>* refs,
                               const Manifest* m, std::optional<Digest> document, std::string_view name) {
  if (!existed) {
    KI_ASSIGN_OR_RETURN(MDB_dbi refs_table, Table(kRefs));
    std::vector<Reference> extracted;
    if (!refs) {
      extracted = ExtractReferences(*m);
      refs = &extracted;
    }
    for (const Reference& ref : *refs)
      KI_RETURN_IF_ERROR(PutKV(refs_table, RefKey(ref.target, d, ref.field), ref.uri));
  }
  if (document) {
    KI_ASSIGN_OR_RETURN(MDB_dbi docs, Table(kDocs));
    KI_RETURN_IF_ERROR(PutKV(docs, d.raw(), document->raw()));
  }
  if (!name.empty()) KI_RETURN_IF_ERROR(SetName(kind, name, d));
  return Status::OK();
}

Result<PutResult> LmdbBatch::PutManifest(const Manifest& m, std::optional<std::string_view> document,
                                         std::string_view document_media_type) {
  KI_ASSIGN_OR_RETURN(PutResult r, PutObject(ObjectType::kManifest, uint8_t(m.kind),
                                             "application/vnd.kernelindex.manifest+json", m.canonical,
                                             m.digest));
  std::optional<Digest> doc_digest;
  if (document) {
    KI_ASSIGN_OR_RETURN(PutResult doc, PutBlob(*document, document_media_type));
    doc_digest = doc.digest;
  }
  KI_RETURN_IF_ERROR(LinkManifest(m.kind, m.digest, r.existed, nullptr, &m, doc_digest, m.name()));
  return r;
}

Result<PutResult> LmdbBatch::PutEncodedManifest(const EncodedManifest& m) {
  if (!(m.object.digest == m.digest) || m.object.type != ObjectType::kManifest || m.object.kind != uint8_t(m.kind)) {
    return Status::InvalidInput("encoded manifest " + m.digest.str() + " does not describe its own object");
  }
  KI_ASSIGN_OR_RETURN(bool existed, Exists(m.object.raw_size, m.digest));
  if (!existed) KI_RETURN_IF_ERROR(WriteObject(m.object));
  std::optional<Digest> doc_digest;
  if (m.document) {
    KI_ASSIGN_OR_RETURN(bool doc_existed, Exists(m.document->raw_size, m.document->digest));
    if (!doc_existed) KI_RETURN_IF_ERROR(WriteObject(*m.document));
    doc_digest = m.document->digest;
  }
  KI_RETURN_IF_ERROR(LinkManifest(m.kind, m.digest, existed, &m.references, nullptr, doc_digest, m.name));
  return PutResult{m.digest, existed};
}

Result<std::vector<PutResult>> LmdbBatch::PutEncodedManifests(const std::vector<EncodedManifest>& ms) {
  for (const EncodedManifest& m : ms) {
    if (!(m.object.digest == m.digest) || m.object.type != ObjectType::kManifest || m.object.kind != uint8_t(m.kind)) {
      return Status::InvalidInput("encoded manifest " + m.digest.str() + " does not describe its own object");
    }
  }
  // What each put would find, in list order: an object is new when neither
  // the store nor an earlier entry of the list holds it.
  std::vector<PutResult> results(ms.size());
  std::unordered_set<Digest> planned;
  std::vector<const EncodedObject*> objects;
  std::vector<size_t> new_manifests;
  for (size_t i = 0; i < ms.size(); ++i) {
    const EncodedManifest& m = ms[i];
    KI_ASSIGN_OR_RETURN(bool existed, Exists(m.object.raw_size, m.digest));
    existed = existed || !planned.insert(m.digest).second;
    results[i] = PutResult{m.digest, existed};
    if (!existed) {
      objects.push_back(&m.object);
      new_manifests.push_back(i);
    }
    if (m.document) {
      KI_ASSIGN_OR_RETURN(bool doc_existed, Exists(m.document->raw_size, m.document->digest));
      if (!doc_existed && planned.insert(m.document->digest).second) objects.push_back(&*m.document);
    }
  }
  // Then each table in key order (appends; see PutKV). Objects and meta
  // are keyed by digest alike.
  std::sort(objects.begin(), objects.end(), [](auto* a, auto* b) { return a->digest < b->digest; });
  for (const EncodedObject* o : objects) KI_RETURN_IF_ERROR(WriteObject(*o, /*index_kind=*/false));
  using KV = std::pair<std::string, std::string_view>;
  std::vector<KV> rows;
  auto put_sorted = [&](std::string_view table) -> Status {
    // Stable: of equal keys the later entry is put last and wins, as it
    // would put one by one.
    std::stable_sort(rows.begin(), rows.end(), [](const KV& a, const KV& b) { return a.first < b.first; });
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    for (const auto& [k, v] : rows) KI_RETURN_IF_ERROR(PutKV(dbi, k, v));
    rows.clear();
    return Status::OK();
  };
  for (size_t i : new_manifests) rows.emplace_back(KindKey(ms[i].kind, ms[i].digest), "");
  KI_RETURN_IF_ERROR(put_sorted(kKinds));
  for (size_t i : new_manifests) {
    for (const Reference& ref : ms[i].references)
      rows.emplace_back(RefKey(ref.target, ms[i].digest, ref.field), ref.uri);
  }
  KI_RETURN_IF_ERROR(put_sorted(kRefs));
  for (const EncodedManifest& m : ms) {
    if (m.document) rows.emplace_back(std::string(m.digest.raw()), m.document->digest.raw());
  }
  KI_RETURN_IF_ERROR(put_sorted(kDocs));
  // Names: every entry carries its name; of several entries naming one
  // `<Kind>/<name>`, the last becomes its latest holder (as one by one). Set
  // in key order.
  std::vector<std::pair<std::string, size_t>> names;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (!ms[i].name.empty()) names.emplace_back(NameKey(ms[i].kind, ms[i].name), i);
  }
  std::stable_sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t j = 0; j < names.size(); ++j) {
    const EncodedManifest& m = ms[names[j].second];
    KI_RETURN_IF_ERROR(RecordName(m.kind, m.name, m.digest));
    if (j + 1 < names.size() && names[j + 1].first == names[j].first) continue;
    KI_RETURN_IF_ERROR(PointName(m.kind, m.name, m.digest));
  }
  return results;
}

Status LmdbBatch::SetName(Kind kind, std::string_view name, const Digest& target) {
  KI_RETURN_IF_ERROR(RecordName(kind, name, target));
  return PointName(kind, name, target);
}

// A manifest keeps every name it was stored under, and a name every manifest
// stored under it: an earlier holder's document still says that name, and a
// REF must not silently pick one of several (Resolve calls it ambiguous).
Status LmdbBatch::RecordName(Kind kind, std::string_view name, const Digest& target) {
  KI_ASSIGN_OR_RETURN(MDB_dbi namesof, Table(kNamesOf));
  KI_ASSIGN_OR_RETURN(MDB_dbi nameset, Table(kNameSet));
  std::string key = NameKey(kind, name);
  std::string nkey(target.raw());
  nkey.append(key);
  KI_ASSIGN_OR_RETURN(auto had, txn_.Get(namesof, nkey));
  KI_RETURN_IF_ERROR(PutKV(namesof, nkey, ""));
  KI_RETURN_IF_ERROR(PutKV(nameset, NameSetKey(kind, name, target), ""));
  // A manifest the store already held that gains a name is handed to the
  // derived indexes too: what they show of it (a run's implementation
  // name) may change with its names.
  if (!had && !named_.count(target)) {
    KI_ASSIGN_OR_RETURN(auto info, Stat(target));
    if (info) {
      named_.insert(target);
      renamed_.push_back(*info);
    }
  }
  return Status::OK();
}

Status LmdbBatch::PointName(Kind kind, std::string_view name, const Digest& target) {
  KI_ASSIGN_OR_RETURN(MDB_dbi names, Table(kNames));
  KI_ASSIGN_OR_RETURN(MDB_dbi bare, Table(kBareNames));
  std::string key = NameKey(kind, name);
  KI_ASSIGN_OR_RETURN(auto old, txn_.Get(names, key));
  if (old && *old == target.raw()) return Status::OK();
  KI_RETURN_IF_ERROR(PutKV(names, key, target.raw()));
  return PutKV(bare, BareNameKey(kind, name), target.raw());
}

Status LmdbBatch::RecordAbsent(const AbsentInfo& info) {
  KI_ASSIGN_OR_RETURN(MDB_dbi absent, Table(kAbsent));
  return PutKV(absent, info.digest.raw(), AbsentValue(info));
}

Status LmdbBatch::IndexFrame(const Digest& d, const odb::FrameHeader& h, Location loc,
                             uint64_t stored_size, std::string_view raw) {
  ObjectInfo info;
  info.digest = d;
  info.type = h.type;
  if (h.type == ObjectType::kManifest) info.kind = Kind(h.kind);
  info.size = h.raw_size;
  info.stored_size = stored_size;
  info.media_type = h.media_type;
  info.location = loc;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_RETURN_IF_ERROR(PutKV(meta, d.raw(), odb::PackMeta(info)));
  arrived_.push_back(info);
  if (h.type != ObjectType::kManifest) return Status::OK();
  KI_ASSIGN_OR_RETURN(MDB_dbi kinds, Table(kKinds));
  KI_RETURN_IF_ERROR(PutKV(kinds, KindKey(Kind(h.kind), d), ""));
  auto m = ManifestFromCanonical(raw, d.str());
  if (!m.ok()) return Status::Corruption(m.status().message());
  KI_ASSIGN_OR_RETURN(MDB_dbi refs, Table(kRefs));
  for (const Reference& ref : ExtractReferences(*m))
    KI_RETURN_IF_ERROR(PutKV(refs, RefKey(ref.target, d, ref.field), ref.uri));
  return Status::OK();
}

Status LmdbBatch::Commit() {
  // The derived indexes see everything this batch stored, in its own
  // transaction: they commit with the objects or not at all.
  arrived_.insert(arrived_.end(), renamed_.begin(), renamed_.end());
  if (!arrived_.empty()) {
    std::vector<ObjectInfo> arrived;
    arrived.swap(arrived_);
    for (DerivedIndex* index : DerivedIndexes()) KI_RETURN_IF_ERROR(index->Update(*this, arrived));
  }
  // Order matters for crash safety: loose files are already fsynced and
  // renamed; sync their directories so the names are durable, then commit
  // the index (LMDB fsyncs on commit). A crash before the commit leaves
  // only unreferenced loose files, which audit notes and reindex adopts.
  for (const auto& dir : dirs_to_sync_) KI_RETURN_IF_ERROR(store_->env()->SyncDir(dir));
  if (!dirs_to_sync_.empty()) KI_RETURN_IF_ERROR(store_->env()->SyncDir(store_->path() + "/objects"));
  KI_RETURN_IF_ERROR(txn_.Commit());
  committed_ = true;
  for (const auto& [name, dbi] : opened_) store_->lmdb().Remember(name, dbi);
  return Status::OK();
}

// ---------------------------------------------------------------- Resolve

Result<Digest> LmdbStore::Resolve(std::string_view ref) {
  if (ref.empty()) return Status::InvalidInput("empty reference");
  if (Digest::IsValid(ref)) {
    KI_ASSIGN_OR_RETURN(Digest d, Digest::Parse(ref));
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (info) return d;
    KI_ASSIGN_OR_RETURN(auto absent, StatAbsent(d));
    if (absent) return d;
    return Status::NotFound(std::string(ref) + " is not in the store");
  }

  struct Candidate {
    Digest digest;
    std::string label;
  };
  std::vector<Candidate> found;
  auto add = [&](const Digest& d, std::string label) {
    for (const auto& c : found)
      if (c.digest == d) return;
    found.push_back({d, std::move(label)});
  };
  // Candidates of one name differ in what their documents say: the title
  // (a run's implementation and operation) tells them apart.
  auto label_of = [&](const Digest& d) -> std::string {
    auto info = Stat(d);
    std::string what = info.ok() && *info ? Describe(**info) : "absent";
    auto names = NamesOf(d);
    if (names.ok() && !names->empty()) what += " " + names->front();
    if (!info.ok() || !*info || (*info)->type != ObjectType::kManifest) return what;
    auto doc = ReadDocument(d);
    const std::string title = doc.ok() && *doc ? NestedString(**doc, "metadata", "title") : "";
    if (!title.empty()) what += "  \"" + title + "\"";
    // One name's runs often share a title too (a leaderboard entry run on
    // several GPUs): the hardware and the time tell them apart.
    if ((*info)->kind != Kind::kBenchmarkRun) return what;
    auto run = ReadManifest(d);
    if (!run.ok()) return what;
    auto env_digest = Digest::Parse(StringOr(run->spec, "environmentDigest"));
    auto env = env_digest.ok() ? ReadManifest(*env_digest) : Result<Manifest>(env_digest.status());
    const std::string product = env.ok() ? NestedString(env->spec, "hardware", "product") : "";
    if (!product.empty()) what += " on " + product;
    const std::string observed = StringOr(run->spec, "observedAt");
    if (!observed.empty()) what += ", observed " + observed;
    return what;
  };
  auto add_named = [&](Kind kind, std::string_view name) -> Status {
    KI_ASSIGN_OR_RETURN(auto ds, LookupName(kind, name));
    for (const Digest& d : ds) add(d, "");
    return Status::OK();
  };

  // <Kind>/<name>
  if (auto slash = ref.find('/'); slash != std::string_view::npos) {
    std::string_view kind_text = ref.substr(0, slash);
    std::optional<Kind> kind = ParseKindAnyCase(kind_text);
    if (kind) {
      KI_RETURN_IF_ERROR(add_named(*kind, ref.substr(slash + 1)));
      if (found.empty()) {
        return Status::NotFound("no " + std::string(KindName(*kind)) + " named '" +
                                std::string(ref.substr(slash + 1)) + "'");
      }
    }
  }

  // Hex prefix, with or without "sha256:".
  std::optional<DigestPrefix> prefix = DigestPrefix::Parse(ref);
  bool had_prefix = ref.substr(0, 7) == "sha256:";
  if (!found.empty()) {
    // A <Kind>/<name>: it is not also a prefix or a bare name.
  } else if (prefix && prefix->digits() >= 4) {
    for (std::string_view table : {kMeta, kAbsent}) {
      KI_RETURN_IF_ERROR(Scan(table, prefix->key(), [&](std::string_view k, std::string_view) {
        if (prefix->Matches(k)) add(Digest::FromRaw(k), "");
        return found.size() <= 20;
      }));
    }
  } else if (had_prefix) {
    return Status::InvalidInput("'" + std::string(ref) +
                                "': a digest prefix needs at least 4 hex digits");
  }

  // A bare metadata name: every manifest of every kind that carries it.
  if (ref.find('/') == std::string_view::npos && !had_prefix) {
    const std::string bare_prefix = std::string(ref) + '\0';
    std::vector<Kind> kinds;
    KI_RETURN_IF_ERROR(Scan(kBareNames, bare_prefix, [&](std::string_view k, std::string_view) {
      if (auto kind = ParseKind(k.substr(bare_prefix.size()))) kinds.push_back(*kind);
      return true;
    }));
    for (Kind kind : kinds) KI_RETURN_IF_ERROR(add_named(kind, ref));
  }
  if (found.empty() && prefix && prefix->digits() < 4) {
    return Status::InvalidInput("'" + std::string(ref) +
                                "': a digest prefix needs at least 4 hex digits");
  }

  if (found.size() == 1) return found[0].digest;
  if (found.empty()) return Status::NotFound("no object matches '" + std::string(ref) + "'");
  std::string msg = "'" + std::string(ref) + "' is ambiguous; it matches:";
  for (auto& c : found) msg += "\n  " + c.digest.str() + "  " + label_of(c.digest);
  return Status::Ambiguous(msg);
}

// ---------------------------------------------------------------- checks

CheckEntry LmdbStore::Check(const ObjectInfo& info, std::string* raw_out) {
  CheckEntry e;
  e.digest = info.digest;
  e.what = Describe(info);
  if (info.location == Location::kLoose && (info.type == ObjectType::kBlob || !raw_out)) {
    // Nobody needs the bytes: re-hashed as they are read, whatever their size.
    Status s = StreamLoose(info, Discard);
    if (!s.ok()) {
      e.state = CheckState::kCorrupt;
      e.detail = s.message();
    }
    return e;
  }
  auto frame = ReadFrame(info);
  if (!frame.ok()) {
    e.state = CheckState::kCorrupt;
    e.detail = frame.status().message();
    return e;
  }
  auto raw = DecodeChecked(info, *frame);
  if (!raw.ok()) {
    e.state = CheckState::kCorrupt;
    e.detail = raw.status().message();
    return e;
  }
  if (raw_out) *raw_out = std::move(raw).value();
  return e;
}

Result<VerifyReport> LmdbStore::Verify(const Digest& root) {
  VerifyReport report;
  std::unordered_set<Digest> seen{root};
  std::deque<std::pair<Digest, std::string>> queue{{root, "root"}};
  while (!queue.empty()) {
    auto [d, via] = queue.front();
    queue.pop_front();
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (!info) {
      CheckEntry e;
      e.digest = d;
      e.state = CheckState::kMissing;
      e.via = via;
      KI_ASSIGN_OR_RETURN(auto absent, StatAbsent(d));
      e.what = absent && !absent->media_type.empty() ? "blob " + absent->media_type : "unknown";
      report.entries.push_back(std::move(e));
      continue;
    }
    std::string raw;
    CheckEntry e = Check(*info, &raw);
    e.via = via;
    bool ok = e.state == CheckState::kOk;
    report.entries.push_back(std::move(e));
    if (!ok || info->type != ObjectType::kManifest) continue;
    auto m = ManifestFromCanonical(raw, d.str());
    if (!m.ok()) {
      report.entries.back().state = CheckState::kCorrupt;
      report.entries.back().detail = m.status().message();
      continue;
    }
    for (const Reference& ref : ExtractReferences(*m)) {
      if (seen.insert(ref.target).second) queue.emplace_back(ref.target, d.str().substr(0, 19) + " " + ref.field);
    }
    KI_ASSIGN_OR_RETURN(auto doc, DocumentOf(d));
    if (doc && seen.insert(*doc).second) queue.emplace_back(*doc, d.str().substr(0, 19) + " document");
  }
  return report;
}

Result<AuditReport> LmdbStore::Audit() {
  AuditReport report;
  std::unordered_set<Digest> loose_indexed, indexed;
  // 1. Every indexed object: bytes present, frame agrees, content re-hashes.
  std::vector<ObjectInfo> infos;
  KI_RETURN_IF_ERROR(ForEachObject([&](const ObjectInfo& info) {
    infos.push_back(info);
    return true;
  }));
  for (const ObjectInfo& info : infos) {
    indexed.insert(info.digest);
    if (info.location == Location::kLoose) loose_indexed.insert(info.digest);
    CheckEntry e = Check(info, nullptr);
    report.objects++;
    report.bytes += info.size;
    if (e.state != CheckState::kOk) report.faults.push_back(std::move(e));
  }
  // 2. The other way: frames in LMDB and loose files must be indexed.
  KI_RETURN_IF_ERROR(Scan(kObjects, "", [&](std::string_view k, std::string_view) {
    Digest d = Digest::FromRaw(k);
    if (!indexed.count(d) || loose_indexed.count(d)) {
      CheckEntry e;
      e.digest = d;
      e.state = CheckState::kCorrupt;
      e.what = "frame";
      e.detail = "object bytes in the index database without an index entry";
      report.faults.push_back(std::move(e));
    }
    return true;
  }));
  KI_ASSIGN_OR_RETURN(auto fanout, env()->ListDir(dir_ + "/objects"));
  for (const auto& sub : fanout) {
    KI_ASSIGN_OR_RETURN(auto files, env()->ListDir(dir_ + "/objects/" + sub));
    for (const auto& f : files) {
      auto d = Digest::Parse("sha256:" + sub + f);
      if (!d.ok()) {
        // Temporary files of a write that never committed (kill -9).
        report.notes.push_back("leftover temporary file objects/" + sub + "/" + f);
      } else if (!loose_indexed.count(*d)) {
        report.notes.push_back("unindexed loose object " + d->str() +
                               " (from an interrupted write; ki audit --reindex adopts it)");
      }
    }
  }
  // 3. References: targets the store does not hold are missing, not faults.
  std::set<Digest> missing_seen;
  KI_RETURN_IF_ERROR(Scan(kRefs, "", [&](std::string_view k, std::string_view) {
    if (k.size() < 64) return true;
    Digest target = Digest::FromRaw(k.substr(0, 32));
    if (indexed.count(target) || !missing_seen.insert(target).second) return true;
    CheckEntry e;
    e.digest = target;
    e.state = CheckState::kMissing;
    e.what = "unknown";
    e.via = Digest::FromRaw(k.substr(32, 32)).str().substr(0, 19) + " " + lmdb::KeyText(k.substr(64));
    report.missing.push_back(std::move(e));
    return true;
  }));
  for (auto& e : report.missing) {
    auto absent = StatAbsent(e.digest);
    if (absent.ok() && *absent && !(*absent)->media_type.empty()) e.what = "blob " + (*absent)->media_type;
  }
  // 4. Names and document links must point at objects the store holds.
  for (std::string_view table : {kNames, kDocs}) {
    KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view v) {
      Digest d = Digest::FromRaw(v);
      bool bad = v.size() != 32 || !indexed.count(d);
      if (table == kDocs && k.size() == 32 && !indexed.count(Digest::FromRaw(k))) bad = true;
      if (bad) {
        CheckEntry e;
        e.digest = d;
        e.state = CheckState::kCorrupt;
        e.what = table == kNames ? "name " + std::string(k) : "document link";
        e.detail = "points at an object the store does not hold";
        report.faults.push_back(std::move(e));
      }
      return true;
    }));
  }
  KI_RETURN_IF_ERROR(Scan(kNameSet, "", [&](std::string_view k, std::string_view) {
    if (k.size() > 32 && indexed.count(Digest::FromRaw(k.substr(k.size() - 32)))) return true;
    CheckEntry e;
    e.state = CheckState::kCorrupt;
    if (k.size() > 32) e.digest = Digest::FromRaw(k.substr(k.size() - 32));
    e.what = "name " + lmdb::KeyText(k.substr(0, k.size() > 32 ? k.size() - 32 : 0));
    e.detail = "points at an object the store does not hold";
    report.faults.push_back(std::move(e));
    return true;
  }));
  // 5. Derived indexes: rebuilt from the objects into an overlay, compared
  // with the tables in place entry by entry.
  KI_RETURN_IF_ERROR(CheckDerived(infos, &report));
  return report;
}

Status LmdbStore::CheckDerived(const std::vector<ObjectInfo>& infos, AuditReport* report) {
  // Only objects whose bytes check out: a corrupt one is a fault already,
  // and reindex would not index it either.
  std::unordered_set<Digest> faulty;
  for (const auto& f : report->faults) faulty.insert(f.digest);
  std::vector<ObjectInfo> good;
  good.reserve(infos.size());
  for (const auto& info : infos)
    if (!faulty.count(info.digest)) good.push_back(info);
  constexpr size_t kShownPerTable = 20;
  for (DerivedIndex* index : DerivedIndexes()) {
    ShadowBatch shadow(this, index->Tables());
    KI_RETURN_IF_ERROR(index->Update(shadow, good));
    for (const auto& [table, want] : shadow.tables()) {
      size_t shown = 0, more = 0;
      auto fault = [&](std::string_view key, std::string detail) {
        if (shown >= kShownPerTable) return void(more++);
        shown++;
        CheckEntry e;
        e.state = CheckState::kCorrupt;
        if (key.size() >= 32) e.digest = Digest::FromRaw(key.substr(0, 32));
        // Digest keys as the catalog prints them (`sha256:…`, `<cohort> run <run>`).
        std::string text = key.size() == 32   ? Digest::FromRaw(key).str()
                           : key.size() == 64 ? Digest::FromRaw(key.substr(0, 32)).str() + " run " +
                                                    Digest::FromRaw(key.substr(32)).str()
                                              : lmdb::KeyText(key);
        e.what = table + " " + text;
        e.detail = std::move(detail);
        report->faults.push_back(std::move(e));
      };
      std::set<std::string, std::less<>> seen;
      KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view v) {
        auto it = want.find(k);
        if (it == want.end()) {
          fault(k, "entry that no object gives (ki audit --reindex removes it)");
        } else {
          seen.emplace(k);
          if (it->second != v) fault(k, "differs from what the objects give (ki audit --reindex rewrites it)");
        }
        return true;
      }));
      for (const auto& [k, v] : want)
        if (!seen.count(k)) fault(k, "missing: the objects give this entry (ki audit --reindex restores it)");
      if (more) {
        CheckEntry e;
        e.state = CheckState::kCorrupt;
        e.what = table;
        e.detail = "and " + std::to_string(more) + " more entries that differ from what the objects give";
        report->faults.push_back(std::move(e));
      }
    }
  }
  return Status::OK();
}

Result<AuditReport> LmdbStore::Reindex() {
  KI_ASSIGN_OR_RETURN(auto batch_base, NewBatch());
  auto* batch = static_cast<LmdbBatch*>(batch_base.get());
  // The store's own derived tables, and every derived index's: Commit
  // hands the indexes every object indexed below (all of them).
  std::vector<std::string_view> derived = {kMeta, kKinds, kRefs};
  for (DerivedIndex* index : DerivedIndexes())
    for (auto t : index->Tables()) derived.push_back(t);
  for (std::string_view t : derived) {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, batch->Table(t));
    KI_RETURN_IF_ERROR(batch->txn().Drop(dbi));
  }
  std::vector<std::string> problems;
  auto index_one = [&](std::string_view frame, Location loc, const std::string& where,
                       std::optional<Digest> expect) -> Status {
    auto h = odb::ParseFrameHeader(frame, where);
    if (!h.ok()) return problems.push_back(h.status().message()), Status::OK();
    auto raw = odb::DecodeFrame(frame, *h, opts_.max_object_size, where);
    if (!raw.ok()) return problems.push_back(raw.status().message()), Status::OK();
    Digest d = Sha256Of(*raw);
    if (expect && d != *expect) {
      problems.push_back(where + ": content hashes to " + d.str() + "; not indexed");
      return Status::OK();
    }
    return batch->IndexFrame(d, *h, loc, frame.size(), *raw);
  };
  {
    // Frames kept in LMDB, read inside the batch's own transaction.
    KI_ASSIGN_OR_RETURN(MDB_dbi objects, batch->Table(kObjects));
    std::vector<std::pair<Digest, std::string>> frames;
    KI_ASSIGN_OR_RETURN(auto cur, lmdb::Cursor::Open(batch->txn(), objects));
    KI_ASSIGN_OR_RETURN(bool more, cur.Seek(""));
    while (more) {
      frames.emplace_back(Digest::FromRaw(cur.key()), std::string(cur.value()));
      KI_ASSIGN_OR_RETURN(more, cur.Next());
    }
    for (auto& [d, frame] : frames) KI_RETURN_IF_ERROR(index_one(frame, Location::kIndex, d.str(), d));
  }
  KI_ASSIGN_OR_RETURN(auto fanout, env()->ListDir(dir_ + "/objects"));
  for (const auto& sub : fanout) {
    KI_ASSIGN_OR_RETURN(auto files, env()->ListDir(dir_ + "/objects/" + sub));
    for (const auto& f : files) {
      std::string path = dir_ + "/objects/" + sub + "/" + f;
      auto d = Digest::Parse("sha256:" + sub + f);
      if (!d.ok()) {
        KI_RETURN_IF_ERROR(env()->RemoveFile(path));  // an interrupted write's temporary file
        continue;
      }
      // Blobs are re-hashed as they are read (no size cap); manifests are
      // parsed, so they are read whole.
      KI_ASSIGN_OR_RETURN(auto file, env()->NewSequentialFile(path));
      auto h = odb::ReadFrameHeader(*file, path);
      if (!h.ok()) {
        problems.push_back(h.status().message());
        continue;
      }
      if (h->type == ObjectType::kBlob) {
        auto got = odb::DecodeFrameStream(*file, *h, path, Discard);
        if (!got.ok()) {
          problems.push_back(got.status().message());
        } else if (*got != *d) {
          problems.push_back(path + ": content hashes to " + got->str() + "; not indexed");
        } else {
          KI_ASSIGN_OR_RETURN(FileStat st, file->Stat());
          KI_RETURN_IF_ERROR(batch->IndexFrame(*d, *h, Location::kLoose, st.size, ""));
        }
        continue;
      }
      file.reset();
      KI_ASSIGN_OR_RETURN(std::string frame, env()->ReadFile(path, opts_.max_object_size + (1 << 20)));
      KI_RETURN_IF_ERROR(index_one(frame, Location::kLoose, path, *d));
    }
  }
  KI_RETURN_IF_ERROR(batch->Commit());
  KI_RETURN_IF_ERROR(RecordDocumentNames());
  KI_ASSIGN_OR_RETURN(AuditReport report, Audit());
  for (auto& p : problems) report.notes.push_back("not indexed: " + p);
  return report;
}

Status LmdbStore::Upgrade() {
  {
    KI_ASSIGN_OR_RETURN(auto batch, NewBatch());
    for (DerivedIndex* index : DerivedIndexes()) KI_RETURN_IF_ERROR(index->Upgrade(*batch, 1));
    KI_RETURN_IF_ERROR(batch->Commit());
  }
  KI_ASSIGN_OR_RETURN(AuditReport rebuilt, Reindex());
  (void)rebuilt;  // what it found is audit's to report; the upgrade only rebuilds
  const std::string format = dir_ + "/" + std::string(kFormatFile);
  KI_RETURN_IF_ERROR(env()->WriteFileAtomic(format, kFormatLine, Durability::kSync));
  KI_RETURN_IF_ERROR(env()->SyncDir(dir_));
  format_version_ = 2;
  return Status::OK();
}

// Names are recorded facts and Reindex keeps them. A store written before
// `nameset` existed, though, forgot a name's earlier holders when the name
// moved; each manifest's linked document still says its name, so every one
// is recorded again (idempotent). A document that cannot be read is audit's
// to report, not this step's.
Status LmdbStore::RecordDocumentNames() {
  std::vector<Digest> documented;
  KI_RETURN_IF_ERROR(Scan(kDocs, "", [&](std::string_view k, std::string_view) {
    if (k.size() == 32) documented.push_back(Digest::FromRaw(k));
    return true;
  }));
  std::vector<std::pair<std::string, Digest>> current;  // names: "Kind/name" -> latest
  KI_RETURN_IF_ERROR(Scan(kNames, "", [&](std::string_view k, std::string_view v) {
    if (v.size() == 32) current.emplace_back(std::string(k), Digest::FromRaw(v));
    return true;
  }));
  KI_ASSIGN_OR_RETURN(auto batch_base, NewBatch());
  auto* batch = static_cast<LmdbBatch*>(batch_base.get());
  for (const Digest& d : documented) {
    auto info = Stat(d);
    if (!info.ok() || !*info || (*info)->type != ObjectType::kManifest || !(*info)->kind) continue;
    auto doc = ReadDocument(d);
    const std::string name = doc.ok() && *doc ? NestedString(**doc, "metadata", "name") : "";
    if (!name.empty()) KI_RETURN_IF_ERROR(batch->RecordName(*(*info)->kind, name, d));
  }
  for (const auto& [key, d] : current) {
    auto slash = key.find('/');
    std::optional<Kind> kind = slash == std::string::npos ? std::nullopt : ParseKind(key.substr(0, slash));
    if (kind) KI_RETURN_IF_ERROR(batch->RecordName(*kind, key.substr(slash + 1), d));
  }
  return batch->Commit();
}

}  // namespace

// ---------------------------------------------------------------- statics

void RegisterDerivedIndex(DerivedIndex* index) {
  auto& all = DerivedIndexes();
  if (std::find(all.begin(), all.end(), index) == all.end()) all.push_back(index);
}

bool VerifyReport::HasFaults() const {
  return std::any_of(entries.begin(), entries.end(),
                     [](const CheckEntry& e) { return e.state == CheckState::kCorrupt; });
}

std::string_view CheckStateName(CheckState s) {
  switch (s) {
    case CheckState::kOk: return "ok";
    case CheckState::kCorrupt: return "corrupt";
    case CheckState::kMissing: return "missing";
  }
  return "?";
}

std::string GuessMediaType(std::string_view filename) {
  auto dot = filename.rfind('.');
  if (dot == std::string_view::npos) return "application/octet-stream";
  std::string ext(filename.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  static const std::pair<const char*, const char*> kTypes[] = {
      {"txt", "text/plain"},          {"log", "text/plain"},
      {"md", "text/markdown"},        {"json", "application/json"},
      {"jsonl", "application/jsonl"}, {"yaml", "application/yaml"},
      {"yml", "application/yaml"},    {"csv", "text/csv"},
      {"cu", "text/x-cuda"},          {"cuh", "text/x-cuda"},
      {"cc", "text/x-c++"},           {"cpp", "text/x-c++"},
      {"cxx", "text/x-c++"},          {"h", "text/x-c"},
      {"hpp", "text/x-c++"},          {"c", "text/x-c"},
      {"py", "text/x-python"},        {"ptx", "text/plain"},
      {"zst", "application/zstd"},    {"gz", "application/gzip"},
      {"tar", "application/x-tar"},   {"safetensors", "application/vnd.safetensors"},
      {"npy", "application/x-npy"},   {"html", "text/html"},
  };
  for (const auto& [e, t] : kTypes)
    if (ext == e) return t;
  return "application/octet-stream";
}

Result<std::unique_ptr<Store>> Store::Init(const std::string& dir, const StoreOptions& opts) {
  Env* env = opts.env ? opts.env : Env::Default();
  // DIR may name the `.ki` directory itself, as --store and KI_STORE may
  // (docs/cli.md): `ki --store x/.ki init` creates x/.ki, not x/.ki/.ki,
  // so the store init makes is the one later commands open.
  std::string base = dir.empty() ? std::string(".") : dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const bool names_ki_dir = std::filesystem::path(base).filename() == ".ki" ||
                            env->Exists(base + "/" + std::string(kFormatFile));
  std::string ki_dir = names_ki_dir ? base : base + "/.ki";
  std::string format = ki_dir + "/" + std::string(kFormatFile);
  if (!env->Exists(format)) {
    KI_RETURN_IF_ERROR(env->CreateDirs(ki_dir + "/" + std::string(kIndexDir)));
    KI_RETURN_IF_ERROR(env->CreateDirs(ki_dir + "/objects"));
    // FORMAT is written last: a directory without it is not a store.
    KI_RETURN_IF_ERROR(env->WriteFileAtomic(format, kFormatLine, Durability::kSync));
  }
  // The directory syncs run on every init, not only the one that made the
  // store: an init whose sync failed left FORMAT in place, and the retry
  // must still make the store's names durable. .ki's own entries (index/,
  // objects/, FORMAT), then .ki's entry in its parent: without that a crash
  // can lose the whole store though FORMAT was synced.
  KI_RETURN_IF_ERROR(env->SyncDir(ki_dir));
  const size_t slash = ki_dir.rfind('/');
  KI_RETURN_IF_ERROR(env->SyncDir(slash == std::string::npos ? "." : slash == 0 ? "/" : ki_dir.substr(0, slash)));
  KI_ASSIGN_OR_RETURN(auto store, Open(ki_dir, OpenMode::kReadWrite, opts));
  // Opening created LMDB's data.mdb and lock.mdb in index/ (LMDB syncs its
  // data, never the directory that names it).
  KI_RETURN_IF_ERROR(env->SyncDir(ki_dir + "/" + std::string(kIndexDir)));
  return store;
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& ki_dir, OpenMode mode, const StoreOptions& opts) {
  Env* env = opts.env ? opts.env : Env::Default();
  if (!env->IsDirectory(ki_dir)) return Status::IOError("no ki store at " + ki_dir);
  auto store = std::make_unique<LmdbStore>(ki_dir, opts);
  Status s = store->Open(mode);
  if (!s.ok()) {
    if (s.IsNotFound()) return Status::IOError(ki_dir + " is not a ki store (no FORMAT file)");
    return s;
  }
  if (store->format_version() == 1) {
    if (!env->IsWritableDir(ki_dir)) {
      return Status::IOError(ki_dir + " is a store of format 1, written by an earlier ki; upgrading it needs write "
                             "access (run ki audit --reindex as its owner)");
    }
    store.reset();
    StoreOptions rw = opts;
    rw.snapshot_reads = false;
    auto writer = std::make_unique<LmdbStore>(ki_dir, rw);
    KI_RETURN_IF_ERROR(writer->Open(OpenMode::kReadWrite));
    if (writer->format_version() == 1) KI_RETURN_IF_ERROR(writer->Upgrade());
    writer.reset();
    store = std::make_unique<LmdbStore>(ki_dir, opts);
    KI_RETURN_IF_ERROR(store->Open(mode));
  }
  return std::unique_ptr<Store>(std::move(store));
}

Result<std::string> Store::Discover(const std::string& start) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(start, ec);
  if (ec) return Status::IOError("cannot resolve " + start);
  for (;;) {
    std::filesystem::path candidate = p / ".ki";
    if (std::filesystem::is_directory(candidate, ec)) return candidate.string();
    if (!p.has_parent_path() || p.parent_path() == p) break;
    p = p.parent_path();
  }
  return Status::IOError("no ki store here or in any parent directory (run `ki init`, or pass --store)");
}

}  // namespace ki
