// RFC 8785 canonical JSON: number formatting, string escaping, key order.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "ki/json.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

double FromBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

std::string Canon(const Json& v) {
  auto r = Canonicalize(v);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : "";
}

std::string CanonText(std::string_view json) {
  auto doc = ParseDocument(json, DocFormat::kJson, "t");
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  return doc.ok() ? Canon(*doc) : "";
}

// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
TEST(FormatJcsNumber, RfcAppendixB) {
  const struct {
    uint64_t bits;
    const char* text;
  } kCases[] = {
      {0x0000000000000000, "0"},
      {0x8000000000000000, "0"},  // minus zero
      {0x0000000000000001, "5e-324"},
      {0x8000000000000001, "-5e-324"},
      {0x7fefffffffffffff, "1.7976931348623157e+308"},
      {0xffefffffffffffff, "-1.7976931348623157e+308"},
      {0x4340000000000000, "9007199254740992"},
      {0xc340000000000000, "-9007199254740992"},
      {0x4430000000000000, "295147905179352830000"},
      {0x44b52d02c7e14af5, "9.999999999999997e+22"},
      {0x44b52d02c7e14af6, "1e+23"},
      {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
      {0x444b1ae4d6e2ef4e, "999999999999999700000"},
      {0x444b1ae4d6e2ef4f, "999999999999999900000"},
      {0x444b1ae4d6e2ef50, "1e+21"},
      {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
      {0x3eb0c6f7a0b5ed8d, "0.000001"},
      {0x41b3de4355555553, "333333333.3333332"},
      {0x41b3de4355555554, "333333333.33333325"},
      {0x41b3de4355555555, "333333333.3333333"},
      {0x41b3de4355555556, "333333333.3333334"},
      {0x41b3de4355555557, "333333333.33333343"},
      {0xbecbf647612f3696, "-0.0000033333333333333333"},
      {0x43143ff3c1cb0959, "1424953923781206.2"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(FormatJcsNumber(FromBits(c.bits)), c.text) << std::hex << c.bits;
    EXPECT_EQ(Canon(Json(FromBits(c.bits))), c.text) << std::hex << c.bits;
  }
}

TEST(FormatJcsNumber, HardCases) {
  EXPECT_EQ(FormatJcsNumber(1e21), "1e+21");
  EXPECT_EQ(FormatJcsNumber(1e20), "100000000000000000000");
  EXPECT_EQ(FormatJcsNumber(1e-7), "1e-7");
  EXPECT_EQ(FormatJcsNumber(1e-6), "0.000001");
  EXPECT_EQ(FormatJcsNumber(-0.0), "0");
  EXPECT_EQ(FormatJcsNumber(5e-324), "5e-324");
  EXPECT_EQ(FormatJcsNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatJcsNumber(1.0), "1");
  EXPECT_EQ(FormatJcsNumber(-1.5), "-1.5");
  EXPECT_EQ(FormatJcsNumber(123e-20), "1.23e-18");
  EXPECT_EQ(FormatJcsNumber(1.5e300), "1.5e+300");
  EXPECT_EQ(FormatJcsNumber(0.000123), "0.000123");
  EXPECT_EQ(FormatJcsNumber(3.0517578125e-05), "0.000030517578125");
}

TEST(Canonicalize, IntegersGoThroughDoubles) {
  // 2^53 + 1 is not a double: ECMAScript reads it as 2^53.
  EXPECT_EQ(CanonText("9007199254740993"), "9007199254740992");
  EXPECT_EQ(Canon(Json(uint64_t{9007199254740993ULL})), "9007199254740992");
  EXPECT_EQ(Canon(Json(int64_t{-9007199254740993LL})), "-9007199254740992");
  EXPECT_EQ(Canon(Json(std::numeric_limits<uint64_t>::max())), "18446744073709552000");
  EXPECT_EQ(Canon(Json(std::numeric_limits<int64_t>::min())), "-9223372036854776000");
  EXPECT_EQ(CanonText("[1.0, -0, -0.0, 1e21, 1E-7, 100]"), "[1,0,0,1e+21,1e-7,100]");
}

TEST(Canonicalize, RejectsNanAndInfinity) {
  EXPECT_FALSE(Canonicalize(Json(std::nan(""))).ok());
  EXPECT_FALSE(Canonicalize(Json(std::numeric_limits<double>::infinity())).ok());
  Json nested = {{"a", {1, 2, -std::numeric_limits<double>::infinity()}}};
  auto r = Canonicalize(nested);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
}

TEST(Canonicalize, StringEscaping) {
  EXPECT_EQ(Canon(Json("a\"b\\c/d")), R"("a\"b\\c/d")");
  EXPECT_EQ(Canon(Json("\b\f\n\r\t")), R"("\b\f\n\r\t")");
  EXPECT_EQ(Canon(Json(std::string("\x00\x01\x1f\x7f", 4))), "\"\\u0000\\u0001\\u001f\x7f\"");
  // Non-ASCII stays raw UTF-8, including U+2028 and characters above U+FFFF.
  EXPECT_EQ(Canon(Json("\u20ac\u2028\U0001F600")), "\"\u20ac\u2028\U0001F600\"");
  // The RFC's string example: escapes in the input resolve to raw characters.
  EXPECT_EQ(CanonText(R"("\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/")"),
            "\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"");
  EXPECT_FALSE(Canonicalize(Json(std::string("\xff"))).ok());
  EXPECT_FALSE(Canonicalize(Json(std::string("\xed\xa0\x80"))).ok());  // a surrogate in UTF-8
}

TEST(Canonicalize, RfcStructureExample) {
  const char* input = R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })";
  EXPECT_EQ(CanonText(input),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
            "\"string\":\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

TEST(Canonicalize, KeysSortByUtf16CodeUnits) {
  // U+1F600 is the surrogate pair D83D DE00; U+E000 and U+FB33 are single
  // units above the surrogates, so UTF-16 puts the emoji first although its
  // UTF-8 bytes (F0 ...) sort last.
  Json obj = Json::object();
  obj["\uE000"] = 1;
  obj["\U0001F600"] = 2;
  obj["\uFB33"] = 3;
  obj["\u00e9"] = 4;
  obj["z"] = 5;
  obj["\r"] = 6;
  obj["1"] = 7;
  EXPECT_EQ(Canon(obj), "{\"\\r\":6,\"1\":7,\"z\":5,\"\u00e9\":4,\"\U0001F600\":2,\"\uE000\":1,\"\uFB33\":3}");

  EXPECT_TRUE(Utf16Less("\U0001F600", "\uE000"));
  EXPECT_FALSE(Utf16Less("\uE000", "\U0001F600"));
  EXPECT_TRUE(Utf16Less("\uD7FF", "\U0001F600"));  // below the surrogates: BMP first
  EXPECT_TRUE(Utf16Less("a", "ab"));
  EXPECT_FALSE(Utf16Less("ab", "ab"));
  EXPECT_TRUE(Utf16Less("x\U00010000", "x\U0010FFFF"));
}

TEST(Canonicalize, NestedAndEmpty) {
  EXPECT_EQ(CanonText(R"({ "b": [ {}, [], {"y":1,"x":2} ], "a": "" })"), R"({"a":"","b":[{},[],{"x":2,"y":1}]})");
  EXPECT_EQ(CanonText("null"), "null");
  EXPECT_EQ(CanonText("\"\""), "\"\"");
}

}  // namespace
}  // namespace ki
