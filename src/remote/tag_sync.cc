// Tags over push and pull (ki/tag_sync.h).
#include "ki/tag_sync.h"

#include <unordered_map>

#include "ki/store_env.h"
#include "remote/target.h"

namespace ki {

namespace {
constexpr std::string_view kRemoteTagPrefix = "kitag-";
}  // namespace

Result<std::string> RemoteTagOf(std::string_view name) {
  KI_RETURN_IF_ERROR(CheckTagName(name));
  std::string out(kRemoteTagPrefix);
  for (char c : name) {
    switch (c) {
      case '_': out += "_u"; break;
      case '/': out += "_s"; break;
      case '+': out += "_p"; break;
      case '@': out += "_a"; break;
      default: out += c;
    }
  }
  if (out.size() > 128) {
    return Status::InvalidInput("tag '" + std::string(name) + "' is too long to travel: its remote tag " + out.substr(0, 40) +
                                "… is over the 128 characters an OCI tag may have");
  }
  return out;
}

std::optional<std::string> TagNameOfRemote(std::string_view remote) {
  if (remote.substr(0, kRemoteTagPrefix.size()) != kRemoteTagPrefix) return std::nullopt;
  std::string name;
  for (size_t i = kRemoteTagPrefix.size(); i < remote.size(); ++i) {
    if (remote[i] != '_') {
      name += remote[i];
      continue;
    }
    if (++i == remote.size()) return std::nullopt;
    switch (remote[i]) {
      case 'u': name += '_'; break;
      case 's': name += '/'; break;
      case 'p': name += '+'; break;
      case 'a': name += '@'; break;
      default: return std::nullopt;
    }
  }
  if (!CheckTagName(name).ok()) return std::nullopt;
  return name;
}

Result<std::vector<TagTransfer>> PushTags(Store& store, const RemoteUrl& remote, const TransferOptions& opts,
                                          PushReport* pushed) {
  KI_ASSIGN_OR_RETURN(auto tags, ListTags(store));
  std::vector<TagTransfer> out;
  std::vector<std::string> refs;
  for (const auto& [name, d] : tags) {
    TagTransfer t;
    t.name = name;
    KI_ASSIGN_OR_RETURN(t.remote_tag, RemoteTagOf(name));
    t.object = d;
    out.push_back(std::move(t));
    refs.push_back(d.str());
  }
  if (refs.empty()) return out;
  TransferOptions o = opts;
  o.bundle_tag.clear();  // each tag names its own image manifest
  KI_ASSIGN_OR_RETURN(PushReport rep, Push(store, remote, refs, o));
  // The remote tag names the image manifest the push wrote for the object:
  // written after it, so a remote tag is always a whole closure.
  KI_ASSIGN_OR_RETURN(auto target, remote.scheme == RemoteUrl::Scheme::kLayout
                                       ? remote::OpenLayout(remote, opts, remote::Access::kPush, EnvOf(store))
                                       : remote::OpenRegistry(remote, opts, remote::Access::kPush, EnvOf(store)));
  KI_ASSIGN_OR_RETURN(auto conn, target->Connect());
  std::unordered_map<Digest, Digest> manifest_of;  // root -> its image manifest
  for (const auto& r : rep.refs) manifest_of.emplace(r.root, r.manifest);
  for (const TagTransfer& t : out) {
    auto it = manifest_of.find(t.object);
    if (it == manifest_of.end()) return Status::IOError("push of " + t.object.str() + " wrote no image manifest");
    KI_ASSIGN_OR_RETURN(auto now, conn->ResolveTag(t.remote_tag));
    if (now && *now == it->second) continue;
    KI_ASSIGN_OR_RETURN(remote::FetchedManifest m, conn->GetManifest(it->second.str()));
    bool indexed = false;
    KI_RETURN_IF_ERROR(conn->PutManifest(t.remote_tag, m.bytes,
                                         m.media_type.empty() ? remote::kOciManifestType : std::string_view(m.media_type),
                                         &indexed));
  }
  conn.reset();
  KI_RETURN_IF_ERROR(target->Finish());
  if (pushed) *pushed = std::move(rep);
  return out;
}

Result<std::vector<TagTransfer>> PullTags(Store& store, const RemoteUrl& remote, const TransferOptions& opts,
                                          TagReplace replace, PullReport* pulled) {
  KI_ASSIGN_OR_RETURN(auto all, ListTags(remote, opts));
  std::vector<TagTransfer> out;
  std::vector<std::string> refs;
  for (const auto& t : all) {
    auto name = TagNameOfRemote(t);
    if (!name) continue;
    TagTransfer x;
    x.name = *name;
    x.remote_tag = t;
    out.push_back(std::move(x));
    refs.push_back(t);
  }
  if (refs.empty()) return out;
  KI_ASSIGN_OR_RETURN(PullReport rep, Pull(store, remote, refs, opts));
  std::unordered_map<std::string, Digest> root_of;  // remote tag -> the ki object pulled
  for (const auto& r : rep.refs)
    if (r.root) root_of.emplace(r.ref, *r.root);
  for (TagTransfer& t : out) {
    auto it = root_of.find(t.remote_tag);
    if (it == root_of.end()) return Status::InvalidInput(t.remote_tag + ": the remote tag names no ki object");
    t.object = it->second;
    KI_ASSIGN_OR_RETURN(auto had, LookupTag(store, t.name));
    if (had && *had != t.object && replace == TagReplace::kNo) {
      t.set = false;
      continue;
    }
    KI_RETURN_IF_ERROR(SetTag(store, t.name, t.object, TagReplace::kYes).status());
  }
  if (pulled) *pulled = std::move(rep);
  return out;
}

}  // namespace ki
