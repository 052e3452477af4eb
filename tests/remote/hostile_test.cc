// A hostile registry and hostile OCI layouts, second round (issues 18 and
// 25): token realms that would collect the password, servers that drip,
// stall or crawl past any reasonable time, and layouts whose files are
// FIFOs, whose blob folders are links out of the layout, or whose
// descriptors lie about sizes. Each case must fail within its documented
// bound, say which limit or rule refused it, and store nothing.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "ki/env.h"
#include "ki/ingest.h"
#include "ki/json.h"
#include "ki/remote.h"
#include "remote/fake_registry.h"
#include "remote/http.h"
#include "remote/target.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::FakeRegistry;
using test::HttpReply;
using test::HttpReq;
using test::TempDir;

constexpr const char* kBasic = "Basic dXNlcjpwYXNz";  // user:pass

uint64_t CountObjects(Store& s) {
  uint64_t n = 0;
  EXPECT_OK(s.ForEachObject([&](const ObjectInfo&) { return ++n, true; }));
  return n;
}

size_t IncomingFiles(Store& s) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(s.path() + "/objects/incoming", ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    n++;
  return n;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Init(dir_.Join("src"));
    ASSERT_OK(s);
    src_ = std::move(s).value();
    small_ = AddBlob(std::string(300000, 'x') + "a held blob");
    big_ = AddBlob(Generated(4 << 20, 7));  // over stream_above: streamed to a scratch file
  }

  static std::string Generated(size_t n, uint32_t seed) {
    std::string x(n, '\0');
    std::mt19937 rng(seed);
    for (auto& c : x) c = char(rng());
    return x;
  }

  Digest AddBlob(const std::string& bytes) {
    auto b = src_->NewBatch();
    EXPECT_OK(b);
    auto put = (*b)->PutBlob(bytes, "application/octet-stream");
    EXPECT_OK(put);
    EXPECT_OK((*b)->Commit());
    return put->digest;
  }

  Store& NewStore() {
    auto s = Store::Init(dir_.Join("store" + std::to_string(extra_.size())));
    if (!s.ok()) std::abort();
    extra_.push_back(std::move(s).value());
    return *extra_.back();
  }

  // Short limits, so that every case ends in seconds.
  static TransferOptions Opts() {
    TransferOptions o;
    o.credentials = Credentials{};
    o.backoff_initial_ms = 1;
    o.max_attempts = 3;
    o.timeouts.connect_s = 5;
    o.timeouts.low_speed_bytes = 1024;
    o.timeouts.low_speed_time_s = 1;
    o.timeouts.deadline_s = 3;
    o.timeouts.min_rate = 1ull << 30;  // the deadline is 3 s for anything under 1 GiB
    return o;
  }

  static RemoteUrl Url(const std::string& host) {
    auto u = ParseRemoteUrl("oci://" + host + "/ki/test", true);
    EXPECT_OK(u);
    return *u;
  }

  TempDir dir_;
  std::unique_ptr<Store> src_;
  std::vector<std::unique_ptr<Store>> extra_;
  Digest small_, big_;
};

// ------------------------------------------------------------ token realms

// The rule itself, on names no test can serve.
TEST(TokenRealmRuleTest, CredentialsGoOnlyToTheRegistrysOriginOrOverHttpsToItsSite) {
  auto withheld = [](const std::string& realm, const std::string& registry) {
    remote::UrlParts r, g;
    EXPECT_TRUE(remote::ParseHttpUrl(realm, &r)) << realm;
    EXPECT_TRUE(remote::ParseHttpUrl(registry, &g)) << registry;
    return remote::WithholdCredentialsFrom(r, g).has_value();
  };
  // Sent: the registry's own origin (over http too, as the registry gets
  // them), its host over https, its parent domain over https.
  EXPECT_FALSE(withheld("http://127.0.0.1:5000/token", "http://127.0.0.1:5000/"));
  EXPECT_FALSE(withheld("https://ghcr.io/token", "https://ghcr.io/"));
  EXPECT_FALSE(withheld("https://ghcr.io:8443/token", "https://ghcr.io/"));
  EXPECT_FALSE(withheld("https://auth.docker.io/token", "https://registry-1.docker.io/"));
  EXPECT_FALSE(withheld("https://gitlab.com/jwt/auth", "https://registry.gitlab.com/"));
  // Withheld: plain http anywhere else, the same host on another port
  // included; other addresses (127.1.0.1 and 127.0.0.1 end alike, which
  // the old "last two labels" rule took for one site); other sites; a TLD
  // is no site (evil.io is not ghcr.io's), nor a sibling under a public
  // suffix the parent rule stops at (registry.example.co.uk's parent is
  // example.co.uk, not co.uk).
  EXPECT_TRUE(withheld("http://127.0.0.1:5001/token", "http://127.0.0.1:5000/"));
  EXPECT_TRUE(withheld("http://auth.docker.io/token", "https://registry-1.docker.io/"));
  EXPECT_TRUE(withheld("https://127.1.0.1:5000/token", "https://127.0.0.1:5000/"));
  EXPECT_TRUE(withheld("https://10.0.0.1/token", "https://192.168.0.1/"));
  EXPECT_TRUE(withheld("https://evil.io/token", "https://ghcr.io/"));
  EXPECT_TRUE(withheld("https://evil.co.uk/token", "https://registry.example.co.uk/"));
  EXPECT_TRUE(withheld("https://docker.io.evil.com/token", "https://registry-1.docker.io/"));
  EXPECT_TRUE(withheld("https://localhost/token", "https://127.0.0.1/"));
}

// A registry with a user name and password configured answers 401 with a
// Bearer realm on another host, or on its own host's other port over plain
// http: the realm must never see the Basic credentials. ki asks it for an
// anonymous token instead; the registry refuses that one, and the error
// says why the password was not sent.
TEST_F(HostileTest, TokenRealmElsewhereNeverReceivesTheCredentials) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {small_.str()}, Opts()));
  for (const char* address : {"127.1.0.1", "127.0.0.1"}) {
    SCOPED_TRACE(address);
    std::mutex mu;
    std::vector<std::string> seen;
    test::HttpServer realm(
        [&](const HttpReq& r) {
          std::lock_guard<std::mutex> l(mu);
          seen.push_back(r.Header("authorization"));
          HttpReply x;
          x.body = "{\"token\":\"anonymous\"}";
          x.headers.emplace_back("Content-Type", "application/json");
          return x;
        },
        address);
    reg.RequireAuth("Bearer tok-123", "Bearer realm=\"http://" + realm.host() + "/token\",service=\"fake\"");
    auto o = Opts();
    o.credentials = Credentials{"user", "pass"};
    Store& dst = NewStore();
    auto r = Pull(dst, Url(reg.host()), {small_.str()}, o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().ExitCode(), 5) << r.status().ToString();
    EXPECT_NE(r.status().message().find("credentials were not sent to the token realm http://" + realm.host()),
              std::string::npos)
        << r.status().ToString();
    std::lock_guard<std::mutex> l(mu);
    ASSERT_FALSE(seen.empty());
    for (const auto& a : seen) EXPECT_EQ(a, "");
    EXPECT_EQ(CountObjects(dst), 0u);
  }
  // The registry's own origin as the realm gets them (and so logs in).
  reg.RequireAuth("Bearer tok-123", "Bearer realm=\"http://" + reg.host() + "/token\",service=\"fake\"");
  reg.ServeToken(kBasic, "tok-123");
  auto o = Opts();
  o.credentials = Credentials{"user", "pass"};
  ASSERT_OK(Pull(NewStore(), Url(reg.host()), {small_.str()}, o));
}

// ------------------------------------------------------------ slow servers

// Each reply paced so that only a time limit can end it: a manifest
// dripped 2 bytes every 0.5 s, a blob that stalls after 1,000 bytes, a
// 4 MiB streamed blob at 4 bytes a second, and one that keeps above the
// low-speed limit (20 KB/s) but would take minutes, which the deadline
// ends. Each pull fails with IOError (exit 5) naming the limit, after two
// attempts of at most their limit each, stores nothing and leaves no
// scratch file.
TEST_F(HostileTest, DripsStallsAndCrawlsEndWithinTheLimitsAndStoreNothing) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {small_.str(), big_.str()}, Opts()));
  auto small = src_->Read(small_);
  auto big = src_->Read(big_);
  ASSERT_OK(small);
  ASSERT_OK(big);
  const std::string small_tag = "ki-" + small_.hex();
  auto manifest = reg.Manifest(small_tag);
  ASSERT_TRUE(manifest.has_value());

  struct Case {
    const char* name;
    Digest pulled;
    std::string path;  // the request the hostile reply answers
    HttpReply reply;
    const char* message;
  };
  std::vector<Case> cases;
  HttpReply drip;
  drip.body = *manifest;
  drip.headers.emplace_back("Content-Type", "application/vnd.oci.image.manifest.v1+json");
  drip.drip_bytes = 2;
  drip.drip_ms = 500;
  cases.push_back({"manifest dripped 2 bytes every 0.5 s", small_, "/manifests/" + small_tag, drip,
                   "stayed below 1024 bytes/s for 1 s"});
  HttpReply stall;
  stall.body = *small;
  stall.stall_after = 1000;
  cases.push_back({"blob stalls after 1,000 bytes", small_, "/blobs/" + small_.str(), stall,
                   "stayed below 1024 bytes/s for 1 s"});
  HttpReply crawl;
  crawl.body = *big;
  crawl.drip_bytes = 4;
  crawl.drip_ms = 1000;
  cases.push_back({"4 MiB streamed blob at 4 bytes/s", big_, "/blobs/" + big_.str(), crawl,
                   "stayed below 1024 bytes/s for 1 s"});
  HttpReply steady;
  steady.body = *big;
  steady.drip_bytes = 2000;
  steady.drip_ms = 100;
  // With --min-rate 1 GiB the deadline the bytes earn and curl's fixed
  // one are both 3 s: whichever fires first names it ("past the deadline
  // of 3 s that they earn", "not complete within its deadline of 3 s").
  cases.push_back({"4 MiB at 20 KB/s: over the deadline", big_, "/blobs/" + big_.str(), steady,
                   "deadline of 3 s"});

  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
      if (r.method == "GET" && r.path.find(c.path) != std::string::npos) return c.reply;
      return std::nullopt;
    });
    reg.ClearLog();
    Store& dst = NewStore();
    auto started = std::chrono::steady_clock::now();
    auto r = Pull(dst, Url(reg.host()), {c.pulled.str()}, Opts());
    double took = SecondsSince(started);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("gave up after 2 attempts"), std::string::npos) << r.status().ToString();
    // Two attempts of at most 3 s (the deadline), and a little for the rest.
    EXPECT_LT(took, 2 * 3 + 3.0);
    EXPECT_EQ(reg.Count("GET", c.path), 2u);
    EXPECT_EQ(CountObjects(dst), 0u);
    EXPECT_EQ(IncomingFiles(dst), 0u);
  }
  // The same pulls at the server's full pace succeed.
  reg.SetIntercept(nullptr);
  ASSERT_OK(Pull(NewStore(), Url(reg.host()), {small_.str(), big_.str()}, Opts()));
}

// The other way: a registry that takes an upload's bytes but never answers
// (it "verifies" for ever). The low-speed limit covers the wait for the
// answer too; the push fails within two attempts and says which limit.
TEST_F(HostileTest, RegistryThatNeverAnswersAnUploadEndsThePushWithinTheLimit) {
  FakeRegistry reg;
  reg.SetIntercept([](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "PUT" && r.path.find("/blobs/uploads/") != std::string::npos) {
      std::this_thread::sleep_for(std::chrono::seconds(4));  // the client has given up by then
      HttpReply x;
      x.status = 500;
      return x;
    }
    return std::nullopt;
  });
  auto started = std::chrono::steady_clock::now();
  auto r = Push(*src_, Url(reg.host()), {small_.str()}, Opts());
  double took = SecondsSince(started);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stayed below 1024 bytes/s for 1 s"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("run the same ki push again to resume"), std::string::npos)
      << r.status().ToString();
  EXPECT_LT(took, 2 * 3 + 3.0);
  EXPECT_FALSE(reg.HasBlob(small_.str()));
}

// The deadline grows with what a request may carry, so that large blobs on
// slow links are not cut off by a deadline meant for a manifest.
TEST(RequestDeadlineTest, ScalesWithTheBytesAndZeroMeansNone) {
  TransferTimeouts t;  // 300 s + 1 s per 64 KiB
  EXPECT_EQ(remote::RequestDeadline(t, 0), 300);
  EXPECT_EQ(remote::RequestDeadline(t, 4ull << 20), 300 + 64);
  EXPECT_EQ(remote::RequestDeadline(t, 1ull << 30), 300 + 16384);
  t.deadline_s = 0;
  EXPECT_EQ(remote::RequestDeadline(t, 1ull << 30), 0);
}

// ------------------------------------------------------------ diagnosis

// A loopback registry without TLS reached over https (the remote added
// without --insecure): the error says the server answers plain http and
// names --insecure, and a failed push does not advise running it again,
// which could not help. A dropped connection still does.
TEST_F(HostileTest, TlsAgainstAPlainHttpRegistryNamesInsecureAndAdvisesNoRerun) {
  FakeRegistry reg;
  auto https = ParseRemoteUrl("oci://" + reg.host() + "/ki/test", false);
  ASSERT_OK(https);
  auto pushed = Push(*src_, *https, {small_.str()}, Opts());
  ASSERT_FALSE(pushed.ok());
  const std::string& m = pushed.status().message();
  EXPECT_EQ(pushed.status().ExitCode(), 5) << m;
  EXPECT_NE(m.find(reg.host() + " answers plain http, not https"), std::string::npos) << m;
  EXPECT_NE(m.find("pass --insecure"), std::string::npos) << m;
  EXPECT_EQ(m.find("run the same ki push again"), std::string::npos) << m;
  EXPECT_EQ(m.find("gave up after"), std::string::npos) << m;  // tried once
  auto pulled = Pull(NewStore(), *https, {small_.str()}, Opts());
  ASSERT_FALSE(pulled.ok());
  EXPECT_NE(pulled.status().message().find("pass --insecure"), std::string::npos) << pulled.status().ToString();

  // A registry that keeps dropping the connection: a re-run may well help.
  reg.SetIntercept([](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "POST" || r.method == "PUT") {
      HttpReply x;
      x.declared_length = 100;  // and closes after none of it
      return x;
    }
    return std::nullopt;
  });
  auto dropped = Push(*src_, Url(reg.host()), {small_.str()}, Opts());
  ASSERT_FALSE(dropped.ok());
  EXPECT_NE(dropped.status().message().find("run the same ki push again to resume"), std::string::npos)
      << dropped.status().ToString();
}

// ------------------------------------------------------------ layouts

class LayoutHostileTest : public HostileTest {
 protected:
  void SetUp() override {
    HostileTest::SetUp();
    auto u = ParseRemoteUrl("oci-layout:" + lay_.path(), false);
    ASSERT_OK(u);
    url_ = *u;
    ASSERT_OK(Push(*src_, url_, {small_.str()}, Opts()));
  }

  // Pull in a thread: a pull that blocks in open(2) on a FIFO must not hang
  // the test. After 10 s the FIFO gets a writer, which ends the open.
  Result<PullReport> PullWithin10s(Store& dst, const std::string& fifo) {
    auto f = std::async(std::launch::async, [&] { return Pull(dst, url_, {small_.str()}, Opts()); });
    if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "pull blocked on the FIFO " << fifo;
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
    return f.get();
  }

  TempDir lay_;
  RemoteUrl url_;
};

TEST_F(LayoutHostileTest, FifosInALayoutAreRefusedWithoutBlocking) {
  auto index = test::ReadFileOrDie(lay_.Join("index.json"));
  for (std::string rel : {std::string("oci-layout"), std::string("index.json"), "blobs/sha256/" + small_.hex()}) {
    SCOPED_TRACE(rel);
    const std::string path = lay_.Join(rel);
    std::string saved = test::ReadFileOrDie(path);
    std::filesystem::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    Store& dst = NewStore();
    auto r = PullWithin10s(dst, path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().ToString();
    EXPECT_EQ(CountObjects(dst), 0u);
    std::filesystem::remove(path);
    test::WriteFileOrDie(path, saved);
  }
}

// blobs/ or blobs/sha256 as a link leading out of the layout: a push would
// write there. Refused, and nothing is written through the link.
TEST_F(LayoutHostileTest, BlobFoldersThatAreLinksAreRefused) {
  Digest fresh = AddBlob("a blob the layout has not seen");
  for (std::string rel : {std::string("blobs/sha256"), std::string("blobs")}) {
    SCOPED_TRACE(rel);
    TempDir outside;
    const std::string path = lay_.Join(rel);
    std::filesystem::rename(path, lay_.Join("moved"));
    std::filesystem::create_directory_symlink(outside.path(), path);
    auto r = Push(*src_, url_, {fresh.str()}, Opts());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("is a symbolic link"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("must be a directory inside the layout"), std::string::npos)
        << r.status().ToString();
    EXPECT_TRUE(std::filesystem::is_empty(outside.path()));
    // A pull is refused alike (it would read outside the layout).
    auto p = Pull(NewStore(), url_, {small_.str()}, Opts());
    EXPECT_FALSE(p.ok());
    std::filesystem::remove(path);
    std::filesystem::rename(lay_.Join("moved"), path);
  }
  ASSERT_OK(Push(*src_, url_, {fresh.str()}, Opts()));
}

// index.json's descriptor `size` as the image-spec defines it (an int64,
// not negative), checked before reading: over the manifest cap, negative,
// a string, a fraction, missing, or not the file's size are each refused.
TEST_F(LayoutHostileTest, DescriptorSizesInIndexJsonAreChecked) {
  const std::string index_path = lay_.Join("index.json");
  const std::string good = test::ReadFileOrDie(index_path);
  Json index = Json::parse(good);
  const uint64_t real = index["manifests"][0]["size"].get<uint64_t>();
  struct Case {
    const char* name;
    Json size;  // null: removed
    Code code;
    std::string message;
  };
  std::vector<Case> cases = {
      {"10 GB", Json(10000000000ull), Code::kInvalidInput, "`size` 10000000000 is over the manifest limit"},
      {"-1", Json(-1), Code::kInvalidInput, "`size` is -1, negative"},
      {"\"12\"", Json("12"), Code::kInvalidInput, "`size` is a string \"12\", not an integer"},
      {"1.5", Json(1.5), Code::kInvalidInput, "`size` is a number 1.5, not an integer"},
      {"2^63", Json(uint64_t(1) << 63), Code::kInvalidInput, "past the image-spec's int64"},
      {"missing", Json(), Code::kInvalidInput, "no `size`"},
      // Refused from the file's fstat, before it is read.
      {"one byte short", Json(real - 1), Code::kCorruption, "bytes, its descriptor announces " + std::to_string(real - 1)},
      {"one byte long", Json(real + 1), Code::kCorruption, "bytes, its descriptor announces " + std::to_string(real + 1)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Json bad = index;
    if (c.size.is_null()) bad["manifests"][0].erase("size");
    else bad["manifests"][0]["size"] = c.size;
    test::WriteFileOrDie(index_path, bad.dump());
    Store& dst = NewStore();
    auto r = Pull(dst, url_, {small_.str()}, Opts());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
    EXPECT_EQ(CountObjects(dst), 0u);
  }
  test::WriteFileOrDie(index_path, good);
  ASSERT_OK(Pull(NewStore(), url_, {small_.str()}, Opts()));
}

}  // namespace
}  // namespace ki
