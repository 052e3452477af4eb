// The fixture the remote tests share: a source store holding the seed run,
// a large blob and an attestation, an empty destination, and helpers to
// answer a FakeRegistry's requests with what a hostile registry sends.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "ki/dictionary.h"
#include "ki/ingest.h"
#include "ki/json.h"
#include "ki/remote.h"
#include "ki/sign.h"
#include "odb/tables.h"
#include "remote/fake_registry.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/pack_testutil.h"
#include "remote/target.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

// In a named namespace: one RemoteTest class for every file of the binary
// (googletest requires one fixture class per test suite).
namespace ki::remote_test {

using test::FakeRegistry;
using test::HttpReply;
using test::HttpReq;
using test::TempDir;

constexpr const char* kRunName = "BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";

inline std::string Statement(const Digest& subject) {
  std::string payload = R"({"_type":"https://in-toto.io/Statement/v1","predicate":{},"predicateType":"https://kernelindex.dev/ki/reviewed/v1","subject":[{"digest":{"sha256":")" +
                        subject.hex() + R"("},"name":"run"}]})";
  // base64 by hand (the test does not reach into src/remote).
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  size_t i = 0;
  for (; i + 2 < payload.size(); i += 3) {
    uint32_t v = uint8_t(payload[i]) << 16 | uint8_t(payload[i + 1]) << 8 | uint8_t(payload[i + 2]);
    b64 += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
  }
  if (i + 1 == payload.size()) {
    uint32_t v = uint8_t(payload[i]) << 16;
    b64 += {a[v >> 18], a[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == payload.size()) {
    uint32_t v = uint8_t(payload[i]) << 16 | uint8_t(payload[i + 1]) << 8;
    b64 += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], '='};
  }
  // A 64-byte signature by a key nobody knows: not checkable, not a fault
  // (pull stores it, as `ki sign --envelope` would).
  return R"({"payload":")" + b64 + R"(","payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"k","sig":")" +
         std::string(86, 'A') + R"(=="}]})";
}

// The objects a user stored: the store's own zstd dictionaries are not
// carried by a push (each store holds those its frames use).
inline uint64_t CountObjects(Store& s) {
  uint64_t n = 0;
  EXPECT_OK(s.ForEachObject([&](const ObjectInfo& i) { return n += !IsDictionary(i), true; }));
  return n;
}

// 40 generated blobs of 50 KB beside the fixture's objects, pushed with
// them as one bundle; returns the refs and adds their bytes to *total.
inline std::vector<std::string> AddManyBlobs(Store& s, uint64_t* total) {
  std::vector<std::string> refs;
  auto b = s.NewBatch();
  EXPECT_OK(b);
  for (int j = 0; j < 40; ++j) {
    std::string x(50000, '\0');
    for (size_t i = 0; i < x.size(); ++i) x[i] = char('a' + (i * 31 + j * 7 + i / 97) % 26);
    x.replace(0, 8, "blob " + std::to_string(100 + j));  // 40 different blobs
    auto put = (*b)->PutBlob(x, "application/octet-stream");
    EXPECT_OK(put);
    refs.push_back(put->digest.str());
    *total += x.size();
  }
  EXPECT_OK((*b)->Commit());
  return refs;
}

class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Init(dir_.Join("src"));
    ASSERT_OK(s);
    src_ = std::move(s).value();
    auto d = Store::Init(dir_.Join("dst"));
    ASSERT_OK(d);
    dst_ = std::move(d).value();
    std::string seed = test::ReadFileOrDie(test::DataPath(
        "kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"));
    AddInput in;
    in.source = "seed.json";
    in.bytes = seed;
    auto added = AddInputs(*src_, {in});
    ASSERT_OK(added);
    run_ = (*added)[0].digest;
    // A generated blob big enough to need several PATCH chunks.
    std::string big;
    for (uint32_t i = 0; i < 300000; ++i) big.push_back(char('a' + (i * 7919u + i / 13) % 26));
    auto b = src_->NewBatch();
    ASSERT_OK(b);
    auto put = (*b)->PutBlob(big, "text/plain");
    ASSERT_OK(put);
    blob_ = put->digest;
    envelope_ = Statement(run_);
    auto env = (*b)->PutBlob(envelope_, kDsseMediaType);
    ASSERT_OK(env);
    env_digest_ = env->digest;
    std::string key(run_.raw());
    key.append(env_digest_.raw());
    ASSERT_OK((*b)->Put(kAttestationTable, key, ""));
    ASSERT_OK((*b)->Commit());
  }

  TransferOptions Opts() {
    TransferOptions o;
    o.credentials = Credentials{};
    o.backoff_initial_ms = 1;
    o.max_attempts = 3;
    o.timeouts.low_speed_time_s = 5;
    o.timeouts.connect_s = 5;
    // The bundles of these tests are format 1 (every object also its own
    // blob, the pack optional): the pull paths that read remotes written
    // before packed bundles. conformance_test.cc covers format 2.
    o.bundle_format = 1;
    return o;
  }

  RemoteUrl Url(const std::string& host) {
    auto u = ParseRemoteUrl("oci://" + host + "/ki/test", true);
    EXPECT_OK(u);
    return *u;
  }

  void ExpectSameObjects(Store& a, Store& b, const std::vector<Digest>& ds) {
    for (const Digest& d : ds) {
      auto x = a.Read(d);
      auto y = b.Read(d);
      ASSERT_OK(x);
      ASSERT_OK(y);
      EXPECT_EQ(*x, *y) << d.str();
    }
  }

  // A fresh empty store beside src_ and dst_, kept until the test ends.
  Store& NewStore() {
    auto s = Store::Init(dir_.Join("store" + std::to_string(extra_.size())));
    if (!s.ok()) {
      ADD_FAILURE() << s.status().ToString();
      std::abort();
    }
    extra_.push_back(std::move(s).value());
    return *extra_.back();
  }

  // From now on `reg` answers every `method` request whose path contains
  // `path_part` with `reply` (the hostile cases); everything else as usual.
  static void Answer(FakeRegistry& reg, std::string method, std::string path_part, HttpReply reply) {
    reg.SetIntercept([=](const HttpReq& r) -> std::optional<HttpReply> {
      if (r.method == method && r.path.find(path_part) != std::string::npos) return reply;
      return std::nullopt;
    });
  }

  // An image manifest served as `body` with these headers.
  static HttpReply ManifestReply(std::string body, std::vector<std::pair<std::string, std::string>> headers) {
    HttpReply x;
    x.body = std::move(body);
    x.headers = std::move(headers);
    return x;
  }

  std::vector<Digest> AllObjects(Store& s) {
    std::vector<Digest> out;
    EXPECT_OK(s.ForEachObject([&](const ObjectInfo& i) { return out.push_back(i.digest), true; }));
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Store> src_, dst_;
  std::vector<std::unique_ptr<Store>> extra_;
  Digest run_, blob_, env_digest_;
  std::string envelope_;
};

// ------------------------------------------------------------ streamed blobs
// Blobs over TransferOptions::stream_above (1 MiB) are never held whole:
// push reads them from the store into the upload, pull downloads them into
// a scratch file under objects/incoming and stores that.

// `bytes` of generated text (compressible: stored as a zstd frame), or of
// random bytes (stored raw, so a flipped byte is found only by the hash at
// the end), added to `s` through the streaming write path.
inline Digest AddLargeBlob(Store& s, const TempDir& dir, uint64_t bytes, bool random, uint32_t seed) {
  std::string x(bytes, '\0');
  std::mt19937 rng(seed);
  for (size_t i = 0; i < x.size(); ++i) x[i] = random ? char(rng()) : char('a' + (i * 7919u + i / 13 + seed) % 26);
  std::string path = dir.Join("large-" + std::to_string(seed));
  test::WriteFileOrDie(path, x);
  auto in = Env::Default()->NewSequentialFile(path);
  EXPECT_OK(in);
  auto b = s.NewBatch();
  EXPECT_OK(b);
  auto put = (*b)->PutBlobStream(**in, "application/octet-stream", path);
  EXPECT_OK(put);
  EXPECT_OK((*b)->Commit());
  return put->digest;
}

// Files left in a store's objects/incoming (scratch files of streamed writes).
inline size_t IncomingFiles(Store& s) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(s.path() + "/objects/incoming", ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    n++;
  return n;
}

}  // namespace ki::remote_test
