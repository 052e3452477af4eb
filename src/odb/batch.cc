// Writes: a batch is one LMDB write transaction plus the loose files it
// wrote; it hands what it stored to the derived indexes before it commits.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "odb/store_impl.h"

namespace ki::odb {

Status LmdbBatch::Scan(std::string_view table, std::string_view prefix,
                       const std::function<bool(std::string_view, std::string_view)>& fn) {
  KI_RETURN_IF_ERROR(FlushFor(table));
  KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
  KI_RETURN_IF_ERROR(FlushStaged(dbi));
  return ScanTable(txn_, dbi, prefix, fn);
}

Result<std::optional<ObjectInfo>> LmdbBatch::Stat(const Digest& d) {
  if (auto it = pending_.find(d); it != pending_.end()) return std::optional<ObjectInfo>(it->second.info);
  return store_->StatIn(txn_, d);
}

Result<bool> LmdbBatch::Has(const Digest& d) {
  if (pending_.count(d)) return true;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_ASSIGN_OR_RETURN(auto v, txn_.Get(meta, d.raw()));
  return v.has_value();
}

Result<std::string> LmdbBatch::Read(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->size > store_->options().max_object_size) {
    return Status::InvalidInput(d.str() + " is over the limit for an object read whole into memory");
  }
  std::string frame;
  if (auto it = pending_.find(d); it != pending_.end() && it->second.info.location == Location::kIndex) {
    frame = it->second.frame;
  } else {
    KI_ASSIGN_OR_RETURN(frame, store_->ReadFrameIn(txn_, *info));
  }
  // A based frame's base may be among the objects still held back: its
  // row is read through the transaction, so they are written first.
  if (FrameIsBased(frame) && !pending_.empty()) KI_RETURN_IF_ERROR(FlushPending());
  return store_->DecodeCheckedIn(&txn_, *info, frame);
}

Status LmdbBatch::FlushPending() {
  if (pending_.empty()) return Status::OK();
  KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  if (store_->objects_numbered()) {
    // Format 12: objects rows in number order, which is the order new
    // numbers are given, so a batch of new objects appends to the table.
    // A loose object's row holds its digest alone.
    std::vector<const PendingObject*> by_number;
    by_number.reserve(pending_.size());
    for (const auto& [d, p] : pending_) by_number.push_back(&p);
    std::sort(by_number.begin(), by_number.end(),
              [](const PendingObject* a, const PendingObject* b) { return a->info.number < b->info.number; });
    for (const PendingObject* p : by_number) {
      const std::string_view frame = p->info.location == Location::kIndex ? std::string_view(p->frame) : "";
      KI_ASSIGN_OR_RETURN(char* dst, ReserveKV(objects, NumberKey(p->info.number), 32 + frame.size()));
      std::memcpy(dst, p->info.digest.raw().data(), 32);
      std::memcpy(dst + 32, frame.data(), frame.size());
    }
  }
  for (const auto& [d, p] : pending_) {
    if (p.info.location == Location::kIndex && !store_->objects_numbered()) {
      KI_ASSIGN_OR_RETURN(char* dst, ReserveKV(objects, d.raw(), p.frame.size()));
      std::memcpy(dst, p.frame.data(), p.frame.size());
    }
    KI_ASSIGN_OR_RETURN(int64_t added, AddedFor(meta, d));
    KI_RETURN_IF_ERROR(PutKV(meta, d.raw(), odb::PackMeta(p.info, added)));
  }
  pending_.clear();
  pending_numbers_.clear();
  pending_bytes_ = 0;
  return Status::OK();
}

Result<std::optional<Digest>> LmdbBatch::DigestOfNumber(uint32_t n) {
  // Not through Get(kObjects): that would write the held-back objects out
  // of their order (FlushPending).
  if (auto it = pending_numbers_.find(n); it != pending_numbers_.end()) return std::optional<Digest>(it->second);
  return store_->DigestOfNumberIn(txn_, n);
}

Status LmdbBatch::RebuildDerivedIndexes() {
  KI_RETURN_IF_ERROR(FlushPending());
  std::vector<ObjectInfo> every;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_RETURN_IF_ERROR(ScanTable(txn_, meta, "", [&](std::string_view k, std::string_view v) {
    ObjectInfo info;
    // A malformed entry is audit's to report; reindex rebuilds it.
    if (UnpackMeta(k, v, &info)) every.push_back(std::move(info));
    return true;
  }));
  return RefillDerivedIndexes(*this, every);
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

Result<std::shared_ptr<const Manifest>> LmdbBatch::ViewManifest(const Digest& d) {
  // One this batch stored from the manifest it was encoded from: its
  // bytes are that manifest's canonical form, so no read is needed.
  if (auto it = parsed_.find(d); it != parsed_.end()) return it->second;
  return Batch::ViewManifest(d);
}

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
    KI_ASSIGN_OR_RETURN(std::optional<std::string> last, txn_.LastKey(dbi));
    it = last_.emplace(dbi, std::move(last)).first;
  }
  // LMDB orders keys as memcmp, then shorter first: string_view's order.
  return !it->second || key > std::string_view(*it->second);
}

Status LmdbBatch::PutKV(MDB_dbi dbi, std::string_view key, std::string_view value) {
  // A key LMDB would refuse is put now, so that the error is the put's.
  if (unstaged_.count(dbi) || key.empty() || key.size() > lmdb::kMaxKeyBytes) return WriteKV(dbi, key, value);
  StagedTable& t = staged_[dbi];
  // Keys that come in order (the bulk paths sort theirs) go to the end
  // without a search.
  const bool after = t.empty() || key > std::string_view(t.rbegin()->first);
  auto it = after ? t.end() : t.find(key);
  if (it == t.end()) {
    staged_bytes_ += key.size() + value.size() + 64;  // 64: the map node, roughly
    t.emplace_hint(t.end(), std::string(key), std::string(value));
  } else {
    staged_bytes_ += value.size();
    it->second.emplace(value);
  }
  return staged_bytes_ > kStagedLimit ? FlushAllStaged() : Status::OK();
}

Status LmdbBatch::DelKV(MDB_dbi dbi, std::string_view key) {
  if (unstaged_.count(dbi) || key.empty() || key.size() > lmdb::kMaxKeyBytes) return EraseKV(dbi, key);
  StagedTable& t = staged_[dbi];
  auto it = t.find(key);
  if (it == t.end()) {
    staged_bytes_ += key.size() + 64;
    t.emplace(std::string(key), std::nullopt);
  } else {
    it->second.reset();
  }
  return staged_bytes_ > kStagedLimit ? FlushAllStaged() : Status::OK();
}

Result<std::optional<std::string_view>> LmdbBatch::GetKV(MDB_dbi dbi, std::string_view key) {
  if (auto t = staged_.find(dbi); t != staged_.end()) {
    if (auto it = t->second.find(key); it != t->second.end()) {
      if (!it->second) return std::optional<std::string_view>();
      return std::optional<std::string_view>(std::string_view(*it->second));
    }
  }
  return txn_.Get(dbi, key);
}

Status LmdbBatch::FlushStaged(MDB_dbi dbi) {
  auto t = staged_.find(dbi);
  if (t == staged_.end()) return Status::OK();
  StagedTable rows;
  rows.swap(t->second);
  staged_.erase(t);
  for (const auto& [k, v] : rows) KI_RETURN_IF_ERROR(v ? WriteKV(dbi, k, *v) : EraseKV(dbi, k));
  return Status::OK();
}

Status LmdbBatch::FlushAllStaged() {
  while (!staged_.empty()) KI_RETURN_IF_ERROR(FlushStaged(staged_.begin()->first));
  staged_bytes_ = 0;
  return Status::OK();
}

Status LmdbBatch::WriteKV(MDB_dbi dbi, std::string_view key, std::string_view value) {
  KI_ASSIGN_OR_RETURN(bool last, SortsLast(dbi, key));
  if (last) {
    KI_ASSIGN_OR_RETURN(bool appended, txn_.Append(dbi, key, value));
    if (appended) {
      RememberLast(dbi, key);
      return Status::OK();
    }
    last_.erase(dbi);  // LMDB knows better: re-read the last key next time
  }
  return txn_.Put(dbi, key, value);
}

Result<char*> LmdbBatch::ReserveKV(MDB_dbi dbi, std::string_view key, size_t size) {
  KI_ASSIGN_OR_RETURN(bool last, SortsLast(dbi, key));
  if (last) {
    KI_ASSIGN_OR_RETURN(char* at, txn_.ReserveAppend(dbi, key, size));
    if (at) {
      RememberLast(dbi, key);
      return at;
    }
    last_.erase(dbi);
  }
  return txn_.Reserve(dbi, key, size);
}

Status LmdbBatch::DropTableIfPresent(std::string_view table) {
  KI_ASSIGN_OR_RETURN(bool present, store_->lmdb().HasTable(txn_, table));
  if (!present) return Status::OK();
  return DropTable(table);
}

Result<MDB_dbi> LmdbBatch::Table(std::string_view name) {
  if (auto it = opened_.find(name); it != opened_.end()) return it->second;
  KI_ASSIGN_OR_RETURN(auto dbi, store_->lmdb().Table(txn_, name));
  opened_.emplace(std::string(name), *dbi);
  if (name == kObjects || name == kMeta || name == kDicts) unstaged_.insert(*dbi);
  return *dbi;
}

Result<bool> LmdbBatch::Exists(uint64_t raw_size, const Digest& d) {
  if (raw_size > store_->options().max_object_size) {
    return Status::InvalidInput("object of " + std::to_string(raw_size) + " bytes is over the limit of " +
                                std::to_string(store_->options().max_object_size));
  }
  return HeldIntact(d);
}

Result<bool> LmdbBatch::HeldIntact(const Digest& d) {
  if (pending_.count(d)) return true;
  auto info = store_->StatIn(txn_, d);
  if (!info.ok()) {
    if (info.status().IsCorruption()) return false;  // a malformed index entry: rewritten
    return info.status();
  }
  if (!*info) return false;
  // Re-hashed: a few microseconds for an object kept in LMDB (64 KiB at
  // most), a read of the file for a loose one (docs/cli.md, ki add).
  Status s;
  if ((*info)->location == Location::kLoose) {
    s = store_->StreamLoose(**info, Discard);
  } else {
    auto frame = store_->ReadFrameIn(txn_, **info);
    s = frame.ok() ? store_->DecodeCheckedIn(&txn_, **info, *frame).status() : frame.status();
  }
  if (s.ok()) return true;
  if (s.IsCorruption()) return false;  // damaged: these bytes replace it
  return s;
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
  o.frame = odb::EncodeFrame(type, kind, media_type, raw, store_->options().zstd_level,
                             BuiltinDictionaryFor(type, kind, media_type));
  KI_RETURN_IF_ERROR(WriteObject(o));
  return PutResult{d, false};
}

Status LmdbBatch::EnsureDictionary(uint32_t id) {
  if (dicts_ensured_.count(id)) return Status::OK();
  KI_ASSIGN_OR_RETURN(MDB_dbi dicts, Table(kDicts));
  KI_ASSIGN_OR_RETURN(auto held, txn_.Get(dicts, DictKey(id)));
  bool have = false;
  if (held && held->size() == 32) {
    // Held and intact: a damaged dictionary is stored again from ki's own copy.
    KI_ASSIGN_OR_RETURN(have, HeldIntact(Digest::FromRaw(*held)));
  }
  if (!have) {
    std::shared_ptr<const Dictionary> builtin = BuiltinDictionary(id);
    if (!builtin) {
      return Status::InvalidInput("internal: a frame names " + DictionaryName(id) +
                                  ", which neither the store holds nor this ki has built in");
    }
    KI_RETURN_IF_ERROR(PutObject(ObjectType::kBlob, 0, kDictionaryMediaType, builtin->bytes(), builtin->digest()).status());
    KI_RETURN_IF_ERROR(IndexDictionary(builtin->digest(), builtin->bytes()));
    // Its object waits with the batch's others (pending_); reads in the
    // batch of the frames that need it find it in the store's cache.
    store_->CacheDictionary(builtin);
  }
  dicts_ensured_.insert(id);
  return Status::OK();
}

Status LmdbBatch::IndexDictionary(const Digest& d, std::string_view raw) {
  const uint32_t id = DictionaryId(raw);
  if (id == 0) return Status::OK();
  KI_ASSIGN_OR_RETURN(MDB_dbi dicts, Table(kDicts));
  const std::string key = DictKey(id);
  KI_ASSIGN_OR_RETURN(auto held, txn_.Get(dicts, key));
  // Of two dictionaries with one ID the smaller digest is filed, whatever
  // the order they came in: the table stays a function of the objects.
  if (held && held->size() == 32) {
    const Digest other = Digest::FromRaw(*held);
    if (other == d || other < d) {
      KI_ASSIGN_OR_RETURN(bool other_held, Has(other));
      if (other_held) return Status::OK();
    }
  }
  return PutKV(dicts, key, d.raw());
}

Result<PutResult> LmdbBatch::PutBlobStream(SequentialFile& in, std::string_view media_type,
                                           const std::string& where, const std::optional<Digest>& expected) {
  Env* env = store_->env();
  const StoreOptions& opts = store_->options();
  const std::string incoming = IncomingDir(store_->path());
  KI_RETURN_IF_ERROR(env->CreateDirs(incoming));
  ScratchFiles scratch{env, {}};
  KI_ASSIGN_OR_RETURN(FileStat st, in.Stat());
  if (st.directory) return Status::InvalidInput(where + " is a directory");
  if (expected) {
    KI_ASSIGN_OR_RETURN(bool held, HeldIntact(*expected));
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
  // Is the file's content already stored? Hashing it first costs a read
  // that SHA-256 does several times faster than zstd -3 compresses, and
  // spares an object already held the compression and a scratch write of
  // all of it (bench/results/blob-2026-11-30-readd.md). A pipe cannot be
  // read twice: its scratch copy goes through the one pass below.
  std::optional<Digest> hashed_first;
  if (direct && !expected) {
    KI_ASSIGN_OR_RETURN(hashed_first, odb::HashMapped(*map, where));
    KI_ASSIGN_OR_RETURN(bool held, HeldIntact(*hashed_first));
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
  KI_ASSIGN_OR_RETURN(bool existing, hashed_first ? Result<bool>(false) : HeldIntact(d));
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
  if (env->Exists(path) && store_->CheckUnindexedLoose(path, d).ok()) {
    // An unindexed loose file of an interrupted write: kept, as WriteObject
    // keeps it, and its directory synced before the index names it (the
    // killed writer may have renamed it without that sync). One that does
    // not hold these bytes (damaged) is replaced below by an atomic rename.
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
  KI_ASSIGN_OR_RETURN(info.number, NumberFor(d));
  // Its meta entry waits with the batch's others (a key put now, amid the
  // digests still to come, would split meta's pages as they follow it).
  pending_.insert_or_assign(d, PendingObject{info, std::string()});
  pending_numbers_[info.number] = d;
  arrived_.push_back(info);
  return PutResult{d, false};
}

Status LmdbBatch::WriteObject(const EncodedObject& o) {
  const Digest& d = o.digest;
  std::string_view frame = o.frame;
  std::string based;
  if (!o.based_frame.empty() && store_->objects_numbered()) {
    // Based on its manifest when that is held in the index (a loose one is
    // never a base): the frame names it by its number, known by now (the
    // manifest is written first).
    KI_ASSIGN_OR_RETURN(auto base, Stat(o.base));
    if (base && base->location == Location::kIndex && base->number && base->type == ObjectType::kManifest) {
      KI_ASSIGN_OR_RETURN(based, NumberBasedFrame(o.based_frame, base->number));
      if (based.size() < frame.size() && based.size() <= store_->options().loose_threshold) frame = based;
    }
  }
  if (FrameNamesDictionary(frame)) {
    // A frame is never written without the dictionary it names.
    KI_ASSIGN_OR_RETURN(auto h, ParseFrameHeader(frame, d.str()));
    KI_RETURN_IF_ERROR(EnsureDictionary(h.dict_id));
  }
  ObjectInfo info;
  info.digest = d;
  info.type = o.type;
  if (o.type == ObjectType::kManifest) info.kind = Kind(o.kind);
  info.size = o.raw_size;
  info.stored_size = frame.size();
  info.media_type = o.media_type;
  KI_ASSIGN_OR_RETURN(info.number, NumberFor(d));
  if (frame.size() > store_->options().loose_threshold) {
    // Large objects live as files: LMDB would copy them through its pages
    // on every write and keep the map large. Each is fsynced before its
    // rename; the directories are synced once at Commit.
    info.location = Location::kLoose;
    std::string path = odb::LoosePath(store_->path(), d);
    std::string dir = path.substr(0, path.rfind('/'));
    // A file there already that does not hold these bytes is damaged (audit
    // reports it): the good bytes replace it.
    if (!store_->env()->Exists(path) || !store_->CheckUnindexedLoose(path, d).ok()) {
      KI_RETURN_IF_ERROR(store_->env()->CreateDirs(dir));
      KI_RETURN_IF_ERROR(store_->env()->WriteFileAtomic(path, frame, Durability::kSync));
      new_loose_files_.push_back(path);
    }
    // Also when a good file is there already: the index does not hold the
    // object, so the file is a killed writer's, renamed into place but
    // perhaps before its directory was synced. The index must not name a
    // file whose name a crash could still take away.
    dirs_to_sync_.insert(dir);
    // Its meta entry waits with the others', in digest order (PutBlobStream).
    pending_.insert_or_assign(d, PendingObject{info, std::string()});
  } else {
    // Held back, and written in digest order with the batch's others.
    info.location = Location::kIndex;
    pending_bytes_ += frame.size();
    pending_.insert_or_assign(d, PendingObject{info, std::string(frame)});
  }
  pending_numbers_[info.number] = d;
  arrived_.push_back(info);
  if (pending_bytes_ > kPendingLimit) KI_RETURN_IF_ERROR(FlushPending());
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
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (!info) return Status::InvalidInput("internal: references of " + d.str() + ", which is not stored");
    const std::string referrer = store_->RefReferrerPart(*info);
    for (const Reference& ref : *refs)
      KI_RETURN_IF_ERROR(PutKV(refs_table, RefKey(ref.target, referrer, ref.field), ""));
  }
  if (document) {
    KI_ASSIGN_OR_RETURN(MDB_dbi docs, Table(kDocs));
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (!info) return Status::InvalidInput("internal: a document link for " + d.str() + ", which is not stored");
    KI_RETURN_IF_ERROR(PutKV(docs, DocsKey(*info), document->raw()));
  }
  if (!name.empty()) KI_RETURN_IF_ERROR(SetName(kind, name, d));
  return Status::OK();
}

Result<PutResult> LmdbBatch::PutManifest(const Manifest& m, std::optional<std::string_view> document,
                                         std::string_view document_media_type) {
  // Encoded as a bulk import encodes (the document perhaps based on the
  // manifest); a name is recorded only with the document that carries it
  // (the documents are what audit checks the name tables against).
  return PutEncodedManifest(store_->EncodeManifest(m, document, document_media_type));
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
  if (m.parsed && m.parsed->digest == m.digest) parsed_.emplace(m.digest, m.parsed);
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
    if (m.parsed && m.parsed->digest == m.digest) parsed_.emplace(m.digest, m.parsed);
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
  // are keyed by digest alike. Documents that may be based on their
  // manifests last: a manifest is numbered when it is written.
  std::sort(objects.begin(), objects.end(), [](auto* a, auto* b) {
    return std::make_pair(!a->based_frame.empty(), a->digest) < std::make_pair(!b->based_frame.empty(), b->digest);
  });
  for (const EncodedObject* o : objects) KI_RETURN_IF_ERROR(WriteObject(*o));
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
  for (size_t i : new_manifests) {
    KI_ASSIGN_OR_RETURN(auto info, Stat(ms[i].digest));
    if (!info) return Status::InvalidInput("internal: references of " + ms[i].digest.str() + ", which is not stored");
    const std::string referrer = store_->RefReferrerPart(*info);
    for (const Reference& ref : ms[i].references)
      rows.emplace_back(RefKey(ref.target, referrer, ref.field), std::string_view());
  }
  KI_RETURN_IF_ERROR(put_sorted(kRefs));
  for (const EncodedManifest& m : ms) {
    if (!m.document) continue;
    KI_ASSIGN_OR_RETURN(auto info, Stat(m.digest));
    if (!info) return Status::InvalidInput("internal: a document link for " + m.digest.str() + ", which is not stored");
    rows.emplace_back(DocsKey(*info), m.document->digest.raw());
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
  const std::string skey = NameSetKey(kind, name, target);
  // A holder recorded already keeps its value: it may be the latest.
  KI_ASSIGN_OR_RETURN(auto held, GetKV(nameset, skey));
  if (!held) KI_RETURN_IF_ERROR(PutKV(nameset, skey, ""));
  // namesof is keyed by the holder's number: a name of an object the store
  // does not hold (which no caller records: names come from the documents
  // of held manifests) has no entry there.
  KI_ASSIGN_OR_RETURN(auto info, Stat(target));
  if (!info) return Status::OK();
  const std::string nkey = NamesOfKey(*info, kind, name);
  KI_ASSIGN_OR_RETURN(auto had, GetKV(namesof, nkey));
  KI_RETURN_IF_ERROR(PutKV(namesof, nkey, ""));
  // A manifest the store already held that gains a name is handed to the
  // derived indexes too: what they show of it (a run's implementation
  // name) may change with its names.
  if (!had && !named_.count(target)) {
    named_.insert(target);
    renamed_.push_back(*info);
  }
  return Status::OK();
}

Status LmdbBatch::DropRecordedName(std::string_view table, std::string_view key, const Digest& holder) {
  KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
  KI_RETURN_IF_ERROR(DelKV(dbi, key));
  if (!named_.count(holder)) {
    KI_ASSIGN_OR_RETURN(auto info, Stat(holder));
    if (info) {
      named_.insert(holder);
      renamed_.push_back(*info);
    }
  }
  return Status::OK();
}

Status LmdbBatch::PointName(Kind kind, std::string_view name, const Digest& target) {
  // Format 11: the latest holder's nameset entry is marked, and only it.
  KI_ASSIGN_OR_RETURN(MDB_dbi nameset, Table(kNameSet));
  const std::string key = NameKey(kind, name);
  const std::string mine = NameSetKey(kind, name, target);
  bool marked = false;
  std::vector<std::string> unmark;
  KI_RETURN_IF_ERROR(ForEachHeld(nameset, key, [&](std::string_view k, std::string_view v) {
    if (k.size() != mine.size() || v != kNameLatest) return;  // a longer name, or not the latest
    if (k == mine) {
      marked = true;
    } else {
      unmark.emplace_back(k);
    }
  }));
  for (const std::string& k : unmark) KI_RETURN_IF_ERROR(PutKV(nameset, k, ""));
  return marked ? Status::OK() : PutKV(nameset, mine, kNameLatest);
}

Status LmdbBatch::ForEachHeld(MDB_dbi dbi, std::string_view prefix,
                              const std::function<void(std::string_view, std::string_view)>& fn) {
  // What LMDB holds, overlaid with what the batch has staged (not flushed:
  // the bulk paths stage names in key order, to be appended).
  std::map<std::string, std::string, std::less<>> rows;
  KI_RETURN_IF_ERROR(ScanTable(txn_, dbi, prefix, [&](std::string_view k, std::string_view v) {
    rows.emplace(std::string(k), std::string(v));
    return true;
  }));
  if (auto t = staged_.find(dbi); t != staged_.end()) {
    for (auto it = t->second.lower_bound(prefix); it != t->second.end() && it->first.starts_with(prefix); ++it) {
      if (it->second) {
        rows.insert_or_assign(it->first, *it->second);
      } else {
        rows.erase(it->first);
      }
    }
  }
  for (const auto& [k, v] : rows) fn(k, v);
  return Status::OK();
}

Status LmdbBatch::RecordAbsent(const AbsentInfo& info) {
  KI_ASSIGN_OR_RETURN(MDB_dbi absent, Table(kAbsent));
  return PutKV(absent, info.digest.raw(), AbsentValue(info));
}

int64_t LmdbBatch::Now() {
  if (!now_) {
    now_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
               .count();
  }
  return now_;
}

// When the store first indexed each object: ki gc's age (docs/format.md,
// "ki gc"), kept in its meta entry. An entry already there keeps its time:
// the object came then, not now.
Result<int64_t> LmdbBatch::AddedFor(MDB_dbi meta, const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto old, txn_.Get(meta, d.raw()));
  ObjectInfo was;
  std::optional<int64_t> added;
  if (old && UnpackMeta(d.raw(), *old, &was, &added) && added) return *added;
  return Now();
}

Result<std::unordered_map<Digest, int64_t>> LmdbBatch::AddedTimes() {
  std::unordered_map<Digest, int64_t> times;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_RETURN_IF_ERROR(ScanTable(txn_, meta, "", [&](std::string_view k, std::string_view v) {
    ObjectInfo info;
    std::optional<int64_t> added;
    if (UnpackMeta(k, v, &info, &added) && added) times.emplace(info.digest, *added);
    return true;
  }));
  KI_ASSIGN_OR_RETURN(bool legacy, store_->lmdb().HasTable(txn_, kAdded));
  if (legacy) {
    KI_ASSIGN_OR_RETURN(MDB_dbi added, Table(kAdded));
    KI_RETURN_IF_ERROR(FlushStaged(added));
    KI_RETURN_IF_ERROR(ScanTable(txn_, added, "", [&](std::string_view k, std::string_view v) {
      auto t = ParseAddedV5(v);
      if (k.size() == 32 && t && *t > 0) times.emplace(Digest::FromRaw(k), *t);  // meta's own time first
      return true;
    }));
  }
  return times;
}

// An object keeps the number it was first given: a damaged copy written
// again, an object a batch already put. Only an object the store has no
// number for takes the next one.
Result<uint32_t> LmdbBatch::NumberFor(const Digest& d) {
  if (auto it = pending_.find(d); it != pending_.end() && it->second.info.number) return it->second.info.number;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_ASSIGN_OR_RETURN(auto old, txn_.Get(meta, d.raw()));
  ObjectInfo was;
  if (old && UnpackMeta(d.raw(), *old, &was) && was.number) return was.number;
  // A rebuild of meta (reindex) stores objects again (a built-in
  // dictionary) after it dropped their entries: they keep their numbers.
  if (auto it = carried_.find(d); it != carried_.end()) return it->second;
  KI_ASSIGN_OR_RETURN(uint32_t orphan, OrphanRowNumber(d));
  if (orphan) return orphan;
  return NewNumber();
}

Result<uint32_t> LmdbBatch::OrphanRowNumber(const Digest& d) {
  if (!store_->objects_numbered()) return uint32_t(0);
  if (!orphans_) {
    // Every meta entry has its objects row (format 12), so a store with
    // more rows than entries holds rows no entry names: frames reindex
    // left out because they were damaged. Read once a batch, and only
    // then: the good bytes written again take the damaged row's number,
    // and so replace it.
    orphans_.emplace();
    KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
    KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
    KI_ASSIGN_OR_RETURN(uint64_t rows, txn_.Entries(objects));
    KI_ASSIGN_OR_RETURN(uint64_t entries, txn_.Entries(meta));
    if (rows > entries) {
      std::vector<std::pair<Digest, uint32_t>> found;
      KI_RETURN_IF_ERROR(ScanTable(txn_, objects, "", [&](std::string_view k, std::string_view v) {
        if (auto row = SplitObjectsRow(k, v)) found.emplace_back(row->digest, row->number);
        return true;
      }));
      for (const auto& [digest, n] : found) {
        KI_ASSIGN_OR_RETURN(auto held, txn_.Get(meta, digest.raw()));
        if (!held) orphans_->emplace(digest, n);
      }
    }
  }
  auto it = orphans_->find(d);
  if (it == orphans_->end()) return uint32_t(0);
  const uint32_t n = it->second;
  orphans_->erase(it);
  return n;
}

Result<uint32_t> LmdbBatch::NewNumber() {
  // Through 0: only reads the next number from seq, the first time.
  KI_RETURN_IF_ERROR(ReserveNumbersThrough(0));
  KI_ASSIGN_OR_RETURN(MDB_dbi seq, Table(kSeq));
  if (next_number_ == std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidInput("the store has given out every object number (4,294,967,294): no object can be added");
  }
  const uint32_t n = next_number_++;
  KI_RETURN_IF_ERROR(PutKV(seq, kSeqObjects, NumberKey(next_number_)));
  return n;
}

Status LmdbBatch::ReserveNumbersThrough(uint32_t largest) {
  KI_ASSIGN_OR_RETURN(MDB_dbi seq, Table(kSeq));
  if (!next_number_) {
    KI_ASSIGN_OR_RETURN(auto v, GetKV(seq, kSeqObjects));
    next_number_ = std::max<uint32_t>(1, v ? KeyNumber(*v).value_or(1) : 1);
  }
  if (largest < next_number_) return Status::OK();
  if (largest == std::numeric_limits<uint32_t>::max()) return Status::Corruption("an object number is 4,294,967,295");
  next_number_ = largest + 1;
  return PutKV(seq, kSeqObjects, NumberKey(next_number_));
}

Result<std::unordered_map<Digest, uint32_t>> LmdbBatch::CarriedNumbers() {
  std::unordered_map<Digest, uint32_t> numbers;
  std::unordered_set<uint32_t> taken;
  uint32_t largest = 0;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  // In digest order: of two entries that claim one number (damage), the
  // first keeps it and the other is numbered anew.
  KI_RETURN_IF_ERROR(ScanTable(txn_, meta, "", [&](std::string_view k, std::string_view v) {
    ObjectInfo info;
    if (UnpackMeta(k, v, &info) && info.number && taken.insert(info.number).second) {
      numbers.emplace(info.digest, info.number);
      largest = std::max(largest, info.number);
    }
    return true;
  }));
  KI_RETURN_IF_ERROR(ReserveNumbersThrough(largest));
  carried_ = numbers;
  return numbers;
}

Status LmdbBatch::IndexFrame(const Digest& d, const odb::FrameHeader& h, Location loc, uint64_t stored_size,
                             std::string_view raw, std::optional<int64_t> added, uint32_t number) {
  ObjectInfo info;
  info.digest = d;
  if (number) {
    info.number = number;
  } else {
    KI_ASSIGN_OR_RETURN(info.number, NewNumber());
  }
  info.type = h.type;
  if (h.type == ObjectType::kManifest) info.kind = Kind(h.kind);
  info.size = h.raw_size;
  info.stored_size = stored_size;
  info.media_type = h.media_type;
  info.location = loc;
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_RETURN_IF_ERROR(PutKV(meta, d.raw(), odb::PackMeta(info, added ? *added : Now())));
  if (loc == Location::kLoose && store_->objects_numbered()) {
    // Its number's row (format 12), which a lost meta entry may have
    // taken with it; an object kept in LMDB was read from its row.
    KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
    KI_RETURN_IF_ERROR(WriteKV(objects, NumberKey(info.number), d.raw()));
  }
  arrived_.push_back(info);
  if (IsDictionary(info)) return IndexDictionary(d, raw);
  if (h.type != ObjectType::kManifest) return Status::OK();
  auto m = ManifestFromCanonical(raw, d.str());
  if (!m.ok()) return Status::Corruption(m.status().message());
  KI_ASSIGN_OR_RETURN(MDB_dbi refs, Table(kRefs));
  const std::string referrer = store_->RefReferrerPart(info);
  for (const Reference& ref : ExtractReferences(*m))
    KI_RETURN_IF_ERROR(PutKV(refs, RefKey(ref.target, referrer, ref.field), ""));
  return Status::OK();
}

Status LmdbBatch::Commit() {
  // The derived indexes see everything this batch stored, in its own
  // transaction: they commit with the objects or not at all.
  KI_RETURN_IF_ERROR(FlushPending());
  // A dictionary object that arrived by any path (a pull, a put) is filed
  // under its ID, as reindex files it.
  for (const ObjectInfo& info : arrived_) {
    if (!IsDictionary(info)) continue;
    KI_ASSIGN_OR_RETURN(std::string raw, Read(info.digest));
    KI_RETURN_IF_ERROR(IndexDictionary(info.digest, raw));
  }
  arrived_.insert(arrived_.end(), renamed_.begin(), renamed_.end());
  if (!arrived_.empty()) {
    std::vector<ObjectInfo> arrived;
    arrived.swap(arrived_);
    for (DerivedIndex* index : DerivedIndexes()) KI_RETURN_IF_ERROR(index->Update(*this, arrived));
  }
  std::unordered_map<Digest, std::shared_ptr<const Manifest>>().swap(parsed_);  // read by the indexes only
  // Order matters for crash safety: loose files are already fsynced and
  // renamed; sync their directories so the names are durable, then commit
  // the index (LMDB fsyncs on commit). A crash before the commit leaves
  // only unreferenced loose files, which audit notes and reindex adopts.
  KI_RETURN_IF_ERROR(FlushAllStaged());
  for (const auto& dir : dirs_to_sync_) KI_RETURN_IF_ERROR(store_->env()->SyncDir(dir));
  if (!dirs_to_sync_.empty()) KI_RETURN_IF_ERROR(store_->env()->SyncDir(ObjectsDir(store_->path())));
  KI_RETURN_IF_ERROR(txn_.Commit());
  committed_ = true;
  for (const auto& [name, dbi] : opened_) store_->lmdb().Remember(name, dbi);
  return Status::OK();
}

}  // namespace ki::odb
