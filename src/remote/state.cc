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

void PutBig(std::string* v, uint64_t x, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) v->push_back(char(x >> (8 * i)));
}

// Reads fixed-size fields front to back; any read past the end fails it.
class RowReader {
 public:
  explicit RowReader(std::string_view v) : v_(v) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && v_.empty(); }
  std::string_view Bytes(size_t n) {
    if (!ok_ || v_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string_view out = v_.substr(0, n);
    v_.remove_prefix(n);
    return out;
  }
  uint64_t Big(size_t n) { return BigEndian64(Bytes(n)); }
  Digest Raw() {
    std::string_view b = Bytes(32);
    return ok_ ? Digest::FromRaw(b) : Digest();
  }

 private:
  std::string_view v_;
  bool ok_ = true;
};

constexpr char kUnchangedFormat = 1;

}  // namespace

// Format 1: version byte, generation (8), key, index (32 each), unique
// blobs (8), pack flag (1) [pack digest (32), size (8), objects (8)],
// refs (4), then per ref: root (32), objects, attestations (4 each), the
// ref's length (2) and bytes. Integers big-endian.
std::string EncodeUnchangedRow(const UnchangedRow& u) {
  std::string v(1, kUnchangedFormat);
  PutBig(&v, u.generation, 8);
  v.append(u.key.raw());
  v.append(u.index.raw());
  PutBig(&v, u.unique_blobs, 8);
  v.push_back(u.pack ? 1 : 0);
  if (u.pack) {
    v.append(u.pack->digest.raw());
    PutBig(&v, u.pack->size, 8);
    PutBig(&v, u.pack->objects, 8);
  }
  PutBig(&v, u.refs.size(), 4);
  for (const auto& r : u.refs) {
    v.append(r.root.raw());
    PutBig(&v, r.objects, 4);
    PutBig(&v, r.attestations, 4);
    PutBig(&v, r.ref.size(), 2);
    v.append(r.ref);
  }
  return v;
}

std::optional<UnchangedRow> DecodeUnchangedRow(std::string_view v) {
  RowReader in(v);
  if (in.Bytes(1) != std::string_view(&kUnchangedFormat, 1)) return std::nullopt;
  UnchangedRow u;
  u.generation = in.Big(8);
  u.key = in.Raw();
  u.index = in.Raw();
  u.unique_blobs = in.Big(8);
  std::string_view flag = in.Bytes(1);
  if (in.ok() && flag[0] == 1) {
    PushReport::Pack p;
    p.digest = in.Raw();
    p.size = in.Big(8);
    p.objects = in.Big(8);
    p.sent = false;
    p.built = false;
    u.pack = p;
  }
  uint64_t n = in.Big(4);
  for (uint64_t i = 0; in.ok() && i < n; ++i) {
    UnchangedRow::Ref r;
    r.root = in.Raw();
    r.objects = uint32_t(in.Big(4));
    r.attestations = uint32_t(in.Big(4));
    r.ref = std::string(in.Bytes(in.Big(2)));
    u.refs.push_back(std::move(r));
  }
  if (!in.done()) return std::nullopt;
  return u;
}

Result<std::optional<UnchangedRow>> LoadUnchanged(Store& store, const RemoteUrl& url, const std::string& tag) {
  if (url.scheme != RemoteUrl::Scheme::kRegistry) return std::optional<UnchangedRow>();
  std::string key = StatePrefix(url);
  key.push_back('u');
  key.append(tag);
  KI_ASSIGN_OR_RETURN(auto v, store.Get(kRemoteStateTable, key));
  if (!v) return std::optional<UnchangedRow>();
  return DecodeUnchangedRow(*v);
}

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
  if (u.unchanged) {
    KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('u', u.unchanged->first), EncodeUnchangedRow(u.unchanged->second)));
  }
  return Status::OK();
}

}  // namespace ki::remote
