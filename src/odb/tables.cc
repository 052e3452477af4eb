#include "odb/tables.h"

#include <cstring>

namespace ki::odb {

// meta value: type u8, kind u8, location u8, reserved u8, size u64 LE,
// stored_size u64 LE, media type bytes (rest of the value).
std::string PackMeta(const ObjectInfo& info) {
  std::string v;
  v.reserve(20 + info.media_type.size());
  v.push_back(char(info.type));
  v.push_back(char(info.kind ? uint8_t(*info.kind) : 0));
  v.push_back(char(info.location));
  v.push_back(0);
  for (uint64_t x : {info.size, info.stored_size})
    for (int i = 0; i < 8; ++i) v.push_back(char((x >> (8 * i)) & 0xff));
  v.append(info.media_type);
  return v;
}

bool UnpackMeta(std::string_view key, std::string_view v, ObjectInfo* out) {
  if (key.size() != 32 || v.size() < 20) return false;
  out->digest = Digest::FromRaw(key);
  out->type = ObjectType(uint8_t(v[0]));
  out->kind.reset();
  if (uint8_t(v[1]) != 0) out->kind = Kind(uint8_t(v[1]));
  out->location = Location(uint8_t(v[2]));
  uint64_t xs[2] = {0, 0};
  for (int j = 0; j < 2; ++j)
    for (int i = 7; i >= 0; --i) xs[j] = (xs[j] << 8) | uint8_t(v[4 + 8 * j + i]);
  out->size = xs[0];
  out->stored_size = xs[1];
  out->media_type.assign(v.substr(20));
  return true;
}

std::string LoosePath(const std::string& store_dir, const Digest& d) {
  std::string hex = d.hex();
  return store_dir + "/objects/" + hex.substr(0, 2) + "/" + hex.substr(2);
}

}  // namespace ki::odb
