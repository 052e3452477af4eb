// Object frames: how one object's bytes are kept on disk (docs/format.md,
// "Object frame"). The same frame is stored as an LMDB value or as a loose
// file, so objects can move between the two without re-encoding, and the
// index can be rebuilt from frames alone (each frame says what it holds).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ki/dictionary.h"
#include "ki/digest.h"
#include "ki/env.h"
#include "ki/manifest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::odb {

inline constexpr char kFrameMagic[4] = {'K', 'I', 'O', 'B'};
// Version 2 adds a check of the header's own bytes (header-check): the
// payload's hash covers the raw bytes, not the media type beside them, and a
// flipped byte there would otherwise pass every check and be copied into
// the index by a reindex. Version 1 frames (stores written before
// 2026-12-01) are still read; their media type is checked against the
// index only.
inline constexpr uint8_t kFrameVersion = 2;
inline constexpr uint8_t kFrameVersionV1 = 1;
// Version 3 is version 2 with a dictionary ID after the media type: the
// payload is a zstd frame compressed with that dictionary (src/odb/dict.h).
// Written only for such frames; every other frame is still version 2.
inline constexpr uint8_t kFrameVersionDict = 3;
// Version 4 is version 2 or 3 with the media type given by its code
// (MediaTypeCode) in the 2-byte field that otherwise holds its length, and
// no text: 41 bytes less in each frame of a manifest, a document, a facts
// object or a dictionary (most of a store's frames). Flags bit 1 says a
// dict-id follows (what version 3 says by its number). Written for every
// frame whose media type has a code; every other frame is still version 2
// or 3, byte for byte what earlier versions wrote.
inline constexpr uint8_t kFrameVersionCoded = 4;
// Version 5 (store format 13) trims the header and the payload's zstd frame
// (most frames are small: the export's median is 169 bytes, of which 26 were
// ki's header and ~10 zstd's): raw-size is a LEB128 varint instead of 8
// bytes; the media type is one code byte (0: its text follows, its length a
// varint); the payload is a zstd frame without its magic number
// (ZSTD_f_zstd1_magicless), content size or dictionary ID, since ki's header
// already says all three. 11-16 bytes less a frame. Written for every frame
// since format 13; versions 1 to 4 are read as ever.
inline constexpr uint8_t kFrameVersionCompact = 5;
// Version 5 flags: bit 0 compressed, bit 1 a dict-id follows, bit 2 (store
// format 14) the frame is based on another object (FrameBase).
inline constexpr uint8_t kFrameFlagCompressed = 1;
inline constexpr uint8_t kFrameFlagDict = 2;
inline constexpr uint8_t kFrameFlagBased = 4;
// The fixed part of a version 1 to 4 header (magic .. mt-len); version 5's
// fixed part is magic .. flags (kFrameHeaderPrefix), then varints.
inline constexpr size_t kFrameHeaderSize = 4 + 1 + 1 + 1 + 1 + 8 + 2;  // + media type (+ dict-id) (+ check) + payload
inline constexpr size_t kFrameHeaderPrefix = 4 + 1 + 1 + 1 + 1;
inline constexpr size_t kFrameHeaderCheckSize = 4;
inline constexpr size_t kFrameDictIdSize = 4;

// Media types most objects have, by a number that stands for them in a
// version 4 frame and in a meta value (docs/format.md, "Index"): 0 when the
// media type has none. Never renumbered, never reused.
uint8_t MediaTypeCode(std::string_view media_type);
// The media type of a code; empty for 0 and for a code this ki does not know.
std::string_view CodedMediaType(uint8_t code);

// A zstd dictionary's object: kDictionaryMediaType, IsDictionary (public,
// in ki/dictionary.h: ki ls and a collector need them).
using ki::IsDictionary;
using ki::kDictionaryMediaType;

class Dictionary;

// Which header and payload layout a frame is written in: version 5
// (kCompact), what ki writes since store format 13, or versions 2 to 4
// (kLegacy), what it wrote before: kept so that tests can make the frames
// older stores hold.
enum class FrameLayout { kCompact, kLegacy };

// A based frame (version 5, flags bit 2; store format 14) holds an object
// as the difference from another object of the same store, its base: the
// object's bytes are the base's first `prefix` bytes, then the payload
// decoded, then the base's last `suffix` bytes. A manifest's original
// document is the manifest's canonical JSON with its metadata put back, so
// against its manifest only the metadata is left to compress (the export's
// documents take 58% fewer bytes so). The base is named by its store-local
// number (frames never leave their store); it is never itself based, and a
// based frame is kept only in the index (a loose file is never based).
struct FrameBase {
  uint32_t number = 0;
  uint64_t prefix = 0;
  uint64_t suffix = 0;
};

struct FrameHeader {
  ObjectType type = ObjectType::kBlob;
  uint8_t kind = 0;          // Kind value for manifests, 0 for blobs
  bool compressed = false;
  uint64_t raw_size = 0;
  std::string media_type;
  uint32_t dict_id = 0;      // version 3: the zstd dictionary the payload needs
  std::optional<FrameBase> base;  // a based frame's base (version 5, flags bit 2)
  size_t payload_offset = 0;
  uint8_t version = kFrameVersion;  // 1: no header check
};

// Encodes raw bytes into a frame (zstd when it saves space), with `dict`
// when given (a version 3 frame).
std::string EncodeFrame(ObjectType type, uint8_t kind, std::string_view media_type,
                        std::string_view raw, int zstd_level, const Dictionary* dict = nullptr,
                        FrameLayout layout = FrameLayout::kCompact);

// The bytes of a frame before its payload, as EncodeFrame writes them.
std::string EncodeFrameHeader(ObjectType type, uint8_t kind, std::string_view media_type, uint64_t raw_size,
                              bool compressed, uint32_t dict_id = 0, FrameLayout layout = FrameLayout::kCompact);

// A based frame of `raw` against `base_raw` (the base's bytes), its base's
// number left 0 (the writer learns it only when it stores the base:
// NumberBasedFrame); nullopt when it would not be smaller than `plain`,
// the frame EncodeFrame wrote for the same bytes, by `margin` bytes (what
// the number will add). The middle is compressed with `dict` when that
// saves bytes.
std::optional<std::string> EncodeBasedFrame(ObjectType type, uint8_t kind, std::string_view media_type,
                                            std::string_view raw, std::string_view base_raw, int zstd_level,
                                            const Dictionary* dict, size_t plain, size_t margin);
// The frame `based` (EncodeBasedFrame's) with its base's number set.
Result<std::string> NumberBasedFrame(std::string_view based, uint32_t number);

// Whether a frame's header says it is based (flags bit 2 of version 5),
// read from its first bytes without parsing it.
inline bool FrameIsBased(std::string_view frame) {
  return frame.size() >= kFrameHeaderPrefix && uint8_t(frame[4]) == kFrameVersionCompact &&
         (uint8_t(frame[7]) & kFrameFlagBased);
}

// Whether a frame's header says a dictionary ID follows (version 3, or 4
// and 5 with flags bit 1), read from its first bytes without parsing it.
inline bool FrameNamesDictionary(std::string_view frame) {
  if (frame.size() < kFrameHeaderPrefix) return false;
  const uint8_t version = uint8_t(frame[4]);
  return version == kFrameVersionDict ||
         ((version == kFrameVersionCoded || version == kFrameVersionCompact) && (uint8_t(frame[7]) & 2));
}

// The length of the zstd frame at the start of a compressed payload (what
// follows ki's header), whatever the frame's version; an error when the
// bytes are not one whole zstd frame's start.
Result<size_t> CompressedPayloadSize(std::string_view payload, const FrameHeader& h, const std::string& where);

// Where a streamed frame's pieces go (a file being written, standard output).
using ByteSink = std::function<Status(std::string_view)>;

struct StreamedFrame {
  Digest digest;              // SHA-256 of the raw bytes
  uint64_t raw_size = 0;
  uint64_t written = 0;       // bytes passed to the sink
  // True: what went to the sink is the frame EncodeFrame writes for these
  // bytes. False: compression did not make them smaller, so the format
  // wants them raw; what went to the sink is the compressed frame all the
  // same (header flag set), the one copy the caller has to rewrite them from.
  bool smaller = false;
};

// EncodeFrame for the bytes of a mapped file, with bounded memory: hashed
// and compressed as one zstd frame front to back, the pages behind both
// released as it goes. The same level, the size pledged up front and the
// input one contiguous buffer give exactly the bytes EncodeFrame writes
// (zstd's frame header carries the content size and a window fitted to it).
// A file truncated while it is read (MappedFile::ReadGuarded) is
// InvalidInput ("<where>: shrank while being read"), not a SIGBUS.
Result<StreamedFrame> EncodeFrameStream(MappedFile& in, ObjectType type, uint8_t kind, std::string_view media_type,
                                        int zstd_level, const std::string& where, const ByteSink& out,
                                        FrameLayout layout = FrameLayout::kCompact);

// SHA-256 of a mapped file's bytes, read front to back with the pages
// behind released (and guarded, as EncodeFrameStream's reads are).
Result<Digest> HashMapped(MappedFile& in, const std::string& where);

// Reads and parses a frame's header (media type included) from the start
// of `file`, leaving it at the payload. A based frame is Corruption: one
// is never kept in a file.
Result<FrameHeader> ReadFrameHeader(SequentialFile& file, const std::string& where);

// A frame's payload after ReadFrameHeader, decoded a piece at a time as
// the caller asks for it (a blob reader that an upload pulls from), with
// the checks DecodeFrameStream lists. Next returns the next piece (valid
// until the next call), or an empty one at the end, once every check has
// passed; digest() is then the SHA-256 of all pieces, which the caller
// compares. Memory is bounded (about 1 MiB of input, zstd's output buffer
// and its window) whatever raw_size says. `file` (and `dict`) must outlive
// it. Not thread-safe.
class FrameDecoder {
 public:
  FrameDecoder(SequentialFile& file, const FrameHeader& h, std::string where, const Dictionary* dict = nullptr);
  ~FrameDecoder();
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  Result<std::string_view> Next();
  const Digest& digest() const;

 private:
  struct State;
  SequentialFile& file_;
  const std::string where_;
  const Dictionary* dict_;
  std::unique_ptr<State> s_;
};

// DecodeFrame for the payload that follows ReadFrameHeader, passed to `out`
// in pieces as it is decoded; returns the SHA-256 of the raw bytes, which
// the caller compares. Nothing is allocated by raw_size, so there is no
// cap; the checks are DecodeFrame's (the zstd frame's content size equals
// raw_size before a byte is decoded, the length is exact) plus: nothing
// may follow the zstd frame. A failed check is Corruption, found when the
// bytes before it have already gone to `out`.
// A version 3 frame needs its dictionary (`dict`, whose ID must be the
// header's dict_id); a missing one is Corruption.
Result<Digest> DecodeFrameStream(SequentialFile& file, const FrameHeader& h, const std::string& where,
                                 const ByteSink& out, const Dictionary* dict = nullptr);

// Parses and bounds-checks a frame header. `where` names it in errors.
Result<FrameHeader> ParseFrameHeader(std::string_view frame, const std::string& where);

// Decodes a frame to raw bytes; raw_size is checked against max_size before
// allocating, and the decompressed length must equal raw_size exactly. A
// version 3 frame needs `dict`, as DecodeFrameStream does; the zstd frame's
// own dictionary ID must be the header's (and none for other versions). A
// based frame needs its base's bytes (`base`; Corruption without them, or
// when its prefix and suffix do not fit in them); the caller reads the
// base and checks its digest, and then the object's.
Result<std::string> DecodeFrame(std::string_view frame, const FrameHeader& h, uint64_t max_size,
                                const std::string& where, const Dictionary* dict = nullptr,
                                std::optional<std::string_view> base = std::nullopt);

}  // namespace ki::odb
