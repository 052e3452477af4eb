// remote.state rows (state.h; docs/format.md, "Remote state").
#include "remote/state.h"

namespace ki::remote {
namespace {

constexpr size_t kPackRowBytes = 32 + 32 + 8 + 8;

// key, digest (raw), size, objects (8 bytes big-endian each).
std::string EncodePackRow(const PackRow& p) {
  std::string v(p.key.raw());
  v.append(p.digest.raw());
  for (uint64_t x : {p.size, p.objects})
    for (int i = 7; i >= 0; --i) v.push_back(char(x >> (8 * i)));
  return v;
}

uint64_t BigEndian64(std::string_view b) {
  uint64_t x = 0;
  for (char c : b) x = x << 8 | uint8_t(c);
  return x;
}

std::optional<PackRow> DecodePackRow(std::string_view v) {
  if (v.size() != kPackRowBytes) return std::nullopt;  // from a later format: ignored
  PackRow p;
  p.key = Digest::FromRaw(v.substr(0, 32));
  p.digest = Digest::FromRaw(v.substr(32, 32));
  p.size = BigEndian64(v.substr(64, 8));
  p.objects = BigEndian64(v.substr(72, 8));
  return p;
}

constexpr size_t kBundleRowBytes = 32 + 32 + 8;

std::string EncodeBundleRow(const BundleRow& b) {
  std::string v(b.key.raw());
  v.append(b.toc.raw());
  for (int i = 7; i >= 0; --i) v.push_back(char(b.toc_size >> (8 * i)));
  return v;
}

std::optional<BundleRow> DecodeBundleRow(std::string_view v) {
  if (v.size() != kBundleRowBytes) return std::nullopt;
  BundleRow b;
  b.key = Digest::FromRaw(v.substr(0, 32));
  b.toc = Digest::FromRaw(v.substr(32, 32));
  b.toc_size = BigEndian64(v.substr(64, 8));
  return b;
}

std::string StatePrefix(const RemoteUrl& url) { return std::string(Sha256Of(url.str()).raw().substr(0, 8)); }

}  // namespace

Result<RemoteState> LoadState(Store& store, const RemoteUrl& url) {
  RemoteState st;
  if (url.scheme != RemoteUrl::Scheme::kRegistry) return st;
  st.enabled = true;
  st.prefix = StatePrefix(url);
  size_t p = st.prefix.size();
  KI_RETURN_IF_ERROR(store.Scan(kRemoteStateTable, st.prefix, [&](std::string_view k, std::string_view v) {
    if (k.size() == p + 33 && (k[p] == 'b' || k[p] == 'r')) {
      Digest d = Digest::FromRaw(k.substr(p + 1));
      (k[p] == 'b' ? st.blobs : st.referrers).insert(d);
    } else if (k.size() > p + 1 && k[p] == 't' && v.size() == 32) {
      st.tags[std::string(k.substr(p + 1))] = Digest::FromRaw(v);
    } else if (k.size() > p + 1 && k[p] == 'p') {
      if (auto row = DecodePackRow(v)) st.packs[std::string(k.substr(p + 1))] = *row;
    } else if (k.size() > p + 1 && k[p] == 'i') {
      if (auto row = DecodeBundleRow(v)) st.bundles[std::string(k.substr(p + 1))] = *row;
    }
    return true;  // anything else is from a later format: ignored
  }));
  return st;
}

Status WriteState(Batch& batch, const RemoteState& old, const StateUpdate& u) {
  if (!old.enabled) return Status::OK();
  auto key = [&](char type, std::string_view rest) {
    std::string k = old.prefix;
    k.push_back(type);
    k.append(rest);
    return k;
  };
  std::unordered_set<Digest> gone(u.gone.begin(), u.gone.end());
  for (const Digest& d : gone) KI_RETURN_IF_ERROR(batch.Delete(kRemoteStateTable, key('b', d.raw())));
  for (const Digest& d : u.blobs)  // a blob found gone and uploaded again is held again
    if (!old.blobs.count(d) || gone.count(d)) KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('b', d.raw()), ""));
  for (const Digest& d : u.referrers)
    if (!old.referrers.count(d)) KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('r', d.raw()), ""));
  for (const auto& [tag, m] : u.tags) {
    auto it = old.tags.find(tag);
    if (it == old.tags.end() || it->second != m) KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('t', tag), m.raw()));
  }
  for (const auto& [tag, p] : u.packs) {
    auto it = old.packs.find(tag);
    std::string v = EncodePackRow(p);
    if (it == old.packs.end() || EncodePackRow(it->second) != v) {
      KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('p', tag), v));
    }
  }
  for (const auto& [tag, b] : u.bundles) {
    auto it = old.bundles.find(tag);
    std::string v = EncodeBundleRow(b);
    if (it == old.bundles.end() || EncodeBundleRow(it->second) != v) {
      KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('i', tag), v));
    }
  }
  return Status::OK();
}

}  // namespace ki::remote
