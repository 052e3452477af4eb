// Streamed frames (EncodeFrameStream, DecodeFrameStream): the bytes must be
// the ones EncodeFrame writes, so that digests, dedup and transfers do not
// depend on which path stored an object.
#include <algorithm>
#include <cstring>
#include <random>

#include "odb/frame.h"
#include "testutil/string_file.h"
#include "testutil/testutil.h"

namespace ki::odb {
namespace {

using test::StringFile;

// A MappedFile over a string, counting what was released.
class StringMap final : public MappedFile {
 public:
  explicit StringMap(const std::string& data) : data_(data) {}
  std::string_view data() const override { return data_; }
  void Release(uint64_t offset) override { released = std::max(released, offset); }
  uint64_t released = 0;

 private:
  const std::string& data_;
};

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char(g());
  return s;
}

// Text zstd compresses, but not to nothing: words from a small vocabulary.
std::string Words(size_t n, uint32_t seed) {
  static const char* kWords[] = {"kernel ", "latency ", "0.125 ", "gqa ", "decode ", "\n", "tensor ", "sm_90a "};
  std::mt19937 g(seed);
  std::string s;
  while (s.size() < n) s += kWords[g() % 8];
  s.resize(n);
  return s;
}

struct Streamed {
  StreamedFrame info;
  std::string bytes;
};

Streamed Encode(const std::string& raw) {
  StringMap in(raw);
  Streamed s;
  auto r = EncodeFrameStream(in, ObjectType::kBlob, 0, "application/octet-stream", 3, "t", [&](std::string_view b) {
    s.bytes.append(b);
    return Status::OK();
  });
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) s.info = *r;
  return s;
}

TEST(FrameStream, SameBytesAsEncodeFrame) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"one byte", "x"},
      {"small text", Words(3000, 1)},
      {"small random", Random(3000, 2)},
      {"64 KiB + 1 text", Words((64 << 10) + 1, 3)},
      {"6 MiB text", Words(6 << 20, 4)},
      {"5 MiB random", Random(5 << 20, 5)},
      {"3 MiB zeros", std::string(3 << 20, '\0')},
      {"random then text", Random(1 << 20, 6) + Words(3 << 20, 7)},
      {"40 MiB text", Words(40 << 20, 11)},
  };
  for (const auto& [name, raw] : cases) {
    SCOPED_TRACE(name);
    std::string want = EncodeFrame(ObjectType::kBlob, 0, "application/octet-stream", raw, 3);
    const bool want_compressed = want[7] == 1;
    for (size_t piece : {size_t(-1), size_t(4093)}) {
      if (piece != size_t(-1) && raw.size() > (1 << 20)) continue;  // slow and says nothing more
      Streamed s = Encode(raw);
      EXPECT_EQ(s.info.digest, Sha256Of(raw));
      EXPECT_EQ(s.info.raw_size, raw.size());
      EXPECT_EQ(s.info.written, s.bytes.size());
      EXPECT_EQ(s.info.smaller, want_compressed);
      if (want_compressed) {
        // Byte for byte, header and zstd frame (content size, window) alike.
        EXPECT_TRUE(s.bytes == want) << "streamed " << s.bytes.size() << " bytes, EncodeFrame " << want.size();
      }
      // Either way the streamed frame decodes to the raw bytes.
      StringFile f(s.bytes, StringFile::Looks::kFile, piece);
      auto h = ReadFrameHeader(f, "t");
      ASSERT_OK(h);
      EXPECT_TRUE(h->compressed);
      std::string back;
      auto d = DecodeFrameStream(f, *h, "t", [&](std::string_view b) {
        back.append(b);
        return Status::OK();
      });
      ASSERT_OK(d);
      EXPECT_EQ(*d, Sha256Of(raw));
      EXPECT_TRUE(back == raw);
    }
    // DecodeFrameStream reads EncodeFrame's frames too, raw or compressed.
    StringFile f(want);
    auto h = ReadFrameHeader(f, "t");
    ASSERT_OK(h);
    std::string back;
    auto d = DecodeFrameStream(f, *h, "t", [&](std::string_view b) {
      back.append(b);
      return Status::OK();
    });
    ASSERT_OK(d);
    EXPECT_EQ(*d, Sha256Of(raw));
    EXPECT_TRUE(back == raw);
  }
}

// Pages behind the compressor are released as it goes (memory stays
// bounded for a file larger than memory).
TEST(FrameStream, ReleasesWhatItHasRead) {
  std::string raw = Words(96 << 20, 12);
  StringMap in(raw);
  auto r = EncodeFrameStream(in, ObjectType::kBlob, 0, "", 3, "t", [](std::string_view) { return Status::OK(); });
  ASSERT_OK(r);
  EXPECT_EQ(r->digest, Sha256Of(raw));
  EXPECT_GT(in.released, uint64_t(16) << 20);
}

Result<Digest> DecodeAll(const std::string& frame, std::string* out) {
  StringFile f(frame);
  KI_ASSIGN_OR_RETURN(auto h, ReadFrameHeader(f, "t"));
  return DecodeFrameStream(f, h, "t", [&](std::string_view b) {
    out->append(b);
    return Status::OK();
  });
}

TEST(FrameStream, DamageIsCorruption) {
  std::string raw = Words(300000, 9);
  std::string good = EncodeFrame(ObjectType::kBlob, 0, "text/plain", raw, 3);
  ASSERT_EQ(good[7], 1);
  std::string out;
  ASSERT_OK(DecodeAll(good, &out));

  // A header whose raw-size disagrees with zstd's content size: refused
  // before a byte goes out.
  std::string bad_size = good;
  bad_size[8] ^= 1;
  out.clear();
  auto r = DecodeAll(bad_size, &out);
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_TRUE(out.empty());

  // Bytes after the zstd frame.
  out.clear();
  r = DecodeAll(good + "x", &out);
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("after the compressed payload"), std::string::npos);

  // Truncated payload.
  out.clear();
  r = DecodeAll(good.substr(0, good.size() - 5), &out);
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();

  // A flipped byte in the middle: zstd or the hash notices.
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  out.clear();
  r = DecodeAll(flipped, &out);
  EXPECT_TRUE(!r.ok() ? r.status().IsCorruption() : *r != Sha256Of(raw)) << r.status().ToString();

  // Raw frames: too short and too long.
  std::string rawframe = EncodeFrame(ObjectType::kBlob, 0, "", Random(5000, 10), 3);
  ASSERT_EQ(rawframe[7], 0);
  out.clear();
  EXPECT_TRUE(DecodeAll(rawframe.substr(0, rawframe.size() - 1), &out).status().IsCorruption());
  out.clear();
  EXPECT_TRUE(DecodeAll(rawframe + "y", &out).status().IsCorruption());
  // A short header.
  out.clear();
  EXPECT_TRUE(DecodeAll(rawframe.substr(0, 12), &out).status().IsCorruption());
}

}  // namespace
}  // namespace ki::odb
