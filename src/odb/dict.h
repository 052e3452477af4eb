// zstd dictionaries: what small frames are compressed with (docs/format.md,
// "Dictionaries"). A dictionary is an object of its own (a blob of
// kDictionaryMediaType, src/odb/frame.h); a version 3 frame names it by its
// zstd dictionary ID, which the store's `dicts` table maps to the object.
//
// The dictionaries ki writes with are built in (src/odb/dictionaries, made
// by bench/catalog/train_dicts.sh); a store holds those its frames use,
// stored in the batch that first writes such a frame.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ki/digest.h"
#include "ki/status.h"
#include "ki/store.h"

typedef struct ZSTD_CDict_s ZSTD_CDict;
typedef struct ZSTD_DDict_s ZSTD_DDict;

namespace ki::odb {

// One dictionary's bytes, ready for zstd. Immutable once made, and shared
// by every thread: zstd reads a CDict or DDict without writing it.
class Dictionary {
 public:
  ~Dictionary();
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  // `bytes` must be a zstd dictionary with an ID (ZDICT's format): else
  // InvalidInput naming `where`. `digest`: what the caller knows the bytes
  // to be (not checked here: see LmdbStore::CheckDictionary), else they
  // are hashed.
  static Result<std::shared_ptr<const Dictionary>> Load(std::string bytes, const std::string& where,
                                                        const Digest* digest = nullptr);

  uint32_t id() const { return id_; }
  const Digest& digest() const { return digest_; }  // SHA-256 of bytes(): the object's digest
  std::string_view bytes() const { return bytes_; }
  const ZSTD_DDict* ddict() const { return ddict_; }
  // Made at the first call for each level (a CDict is fitted to one level).
  const ZSTD_CDict* cdict(int level) const;

 private:
  Dictionary() = default;
  std::string bytes_;
  uint32_t id_ = 0;
  Digest digest_;
  ZSTD_DDict* ddict_ = nullptr;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<int, ZSTD_CDict*>> cdicts_;
};

// The ID in a zstd dictionary's header (0: not a dictionary, or none).
uint32_t DictionaryId(std::string_view bytes);
// "zstd dictionary 0x1234abcd", as messages name one.
std::string DictionaryName(uint32_t id);

// The built-in dictionary a writer compresses an object of this type, kind
// and media type with, or nullptr (none fits: plain zstd).
const Dictionary* BuiltinDictionaryFor(ObjectType type, uint8_t kind, std::string_view media_type);
// The built-in dictionary with this ID, or nullptr.
std::shared_ptr<const Dictionary> BuiltinDictionary(uint32_t id);

}  // namespace ki::odb
