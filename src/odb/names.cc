// What the documents the store holds say the names are: the one source of
// every names, nameset and namesof entry (a name is recorded
// only from a document that carries it: LinkManifest), so what audit
// compares those tables with and what reindex rebuilds them from.
#include "odb/store_impl.h"

namespace ki {

Result<std::vector<std::string>> Batch::NamesOf(const Digest& d) {
  std::vector<std::string> out;
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return out;
  const std::string prefix = odb::ObjectKeyPart(*info);
  KI_RETURN_IF_ERROR(Scan(odb::kNamesOf, prefix, [&](std::string_view k, std::string_view) {
    out.emplace_back(k.substr(prefix.size()));
    return true;
  }));
  return out;
}

// An object's number is in its meta entry (Stat), as the store or the
// batch sees it.
Result<std::optional<uint32_t>> Store::NumberOf(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info || !info->number) return std::optional<uint32_t>();
  return std::optional<uint32_t>(info->number);
}

Result<std::optional<uint32_t>> Batch::NumberOf(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info || !info->number) return std::optional<uint32_t>();
  return std::optional<uint32_t>(info->number);
}

Result<std::optional<Digest>> Batch::DocumentOf(const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto info, Stat(d));
  if (!info) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(auto v, Get(odb::kDocs, odb::DocsKey(*info)));
  if (!v || v->size() != 32) return std::optional<Digest>();
  return std::optional<Digest>(Digest::FromRaw(*v));
}

}  // namespace ki

namespace ki::odb {

bool IsDocument(const ObjectInfo& info) {
  return info.type == ObjectType::kBlob &&
         (info.media_type == kDocumentMediaTypeJson || info.media_type == kDocumentMediaTypeYaml);
}

std::optional<DocumentGives> LmdbStore::DocumentGivesOf(const ObjectInfo& info, const std::string* bytes) {
  if (!IsDocument(info)) return std::nullopt;
  std::string read;
  if (!bytes) {
    auto got = Read(info.digest);
    if (!got.ok()) return std::nullopt;  // a fault of its own
    read = std::move(got).value();
    bytes = &read;
  } else if (info.size > opts_.max_object_size) {
    return std::nullopt;  // as Read refuses it
  }
  ParseLimits limits;
  limits.max_bytes = opts_.max_object_size;
  DocFormat fmt = info.media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
  auto j = ParseDocument(*bytes, fmt, info.digest.str(), limits);
  if (!j.ok()) return std::nullopt;
  auto m = ManifestFromJson(std::move(*j), info.digest.str());
  if (!m.ok()) return std::nullopt;
  return DocumentGives{info.digest, m->digest, m->kind, m->name()};
}

Result<std::vector<DocumentGives>> LmdbStore::EveryDocumentGives() {
  std::vector<ObjectInfo> docs;
  KI_RETURN_IF_ERROR(ForEachObject([&](const ObjectInfo& info) {
    if (IsDocument(info)) docs.push_back(info);
    return true;
  }));
  std::vector<DocumentGives> out;
  for (const ObjectInfo& info : docs)
    if (auto g = DocumentGivesOf(info, nullptr)) out.push_back(std::move(*g));
  return out;
}

std::set<std::string> DocumentNameSet(const std::vector<DocumentGives>& gives,
                                      const std::unordered_map<Digest, Kind>& manifests) {
  // Every document, not only the one docs links: a manifest added from
  // several documents (YAML, then JSON, each naming it) keeps every name,
  // and docs links the last.
  std::set<std::string> given;
  for (const DocumentGives& g : gives) {
    auto held = manifests.find(g.manifest);
    if (held == manifests.end() || held->second != g.kind || g.name.empty()) continue;
    given.insert(NameSetKey(g.kind, g.name, g.manifest));
  }
  return given;
}

Result<std::set<std::string>> LmdbStore::DocumentNames(const std::vector<DocumentGives>& gives) {
  std::unordered_map<Digest, Kind> manifests;
  KI_RETURN_IF_ERROR(ForEachObject([&](const ObjectInfo& info) {
    if (info.type == ObjectType::kManifest && info.kind) manifests.emplace(info.digest, *info.kind);
    return true;
  }));
  return DocumentNameSet(gives, manifests);
}

std::optional<std::tuple<Kind, std::string, Digest>> SplitNameSetKey(std::string_view key) {
  if (key.size() <= 32) return std::nullopt;
  const std::string_view name = key.substr(0, key.size() - 32);
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto kind = ParseKind(name.substr(0, slash));
  if (!kind) return std::nullopt;
  return std::tuple{*kind, std::string(name.substr(slash + 1)), Digest::FromRaw(key.substr(key.size() - 32))};
}

}  // namespace ki::odb
