// Checks: verify (a closure), audit (the whole store) and the comparison of
// every derived index with what the objects give (through ShadowBatch).
#include <deque>
#include <exception>
#include <thread>

#include "odb/content_check.h"
#include "odb/store_impl.h"

namespace ki::odb {

ShadowBatch::ShadowBatch(LmdbStore* store, const std::vector<std::string_view>& owned,
                         const VerifiedContents* verified, const std::unordered_set<Digest>* faulty)
    : store_(store), verified_(verified), faulty_(faulty), format_(store->format_version()) {
  for (auto t : owned) tables_[std::string(t)];
}

Result<std::optional<std::string>> ShadowBatch::Get(std::string_view table, std::string_view key) {
  auto it = tables_.find(table);
  if (it == tables_.end()) return store_->Get(table, key);
  auto k = it->second.find(key);
  if (k == it->second.end()) return std::optional<std::string>();
  return std::optional<std::string>(k->second);
}

Result<std::vector<Digest>> ShadowBatch::ReferrersOf(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto referrers, store_->Referrers(d));
  std::vector<Digest> out;
  out.reserve(referrers.size());
  for (auto& [referrer, field] : referrers) out.push_back(referrer);
  out.erase(std::unique(out.begin(), out.end()), out.end());  // Referrers is in digest order
  return out;
}

Result<std::optional<Digest>> ShadowBatch::DigestOfNumber(uint32_t n) { return store_->DigestOfNumber(n); }

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
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  return info.has_value();
}
Result<std::optional<ObjectInfo>> ShadowBatch::Stat(const Digest& d) {
  if (Faulty(d)) return std::optional<ObjectInfo>();
  return store_->Stat(d);
}
Result<std::string> ShadowBatch::Read(const Digest& d) {
  if (Faulty(d)) return Status::NotFound(d.str() + " is damaged (audit reports it)");
  if (verified_) {
    if (auto it = verified_->find(d); it != verified_->end()) return std::string(it->second.bytes());
  }
  return store_->Read(d);
}

Result<std::shared_ptr<const Manifest>> ShadowBatch::ViewManifest(const Digest& d) {
  if (!Faulty(d) && verified_) {
    // As the pass parsed it (ManifestFromCanonical: the canonical form
    // checked), shared, not parsed again.
    if (auto it = verified_->find(d); it != verified_->end() && it->second.manifest) return it->second.manifest;
  }
  return Batch::ViewManifest(d);
}

Result<Manifest> ShadowBatch::ReadManifest(const Digest& d) {
  if (Faulty(d)) return Status::NotFound(d.str() + " is damaged (audit reports it)");
  if (verified_) {
    if (auto it = verified_->find(d); it != verified_->end() && it->second.type == ObjectType::kManifest) {
      // As LmdbStore::ReadManifest, less the read and re-hash Audit did.
      auto m = ManifestFromStored(it->second.bytes(), d);
      if (!m.ok()) return Status::Corruption(m.status().message());
      return m;
    }
  }
  return store_->ReadManifest(d);
}

namespace {

// A refs key's referrer part that names no held object.
std::string ReferrerText(std::string_view part) {
  auto n = KeyNumber(part);
  return n ? "object number " + std::to_string(*n) + " (no object holds it)" : lmdb::KeyText(part);
}

// What the user runs about a damaged object (issue 25.3): the same bytes
// written again replace it (a batch re-hashes a held copy before it skips
// it as held); a pull fetches only what the index lacks, so it needs the
// object out of the index first, which reindex does.
constexpr char kReplaceHint[] =
    "; replace it from a good copy: ki add of the same bytes (which writes it anew), or ki audit --reindex "
    "(which takes it out of the index) and then ki pull from a remote that holds it";
// A frame whose own header check passes (version 2 or 3) but that the
// index entry disagrees with: the entry is what is wrong.
// The same disagreement with a version 1 frame (no header check): which of
// the two is wrong cannot be told, and reindex keeps the entry's media type.
constexpr char kVersion1Hint[] = "; a version 1 frame has no header check, so which of the two is wrong cannot be "
                                 "told (ki audit --reindex keeps the entry): ki add of the same bytes, with the right "
                                 "media type, writes the object anew";
constexpr char kEntryHint[] = "; the frame's own header check passes, so the index entry is wrong: ki audit --reindex "
                              "rewrites it";

// The frame version of a frame's first bytes (0 when unreadable).
uint8_t FrameVersionOf(std::string_view frame) {
  return frame.size() > 4 && std::string_view(frame.data(), 4) == std::string_view(kFrameMagic, 4) ? uint8_t(frame[4])
                                                                                                  : 0;
}

}  // namespace

bool LmdbStore::Streamed(const ObjectInfo& info, bool want_raw) {
  // Nobody needs the bytes: re-hashed as they are read, whatever their
  // size. (A dictionary's are: audit reads its ID; it is small.)
  return info.location == Location::kLoose && ((info.type == ObjectType::kBlob && !IsDictionary(info)) || !want_raw);
}

CheckEntry LmdbStore::Check(const ObjectInfo& info, std::string* raw_out, uint32_t* dict_fault) {
  if (!Streamed(info, raw_out != nullptr)) return CheckFetched(info, FetchFrame(info), raw_out, dict_fault);
  uint32_t dict = 0;
  uint8_t version = 0;
  uint64_t stored = 0;
  Status s = StreamLoose(info, Discard);
  const std::string path = LoosePath(dir_, info.digest);
  auto file = env()->NewSequentialFile(path);
  if (file.ok()) {
    char head[5];
    auto n = (*file)->Read(head, sizeof head);
    if (n.ok()) version = FrameVersionOf(std::string_view(head, *n));
    auto st = (*file)->Stat();
    if (st.ok()) stored = st->size;
    if (!s.ok()) {
      // Which dictionary, if that is what failed: the header says.
      auto again = env()->NewSequentialFile(path);
      auto h = again.ok() ? ReadFrameHeader(**again, info.digest.str()) : Result<FrameHeader>(again.status());
      if (h.ok() && h->dict_id && s.message().find(DictionaryName(h->dict_id)) != std::string::npos) {
        dict = h->dict_id;
      }
    }
  }
  return CheckOutcome(info, std::move(s), version, stored, dict, dict_fault);
}

LmdbStore::FetchedFrame LmdbStore::FetchFrame(const ObjectInfo& info) {
  FetchedFrame f;
  auto frame = ReadFrame(info);
  if (!frame.ok()) {
    f.read = frame.status();
    return f;
  }
  f.frame = std::move(frame).value();
  auto plan = PlanDecode(nullptr, info, f.frame, &f.dict);
  if (plan.ok()) {
    f.plan = std::move(plan).value();
  } else {
    f.planned = plan.status();
  }
  return f;
}

CheckEntry LmdbStore::CheckFetched(const ObjectInfo& info, const FetchedFrame& f, std::string* raw_out,
                                   uint32_t* dict_fault) {
  if (!f.read.ok()) return CheckOutcome(info, f.read, 0, 0, 0, dict_fault);
  const uint8_t version = FrameVersionOf(f.frame);
  const uint64_t stored = f.frame.size();
  if (!f.planned.ok()) return CheckOutcome(info, f.planned, version, stored, f.dict, dict_fault);
  uint32_t dict = 0;
  auto raw = DecodePlanned(info, f.frame, f.plan, &dict);
  if (!raw.ok()) return CheckOutcome(info, raw.status(), version, stored, dict, dict_fault);
  if (raw_out) *raw_out = std::move(raw).value();
  return CheckOutcome(info, Status::OK(), version, stored, dict, dict_fault);
}

CheckEntry LmdbStore::CheckOutcome(const ObjectInfo& info, Status s, uint8_t version, uint64_t stored,
                                   uint32_t dict, uint32_t* dict_fault) {
  CheckEntry e;
  e.digest = info.digest;
  e.what = Describe(info);
  if (s.ok() && stored != info.stored_size) {
    // Every byte of the index entry is compared: the frame is sound (it
    // re-hashed), so the entry's stored size is what is wrong.
    e.state = CheckState::kCorrupt;
    e.detail = info.digest.str() + ": the index entry says " + std::to_string(info.stored_size) +
               " stored bytes, the frame has " + std::to_string(stored) + "; ki audit --reindex rewrites it";
    return e;
  }
  if (s.ok()) return e;
  e.state = CheckState::kCorrupt;
  e.detail = s.message();
  if (dict) {
    if (dict_fault) *dict_fault = dict;  // the dictionary's fault says what to run
  } else if (s.message().find("frame header disagrees with the index") != std::string::npos) {
    e.detail += version >= kFrameVersion ? kEntryHint : kVersion1Hint;
  } else {
    e.detail += kReplaceHint;
  }
  return e;
}

Status LmdbStore::Walk(const std::vector<std::pair<Digest, std::string>>& roots, WalkRead read,
                       const WalkEdges& more, const std::function<Status(const CheckEntry&)>& visit) {
  std::unordered_set<Digest> seen;
  std::deque<std::pair<Digest, std::string>> queue;
  for (const auto& r : roots)
    if (seen.insert(r.first).second) queue.push_back(r);
  std::vector<std::pair<Digest, std::string>> extra;
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
      KI_RETURN_IF_ERROR(visit(e));
      continue;
    }
    const bool manifest = info->type == ObjectType::kManifest;
    std::string raw;
    CheckEntry e;
    if (manifest || read == WalkRead::kEvery) {
      e = Check(*info, &raw);
    } else {
      e.digest = d;
      e.what = Describe(*info);  // not read: gc needs only that it is held
    }
    e.via = via;
    std::optional<Manifest> m;
    if (e.state == CheckState::kOk && manifest) {
      auto parsed = ManifestFromCanonical(raw, d.str());
      if (parsed.ok()) {
        m = std::move(parsed).value();
      } else {
        e.state = CheckState::kCorrupt;
        e.detail = parsed.status().message();
      }
    }
    KI_RETURN_IF_ERROR(visit(e));
    if (e.state != CheckState::kOk) continue;
    const std::string from = d.str().substr(0, 19) + " ";
    if (m) {
      for (const Reference& ref : ExtractReferences(*m)) {
        if (seen.insert(ref.target).second) queue.emplace_back(ref.target, from + ref.field);
      }
      KI_ASSIGN_OR_RETURN(auto doc, DocumentOf(d));
      if (doc && seen.insert(*doc).second) queue.emplace_back(*doc, from + "document");
    }
    if (more) {
      extra.clear();
      KI_RETURN_IF_ERROR(more(*info, &extra));
      for (auto& [t, field] : extra)
        if (seen.insert(t).second) queue.emplace_back(t, from + field);
    }
  }
  return Status::OK();
}

Result<VerifyReport> LmdbStore::Verify(const Digest& root) {
  VerifyReport report;
  KI_RETURN_IF_ERROR(Walk({{root, "root"}}, WalkRead::kEvery, nullptr, [&](const CheckEntry& e) {
    report.entries.push_back(e);
    return Status::OK();
  }));
  return report;
}

Result<AuditReport> LmdbStore::Audit() {
  AuditReport report;
  ExpectedTables want;
  std::unordered_set<Digest> loose_indexed, indexed;
  // 1. Every indexed object: bytes present, frame agrees, content re-hashes.
  std::vector<ObjectInfo> infos;
  KI_RETURN_IF_ERROR(ForEachObject([&](const ObjectInfo& info) {
    infos.push_back(info);
    return true;
  }));
  // Objects that cannot be read because their dictionary is missing or
  // damaged, by dictionary: one fault names the dictionary, and a few of
  // them are listed (there may be thousands).
  struct DictFault {
    std::string detail;
    std::vector<CheckEntry> objects;
    size_t count = 0;
  };
  std::map<uint32_t, DictFault> dict_faults;
  std::unordered_set<Digest> unreadable;
  // What each document gives, read from the bytes this pass re-hashes
  // (step 5 compares the name tables with it): each document read once.
  std::vector<DocumentGives> gives;
  std::unordered_map<Digest, Kind> manifest_kinds;
  // What step 6's indexes read (CheckDerived): each object decoded once.
  VerifiedContents verified;
  // Where step 6 runs on a second thread (below), the documents' gives are
  // read on this thread beside it, from the bytes the pass re-hashed, rather
  // than in the pass: the pass is shorter, and this thread's wait for step
  // 6 holds them (bench/results/audit-2026-12-03.md).
  const bool early_derived = SecondAuditThread() && snapshot_.get();
  KI_ASSIGN_OR_RETURN(std::vector<ObjectCheck> checks,
                      CheckEveryObject(infos, early_derived ? GivesRead::kLater : GivesRead::kInPass));
  // Each document that gives, in the objects' order: its gives, or (later)
  // that they are still to be read.
  struct DocumentSlot {
    size_t i;
    std::optional<DocumentGives> gives;
    bool later;
  };
  std::vector<DocumentSlot> documents;
  for (size_t i = 0; i < infos.size(); ++i) {
    const ObjectInfo& info = infos[i];
    ObjectCheck& c = checks[i];
    CheckEntry& e = c.e;
    indexed.insert(info.digest);
    if (info.location == Location::kLoose) loose_indexed.insert(info.digest);
    const bool manifest = info.type == ObjectType::kManifest;
    const bool dictionary = IsDictionary(info);
    if (manifest && info.kind) manifest_kinds.emplace(info.digest, *info.kind);
    if (c.gives || c.gives_later) documents.push_back({i, std::move(c.gives), c.gives_later});
    report.objects++;
    report.bytes += info.size;
    if (e.state != CheckState::kOk) {
      unreadable.insert(info.digest);
      if (c.dict_fault) {
        DictFault& f = dict_faults[c.dict_fault];
        if (f.detail.empty()) f.detail = e.detail;
        if (f.objects.size() < 5) f.objects.push_back(std::move(e));
        f.count++;
      } else {
        report.faults.push_back(std::move(e));
      }
    } else if (dictionary) {
      // What dicts must hold: the smallest digest of each ID.
      if (const uint32_t id = DictionaryId(c.raw)) {
        auto [it, fresh] = want.dicts.emplace(id, info.digest);
        if (!fresh && info.digest < it->second) it->second = info.digest;
      }
    } else if (manifest) {
      if (!c.agrees.ok()) {
        e.state = CheckState::kCorrupt;
        e.detail = c.agrees.message() + kReplaceHint;
        report.faults.push_back(std::move(e));
        continue;
      }
      // What refs must hold for it (compared below).
      const std::string referrer = RefReferrerPart(info);
      for (const Reference& ref : c.refs) want.refs.emplace(RefKey(ref.target, referrer, ref.field), ref.uri);
      verified.emplace(info.digest, VerifiedContent{info.type, std::string(), std::move(c.manifest)});
    } else if (c.read) {
      verified.emplace(info.digest, VerifiedContent{info.type, std::move(c.raw)});
    }
  }
  for (auto& [id, f] : dict_faults) {
    CheckEntry e;
    e.state = CheckState::kCorrupt;
    e.what = DictionaryName(id);
    auto held = Get(kDicts, DictKey(id));
    if (held.ok() && *held && (*held)->size() == 32) e.digest = Digest::FromRaw(**held);
    // The first object's message, without its digest: it names the dictionary and what is wrong.
    std::string detail = f.detail;
    if (auto colon = detail.find(": "); colon != std::string::npos) detail = detail.substr(colon + 2);
    e.detail = detail + "; " + std::to_string(f.count) + " object" + (f.count == 1 ? " is" : "s are") +
               " compressed with it and cannot be read" + (f.count > f.objects.size() ? " (the first listed)" : "");
    report.faults.push_back(std::move(e));
    for (auto& o : f.objects) report.faults.push_back(std::move(o));
  }
  // 6, begun here when the store holds a read snapshot and the machine two
  // cores: the derived indexes rebuilt and compared (CheckDerived) on a
  // second thread, beside steps 2-5, through a read transaction of its own
  // on the snapshot's commit (SameSnapshot), leaving out the objects that
  // step 1 found damaged. Its faults come after steps 2-5's, as they would
  // in order. Steps 2-4 rarely find more damaged objects; when they do, or
  // when the second thread could not see the snapshot's commit, its result
  // is dropped and step 6 runs again, in order, on this thread.
  struct EarlyDerived {
    std::unordered_set<Digest> damaged;
    std::thread thread;
    bool held = false;  // it read the snapshot's commit
    Status status;
    AuditReport report;
    std::exception_ptr failed;
    // Joined however Audit leaves (an early error return or an exception
    // of this thread): it reads Audit's locals.
    ~EarlyDerived() {
      if (thread.joinable()) thread.join();
    }
  } early;
  if (early_derived) {
    early.damaged = unreadable;
    for (const auto& f : report.faults) early.damaged.insert(f.digest);
    early.thread = std::thread([&] {
      try {
        SameSnapshot same(this);
        if (!same.held()) return;
        early.held = true;
        early.status = CheckDerived(infos, early.damaged, verified, &early.report);
      } catch (...) {
        early.failed = std::current_exception();
      }
    });
  }
  // Every held object by its number: what numbered keys (objects, refs,
  // docs, namesof) are read back through.
  want.by_number.reserve(infos.size());
  for (const ObjectInfo& info : infos)
    if (info.number) want.by_number.emplace(info.number, info.digest);
  // 2. The other way: frames in LMDB and loose files must be indexed.
  std::vector<std::pair<Digest, std::string>> unindexed_frames;
  if (!objects_numbered_) {
    KI_RETURN_IF_ERROR(Scan(kObjects, "", [&](std::string_view k, std::string_view v) {
      Digest d = Digest::FromRaw(k);
      if (!indexed.count(d) || loose_indexed.count(d)) unindexed_frames.emplace_back(d, std::string(v));
      return true;
    }));
  } else {
    KI_RETURN_IF_ERROR(CheckObjectRows(infos, &unindexed_frames, &report));
  }
  for (const auto& [d, frame] : unindexed_frames) {
    // A frame and its index entry are written in one transaction, so a
    // frame without one is damage, never an interrupted write: of the
    // index entry (the frame is sound: reindex indexes it) or of the frame
    // (reindex left it out: a good copy must replace it).
    CheckEntry e;
    e.digest = d;
    e.state = CheckState::kCorrupt;
    e.what = "frame";
    auto h = ParseFrameHeader(frame, d.str());
    if (h.ok()) e.what = h->type == ObjectType::kManifest && h->kind ? std::string(KindName(Kind(h->kind))) + " frame"
                                                                    : "blob " + h->media_type + " frame";
    Status s = CheckUnindexedFrame(frame, d);
    if (loose_indexed.count(d)) {
      e.detail = "object bytes in the index database, but the index entry says the object is a loose file; "
                 "ki audit --reindex re-reads both";
    } else if (s.ok()) {
      e.detail = "object bytes in the index database without an index entry; they hold what their key says: "
                 "ki audit --reindex indexes them";
    } else {
      e.detail = s.message() + "; damaged object bytes in the index database, not indexed, so ki cat and ki show do "
                 "not find the object. Replace it from a good copy: ki pull from a remote that holds it, or ki add "
                 "of the same bytes";
    }
    report.faults.push_back(std::move(e));
  }
  KI_ASSIGN_OR_RETURN(auto fanout, env()->ListDir(ObjectsDir(dir_)));
  for (const auto& sub : fanout) {
    KI_ASSIGN_OR_RETURN(auto files, env()->ListDir(ObjectsDir(dir_) + "/" + sub));
    for (const auto& f : files) {
      auto d = Digest::Parse("sha256:" + sub + f);
      if (!d.ok()) {
        // Temporary files of a write that never committed (kill -9).
        report.notes.push_back("leftover temporary file objects/" + sub + "/" + f);
      } else if (!loose_indexed.count(*d)) {
        // Not indexed: from an interrupted write, which reindex adopts, or
        // damaged (or left out by a reindex because it was), which nothing
        // adopts: a fault until a good copy replaces it.
        Status s = CheckUnindexedLoose(ObjectsDir(dir_) + "/" + sub + "/" + f, *d);
        if (s.ok()) {
          report.notes.push_back("unindexed loose object " + d->str() +
                                 " (from an interrupted write; ki audit --reindex adopts it)");
        } else {
          CheckEntry e;
          e.digest = *d;
          e.state = CheckState::kCorrupt;
          e.what = "loose object file";
          e.detail = s.message() + "; not indexed, so ki cat and ki show do not find it. Replace it from a "
                     "good copy: ki pull from a remote that holds it, or ki add of the same bytes";
          report.faults.push_back(std::move(e));
        }
      }
    }
  }
  // 3. References: targets the store does not hold are missing, not faults.
  std::set<Digest> missing_seen;
  KI_RETURN_IF_ERROR(Scan(kRefs, "", [&](std::string_view k, std::string_view) {
    auto parts = SplitRefKey(k);
    if (!parts) return true;
    const Digest& target = parts->target;
    if (indexed.count(target) || !missing_seen.insert(target).second) return true;
    CheckEntry e;
    e.digest = target;
    e.state = CheckState::kMissing;
    e.what = "unknown";
    auto referrer = ReferrerOf(parts->referrer, want.by_number);
    e.via = (referrer ? referrer->str().substr(0, 19) : ReferrerText(parts->referrer)) + " " +
            RefField(parts->field);
    report.missing.push_back(std::move(e));
    return true;
  }));
  for (auto& e : report.missing) {
    auto absent = StatAbsent(e.digest);
    if (absent.ok() && *absent && !(*absent)->media_type.empty()) e.what = "blob " + (*absent)->media_type;
  }
  // 4. Names, tags and document links must point at objects the store holds.
  for (std::string_view table : {kNames, kTags, kDocs}) {
    KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view v) {
      Digest d = Digest::FromRaw(v);
      bool bad = v.size() != 32 || !indexed.count(d);
      if (table == kDocs) {
        // Its key: the manifest's number (a store of format 9 or before
        // read as it is: its digest).
        auto manifest = DocsKeyHolder(k, want.by_number);
        if (!manifest || !indexed.count(*manifest)) bad = true;
      }
      if (bad) {
        CheckEntry e;
        e.digest = d;
        e.state = CheckState::kCorrupt;
        e.what = table == kNames  ? "name " + std::string(k)
                 : table == kTags ? "tag " + std::string(k)
                                  : "document link";
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
  // 5. The store's own tables against what the objects and the recorded
  // names give.
  for (DocumentSlot& slot : documents) {
    if (slot.later) {
      // Read whole and re-hashed by the pass, so held in `verified`.
      const ObjectInfo& info = infos[slot.i];
      auto it = verified.find(info.digest);
      slot.gives = DocumentGivesOf(info, it != verified.end() ? &it->second.raw : nullptr);
    }
    if (slot.gives) gives.push_back(std::move(*slot.gives));
  }
  documents = {};
  want.names = DocumentNameSet(gives, manifest_kinds);
  want.documents = std::move(gives);
  // The objects whose own bytes are at fault (steps 1-4): what the derived
  // indexes leave out. Not the table faults of step 5, whose digests name
  // good objects (a damaged name entry's holder): those were once left out
  // too, which reported the holder's catalog entries as faults as well.
  std::unordered_set<Digest> damaged = std::move(unreadable);
  for (const auto& f : report.faults) damaged.insert(f.digest);
  KI_RETURN_IF_ERROR(CheckNumbers(infos, &report));
  KI_RETURN_IF_ERROR(CheckStoreTables(want, indexed, &report));
  // 6. Derived indexes: rebuilt from the objects into an overlay, compared
  // with the tables in place entry by entry.
  if (early.thread.joinable()) {
    // What only steps 1-5 read, freed while the second thread still works
    // rather than at return after it: ~60 ms of frees of the imported
    // export's refs and checks (bench/results/audit-2026-12-03.md).
    checks = {};
    want = ExpectedTables();
    indexed = {};
    loose_indexed = {};
    early.thread.join();
    // The same objects left out: `damaged` holds early.damaged and more
    // only if steps 2-4 found more.
    if (early.held && damaged.size() == early.damaged.size()) {
      if (early.failed) std::rethrow_exception(early.failed);
      KI_RETURN_IF_ERROR(early.status);
      for (auto& e : early.report.faults) report.faults.push_back(std::move(e));
      return report;
    }
  }
  KI_RETURN_IF_ERROR(CheckDerived(infos, damaged, verified, &report));
  return report;
}

namespace {

// Reports the keys of `table` that differ from `want` (both ways), at most
// kShown of each table, then a count.
class TableDiff {
 public:
  static constexpr size_t kShown = 20;
  TableDiff(std::string_view table, AuditReport* report) : table_(table), report_(report) {}
  ~TableDiff() {
    if (!more_) return;
    CheckEntry e;
    e.state = CheckState::kCorrupt;
    e.what = std::string(table_);
    e.detail = "and " + std::to_string(more_) + " more entries that differ from what the objects give";
    report_->faults.push_back(std::move(e));
  }
  void Fault(std::optional<Digest> d, std::string what, std::string detail) {
    if (shown_ >= kShown) return void(more_++);
    shown_++;
    CheckEntry e;
    e.state = CheckState::kCorrupt;
    if (d) e.digest = *d;
    e.what = std::string(table_) + " " + what;
    e.detail = std::move(detail);
    report_->faults.push_back(std::move(e));
  }

 private:
  std::string_view table_;
  AuditReport* report_;
  size_t shown_ = 0, more_ = 0;
};

const char kExtra[] = "entry that no object gives (ki audit --reindex removes it)";
const char kLacking[] = "missing: the objects give this entry (ki audit --reindex restores it)";
const char kDiffers[] = "its value differs from what the objects give (ki audit --reindex rewrites it)";
const char kUnheld[] = "names an object the store does not hold (ki audit --reindex removes it)";
const char kNotGiven[] = "no document the store holds gives this object this name (ki audit --reindex removes it)";
const char kNameLacking[] =
    "missing: a document the store holds gives this object this name (ki audit --reindex restores it)";

}  // namespace

Status LmdbStore::CheckObjectRows(const std::vector<ObjectInfo>& infos,
                                  std::vector<std::pair<Digest, std::string>>* unindexed_frames,
                                  AuditReport* report) {
  std::unordered_map<Digest, const ObjectInfo*> by_digest;
  by_digest.reserve(infos.size());
  for (const ObjectInfo& info : infos) by_digest.emplace(info.digest, &info);
  std::unordered_set<uint32_t> loose_rows;  // numbers whose row names their loose object
  auto fault = [&](std::optional<Digest> d, std::string what, std::string detail) {
    CheckEntry e;
    if (d) e.digest = *d;
    e.state = CheckState::kCorrupt;
    e.what = std::move(what);
    e.detail = std::move(detail);
    report->faults.push_back(std::move(e));
  };
  KI_RETURN_IF_ERROR(Scan(kObjects, "", [&](std::string_view k, std::string_view v) {
    auto row = SplitObjectsRow(k, v);
    if (!row) {
      fault(std::nullopt, "objects row " + lmdb::KeyText(k),
            "malformed: its key is not an object number or its value holds no digest, so it holds no object "
            "(ki audit --reindex removes it)");
      return true;
    }
    auto it = by_digest.find(row->digest);
    const ObjectInfo* info = it == by_digest.end() ? nullptr : it->second;
    if (!row->frame.empty()) {
      // A frame under another number than its entry's, or of no entry.
      if (!info || info->location == Location::kLoose || info->number != row->number)
        unindexed_frames->emplace_back(row->digest, std::string(row->frame));
      return true;
    }
    if (info && info->number == row->number) {
      // An object kept in LMDB whose row lost its frame: the object pass
      // reported it (its read failed).
      if (info->location == Location::kLoose) loose_rows.insert(row->number);
      return true;
    }
    const std::string n = std::to_string(row->number);
    fault(row->digest, "objects row " + n,
          info ? "names this object as number " + n + ", which the index entry gives number " +
                     std::to_string(info->number) + " (ki audit --reindex removes the row)"
               : "names an object that has no index entry and whose bytes are not in the store (ki audit --reindex "
                 "removes the row)");
    return true;
  }));
  for (const ObjectInfo& info : infos) {
    if (info.location != Location::kLoose || loose_rows.count(info.number)) continue;
    fault(info.digest, "objects row " + std::to_string(info.number),
          "missing: the row that gives this loose object's number its digest, through which references from it "
          "are read back (ki audit --reindex restores it)");
  }
  return Status::OK();
}

Status LmdbStore::CheckNumbers(const std::vector<ObjectInfo>& infos, AuditReport* report) {
  if (!numbered_) return Status::OK();  // a store of format 9 or before, read as it is
  TableDiff meta(kMeta, report);
  std::unordered_map<uint32_t, Digest> first;  // infos are in digest order: the first keeps its number
  uint32_t largest = 0;
  for (const ObjectInfo& info : infos) {
    if (!info.number) {
      meta.Fault(info.digest, info.digest.str(), "has no object number (ki audit --reindex gives it one)");
      continue;
    }
    largest = std::max(largest, info.number);
    auto [it, fresh] = first.emplace(info.number, info.digest);
    if (!fresh) {
      meta.Fault(info.digest, info.digest.str(),
                 "its object number " + std::to_string(info.number) + " is also " + it->second.str() +
                     "'s (ki audit --reindex gives this object a new one)");
    }
  }
  if (!largest) return Status::OK();
  KI_ASSIGN_OR_RETURN(auto next, Get(kSeq, kSeqObjects));
  const std::optional<uint32_t> n = next ? KeyNumber(*next) : std::nullopt;
  if (!n || *n <= largest) {
    TableDiff seq(kSeq, report);
    seq.Fault(std::nullopt, std::string(kSeqObjects),
              "the next object number is " + (n ? std::to_string(*n) : std::string("not recorded")) +
                  ", not above the largest given, " + std::to_string(largest) + " (ki audit --reindex raises it)");
  }
  return Status::OK();
}

Status LmdbStore::CheckStoreTables(const ExpectedTables& want, const std::unordered_set<Digest>& indexed,
                                   AuditReport* report) {
  // refs: a function of the manifests (format 7 and before also kept
  // kinds; format 8 reads kinds from meta, which is compared above).
  for (auto entry : {std::pair{kRefs, &want.refs}}) {
    // Not a structured binding: clang 14 (the fuzz build's) cannot capture
    // one in the lambdas below.
    const auto table = entry.first;
    const auto keys = entry.second;
    TableDiff diff(table, report);
    std::unordered_set<std::string> seen;
    auto label = [&](std::string_view k) {
      auto parts = SplitRefKey(k);
      if (!parts) return lmdb::KeyText(k);
      auto referrer = ReferrerOf(parts->referrer, want.by_number);
      return (referrer ? referrer->str() : ReferrerText(parts->referrer)) + " " +
             RefField(parts->field) + " -> " + parts->target.str();
    };
    auto digest_of = [&](std::string_view k) -> std::optional<Digest> {
      auto parts = SplitRefKey(k);
      return parts ? ReferrerOf(parts->referrer, want.by_number) : std::nullopt;
    };
    // Keys are unique, so as many matched as the objects give means none is
    // lacking: which ones are is only worked out when some are.
    size_t matched = 0;
    KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view v) {
      auto it = keys->find(std::string(k));
      if (it == keys->end()) {
        diff.Fault(digest_of(k), label(k), kExtra);
      } else {
        // The value too, where there is one: every byte of the table is
        // what the objects give. A set table (refs since format 11) holds
        // none; a store of format 10 or before, read as it is, holds each
        // reference's artifact URI.
        if (!v.empty() && it->second != v) diff.Fault(digest_of(k), label(k), kDiffers);
        matched++;
      }
      return true;
    }));
    if (matched != keys->size()) {
      KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view) {
        if (keys->count(std::string(k))) seen.emplace(k);
        return true;
      }));
      for (const auto& [k, v] : *keys)
        if (!seen.count(k)) diff.Fault(digest_of(k), label(k), kLacking);
    }
  }
  // dicts: a function of the dictionary objects.
  {
    TableDiff diff(kDicts, report);
    std::set<uint32_t> seen;
    KI_RETURN_IF_ERROR(Scan(kDicts, "", [&](std::string_view k, std::string_view v) {
      const uint32_t id = DictKeyId(k);
      auto it = want.dicts.find(id);
      std::optional<Digest> d;
      if (v.size() == 32) d = Digest::FromRaw(v);
      if (it == want.dicts.end()) {
        diff.Fault(d, DictionaryName(id), kExtra);
      } else {
        seen.insert(id);
        if (!d || !(*d == it->second)) {
          diff.Fault(it->second, DictionaryName(id), "names another object than the dictionary the objects give "
                     "(ki audit --reindex rewrites it)");
        }
      }
      return true;
    }));
    for (const auto& [id, d] : want.dicts)
      if (!seen.count(id)) diff.Fault(d, DictionaryName(id), kLacking);
  }
  // Names: nameset ("Kind/name" + digest) and namesof (number + "Kind/name")
  // are one fact kept both ways, and hold exactly the names the documents
  // give (DocumentNames: names come from nothing else); of a name's holders
  // exactly one is its latest (marked in nameset since format 11; `names`
  // in a store of format 10 or before, read as it is), one the documents
  // give that name.
  {
    // A nameset key as text: "Kind/name sha256:...".
    auto label = [](std::string_view name) { return lmdb::KeyText(name); };
    TableDiff nameset(kNameSet, report), namesof(kNamesOf, report);
    std::set<std::string> in_nameset, in_namesof;
    std::map<std::string, std::vector<std::string>> marked;  // "Kind/name" -> raw digests marked latest
    KI_RETURN_IF_ERROR(Scan(kNameSet, "", [&](std::string_view k, std::string_view v) {
      in_nameset.emplace(k);
      const bool long_enough = k.size() > 32;
      std::optional<Digest> d;
      if (long_enough) d = Digest::FromRaw(k.substr(k.size() - 32));
      const std::string_view name = k.substr(0, long_enough ? k.size() - 32 : k.size());
      if (long_enough && v == kNameLatest) {
        marked[std::string(name)].emplace_back(k.substr(k.size() - 32));
      } else if (!v.empty()) {
        nameset.Fault(d, label(name),
                      "its value is neither empty (a holder) nor the latest holder's mark (ki audit --reindex "
                      "rewrites it)");
      }
      if (want.names.count(std::string(k))) return true;
      // One that names an object the store does not hold is step 4's.
      if (d && !indexed.count(*d)) return true;
      nameset.Fault(d, label(name), kNotGiven);
      return true;
    }));
    KI_RETURN_IF_ERROR(Scan(kNamesOf, "", [&](std::string_view k, std::string_view) {
      const NamesOfEntry e = SplitNamesOf(k, want.by_number);
      if (!e.well_formed) return namesof.Fault(std::nullopt, label(k), kNotGiven), true;
      if (!e.holder) {
        // A number no held object has.
        namesof.Fault(std::nullopt, "#" + std::to_string(KeyNumber(k.substr(0, 4)).value_or(0)) + " " + label(e.name),
                      kUnheld);
        return true;
      }
      const Digest d = *e.holder;
      std::string as_nameset = std::string(e.name) + std::string(d.raw());
      if (!want.names.count(as_nameset)) {
        namesof.Fault(d, label(e.name), indexed.count(d) ? kNotGiven : kUnheld);
      }
      in_namesof.insert(std::move(as_nameset));
      return true;
    }));
    for (const std::string& k : want.names) {
      const Digest d = Digest::FromRaw(std::string_view(k).substr(k.size() - 32));
      const std::string name = label(std::string_view(k).substr(0, k.size() - 32));
      if (!in_nameset.count(k)) nameset.Fault(d, name, kNameLacking);
      if (!in_namesof.count(k)) namesof.Fault(d, name, kNameLacking);
    }
    // The latest holder of each name: its mark, or (a store of format 10
    // or before) its names entry.
    std::map<std::string, std::string> latest;  // "Kind/name" -> raw digest
    for (const auto& [name, ds] : marked) {
      latest.emplace(name, ds.front());
      if (ds.size() > 1) {
        nameset.Fault(Digest::FromRaw(ds.back()), label(name),
                      "a second holder marked as the name's latest (ki audit --reindex keeps the one added last)");
      }
    }
    TableDiff names(kNames, report);  // format 10 and before
    KI_RETURN_IF_ERROR(Scan(kNames, "", [&](std::string_view k, std::string_view v) {
      if (v.size() == 32) latest.emplace(std::string(k), std::string(v));
      return true;
    }));
    // A `Kind/name` key: what every name is (reindex removes one that is not).
    auto is_name = [](std::string_view key) {
      const size_t slash = key.find('/');
      return slash != std::string_view::npos && ParseKind(key.substr(0, slash)).has_value();
    };
    for (const auto& [name, d] : latest) {
      // A marked holder's key was checked above (one no document gives, a
      // key that is not Kind/name, is a nameset fault); a names entry's
      // holder is checked here.
      if (marked.count(name)) continue;
      if (!is_name(name)) {
        names.Fault(Digest::FromRaw(d), label(name), "not a Kind/name (ki audit --reindex removes it)");
      } else if (!want.names.count(name + d) && indexed.count(Digest::FromRaw(d))) {
        names.Fault(Digest::FromRaw(d), label(name),
                    "no document the store holds gives its holder this name (ki audit --reindex points the name at a "
                    "holder the documents give, or removes it)");
      }
    }
    // Every name the documents give has a latest holder, one they give it.
    std::map<std::string, Digest> given;  // "Kind/name" -> a holder
    for (const std::string& k : want.names)
      given.emplace(k.substr(0, k.size() - 32), Digest::FromRaw(std::string_view(k).substr(k.size() - 32)));
    for (const auto& [name, holder] : given) {
      auto it = latest.find(name);
      if (it == latest.end() || (marked.count(name) && !want.names.count(name + it->second))) {
        TableDiff& where = format_version_ >= 11 ? nameset : names;
        where.Fault(holder, label(name), "missing: documents the store holds give this name, and no holder they "
                    "give it is marked its latest (ki audit --reindex points it at the holder added last)");
      }
    }
  }
  // docs: a document blob (kernelindex document media types) that is linked
  // to no manifest lost its link; the manifest it holds says which.
  {
    std::unordered_set<Digest> linked;
    KI_RETURN_IF_ERROR(Scan(kDocs, "", [&](std::string_view, std::string_view v) {
      if (v.size() == 32) linked.insert(Digest::FromRaw(v));
      return true;
    }));
    TableDiff docs(kDocs, report);
    KI_RETURN_IF_ERROR(ForEachUnlinkedDocument(want.documents, linked, [&](const Digest& doc, const Digest& manifest) {
      docs.Fault(manifest, manifest.str(), "missing: document " + doc.str() + " holds this manifest (ki audit --reindex links it)");
    }));
  }
  return Status::OK();
}

Status LmdbStore::ForEachUnlinkedDocument(const std::vector<DocumentGives>& gives,
                                          const std::unordered_set<Digest>& linked,
                                          const std::function<void(const Digest&, const Digest&)>& fn) {
  for (const DocumentGives& g : gives) {
    if (linked.count(g.document)) continue;
    // One manifest may come from several documents (YAML, then JSON): only
    // a held manifest that no docs entry links to any document lost its link.
    KI_ASSIGN_OR_RETURN(auto held, Stat(g.manifest));
    if (!held) continue;
    KI_ASSIGN_OR_RETURN(auto doc, DocumentOf(g.manifest));
    if (!doc) fn(g.document, g.manifest);
  }
  return Status::OK();
}

Status LmdbStore::CheckDerived(const std::vector<ObjectInfo>& infos, const std::unordered_set<Digest>& faulty,
                               const VerifiedContents& verified, AuditReport* report) {
  // Only objects whose bytes check out: a corrupt one is a fault already,
  // and reindex would not index it either.
  std::vector<ObjectInfo> good;
  good.reserve(infos.size());
  for (const auto& info : infos)
    if (!faulty.count(info.digest)) good.push_back(info);
  constexpr size_t kShownPerTable = 20;
  for (DerivedIndex* index : DerivedIndexes()) {
    ShadowBatch shadow(this, index->Tables(), &verified, &faulty);
    shadow.set_format_version(index->HeldFormat(*this));
    KI_RETURN_IF_ERROR(index->Update(shadow, good));
    for (const auto& entry : shadow.tables()) {
      // Named references, not a structured binding: clang 14 (the fuzz
      // build's) cannot capture a binding in the lambdas below.
      const auto& table = entry.first;
      const auto& want = entry.second;
      size_t shown = 0, more = 0;
      auto fault = [&](std::string_view key, std::string detail) {
        if (shown >= kShownPerTable) return void(more++);
        shown++;
        CheckEntry e;
        e.state = CheckState::kCorrupt;
        if (key.size() >= 32) e.digest = Digest::FromRaw(key.substr(0, 32));
        std::string text = index->DescribeKey(table, key);
        e.what = table + " " + text;
        e.detail = std::move(detail);
        report->faults.push_back(std::move(e));
      };
      // As in CheckStoreTables: the lacking keys are only looked for when
      // fewer matched than the objects give.
      size_t matched = 0;
      KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view v) {
        auto it = want.find(k);
        if (it == want.end()) {
          fault(k, "entry that no object gives (ki audit --reindex removes it)");
        } else {
          matched++;
          if (!index->SameValue(table, v, it->second)) fault(k, "differs from what the objects give (ki audit --reindex rewrites it)");
        }
        return true;
      }));
      if (matched != want.size()) {
        std::set<std::string, std::less<>> seen;
        KI_RETURN_IF_ERROR(Scan(table, "", [&](std::string_view k, std::string_view) {
          if (want.count(k)) seen.emplace(k);
          return true;
        }));
        for (const auto& [k, v] : want)
          if (!seen.count(k)) fault(k, "missing: the objects give this entry (ki audit --reindex restores it)");
      }
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
