// The local object store: opening a store and reading from it.
// Writes: batch.cc. Checks: audit.cc. Rebuilds: reindex.cc. Names: resolve.cc.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "json/fields.h"
#include "ki/store_env.h"
#include "odb/content_check.h"
#include "odb/store_impl.h"

namespace ki::odb {

std::string NestedString(const Json& obj, std::string_view outer, std::string_view key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(outer);
  return it == obj.end() ? "" : StringOr(*it, key);
}

std::string ScratchName() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

bool FrameAgrees(const FrameHeader& h, const ObjectInfo& info) {
  return h.type == info.type && h.raw_size == info.size && h.media_type == info.media_type &&
         (info.kind ? h.kind == uint8_t(*info.kind) : h.kind == 0);
}

std::string Describe(const ObjectInfo& info) {
  if (info.type == ObjectType::kManifest && info.kind) return std::string(KindName(*info.kind));
  return "blob " + info.media_type;
}

std::vector<DerivedIndex*>& DerivedIndexes() {
  static std::vector<DerivedIndex*> indexes;
  return indexes;
}

Status RefillDerivedIndexes(Batch& batch, const std::vector<ObjectInfo>& objects) {
  for (DerivedIndex* index : DerivedIndexes()) {
    for (auto t : index->Tables()) KI_RETURN_IF_ERROR(batch.DropTable(t));
    KI_RETURN_IF_ERROR(index->Update(batch, objects));
  }
  return Status::OK();
}

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

Status LmdbStore::Open(OpenMode mode) {
  KI_ASSIGN_OR_RETURN(std::string fmt, env()->ReadFile(FormatPath(dir_), 4096));
  const std::optional<int> version = FormatVersionOf(fmt);
  if (!version) {
    return Status::InvalidInput(dir_ + ": unsupported store format '" + fmt.substr(0, fmt.find('\n')) +
                                "' (this ki reads 'ki-store " + std::to_string(kFormatVersion) +
                                "' to 'ki-store 2', and upgrades 'ki-store 1')");
  }
  format_version_ = *version;
  numbered_ = format_version_ >= 10;
  objects_numbered_ = format_version_ >= 12;
  read_only_ = mode == OpenMode::kReadOnly;
  if (!read_only_ && !env()->IsWritableDir(dir_)) {
    return Status::IOError("the store " + dir_ + " is not writable");
  }
  // Held until the environment is closed (store_lock.h): ki gc replaces
  // data.mdb only while no process has it open.
  if (!callers_lock_) {
    KI_ASSIGN_OR_RETURN(lock_, StoreLock::Shared(dir_, read_only_));
  }
  KI_RETURN_IF_ERROR(lmdb_.Open(IndexDir(dir_), opts_.map_size, read_only_));
  for (std::string_view t : SetTables()) lmdb_.DeclareSetTable(t);
  KI_RETURN_IF_ERROR(lmdb_.OpenAllTables(
      {kObjects, kMeta, kRefs, kDicts, kAbsent, kNamesOf, kNameSet, kDocs, kTags, kSeq}));
  if (format_version_ == 11) {
    // The upgrade to format 12 commits before FORMAT is rewritten: a store
    // killed between the two holds format 12's layout (every objects key a
    // number) under a FORMAT that says 11, and is read as what it holds.
    KI_ASSIGN_OR_RETURN(lmdb::Txn txn, lmdb::Txn::Begin(lmdb_, false));
    KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, kObjects));
    if (dbi) {
      KI_ASSIGN_OR_RETURN(auto last, txn.LastKey(*dbi));
      if (last && last->size() == 4) objects_numbered_ = true;
    }
  }
  if (!read_only_ && format_version_ >= 2 && format_version_ < kFormatVersion) {
    // Format 2 -> 3: frames are read as they are; each derived index
    // adapts its tables (catalog.cohort drops its copies of the run
    // entries). FORMAT says 3 before a dictionary frame can be written, so
    // that a ki reading format 2 refuses the store instead of failing on
    // frames. 3 -> 4: barenames is emptied (names serves bare names). 4 ->
    // 5: each derived index adapts its tables (catalog.runs values become
    // binary). 5 -> 6: meta values are packed again, each with its time
    // from `added`, which is emptied. 6 -> 7: refs keys end in their
    // field's code. 7 -> 8: kinds is emptied (meta says each kind). 8 -> 9:
    // each derived index adapts its tables (catalog.cohorts and
    // catalog.events values become compact binary JSON). 9 -> 10: every
    // object numbered (in digest order), docs and namesof keyed by number.
    // 10 -> 11: refs made a set table; each name's latest holder marked in
    // nameset, names emptied. 11 -> 12: objects keyed by number, refs'
    // referrers numbers (last: the steps before read objects by digest).
    // 12 -> 13: nothing but FORMAT (frames of version 5 may follow; those
    // already there stay as they are). 13 -> 14: nothing but FORMAT
    // (documents written after may be based on their manifests, frame.h's
    // FrameBase, which a ki of format 13 could not read). 13 or 14 -> 15:
    // every derived index rebuilt (the catalog keys its tables by object
    // numbers).
    // One batch does every step from the store's format on;
    // killed before FORMAT is rewritten, the next open does it again (each
    // step is idempotent).
    {
      KI_ASSIGN_OR_RETURN(auto batch, NewBatch());
      if (format_version_ == 2) {
        for (DerivedIndex* index : DerivedIndexes()) KI_RETURN_IF_ERROR(index->Upgrade(*batch, 2));
      }
      if (format_version_ <= 3) {
        KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->DropTableIfPresent(kBareNames));
      }
      if (format_version_ <= 4) {
        for (DerivedIndex* index : DerivedIndexes()) KI_RETURN_IF_ERROR(index->Upgrade(*batch, 4));
      }
      if (format_version_ <= 5) KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->FoldAddedIntoMeta());
      KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->RecodeRefFields());
      KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->DropTableIfPresent(kKinds));
      for (DerivedIndex* index : DerivedIndexes()) KI_RETURN_IF_ERROR(index->Upgrade(*batch, 8));
      KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->NumberObjects());
      for (std::string_view t : SetTables())
        KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->MakeSetTable(t));
      KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->FoldNamesIntoNameSet());
      KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->KeyObjectsByNumber());
      // 13 or 14 -> 15: the catalog's tables keyed by object numbers. Every
      // derived table is rebuilt from the objects (last: it reads objects by
      // number); killed before FORMAT says 15, the next open rebuilds again.
      if (format_version_ < kFormatCatalogNumbers)
        KI_RETURN_IF_ERROR(static_cast<LmdbBatch*>(batch.get())->RebuildDerivedIndexes());
      KI_RETURN_IF_ERROR(batch->Commit());
    }
    numbered_ = true;
    KI_RETURN_IF_ERROR(env()->WriteFileAtomic(FormatPath(dir_), kFormatLine, Durability::kSync));
    KI_RETURN_IF_ERROR(env()->SyncDir(dir_));
    format_version_ = kFormatVersion;
  }
  if (opts_.snapshot_reads) {
    // A writer would not see its own commits through the snapshot.
    if (!read_only_) return Status::InvalidInput("snapshot_reads needs a store opened read-only");
    KI_ASSIGN_OR_RETURN(snapshot_, lmdb::Txn::Begin(lmdb_, false));
    snapshot_thread_ = std::this_thread::get_id();
  }
  return Status::OK();
}

std::vector<std::string_view> LmdbStore::SetTables() const {
  // catalog.cohort (cohort + run) was measured as one too: 178 pages of the
  // imported export instead of 161, its 2,253 cohorts holding 4 runs each
  // on average (a run of duplicates pays a sub-page header), so it stays a
  // plain table (bench/results/catalog-2026-12-02-h.md).
  return {kRefs};
}

namespace {
// The calling thread's SameSnapshot: its store and transaction.
thread_local const LmdbStore* t_same_store = nullptr;
thread_local lmdb::Txn* t_same_txn = nullptr;
}  // namespace

LmdbStore::SameSnapshot::SameSnapshot(LmdbStore* store) {
  // snapshot_ is only read here: its ID does not change while it lives.
  if (!store->snapshot_.get() || t_same_store) return;
  auto txn = lmdb::Txn::Begin(store->lmdb_, false);
  if (!txn.ok() || txn->id() != store->snapshot_.id()) return;
  txn_ = std::move(txn).value();
  held_ = true;
  t_same_store = store;
  t_same_txn = &txn_;
}

LmdbStore::SameSnapshot::~SameSnapshot() {
  if (!held_) return;
  t_same_store = nullptr;
  t_same_txn = nullptr;
}

Result<LmdbStore::ReadTxn> LmdbStore::BeginRead() {
  if (snapshot_.get() && std::this_thread::get_id() == snapshot_thread_) return ReadTxn(&snapshot_);
  if (t_same_store == this) return ReadTxn(t_same_txn);
  KI_ASSIGN_OR_RETURN(auto txn, lmdb::Txn::Begin(lmdb_, false));
  return ReadTxn(std::move(txn));
}

Result<std::optional<ObjectInfo>> LmdbStore::Stat(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  lmdb::Txn& txn = *read;
  return StatIn(txn, d);
}

Result<std::optional<ObjectInfo>> LmdbStore::StatIn(lmdb::Txn& txn, const Digest& d) {
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

Result<std::optional<AbsentInfo>> LmdbStore::StatAbsent(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto v, Get(kAbsent, d.raw()));
  if (!v) return std::optional<AbsentInfo>();
  return std::optional<AbsentInfo>(ParseAbsent(d, *v));
}

Result<std::string> LmdbStore::ReadFrame(const ObjectInfo& info) {
  if (info.location == Location::kLoose) return ReadLooseFrame(info);
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  return ReadFrameIn(*read, info);
}

Result<std::string> LmdbStore::ReadFrameIn(lmdb::Txn& txn, const ObjectInfo& info) {
  if (info.location == Location::kLoose) return ReadLooseFrame(info);
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, kObjects));
  std::optional<std::string_view> v;
  bool by_number = objects_numbered_;
  if (dbi && (info.number || !by_number)) {
    KI_ASSIGN_OR_RETURN(v, txn.Get(*dbi, ObjectsKey(info)));
    if (!v && !by_number && info.number) {
      // A store of format 11 read as it is, which a writer has just
      // upgraded (its FORMAT still says 11 for a moment, or this reader
      // opened it before): the frame is under its number.
      KI_ASSIGN_OR_RETURN(v, txn.Get(*dbi, NumberKey(info.number)));
      by_number = v.has_value();
    }
  }
  if (by_number && v) {
    auto row = SplitObjectsRow(NumberKey(info.number), *v);
    if (!row || row->digest != info.digest || row->frame.empty()) {
      return Status::Corruption(info.digest.str() + ": indexed as object number " + std::to_string(info.number) +
                                ", but that row of the objects table holds " +
                                (!row ? std::string("no digest") : row->frame.empty() ? "no frame" : row->digest.str()) +
                                " (ki audit --reindex re-reads the frames)");
    }
    return std::string(row->frame);  // copied out: LMDB data is valid only inside the txn
  }
  if (!v) return Status::Corruption(info.digest.str() + ": indexed, but its bytes are not in the store");
  return std::string(*v);  // copied out: LMDB data is valid only inside the txn
}

Result<std::optional<Digest>> LmdbStore::DigestOfNumber(uint32_t n) {
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  return DigestOfNumberIn(*read, n);
}

Result<std::optional<Digest>> LmdbStore::DigestOfNumberIn(lmdb::Txn& txn, uint32_t n) {
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, kObjects));
  if (!dbi || !n) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(auto v, txn.Get(*dbi, NumberKey(n)));
  if (!v || v->size() < 32) return std::optional<Digest>();
  return std::optional<Digest>(Digest::FromRaw(v->substr(0, 32)));
}

std::optional<LmdbStore::RefKeyParts> LmdbStore::SplitRefKey(std::string_view key) const {
  const size_t part = RefReferrerPartSize(objects_numbered_);
  if (key.size() <= 32 + part) return std::nullopt;
  return RefKeyParts{Digest::FromRaw(key.substr(0, 32)), key.substr(32, part), key.substr(32 + part)};
}

std::optional<Digest> LmdbStore::ReferrerOf(std::string_view part,
                                            const std::unordered_map<uint32_t, Digest>& by_number) const {
  if (part.size() == 32) return Digest::FromRaw(part);
  auto n = KeyNumber(part);
  if (!n) return std::nullopt;
  auto it = by_number.find(*n);
  return it == by_number.end() ? std::nullopt : std::optional<Digest>(it->second);
}

Result<std::string> LmdbStore::ReadLooseFrame(const ObjectInfo& info) {
  {
    auto r = env()->ReadFile(odb::LoosePath(dir_, info.digest), opts_.max_object_size + (1 << 20));
    if (!r.ok() && r.status().IsNotFound()) {
      return Status::Corruption(info.digest.str() + ": loose object file is missing");
    }
    return r;
  }
}

namespace {
// What to do about a dictionary a frame needs and the store lacks.
std::string RestoreHint(uint32_t id) {
  return BuiltinDictionary(id) ? " (it is built into this ki: ki audit --reindex restores it)"
                               : " (not built into this ki: the ki that wrote the frame restores it with ki audit "
                                 "--reindex)";
}
}  // namespace

Result<std::shared_ptr<const Dictionary>> LmdbStore::FrameDictionary(uint32_t id, const std::string& where) {
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  return FrameDictionary(*read, id, where);
}

Result<std::shared_ptr<const Dictionary>> LmdbStore::FrameDictionary(lmdb::Txn& txn, uint32_t id,
                                                                     const std::string& where) {
  const std::string name = DictionaryName(id);
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, kDicts));
  std::optional<std::string_view> v;
  if (dbi) {
    KI_ASSIGN_OR_RETURN(v, txn.Get(*dbi, DictKey(id)));
  }
  if (!v || v->size() != 32) {
    return Status::Corruption(where + ": compressed with " + name + ", which the store does not hold" + RestoreHint(id));
  }
  const Digest d = Digest::FromRaw(*v);
  {
    std::lock_guard<std::mutex> lock(dict_mu_);
    auto it = dicts_.find(id);
    if (it != dicts_.end() && it->second->digest() == d) return it->second;
  }
  auto bad = [&](const std::string& why) {
    return Status::Corruption(where + ": compressed with " + name + " (" + d.str() + "), " + why + RestoreHint(id));
  };
  KI_ASSIGN_OR_RETURN(auto info, StatIn(txn, d));
  if (!info) return bad("which the store does not hold");
  auto frame = ReadFrameIn(txn, *info);
  if (!frame.ok()) return bad("which is damaged: " + frame.status().message());
  auto h = ParseFrameHeader(*frame, d.str());
  if (!h.ok()) return bad("which is damaged: " + h.status().message());
  if (h->dict_id || h->base || !FrameAgrees(*h, *info)) {
    return bad("which is damaged: its frame header is not a dictionary's");
  }
  auto raw = DecodeFrame(*frame, *h, opts_.max_object_size, d.str());
  if (!raw.ok()) return bad("which is damaged: " + raw.status().message());
  // Not hashed here (a third of a dictionary's load): a wrong dictionary
  // cannot give an object's bytes, whose own hash is checked; when that
  // check fails, CheckDictionary says whether the dictionary is to blame.
  auto dict = Dictionary::Load(std::move(raw).value(), d.str(), &d);
  if (!dict.ok()) return bad("which is damaged: " + dict.status().message());
  if ((*dict)->id() != id) return bad("which holds " + DictionaryName((*dict)->id()) + " instead");
  std::lock_guard<std::mutex> lock(dict_mu_);
  dicts_[id] = *dict;
  return *dict;
}

Status LmdbStore::CheckDictionary(const Dictionary& dict, const std::string& where) {
  const Digest got = Sha256Of(dict.bytes());
  if (got == dict.digest()) return Status::OK();
  {
    std::lock_guard<std::mutex> lock(dict_mu_);
    if (auto it = dicts_.find(dict.id()); it != dicts_.end() && it->second.get() == &dict) dicts_.erase(it);
  }
  return Status::Corruption(where + ": compressed with " + DictionaryName(dict.id()) + " (" + dict.digest().str() +
                            "), which is damaged: its content hashes to " + got.str() + RestoreHint(dict.id()));
}

Result<std::string> LmdbStore::DecodeCheckedIn(lmdb::Txn* txn, const ObjectInfo& info, std::string_view frame,
                                               uint32_t* dict_fault) {
  KI_ASSIGN_OR_RETURN(DecodePlan plan, PlanDecode(txn, info, frame, dict_fault));
  return DecodePlanned(info, frame, plan, dict_fault);
}

Result<LmdbStore::DecodePlan> LmdbStore::PlanDecode(lmdb::Txn* txn, const ObjectInfo& info, std::string_view frame,
                                                    uint32_t* dict_fault) {
  std::string where = info.digest.str();
  DecodePlan plan;
  KI_ASSIGN_OR_RETURN(plan.header, odb::ParseFrameHeader(frame, where));
  if (!FrameAgrees(plan.header, info)) {
    return Status::Corruption(where + ": frame header disagrees with the index");
  }
  if (const uint32_t id = plan.header.dict_id) {
    auto got = txn ? FrameDictionary(*txn, id, where) : FrameDictionary(id, where);
    if (!got.ok()) {
      if (dict_fault) *dict_fault = id;
      return got.status();
    }
    plan.dict = std::move(got).value();
  }
  if (plan.header.base) {
    KI_ASSIGN_OR_RETURN(plan.base, PlanBase(txn, *plan.header.base, where, dict_fault));
  }
  return plan;
}

Result<std::shared_ptr<const LmdbStore::BaseFrame>> LmdbStore::PlanBase(lmdb::Txn* txn, const FrameBase& base,
                                                                        const std::string& where,
                                                                        uint32_t* dict_fault,
                                                                        const DictionaryFor& dictionary_for) {
  std::optional<ReadTxn> own;
  if (!txn) {
    KI_ASSIGN_OR_RETURN(own, BeginRead());
    txn = &**own;
  }
  const std::string names = where + ": based on object number " + std::to_string(base.number);
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(*txn, kObjects));
  std::optional<std::string_view> v;
  if (dbi && base.number && objects_numbered_) {
    KI_ASSIGN_OR_RETURN(v, txn->Get(*dbi, NumberKey(base.number)));
  }
  std::optional<ObjectsRow> row;
  if (v) row = SplitObjectsRow(NumberKey(base.number), *v);
  if (!row || row->frame.empty()) {
    return Status::Corruption(names + ", which the store does not hold in its index (ki audit says more)");
  }
  auto b = std::make_shared<BaseFrame>();
  b->digest = row->digest;
  b->frame.assign(row->frame);  // copied out: LMDB data is valid only inside the txn
  const std::string of = names + " (" + b->digest.str() + ")";
  auto h = ParseFrameHeader(b->frame, b->digest.str());
  if (!h.ok()) return Status::Corruption(of + ", which is damaged: " + h.status().message());
  if (h->base) return Status::Corruption(of + ", which is itself based (a base never is)");
  b->header = std::move(h).value();
  if (const uint32_t id = b->header.dict_id) {
    auto got = dictionary_for ? dictionary_for(b->header, b->digest.str()) : FrameDictionary(*txn, id, b->digest.str());
    if (!got.ok()) {
      if (dict_fault) *dict_fault = id;
      return Status::Corruption(of + ", which cannot be read: " + got.status().message());
    }
    b->dict = std::move(got).value();
  }
  return std::shared_ptr<const BaseFrame>(std::move(b));
}

Result<std::string> LmdbStore::DecodeBase(const BaseFrame& base, const std::string& where, uint32_t* dict_fault) {
  const std::string of = where + ": based on " + base.digest.str();
  auto raw = odb::DecodeFrame(base.frame, base.header, opts_.max_object_size, base.digest.str(), base.dict.get());
  Status bad = raw.ok() ? Status::OK() : raw.status();
  if (bad.ok() && Sha256Of(*raw) != base.digest) {
    bad = Status::Corruption(base.digest.str() + ": content hashes to " + Sha256Of(*raw).str());
  }
  if (bad.ok()) return std::move(raw).value();
  if (base.dict && !CheckDictionary(*base.dict, base.digest.str()).ok() && dict_fault) *dict_fault = base.dict->id();
  return Status::Corruption(of + ", which is damaged: " + bad.message());
}

Result<std::string> LmdbStore::DecodePlanned(const ObjectInfo& info, std::string_view frame, const DecodePlan& plan,
                                             uint32_t* dict_fault) {
  std::string where = info.digest.str();
  const std::shared_ptr<const Dictionary>& dict = plan.dict;
  auto blame = [&](Status s) -> Status {
    // A damaged dictionary, rather than the frame, when it is one.
    if (!dict) return s;
    Status d = CheckDictionary(*dict, where);
    if (d.ok()) return s;
    if (dict_fault) *dict_fault = plan.header.dict_id;
    return d;
  };
  std::optional<std::string> base;
  if (plan.base) {
    KI_ASSIGN_OR_RETURN(base, DecodeBase(*plan.base, where, dict_fault));
  }
  auto raw = odb::DecodeFrame(frame, plan.header, opts_.max_object_size, where, dict.get(),
                              base ? std::optional<std::string_view>(*base) : std::nullopt);
  if (!raw.ok()) return blame(raw.status());
  Digest got = Sha256Of(*raw);
  if (got != info.digest) return blame(Status::Corruption(where + ": content hashes to " + got.str()));
  return std::move(raw).value();
}

Result<std::string> LmdbStore::Read(const Digest& d) {
  // One read transaction for the entry, the frame and its dictionary.
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  KI_ASSIGN_OR_RETURN(auto info, StatIn(*read, d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->size > opts_.max_object_size) {
    return Status::InvalidInput(d.str() + " is " + std::to_string(info->size) + " bytes, over the limit of " +
                                std::to_string(opts_.max_object_size) +
                                " for an object read whole into memory (ki cat streams it)");
  }
  KI_ASSIGN_OR_RETURN(std::string frame, ReadFrameIn(*read, *info));
  return DecodeCheckedIn(&*read, *info, frame);
}

Status LmdbStore::ReadStream(const Digest& d, const std::function<Status(std::string_view)>& out) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->location == Location::kLoose) return StreamLoose(*info, out);
  KI_ASSIGN_OR_RETURN(std::string frame, ReadFrame(*info));
  KI_ASSIGN_OR_RETURN(std::string raw, DecodeChecked(*info, frame));
  return out(raw);
}

Result<LmdbStore::LooseFrame> LmdbStore::OpenLooseFrame(const ObjectInfo& info) {
  const std::string where = info.digest.str();
  LooseFrame f;
  auto file = env()->NewSequentialFile(odb::LoosePath(dir_, info.digest));
  if (!file.ok()) {
    if (file.status().IsNotFound()) return Status::Corruption(where + ": loose object file is missing");
    return file.status();
  }
  f.file = std::move(file).value();
  KI_ASSIGN_OR_RETURN(f.header, odb::ReadFrameHeader(*f.file, where));
  if (!FrameAgrees(f.header, info)) {
    return Status::Corruption(where + ": frame header disagrees with the index");
  }
  if (f.header.dict_id) {
    // Checked before any byte goes out, which a later blame could not undo.
    KI_ASSIGN_OR_RETURN(f.dict, FrameDictionary(f.header.dict_id, where));
    KI_RETURN_IF_ERROR(CheckDictionary(*f.dict, where));
  }
  return f;
}

Status LmdbStore::StreamLoose(const ObjectInfo& info, const std::function<Status(std::string_view)>& out) {
  const std::string where = info.digest.str();
  KI_ASSIGN_OR_RETURN(LooseFrame f, OpenLooseFrame(info));
  KI_ASSIGN_OR_RETURN(Digest got, odb::DecodeFrameStream(*f.file, f.header, where, out, f.dict.get()));
  if (got != info.digest) return Status::Corruption(where + ": content hashes to " + got.str());
  return Status::OK();
}

Status LmdbStore::CheckUnindexedLoose(const std::string& path, const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto file, env()->NewSequentialFile(path));
  KI_ASSIGN_OR_RETURN(auto h, ReadFrameHeader(*file, path));
  std::shared_ptr<const Dictionary> dict;
  if (h.dict_id) {
    KI_ASSIGN_OR_RETURN(dict, FrameDictionary(h.dict_id, path));
  }
  KI_ASSIGN_OR_RETURN(Digest got, DecodeFrameStream(*file, h, path, Discard, dict.get()));
  if (got != d) return Status::Corruption(path + ": content hashes to " + got.str());
  return ContentAgreesWithHeader(h.type, h.kind, h.media_type, nullptr, path);
}

Status LmdbStore::CheckUnindexedFrame(std::string_view frame, const Digest& d) {
  const std::string where = d.str();
  KI_ASSIGN_OR_RETURN(auto h, ParseFrameHeader(frame, where));
  std::shared_ptr<const Dictionary> dict;
  if (h.dict_id) {
    KI_ASSIGN_OR_RETURN(dict, FrameDictionary(h.dict_id, where));
  }
  std::optional<std::string> base;
  if (h.base) {
    KI_ASSIGN_OR_RETURN(auto b, PlanBase(nullptr, *h.base, where));
    KI_ASSIGN_OR_RETURN(base, DecodeBase(*b, where));
  }
  KI_ASSIGN_OR_RETURN(std::string raw, DecodeFrame(frame, h, opts_.max_object_size, where, dict.get(),
                                                   base ? std::optional<std::string_view>(*base) : std::nullopt));
  const Digest got = Sha256Of(raw);
  if (got != d) return Status::Corruption(where + ": content hashes to " + got.str());
  if (h.type != ObjectType::kManifest) return Status::OK();
  auto m = ManifestFromCanonical(raw, where);
  return m.ok() ? ContentAgreesWithHeader(h.type, h.kind, h.media_type, &*m, where) : m.status();
}

Result<Manifest> LmdbStore::ReadManifest(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  KI_ASSIGN_OR_RETURN(auto info, StatIn(*read, d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->type != ObjectType::kManifest) return Status::InvalidInput(d.str() + " is a blob, not a manifest");
  KI_ASSIGN_OR_RETURN(std::string frame, ReadFrameIn(*read, *info));
  KI_ASSIGN_OR_RETURN(std::string raw, DecodeCheckedIn(&*read, *info, frame));
  // The bytes were validated when stored and have just been re-hashed.
  auto m = ManifestFromStored(raw, d);
  if (!m.ok()) return Status::Corruption(m.status().message());
  return m;
}

Result<std::optional<Digest>> LmdbStore::DocumentOf(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(auto v, Get(kDocs, DocsKey(*info)));
  if (!v || v->size() != 32) return std::optional<Digest>();
  return std::optional<Digest>(Digest::FromRaw(*v));
}

Result<std::optional<Json>> LmdbStore::ReadDocument(const Digest& d) {
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

Result<std::vector<Digest>> LmdbStore::LookupName(Kind kind, std::string_view name) {
  const std::string key = NameKey(kind, name);
  std::optional<Digest> latest;
  std::vector<Digest> others;
  KI_RETURN_IF_ERROR(Scan(kNameSet, key, [&](std::string_view k, std::string_view v) {
    if (k.size() != key.size() + 32) return true;  // a longer name that starts with this one
    const Digest d = Digest::FromRaw(k.substr(key.size()));
    if (v == kNameLatest && !latest) {
      latest = d;
    } else {
      others.push_back(d);
    }
    return true;
  }));
  if (!latest) {
    // A store of format 10 or before, read as it is: `names` says. One
    // written before nameset existed has only that holder; a reindex or a
    // new add of the name records the others (format.md).
    KI_ASSIGN_OR_RETURN(auto old, Get(kNames, key));
    if (old && old->size() == 32) latest = Digest::FromRaw(*old);
  }
  std::vector<Digest> out;
  if (latest) out.push_back(*latest);
  for (const Digest& d : others)
    if (!latest || !(d == *latest)) out.push_back(d);
  return out;
}

Result<std::vector<std::string>> LmdbStore::NamesOf(const Digest& d) {
  // namesof is keyed by the object's number, which its meta entry holds
  // (ki ls, which asks for every object's names, has it already and calls
  // the ObjectInfo overload).
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return std::vector<std::string>();
  return NamesOf(*info);
}

Result<std::vector<std::string>> LmdbStore::NamesOf(const ObjectInfo& info) {
  std::vector<std::string> out;
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(*read, kNamesOf));
  if (!dbi) return out;
  const std::string prefix = ObjectKeyPart(info);
  KI_RETURN_IF_ERROR(ScanTable(*read, *dbi, prefix, [&](std::string_view k, std::string_view) {
    out.emplace_back(k.substr(prefix.size()));
    return true;
  }));
  return out;
}

Result<std::unordered_map<uint32_t, Digest>> LmdbStore::ObjectsByNumber() {
  std::unordered_map<uint32_t, Digest> out;
  ObjectInfo info;
  KI_RETURN_IF_ERROR(Scan(kMeta, "", [&](std::string_view k, std::string_view v) {
    if (UnpackMeta(k, v, &info) && info.number) out.emplace(info.number, info.digest);
    return true;
  }));
  return out;
}

LmdbStore::NamesOfEntry LmdbStore::SplitNamesOf(std::string_view key,
                                                const std::unordered_map<uint32_t, Digest>& by_number) const {
  NamesOfEntry e;
  const size_t part = ObjectKeyPartSize(numbered_);
  if (key.size() <= part) return e;
  e.well_formed = true;
  e.name = key.substr(part);
  if (!numbered_) {
    e.holder = Digest::FromRaw(key.substr(0, 32));
  } else if (auto n = KeyNumber(key.substr(0, 4))) {
    if (auto it = by_number.find(*n); it != by_number.end()) e.holder = it->second;
  }
  return e;
}

std::optional<Digest> LmdbStore::DocsKeyHolder(std::string_view key,
                                               const std::unordered_map<uint32_t, Digest>& by_number) const {
  if (!numbered_) return key.size() == 32 ? std::optional<Digest>(Digest::FromRaw(key)) : std::nullopt;
  auto n = KeyNumber(key);
  if (!n) return std::nullopt;
  auto it = by_number.find(*n);
  return it == by_number.end() ? std::nullopt : std::optional<Digest>(it->second);
}

Status LmdbStore::ForEachObject(const std::function<bool(const ObjectInfo&)>& fn) {
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

Status LmdbStore::ForEachOfKind(Kind kind, const std::function<bool(const Digest&)>& fn) {
  // Format 8 keeps no kinds table: every meta entry says its object's kind
  // (byte 1 in both layouts, checked before the entry is unpacked). The
  // callers (ki export kernelindex, ki report) walk whole kinds; a scan of
  // meta is milliseconds of the export's 48,000 entries.
  ObjectInfo info;
  return Scan(kMeta, "", [&](std::string_view k, std::string_view v) {
    if (v.size() < 2 || uint8_t(v[1]) != uint8_t(kind)) return true;
    if (!UnpackMeta(k, v, &info) || info.type != ObjectType::kManifest || info.kind != kind) return true;
    return fn(info.digest);
  });
}

Result<std::vector<std::pair<Digest, std::string>>> LmdbStore::Referrers(const Digest& d) {
  std::vector<std::pair<Digest, std::string>> out;
  std::vector<std::pair<std::string, std::string>> numbered;  // referrer part, field
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  KI_RETURN_IF_ERROR(ScanIn(*read, kRefs, d.raw(), [&](std::string_view k, std::string_view) {
    auto parts = SplitRefKey(k);
    if (!parts) return true;
    if (!objects_numbered_) {
      out.emplace_back(Digest::FromRaw(parts->referrer), RefField(parts->field));
    } else {
      numbered.emplace_back(parts->referrer, RefField(parts->field));
    }
    return true;
  }));
  // Format 12: each referrer's digest from its number's objects row, in the
  // same snapshot (a referrer with no row, damage, is left out: audit
  // reports the refs entry).
  for (auto& [part, field] : numbered) {
    auto n = KeyNumber(part);
    if (!n) continue;
    KI_ASSIGN_OR_RETURN(auto referrer, DigestOfNumberIn(*read, *n));
    if (referrer) out.emplace_back(*referrer, std::move(field));
  }
  // In digest order, as before format 12: numbers follow the order objects
  // arrived in, which differs between a store and one that pulled from it.
  if (!numbered.empty()) std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<Digest>> LmdbBatch::ReferrersOf(const Digest& d) {
  std::vector<std::string> parts;  // the referrer part of each key
  KI_RETURN_IF_ERROR(Scan(kRefs, d.raw(), [&](std::string_view k, std::string_view) {
    if (auto p = store_->SplitRefKey(k)) parts.emplace_back(p->referrer);
    return true;
  }));
  std::vector<Digest> out;
  for (const std::string& part : parts) {
    if (part.size() == 32) {
      out.push_back(Digest::FromRaw(part));
      continue;
    }
    // A referrer whose row is missing (damage) is left out: audit reports
    // the refs entry.
    KI_ASSIGN_OR_RETURN(auto value, Get(kObjects, part));
    if (auto row = value ? SplitObjectsRow(part, *value) : std::nullopt) out.push_back(row->digest);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::optional<std::string>> LmdbStore::Get(std::string_view table, std::string_view key) {
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  lmdb::Txn& txn = *read;
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, table));
  if (!dbi) return std::optional<std::string>();
  KI_ASSIGN_OR_RETURN(auto v, txn.Get(*dbi, key));
  if (!v) return std::optional<std::string>();
  return std::optional<std::string>(std::string(*v));
}

Status LmdbStore::Scan(std::string_view table, std::string_view prefix,
            const std::function<bool(std::string_view, std::string_view)>& fn) {
  KI_ASSIGN_OR_RETURN(auto read, BeginRead());
  lmdb::Txn& txn = *read;
  return ScanIn(txn, table, prefix, fn);
}

Status LmdbStore::ScanIn(lmdb::Txn& txn, std::string_view table, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) {
  KI_ASSIGN_OR_RETURN(auto dbi, lmdb_.Table(txn, table));
  if (!dbi) return Status::OK();
  return ScanTable(txn, *dbi, prefix, fn);
}

Result<std::unique_ptr<Batch>> LmdbStore::NewBatch() {
  if (read_only_) return Status::IOError("the store was opened read-only");
  KI_ASSIGN_OR_RETURN(auto txn, lmdb_.BeginWrite());
  return std::unique_ptr<Batch>(new LmdbBatch(this, std::move(txn)));
}

EncodedManifest LmdbStore::EncodeManifest(const Manifest& m, std::optional<std::string_view> document,
                               std::string_view document_media_type) const {
  EncodedManifest e;
  e.kind = m.kind;
  e.digest = m.digest;
  // Recorded only with the document that carries it (LinkManifest).
  if (document) e.name = m.name();
  e.object.digest = m.digest;
  e.object.type = ObjectType::kManifest;
  e.object.kind = uint8_t(m.kind);
  e.object.media_type = "application/vnd.kernelindex.manifest+json";
  e.object.raw_size = m.canonical.size();
  e.object.frame = odb::EncodeFrame(ObjectType::kManifest, uint8_t(m.kind), e.object.media_type, m.canonical,
                                    opts_.zstd_level,
                                    BuiltinDictionaryFor(ObjectType::kManifest, uint8_t(m.kind), e.object.media_type));
  e.references = ExtractReferences(m);
  if (document) {
    EncodedObject& d = e.document.emplace();
    d.digest = Sha256Of(*document);
    d.type = ObjectType::kBlob;
    d.media_type = std::string(document_media_type);
    d.raw_size = document->size();
    const Dictionary* dict = BuiltinDictionaryFor(ObjectType::kBlob, 0, document_media_type);
    d.frame = odb::EncodeFrame(ObjectType::kBlob, 0, document_media_type, *document, opts_.zstd_level, dict);
    if (e.object.frame.size() <= opts_.loose_threshold) {
      // Against the manifest: the batch numbers it (a number takes 3 bytes
      // in a store of up to two million objects).
      auto based = odb::EncodeBasedFrame(ObjectType::kBlob, 0, document_media_type, *document, m.canonical,
                                         opts_.zstd_level, dict, d.frame.size(), 3);
      if (based) {
        d.based_frame = std::move(*based);
        d.base = m.digest;
      }
    }
  }
  return e;
}

}  // namespace ki::odb

namespace ki {

using odb::LmdbStore;

// ---------------------------------------------------------------- statics

int DerivedIndex::HeldFormat(Store& store) const { return store.format_version(); }

std::string DerivedIndex::DescribeKey(std::string_view, std::string_view key) const {
  if (key.size() == 32) return Digest::FromRaw(key).str();
  if (key.size() == 64) return Digest::FromRaw(key.substr(0, 32)).str() + " run " + Digest::FromRaw(key.substr(32)).str();
  return lmdb::KeyText(key);
}

void RegisterDerivedIndex(DerivedIndex* index) {
  auto& all = odb::DerivedIndexes();
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
                            env->Exists(odb::FormatPath(base));
  std::string ki_dir = names_ki_dir ? base : base + "/.ki";
  std::string format = odb::FormatPath(ki_dir);
  if (!env->Exists(format)) {
    KI_RETURN_IF_ERROR(env->CreateDirs(odb::IndexDir(ki_dir)));
    KI_RETURN_IF_ERROR(env->CreateDirs(odb::ObjectsDir(ki_dir)));
    // FORMAT is written last: a directory without it is not a store.
    KI_RETURN_IF_ERROR(env->WriteFileAtomic(format, odb::kFormatLine, Durability::kSync));
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
  KI_RETURN_IF_ERROR(env->SyncDir(odb::IndexDir(ki_dir)));
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

// LmdbStore is the one Store there is; anything else (none today) has no
// Env of its own to give, and gets the process's.
Env& EnvOf(const Store& store) {
  if (const auto* s = dynamic_cast<const odb::LmdbStore*>(&store)) return *s->env();
  return *Env::Default();
}

}  // namespace ki
