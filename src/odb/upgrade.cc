// Format upgrades of a store's own tables: each step rewrites, inside the
// batch LmdbStore::Open runs for a store of an older format, what that
// format kept otherwise (docs/format.md, "Upgrading a format-N store").
// Every step is idempotent: killed before FORMAT is rewritten, the next
// open runs them again. (The derived indexes upgrade their own tables:
// DerivedIndex::Upgrade.)
#include <algorithm>
#include <map>
#include <unordered_map>

#include "odb/store_impl.h"

namespace ki::odb {

Status LmdbBatch::FoldNamesIntoNameSet() {
  KI_ASSIGN_OR_RETURN(bool present, store_->lmdb().HasTable(txn_, kNames));
  if (!present) return Status::OK();
  KI_ASSIGN_OR_RETURN(MDB_dbi names, Table(kNames));
  KI_ASSIGN_OR_RETURN(MDB_dbi nameset, Table(kNameSet));
  KI_RETURN_IF_ERROR(FlushStaged(names));
  std::vector<std::string> latest;  // the latest holders' nameset keys
  KI_RETURN_IF_ERROR(ScanTable(txn_, names, "", [&](std::string_view k, std::string_view v) {
    // A damaged value (not a digest) names no holder: left out, as reindex
    // would remove it; the name is pointed again by reindex.
    if (v.size() == 32) latest.push_back(std::string(k) + std::string(v));
    return true;
  }));
  // Staged, so written in nameset's key order.
  for (const std::string& k : latest) KI_RETURN_IF_ERROR(PutKV(nameset, k, kNameLatest));
  return DropTable(kNames);
}

Status LmdbBatch::RecodeRefFields() {
  KI_ASSIGN_OR_RETURN(MDB_dbi refs, Table(kRefs));
  KI_RETURN_IF_ERROR(FlushStaged(refs));
  std::vector<std::pair<std::string, std::string>> entries;
  bool recoded = false;
  KI_RETURN_IF_ERROR(ScanTable(txn_, refs, "", [&](std::string_view k, std::string_view v) {
    std::string key(k);
    if (k.size() > 64) {
      if (const uint8_t code = RefFieldCode(k.substr(64))) {
        key.resize(64);
        key.push_back(char(code));
        recoded = true;
      }
    }
    entries.emplace_back(std::move(key), std::string(v));
    return true;
  }));
  if (!recoded) return Status::OK();
  // Emptied and filled again in key order (the codes sort before '/', so
  // the order changes), through the staging that writes it in order.
  KI_RETURN_IF_ERROR(txn_.Drop(refs));
  last_.erase(refs);
  std::sort(entries.begin(), entries.end());
  const bool set = txn_.IsSetTable(refs);  // holds no values
  for (const auto& [k, v] : entries) KI_RETURN_IF_ERROR(PutKV(refs, k, set ? std::string_view() : v));
  return Status::OK();
}

Status LmdbBatch::MakeSetTable(std::string_view table) {
  KI_ASSIGN_OR_RETURN(bool present, store_->lmdb().HasTable(txn_, table));
  if (!present) return Status::OK();  // created as one when first written
  KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
  if (txn_.IsSetTable(dbi)) return Status::OK();
  KI_RETURN_IF_ERROR(FlushStaged(dbi));
  std::vector<std::string> keys;
  KI_RETURN_IF_ERROR(ScanTable(txn_, dbi, "", [&](std::string_view k, std::string_view) {
    if (k.size() > lmdb::kSetKeyBytes) keys.emplace_back(k);
    return true;
  }));
  // LMDB keeps a table's layout from its creation: the table is removed
  // and created again under the same name (a reader of another process
  // still holding the old handle gets MDB_INCOMPATIBLE, not wrong data).
  KI_RETURN_IF_ERROR(txn_.Remove(dbi));
  store_->lmdb().Forget(table);
  opened_.erase(opened_.find(table));
  last_.erase(dbi);
  DiscardStaged(dbi);
  KI_ASSIGN_OR_RETURN(MDB_dbi set, Table(table));
  if (!txn_.IsSetTable(set)) return Status::IOError("index: " + std::string(table) + " was not made a set table");
  for (const std::string& k : keys) KI_RETURN_IF_ERROR(PutKV(set, k, ""));  // in key order: appends
  return Status::OK();
}

Status LmdbBatch::FoldAddedIntoMeta() {
  KI_ASSIGN_OR_RETURN(auto times, AddedTimes());
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  std::vector<std::pair<std::string, std::string>> entries;
  KI_RETURN_IF_ERROR(ScanTable(txn_, meta, "", [&](std::string_view k, std::string_view v) {
    ObjectInfo info;
    if (!UnpackMeta(k, v, &info)) {
      entries.emplace_back(k, v);  // damaged: kept as it is, for audit to report
      return true;
    }
    auto t = times.find(info.digest);
    entries.emplace_back(k, PackMeta(info, t == times.end() ? 0 : t->second));
    return true;
  }));
  // Emptied and filled again in key order (the append path), so that its
  // pages end full: values a third shorter, rewritten in place, would leave
  // every page with that much slack.
  KI_RETURN_IF_ERROR(txn_.Drop(meta));
  last_.erase(meta);
  for (const auto& [k, v] : entries) KI_RETURN_IF_ERROR(WriteKV(meta, k, v));
  return DropTableIfPresent(kAdded);
}

Status LmdbBatch::NumberObjects() {
  // Objects this batch put (an earlier step's) are numbered already; their
  // meta entries are written first, so that the scans below see them.
  KI_RETURN_IF_ERROR(FlushPending());
  KI_ASSIGN_OR_RETURN(auto carried, CarriedNumbers());
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  std::vector<std::pair<std::string, std::string>> entries;
  bool changed = false;
  KI_RETURN_IF_ERROR(ScanTable(txn_, meta, "", [&](std::string_view k, std::string_view v) {
    ObjectInfo info;
    std::optional<int64_t> added;
    if (!UnpackMeta(k, v, &info, &added) || carried.count(info.digest)) {
      entries.emplace_back(k, v);  // numbered already, or damaged: kept as it is, for audit to report
      return true;
    }
    entries.emplace_back(k, "");
    changed = true;
    return true;
  }));
  if (changed) {
    // Numbered in digest order, so that an upgraded store's numbers are
    // what any ki gives the same store; then meta emptied and filled again
    // in key order (the append path), so that its pages end full.
    for (auto& [k, v] : entries) {
      if (!v.empty()) continue;
      KI_ASSIGN_OR_RETURN(auto old, txn_.Get(meta, k));
      ObjectInfo info;
      std::optional<int64_t> added;
      if (!old || !UnpackMeta(k, *old, &info, &added)) continue;
      KI_ASSIGN_OR_RETURN(info.number, NewNumber());
      v = PackMeta(info, added.value_or(0));
    }
    KI_RETURN_IF_ERROR(txn_.Drop(meta));
    last_.erase(meta);
    for (const auto& [k, v] : entries) KI_RETURN_IF_ERROR(WriteKV(meta, k, v));
  }
  return RekeyByNumber();
}

Status LmdbBatch::RekeyByNumber() {
  KI_RETURN_IF_ERROR(FlushPending());
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  auto number_of = [&](std::string_view raw) -> Result<uint32_t> {
    KI_ASSIGN_OR_RETURN(auto v, txn_.Get(meta, raw));
    ObjectInfo info;
    if (!v || !UnpackMeta(raw, *v, &info)) return uint32_t(0);
    return info.number;
  };
  for (std::string_view table : {kDocs, kNamesOf}) {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, Table(table));
    KI_RETURN_IF_ERROR(FlushStaged(dbi));
    std::vector<std::pair<std::string, std::string>> entries;
    Status bad = Status::OK();
    KI_RETURN_IF_ERROR(ScanTable(txn_, dbi, "", [&](std::string_view k, std::string_view v) {
      // A digest key part (format 9 and before) of a held, numbered object
      // becomes its number; any other key (damaged, or of no held object)
      // is kept as it is: audit reports it and reindex removes it.
      const bool digest_part = table == kDocs ? k.size() == 32 : k.size() > 32;
      std::string key(k);
      if (digest_part) {
        auto n = number_of(k.substr(0, 32));
        if (!n.ok()) return bad = n.status(), false;
        if (*n) key = NumberKey(*n) + std::string(k.substr(32));
      }
      entries.emplace_back(std::move(key), std::string(v));
      return true;
    }));
    KI_RETURN_IF_ERROR(bad);
    KI_RETURN_IF_ERROR(txn_.Drop(dbi));
    last_.erase(dbi);
    std::sort(entries.begin(), entries.end());
    for (const auto& [k, v] : entries) KI_RETURN_IF_ERROR(PutKV(dbi, k, v));
  }
  return Status::OK();
}

Status LmdbBatch::KeyObjectsByNumber() {
  if (store_->objects_numbered()) return Status::OK();
  // What the batch holds back is written in the layout it was put in.
  KI_RETURN_IF_ERROR(FlushPending());
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
  KI_ASSIGN_OR_RETURN(MDB_dbi refs, Table(kRefs));
  // Each held object's number (format 10 numbered them all) and the loose
  // ones, whose rows hold their digests alone.
  std::unordered_map<Digest, uint32_t> number;
  std::vector<std::pair<uint32_t, Digest>> loose;
  KI_RETURN_IF_ERROR(ScanTable(txn_, meta, "", [&](std::string_view k, std::string_view v) {
    ObjectInfo info;
    if (!UnpackMeta(k, v, &info) || !info.number) return true;  // damaged: audit reports it
    number.emplace(info.digest, info.number);
    if (info.location == Location::kLoose) loose.emplace_back(info.number, info.digest);
    return true;
  }));
  std::map<uint32_t, std::string> rows;  // number -> digest + frame
  std::vector<std::pair<Digest, std::string>> unnumbered;
  bool digest_keys = false, number_keys = false;
  KI_RETURN_IF_ERROR(ScanTable(txn_, objects, "", [&](std::string_view k, std::string_view v) {
    if (k.size() != 32) {
      number_keys = true;
      return true;
    }
    digest_keys = true;
    const Digest d = Digest::FromRaw(k);
    auto it = number.find(d);
    if (it != number.end() && !rows.count(it->second)) {
      rows.emplace(it->second, ObjectsValue(d, v));
    } else {
      unnumbered.emplace_back(d, std::string(v));
    }
    return true;
  }));
  // Killed after this step's batch committed but before FORMAT said 12,
  // the store holds format 12's layout already: nothing to do again.
  if (number_keys && !digest_keys) {
    store_->set_objects_numbered();
    return Status::OK();
  }
  // A frame no meta entry numbers (damage: audit reports a frame without
  // an entry, and reindex indexes it) keeps its bytes under a new number.
  for (auto& [d, frame] : unnumbered) {
    KI_ASSIGN_OR_RETURN(uint32_t n, NewNumber());
    rows.emplace(n, ObjectsValue(d, frame));
  }
  for (const auto& [n, d] : loose) rows.emplace(n, std::string(d.raw()));
  // Emptied and filled again in number order: the append path, full pages.
  KI_RETURN_IF_ERROR(txn_.Drop(objects));
  last_.erase(objects);
  for (const auto& [n, v] : rows) KI_RETURN_IF_ERROR(WriteKV(objects, NumberKey(n), v));
  store_->set_objects_numbered();
  // refs: each referrer's digest becomes its number. A key whose referrer
  // the store does not hold is left out (refs is derived, and such an entry
  // is stale: reindex removes it too); a key too short to hold a digest
  // (damaged) is kept as it is, for audit to report.
  KI_RETURN_IF_ERROR(FlushStaged(refs));
  std::vector<std::string> keys;
  KI_RETURN_IF_ERROR(ScanTable(txn_, refs, "", [&](std::string_view k, std::string_view) {
    if (k.size() <= 64) {
      keys.emplace_back(k);
      return true;
    }
    auto it = number.find(Digest::FromRaw(k.substr(32, 32)));
    if (it != number.end()) keys.push_back(RefKey(Digest::FromRaw(k.substr(0, 32)), NumberKey(it->second), k.substr(64)));
    return true;
  }));
  KI_RETURN_IF_ERROR(txn_.Drop(refs));
  last_.erase(refs);
  std::sort(keys.begin(), keys.end());
  for (const std::string& k : keys) KI_RETURN_IF_ERROR(PutKV(refs, k, ""));
  return Status::OK();
}

Result<std::unordered_map<Digest, uint32_t>> LmdbBatch::ObjectRowNumbers() {
  std::unordered_map<Digest, uint32_t> numbers;
  KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
  uint32_t largest = 0;
  KI_RETURN_IF_ERROR(ScanTable(txn_, objects, "", [&](std::string_view k, std::string_view v) {
    if (auto row = SplitObjectsRow(k, v)) {
      numbers.emplace(row->digest, row->number);
      largest = std::max(largest, row->number);
    }
    return true;
  }));
  KI_RETURN_IF_ERROR(ReserveNumbersThrough(largest));
  return numbers;
}

Status LmdbBatch::DropStaleObjectRows() {
  KI_RETURN_IF_ERROR(FlushPending());
  KI_ASSIGN_OR_RETURN(MDB_dbi objects, Table(kObjects));
  KI_ASSIGN_OR_RETURN(MDB_dbi meta, Table(kMeta));
  std::vector<std::string> stale;
  Status bad = Status::OK();
  KI_RETURN_IF_ERROR(ScanTable(txn_, objects, "", [&](std::string_view k, std::string_view v) {
    auto row = SplitObjectsRow(k, v);
    if (!row) {
      stale.emplace_back(k);  // malformed: no digest, so no object's bytes
      return true;
    }
    auto entry = txn_.Get(meta, row->digest.raw());
    if (!entry.ok()) return bad = entry.status(), false;
    ObjectInfo info;
    const bool indexed = *entry && UnpackMeta(row->digest.raw(), **entry, &info);
    if (row->frame.empty() ? !indexed || info.location != Location::kLoose || info.number != row->number
                           : indexed && info.number != row->number) {
      stale.emplace_back(k);
    }
    return true;
  }));
  KI_RETURN_IF_ERROR(bad);
  for (const std::string& k : stale) KI_RETURN_IF_ERROR(EraseKV(objects, k));
  return Status::OK();
}

}  // namespace ki::odb
