// src/util/coding.h: the byte layouts against values worked out by hand
// (LEB128 as in the DWARF standard's examples), and a Decoder that refuses
// short, overlong and trailing input instead of reading past it.
#include "util/coding.h"

#include <limits>

#include "testutil/testutil.h"

namespace ki::coding {
namespace {

TEST(Coding, FixedWidthIsLittleEndianAndBigEndianKeysSortAsNumbers) {
  std::string s;
  PutFixed32(&s, 0x01020304u);
  PutFixed64(&s, 0x1122334455667788ull);
  EXPECT_EQ(s, std::string("\x04\x03\x02\x01\x88\x77\x66\x55\x44\x33\x22\x11", 12));
  EXPECT_EQ(DecodeFixed32(s.data()), 0x01020304u);
  EXPECT_EQ(DecodeFixed64(s.data() + 4), 0x1122334455667788ull);

  std::string a, b;
  PutBigEndian32(&a, 255);
  PutBigEndian32(&b, 256);
  EXPECT_EQ(a, std::string("\0\0\0\xff", 4));
  EXPECT_LT(a, b);  // LMDB's byte order is the numbers' order
  EXPECT_EQ(DecodeBigEndian32(b.data()), 256u);
}

TEST(Coding, VarintsAreLeb128) {
  const std::pair<uint64_t, std::string> cases[] = {
      {0, std::string("\x00", 1)},
      {2, "\x02"},
      {127, "\x7f"},
      {128, "\x80\x01"},
      {129, "\x81\x01"},
      {12857, "\xb9\x64"},
      {1796167805, "\xfd\xb0\xbd\xd8\x06"},  // a Unix time of 2026: 5 bytes
      {std::numeric_limits<uint64_t>::max(), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"},
  };
  for (const auto& [v, bytes] : cases) {
    std::string s;
    PutVarint64(&s, v);
    EXPECT_EQ(s, bytes) << v;
    EXPECT_EQ(VarintLength(v), bytes.size()) << v;
    Decoder d(s);
    uint64_t got = 0;
    ASSERT_TRUE(d.GetVarint64(&got)) << v;
    EXPECT_EQ(got, v);
    EXPECT_TRUE(d.done());
  }
}

TEST(Coding, DecoderRefusesShortOverlongAndTrailingInput) {
  uint64_t v;
  EXPECT_FALSE(Decoder(std::string_view("\x80\x80", 2)).GetVarint64(&v));  // no last byte
  // 11 bytes, and a 10th byte with bits past u64.
  EXPECT_FALSE(Decoder("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01").GetVarint64(&v));
  EXPECT_FALSE(Decoder("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02").GetVarint64(&v));
  uint32_t u;
  EXPECT_FALSE(Decoder("abc").GetFixed32(&u));

  std::string s;
  PutLengthPrefixed(&s, "kernel");
  PutDouble(&s, 0.25);
  Decoder d(s);
  std::string text;
  double x;
  ASSERT_TRUE(d.GetLengthPrefixed(&text));
  ASSERT_TRUE(d.GetDouble(&x));
  EXPECT_EQ(text, "kernel");
  EXPECT_EQ(x, 0.25);
  EXPECT_TRUE(d.done());

  // A length past the end is refused, not read past.
  std::string bad;
  PutVarint64(&bad, 7);
  bad += "abc";
  Decoder e(bad);
  EXPECT_FALSE(e.GetLengthPrefixed(&text));
  EXPECT_FALSE(Decoder(std::string_view("\x02z", 2)).GetLengthPrefixed(&text));
}

}  // namespace
}  // namespace ki::coding
