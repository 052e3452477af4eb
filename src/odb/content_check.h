// What a frame's header says against what its content says, where the
// content says it (docs/format.md, "Object frame"): the digest covers the
// raw bytes only, so a header byte is covered by the header check (frame
// versions 2 and 3) and, for the kinds of object whose content names them,
// by this check too: the one cover a version 1 frame's kind and media type
// have besides the index entry, which a reindex rebuilds from the header.
// Used by audit (every manifest) and reindex (before it indexes one).
#pragma once

#include <string>
#include <string_view>

#include "ki/manifest.h"
#include "ki/status.h"
#include "odb/frame.h"

namespace ki::odb {

inline constexpr std::string_view kManifestFrameMediaType = "application/vnd.kernelindex.manifest+json";

// `m`: the parsed manifest of a manifest frame (nullptr for a blob).
inline Status ContentAgreesWithHeader(ObjectType type, uint8_t kind, std::string_view media_type, const Manifest* m,
                                      const std::string& where) {
  if (type == ObjectType::kManifest) {
    if (media_type != kManifestFrameMediaType) {
      return Status::Corruption(where + ": a manifest's frame says media type '" + std::string(media_type) +
                                "', not " + std::string(kManifestFrameMediaType));
    }
    if (m && uint8_t(m->kind) != kind) {
      return Status::Corruption(where + ": the frame says kind " + std::to_string(kind) + ", the manifest is a " +
                                std::string(KindName(m->kind)));
    }
  }
  // A blob's media type is whatever its writer said (any blob may carry
  // any type, a dictionary's or a manifest's too): nothing in its content
  // checks it.
  return Status::OK();
}

}  // namespace ki::odb
