// Object frames: how one object's bytes are kept on disk (docs/format.md,
// "Object frame"). The same frame is stored as an LMDB value or as a loose
// file, so objects can move between the two without re-encoding, and the
// index can be rebuilt from frames alone (each frame says what it holds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ki/manifest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::odb {

inline constexpr char kFrameMagic[4] = {'K', 'I', 'O', 'B'};
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderSize = 4 + 1 + 1 + 1 + 1 + 8 + 2;  // + media type + payload

struct FrameHeader {
  ObjectType type = ObjectType::kBlob;
  uint8_t kind = 0;          // Kind value for manifests, 0 for blobs
  bool compressed = false;
  uint64_t raw_size = 0;
  std::string media_type;
  size_t payload_offset = 0;
};

// Encodes raw bytes into a frame (zstd when it saves space).
std::string EncodeFrame(ObjectType type, uint8_t kind, std::string_view media_type,
                        std::string_view raw, int zstd_level);

// Parses and bounds-checks a frame header. `where` names it in errors.
Result<FrameHeader> ParseFrameHeader(std::string_view frame, const std::string& where);

// Decodes a frame to raw bytes; raw_size is checked against max_size before
// allocating, and the decompressed length must equal raw_size exactly.
Result<std::string> DecodeFrame(std::string_view frame, const FrameHeader& h, uint64_t max_size,
                                const std::string& where);

}  // namespace ki::odb
