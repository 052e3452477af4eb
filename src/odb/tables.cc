#include "odb/tables.h"

#include <cstring>

#include "index/lmdb.h"
#include "ki/json.h"
#include "util/coding.h"

namespace ki::odb {

namespace {
// Media types most objects have, by a number that stands for them in a meta
// value (docs/format.md, "Index"): never renumber, never reuse.
constexpr std::string_view kMediaTypeCodes[] = {
    "",  // 0: the media type follows as text
    "application/vnd.kernelindex.manifest+json",
    "application/vnd.kernelindex.document+json",
    "application/vnd.kernelindex.document+yaml",
    "application/vnd.ki.catalog.facts.v1+json",
    "application/vnd.ki.catalog.import.v1+json",
    "application/vnd.ki.zstd-dictionary",
    "application/vnd.dsse.envelope.v1+json",
};
constexpr size_t kMediaTypeCodeCount = sizeof(kMediaTypeCodes) / sizeof(kMediaTypeCodes[0]);
}  // namespace

// meta value: type u8, kind u8, location u8, media type code u8, size u64
// LE, stored_size u64 LE, then (code 0) the media type's bytes.
std::string PackMeta(const ObjectInfo& info) {
  uint8_t code = 0;
  for (size_t i = 1; i < kMediaTypeCodeCount; ++i)
    if (info.media_type == kMediaTypeCodes[i]) code = uint8_t(i);
  std::string v;
  v.reserve(20 + (code ? 0 : info.media_type.size()));
  v.push_back(char(info.type));
  v.push_back(char(info.kind ? uint8_t(*info.kind) : 0));
  v.push_back(char(info.location));
  v.push_back(char(code));
  coding::PutFixed64(&v, info.size);
  coding::PutFixed64(&v, info.stored_size);
  if (!code) v.append(info.media_type);
  return v;
}

bool UnpackMeta(std::string_view key, std::string_view v, ObjectInfo* out) {
  if (key.size() != 32 || v.size() < 20) return false;
  out->digest = Digest::FromRaw(key);
  out->type = ObjectType(uint8_t(v[0]));
  out->kind.reset();
  if (uint8_t(v[1]) != 0) out->kind = Kind(uint8_t(v[1]));
  out->location = Location(uint8_t(v[2]));
  out->size = coding::DecodeFixed64(v.data() + 4);
  out->stored_size = coding::DecodeFixed64(v.data() + 12);
  const uint8_t code = uint8_t(v[3]);
  if (code == 0) {
    out->media_type.assign(v.substr(20));
  } else {
    if (code >= kMediaTypeCodeCount || v.size() != 20) return false;
    out->media_type.assign(kMediaTypeCodes[code]);
  }
  return true;
}

std::string KindKey(Kind k, const Digest& d) {
  std::string key(1, char(uint8_t(k)));
  key.append(d.raw());
  return key;
}

std::string DictKey(uint32_t id) {
  std::string key;
  coding::PutBigEndian32(&key, id);
  return key;
}

uint32_t DictKeyId(std::string_view key) {
  if (key.size() != 4) return 0;
  return coding::DecodeBigEndian32(key.data());
}

std::string NameKey(Kind k, std::string_view name) {
  return std::string(KindName(k)) + "/" + std::string(name);
}

std::string NameSetKey(Kind k, std::string_view name, const Digest& d) {
  std::string key = NameKey(k, name);
  key.append(d.raw());
  return key;
}

std::string NamesOfKey(const Digest& d, Kind k, std::string_view name) {
  std::string key(d.raw());
  key.append(NameKey(k, name));
  return key;
}

std::string RefKey(const Digest& target, const Digest& referrer, std::string_view field) {
  std::string key(target.raw());
  key.append(referrer.raw());
  key.append(field);
  return lmdb::FitKey(std::move(key));
}


std::string AbsentValue(const AbsentInfo& a) {
  Json j = Json::object();
  if (!a.media_type.empty()) j["mediaType"] = a.media_type;
  if (a.size) j["size"] = *a.size;
  if (!a.uri.empty()) j["uri"] = a.uri;
  return j.dump();
}

AbsentInfo ParseAbsent(const Digest& d, std::string_view v) {
  AbsentInfo a;
  a.digest = d;
  Json j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (j.contains("mediaType") && j["mediaType"].is_string()) a.media_type = j["mediaType"];
    if (j.contains("size") && j["size"].is_number_unsigned()) a.size = j["size"].get<uint64_t>();
    if (j.contains("uri") && j["uri"].is_string()) a.uri = j["uri"];
  }
  return a;
}

std::string AddedValue(int64_t unix_seconds) {
  std::string v;
  coding::PutFixed64(&v, uint64_t(unix_seconds));
  return v;
}

std::optional<int64_t> ParseAdded(std::string_view v) {
  if (v.size() != 8) return std::nullopt;
  return int64_t(coding::DecodeFixed64(v.data()));
}

std::string FormatPath(const std::string& store_dir) { return store_dir + "/FORMAT"; }
std::string IndexDir(const std::string& store_dir) { return store_dir + "/index"; }
std::string ObjectsDir(const std::string& store_dir) { return store_dir + "/objects"; }
std::string IncomingDir(const std::string& store_dir) {
  return ObjectsDir(store_dir) + "/" + std::string(kIncomingDir);
}

std::string LoosePath(const std::string& store_dir, const Digest& d) {
  std::string hex = d.hex();
  return ObjectsDir(store_dir) + "/" + hex.substr(0, 2) + "/" + hex.substr(2);
}

}  // namespace ki::odb
