// Names and key layouts of the store's LMDB tables (docs/format.md, "Index").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ki/digest.h"
#include "ki/store.h"

namespace ki::odb {

// Object bytes (frames) of objects kept in LMDB. Data, not derived.
// Format 12: the object's number (NumberKey) -> its digest's 32 bytes, then
// its frame (ObjectsValue); a loose object's row holds the digest alone. So
// every held object has a row, and the table is the store's number ->
// digest map, which refs' numbered referrers are read back through.
// Formats 11 and before: digest -> frame, for an object kept in LMDB only.
inline constexpr std::string_view kObjects = "objects";
// Derived from frames; rebuilt by Reindex().
// digest -> packed ObjectInfo and, since format 6, when the store first
// indexed the object (PackMeta). That time is recorded, not derived: reindex
// carries it over from the entry it replaces.
inline constexpr std::string_view kMeta = "meta";
// Formats 7 and before: kind byte + digest -> "", the manifests of each
// kind. Format 8 reads each object's kind from meta instead (the table was
// 220 of the imported export's 8,224 pages); the upgrade to format 8 and
// reindex empty it.
inline constexpr std::string_view kKinds = "kinds";
// target + referrer + field -> "". A set table since format 11 (the
// target stored once for its referrers); before, a plain one whose value
// was the reference's artifact URI. The referrer is its number since
// format 12 (4 bytes instead of its digest's 32: RefReferrerPart).
inline constexpr std::string_view kRefs = "refs";
// zstd dictionary ID (4 bytes, big-endian) -> digest of the dictionary
// object holding it (of several with one ID, the smallest digest).
inline constexpr std::string_view kDicts = "dicts";
// Facts not recoverable from object bytes (kept by Reindex()).
inline constexpr std::string_view kAbsent = "absent";        // digest -> JSON {mediaType,size,uri}
// Formats 10 and before: "Kind/name" -> the digest of the name's latest
// holder. Format 11 marks that holder's nameset entry instead (kNameLatest:
// the table repeated every nameset key, 448 of the imported export's 7,391
// pages); the upgrade to format 11 moves each entry there and empties it.
inline constexpr std::string_view kNames = "names";
// Formats 3 and before: name "\0" Kind -> digest, a copy of names that
// resolving a bare name read. Format 4 resolves one by a names lookup per
// kind instead (1.8 MB of the imported export's 43 MB); the upgrade to
// format 4 and reindex empty the table.
inline constexpr std::string_view kBareNames = "barenames";
// namesof: the holder's number (4 bytes, big-endian; format 9 and before:
// its digest) + "Kind/name" -> "" (NamesOfKey).
inline constexpr std::string_view kNamesOf = "namesof";
// Every manifest ever stored under a name, not only the latest (`names`):
// metadata is editorial, and one name may be carried by several manifests
// (the KernelIndex export has 325 run names shared by 770 runs).
// "Kind/name" + digest -> "" for a holder, kNameLatest for the name's
// latest holder (format 11: what `names` said before), the one a REF
// naming it resolves to first.
inline constexpr std::string_view kNameSet = "nameset";
inline constexpr std::string_view kNameLatest = "\x01";
// The manifest's number (format 9 and before: its digest) -> the document
// blob's digest (DocsKey).
inline constexpr std::string_view kDocs = "docs";
// Format 10: the next object number, one entry (kSeqObjects -> u32
// big-endian). Recorded: numbers are never reused, so the counter is kept
// by reindex and by gc, which leaves the numbers of what it removes unused.
inline constexpr std::string_view kSeq = "seq";
inline constexpr std::string_view kSeqObjects = "objects";
// Tags (ki/tag.h): recorded, like names; kept by Reindex().
inline constexpr std::string_view kTags = "tags";  // tag name -> digest
// Formats 5 and before: when the store first indexed each object (ki gc's
// age of an object), digest -> u64 LE Unix seconds. Format 6 keeps that time
// in the object's meta value (its 32-byte key and 8 bytes were 2.5 MB of the
// imported export); the upgrade to format 6 moves each into meta and
// empties the table.
inline constexpr std::string_view kAdded = "added";

// `added`: Unix seconds when the store first indexed the object; 0 (or
// less) for an unknown age. info.number (format 10) is packed when not 0.
std::string PackMeta(const ObjectInfo& info, int64_t added = 0);
// Reads format 10's layout, format 6's (no number: out->number is 0) and
// format 5's (which has no added time either). `added` (when given) is set
// to the object's added time, or nullopt when unknown.
bool UnpackMeta(std::string_view key, std::string_view value, ObjectInfo* out,
                std::optional<int64_t>* added = nullptr);

// ---- keys: every key of the tables above is built here

std::string KindKey(Kind k, const Digest& d);              // kinds (format 7 and before)
std::string DictKey(uint32_t id);                          // dicts
uint32_t DictKeyId(std::string_view key);                  // 0 when not a dicts key
std::string NameKey(Kind k, std::string_view name);        // names: "Kind/name"
// nameset: "Kind/name" + digest. metadata.name is at most 200 characters
// (the KernelIndex schemas), so the key is far below LMDB's limit.
std::string NameSetKey(Kind k, std::string_view name, const Digest& d);
// Object numbers in keys: 4 bytes big-endian, so that LMDB's key order is
// the numbers' order.
std::string NumberKey(uint32_t n);
// The number of a 4-byte key (nullopt for another length, or 0).
std::optional<uint32_t> KeyNumber(std::string_view key);
// The part of an index key that stands for a held object: its number, or
// (an object without one: a store of format 9 or before read as it is)
// its digest.
std::string ObjectKeyPart(const ObjectInfo& info);
// docs: the manifest's ObjectKeyPart.
std::string DocsKey(const ObjectInfo& manifest);
// namesof: the holder's ObjectKeyPart + "Kind/name"; a scan of
// ObjectKeyPart(holder) gives its names.
std::string NamesOfKey(const ObjectInfo& holder, Kind k, std::string_view name);
// The length of a namesof or docs key's object part: 4 in a numbered store
// (format 10), else 32.
inline size_t ObjectKeyPartSize(bool numbered) { return numbered ? 4 : 32; }
// refs: target + referrer + the field: since format 7 one byte, the code of
// a pointer the schemas fix (RefFieldCode: /spec/workloadDigest and the
// like, 99.6% of the export's references), else the JSON pointer's text.
// A pointer runs through user-chosen names (tensors have no length limit),
// so the key is fitted to LMDB's limit; Referrers shows a shortened field
// with "…".
// `referrer`: its key part, its number (format 12: NumberKey) or its
// digest's 32 bytes (formats 11 and before).
std::string RefKey(const Digest& target, std::string_view referrer, std::string_view field);
inline size_t RefReferrerPartSize(bool objects_numbered) { return objects_numbered ? 4 : 32; }
// objects (format 12): a row's value, the digest and then the frame (empty
// for a loose object's row).
std::string ObjectsValue(const Digest& d, std::string_view frame);
// A format-12 objects row read back; nullopt when malformed (a key that is
// no number, a value shorter than a digest).
struct ObjectsRow {
  uint32_t number = 0;
  Digest digest;
  std::string_view frame;  // empty: a loose object's row
};
std::optional<ObjectsRow> SplitObjectsRow(std::string_view key, std::string_view value);
// 1.. for a pointer that has a code, 0 for the others.
uint8_t RefFieldCode(std::string_view field);
// The field of a refs key from its bytes after the two digests: a code's
// pointer, or the text (lmdb::KeyText: a shortened one ends in "…").
std::string RefField(std::string_view key_rest);
std::string AbsentValue(const AbsentInfo& a);
// A format-5 `added` value (u64 LE); nullopt for one that is not 8 bytes.
std::optional<int64_t> ParseAddedV5(std::string_view v);
AbsentInfo ParseAbsent(const Digest& d, std::string_view v);

// ---- paths: every path inside a store directory is built here

// FORMAT's contents. Format 2 (2026-12): catalog facts are objects and every
// catalog table is derived. Format 3: frames may be compressed with a zstd
// dictionary (frame version 3), which a ki that reads format 2 cannot
// decode, so it must refuse the store instead. A format-1 store is upgraded
// when it is opened; a format-2 one when it is opened for writing (nothing
// to convert: its frames stay as they are).
// Format 4: barenames is no longer kept (resolve reads names); a ki that
// reads format 3 would resolve no bare name of a format-4 store, so it
// must refuse it. A format-3 store is upgraded when it is opened for
// writing (barenames emptied); read as it is otherwise.
// Format 5: catalog.runs values are binary (the catalog's EncodeRunValue),
// which a ki that reads format 4 cannot decode. A format-4 store is
// upgraded when it is opened for writing (each value encoded again); read
// as it is otherwise (both forms decode).
// Format 6: meta values are varint-coded and carry the added time; the
// `added` table is no longer kept. A ki that reads format 5 would misread
// every meta value. A format-5 store is upgraded when it is opened for
// writing (each meta value packed again with its added time, `added`
// emptied); read as it is otherwise (both layouts unpack). Frames written
// to a format-6 store name a coded media type by its code (frame version 4,
// frame.h), which a ki that reads format 5 cannot parse either.
// Format 7: a refs key ends in the one-byte code of its field when it has
// one (RefKey), which a ki that reads format 6 would show as the field and
// audit as a fault; a format-6 store is upgraded when it is opened for
// writing (every refs key written again).
// Format 8: no kinds table (ForEachOfKind scans meta), which a ki that
// reads format 7 would take for a store without manifests; a format-7
// store is upgraded when it is opened for writing (kinds emptied).
// Format 9: catalog.cohorts and catalog.events values are compact binary
// JSON (the catalog's EncodeCompactJson), which a ki that reads format 8
// would take for malformed entries; a format-8 store is upgraded when it is
// opened for writing (each value encoded again); read as it is otherwise
// (both forms decode).
// Format 10: every object has a number (ObjectInfo::number, in its meta
// value; the next one in `seq`), and docs and namesof keys hold the number
// instead of the digest. A ki that reads format 9 would find no document
// and no name of any object; a format-9 store is upgraded when it is opened
// for writing (every object numbered in digest order, docs and namesof
// written again), read as it is otherwise (an object without a number is
// keyed by its digest: ObjectKeyPart).
// Format 11: the latest holder of a name is marked in nameset (kNameLatest)
// and `names` is no longer kept; refs is a set table (lmdb.h: the target's
// 32 bytes stored once for all its referrers; no values, so refs' artifact
// URIs, which nothing read, are gone). A ki that reads format 10 would find
// no latest holder of any name and misread refs (LMDB refuses a set table
// opened as a plain one only once its handle is stale); a format-10 store
// is upgraded when it is opened for writing (names folded into nameset,
// refs made again with the same keys), read as it is otherwise (names read
// from `names`, refs' keys read the same).
// Format 12: `objects` is keyed by object number, each row the digest and
// the frame (a loose object's row the digest alone), and a refs key holds
// its referrer's number instead of its digest. A ki that reads format 11
// would find no object's bytes; a format-11 store is upgraded when it is
// opened for writing (objects and refs written again), read as it is
// otherwise (objects by digest, refs' referrers as digests).
// Format 13: frames are written in frame version 5 (frame.h: a varint
// raw size, a one-byte media type code, zstd payloads without magic,
// content size or dictionary ID), which a ki that reads format 12 would
// report as corrupt; a format-12 store is upgraded when it is opened for
// writing (FORMAT rewritten: its frames stay as they are, versions 1 to 4
// being read as ever), read as it is otherwise.
// Format 14: documents may be frames based on their manifests (frame.h,
// FrameBase), which a ki that reads format 13 would report as corrupt; a
// format-13 store is upgraded when it is opened for writing (FORMAT
// rewritten: its frames stay as they are).
// Format 15 (kFormatCatalogNumbers): the catalog's tables name held
// objects by their numbers instead of their digests (docs/format.md,
// "Catalog tables"); a ki that reads format 13 would find no run in any
// group. A store of format 13 or 14 is upgraded when it is opened for
// writing (every derived index rebuilt from the objects), read as it is
// otherwise (the catalog reads the digest layout).
inline constexpr int kFormatVersion = 15;
inline constexpr std::string_view kFormatLine = "ki-store 15\n";
static_assert(kFormatVersion >= kFormatCatalogNumbers);
// The format a FORMAT file's contents name: "ki-store N\n" exactly, N from
// 1 to kFormatVersion; nullopt for anything else.
std::optional<int> FormatVersionOf(std::string_view contents);
std::string FormatPath(const std::string& store_dir);  // FORMAT
std::string IndexDir(const std::string& store_dir);    // index/ (LMDB's data.mdb, lock.mdb)
std::string ObjectsDir(const std::string& store_dir);  // objects/
// objects/<2 hex>/<62 hex>.
std::string LoosePath(const std::string& store_dir, const Digest& d);
// objects/incoming: scratch files of streamed writes, whose digest (and so
// loose path) is known only at their end. Not a digest's fan-out folder,
// so audit notes what a killed write left there and reindex removes it.
inline constexpr std::string_view kIncomingDir = "incoming";
std::string IncomingDir(const std::string& store_dir);

}  // namespace ki::odb
