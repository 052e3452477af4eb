// The compact binary form of catalog.cohorts and catalog.events values
// (catalog/compact_json.h): every value reads back as the JSON it stands
// for, and JSON text (stores before format 9) reads as before.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "catalog/compact_json.h"
#include "testutil/testutil.h"

namespace ki::catalog::tables {
namespace {

Json RoundTrip(const Json& j) {
  Json back;
  EXPECT_TRUE(DecodeStoredJson(EncodeCompactJson(j), &back)) << j.dump();
  return back;
}

// Every row of the export slice (each table's, record_events among them)
// reads back equal, and prints the same text.
TEST(CompactJson, ExportRowsRoundTrip) {
  std::istringstream in(
      test::ReadFileOrDie(test::DataPath("kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl")));
  size_t rows = 0, events = 0, json_bytes = 0, compact_bytes = 0;
  for (std::string line; std::getline(in, line);) {
    const Json row = Json::parse(line)["row"];
    const Json back = RoundTrip(row);
    EXPECT_EQ(back, row) << line;
    EXPECT_EQ(back.dump(), row.dump());
    ++rows;
    if (Json::parse(line)["table"] == "record_events") {
      ++events;
      json_bytes += row.dump().size();
      compact_bytes += EncodeCompactJson(row).size();
    }
  }
  EXPECT_GT(rows, 50u);
  ASSERT_GT(events, 3u);
  // Digests, row ids and timestamps in binary, names coded: well under half.
  EXPECT_LT(compact_bytes * 2, json_bytes) << compact_bytes << " of " << json_bytes;
}

// Strings that only look like a digest, a row id or a timestamp stay text,
// exactly as they were.
TEST(CompactJson, NearMissesStayText) {
  const std::string hex(64, 'a');
  for (const std::string& s :
       {"sha256:" + hex, "SHA256:" + hex, "sha256:" + std::string(64, 'A'), "sha256:" + hex.substr(1),
        std::string("01a006c2-0e4d-7fe6-a376-a7f13ff5a96d"), std::string("01A006C2-0E4D-7FE6-A376-A7F13FF5A96D"),
        std::string("01a006c2_0e4d-7fe6-a376-a7f13ff5a96d"), std::string("2026-03-15T01:10:48.364Z"),
        std::string("2026-02-30T01:10:48.364Z"), std::string("2026-03-15T01:10:48Z"),
        std::string("1969-12-31T23:59:59.999Z"), std::string("2026-03-15T24:00:00.000Z"), std::string("kernel"),
        std::string(""), std::string("\xc3\xa9t\xc3\xa9")}) {
    Json j = {{"s", s}, {"unknownField", s}};
    EXPECT_EQ(RoundTrip(j), j) << s;
  }
}

TEST(CompactJson, NumbersAndNesting) {
  Json j = Json::parse(R"({"a":[0,1,127,128,-1,-129,6326.0,1.5e-300,null,true,false,{"runs":3}],
                           "b":{"c":{"d":[]}},"e":18446744073709551615,"f":-9223372036854775808})");
  Json back = RoundTrip(j);
  EXPECT_EQ(back, j);
  EXPECT_EQ(back.dump(), j.dump());
  EXPECT_TRUE(back["a"][6].is_number_float());
  EXPECT_TRUE(back["a"][1].is_number_unsigned());
}

TEST(CompactJson, ReadsJsonTextAndRefusesMalformedBytes) {
  Json j;
  ASSERT_TRUE(DecodeStoredJson(R"({"kind":"kernel","runs":2})", &j));
  EXPECT_EQ(j["runs"], 2);
  EXPECT_FALSE(DecodeStoredJson("", &j));
  EXPECT_FALSE(DecodeStoredJson("{\"kind\":", &j));
  const std::string good = EncodeCompactJson(Json::parse(R"({"comparisonKey":"sha256:)" + std::string(64, 'b') +
                                                         R"(","at":"2026-03-15T01:10:48.364Z"})"));
  for (size_t n = 1; n < good.size(); ++n) EXPECT_FALSE(DecodeStoredJson(good.substr(0, n), &j)) << n;
  EXPECT_FALSE(DecodeStoredJson(good + "x", &j));  // trailing bytes
  std::string bad_name = good;
  bad_name[3] = char(0xfe);  // the first member's name code: not one of the table's
  EXPECT_FALSE(DecodeStoredJson(bad_name, &j));
}

// A tree deeper than the binary form holds (an export row's event could
// nest so) is kept as JSON text and reads back the same; the binary form's
// reader never recurses past its bound.
TEST(CompactJson, DeepTreesStayText) {
  Json j = 1;
  for (int i = 0; i < 40; ++i) j = Json::array({j});
  const std::string stored = EncodeCompactJson(j);
  EXPECT_EQ(stored.front(), '[');
  EXPECT_EQ(RoundTrip(j), j);
  Json shallow = 1;
  for (int i = 0; i < 30; ++i) shallow = Json::array({shallow});
  EXPECT_EQ(EncodeCompactJson(shallow).front(), '\x02');
  EXPECT_EQ(RoundTrip(shallow), shallow);
  std::string deep(1, '\x02');
  for (int i = 0; i < 100; ++i) deep += "\x0b\x01";  // arrays of one, 100 deep
  deep += '\x00';
  Json back;
  EXPECT_FALSE(DecodeStoredJson(deep, &back));
}

// A string or member name whose bytes are not UTF-8 (a damaged value) is
// refused, as JSON text's parse refuses it, so no later dump throws.
TEST(CompactJson, RefusesBytesThatAreNotUtf8) {
  Json back;
  ASSERT_TRUE(DecodeStoredJson(std::string("\x02\x06\x02ok", 5), &back));
  EXPECT_EQ(back, "ok");
  EXPECT_FALSE(DecodeStoredJson(std::string("\x02\x06\x02o\xff", 5), &back));
  EXPECT_FALSE(DecodeStoredJson(std::string("\x02\x0c\x01\x00\x01\xc0\x00", 7), &back));
  EXPECT_TRUE(DecodeStoredJson(std::string("\x02\x0c\x01\x00\x01x\x00", 7), &back));
}

TEST(CompactJson, RefusesDoublesThatAreNotFinite) {
  // fuzz_compact's find: 0x02, kDouble, eight 0xff bytes (a NaN) decoded to
  // a tree that dumps as null and is not equal to itself.
  auto value = [](uint64_t bits) {
    std::string v("\x02\x05", 2);
    for (int i = 0; i < 8; ++i) v.push_back(char(bits >> (8 * i)));
    return v;
  };
  Json back;
  EXPECT_FALSE(DecodeStoredJson(value(0xffffffffffffffffull), &back));  // NaN
  EXPECT_FALSE(DecodeStoredJson(value(0x7ff0000000000000ull), &back));  // +Infinity
  EXPECT_FALSE(DecodeStoredJson(value(0xfff0000000000000ull), &back));  // -Infinity
  ASSERT_TRUE(DecodeStoredJson(value(0x3ff8000000000000ull), &back));   // 1.5
  EXPECT_EQ(back, 1.5);
  ASSERT_TRUE(DecodeStoredJson(value(0x7fefffffffffffffull), &back));   // the largest double
  EXPECT_EQ(back, std::numeric_limits<double>::max());
  // Inside a tree too: an array of one NaN.
  std::string arr("\x02\x0b\x01", 3);
  arr += value(0x7ff8000000000000ull).substr(1);
  EXPECT_FALSE(DecodeStoredJson(arr, &back));
}

}  // namespace
}  // namespace ki::catalog::tables
