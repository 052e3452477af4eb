// Type-checked field access for JSON from outside (src/json/fields.h).
#include "json/fields.h"

#include <string>

#include "testutil/testutil.h"

namespace ki {
namespace {

TEST(Fields, GetStringNamesWhereAndTheTypeFound) {
  const Json j = {{"mediaType", 5}, {"digest", "sha256:x"}, {"list", Json::array()}};
  auto ok = GetString(j, "digest", "doc");
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, "sha256:x");
  auto absent = GetString(j, "artifactType", "doc", "none");
  ASSERT_OK(absent);
  EXPECT_EQ(*absent, "none");
  auto wrong = GetString(j, "mediaType", "index.json: manifests[0]");
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.status().IsInvalidInput());
  EXPECT_EQ(wrong.status().message(), "index.json: manifests[0]: `mediaType` is a number, not a string");
  EXPECT_EQ(GetString(j, "list", "d").status().message(), "d: `list` is an array, not a string");
  // null reads as an empty object (an absent "annotations"); other types do not.
  EXPECT_EQ(*GetString(Json(), "k", "d", "f"), "f");
  EXPECT_EQ(GetString(Json(7), "k", "d").status().message(), "d is a number, not an object");
}

TEST(Fields, GetUnsignedRefusesAbsentNegativeAndOtherTypes) {
  const Json j = {{"size", 12}, {"neg", -1}, {"text", "12"}, {"real", 1.5}};
  EXPECT_EQ(*GetUnsigned(j, "size", "d"), 12u);
  for (const char* k : {"neg", "text", "real", "absent"}) EXPECT_TRUE(GetUnsigned(j, k, "d").status().IsInvalidInput()) << k;
  EXPECT_EQ(GetUnsigned(j, "text", "d").status().message(), "d: `text` is a string, not an unsigned integer");
  EXPECT_TRUE(GetUnsigned(Json(), "size", "d").status().IsInvalidInput());
}

TEST(Fields, StringOrNeverThrows) {
  const Json j = {{"a", "x"}, {"b", 5}};
  EXPECT_EQ(StringOr(j, "a"), "x");
  EXPECT_EQ(StringOr(j, "b", "y"), "y");
  EXPECT_EQ(StringOr(j, "c"), "");
  EXPECT_EQ(StringOr(Json::array({1}), "a", "z"), "z");
  EXPECT_EQ(StringOr(Json(), "a"), "");
}

// The flashinfer-bench import reads ordered_json (a definition keeps its key
// order): the same functions serve it, with the same messages. It had its own
// copies, worded "workload.uuid must be a string, not a number".
TEST(Fields, OrderedJsonReadsWithTheSameMessages) {
  const OrderedJson o = {{"uuid", 12345}, {"name", "gqa"}, {"size", 7}};
  EXPECT_EQ(*GetString(o, "name", "w.jsonl:2: workload"), "gqa");
  EXPECT_EQ(GetString(o, "uuid", "w.jsonl:2: workload").status().message(),
            "w.jsonl:2: workload: `uuid` is a number, not a string");
  EXPECT_EQ(GetString(Json{{"uuid", 12345}}, "uuid", "w.jsonl:2: workload").status().message(),
            GetString(o, "uuid", "w.jsonl:2: workload").status().message());
  EXPECT_EQ(*GetUnsigned(o, "size", "d"), 7u);
  EXPECT_EQ(StringOr(o, "uuid", "none"), "none");
  EXPECT_EQ(JsonTypeName(o), "an object");
  EXPECT_EQ(CheckObject(OrderedJson::array({1, 2}), "w.jsonl:2: a workload line").message(),
            "w.jsonl:2: a workload line is an array, not an object");
  EXPECT_EQ(WrongType("d.json: inputs.q", "shape", OrderedJson("x"), "an array of axis names").message(),
            "d.json: inputs.q: `shape` is a string, not an array of axis names");
}

TEST(Fields, CheckObjectOfObjectsNamesTheMember) {
  for (bool ordered : {false, true}) {
    const Json j = {{"inputs", {{"q", {{"type", "random"}}}, {"k", "random"}}}, {"axes", 3}};
    auto check = [&](std::string_view key) {
      return ordered ? CheckObjectOfObjects(OrderedJson::parse(j.dump()), key, "w.jsonl:2: workload")
                     : CheckObjectOfObjects(j, key, "w.jsonl:2: workload");
    };
    EXPECT_EQ(check("inputs").message(), "w.jsonl:2: workload: `inputs.k` is a string, not an object");
    EXPECT_EQ(check("axes").message(), "w.jsonl:2: workload: `axes` is a number, not an object");
    EXPECT_TRUE(check("absent").ok());
  }
  EXPECT_TRUE(CheckObjectOfObjects(Json{{"inputs", {{"q", Json::object()}}}}, "inputs", "d").ok());
}

}  // namespace
}  // namespace ki
