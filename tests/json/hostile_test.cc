// Regression tests of issue 18: YAML that expands without bound in bytes,
// and YAML strings that are not UTF-8 (JSON refuses both already).
#include <string>

#include "ki/json.h"
#include "testutil/testutil.h"
#include "util/utf8.h"

namespace ki {
namespace {

Status YamlErr(std::string_view text, const ParseLimits& limits = {}) {
  auto r = ParseDocument(text, DocFormat::kYaml, "in.yaml", limits);
  return r.ok() ? Status::OK() : r.status();
}

// Issue 18 item 4: few nodes, many bytes. 300 KiB string, repeated by
// aliases: within the node limit, far past any sane size once expanded.
TEST(YamlAliasBudget, LargeStringRepeatedIsRefusedEarly) {
  std::string doc = "s: &s \"" + std::string(300 << 10, 'x') + "\"\nl: [";
  for (int i = 0; i < 2000; ++i) doc += i ? ", *s" : "*s";
  doc += "]\n";
  ParseLimits limits;
  limits.max_bytes = 2 << 20;
  Status s = YamlErr(doc, limits);
  ASSERT_TRUE(s.IsInvalidInput()) << s.ToString();
  EXPECT_NE(s.message().find("bytes of scalars (alias bomb?)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in.yaml:2:"), std::string::npos) << s.message();
}

TEST(YamlAliasBudget, NestedAliasesCountTheirBytes) {
  // Each level doubles: 2^20 copies of a 10-byte string after 20 levels.
  std::string doc = "a0: &a0 \"0123456789\"\n";
  for (int i = 1; i <= 20; ++i) {
    const std::string n = std::to_string(i), prev = std::to_string(i - 1);
    doc.append("a").append(n).append(": &a").append(n);
    doc.append(" [*a").append(prev).append(", *a").append(prev).append("]\n");
  }
  Status s = YamlErr(doc);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_NE(s.message().find("alias bomb"), std::string::npos) << s.message();
}

TEST(YamlAliasBudget, OrdinaryAliasesStillWork) {
  auto r = ParseDocument("a: &x {k: [1, \"two\"]}\nb: *x\nc: *x\n", DocFormat::kYaml, "in");
  ASSERT_OK(r);
  EXPECT_EQ((*r)["c"], (*r)["a"]);
  // The budget is 4 x max_bytes: a 93-byte text whose scalars expand to 442
  // bytes passes at max_bytes 120 (480) and fails at 100 (400).
  const std::string ten = "a: &x \"0123456789012345678901234567890123456789\"\nb: [*x, *x, *x, *x, *x, *x, *x, *x, *x, *x]\n";
  ParseLimits limits;
  limits.max_bytes = 120;
  EXPECT_OK(YamlErr(ten, limits));
  limits.max_bytes = 100;
  Status s = YamlErr(ten, limits);
  EXPECT_TRUE(s.IsInvalidInput());
  EXPECT_NE(s.message().find("more than 400 bytes of scalars"), std::string::npos) << s.message();
}

// Issue 18 item 6.
// Found by fuzz_yaml (fuzz/regressions/yaml/hex-integer-past-double-range.yaml):
// a plain scalar 0x followed by hundreds of hex digits (or a decimal of
// 400 digits) resolved to the nearest double, Infinity, which no JSON or
// canonical JSON can hold: the manifest's canonical form then failed far
// from the input. It is refused where it is read, as `.inf` is.
TEST(YamlNumbers, IntegersPastADoublesRangeAreRefusedAsInfinityIs) {
  for (const std::string& big : {"0x" + std::string(300, 'F'), std::string(400, '9'), "-" + std::string(400, '9'),
                                 "0o" + std::string(400, '7')}) {
    SCOPED_TRACE(big.substr(0, 8));
    Status s = YamlErr("n: " + big + "\n");
    ASSERT_TRUE(s.IsInvalidInput()) << s.ToString();
    EXPECT_NE(s.message().find("out of range (Infinity is not allowed)"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("in.yaml:1:"), std::string::npos) << s.message();
  }
  // Large but finite: the nearest double, as before.
  auto ok = ParseDocument("n: 0x" + std::string(40, 'F') + "\n", DocFormat::kYaml, "in.yaml");
  ASSERT_OK(ok);
  EXPECT_TRUE((*ok)["n"].is_number_float());
  EXPECT_OK(Canonicalize(*ok).status());
}

TEST(YamlUtf8, InvalidBytesInScalarsAreRefusedAsJsonRefusesThem) {
  for (std::string bad : {std::string("\xff"), std::string("\xed\xa0\x80"), std::string("\xc0\xaf"),
                          std::string("\xf4\x90\x80\x80"), std::string("ab\xe2\x82")}) {
    std::string yaml = "title: \"t" + bad + "x\"\n";
    Status s = YamlErr(yaml);
    EXPECT_TRUE(s.IsInvalidInput()) << "accepted YAML with bytes " << testing::PrintToString(bad);
    EXPECT_NE(s.message().find("invalid UTF-8"), std::string::npos) << s.message();
    std::string plain = "title: t" + bad + "x\n";
    EXPECT_TRUE(YamlErr(plain).IsInvalidInput()) << "plain scalar";
    std::string key = "t" + bad + ": 1\n";
    EXPECT_TRUE(YamlErr(key).IsInvalidInput()) << "key";
    std::string json = "{\"title\": \"t" + bad + "x\"}";
    EXPECT_FALSE(ParseDocument(json, DocFormat::kJson, "in.json").ok()) << "JSON accepted it";
  }
  auto ok = ParseDocument("title: \"caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac\"\n", DocFormat::kYaml, "in");
  ASSERT_OK(ok);
}

// Found by fuzz_dsse: nlohmann quotes the bytes it gave up on, so a JSON
// error message held ill-formed UTF-8, and dumping it (--json output, a
// DSSE report) threw. Messages are now UTF-8, the bad bytes escaped.
TEST(JsonErrors, MessagesAreUtf8EvenForBadBytes) {
  auto r = ParseDocument("{\"a\": \"x\xff\xfe" + std::string(5000, 'y') + "\"}", DocFormat::kJson, "in.json");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_TRUE(IsValidUtf8(m)) << m;
  EXPECT_NE(m.find("\\xff"), std::string::npos) << m;
  EXPECT_LT(m.size(), 600u) << "the quoted token is cut";
  EXPECT_NO_THROW((void)Json(m).dump());
  EXPECT_EQ(Utf8Printable("ab\xc3\xa9\xff", 100), "ab\xc3\xa9\\xff");
  EXPECT_EQ(Utf8Printable("abcdef", 3), "abc...");
  EXPECT_EQ(Utf8Printable("a\xc3\xa9", 2), "a...");
}

TEST(Utf8InvalidAt, Boundaries) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("\x7f"));
  EXPECT_TRUE(IsValidUtf8("\xc2\x80"));
  EXPECT_TRUE(IsValidUtf8("\xed\x9f\xbf"));      // U+D7FF
  EXPECT_TRUE(IsValidUtf8("\xee\x80\x80"));      // U+E000
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
  EXPECT_EQ(Utf8InvalidAt("ab\xc1\xbf"), 2u);    // overlong
  EXPECT_EQ(Utf8InvalidAt("\xe0\x9f\xbf"), 0u);  // overlong
  EXPECT_EQ(Utf8InvalidAt("\xed\xbf\xbf"), 0u);  // surrogate
  EXPECT_EQ(Utf8InvalidAt("\xf0\x8f\xbf\xbf"), 0u);
  EXPECT_EQ(Utf8InvalidAt("x\x80"), 1u);
  EXPECT_EQ(Utf8InvalidAt("x\xe2\x82"), 1u);  // truncated
}

}  // namespace
}  // namespace ki
