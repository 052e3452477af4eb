// What the documents the store holds say the names are: the one source of
// every names, nameset and namesof entry (a name is recorded
// only from a document that carries it: LinkManifest), so what audit
// compares those tables with and what reindex rebuilds them from.
#include "odb/store_impl.h"

namespace ki::odb {

std::optional<Manifest> LmdbStore::ManifestOfDocument(const ObjectInfo& info) {
  if (info.type != ObjectType::kBlob ||
      (info.media_type != kDocumentMediaTypeJson && info.media_type != kDocumentMediaTypeYaml)) {
    return std::nullopt;
  }
  auto bytes = Read(info.digest);
  if (!bytes.ok()) return std::nullopt;  // a fault of its own
  ParseLimits limits;
  limits.max_bytes = opts_.max_object_size;
  DocFormat fmt = info.media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
  auto j = ParseDocument(*bytes, fmt, info.digest.str(), limits);
  if (!j.ok()) return std::nullopt;
  auto m = ManifestFromJson(std::move(*j), info.digest.str());
  if (!m.ok()) return std::nullopt;
  return std::move(m).value();
}

Result<std::set<std::string>> LmdbStore::DocumentNames() {
  std::vector<ObjectInfo> docs;
  std::unordered_map<Digest, Kind> manifests;
  KI_RETURN_IF_ERROR(ForEachObject([&](const ObjectInfo& info) {
    if (info.type == ObjectType::kManifest && info.kind) manifests.emplace(info.digest, *info.kind);
    if (info.type == ObjectType::kBlob &&
        (info.media_type == kDocumentMediaTypeJson || info.media_type == kDocumentMediaTypeYaml)) {
      docs.push_back(info);
    }
    return true;
  }));
  // Every document, not only the one docs links: a manifest added from
  // several documents (YAML, then JSON, each naming it) keeps every name,
  // and docs links the last.
  std::set<std::string> given;
  for (const ObjectInfo& info : docs) {
    auto m = ManifestOfDocument(info);
    if (!m) continue;
    auto held = manifests.find(m->digest);
    const std::string name = m->name();
    if (held == manifests.end() || held->second != m->kind || name.empty()) continue;
    given.insert(NameSetKey(m->kind, name, m->digest));
  }
  return given;
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
