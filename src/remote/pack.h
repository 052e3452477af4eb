// A pack (docs/format.md, "Bundles"): many ki objects in one OCI blob, so
// that a pull of a bundle costs one request instead of one per object.
//
// The bytes are a POSIX ustar archive whose entries are regular files named
// `sha256/<64 hex>`, each holding one object's raw bytes, compressed as one
// zstd frame: `zstd -d < pack | tar -t` lists it. ki writes only this
// subset and reads nothing else: ReadPack refuses any other entry type, any
// other name, sizes that disagree with what the bundle's parts announce,
// duplicates, bytes that do not hash to their name, and more decompressed
// output than the announced objects can fill.
//
// Why not libarchive: it would add a dozen shared libraries (libxml2 and
// ICU among them) to every ki start, whose start-up time is part of the
// contract, or their static archives to the link; and the reader must
// accept far less than libarchive does anyway. The subset is a 512-byte
// header per entry, written and checked here; zstd is linked already.
//
// Thread-safety: PackWriter is one thread's; ReadPack is reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ki/digest.h"
#include "ki/status.h"

namespace ki::remote {

// The pack layer's title annotation (its media type and the manifest's
// artifactType are in ki/remote.h).
inline constexpr std::string_view kPackTitle = "ki-pack.tar.zst";
// A packed bundle's table of contents (mapping.h, BundleToc): its JSON in
// one zstd frame, written as the pack is (level, no checksum, content size
// in the header), so that the same bundle gives the same bytes.
inline constexpr std::string_view kTocTitle = "ki-toc.json.zst";
Result<std::string> CompressToc(std::string_view json);
// At most `max_bytes` decompressed (a table of contents from a remote is
// refused past it), one frame and nothing after it.
Result<std::string> DecompressToc(std::string_view z, uint64_t max_bytes);
// Fixed, so that the same objects give the same pack digest (with the same
// zstd release: a later one may compress differently, which costs one pack
// upload, never correctness). Level 3 compresses the KernelIndex export's
// JSON about 8x at a few hundred MB/s on one core.
inline constexpr int kPackZstdLevel = 3;
// Objects larger than this travel only as their own blob: one request is
// cheap beside their bytes, and both ends hold a pack in memory.
inline constexpr uint64_t kPackEntryMax = 1 << 20;
// A reader refuses frames that need a larger window (zstd's default limit
// is 128 MiB; level 3 uses 2 MiB).
inline constexpr int kPackWindowLogMax = 23;

// The tar bytes an entry of `size` bytes takes (header + padded content).
inline uint64_t PackEntryBytes(uint64_t size) { return 512 + (size + 511) / 512 * 512; }
// End-of-archive (two zero blocks) plus slack for a tar record padding of
// up to 20 blocks, as tar(1) writes.
inline constexpr uint64_t kPackTrailerMax = 1024 + 10240;

// What decides a pack's bytes: its entries (digest and size, in pack
// order; a digest fixes its object's bytes) and the writer (the archive
// layout, level and settings of PackWriter, and the zstd release linked).
// Equal keys give byte-identical packs, so remote.state can keep a pack's
// digest under its key (docs/format.md, "Remote state") and a push of an
// unchanged bundle need not build it again. kPackWriterRevision goes up
// with any change to PackWriter's output but the level and the zstd
// release (which the key names on their own).
inline constexpr int kPackWriterRevision = 1;
class PackKey {
 public:
  PackKey();
  void Add(const Digest& d, uint64_t size);  // an entry, in pack order
  Digest Finish();

 private:
  Sha256 h_;
};

class PackWriter {
 public:
  // `tar_bytes`: the exact archive size (PackEntryBytes of every entry +
  // 1024), recorded in the zstd frame header.
  explicit PackWriter(uint64_t tar_bytes);
  ~PackWriter();
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  Status Add(const Digest& d, std::string_view bytes);
  // The compressed pack. The writer is spent afterwards.
  Result<std::string> Finish();
  uint64_t entries() const { return entries_; }

 private:
  Status Write(std::string_view tar_bytes, bool end);
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  std::string out_;
  uint64_t entries_ = 0;
};

struct PackReadLimits {
  // The most decompressed bytes accepted: PackEntryBytes of every object
  // the bundle announces + kPackTrailerMax.
  uint64_t max_tar_bytes = 0;
};

// Reads a pack. `expected` says the size the bundle announces for a digest
// (nullopt: not in the bundle, which fails the pack). For each entry, in
// pack order, `entry` gets the digest and bytes once they are checked
// (name, size, SHA-256, not seen before). The first fault ends the read
// with InvalidInput/Corruption naming the entry; entries delivered before
// it were verified and stay usable.
Status ReadPack(std::string_view pack, const PackReadLimits& limits,
                const std::function<std::optional<uint64_t>(const Digest&)>& expected,
                const std::function<Status(const Digest&, std::string&&)>& entry);

}  // namespace ki::remote
