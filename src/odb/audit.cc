// Checks: verify (a closure), audit (the whole store) and the comparison of
// every derived index with what the objects give (through ShadowBatch).
#include <deque>

#include "odb/store_impl.h"

namespace ki::odb {

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
  KI_ASSIGN_OR_RETURN(auto fanout, env()->ListDir(ObjectsDir(dir_)));
  for (const auto& sub : fanout) {
    KI_ASSIGN_OR_RETURN(auto files, env()->ListDir(ObjectsDir(dir_) + "/" + sub));
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

}  // namespace ki::odb
