// The pack format (src/remote/pack.h): what PackWriter writes, ReadPack reads
// back; the same objects give the same bytes; and ReadPack refuses every
// departure from the subset it accepts. Hostile packs served by a registry
// are in remote_test.cc (PacksThatLieAreRefused...).
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "remote/pack.h"
#include "remote/pack_testutil.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using remote::PackReadLimits;
using remote::ReadPack;

struct Obj {
  Digest digest;
  std::string bytes;
};

std::vector<Obj> Objects() {
  std::vector<Obj> out;
  for (size_t n : {0u, 1u, 511u, 512u, 513u, 5000u}) {
    std::string b;
    for (size_t i = 0; i < n; ++i) b.push_back(char('a' + (i * 31 + n) % 26));
    out.push_back({Sha256Of(b), b});
  }
  return out;
}

std::string Write(const std::vector<Obj>& objs) {
  uint64_t tar = 1024;
  for (const Obj& o : objs) tar += remote::PackEntryBytes(o.bytes.size());
  remote::PackWriter w(tar);
  for (const Obj& o : objs) EXPECT_OK(w.Add(o.digest, o.bytes));
  auto out = w.Finish();
  EXPECT_OK(out);
  return *out;
}

// Reads `pack` expecting the objects of `objs`; returns the status and what
// was delivered, in order.
std::pair<Status, std::vector<Digest>> Read(const std::string& pack, const std::vector<Obj>& objs) {
  std::map<Digest, uint64_t> sizes;
  PackReadLimits limits;
  limits.max_tar_bytes = remote::kPackTrailerMax;
  for (const Obj& o : objs) {
    sizes[o.digest] = o.bytes.size();
    limits.max_tar_bytes += remote::PackEntryBytes(o.bytes.size());
  }
  std::vector<Digest> got;
  Status st = ReadPack(
      pack, limits,
      [&](const Digest& d) -> std::optional<uint64_t> {
        auto it = sizes.find(d);
        if (it == sizes.end()) return std::nullopt;
        return it->second;
      },
      [&](const Digest& d, std::string&& bytes) -> Status {
        bool known = false;
        for (const Obj& o : objs) {
          if (o.digest != d) continue;
          known = true;
          EXPECT_EQ(o.bytes, bytes);  // only ever verified bytes
        }
        EXPECT_TRUE(known);
        got.push_back(d);
        return Status::OK();
      });
  return {st, got};
}

TEST(PackTest, RoundTripInOrderAndDeterministic) {
  auto objs = Objects();
  std::string a = Write(objs), b = Write(objs);
  EXPECT_EQ(a, b);
  auto [st, got] = Read(a, objs);
  ASSERT_OK(st);
  ASSERT_EQ(got.size(), objs.size());
  for (size_t i = 0; i < objs.size(); ++i) EXPECT_EQ(got[i], objs[i].digest);
  // Standard tools: one zstd frame that records its content size.
  EXPECT_EQ(ZSTD_getFrameContentSize(a.data(), a.size()),
            1024 + [&] {
              uint64_t n = 0;
              for (const Obj& o : objs) n += remote::PackEntryBytes(o.bytes.size());
              return n;
            }());
  // What the writer produces is exactly what the test's tar(1)-style
  // builder produces: a plain ustar archive.
  std::string tar;
  for (const Obj& o : objs) tar += test::TarEntry("sha256/" + o.digest.hex(), o.bytes);
  tar += std::string(1024, '\0');
  std::string plain(tar.size(), '\0');
  size_t n = ZSTD_decompress(plain.data(), plain.size(), a.data(), a.size());
  ASSERT_FALSE(ZSTD_isError(n));
  EXPECT_EQ(plain, tar);
}

TEST(PackTest, DeparturesFromTheSubsetAreRefused) {
  auto objs = Objects();
  const Obj& o = objs[4];
  auto pack_of = [](const std::string& tar) { return test::ZstdFrame(tar + std::string(1024, '\0')); };
  struct Case {
    const char* what;
    std::string pack;
    const char* message;
  };
  std::string wrong = o.bytes;
  wrong[0] ^= 1;
  std::string good_tar = test::TarEntry("sha256/" + o.digest.hex(), o.bytes);
  std::string full = Write(objs);
  std::string bad_sum = good_tar;
  bad_sum[0x95] = bad_sum[0x95] == '1' ? '2' : '1';  // a checksum digit
  std::vector<Case> cases = {
      {"wrong bytes", pack_of(test::TarEntry("sha256/" + o.digest.hex(), wrong)), "hashes to"},
      {"escaping name", pack_of(test::TarEntry("../../etc/" + o.digest.hex(), o.bytes)), "is not sha256/<64 hex>"},
      {"name with more after the digest", pack_of(test::TarEntry("sha256/" + o.digest.hex() + "/x", o.bytes)),
       "is not sha256/<64 hex>"},
      {"upper-case hex", pack_of(test::TarEntry("sha256/" + std::string(64, 'A'), o.bytes)), "is not sha256/<64 hex>"},
      {"symlink", pack_of(test::TarEntry("sha256/" + o.digest.hex(), "", '2')), "not a regular file"},
      {"not in the bundle", pack_of(test::TarEntry("sha256/" + Sha256Of("other").hex(), "other")),
       "is not an object of this bundle"},
      {"size unlike the layer's", pack_of(test::TarEntry("sha256/" + o.digest.hex(), o.bytes + "x")), "announces"},
      {"duplicate", pack_of(good_tar + good_tar), "appears twice"},
      {"bad header checksum", pack_of(bad_sum), "checksum"},
      {"no end-of-archive", test::ZstdFrame(good_tar), "truncated"},
      {"truncated frame", full.substr(0, full.size() / 2), "truncated"},
      {"data after the frame", full + "x", "after the zstd frame"},
      {"more than the objects can fill", test::ZstdFrame(good_tar + std::string(1 << 20, '\0')), "more than"},
      {"not zstd", "this is not a zstd frame", "zstd"},
  };
  for (const Case& c : cases) {
    auto [st, got] = Read(c.pack, objs);
    EXPECT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << c.what << ": " << st.message();
  }
}

}  // namespace
}  // namespace ki
