// Names and key layouts of the store's LMDB tables (docs/format.md, "Index").
#pragma once

#include <string>
#include <string_view>

#include "ki/digest.h"
#include "ki/store.h"

namespace ki::odb {

// Object bytes (frames) of objects kept in LMDB. Data, not derived.
inline constexpr std::string_view kObjects = "objects";
// Derived from frames; rebuilt by Reindex().
inline constexpr std::string_view kMeta = "meta";    // digest -> packed ObjectInfo
inline constexpr std::string_view kKinds = "kinds";  // kind byte + digest -> ""
inline constexpr std::string_view kRefs = "refs";    // target + referrer + field -> ""
// Facts not recoverable from object bytes (kept by Reindex()).
inline constexpr std::string_view kAbsent = "absent";        // digest -> JSON {mediaType,size,uri}
inline constexpr std::string_view kNames = "names";          // "Kind/name" -> digest
inline constexpr std::string_view kBareNames = "barenames";  // name "\0" Kind -> digest
inline constexpr std::string_view kNamesOf = "namesof";      // digest + "Kind/name" -> ""
// Every manifest ever stored under a name, not only the latest (`names`):
// metadata is editorial, and one name may be carried by several manifests
// (the KernelIndex export has 325 run names shared by 770 runs).
inline constexpr std::string_view kNameSet = "nameset";  // "Kind/name" + digest -> ""
inline constexpr std::string_view kDocs = "docs";            // manifest digest -> document blob digest

std::string PackMeta(const ObjectInfo& info);
bool UnpackMeta(std::string_view key, std::string_view value, ObjectInfo* out);

// objects/<2 hex>/<62 hex>, relative to the store directory.
std::string LoosePath(const std::string& store_dir, const Digest& d);
// objects/incoming: scratch files of streamed writes, whose digest (and so
// loose path) is known only at their end. Not a digest's fan-out folder,
// so audit notes what a killed write left there and reindex removes it.
inline constexpr std::string_view kIncomingDir = "incoming";

}  // namespace ki::odb
