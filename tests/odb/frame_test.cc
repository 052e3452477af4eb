#include "odb/frame.h"

#include "testutil/testutil.h"

namespace ki::odb {
namespace {

TEST(Frame, RoundTripCompressedAndRaw) {
  std::string text(10000, 'a');
  for (const std::string& raw : {text, std::string("x"), std::string()}) {
    std::string f = EncodeFrame(ObjectType::kBlob, 0, "text/plain", raw, 3);
    auto h = ParseFrameHeader(f, "t");
    ASSERT_OK(h);
    EXPECT_EQ(h->media_type, "text/plain");
    EXPECT_EQ(h->raw_size, raw.size());
    auto back = DecodeFrame(f, *h, 1 << 20, "t");
    ASSERT_OK(back);
    EXPECT_EQ(*back, raw);
  }
  // Repetitive text is stored compressed.
  std::string f = EncodeFrame(ObjectType::kManifest, 8, "m", text, 3);
  EXPECT_LT(f.size(), 200u);
}

TEST(Frame, HeaderSizeIsCappedBeforeAllocating) {
  std::string f = EncodeFrame(ObjectType::kBlob, 0, "", std::string(100, 'z'), 3);
  // Claim 2^60 bytes: decoding must refuse without trying to allocate.
  for (int i = 0; i < 8; ++i) f[8 + i] = i == 7 ? 0x10 : 0;
  // A crafted header, its check made to match (damage would fail the check).
  f.replace(kFrameHeaderSize, kFrameHeaderCheckSize, Sha256Of(f.substr(0, kFrameHeaderSize)).raw().substr(0, 4));
  auto h = ParseFrameHeader(f, "t");
  ASSERT_OK(h);
  auto r = DecodeFrame(f, *h, 1 << 20, "t");
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
}

TEST(Frame, RejectsDamage) {
  std::string f = EncodeFrame(ObjectType::kBlob, 0, "text/plain", std::string(5000, 'q'), 3);
  std::string bad_magic = f;
  bad_magic[0] = 'X';
  EXPECT_TRUE(ParseFrameHeader(bad_magic, "t").status().IsCorruption());
  std::string bad_version = f;
  bad_version[4] = 9;
  auto h = ParseFrameHeader(bad_version, "t");
  EXPECT_TRUE(h.status().IsCorruption());
  EXPECT_NE(h.status().message().find("version 9"), std::string::npos);
  std::string truncated = f.substr(0, f.size() - 3);
  auto th = ParseFrameHeader(truncated, "t");
  ASSERT_OK(th);
  EXPECT_TRUE(DecodeFrame(truncated, *th, 1 << 20, "t").status().IsCorruption());
  EXPECT_TRUE(ParseFrameHeader(f.substr(0, 10), "t").status().IsCorruption());
}

// Version 2's header check (issue 25.2): a flipped byte anywhere in the
// header, the media type included, is corruption before any byte is
// decoded; the payload's digest cannot see the media type.
TEST(Frame, EveryHeaderByteIsChecked) {
  const std::string f = EncodeFrame(ObjectType::kBlob, 0, "text/plain", std::string(5000, 'q'), 3);
  const size_t header = kFrameHeaderSize + 10 + kFrameHeaderCheckSize;
  for (size_t i = 5; i < header; ++i) {
    for (uint8_t bit : {0x01, 0x20, 0x80}) {
      std::string bad = f;
      bad[i] = char(uint8_t(bad[i]) ^ bit);
      auto h = ParseFrameHeader(bad, "t");
      EXPECT_TRUE(h.status().IsCorruption()) << "byte " << i << " bit " << int(bit);
    }
  }
  std::string mt = f;
  mt[kFrameHeaderSize + 2] = 'X';  // "teXt/plain"
  auto h = ParseFrameHeader(mt, "t");
  ASSERT_TRUE(h.status().IsCorruption());
  EXPECT_NE(h.status().message().find("damaged"), std::string::npos) << h.status().message();
}

// Frames written before version 2 (no header check) are still read.
TEST(Frame, VersionOneFramesAreRead) {
  const std::string v2 = EncodeFrame(ObjectType::kBlob, 0, "text/plain", "hello", 3);
  std::string v1 = v2;
  v1[4] = 1;
  v1.erase(kFrameHeaderSize + 10, kFrameHeaderCheckSize);
  auto h = ParseFrameHeader(v1, "t");
  ASSERT_OK(h);
  EXPECT_EQ(h->version, 1);
  EXPECT_EQ(h->media_type, "text/plain");
  auto back = DecodeFrame(v1, *h, 1 << 20, "t");
  ASSERT_OK(back);
  EXPECT_EQ(*back, "hello");
}

}  // namespace
}  // namespace ki::odb
