// Rebuilds: reindex (every derived table from the frames) and format
// upgrades.
#include "odb/content_check.h"
#include "odb/store_impl.h"

namespace ki::odb {

Result<AuditReport> LmdbStore::Reindex() {
  KI_ASSIGN_OR_RETURN(auto batch_base, NewBatch());
  auto* batch = static_cast<LmdbBatch*>(batch_base.get());
  // The store's own derived tables, and every derived index's: Commit
  // hands the indexes every object indexed below (all of them).
  std::vector<std::string_view> derived = {kMeta, kRefs, kDicts};
  for (DerivedIndex* index : DerivedIndexes())
    for (auto t : index->Tables()) derived.push_back(t);
  // meta also records when each object came (format 6): read before it is
  // dropped, carried over to the entry that replaces it.
  KI_ASSIGN_OR_RETURN(const auto added_times, batch->AddedTimes());
  // So are object numbers (format 10): docs and namesof keys hold them.
  // An object without one (its meta entry lost) is given the next.
  KI_ASSIGN_OR_RETURN(const auto numbers, batch->CarriedNumbers());
  // Format 12 keeps them in objects' keys too, which are data: a row's
  // number is its object's, whatever meta said (a store of format 1,
  // upgraded through this reindex, is given that layout first).
  if (!objects_numbered_) KI_RETURN_IF_ERROR(batch->KeyObjectsByNumber());
  KI_ASSIGN_OR_RETURN(const auto row_numbers, batch->ObjectRowNumbers());
  std::unordered_set<uint32_t> row_taken;
  for (const auto& [d, n] : row_numbers) row_taken.insert(n);
  // A format-1 store's (upgraded through this reindex) is read; not kept.
  KI_RETURN_IF_ERROR(batch->DropTableIfPresent(kAdded));
  // kinds (format 7 and before): meta says each kind.
  KI_RETURN_IF_ERROR(batch->DropTableIfPresent(kKinds));
  auto added_of = [&](const Digest& d) -> std::optional<int64_t> {
    auto it = added_times.find(d);
    return it == added_times.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  auto number_of = [&](const Digest& d) -> uint32_t {
    if (auto r = row_numbers.find(d); r != row_numbers.end()) return r->second;
    auto it = numbers.find(d);
    // meta's number, unless a row holds another object under it (damage).
    return it == numbers.end() || row_taken.count(it->second) ? 0 : it->second;
  };
  for (std::string_view t : derived) {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, batch->Table(t));
    KI_RETURN_IF_ERROR(batch->txn().Drop(dbi));
  }
  // A store upgraded through this reindex (format 1) still has refs as a
  // plain table: emptied now, it is made the set table format 11 keeps.
  for (std::string_view t : SetTables()) KI_RETURN_IF_ERROR(batch->MakeSetTable(t));
  std::vector<std::string> problems, kept;
  // A version 1 blob frame has no header check, and a blob's content does
  // not say its media type: the index entry this reindex replaces is the one
  // other record of it (read outside the batch, which dropped it). When the
  // two disagree, which one is wrong cannot be told, so the entry's media
  // type is kept: the object stays a fault audit reports until a good copy
  // replaces it, instead of the header's byte being copied into the index.
  auto keep_v1_media_type = [&](const Digest& d, FrameHeader* h, const std::string& where) {
    if (h->version != 1 || h->type != ObjectType::kBlob) return;
    auto old = Get(kMeta, d.raw());
    ObjectInfo was;
    if (!old.ok() || !*old || !UnpackMeta(d.raw(), **old, &was) || was.media_type == h->media_type) return;
    kept.push_back(where + ": a version 1 frame (no header check) says media type '" + h->media_type +
                   "', its index entry '" + was.media_type + "'; the entry's is kept");
    h->media_type = was.media_type;
  };
  // The dictionary a frame needs: filed already (dictionaries are indexed
  // first), or built into ki and stored again here.
  auto dictionary_for = [&](const FrameHeader& h, const std::string& where) -> Result<std::shared_ptr<const Dictionary>> {
    if (!h.dict_id) return std::shared_ptr<const Dictionary>();
    if (BuiltinDictionary(h.dict_id)) KI_RETURN_IF_ERROR(batch->EnsureDictionary(h.dict_id));
    return FrameDictionary(batch->txn(), h.dict_id, where);
  };
  auto index_one = [&](std::string_view frame, Location loc, const std::string& where,
                       std::optional<Digest> expect) -> Status {
    auto h = odb::ParseFrameHeader(frame, where);
    if (!h.ok()) return problems.push_back(h.status().message()), Status::OK();
    auto dict = dictionary_for(*h, where);
    if (!dict.ok()) return problems.push_back(dict.status().message()), Status::OK();
    std::optional<std::string> base;
    if (h->base) {
      // Its base's row, read through the batch (objects is not dropped).
      auto planned = loc == Location::kIndex
                         ? PlanBase(&batch->txn(), *h->base, where, nullptr, dictionary_for)
                         : Result<std::shared_ptr<const BaseFrame>>(
                               Status::Corruption(where + ": a based frame in a file"));
      auto got = planned.ok() ? DecodeBase(**planned, where) : Result<std::string>(planned.status());
      if (!got.ok()) return problems.push_back(got.status().message() + "; not indexed"), Status::OK();
      base = std::move(got).value();
    }
    auto raw = odb::DecodeFrame(frame, *h, opts_.max_object_size, where, dict->get(),
                                base ? std::optional<std::string_view>(*base) : std::nullopt);
    if (!raw.ok()) return problems.push_back(raw.status().message()), Status::OK();
    Digest d = Sha256Of(*raw);
    if (expect && d != *expect) {
      problems.push_back(where + ": content hashes to " + d.str() + "; not indexed");
      return Status::OK();
    }
    if (h->type == ObjectType::kManifest) {
      // What the header says that the content can check (a version 1
      // frame has no header check): never copied into the index unchecked.
      auto m = ManifestFromCanonical(*raw, where);
      Status agrees = m.ok() ? ContentAgreesWithHeader(h->type, h->kind, h->media_type, &*m, where) : m.status();
      if (!agrees.ok()) return problems.push_back(agrees.message() + "; not indexed"), Status::OK();
    }
    keep_v1_media_type(d, &*h, where);
    return batch->IndexFrame(d, *h, loc, frame.size(), *raw, added_of(d), number_of(d));
  };
  {
    // Frames kept in LMDB, read inside the batch's own transaction (a
    // loose object's row holds no frame; a malformed row is audit's to
    // report).
    KI_ASSIGN_OR_RETURN(MDB_dbi objects, batch->Table(kObjects));
    std::vector<std::pair<Digest, std::string>> frames;
    KI_ASSIGN_OR_RETURN(auto cur, lmdb::Cursor::Open(batch->txn(), objects));
    KI_ASSIGN_OR_RETURN(bool more, cur.Seek(""));
    while (more) {
      auto row = SplitObjectsRow(cur.key(), cur.value());
      if (row && !row->frame.empty()) frames.emplace_back(row->digest, std::string(row->frame));
      KI_ASSIGN_OR_RETURN(more, cur.Next());
    }
    // Dictionaries first: the frames after them may need them.
    auto is_dictionary = [](std::string_view frame) {
      auto h = odb::ParseFrameHeader(frame, "");
      return h.ok() && h->type == ObjectType::kBlob && h->media_type == kDictionaryMediaType;
    };
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& [d, frame] : frames) {
        if (is_dictionary(frame) == (pass == 0)) KI_RETURN_IF_ERROR(index_one(frame, Location::kIndex, d.str(), d));
      }
    }
  }
  KI_ASSIGN_OR_RETURN(auto fanout, env()->ListDir(ObjectsDir(dir_)));
  for (const auto& sub : fanout) {
    KI_ASSIGN_OR_RETURN(auto files, env()->ListDir(ObjectsDir(dir_) + "/" + sub));
    for (const auto& f : files) {
      std::string path = ObjectsDir(dir_) + "/" + sub + "/" + f;
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
      if (h->type == ObjectType::kBlob && h->media_type != kDictionaryMediaType) {
        auto dict = dictionary_for(*h, path);
        if (!dict.ok()) {
          problems.push_back(dict.status().message());
          continue;
        }
        auto got = odb::DecodeFrameStream(*file, *h, path, Discard, dict->get());
        if (!got.ok()) {
          problems.push_back(got.status().message());
        } else if (*got != *d) {
          problems.push_back(path + ": content hashes to " + got->str() + "; not indexed");
        } else {
          KI_ASSIGN_OR_RETURN(FileStat st, file->Stat());
          keep_v1_media_type(*d, &*h, path);
          KI_RETURN_IF_ERROR(batch->IndexFrame(*d, *h, Location::kLoose, st.size, "", added_of(*d), number_of(*d)));
        }
        continue;
      }
      file.reset();
      KI_ASSIGN_OR_RETURN(std::string frame, env()->ReadFile(path, opts_.max_object_size + (1 << 20)));
      KI_RETURN_IF_ERROR(index_one(frame, Location::kLoose, path, *d));
    }
  }
  // A store of format 1 (upgraded through this reindex) had digests in
  // docs and namesof keys: each object has its number now.
  if (!numbered_) KI_RETURN_IF_ERROR(batch->RekeyByNumber());
  KI_RETURN_IF_ERROR(batch->DropStaleObjectRows());
  KI_RETURN_IF_ERROR(batch->Commit());
  numbered_ = true;
  KI_RETURN_IF_ERROR(RecordDocumentNames());
  KI_ASSIGN_OR_RETURN(AuditReport report, Audit());
  // Each is also a fault of the audit above (a frame or loose file that
  // nothing indexes and that does not hold what its name says), which
  // stays until a good copy replaces it: reindex never adopts damage.
  for (auto& k : kept) {
    report.notes.push_back(k + " (a fault until a good copy replaces the object: ki add of the same bytes, with "
                           "the right media type, writes it anew)");
  }
  for (auto& p : problems) {
    report.notes.push_back("not indexed: " + p +
                           " (a fault until a good copy replaces it: ki pull from a remote that holds it, or ki add "
                           "of the same bytes)");
  }
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
  const std::string format = FormatPath(dir_);
  KI_RETURN_IF_ERROR(env()->WriteFileAtomic(format, kFormatLine, Durability::kSync));
  KI_RETURN_IF_ERROR(env()->SyncDir(dir_));
  format_version_ = kFormatVersion;
  return Status::OK();
}

// Names are recorded from documents only (LinkManifest), so the documents
// the store holds say what every name table must hold (DocumentNames):
// nameset and namesof are made exactly that (a name no document gives,
// a damaged key, goes; one a document gives that they lack, a lost entry
// or a store written before nameset existed, is recorded again), a names
// entry whose holder no document gives the name goes, a name with holders
// but no latest one points at the one added last, and barenames (a copy
// of names that stores before format 4 kept) is emptied. A document that cannot be read gives
// no name: it is a fault audit reports, and the same bytes added again
// give its name back. First, a document blob that lost its docs link is
// linked again (the manifest it holds says to which).
Status LmdbStore::RecordDocumentNames() {
  auto held = [&](const Digest& d) -> Result<bool> {
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    return info.has_value();
  };
  // Every document read once: relinking changes only docs, not what a
  // document gives.
  KI_ASSIGN_OR_RETURN(std::vector<DocumentGives> gives, EveryDocumentGives());
  std::unordered_map<uint32_t, Digest> by_number;  // numbered keys read back
  {
    // A docs entry whose manifest or document the store does not hold (a
    // damaged key or value: audit reports it) goes; the document it named,
    // if held, is linked again below, from what it holds.
    std::vector<std::string> stale;
    std::unordered_set<Digest> linked;
    Status bad = Status::OK();
    KI_ASSIGN_OR_RETURN(by_number, ObjectsByNumber());
    KI_RETURN_IF_ERROR(Scan(kDocs, "", [&](std::string_view k, std::string_view v) {
      auto manifest = DocsKeyHolder(k, by_number);
      auto k_held = manifest ? held(*manifest) : Result<bool>(false);
      auto v_held = v.size() == 32 ? held(Digest::FromRaw(v)) : Result<bool>(false);
      if (!k_held.ok() || !v_held.ok()) return bad = !k_held.ok() ? k_held.status() : v_held.status(), false;
      if (*k_held && *v_held) {
        linked.insert(Digest::FromRaw(v));
      } else {
        stale.emplace_back(k);
      }
      return true;
    }));
    KI_RETURN_IF_ERROR(bad);
    if (!stale.empty()) {
      // Committed first: the relinking below reads which manifests have a link.
      KI_ASSIGN_OR_RETURN(auto batch, NewBatch());
      for (const auto& k : stale) KI_RETURN_IF_ERROR(batch->Delete(kDocs, k));
      KI_RETURN_IF_ERROR(batch->Commit());
    }
    std::vector<std::pair<Digest, Digest>> relink;
    KI_RETURN_IF_ERROR(ForEachUnlinkedDocument(gives, linked, [&](const Digest& doc, const Digest& manifest) {
      relink.emplace_back(manifest, doc);
    }));
    if (!relink.empty()) {
      KI_ASSIGN_OR_RETURN(auto batch, NewBatch());
      for (const auto& [manifest, doc] : relink) {
        KI_ASSIGN_OR_RETURN(auto info, Stat(manifest));
        if (info) KI_RETURN_IF_ERROR(batch->Put(kDocs, DocsKey(*info), doc.raw()));
      }
      KI_RETURN_IF_ERROR(batch->Commit());
    }
  }
  // What the documents give: nameset and namesof are made exactly that,
  // and of each name's holders one is marked its latest (format 11): one
  // marked already keeps the mark; a name with none or several (a lost or
  // damaged entry; audit reports each) is pointed again below.
  KI_ASSIGN_OR_RETURN(std::set<std::string> given, DocumentNames(gives));
  struct Recorded {
    std::string table, key;
    Digest holder;
  };
  std::vector<Recorded> stale_recorded;
  std::set<std::string> in_nameset, in_namesof;
  std::map<std::string, int> marks;  // "Kind/name" -> how many of its given holders are marked
  std::vector<std::string> damaged_values;
  KI_RETURN_IF_ERROR(Scan(kNameSet, "", [&](std::string_view k, std::string_view v) {
    if (given.count(std::string(k))) {
      in_nameset.emplace(k);
      if (v == kNameLatest) {
        marks[std::string(k.substr(0, k.size() - 32))]++;
      } else if (!v.empty()) {
        damaged_values.emplace_back(k);
      }
    } else {
      stale_recorded.push_back({std::string(kNameSet), std::string(k),
                                k.size() > 32 ? Digest::FromRaw(k.substr(k.size() - 32)) : Digest()});
    }
    return true;
  }));
  KI_RETURN_IF_ERROR(Scan(kNamesOf, "", [&](std::string_view k, std::string_view) {
    const NamesOfEntry e = SplitNamesOf(k, by_number);
    std::string as_nameset = e.holder ? std::string(e.name) + std::string(e.holder->raw()) : "";
    if (given.count(as_nameset)) {
      in_namesof.insert(std::move(as_nameset));
    } else {
      stale_recorded.push_back({std::string(kNamesOf), std::string(k), e.holder.value_or(Digest())});
    }
    return true;
  }));
  KI_ASSIGN_OR_RETURN(auto batch_base, NewBatch());
  auto* batch = static_cast<LmdbBatch*>(batch_base.get());
  // names (format 10 and before): folded into nameset when the store was
  // opened for writing; nothing is kept there since.
  KI_RETURN_IF_ERROR(batch->DropTableIfPresent(kNames));
  for (const auto& r : stale_recorded) KI_RETURN_IF_ERROR(batch->DropRecordedName(r.table, r.key, r.holder));
  for (const auto& k : damaged_values) KI_RETURN_IF_ERROR(batch->Put(kNameSet, k, ""));
  for (const std::string& k : given) {
    if (in_nameset.count(k) && in_namesof.count(k)) continue;
    if (auto parts = SplitNameSetKey(k)) {
      KI_RETURN_IF_ERROR(batch->RecordName(std::get<0>(*parts), std::get<1>(*parts), std::get<2>(*parts)));
    }
  }
  // A name without exactly one marked holder is pointed at the holder
  // added last (its meta entry's time; of several added in one second, the
  // greatest digest), which is the one an add makes latest.
  std::map<std::string, std::pair<int64_t, Digest>> latest;
  for (const std::string& k : given) {
    const std::string name = k.substr(0, k.size() - 32);
    if (auto m = marks.find(name); m != marks.end() && m->second == 1) continue;
    const Digest d = Digest::FromRaw(std::string_view(k).substr(k.size() - 32));
    KI_ASSIGN_OR_RETURN(auto meta, batch->Get(kMeta, d.raw()));
    ObjectInfo info;
    std::optional<int64_t> added;
    if (meta) (void)UnpackMeta(d.raw(), *meta, &info, &added);
    const int64_t t = added.value_or(0);
    auto [it, fresh] = latest.emplace(name, std::pair{t, d});
    if (!fresh && (t > it->second.first || (t == it->second.first && it->second.second < d))) it->second = {t, d};
  }
  for (const auto& [name, td] : latest) {
    if (auto parts = SplitNameSetKey(name + std::string(td.second.raw()))) {
      KI_RETURN_IF_ERROR(batch->PointName(std::get<0>(*parts), std::get<1>(*parts), td.second));
    }
  }
  // barenames (before format 4): what a store of an earlier format kept
  // of names, emptied.
  KI_RETURN_IF_ERROR(batch->DropTableIfPresent(kBareNames));
  return batch->Commit();
}

}  // namespace ki::odb
