// A remote's listing, and reading names against it (listing.h, remote.h).
#include "remote/listing.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include "json/fields.h"
#include "ki/json.h"
#include "remote/pack.h"
#include "remote/transfer.h"

namespace ki::remote {
namespace {

constexpr std::string_view kListingType = "application/vnd.kernelindex.ki.listing.v1";
constexpr std::string_view kListingMediaType = "application/vnd.kernelindex.ki.listing.v1+json";
constexpr std::string_view kListingTitle = "ki-listing.json";

Json EntryJson(const RemoteEntry& e) {
  Json j = {{"tag", e.tag}, {"manifest", e.manifest.str()}};
  if (e.root) j["root"] = e.root->str();
  if (!e.kind.empty()) j["kind"] = e.kind;
  if (!e.name.empty()) j["name"] = e.name;
  if (e.bundle) j["bundle"] = true, j["roots"] = e.roots;
  if (!e.pushed_at.empty()) j["pushedAt"] = e.pushed_at;
  return j;
}

Result<RemoteEntry> EntryFromJson(const Json& j, size_t i) {
  const std::string where = "remote listing: entries[" + std::to_string(i) + "]";
  if (!j.is_object()) return Status::InvalidInput(where + ": not an object");
  RemoteEntry e;
  KI_ASSIGN_OR_RETURN(e.tag, GetString(j, "tag", where));
  if (!IsValidTag(e.tag)) return Status::InvalidInput(where + ": not a tag");
  KI_ASSIGN_OR_RETURN(std::string manifest, GetString(j, "manifest", where));
  KI_ASSIGN_OR_RETURN(e.manifest, Digest::Parse(manifest));
  KI_ASSIGN_OR_RETURN(std::string root, GetString(j, "root", where));
  if (!root.empty()) {
    KI_ASSIGN_OR_RETURN(Digest d, Digest::Parse(root));
    e.root = d;
  }
  KI_ASSIGN_OR_RETURN(e.kind, GetString(j, "kind", where));
  KI_ASSIGN_OR_RETURN(e.name, GetString(j, "name", where));
  KI_ASSIGN_OR_RETURN(e.pushed_at, GetString(j, "pushedAt", where));
  e.bundle = j.contains("bundle") && j["bundle"] == true;
  if (e.bundle && j.contains("roots") && j["roots"].is_number_unsigned()) e.roots = j["roots"].get<uint64_t>();
  if (e.name.size() > 4096 || e.kind.size() > 100 || e.pushed_at.size() > 40) {
    return Status::InvalidInput(where + ": a field over its length limit");
  }
  return e;
}

std::string ListingManifest(const Digest& blob, uint64_t size) {
  Json m = {{"schemaVersion", 2},
            {"mediaType", kOciManifestType},
            {"artifactType", kListingType},
            {"config", {{"mediaType", kOciEmptyType}, {"digest", EmptyConfigDigest().str()}, {"size", 2}, {"data", "e30="}}},
            {"layers", Json::array({{{"mediaType", kListingMediaType},
                                     {"digest", blob.str()},
                                     {"size", size},
                                     {"annotations", {{std::string(kAnnTitle), kListingTitle}}}}})},
            {"annotations", {{std::string(kAnnFormat), "1"}}}};
  return m.dump();
}

// Hex digits, with or without "sha256:" (what Store::Resolve takes as a prefix).
std::optional<std::string> HexPrefix(std::string_view ref) {
  if (ref.substr(0, 7) == "sha256:") ref.remove_prefix(7);
  if (ref.empty() || ref.size() > 64) return std::nullopt;
  std::string out;
  for (char c : ref) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    out.push_back(char(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace

Result<std::vector<RemoteEntry>> ReadListing(Conn& conn, const TransferOptions& opts, std::string* note) {
  std::vector<RemoteEntry> rows;
  auto m = conn.GetManifest(kListingTag);
  if (!m.ok()) {
    if (m.status().IsNotFound()) return rows;
    return m.status();
  }
  Json j = Json::parse(m->bytes, nullptr, false);
  const Json* layer = nullptr;
  if (j.is_object() && StringOr(j, "artifactType") == kListingType && j.contains("layers") && j["layers"].is_array() &&
      j["layers"].size() == 1 && StringOr(j["layers"][0], "mediaType") == kListingMediaType) {
    layer = &j["layers"][0];
  }
  auto d = layer ? Digest::Parse(StringOr(*layer, "digest")) : Result<Digest>(Status::InvalidInput("no layer"));
  auto size = layer ? DescriptorSize(*layer, "remote listing") : Result<uint64_t>(Status::InvalidInput("no layer"));
  if (!d.ok() || !size.ok() || *size > opts.max_blob_size) {
    *note = "the remote's " + std::string(kListingTag) + " is not a ki listing; ignored";
    return rows;
  }
  KI_ASSIGN_OR_RETURN(std::string bytes, conn.GetBlob(*d, *size));
  ParseLimits limits;
  limits.max_bytes = std::max<uint64_t>(bytes.size(), 1);
  limits.max_depth = 8;
  auto doc = ParseDocument(bytes, DocFormat::kJson, "remote listing", limits);
  if (!doc.ok() || !doc->is_object() || StringOr(*doc, "format") != "1" || !doc->contains("entries") ||
      !(*doc)["entries"].is_array()) {
    *note = "the remote's listing is unreadable (" + (doc.ok() ? std::string("not format 1") : doc.status().message()) + "); ignored";
    return rows;
  }
  const Json& entries = (*doc)["entries"];
  for (size_t i = 0; i < entries.size(); ++i) {
    auto e = EntryFromJson(entries[i], i);
    if (!e.ok()) {
      *note = e.status().message() + "; the listing is ignored";
      return std::vector<RemoteEntry>();
    }
    rows.push_back(std::move(*e));
  }
  return rows;
}

Status UpdateListing(Conn& conn, std::vector<RemoteEntry> rows, const TransferOptions& opts) {
  std::string note;
  KI_ASSIGN_OR_RETURN(std::vector<RemoteEntry> old, ReadListing(conn, opts, &note));
  std::map<std::string, RemoteEntry> by_tag;
  for (RemoteEntry& e : old) by_tag[e.tag] = std::move(e);
  bool changed = !note.empty();
  for (RemoteEntry& e : rows) {
    auto it = by_tag.find(e.tag);
    if (it != by_tag.end() && it->second.manifest == e.manifest && it->second.root == e.root &&
        it->second.name == e.name && it->second.kind == e.kind && it->second.bundle == e.bundle &&
        it->second.roots == e.roots) {
      continue;  // unchanged: keeps its first pushed-at
    }
    changed = true;
    by_tag[e.tag] = std::move(e);
  }
  if (!changed) return Status::OK();
  Json entries = Json::array();
  for (const auto& [tag, e] : by_tag) entries.push_back(EntryJson(e));
  std::string blob = Json{{"format", "1"}, {"entries", entries}}.dump();
  Digest d = Sha256Of(blob);
  KI_ASSIGN_OR_RETURN(bool has_config, conn.HasBlob(EmptyConfigDigest(), 2));
  if (!has_config) KI_RETURN_IF_ERROR(conn.PutBlob(EmptyConfigDigest(), EmptyConfig()));
  KI_RETURN_IF_ERROR(conn.PutBlob(d, blob));
  return conn.PutManifest(kListingTag, ListingManifest(d, blob.size()), kOciManifestType, nullptr);
}

Result<std::optional<BundleToc>> ReadBundleToc(Conn& conn, std::string_view ref, const TransferOptions& opts) {
  KI_ASSIGN_OR_RETURN(FetchedManifest idx, conn.GetManifest(ref));
  KI_ASSIGN_OR_RETURN(BundleRefs refs, ParseBundleIndex(idx.bytes, idx.media_type, opts));
  if (!refs.packed) return std::optional<BundleToc>();
  std::optional<FetchedManifest> pm;
  if (refs.pack) {
    KI_ASSIGN_OR_RETURN(pm, conn.GetManifest(refs.pack->digest.str()));
  } else {
    for (const PartRef& p : refs.parts) {  // untyped: the entry whose own artifactType is the pack's
      if (p.typed) continue;
      KI_ASSIGN_OR_RETURN(FetchedManifest m, conn.GetManifest(p.digest.str()));
      Json peek = Json::parse(m.bytes, nullptr, false);
      if (StringOr(peek, "artifactType") == kOciPackType) {
        pm = std::move(m);
        break;
      }
    }
  }
  if (!pm) return Status::InvalidInput(std::string(ref) + ": a packed bundle without a pack manifest");
  std::optional<PartRef> toc_ref;
  KI_RETURN_IF_ERROR(ParsePackManifest(pm->bytes, pm->media_type, opts, &toc_ref).status());
  if (!toc_ref) return Status::InvalidInput(std::string(ref) + ": a packed bundle without a table of contents");
  KI_ASSIGN_OR_RETURN(std::string z, conn.GetBlob(toc_ref->digest, toc_ref->size));
  const uint64_t max_json = std::min<uint64_t>(opts.max_blob_size, std::max<uint64_t>(opts.max_layers, 1) << 12);
  KI_ASSIGN_OR_RETURN(std::string json, DecompressToc(z, max_json));
  KI_ASSIGN_OR_RETURN(BundleToc toc, ParseToc(json, opts));
  return std::optional<BundleToc>(std::move(toc));
}

}  // namespace ki::remote

namespace ki {

Result<RemoteListing> ListRemote(const RemoteUrl& url, const TransferOptions& opts, bool bundle_roots) {
  // No store: the process's Env reads a layout's files.
  KI_ASSIGN_OR_RETURN(auto target, remote::OpenTarget(url, opts, remote::Access::kPull, *Env::Default()));
  KI_ASSIGN_OR_RETURN(auto conn, target->Connect());
  KI_ASSIGN_OR_RETURN(RemoteListing out, remote::ReadRemoteListing(*conn, opts, bundle_roots));
  out.http_requests = target->requests();
  return out;
}

Result<RemoteListing> remote::ReadRemoteListing(remote::Conn& c, const TransferOptions& opts, bool bundle_roots) {
  RemoteListing out;
  Conn* conn = &c;
  std::string note;
  KI_ASSIGN_OR_RETURN(out.entries, remote::ReadListing(*conn, opts, &note));
  if (!note.empty()) out.warnings.push_back(note);
  std::set<std::string> listed;
  for (const RemoteEntry& e : out.entries) listed.insert(e.tag);
  if (bundle_roots) {
    std::vector<RemoteEntry> inside;
    for (const RemoteEntry& e : out.entries) {
      if (!e.bundle) continue;
      auto toc = remote::ReadBundleToc(*conn, e.manifest.str(), opts);
      if (!toc.ok()) {
        out.warnings.push_back("bundle " + e.tag + ": " + toc.status().message());
        continue;
      }
      if (!*toc) continue;  // format 1: no table of contents
      for (const remote::TocRoot& r : (*toc)->roots) {
        RemoteEntry in;
        in.tag = e.tag;
        in.manifest = e.manifest;
        in.root = r.digest;
        in.kind = r.kind ? std::string(KindName(*r.kind)) : "";
        in.name = r.name;
        in.in_bundle = true;
        in.pushed_at = e.pushed_at;
        inside.push_back(std::move(in));
      }
    }
    for (RemoteEntry& e : inside) out.entries.push_back(std::move(e));
  }
  KI_ASSIGN_OR_RETURN(auto tags, conn->ListTags());
  if (tags) {
    for (const std::string& t : *tags) {
      if (listed.count(t) || t == remote::kListingTag || t.rfind("sha256-", 0) == 0) continue;
      out.unlisted.push_back(t);
    }
  }
  return out;
}

Result<RemoteEntry> ResolveOnRemote(const RemoteListing& listing, std::string_view ref, std::string_view remote) {
  const std::string r(ref);
  std::vector<const RemoteEntry*> found;
  auto add = [&](const RemoteEntry& e) {
    // One root, once: its own manifest before a bundle that also holds it.
    for (const RemoteEntry*& f : found) {
      if (f->root == e.root) {
        if (f->in_bundle && !e.in_bundle) f = &e;
        return;
      }
    }
    found.push_back(&e);
  };
  auto roots = [&](auto pred) {
    for (const RemoteEntry& e : listing.entries)
      if (e.root && pred(e)) add(e);
  };
  std::optional<std::string> hex = remote::HexPrefix(ref);
  if (auto slash = r.find('/'); slash != std::string::npos && !r.starts_with("sha256:")) {
    std::optional<Kind> kind = ParseKindAnyCase(r.substr(0, slash));
    if (kind) {
      const std::string name = std::string(KindName(*kind)) + r.substr(slash);
      roots([&](const RemoteEntry& e) { return e.name == name; });
    }
  } else if (hex && hex->size() >= 4) {
    roots([&](const RemoteEntry& e) { return e.root->hex().starts_with(*hex); });
  }
  if (found.empty() && r.find('/') == std::string::npos && !r.starts_with("sha256:")) {
    roots([&](const RemoteEntry& e) {
      auto slash = e.name.find('/');
      return slash != std::string::npos && e.name.compare(slash + 1, std::string::npos, r) == 0;
    });
  }
  if (found.size() == 1) return *found[0];
  if (found.empty()) {
    if (hex && hex->size() < 4 && r.find('/') == std::string::npos) {
      return Status::InvalidInput("'" + r + "': a digest prefix needs at least 4 hex digits");
    }
    return Status::NotFound(std::string(remote) + " holds nothing that '" + r +
                            "' names (no such tag, and no root of that digest or name in its listing; ki remote ls lists them)");
  }
  std::string msg = "'" + r + "' is ambiguous on " + std::string(remote) + "; it matches:";
  for (const RemoteEntry* e : found) {
    msg += "\n  " + e->root->str() + "  " + (e->name.empty() ? std::string(e->kind.empty() ? "(unnamed)" : e->kind) : e->name) +
           "  (" + (e->in_bundle ? "in bundle " : "tag ") + e->tag + ")";
  }
  return Status::Ambiguous(msg);
}

}  // namespace ki
