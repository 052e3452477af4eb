// zstd dictionaries a store compresses small objects with (docs/format.md,
// "Dictionaries"): what tells one from the objects users store.
#pragma once

#include <string_view>

#include "ki/store.h"

namespace ki {

// A dictionary is a blob whose bytes are the zstd dictionary, named by the
// frames compressed with it. It is the store's own, as its tables are:
// `ki ls` does not list it, and it is never garbage (a frame names it by
// ID, not by a reference a walk would follow), so a collector keeps every
// one.
inline constexpr std::string_view kDictionaryMediaType = "application/vnd.ki.zstd-dictionary";
inline bool IsDictionary(const ObjectInfo& info) {
  return info.type == ObjectType::kBlob && info.media_type == kDictionaryMediaType;
}

}  // namespace ki
