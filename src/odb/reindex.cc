// Rebuilds: reindex (every derived table from the frames) and format
// upgrades.
#include "odb/store_impl.h"

namespace ki::odb {

Result<AuditReport> LmdbStore::Reindex() {
  KI_ASSIGN_OR_RETURN(auto batch_base, NewBatch());
  auto* batch = static_cast<LmdbBatch*>(batch_base.get());
  // The store's own derived tables, and every derived index's: Commit
  // hands the indexes every object indexed below (all of them).
  std::vector<std::string_view> derived = {kMeta, kKinds, kRefs, kDicts};
  for (DerivedIndex* index : DerivedIndexes())
    for (auto t : index->Tables()) derived.push_back(t);
  for (std::string_view t : derived) {
    KI_ASSIGN_OR_RETURN(MDB_dbi dbi, batch->Table(t));
    KI_RETURN_IF_ERROR(batch->txn().Drop(dbi));
  }
  std::vector<std::string> problems;
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
    auto raw = odb::DecodeFrame(frame, *h, opts_.max_object_size, where, dict->get());
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
  // Each is also a fault of the audit above (a frame or loose file that
  // nothing indexes and that does not hold what its name says), which
  // stays until a good copy replaces it: reindex never adopts damage.
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
  format_version_ = 3;
  return Status::OK();
}

// Names are recorded facts and Reindex keeps them. A store written before
// `nameset` existed, though, forgot a name's earlier holders when the name
// moved; each manifest's linked document still says its name, so every one
// is recorded again (idempotent). A document that cannot be read is audit's
// to report, not this step's.
//
// The other recorded tables are mended from what they mirror: a document
// blob that lost its docs link is linked again (the manifest it holds says
// to which), nameset and namesof are made each other's mirror again, and
// barenames is rebuilt from names (a pure function of it).
Status LmdbStore::RecordDocumentNames() {
  {
    std::unordered_set<Digest> linked;
    KI_RETURN_IF_ERROR(Scan(kDocs, "", [&](std::string_view, std::string_view v) {
      if (v.size() == 32) linked.insert(Digest::FromRaw(v));
      return true;
    }));
    std::vector<std::pair<Digest, Digest>> relink;
    KI_RETURN_IF_ERROR(ForEachUnlinkedDocument(linked, [&](const Digest& doc, const Digest& manifest) {
      relink.emplace_back(manifest, doc);
    }));
    if (!relink.empty()) {
      KI_ASSIGN_OR_RETURN(auto batch, NewBatch());
      for (const auto& [manifest, doc] : relink) KI_RETURN_IF_ERROR(batch->Put(kDocs, manifest.raw(), doc.raw()));
      KI_RETURN_IF_ERROR(batch->Commit());
    }
  }
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
  auto record = [&](std::string_view key, const Digest& d) -> Status {
    auto slash = key.find('/');
    std::optional<Kind> kind = slash == std::string::npos ? std::nullopt : ParseKind(key.substr(0, slash));
    if (kind) KI_RETURN_IF_ERROR(batch->RecordName(*kind, key.substr(slash + 1), d));
    return Status::OK();
  };
  for (const auto& [key, d] : current) KI_RETURN_IF_ERROR(record(key, d));
  std::vector<std::pair<std::string, Digest>> recorded;  // from nameset and namesof alike
  KI_RETURN_IF_ERROR(Scan(kNameSet, "", [&](std::string_view k, std::string_view) {
    if (k.size() > 32) recorded.emplace_back(std::string(k.substr(0, k.size() - 32)), Digest::FromRaw(k.substr(k.size() - 32)));
    return true;
  }));
  KI_RETURN_IF_ERROR(Scan(kNamesOf, "", [&](std::string_view k, std::string_view) {
    if (k.size() > 32) recorded.emplace_back(std::string(k.substr(32)), Digest::FromRaw(k.substr(0, 32)));
    return true;
  }));
  for (const auto& [key, d] : recorded) {
    KI_ASSIGN_OR_RETURN(auto held, Stat(d));
    if (held) KI_RETURN_IF_ERROR(record(key, d));
  }
  KI_RETURN_IF_ERROR(batch->DropTable(kBareNames));
  for (const auto& [key, d] : current) {
    auto slash = key.find('/');
    std::optional<Kind> kind = slash == std::string::npos ? std::nullopt : ParseKind(key.substr(0, slash));
    if (kind) KI_RETURN_IF_ERROR(batch->Put(kBareNames, BareNameKey(*kind, key.substr(slash + 1)), d.raw()));
  }
  return batch->Commit();
}

}  // namespace ki::odb
