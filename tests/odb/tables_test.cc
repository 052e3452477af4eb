// The meta value layouts (odb/tables.h, docs/format.md "Index"): format 6's
// packed and unpacked again, format 5's (a store opened read-only before its
// upgrade) still read, and malformed values refused.
#include "odb/tables.h"

#include "index/lmdb.h"
#include "testutil/testutil.h"
#include "util/coding.h"

#include <set>
#include <vector>

namespace ki::odb {
namespace {

ObjectInfo Manifest() {
  ObjectInfo info;
  info.digest = Sha256Of("a run");
  info.type = ObjectType::kManifest;
  info.kind = Kind(3);
  info.size = 1530;
  info.stored_size = 412;
  info.media_type = "application/vnd.kernelindex.manifest+json";
  info.location = Location::kIndex;
  return info;
}

void ExpectSame(const ObjectInfo& a, const ObjectInfo& b) {
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.stored_size, b.stored_size);
  EXPECT_EQ(a.media_type, b.media_type);
  EXPECT_EQ(a.location, b.location);
}

TEST(MetaValue, Format6PacksAManifestInTwelveBytesWithItsAddedTime) {
  const ObjectInfo info = Manifest();
  const std::string v = PackMeta(info, 1796167805);
  // flags, kind, media type code; varints 1530 (2 bytes), 412 (2), the time (5).
  EXPECT_EQ(v.size(), 12u);
  EXPECT_EQ(uint8_t(v[0]), 0x80 | 1 << 2 | 2);
  ObjectInfo out;
  std::optional<int64_t> added;
  ASSERT_TRUE(UnpackMeta(info.digest.raw(), v, &out, &added));
  ExpectSame(out, info);
  EXPECT_EQ(added, 1796167805);
}

TEST(MetaValue, Format6KeepsAnUncodedMediaTypeAndAnUnknownAge) {
  ObjectInfo info;
  info.digest = Sha256Of("a log");
  info.size = uint64_t(5) << 32;  // a 20 GiB loose blob
  info.stored_size = 12345678901;
  info.media_type = "text/x-log; charset=utf-8";
  info.location = Location::kLoose;
  const std::string v = PackMeta(info);
  ObjectInfo out;
  std::optional<int64_t> added = 7;
  ASSERT_TRUE(UnpackMeta(info.digest.raw(), v, &out, &added));
  ExpectSame(out, info);
  EXPECT_FALSE(added.has_value());
}

TEST(MetaValue, AFormat5ValueStillUnpacksWithoutAnAddedTime) {
  const ObjectInfo info = Manifest();
  // Format 5: type, kind, location, code, size u64 LE, stored size u64 LE.
  std::string v5 = {char(2), char(3), char(1), char(1)};
  coding::PutFixed64(&v5, 1530);
  coding::PutFixed64(&v5, 412);
  ObjectInfo out;
  std::optional<int64_t> added;
  ASSERT_TRUE(UnpackMeta(info.digest.raw(), v5, &out, &added));
  ExpectSame(out, info);
  EXPECT_FALSE(added.has_value());
  // Format 5's text form (code 0).
  std::string text = {char(1), char(0), char(2), char(0)};
  coding::PutFixed64(&text, 9);
  coding::PutFixed64(&text, 40);
  text += "text/plain";
  ASSERT_TRUE(UnpackMeta(info.digest.raw(), text, &out));
  EXPECT_EQ(out.media_type, "text/plain");
  EXPECT_EQ(out.location, Location::kLoose);
  EXPECT_EQ(out.size, 9u);
}

TEST(MetaValue, MalformedValuesAreRefused) {
  const ObjectInfo info = Manifest();
  const std::string v = PackMeta(info, 1796167805);
  ObjectInfo out;
  for (size_t n = 0; n < v.size(); ++n)
    EXPECT_FALSE(UnpackMeta(info.digest.raw(), v.substr(0, n), &out)) << "cut to " << n;
  EXPECT_FALSE(UnpackMeta(info.digest.raw(), v + "x", &out));  // trailing byte after a coded type
  std::string reserved = v;
  reserved[0] = char(uint8_t(reserved[0]) | 0x10);
  EXPECT_FALSE(UnpackMeta(info.digest.raw(), reserved, &out));
  std::string code = v;
  code[2] = char(200);
  EXPECT_FALSE(UnpackMeta(info.digest.raw(), code, &out));
  EXPECT_FALSE(UnpackMeta(info.digest.raw().substr(1), v, &out));  // not a digest key
}

// refs keys (format 7): a field the schemas fix is one byte, read back as
// its pointer; any other field stays text (a long one fitted to LMDB's limit).
TEST(RefKey, AFixedFieldIsOneByteAndOthersStayText) {
  const Digest target = Sha256Of("a protocol"), run = Sha256Of("a run");
  const std::string coded = RefKey(target, run.raw(), "/spec/protocolDigest");
  ASSERT_EQ(coded.size(), 65u);
  EXPECT_EQ(coded.substr(0, 32), target.raw());
  EXPECT_EQ(coded.substr(32, 32), run.raw());
  EXPECT_EQ(RefField(coded.substr(64)), "/spec/protocolDigest");
  EXPECT_EQ(RefFieldCode("/spec/workloadDigest"), 1);
  EXPECT_EQ(RefFieldCode("/spec/stackDigest"), 10);
  const std::string text = RefKey(target, run.raw(), "/spec/evidence/logs/0/digest");
  EXPECT_EQ(text.substr(64), "/spec/evidence/logs/0/digest");
  EXPECT_EQ(RefField(text.substr(64)), "/spec/evidence/logs/0/digest");
  // A coded key sorts before every text key of the same pair (codes are
  // below '/'), and a code this ki does not know reads as text, not as
  // another field.
  EXPECT_LT(coded, text);
  EXPECT_EQ(RefField(std::string(1, char(0x1f))), lmdb::KeyText(std::string(1, char(0x1f))));
  const std::string long_field = "/spec/tensors/" + std::string(600, 'x') + "/digest";
  const std::string fitted = RefKey(target, run.raw(), long_field);
  EXPECT_EQ(fitted.size(), lmdb::kMaxKeyBytes);
  EXPECT_NE(RefField(fitted.substr(64)).find("…"), std::string::npos);
}

// Format 12: a refs key's referrer is its number (4 bytes), and an objects
// row (keyed by number) holds the digest, then the frame (or nothing: a
// loose object's row).
TEST(RefKey, ANumberedReferrerTakesFourBytes) {
  const Digest target = Sha256Of("a protocol");
  const std::string key = RefKey(target, NumberKey(300), "/spec/protocolDigest");
  ASSERT_EQ(key.size(), 37u);
  EXPECT_EQ(KeyNumber(key.substr(32, 4)), 300u);
  EXPECT_EQ(RefField(key.substr(36)), "/spec/protocolDigest");
  EXPECT_EQ(RefReferrerPartSize(true), 4u);
  EXPECT_EQ(RefReferrerPartSize(false), 32u);
}

TEST(ObjectsRow, HoldsTheDigestThenTheFrame) {
  const Digest d = Sha256Of("an object");
  auto row = SplitObjectsRow(NumberKey(7), ObjectsValue(d, "KIOB..."));
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->number, 7u);
  EXPECT_EQ(row->digest, d);
  EXPECT_EQ(row->frame, "KIOB...");
  auto loose = SplitObjectsRow(NumberKey(8), d.raw());
  ASSERT_TRUE(loose.has_value());
  EXPECT_TRUE(loose->frame.empty());
  EXPECT_FALSE(SplitObjectsRow(d.raw(), ObjectsValue(d, "x")).has_value());  // a digest key: format 11
  EXPECT_FALSE(SplitObjectsRow(NumberKey(9), d.raw().substr(0, 31)).has_value());
  EXPECT_FALSE(SplitObjectsRow(std::string(4, '\0'), d.raw()).has_value());  // number 0 is never given
}

// FORMAT's contents name a version exactly (the open upgrades or refuses by it).
TEST(FormatLine, NamesEachVersionExactlyAndNothingElse) {
  EXPECT_EQ(FormatVersionOf(kFormatLine), kFormatVersion);
  for (int v = 1; v <= kFormatVersion; ++v) EXPECT_EQ(FormatVersionOf("ki-store " + std::to_string(v) + "\n"), v);
  EXPECT_FALSE(FormatVersionOf("ki-store " + std::to_string(kFormatVersion + 1) + "\n").has_value());
  for (std::string_view bad : {"ki-store 0\n", "ki-store 011\n", "ki-store 11", "ki-store 11\n\n", "ki-store  11\n",
                               "KI-STORE 11\n", ""})
    EXPECT_FALSE(FormatVersionOf(bad).has_value()) << bad;
}

// A set table (lmdb.h) holds the same keys, in the same order, as a plain
// table given the same puts and deletes: Get, Seek (to a key held, between
// keys, inside a run that shares its first 32 bytes, past the last), Next
// and Last read alike. And it stores a run of keys that share their first
// 32 bytes once: fewer pages than the plain table.
TEST(SetTable, ReadsAsAPlainTableOfTheSameKeysAndIsSmaller) {
  test::TempDir dir;
  lmdb::Environment env;
  env.DeclareSetTable("set");
  ASSERT_OK(env.Open(dir.path(), 1ull << 30, false));
  ASSERT_OK(env.OpenAllTables({"set", "plain"}));
  auto txn = env.BeginWrite();
  ASSERT_TRUE(txn.ok()) << test::StatusText(txn);
  auto set = env.Table(*txn, "set"), plain = env.Table(*txn, "plain");
  ASSERT_TRUE(set.ok() && *set && plain.ok() && *plain);
  EXPECT_TRUE(txn->IsSetTable(**set));
  EXPECT_FALSE(txn->IsSetTable(**plain));
  // 40 targets, each with 1 to 60 referrers and a field byte or text.
  std::vector<std::string> keys;
  for (int t = 0; t < 40; ++t) {
    const std::string target(Sha256Of("target " + std::to_string(t)).raw());
    for (int r = 0; r <= (t * 7) % 60; ++r) {
      std::string k = target + std::string(Sha256Of("run " + std::to_string(r)).raw());
      k += r % 5 ? std::string(1, char(1 + r % 10)) : "/spec/evidence/logs/" + std::to_string(r) + "/digest";
      keys.push_back(k);
    }
  }
  // Put in a scrambled order, some twice; then every seventh deleted.
  std::vector<std::string> order = keys;
  for (size_t i = 0; i < order.size(); ++i) std::swap(order[i], order[(i * 7919) % order.size()]);
  for (const auto& k : order) {
    ASSERT_OK(txn->Put(**set, k, ""));
    ASSERT_OK(txn->Put(**plain, k, ""));
  }
  for (size_t i = 0; i < order.size(); i += 3) ASSERT_OK(txn->Put(**set, order[i], ""));  // held already: no-op
  std::set<std::string> held(keys.begin(), keys.end());
  for (size_t i = 0; i < order.size(); i += 7) {
    ASSERT_OK(txn->Del(**set, order[i]));
    ASSERT_OK(txn->Del(**plain, order[i]));
    held.erase(order[i]);
  }
  ASSERT_OK(txn->Del(**set, order[0]));  // gone already: fine, as a plain table's
  // A value or a short key is refused, saying so.
  EXPECT_FALSE(txn->Put(**set, keys[1], "v").ok());
  EXPECT_FALSE(txn->Put(**set, std::string(32, 'a'), "").ok());
  auto scan = [&](MDB_dbi dbi, const std::string& from, size_t n) {
    std::vector<std::string> out;
    auto c = lmdb::Cursor::Open(*txn, dbi);
    EXPECT_TRUE(c.ok());
    auto more = c->Seek(from);
    while (more.ok() && *more && out.size() < n) {
      EXPECT_TRUE(c->value().empty());
      out.emplace_back(c->key());
      more = c->Next();
    }
    return out;
  };
  const std::vector<std::string> all(held.begin(), held.end());
  EXPECT_EQ(scan(**set, "", all.size() + 1), all);
  EXPECT_EQ(scan(**plain, "", all.size() + 1), all);
  const std::vector<std::string> froms = {keys[5], keys[5].substr(0, 40), keys[5].substr(0, 32),
                                          keys[5].substr(0, 10), keys[5] + "z", keys.back() + "z",
                                          std::string(32, '\xff') + "x", std::string(32, '\0') + "x"};
  for (const std::string& from : froms) EXPECT_EQ(scan(**set, from, 5), scan(**plain, from, 5));
  for (const std::string& k : keys) {
    auto a = txn->Get(**set, k), b = txn->Get(**plain, k);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->has_value(), b->has_value());
    EXPECT_EQ(a->has_value(), held.count(k) == 1);
  }
  auto last = txn->LastKey(**set);
  ASSERT_TRUE(last.ok() && *last);
  EXPECT_EQ(**last, all.back());
  // Appends: a key after the last is a new target or a later referrer.
  auto appended = txn->Append(**set, all.back() + "\x01", "");
  ASSERT_TRUE(appended.ok() && *appended);
  appended = txn->Append(**set, all.front(), "");
  ASSERT_TRUE(appended.ok());
  EXPECT_FALSE(*appended);  // not after the last: the caller puts it
  MDB_stat ss, ps;
  ASSERT_EQ(mdb_stat(txn->get(), **set, &ss), 0);
  ASSERT_EQ(mdb_stat(txn->get(), **plain, &ps), 0);
  EXPECT_LT(ss.ms_leaf_pages + ss.ms_branch_pages, ps.ms_leaf_pages + ps.ms_branch_pages);
}

}  // namespace
}  // namespace ki::odb
