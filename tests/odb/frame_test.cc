#include "odb/frame.h"

#include <zdict.h>
#include <set>

#include "ki/embedded.h"
#include "odb/dict.h"
#include "testutil/string_file.h"
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
  std::string f = EncodeFrame(ObjectType::kBlob, 0, "", std::string(100, 'z'), 3, nullptr, FrameLayout::kLegacy);
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
  const std::string f = EncodeFrame(ObjectType::kBlob, 0, "text/plain", std::string(5000, 'q'), 3, nullptr, FrameLayout::kLegacy);
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
  const std::string v2 = EncodeFrame(ObjectType::kBlob, 0, "text/plain", "hello", 3, nullptr, FrameLayout::kLegacy);
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

// ---- version 3: frames compressed with a zstd dictionary

// Small JSON documents alike in their field names and differing in values,
// as manifests of one kind are.
std::string Sample(int i) {
  return "{\"apiVersion\":\"kernelindex.org/v1alpha1\",\"kind\":\"BenchmarkRun\",\"spec\":{\"implementationDigest\":"
         "\"sha256:" + Sha256Of(std::to_string(i)).hex() + "\",\"measurement\":{\"unit\":\"us\",\"median\":" +
         std::to_string(10 + i % 97) + "." + std::to_string(i % 10) + ",\"samples\":" + std::to_string(100 + i) +
         "},\"status\":\"" + (i % 3 ? "published" : "draft") + "\"}}";
}

std::shared_ptr<const Dictionary> TrainedDictionary(int seed) {
  std::string samples;
  std::vector<size_t> sizes;
  for (int i = 0; i < 400; ++i) {
    std::string s = Sample(i * 7 + seed);
    samples += s;
    sizes.push_back(s.size());
  }
  std::string dict(4096, '\0');
  size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), sizes.data(), unsigned(sizes.size()));
  EXPECT_FALSE(ZDICT_isError(n)) << ZDICT_getErrorName(n);
  dict.resize(ZDICT_isError(n) ? 0 : n);
  auto d = Dictionary::Load(dict, "trained");
  EXPECT_OK(d);
  return d.ok() ? *d : nullptr;
}

TEST(FrameDict, RoundTripAndSmallerThanPlain) {
  auto dict = TrainedDictionary(0);
  ASSERT_NE(dict, nullptr);
  EXPECT_NE(dict->id(), 0u);
  const std::string raw = Sample(100001);
  const std::string plain = EncodeFrame(ObjectType::kManifest, 8, "m", raw, 3, nullptr, FrameLayout::kLegacy);
  const std::string f = EncodeFrame(ObjectType::kManifest, 8, "m", raw, 3, dict.get(), FrameLayout::kLegacy);
  EXPECT_LT(f.size() + 40, plain.size()) << "a dictionary frame " << f.size() << ", plain " << plain.size();
  auto h = ParseFrameHeader(f, "t");
  ASSERT_OK(h);
  EXPECT_EQ(h->version, kFrameVersionDict);
  EXPECT_EQ(h->dict_id, dict->id());
  EXPECT_TRUE(h->compressed);
  auto back = DecodeFrame(f, *h, 1 << 20, "t", dict.get());
  ASSERT_OK(back);
  EXPECT_EQ(*back, raw);
  // Streamed too; then a plain frame on the same thread decodes without
  // the dictionary the stream used.
  test::StringFile file(f);
  auto sh = ReadFrameHeader(file, "t");
  ASSERT_OK(sh);
  EXPECT_EQ(sh->dict_id, dict->id());
  std::string streamed;
  auto got = DecodeFrameStream(file, *sh, "t", [&](std::string_view b) {
    streamed.append(b);
    return Status::OK();
  }, dict.get());
  ASSERT_OK(got);
  EXPECT_EQ(*got, Sha256Of(raw));
  EXPECT_EQ(streamed, raw);
  auto ph = ParseFrameHeader(plain, "t");
  ASSERT_OK(ph);
  EXPECT_EQ(ph->version, kFrameVersion);  // no dictionary: still version 2
  auto plain_back = DecodeFrame(plain, *ph, 1 << 20, "t");
  ASSERT_OK(plain_back);
  EXPECT_EQ(*plain_back, raw);
}

TEST(FrameDict, MissingOrWrongDictionaryIsCorruptionNamingIt) {
  auto dict = TrainedDictionary(0);
  auto other = TrainedDictionary(3);
  ASSERT_NE(dict, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_NE(dict->id(), other->id());
  const std::string f = EncodeFrame(ObjectType::kManifest, 8, "m", Sample(5), 3, dict.get(), FrameLayout::kLegacy);
  auto h = ParseFrameHeader(f, "t");
  ASSERT_OK(h);
  for (const Dictionary* given : {static_cast<const Dictionary*>(nullptr), other.get()}) {
    auto r = DecodeFrame(f, *h, 1 << 20, "t", given);
    ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(DictionaryName(dict->id())), std::string::npos) << r.status().message();
    test::StringFile file(f);
    auto sh = ReadFrameHeader(file, "t");
    ASSERT_OK(sh);
    auto s = DecodeFrameStream(file, *sh, "t", [](std::string_view) { return Status::OK(); }, given);
    EXPECT_TRUE(s.status().IsCorruption()) << s.status().ToString();
  }
}

// The header check covers the dictionary ID: a flipped bit there, or in any
// other header byte, is corruption before anything is decoded. A frame
// whose header and check were both rewritten to name another dictionary
// is still refused: zstd's own frame header names the one it was made with.
TEST(FrameDict, FlippedDictionaryIdOrHeaderByteIsCorruption) {
  auto dict = TrainedDictionary(0);
  ASSERT_NE(dict, nullptr);
  const std::string f = EncodeFrame(ObjectType::kManifest, 8, "m", Sample(9), 3, dict.get(), FrameLayout::kLegacy);
  const size_t id_at = kFrameHeaderSize + 1;  // media type "m"
  const size_t header = id_at + kFrameDictIdSize + kFrameHeaderCheckSize;
  for (size_t i = 4; i < header; ++i) {
    for (uint8_t bit : {0x01, 0x10, 0x80}) {
      std::string bad = f;
      bad[i] = char(uint8_t(bad[i]) ^ bit);
      auto h = ParseFrameHeader(bad, "t");
      EXPECT_TRUE(h.status().IsCorruption()) << "byte " << i << " bit " << int(bit);
    }
  }
  std::string forged = f;
  forged[id_at] = char(uint8_t(forged[id_at]) ^ 0x01);
  forged.replace(id_at + kFrameDictIdSize, kFrameHeaderCheckSize,
                 Sha256Of(forged.substr(0, id_at + kFrameDictIdSize)).raw().substr(0, 4));
  auto h = ParseFrameHeader(forged, "t");
  ASSERT_OK(h);
  auto r = DecodeFrame(forged, *h, 1 << 20, "t", dict.get());
  ASSERT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("names"), std::string::npos) << r.status().message();
  // A version 2 frame whose zstd payload names a dictionary is refused too.
  std::string v2 = f;
  v2[4] = char(kFrameVersion);
  v2.erase(id_at, kFrameDictIdSize);
  v2.replace(id_at, kFrameHeaderCheckSize, Sha256Of(v2.substr(0, id_at)).raw().substr(0, 4));
  auto h2 = ParseFrameHeader(v2, "t");
  ASSERT_OK(h2);
  EXPECT_TRUE(DecodeFrame(v2, *h2, 1 << 20, "t", dict.get()).status().IsCorruption());
}

// ---- version 4: the media type by its code

// A manifest's frame names its media type by code: 41 bytes shorter than
// the same frame with the text, every header byte still checked, read whole
// and streamed alike; with a dictionary, flags bit 1 says the ID follows.
TEST(FrameCoded, AManifestFrameNamesItsMediaTypeByCode) {
  const std::string mt = "application/vnd.kernelindex.manifest+json";
  ASSERT_EQ(MediaTypeCode(mt), 1);
  EXPECT_EQ(CodedMediaType(1), mt);
  EXPECT_EQ(MediaTypeCode("text/plain"), 0);
  EXPECT_EQ(CodedMediaType(0), "");
  EXPECT_EQ(CodedMediaType(200), "");
  auto dict = TrainedDictionary(0);
  ASSERT_NE(dict, nullptr);
  for (const Dictionary* d : {static_cast<const Dictionary*>(nullptr), dict.get()}) {
    const std::string raw = Sample(41);
    const std::string f = EncodeFrame(ObjectType::kManifest, 8, mt, raw, 3, d, FrameLayout::kLegacy);
    // The same bytes under an uncoded media type of the same length: version 2 or 3.
    const std::string text = EncodeFrame(ObjectType::kManifest, 8, std::string(mt.size(), 'm'), raw, 3, d, FrameLayout::kLegacy);
    EXPECT_EQ(f.size() + mt.size(), text.size());
    auto h = ParseFrameHeader(f, "t");
    ASSERT_OK(h);
    EXPECT_EQ(h->version, kFrameVersionCoded);
    EXPECT_EQ(h->media_type, mt);
    EXPECT_EQ(h->dict_id, d ? d->id() : 0u);
    EXPECT_EQ(uint8_t(f[7]), d ? 3 : 1);  // compressed, and bit 1 with a dictionary
    EXPECT_EQ(h->payload_offset, kFrameHeaderSize + (d ? kFrameDictIdSize : 0) + kFrameHeaderCheckSize);
    auto back = DecodeFrame(f, *h, 1 << 20, "t", d);
    ASSERT_OK(back);
    EXPECT_EQ(*back, raw);
    test::StringFile file(f);
    auto sh = ReadFrameHeader(file, "t");
    ASSERT_OK(sh);
    EXPECT_EQ(sh->media_type, mt);
    EXPECT_EQ(sh->payload_offset, h->payload_offset);
    std::string streamed;
    auto got = DecodeFrameStream(file, *sh, "t", [&](std::string_view b) {
      streamed.append(b);
      return Status::OK();
    }, d);
    ASSERT_OK(got);
    EXPECT_EQ(streamed, raw);
    for (size_t i = 4; i < h->payload_offset; ++i) {
      for (uint8_t bit : {0x01, 0x02, 0x80}) {
        std::string bad = f;
        bad[i] = char(uint8_t(bad[i]) ^ bit);
        EXPECT_TRUE(ParseFrameHeader(bad, "t").status().IsCorruption()) << "byte " << i << " bit " << int(bit);
      }
    }
  }
  // A blob of a media type without a code is still version 2.
  auto plain = ParseFrameHeader(EncodeFrame(ObjectType::kBlob, 0, "text/plain", "hello", 3, nullptr, FrameLayout::kLegacy), "t");
  ASSERT_OK(plain);
  EXPECT_EQ(plain->version, kFrameVersion);
}

// A code this ki does not know (a newer ki's), under a header check that
// passes, is refused by name instead of read as some other media type.
TEST(FrameCoded, AnUnknownCodeIsCorruption) {
  std::string f = EncodeFrame(ObjectType::kBlob, 0, "application/vnd.ki.catalog.facts.v1+json", "{}", 3, nullptr, FrameLayout::kLegacy);
  ASSERT_EQ(uint8_t(f[4]), kFrameVersionCoded);
  f[16] = char(99);
  f.replace(kFrameHeaderSize, kFrameHeaderCheckSize, Sha256Of(f.substr(0, kFrameHeaderSize)).raw().substr(0, 4));
  auto h = ParseFrameHeader(f, "t");
  ASSERT_TRUE(h.status().IsCorruption());
  EXPECT_NE(h.status().message().find("media type code 99"), std::string::npos) << h.status().message();
}

// ---- version 5 (store format 13): varint raw size, one code byte, zstd
// payloads without magic, content size or dictionary ID

// Reads a frame through ReadFrameHeader and DecodeFrameStream, as a loose
// object is read.
std::string Streamed(const std::string& f, const FrameHeader& whole, const Dictionary* d) {
  test::StringFile file(f);
  auto sh = ReadFrameHeader(file, "t");
  EXPECT_OK(sh);
  if (!sh.ok()) return "";
  EXPECT_EQ(sh->payload_offset, whole.payload_offset);
  EXPECT_EQ(sh->media_type, whole.media_type);
  EXPECT_EQ(sh->raw_size, whole.raw_size);
  EXPECT_EQ(sh->dict_id, whole.dict_id);
  std::string out;
  auto got = DecodeFrameStream(file, *sh, "t", [&](std::string_view b) {
    out.append(b);
    return Status::OK();
  }, d);
  EXPECT_OK(got);
  return out;
}

// Every kind of frame is version 5, reads back whole and streamed, and is
// 11 or more bytes shorter than versions 2 to 4 wrote for the same bytes.
TEST(FrameCompact, EveryFrameIsVersion5AndShorter) {
  auto dict = TrainedDictionary(0);
  ASSERT_NE(dict, nullptr);
  const std::string manifest = "application/vnd.kernelindex.manifest+json";
  struct Case {
    std::string media_type;
    std::string raw;
    const Dictionary* dict;
  };
  const std::vector<Case> cases = {
      {manifest, Sample(7), dict.get()},         // coded, with a dictionary
      {manifest, Sample(8), nullptr},            // coded, plain zstd
      {"text/plain", std::string(70000, 'a') + Sample(1), nullptr},  // text media type, a 3-byte varint
      {"text/plain", "x", nullptr},              // raw: compression does not pay
      {"application/octet-stream", "", nullptr},  // empty: the shortest frame there is
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.media_type + " " + std::to_string(c.raw.size()));
    const std::string f = EncodeFrame(ObjectType::kBlob, 0, c.media_type, c.raw, 3, c.dict);
    const std::string legacy = EncodeFrame(ObjectType::kBlob, 0, c.media_type, c.raw, 3, c.dict, FrameLayout::kLegacy);
    auto h = ParseFrameHeader(f, "t");
    ASSERT_OK(h);
    EXPECT_EQ(h->version, kFrameVersionCompact);
    EXPECT_EQ(h->media_type, c.media_type);
    EXPECT_EQ(h->raw_size, c.raw.size());
    EXPECT_EQ(h->dict_id, c.dict ? c.dict->id() : 0u);
    if (h->compressed) {
      EXPECT_GE(legacy.size(), f.size() + 11) << "version 5 " << f.size() << ", before " << legacy.size();
      auto n = CompressedPayloadSize(std::string_view(f).substr(h->payload_offset), *h, "t");
      ASSERT_OK(n);
      EXPECT_EQ(*n, f.size() - h->payload_offset);
    } else {
      EXPECT_GE(legacy.size(), f.size() + 6);
    }
    auto back = DecodeFrame(f, *h, 1 << 20, "t", c.dict);
    ASSERT_OK(back);
    EXPECT_EQ(*back, c.raw);
    EXPECT_EQ(Streamed(f, *h, c.dict), c.raw);
    // The frames older stores hold still read, on the same thread, after.
    auto lh = ParseFrameHeader(legacy, "t");
    ASSERT_OK(lh);
    EXPECT_NE(lh->version, kFrameVersionCompact);
    auto lback = DecodeFrame(legacy, *lh, 1 << 20, "t", c.dict);
    ASSERT_OK(lback);
    EXPECT_EQ(*lback, c.raw);
  }
}

// Every header byte is covered by the check; a payload with bytes after it,
// one cut short, one decoded without its dictionary or with another, and a
// raw size (check made to match) that is not the payload's are corruption.
TEST(FrameCompact, DamageIsCorruption) {
  auto dict = TrainedDictionary(0);
  auto other = TrainedDictionary(3);
  ASSERT_NE(dict, nullptr);
  ASSERT_NE(other, nullptr);
  const std::string raw = Sample(11);
  for (const Dictionary* d : {static_cast<const Dictionary*>(nullptr), dict.get()}) {
    const std::string f = EncodeFrame(ObjectType::kManifest, 8, "application/vnd.kernelindex.manifest+json", raw, 3, d);
    auto h = ParseFrameHeader(f, "t");
    ASSERT_OK(h);
    ASSERT_TRUE(h->compressed);
    for (size_t i = 4; i < h->payload_offset; ++i) {
      for (uint8_t bit : {0x01, 0x04, 0x80}) {
        std::string bad = f;
        bad[i] = char(uint8_t(bad[i]) ^ bit);
        EXPECT_TRUE(ParseFrameHeader(bad, "t").status().IsCorruption()) << "byte " << i << " bit " << int(bit);
      }
    }
    const std::string after = f + "zz";
    EXPECT_TRUE(DecodeFrame(after, *h, 1 << 20, "t", d).status().IsCorruption());
    test::StringFile after_file(after);
    auto ah = ReadFrameHeader(after_file, "t");
    ASSERT_OK(ah);
    EXPECT_TRUE(
        DecodeFrameStream(after_file, *ah, "t", [](std::string_view) { return Status::OK(); }, d).status().IsCorruption());
    const std::string cut = f.substr(0, f.size() - 3);
    EXPECT_TRUE(DecodeFrame(cut, *h, 1 << 20, "t", d).status().IsCorruption());
    if (d) {
      for (const Dictionary* wrong : {static_cast<const Dictionary*>(nullptr), other.get()}) {
        auto r = DecodeFrame(f, *h, 1 << 20, "t", wrong);
        ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
        EXPECT_NE(r.status().message().find(DictionaryName(d->id())), std::string::npos) << r.status().message();
      }
    }
    // A raw size one byte off, the header check recomputed: decoding finds it.
    for (int delta : {-1, 1}) {
      std::string forged = EncodeFrameHeader(ObjectType::kManifest, 8, "application/vnd.kernelindex.manifest+json",
                                             raw.size() + delta, true, d ? d->id() : 0);
      forged.append(f.substr(h->payload_offset));
      auto fh = ParseFrameHeader(forged, "t");
      ASSERT_OK(fh);
      EXPECT_TRUE(DecodeFrame(forged, *fh, 1 << 20, "t", d).status().IsCorruption()) << delta;
    }
  }
  // A header cut anywhere is refused, whole or read from a file.
  const std::string f = EncodeFrame(ObjectType::kBlob, 0, "text/plain", "hello, frames", 3);
  auto h = ParseFrameHeader(f, "t");
  ASSERT_OK(h);
  for (size_t n = 0; n < h->payload_offset; ++n) {
    EXPECT_TRUE(ParseFrameHeader(f.substr(0, n), "t").status().IsCorruption()) << n;
    test::StringFile file(f.substr(0, n));
    EXPECT_TRUE(ReadFrameHeader(file, "t").status().IsCorruption()) << n;
  }
}

// Every built-in dictionary file is used for something, loads, and has an
// ID of zstd's unreserved range; none has another's ID.
TEST(FrameDict, BuiltinDictionariesLoad) {
  size_t n = 0;
  const EmbeddedFile* files = ki_embedded_dictionaries(&n);
  size_t dicts = 0;
  std::set<uint32_t> ids;
  for (size_t i = 0; i < n; ++i) {
    std::string name = files[i].name;
    if (name.size() < 6 || name.substr(name.size() - 6) != ".zdict") continue;
    dicts++;
    const uint32_t id = DictionaryId(std::string_view(files[i].data, files[i].size));
    EXPECT_GE(id, 32768u) << name;
    EXPECT_LT(id, 1u << 31) << name;
    EXPECT_TRUE(ids.insert(id).second) << name;
    ASSERT_NE(BuiltinDictionary(id), nullptr) << name << " does not load or names no use";
  }
  EXPECT_GE(dicts, 3u);
  const Dictionary* run = BuiltinDictionaryFor(ObjectType::kManifest, 8, "application/vnd.kernelindex.manifest+json");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(BuiltinDictionaryFor(ObjectType::kBlob, 0, kDictionaryMediaType), nullptr);
  EXPECT_EQ(BuiltinDictionaryFor(ObjectType::kBlob, 0, "text/plain"), nullptr);
}

// ---- based frames (version 5, flags bit 2): a document against its manifest

// A document as an export holds one: its manifest's canonical JSON with a
// metadata block put back after "kind".
std::string WithMetadata(const std::string& manifest, int i) {
  const size_t at = manifest.find(",\"spec\"");
  return manifest.substr(0, at) + ",\"metadata\":{\"name\":\"run-" + std::to_string(i) +
         "\",\"labels\":{\"source\":\"kernelindex-export\"}}" + manifest.substr(at);
}

TEST(FrameBased, RoundTripSmallerThanPlain) {
  const std::string doc_type = "application/vnd.kernelindex.document+json";
  auto dict = TrainedDictionary(5);
  ASSERT_NE(dict, nullptr);
  for (const Dictionary* d : {static_cast<const Dictionary*>(nullptr), dict.get()}) {
    const std::string base = Sample(41);
    const std::string doc = WithMetadata(base, 41);
    const std::string plain = EncodeFrame(ObjectType::kBlob, 0, doc_type, doc, 3, d);
    auto based = EncodeBasedFrame(ObjectType::kBlob, 0, doc_type, doc, base, 3, d, plain.size(), 3);
    ASSERT_TRUE(based.has_value());
    EXPECT_LT(based->size() + 3, plain.size());
    EXPECT_TRUE(FrameIsBased(*based));
    EXPECT_FALSE(FrameIsBased(plain));
    auto numbered = NumberBasedFrame(*based, 70000);
    ASSERT_OK(numbered);
    EXPECT_TRUE(FrameIsBased(*numbered));
    EXPECT_LE(numbered->size(), based->size() + 3);
    auto h = ParseFrameHeader(*numbered, "t");
    ASSERT_OK(h);
    ASSERT_TRUE(h->base.has_value());
    EXPECT_EQ(h->base->number, 70000u);
    EXPECT_EQ(h->raw_size, doc.size());
    // Up to the metadata (and the `,"` both have there).
    EXPECT_GE(h->base->prefix, base.find(",\"spec\""));
    EXPECT_LE(h->base->prefix, base.find(",\"spec\"") + 2);
    EXPECT_EQ(h->base->prefix + h->base->suffix, base.size());
    EXPECT_EQ(h->dict_id, d && h->compressed ? d->id() : 0u);
    auto raw = DecodeFrame(*numbered, *h, 1 << 20, "t", d, std::string_view(base));
    ASSERT_OK(raw);
    EXPECT_EQ(*raw, doc);
    // Numbering again changes the number only.
    auto renumbered = NumberBasedFrame(*numbered, 3);
    ASSERT_OK(renumbered);
    auto h3 = ParseFrameHeader(*renumbered, "t");
    ASSERT_OK(h3);
    EXPECT_EQ(h3->base->number, 3u);
    EXPECT_EQ(*DecodeFrame(*renumbered, *h3, 1 << 20, "t", d, std::string_view(base)), doc);
  }
}

TEST(FrameBased, NotWrittenWhenItWouldNotSave) {
  const std::string doc_type = "application/vnd.kernelindex.document+json";
  const std::string doc = WithMetadata(Sample(7), 7);
  const std::string plain = EncodeFrame(ObjectType::kBlob, 0, doc_type, doc, 3, nullptr);
  // A base that shares nothing with the document (a YAML text and its
  // manifest's JSON): no based frame.
  std::string unrelated(doc.size(), 'x');
  EXPECT_FALSE(EncodeBasedFrame(ObjectType::kBlob, 0, doc_type, doc, unrelated, 3, nullptr, plain.size(), 3));
  // Nor when the plain frame is as small as it would be.
  EXPECT_FALSE(EncodeBasedFrame(ObjectType::kBlob, 0, doc_type, doc, Sample(7), 3, nullptr, 10, 3));
  // NumberBasedFrame refuses a frame that is not based.
  EXPECT_FALSE(NumberBasedFrame(plain, 5).ok());
}

TEST(FrameBased, WithoutItsBaseOrDamagedIsCorruption) {
  const std::string doc_type = "application/vnd.kernelindex.document+json";
  const std::string base = Sample(12);
  const std::string doc = WithMetadata(base, 12);
  const std::string plain = EncodeFrame(ObjectType::kBlob, 0, doc_type, doc, 3, nullptr);
  auto based = EncodeBasedFrame(ObjectType::kBlob, 0, doc_type, doc, base, 3, nullptr, plain.size(), 3);
  ASSERT_TRUE(based.has_value());
  auto f = NumberBasedFrame(*based, 9);
  ASSERT_OK(f);
  auto h = ParseFrameHeader(*f, "t");
  ASSERT_OK(h);
  // No base, or one too short for the prefix and suffix the frame takes.
  auto none = DecodeFrame(*f, *h, 1 << 20, "t", nullptr);
  ASSERT_TRUE(none.status().IsCorruption());
  EXPECT_NE(none.status().message().find("object number 9"), std::string::npos) << none.status().message();
  EXPECT_TRUE(DecodeFrame(*f, *h, 1 << 20, "t", nullptr, std::string_view(base).substr(0, 20)).status().IsCorruption());
  // Another base of the same length decodes to other bytes: the caller's
  // hash of the result is what tells (LmdbStore re-hashes base and object).
  std::string other = base;
  other[1] ^= 1;
  auto wrong = DecodeFrame(*f, *h, 1 << 20, "t", nullptr, std::string_view(other));
  ASSERT_OK(wrong);
  EXPECT_NE(*wrong, doc);
  // Every header byte is covered by the header check.
  for (size_t i = 4; i < h->payload_offset; ++i) {
    std::string bad = *f;
    bad[i] = char(uint8_t(bad[i]) ^ 0x04);
    EXPECT_TRUE(ParseFrameHeader(bad, "t").status().IsCorruption()) << "byte " << i;
  }
  // A payload cut short or run on.
  EXPECT_TRUE(DecodeFrame(f->substr(0, f->size() - 2), *h, 1 << 20, "t", nullptr, std::string_view(base))
                  .status()
                  .IsCorruption());
  EXPECT_TRUE(DecodeFrame(*f + "zz", *h, 1 << 20, "t", nullptr, std::string_view(base)).status().IsCorruption());
  // Never read from a file, a piece at a time: it needs its base.
  test::StringFile file(*f);
  auto fh = ReadFrameHeader(file, "t");
  ASSERT_TRUE(fh.status().IsCorruption());
  EXPECT_NE(fh.status().message().find("based frame"), std::string::npos) << fh.status().message();
}

}  // namespace
}  // namespace ki::odb
