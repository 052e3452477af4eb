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

}  // namespace
}  // namespace ki
