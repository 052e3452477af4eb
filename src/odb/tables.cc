#include "odb/tables.h"

#include <cstring>
#include <limits>

#include "index/lmdb.h"
#include "ki/json.h"
#include "odb/frame.h"
#include "util/coding.h"

namespace ki::odb {

namespace {
// Format 6's meta layout is told from format 5's by its first byte: bit 7
// set (format 5's first byte is the type, 1 or 2), the type in bits 0-1 and
// the location in bits 2-3 (docs/format.md, "Index").
constexpr uint8_t kMetaV6 = 0x80;
// Format 10: bit 4 set, the object's number follows the added time.
constexpr uint8_t kMetaNumbered = 0x10;

// Format 5 and before: type u8, kind u8, location u8, media type code u8,
// size u64 LE, stored_size u64 LE, then (code 0) the media type's bytes.
// Read (a format-5 store opened read-only), never written.
bool UnpackMetaV5(std::string_view v, ObjectInfo* out) {
  if (v.size() < 20) return false;
  out->type = ObjectType(uint8_t(v[0]));
  if (uint8_t(v[1]) != 0) out->kind = Kind(uint8_t(v[1]));
  out->location = Location(uint8_t(v[2]));
  out->size = coding::DecodeFixed64(v.data() + 4);
  out->stored_size = coding::DecodeFixed64(v.data() + 12);
  const uint8_t code = uint8_t(v[3]);
  if (code == 0) {
    out->media_type.assign(v.substr(20));
  } else {
    if (CodedMediaType(code).empty() || v.size() != 20) return false;
    out->media_type.assign(CodedMediaType(code));
  }
  return true;
}
}  // namespace

// Format 6: flags u8 (0x80 | location << 2 | type), kind u8, media type
// code u8, then LEB128 size, stored size and added (Unix seconds, 0 for an
// unknown age), then (code 0) the media type's bytes. 12 bytes for a
// typical manifest instead of format 5's 20, and the 8-byte `added` value
// and its 32-byte key gone. Format 10 sets flag bit 4 and writes the
// object's number (LEB128, 3 bytes for the export's 48,000) after the
// added time.
std::string PackMeta(const ObjectInfo& info, int64_t added) {
  const uint8_t code = MediaTypeCode(info.media_type);
  std::string v;
  v.reserve(23 + (code ? 0 : info.media_type.size()));
  v.push_back(char(kMetaV6 | (info.number ? kMetaNumbered : 0) | (uint8_t(info.location) & 3) << 2 |
                   (uint8_t(info.type) & 3)));
  v.push_back(char(info.kind ? uint8_t(*info.kind) : 0));
  v.push_back(char(code));
  coding::PutVarint64(&v, info.size);
  coding::PutVarint64(&v, info.stored_size);
  coding::PutVarint64(&v, uint64_t(added > 0 ? added : 0));
  if (info.number) coding::PutVarint64(&v, info.number);
  if (!code) v.append(info.media_type);
  return v;
}

bool UnpackMeta(std::string_view key, std::string_view v, ObjectInfo* out, std::optional<int64_t>* added) {
  if (key.size() != 32 || v.empty()) return false;
  out->digest = Digest::FromRaw(key);
  out->kind.reset();
  out->number = 0;
  if (added) added->reset();
  if (!(uint8_t(v[0]) & kMetaV6)) return UnpackMetaV5(v, out);
  coding::Decoder in(v);
  uint8_t flags, kind, code;
  uint64_t when, number = 0;
  if (!in.GetByte(&flags) || !in.GetByte(&kind) || !in.GetByte(&code) || (flags & 0x60) ||
      !in.GetVarint64(&out->size) || !in.GetVarint64(&out->stored_size) || !in.GetVarint64(&when) ||
      when > uint64_t(std::numeric_limits<int64_t>::max()) ||
      ((flags & kMetaNumbered) &&
       (!in.GetVarint64(&number) || number == 0 || number > std::numeric_limits<uint32_t>::max())) ||
      (code && CodedMediaType(code).empty()) || (code && !in.done())) {
    return false;
  }
  out->number = uint32_t(number);
  out->type = ObjectType(flags & 3);
  out->location = Location((flags >> 2) & 3);
  if (kind) out->kind = Kind(kind);
  out->media_type.assign(code ? CodedMediaType(code) : in.rest());
  if (added && when) *added = int64_t(when);
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

std::string NumberKey(uint32_t n) {
  std::string key;
  coding::PutBigEndian32(&key, n);
  return key;
}

std::optional<uint32_t> KeyNumber(std::string_view key) {
  if (key.size() != 4) return std::nullopt;
  const uint32_t n = coding::DecodeBigEndian32(key.data());
  if (!n) return std::nullopt;
  return n;
}

std::string ObjectKeyPart(const ObjectInfo& info) {
  return info.number ? NumberKey(info.number) : std::string(info.digest.raw());
}

std::string DocsKey(const ObjectInfo& manifest) { return ObjectKeyPart(manifest); }

std::string NamesOfKey(const ObjectInfo& holder, Kind k, std::string_view name) {
  std::string key = ObjectKeyPart(holder);
  key.append(NameKey(k, name));
  return key;
}

namespace {
// The fields of references the KernelIndex schemas fix, by the code that
// stands for them at the end of a refs key (docs/format.md, "Index"): never
// renumber, never reuse. A code is one byte below 0x20, which no JSON
// pointer starts with (a pointer is empty or starts with '/').
constexpr std::string_view kRefFields[] = {
    "",  // 0: the field follows as text
    "/spec/workloadDigest",     "/spec/implementationDigest", "/spec/protocolDigest",
    "/spec/environmentDigest",  "/spec/operationSpecDigest",  "/spec/operation/specDigest",
    "/spec/source/contentDigest", "/spec/configurationDigest", "/spec/modelDigest",
    "/spec/stackDigest",
};
constexpr size_t kRefFieldCount = sizeof(kRefFields) / sizeof(kRefFields[0]);
static_assert(kRefFieldCount < 0x20);
}  // namespace

uint8_t RefFieldCode(std::string_view field) {
  for (size_t i = 1; i < kRefFieldCount; ++i)
    if (field == kRefFields[i]) return uint8_t(i);
  return 0;
}

std::string RefField(std::string_view key_rest) {
  if (key_rest.size() == 1 && uint8_t(key_rest[0]) != 0 && uint8_t(key_rest[0]) < kRefFieldCount) {
    return std::string(kRefFields[uint8_t(key_rest[0])]);
  }
  return lmdb::KeyText(key_rest);
}

std::string RefKey(const Digest& target, std::string_view referrer, std::string_view field) {
  std::string key(target.raw());
  key.append(referrer);
  if (const uint8_t code = RefFieldCode(field)) {
    key.push_back(char(code));
    return key;
  }
  key.append(field);
  return lmdb::FitKey(std::move(key));
}

std::string ObjectsValue(const Digest& d, std::string_view frame) {
  std::string v;
  v.reserve(32 + frame.size());
  v.append(d.raw());
  v.append(frame);
  return v;
}

std::optional<ObjectsRow> SplitObjectsRow(std::string_view key, std::string_view value) {
  auto n = KeyNumber(key);
  if (!n || value.size() < 32) return std::nullopt;
  return ObjectsRow{*n, Digest::FromRaw(value.substr(0, 32)), value.substr(32)};
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

std::optional<int64_t> ParseAddedV5(std::string_view v) {
  if (v.size() != 8) return std::nullopt;
  return int64_t(coding::DecodeFixed64(v.data()));
}

std::optional<int> FormatVersionOf(std::string_view contents) {
  for (int v = 1; v <= kFormatVersion; ++v)
    if (contents == "ki-store " + std::to_string(v) + "\n") return v;
  return std::nullopt;
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
