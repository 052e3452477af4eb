// Names and layouts of the catalog's LMDB tables (docs/format.md, "Catalog
// tables"). Keys are byte strings; digests are their 32 raw bytes. A held
// object (a run, a facts object) is named by its part (ObjectParts): its
// store number, 4 bytes big-endian, since store format 15; its digest in a
// store of format 14 or before, read as it is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ki/catalog.h"

namespace ki::catalog::tables {

// run part -> run value (EncodeRunValue: binary since store format 5;
// JSON {"cohort": "sha256:…", "kind": "kernel"|"serving", ...entry} before)
inline constexpr std::string_view kRuns = "catalog.runs";
// cohort (32) + run part -> empty: the group's members (each one's entry
// is its catalog.runs value)
inline constexpr std::string_view kCohortRuns = "catalog.cohort";
// cohort (32) -> cohort JSON {kind, parts..., sourceNative, runs}, in the
// compact binary form since store format 9 (compact_json.h)
inline constexpr std::string_view kCohorts = "catalog.cohorts";
// cohort (32) + the run's part (its digest when the store does not hold it)
// -> the export's record_events row (JSON; in the compact binary form since
// store format 9)
inline constexpr std::string_view kEvents = "catalog.events";
// cohort (32) -> the cohort's ranking-v1 order, binary (EncodeRanking).
// Derived from catalog.cohort and catalog.cohorts: every writer of those
// tables rewrites it, so that `ki show` can say where a run stands by
// reading one value instead of ranking the whole cohort.
inline constexpr std::string_view kRanks = "catalog.ranks";
// import object digest (32) -> its summary JSON (the object less `facts`)
inline constexpr std::string_view kImports = "catalog.imports";
// the run's part (its digest when not held) + the facts object's part ->
// empty: the catalog facts about a run
inline constexpr std::string_view kFacts = "catalog.facts";
// SHA-256 (32) of an export row id -> the run's part
inline constexpr std::string_view kIds = "catalog.ids";
// SHA-256 (32) of a superseded row id + the part of the published run
// naming it (its digest when not held) -> empty
inline constexpr std::string_view kSupersededBy = "catalog.supersededby";
// run part -> {"missing": [{"kind", "digest"}]}: what it needs to join a group
inline constexpr std::string_view kPending = "catalog.pending";
// Every catalog table is derived (GroupIndex in groups.cc): rebuilt from
// the objects by reindex, compared with them by audit.

// The fields of an export run row that its manifests do not carry: what a
// facts object keeps (docs/format.md, "Catalog objects"). Nulls are left out.
Json RunFactFields(const Json& row, bool kernel);

// Store format 1 -> 2 (facts.cc): the catalog's tables become objects.
Status UpgradeCatalogV1(Batch& batch);

// How the catalog names a held object in its keys and values (its part):
// by the store's number for it (4 bytes, big-endian) since store format 15
// (kFormatCatalogNumbers), by its 32-byte digest before. An object the
// store does not hold, which has no number (the subject of facts that
// arrived before their run), is named by its digest in either layout; the
// batch that stores it writes those keys again with its number (groups.cc).
// Over a Store or a Batch (Tables), which say the layout
// (format_version()). A store of an older format opened read-only whose
// catalog tables hold numbers (an upgrade killed after its batch committed,
// before FORMAT said 15) is read as what it holds: catalog.runs' keys say.
template <typename Tables>
class ObjectParts {
 public:
  explicit ObjectParts(Tables& t);
  bool numbered() const { return numbered_; }
  // The size of a held object's part: 4 (numbered) or 32.
  size_t held_size() const { return numbered_ ? 4 : 32; }
  // The part naming `d`: its number when numbered() and it is held, else
  // its digest.
  Result<std::string> Of(const Digest& d);
  // The same for an object whose ObjectInfo the caller holds (it is held).
  std::string Of(const ObjectInfo& info) const;
  // The digest a part names: a digest's 32 bytes are it, a number is looked
  // up (nullopt when no held object has it, or the part is neither).
  Result<std::optional<Digest>> DigestOf(std::string_view part);

 private:
  Tables& t_;
  bool numbered_ = false;
};

inline std::string PairKey(std::string_view a, std::string_view b) {
  std::string k(a);
  k.append(b);
  return k;
}
inline std::string PairKey(const Digest& a, std::string_view b) { return PairKey(a.raw(), b); }
inline std::string PairKey(const Digest& a, const Digest& b) { return PairKey(a.raw(), b.raw()); }

// A key of `table` as a message shows it: a digest key as `sha256:<hex>`,
// a cohort + run key as `<cohort> run <run>`, a catalog.rows key as
// `<export table>/<row id>` when printable, anything else as `0x` + the hex
// of its first 16 bytes (and its length), so that a corrupt entry can be
// found without dumping its bytes.
std::string KeyText(std::string_view table, std::string_view key);

// Entry <-> JSON (short field names: one per run in two tables).
Json EntryToJson(const RankEntry& e);
// EntryFromJson is the reference reading of an entry (its field rules and
// defaults); the read paths use EntryFromStored, which must agree with it
// on every input (tests/catalog: CatalogTables.StoredEntriesDecodeAsTheirJson).
RankEntry EntryFromJson(const Digest& run, const Json& j);
// The catalog.runs fields a RankEntry does not carry (catalog.cohort
// entries have neither), read in the same pass when asked: audit checks
// them for every run, and a second parse of each entry cost it a third of
// its time on the full export.
struct RunEntryExtra {
  std::optional<std::string> cohort;  // nullopt: absent, or not a string
  std::optional<std::string> kind;
};
// EntryFromJson of the stored bytes, without a Json tree (the hot path).
// Reads both forms of a catalog.runs value: EncodeRunValue's, and the JSON
// that stores before format 5 hold (a JSON object: its first byte is `{`).
bool EntryFromStored(const Digest& run, std::string_view stored, RankEntry* out, RunEntryExtra* extra = nullptr);

// A catalog.runs value (store format 5; docs/format.md, "Catalog tables"):
// the byte 0x01, the cohort (32 raw bytes), a flags byte (1 serving,
// 2 pub, 4 ret, 8 sup, 16 a value follows, 32 an interval follows), the
// evidence level (1 byte), the value and the interval's low and high
// (IEEE doubles, little-endian) when flagged, then id, name, impl, st, obs
// and unit, each a LEB128 length and its UTF-8 bytes. The JSON it
// replaced spelled the cohort as 71 characters of hex and every field's
// name: 372 bytes a run on the imported export, against about 175.
std::string EncodeRunValue(const RankEntry& e, const Digest& cohort, bool kernel);

// The catalog.ranks value of a ranking: "KIR2" (format 15; "KIR1" before),
// u32le ranked count, u32le ineligible count, then one record per run (its
// part: a 4-byte number, for KIR1 a 32-byte digest; u32le rank; u8 flags:
// 1 = tied with the previous run), ranked runs in display order followed
// by the ineligible ones (rank 0) by id. `numbered`: the layout
// (ObjectParts::numbered); `part_of` gives each run's part in it.
std::string EncodeRanking(const Ranking& r, bool numbered, const std::function<std::string(const Digest&)>& part_of);
struct RankRecord {
  size_t ranked = 0;      // runs ranked in the cohort
  std::optional<std::string> first;  // #1's part, when any run is ranked
  bool found = false;     // the run asked for is in the value
  int rank = 0;           // its rank, 0 when ineligible
  bool tied_with_previous = false;
};
// Looks the run named `part` up in a catalog.ranks value (an empty part
// reads the header and #1 only); false when the value is malformed.
bool FindInRanking(std::string_view stored, std::string_view part, RankRecord* out);
// The parts a catalog.ranks value lists, in its order (empty: malformed).
std::vector<std::string_view> RankingParts(std::string_view stored);

// Every entry of a cohort (its catalog.cohort members, each one's
// catalog.runs entry), in run digest order, from a Store or, with what it
// has written so far, a Batch. `parts`, when given, gets each entry's part.
template <typename Tables>
Result<std::vector<RankEntry>> CohortEntries(Tables& tables, const Digest& cohort,
                                             std::vector<std::string>* parts = nullptr);

}  // namespace ki::catalog::tables
