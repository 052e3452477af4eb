// ki gc (ki/gc.h): mark from the roots through Walk (the walk Verify makes),
// delete what is unreachable and past the grace period in one batch,
// rebuild the derived indexes in that batch, remove loose files after the
// commit, then compact data.mdb by copy and rename.
#include "ki/gc.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "ki/json.h"
#include "odb/store_impl.h"

namespace ki {

namespace {

std::vector<GcReferences*>& Registry() {
  static std::vector<GcReferences*> all;
  return all;
}

}  // namespace

void RegisterGcReferences(GcReferences* refs) {
  auto& all = Registry();
  if (std::find(all.begin(), all.end(), refs) == all.end()) all.push_back(refs);
}

namespace {

void DigestsInJson(const Json& j, const std::function<void(const Digest&)>& add) {
  if (j.is_string()) {
    const std::string& t = j.get_ref<const std::string&>();
    if (t.size() == 71 && Digest::IsValid(t)) {
      if (auto d = Digest::Parse(t); d.ok()) add(*d);
    }
  } else if (j.is_array() || j.is_object()) {
    for (const Json& v : j) DigestsInJson(v, add);
  }
}

}  // namespace

std::vector<std::string_view> GcTableReferences::Tables() const {
  std::vector<std::string_view> out;
  for (const auto& t : tables_) out.push_back(t.name);
  return out;
}

bool GcTableReferences::IsRoot(const ObjectInfo& info) const {
  return info.type == ObjectType::kBlob &&
         std::find(media_types_.begin(), media_types_.end(), info.media_type) != media_types_.end();
}

Status GcTableReferences::Roots(Store& store, const std::function<void(const Digest&)>& add) {
  for (const GcTable& t : tables_) {
    if (t.key_digests == 0 && !t.value_digests) continue;
    KI_RETURN_IF_ERROR(store.Scan(t.name, "", [&](std::string_view k, std::string_view v) {
      for (int i = 0; i < t.key_digests && k.size() >= size_t(32 * (i + 1)); ++i) add(Digest::FromRaw(k.substr(32 * i, 32)));
      if (!t.value_digests) return true;
      if (v.size() == 32) {
        add(Digest::FromRaw(v));
      } else if (v.size() == 71 && Digest::IsValid(v)) {
        if (auto d = Digest::Parse(v); d.ok()) add(*d);
      } else if (!v.empty() && (v.front() == '{' || v.front() == '[')) {
        ParseLimits limits;
        limits.max_bytes = 64 << 20;
        if (auto j = ParseDocument(v, DocFormat::kJson, t.name, limits); j.ok()) DigestsInJson(*j, add);
      }
      return true;
    }));
  }
  return Status::OK();
}

Result<int64_t> ParseGcDuration(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidInput("'" + std::string(text) +
                                "' is not a duration: a whole number and one of s, m, h, d, w (2w, 36h, 0)");
  };
  if (text.empty()) return bad();
  int64_t unit = 1;
  std::string_view digits = text;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 7 * 86400; break;
    default:
      if (text.back() < '0' || text.back() > '9') return bad();
      unit = 0;
  }
  if (unit) digits = text.substr(0, text.size() - 1);
  else unit = 1;
  if (digits.empty() || digits.size() > 12) return bad();
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return bad();
    n = n * 10 + (c - '0');
  }
  return n * unit;
}

namespace odb {
namespace {

constexpr std::string_view kCompactPrefix = "gc-compact-";

// Tables the store itself keeps (tables.h).
const std::vector<std::string_view>& StoreTables() {
  // barenames: a store of format 3 or before kept it (emptied since);
  // added: format 5 or before; kinds: format 7 or before; names: format 10
  // or before (emptied since: a name's holders, the latest marked, are in
  // nameset, whose every holder is a root).
  static const std::vector<std::string_view> t = {kObjects,   kMeta,    kKinds,   kRefs, kDicts, kAbsent, kNames,
                                                  kBareNames, kNamesOf, kNameSet, kDocs, kTags,  kAdded, kSeq};
  return t;
}

int64_t ClockNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<GcSizes> MeasureStore(Env* env, const std::string& dir) {
  GcSizes s;
  const std::string data = IndexDir(dir) + "/data.mdb";
  if (env->Exists(data)) {
    KI_ASSIGN_OR_RETURN(s.index_bytes, env->FileSize(data));
  }
  KI_ASSIGN_OR_RETURN(auto fanout, env->ListDir(ObjectsDir(dir)));
  for (const auto& sub : fanout) {
    const std::string sub_dir = ObjectsDir(dir) + "/" + sub;
    if (!env->IsDirectory(sub_dir)) continue;
    KI_ASSIGN_OR_RETURN(auto files, env->ListDir(sub_dir));
    for (const auto& f : files) {
      auto size = env->FileSize(sub_dir + "/" + f);
      if (!size.ok()) continue;  // removed meanwhile (a scratch file)
      s.loose_files++;
      s.loose_bytes += *size;
    }
  }
  return s;
}

// One gc, phase by phase (ki/gc.h).
class Collector {
 public:
  Collector(LmdbStore* store, const GcOptions& opts, GcReport* report)
      : store_(store), opts_(opts), report_(report), now_(opts.now ? *opts.now : ClockNow()) {}

  // Every table the store holds is one whose references gc knows.
  Status CheckTables() {
    std::set<std::string, std::less<>> known;
    for (auto t : StoreTables()) known.emplace(t);
    for (DerivedIndex* index : DerivedIndexes())
      for (auto t : index->Tables()) known.emplace(t);
    for (GcReferences* refs : Registry())
      for (auto t : refs->Tables()) known.emplace(t);
    KI_ASSIGN_OR_RETURN(std::vector<std::string> names, store_->lmdb().TableNames());
    for (const auto& name : names) {
      if (known.count(name)) continue;
      bool empty = true;
      KI_RETURN_IF_ERROR(store_->Scan(name, "", [&](std::string_view, std::string_view) {
        empty = false;
        return false;
      }));
      if (!empty) {
        return Status::InvalidInput("the store has a table '" + name +
                                    "' that this ki's gc does not know (written by another version of ki?): it "
                                    "could hold the only reference to an object, so nothing is collected");
      }
    }
    return Status::OK();
  }

  // Marks everything the roots reach.
  Status Mark() {
    std::vector<std::pair<Digest, std::string>> roots;
    auto root = [&](const Digest& d, std::string why) { roots.emplace_back(d, std::move(why)); };
    KI_RETURN_IF_ERROR(store_->ForEachObject([&](const ObjectInfo& info) {
      infos_.push_back(info);
      // Frames name their zstd dictionary by ID, not by a reference the
      // walk follows: every dictionary is kept (ki/dictionary.h).
      if (IsDictionary(info)) root(info.digest, "zstd dictionary");
      for (GcReferences* refs : Registry())
        if (refs->IsRoot(info)) root(info.digest, "root (" + Describe(info) + ")");
      return true;
    }));
    report_->objects = infos_.size();
    KI_RETURN_IF_ERROR(store_->Scan(kNameSet, "", [&](std::string_view k, std::string_view) {
      if (k.size() > 32) root(Digest::FromRaw(k.substr(k.size() - 32)), "name " + std::string(k.substr(0, k.size() - 32)));
      return true;
    }));
    KI_RETURN_IF_ERROR(store_->Scan(kTags, "", [&](std::string_view k, std::string_view v) {
      if (v.size() == 32) root(Digest::FromRaw(v), "tag " + std::string(k));
      return true;
    }));
    for (GcReferences* refs : Registry()) {
      KI_RETURN_IF_ERROR(refs->Roots(*store_, [&](const Digest& d) { root(d, "root"); }));
    }
    LmdbStore::WalkEdges more = [&](const ObjectInfo& info,
                                    std::vector<std::pair<Digest, std::string>>* out) -> Status {
      for (GcReferences* refs : Registry()) {
        KI_RETURN_IF_ERROR(refs->Edges(*store_, info, [&](const Digest& d, std::string_view field) {
          out->emplace_back(d, std::string(field));
        }));
      }
      return Status::OK();
    };
    return store_->Walk(roots, LmdbStore::WalkRead::kManifests, more, [&](const CheckEntry& e) -> Status {
      if (e.state == CheckState::kCorrupt) {
        // Its references are unknown: what it reaches cannot be told apart
        // from garbage.
        return Status::Corruption(e.digest.str() + " (" + e.via + ") is reachable but corrupt: " + e.detail +
                                  "; what it references is unknown, so nothing is collected (ki audit says more)");
      }
      if (e.state == CheckState::kOk) live_.insert(e.digest);
      return Status::OK();
    });
  }

  // Sorts the unreachable objects into removed, young and undated.
  Status Sweep() {
    for (const ObjectInfo& info : infos_) {
      if (live_.count(info.digest)) {
        report_->reachable++;
        continue;
      }
      KI_ASSIGN_OR_RETURN(auto v, store_->Get(kMeta, info.digest.raw()));
      ObjectInfo again;
      std::optional<int64_t> added;
      if (v) (void)UnpackMeta(info.digest.raw(), *v, &again, &added);
      if (!added) {
        // A format-5 store read as it is (a dry run opens it read-only)
        // still has its times in `added`.
        KI_ASSIGN_OR_RETURN(auto legacy, store_->Get(kAdded, info.digest.raw()));
        if (legacy) added = ParseAddedV5(*legacy);
      }
      if (!added && opts_.grace_seconds > 0) {
        report_->undated++;
        undated_.push_back(info);
        continue;
      }
      if (added && now_ - *added < opts_.grace_seconds) {
        report_->young++;
        continue;
      }
      GcRemoved r;
      r.digest = info.digest;
      r.what = Describe(info);
      r.size = info.size;
      r.stored_size = info.stored_size;
      r.added = added;
      report_->removed_bytes += info.size;
      report_->removed_stored_bytes += info.stored_size;
      report_->removed.push_back(std::move(r));
      doomed_.emplace(info.digest, info);
    }
    return KeepBases();
  }

  // A based frame (frame.h, FrameBase) reads its base's bytes: a manifest
  // that is the base of a frame that stays, stays too, whatever reaches
  // it (it is counted as reachable).
  Status KeepBases() {
    std::unordered_map<uint32_t, Digest> doomed_manifests;
    for (const auto& [d, info] : doomed_)
      if (info.type == ObjectType::kManifest && info.location == Location::kIndex && info.number)
        doomed_manifests.emplace(info.number, d);
    if (doomed_manifests.empty() || !store_->objects_numbered()) return Status::OK();
    std::unordered_set<Digest> bases;
    KI_RETURN_IF_ERROR(store_->Scan(kObjects, "", [&](std::string_view k, std::string_view v) {
      auto row = SplitObjectsRow(k, v);
      if (!row || !FrameIsBased(row->frame) || doomed_.count(row->digest)) return true;
      auto h = ParseFrameHeader(row->frame, row->digest.str());
      if (!h.ok() || !h->base) return true;  // damage is audit's to report
      if (auto it = doomed_manifests.find(h->base->number); it != doomed_manifests.end()) bases.insert(it->second);
      return true;
    }));
    if (bases.empty()) return Status::OK();
    std::vector<GcRemoved> removed;
    for (GcRemoved& r : report_->removed) {
      if (!bases.count(r.digest)) {
        removed.push_back(std::move(r));
        continue;
      }
      report_->removed_bytes -= r.size;
      report_->removed_stored_bytes -= r.stored_size;
      report_->reachable++;
      doomed_.erase(r.digest);
    }
    report_->removed = std::move(removed);
    return Status::OK();
  }

  // One batch: the removed objects and every index entry about them, the
  // derived indexes rebuilt from what stays, the undated dated.
  Status Delete() {
    KI_ASSIGN_OR_RETURN(auto base, store_->NewBatch());
    Batch& batch = *base;
    for (GcReferences* refs : Registry()) KI_RETURN_IF_ERROR(refs->BeforeCompaction(batch));
    for (const ObjectInfo& info : undated_)
      KI_RETURN_IF_ERROR(batch.Put(kMeta, info.digest.raw(), PackMeta(info, now_)));
    if (!doomed_.empty()) {
      // gc writes only to a store of this format (format 12: objects rows
      // and refs' referrers by number), which the open upgraded.
      for (const auto& [d, info] : doomed_) {
        KI_RETURN_IF_ERROR(batch.Delete(kObjects, store_->ObjectsKey(info)));  // a loose object's row too
        KI_RETURN_IF_ERROR(batch.Delete(kMeta, d.raw()));
        if (info.type == ObjectType::kManifest && info.kind) {
          KI_RETURN_IF_ERROR(batch.Delete(kDocs, DocsKey(info)));
        }
      }
      // Entries that name a removed object as the referrer, the manifest or
      // the holder (nameset's holders are roots, so only stale mirrors):
      // refs and namesof keys hold the object's number.
      std::unordered_set<std::string> doomed_parts;
      for (const auto& [d, info] : doomed_) doomed_parts.insert(ObjectKeyPart(info));
      const size_t referrer = RefReferrerPartSize(store_->objects_numbered());
      KI_RETURN_IF_ERROR(DeleteWhere(batch, kRefs, [&](std::string_view k) {
        return k.size() > 32 + referrer && doomed_parts.count(std::string(k.substr(32, referrer)));
      }));
      const size_t part = ObjectKeyPartSize(store_->numbered());
      KI_RETURN_IF_ERROR(DeleteWhere(batch, kNamesOf, [&](std::string_view k) {
        return k.size() > part && doomed_parts.count(std::string(k.substr(0, part)));
      }));
      // The derived indexes, rebuilt from the objects that stay, as reindex
      // rebuilds them: what a removed object gave is gone with it.
      std::vector<ObjectInfo> kept;
      kept.reserve(infos_.size() - doomed_.size());
      for (const ObjectInfo& info : infos_)
        if (!doomed_.count(info.digest)) kept.push_back(info);
      KI_RETURN_IF_ERROR(RefillDerivedIndexes(batch, kept));
    }
    KI_RETURN_IF_ERROR(batch.Commit());
    // Only now: a loose file whose index entry is gone is harmless (audit
    // notes it), an index entry whose file is gone is a fault.
    std::set<std::string> dirs;
    for (const auto& [d, info] : doomed_) {
      if (info.location != Location::kLoose) continue;
      const std::string path = LoosePath(store_->path(), d);
      Status s = store_->env()->RemoveFile(path);
      if (!s.ok() && !s.IsNotFound()) report_->notes.push_back("could not remove " + path + ": " + s.message());
      dirs.insert(path.substr(0, path.rfind('/')));
    }
    for (const auto& dir : dirs) (void)store_->env()->SyncDir(dir);  // removal durable or not: harmless either way
    return Status::OK();
  }

  // Files under objects/ that no index entry names: loose files and
  // temporary files of writes killed before their commit (and of a gc
  // killed before it removed its files), and scratch files under
  // objects/incoming. No writer is in flight (the lock), so nothing will
  // index them; those older than the grace period go (by mtime: such a
  // file has no `added` entry), as garbage of unknown age would.
  Status RemoveUnindexedFiles() {
    Env* env = store_->env();
    const std::string objects = ObjectsDir(store_->path());
    KI_ASSIGN_OR_RETURN(auto fanout, env->ListDir(objects));
    uint64_t removed = 0;
    for (const auto& sub : fanout) {
      const std::string sub_dir = objects + "/" + sub;
      if (!env->IsDirectory(sub_dir)) continue;
      KI_ASSIGN_OR_RETURN(auto files, env->ListDir(sub_dir));
      for (const auto& f : files) {
        const std::string path = sub_dir + "/" + f;
        if (sub != kIncomingDir) {
          auto d = Digest::Parse("sha256:" + sub + f);
          if (d.ok()) {
            KI_ASSIGN_OR_RETURN(auto info, store_->Stat(*d));
            if (info) continue;
          }
        }
        auto file = env->NewSequentialFile(path);
        if (!file.ok()) continue;
        auto st = (*file)->Stat();
        file->reset();
        if (!st.ok() || !st->regular) continue;
        if (opts_.grace_seconds > 0 && now_ - st->mtime_ns / 1000000000 < opts_.grace_seconds) continue;
        if (env->RemoveFile(path).ok()) removed++;
      }
    }
    if (removed) {
      report_->notes.push_back("removed " + std::to_string(removed) +
                               " files under objects/ that nothing indexes (left by interrupted writes)");
    }
    return Status::OK();
  }

  // A compacted copy of the environment in a scratch directory under
  // index/ (LMDB writes data.mdb there), synced; RenameCompacted puts it in
  // place once the store is closed.
  Result<std::string> CopyCompacted() {
    Env* env = store_->env();
    const std::string scratch = IndexDir(store_->path()) + "/" + std::string(kCompactPrefix) + std::to_string(::getpid());
    if (env->Exists(scratch)) KI_RETURN_IF_ERROR(env->RemoveTree(scratch));
    KI_RETURN_IF_ERROR(env->CreateDirs(scratch));
    if (Status s = store_->lmdb().CopyCompacted(scratch); !s.ok()) {
      (void)env->RemoveTree(scratch);
      return s;
    }
    // mdb_env_copy2 does not fsync what it wrote.
    KI_RETURN_IF_ERROR(env->SyncFile(scratch + "/data.mdb"));
    return scratch;
  }

 private:
  Status DeleteWhere(Batch& batch, std::string_view table, const std::function<bool(std::string_view)>& doomed) {
    std::vector<std::string> keys;
    KI_RETURN_IF_ERROR(batch.Scan(table, "", [&](std::string_view k, std::string_view) {
      if (doomed(k)) keys.emplace_back(k);
      return true;
    }));
    for (const auto& k : keys) KI_RETURN_IF_ERROR(batch.Delete(table, k));
    return Status::OK();
  }

  LmdbStore* store_;
  const GcOptions& opts_;
  GcReport* report_;
  const int64_t now_;
  std::vector<ObjectInfo> infos_;
  std::unordered_set<Digest> live_;
  std::unordered_map<Digest, ObjectInfo> doomed_;
  std::vector<ObjectInfo> undated_;
};

// Scratch directories of a gc killed while compacting.
Status RemoveCompactLeftovers(Env* env, const std::string& dir) {
  KI_ASSIGN_OR_RETURN(auto names, env->ListDir(IndexDir(dir)));
  for (const auto& n : names)
    if (n.rfind(kCompactPrefix, 0) == 0) KI_RETURN_IF_ERROR(env->RemoveTree(IndexDir(dir) + "/" + n));
  return Status::OK();
}

}  // namespace
}  // namespace odb

Result<GcReport> CollectGarbage(std::unique_ptr<Store> store, const GcOptions& opts) {
  auto* lmdb_store = dynamic_cast<odb::LmdbStore*>(store.get());
  if (!lmdb_store) return Status::InvalidInput("internal: ki gc needs a local store");
  if (opts.grace_seconds < 0) return Status::InvalidInput("a negative grace period");
  const std::string dir = lmdb_store->path();
  const StoreOptions sopts = lmdb_store->options();
  Env* env = sopts.env;
  GcReport report;
  KI_ASSIGN_OR_RETURN(report.before, odb::MeasureStore(env, dir));
  if (opts.dry_run) {
    // Under the caller's shared lock: nothing is written.
    odb::Collector c(lmdb_store, opts, &report);
    KI_RETURN_IF_ERROR(c.CheckTables());
    KI_RETURN_IF_ERROR(c.Mark());
    KI_RETURN_IF_ERROR(c.Sweep());
    report.after = report.before;
    return report;
  }
  store.reset();  // its shared lock would block ours
  KI_ASSIGN_OR_RETURN(odb::StoreLock lock, odb::StoreLock::Exclusive(dir, opts.waiting));
  KI_RETURN_IF_ERROR(odb::RemoveCompactLeftovers(env, dir));
  std::string compacted;
  {
    auto own = std::make_unique<odb::LmdbStore>(dir, sopts);
    own->UseCallersLock();
    KI_RETURN_IF_ERROR(own->Open(OpenMode::kReadWrite));
    if (own->format_version() != odb::kFormatVersion) return Status::InvalidInput(dir + ": upgrade the store first (open it with ki)");
    odb::Collector c(own.get(), opts, &report);
    KI_RETURN_IF_ERROR(c.CheckTables());
    KI_RETURN_IF_ERROR(c.Mark());
    KI_RETURN_IF_ERROR(c.Sweep());
    KI_RETURN_IF_ERROR(c.Delete());
    KI_RETURN_IF_ERROR(c.RemoveUnindexedFiles());
    KI_ASSIGN_OR_RETURN(compacted, c.CopyCompacted());
  }  // the environment is closed: no process has it open (the lock)
  // The compacted copy replaces data.mdb in one rename: killed before it,
  // the old file is whole (the scratch directory goes at the next gc);
  // after it, the new one is, synced before the rename. lock.mdb is left:
  // the next process to open the store is the only one, and LMDB then
  // resets it from data.mdb's meta pages.
  const std::string data = odb::IndexDir(dir) + "/data.mdb";
  KI_RETURN_IF_ERROR(env->Rename(compacted + "/data.mdb", data));
  KI_RETURN_IF_ERROR(env->SyncDir(odb::IndexDir(dir)));
  (void)env->RemoveTree(compacted);
  report.compacted = true;
  KI_ASSIGN_OR_RETURN(report.after, odb::MeasureStore(env, dir));
  return report;
}

}  // namespace ki
