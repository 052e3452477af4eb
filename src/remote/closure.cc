// Closures (mapping.h): what a push sends for a root, collected from the
// store. Apart from the OCI mapping proper (mapping.cc) because it walks
// the store and asks the catalog and sign modules what travels with an
// object, where the mapping only composes and parses documents.
#include <deque>
#include <unordered_set>

#include "ki/catalog.h"
#include "ki/ingest.h"
#include "ki/sign.h"
#include "remote/mapping.h"

namespace ki::remote {

namespace {

// What one object contributes to a closure: its own layer(s), the
// attestations filed under it, and the objects it references.
Status LoadNode(Store& store, const Digest& d, ClosureNode* n) {
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(d));
  n->present = info.has_value();
  if (!info) return Status::OK();
  Layer l;
  l.digest = d;
  l.size = info->size;
  l.media_type = info->media_type;
  if (info->type == ObjectType::kManifest) {
    l.role = Role::kManifest;
    l.kind = info->kind;
    l.title = std::string(KindName(*info->kind)) + "-" + d.hex() + ".json";
    KI_ASSIGN_OR_RETURN(Manifest m, store.ReadManifest(d));
    n->layers.push_back(std::move(l));
    for (const Reference& ref : ExtractReferences(m)) n->children.push_back(ref.target);
    KI_ASSIGN_OR_RETURN(auto doc, store.DocumentOf(d));
    if (doc) {
      KI_ASSIGN_OR_RETURN(auto dinfo, store.Stat(*doc));
      if (dinfo) {
        Layer dl;
        dl.digest = *doc;
        dl.size = dinfo->size;
        dl.role = Role::kDocument;
        dl.media_type = dinfo->media_type;
        dl.kind = info->kind;
        dl.document_of = d;
        bool yaml = dinfo->media_type == kDocumentMediaTypeYaml;
        dl.title = std::string(KindName(*info->kind)) + "-" + d.hex() + ".document" + (yaml ? ".yaml" : ".json");
        n->layers.push_back(std::move(dl));
      }
    }
  } else {
    l.role = Role::kBlob;
    // A media type an older ki stored without checking it (ki add now
    // refuses it) would make a pull refuse the whole closure: such a blob
    // travels as application/octet-stream, which says as little.
    if (!IsValidMediaType(l.media_type)) l.media_type = "application/octet-stream";
    l.title = "blob-" + d.hex() + ExtensionFor(l.media_type);
    n->layers.push_back(std::move(l));
    // Catalog objects reach what they are about: an import its facts, a
    // facts object its run (so the run's group travels with it).
    KI_RETURN_IF_ERROR(catalog::ObjectsNamedBy(store, *info, &n->children));
  }
  // The catalog facts about this object travel with it, as its
  // attestations do: ranking, records and evidence read them.
  KI_RETURN_IF_ERROR(catalog::FactsAbout(store, d, &n->children));
  // Attestations filed under this object travel with it.
  KI_ASSIGN_OR_RETURN(auto envs, ListAttestationRows(store, d));
  for (auto& [env, value] : envs) {
    KI_ASSIGN_OR_RETURN(auto einfo, store.Stat(env));
    if (!einfo) continue;
    Layer al;
    al.digest = env;
    al.size = einfo->size;
    al.role = Role::kAttestation;
    al.media_type = einfo->media_type.empty() ? std::string(kDsseMediaType) : einfo->media_type;
    al.subject = d;
    al.index_value = value;
    al.title = "attestation-" + env.hex() + ".dsse.json";
    n->attestations.push_back(std::move(al));
  }
  return Status::OK();
}

}  // namespace

Result<Closure> CollectClosure(Store& store, const Digest& root, std::string_view preferred_name,
                               ClosureCache* cache) {
  Closure c;
  c.root = root;
  KI_ASSIGN_OR_RETURN(auto root_info, store.Stat(root));
  if (!root_info) return Status::NotFound(root.str() + " is not held by this store (only its digest is known)");
  // A name becomes the tag only for its latest holder: several manifests
  // may carry one name (metadata is not identity), and a tag names one
  // image. An earlier holder is tagged by its digest, as an unnamed root is,
  // so one push never gives two roots the same tag.
  KI_ASSIGN_OR_RETURN(auto all_names, store.NamesOf(root));
  std::vector<std::string> names;
  for (const auto& n : all_names) {
    auto slash = n.find('/');
    std::optional<Kind> kind = slash == std::string::npos ? std::nullopt : ParseKind(n.substr(0, slash));
    if (!kind) continue;
    KI_ASSIGN_OR_RETURN(auto holders, store.LookupName(*kind, n.substr(slash + 1)));
    if (!holders.empty() && holders.front() == root) names.push_back(n);
  }
  for (const auto& n : names)
    if (n == preferred_name) c.name = n;
  if (c.name.empty() && !names.empty()) c.name = names.front();
  c.root_kind = root_info->kind;

  ClosureCache local;
  if (!cache) cache = &local;
  std::unordered_set<Digest> seen{root};
  std::deque<Digest> queue{root};
  std::vector<const Layer*> attestations;
  std::unordered_set<Digest> layered;
  while (!queue.empty()) {
    Digest d = queue.front();
    queue.pop_front();
    auto it = cache->nodes.find(d);
    if (it == cache->nodes.end()) {
      ClosureNode n;
      KI_RETURN_IF_ERROR(LoadNode(store, d, &n));
      it = cache->nodes.emplace(d, std::move(n)).first;
    }
    const ClosureNode& n = it->second;
    if (!n.present) {
      c.missing.push_back(d);
      continue;
    }
    for (const Layer& l : n.layers) {
      seen.insert(l.digest);
      if (layered.insert(l.digest).second) c.layers.push_back(l);
    }
    for (const Layer& a : n.attestations) attestations.push_back(&a);
    for (const Digest& child : n.children)
      if (seen.insert(child).second) queue.push_back(child);
  }
  for (const Layer* a : attestations) {
    // An envelope filed under two subjects travels once.
    if (layered.insert(a->digest).second) c.layers.push_back(*a);
  }
  return c;
}

}  // namespace ki::remote
