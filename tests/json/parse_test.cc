// Strict JSON and YAML parsing: errors with positions, limits, and YAML 1.2
// core-schema scalar resolution.
#include <string>

#include "ki/json.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

Status ParseErr(std::string_view text, DocFormat f, const ParseLimits& limits = {}) {
  auto r = ParseDocument(text, f, "in", limits);
  if (r.ok()) return Status::OK();
  return r.status();
}

Json MustParse(std::string_view text, DocFormat f) {
  auto r = ParseDocument(text, f, "in");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Json();
}

TEST(ParseJson, Basics) {
  Json j = MustParse(R"({"a": [1, -2, 3.5, true, null, "x"], "b": {}})", DocFormat::kJson);
  EXPECT_EQ(j["a"][0].get<int>(), 1);
  EXPECT_TRUE(j["a"][1].is_number_integer());
  EXPECT_DOUBLE_EQ(j["a"][2].get<double>(), 3.5);
  EXPECT_TRUE(j["b"].is_object());
}

TEST(ParseJson, MalformedReportsLineAndColumn) {
  Status s = ParseErr("{\n  \"a\": 1,\n  \"b\": tru\n}", DocFormat::kJson);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "in:3:"));
  Status s2 = ParseErr("{\"a\": 1,}", DocFormat::kJson);
  EXPECT_TRUE(Contains(s2.message(), "in:1:9: "));
  Status s3 = ParseErr("{\"a\": 1} x", DocFormat::kJson);
  EXPECT_TRUE(Contains(s3.message(), "in:1:10: "));
  EXPECT_FALSE(ParseErr("", DocFormat::kJson).ok());
}

TEST(ParseJson, DuplicateKeyRejectedAtItsPosition) {
  Status s = ParseErr("{\n  \"name\": \"a\",\n  \"x\": {\"k\": 1},\n  \"name\": \"b\"\n}", DocFormat::kJson);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "in:4:3: duplicate key \"name\""));
  // Nested, and a key with an escaped quote inside.
  Status s2 = ParseErr(R"({"o": {"a\"b": 1, "a\"b": 2}})", DocFormat::kJson);
  EXPECT_TRUE(Contains(s2.message(), "in:1:19: duplicate key"));
  // Same key in sibling objects is fine.
  EXPECT_OK(ParseErr(R"([{"a": 1}, {"a": 2}])", DocFormat::kJson));
}

TEST(ParseJson, NanAndInfinityRejected) {
  for (const char* t : {"[NaN]", "[Infinity]", "[-Infinity]", "[1e400]", "[-1e999]"}) {
    Status s = ParseErr(t, DocFormat::kJson);
    EXPECT_TRUE(s.IsInvalidInput()) << t;
    EXPECT_TRUE(Contains(s.message(), "in:1:")) << t;
  }
  EXPECT_TRUE(Contains(ParseErr("[1e400]", DocFormat::kJson).message(), "Infinity"));
}

TEST(ParseJson, SizeAndDepthLimits) {
  std::string big(1 << 20, 'a');
  big.insert(big.begin(), '"');
  big.push_back('"');
  Status s = ParseErr(big, DocFormat::kJson);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "over the limit of 1048576"));

  std::string ok_deep = std::string(64, '[') + std::string(64, ']');
  EXPECT_OK(ParseErr(ok_deep, DocFormat::kJson));
  std::string too_deep = std::string(65, '[') + std::string(65, ']');
  Status d = ParseErr(too_deep, DocFormat::kJson);
  ASSERT_TRUE(d.IsInvalidInput());
  EXPECT_TRUE(Contains(d.message(), "in:1:65: nesting deeper than 64"));
  // Far deeper than any stack would allow for a recursive parser.
  std::string abyss = std::string(200000, '[');
  EXPECT_TRUE(ParseErr(abyss, DocFormat::kJson).IsInvalidInput());
}

TEST(ParseJson, InvalidUtf8Rejected) {
  EXPECT_TRUE(ParseErr("[\"\xff\"]", DocFormat::kJson).IsInvalidInput());
  EXPECT_TRUE(ParseErr(R"(["\ud800"])", DocFormat::kJson).IsInvalidInput());
}

TEST(DetectFormat, ByFirstByte) {
  EXPECT_EQ(DetectFormat("  \n{}"), DocFormat::kJson);
  EXPECT_EQ(DetectFormat("[1]"), DocFormat::kJson);
  EXPECT_EQ(DetectFormat("a: 1"), DocFormat::kYaml);
  EXPECT_EQ(DetectFormat("# c\n{}"), DocFormat::kYaml);
}

TEST(ParseYaml, CoreSchemaScalars) {
  Json j = MustParse(R"(
n1: ~
n2: null
n3:
b1: true
b2: False
i1: 42
i2: -7
i3: 0x1F
i4: 0o17
i5: +3
f1: 1.0
f2: 2.5e-3
f3: .5
f4: -0.0
s1: 2026-08-01T12:00:00Z
s2: 2026-08-01
s3: yes
s4: "1.0"
s5: '42'
s6: 0b101
s7: 1_000
s8: 1.2.3
s9: v1
s10: |
  block
t1: !!str 12
t2: !!float 3
t3: !!int "17"
)",
                     DocFormat::kYaml);
  EXPECT_TRUE(j["n1"].is_null());
  EXPECT_TRUE(j["n2"].is_null());
  EXPECT_TRUE(j["n3"].is_null());
  EXPECT_EQ(j["b1"], true);
  EXPECT_EQ(j["b2"], false);
  EXPECT_EQ(j["i1"], 42);
  EXPECT_EQ(j["i2"], -7);
  EXPECT_EQ(j["i3"], 31);
  EXPECT_EQ(j["i4"], 15);
  EXPECT_EQ(j["i5"], 3);
  EXPECT_TRUE(j["f1"].is_number_float());
  EXPECT_EQ(*Canonicalize(j["f1"]), "1");
  EXPECT_DOUBLE_EQ(j["f2"].get<double>(), 0.0025);
  EXPECT_DOUBLE_EQ(j["f3"].get<double>(), 0.5);
  EXPECT_EQ(*Canonicalize(j["f4"]), "0");
  EXPECT_EQ(j["s1"], "2026-08-01T12:00:00Z");  // timestamps stay strings (no 1.1 timestamp type)
  EXPECT_EQ(j["s2"], "2026-08-01");
  EXPECT_EQ(j["s3"], "yes");  // YAML 1.1 booleans are strings in 1.2
  EXPECT_EQ(j["s4"], "1.0");
  EXPECT_EQ(j["s5"], "42");
  EXPECT_EQ(j["s6"], "0b101");
  EXPECT_EQ(j["s7"], "1_000");
  EXPECT_EQ(j["s8"], "1.2.3");
  EXPECT_EQ(j["s9"], "v1");
  EXPECT_EQ(j["s10"], "block\n");
  EXPECT_EQ(j["t1"], "12");
  EXPECT_TRUE(j["t2"].is_number_float());
  EXPECT_EQ(j["t3"], 17);
}

TEST(ParseYaml, NanAndInfinityRejected) {
  for (const char* t : {"a: .nan", "a: .inf", "a: -.Inf", "a: [1, .NaN]", "a: 1e999", "a: !!float .inf"}) {
    Status s = ParseErr(t, DocFormat::kYaml);
    EXPECT_TRUE(s.IsInvalidInput()) << t;
    EXPECT_TRUE(Contains(s.message(), "in:1:")) << t;
  }
  EXPECT_OK(ParseErr("a: '.nan'", DocFormat::kYaml));  // quoted: a string
}

TEST(ParseYaml, DuplicateKeyWithLineAndColumn) {
  Status s = ParseErr("spec:\n  name: a\n  other: 1\n  name: b\n", DocFormat::kYaml);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "in:4:3: duplicate key \"name\""));
  Status s2 = ParseErr("a: {x: 1, x: 2}", DocFormat::kYaml);
  EXPECT_TRUE(Contains(s2.message(), "in:1:11: duplicate key \"x\""));
}

TEST(ParseYaml, MalformedReportsLineAndColumn) {
  Status s = ParseErr("a: 1\nb: [1, 2\nc: 3\n", DocFormat::kYaml);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "in:3:")) << s.message();
  Status s2 = ParseErr("a: 1\n  b: 2\n", DocFormat::kYaml);
  EXPECT_TRUE(Contains(s2.message(), "in:2:"));
}

TEST(ParseYaml, ComplexAndNullKeysRejected) {
  EXPECT_TRUE(ParseErr("? [a]\n: 1\n", DocFormat::kYaml).IsInvalidInput());
  EXPECT_TRUE(ParseErr("~: 1\n", DocFormat::kYaml).IsInvalidInput());
  EXPECT_TRUE(ParseErr("a: !custom 1\n", DocFormat::kYaml).IsInvalidInput());
}

TEST(ParseYaml, AliasesExpandAndAreBounded) {
  Json j = MustParse("a: &x {k: [1, 2]}\nb: *x\n", DocFormat::kYaml);
  EXPECT_EQ(j["b"], j["a"]);
  // Billion laughs: 9 levels of 10 aliases is 10^9 nodes.
  std::string bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string p = "*l" + std::to_string(i - 1);
    bomb += "l";
    bomb += std::to_string(i);
    bomb += ": &l";
    bomb += std::to_string(i);
    bomb += " [";
    bomb += p;
    for (int k = 1; k < 10; ++k) bomb += ", " + p;
    bomb += "]\n";
  }
  Status s = ParseErr(bomb, DocFormat::kYaml);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "nodes (alias bomb?)"));
  ParseLimits small;
  small.max_yaml_nodes = 10;
  EXPECT_TRUE(ParseErr("a: &x [1, 2, 3]\nb: *x\nc: *x\n", DocFormat::kYaml, small).IsInvalidInput());
}

TEST(ParseYaml, DepthBounded) {
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += "[";
  for (int i = 0; i < 70; ++i) deep += "]";
  Status s = ParseErr(deep, DocFormat::kYaml);
  ASSERT_TRUE(s.IsInvalidInput());
  EXPECT_TRUE(Contains(s.message(), "nesting deeper than 64"));
  // Aliases cannot smuggle extra depth.
  ParseLimits lim;
  lim.max_depth = 3;
  EXPECT_OK(ParseErr("a: &x [[1]]\n", DocFormat::kYaml, lim));
  EXPECT_TRUE(ParseErr("a: &x [[1]]\nb: [*x]\n", DocFormat::kYaml, lim).IsInvalidInput());
}

TEST(ParseYaml, MultipleDocuments) {
  auto docs = ParseDocuments("a: 1\n---\nb: 2\n---\n- 3\n", DocFormat::kYaml, "in");
  ASSERT_OK(docs);
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[1]["b"], 2);
  EXPECT_EQ((*docs)[2][0], 3);
  // ParseDocument wants exactly one.
  Status s = ParseErr("a: 1\n---\nb: 2\n", DocFormat::kYaml);
  EXPECT_TRUE(Contains(s.message(), "expected one YAML document, found 2"));
  // Duplicate keys across documents are fine.
  EXPECT_OK(ParseDocuments("a: 1\n---\na: 2\n", DocFormat::kYaml, "in"));
  auto none = ParseDocuments("# only a comment\n", DocFormat::kYaml, "in");
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST(ParseYaml, SizeLimit) {
  std::string big = "a: " + std::string((1 << 20), 'x') + "\n";
  EXPECT_TRUE(Contains(ParseErr(big, DocFormat::kYaml).message(), "over the limit"));
}

TEST(ParseAuto, JsonIsParsedStrictlyEvenThoughYamlWouldAccept) {
  // YAML would keep one of the duplicates; JSON input goes to the JSON parser.
  EXPECT_TRUE(ParseErr(R"({"a": 1, "a": 2})", DocFormat::kAuto).IsInvalidInput());
  EXPECT_OK(ParseErr("a: 1", DocFormat::kAuto));
}

}  // namespace
}  // namespace ki
