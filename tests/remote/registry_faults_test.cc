// A registry that misbehaves (issue 6's "hostile or broken registry" list,
// one test per case): each checks that nothing unverified entered the store.
#include "remote/remote_fixture.h"

namespace ki {
namespace {

using namespace remote_test;

// ------------------------------------------------------------ hostile registry

TEST_F(RemoteTest, WrongBytesForADigestAreRefused) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, Opts()));
  HttpReply wrong;
  wrong.body = std::string(300000, 'x');  // right size, wrong bytes
  Answer(reg, "GET", "/blobs/" + blob_.str(), wrong);
  auto r = Pull(*dst_, Url(reg.host()), {kRunName, "ki-" + blob_.hex()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("hash"), std::string::npos);
  EXPECT_EQ(CountObjects(*dst_), 0u);  // nothing, not even the good objects
}

TEST_F(RemoteTest, BodyLargerThanAnnouncedIsRefused) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, Opts()));
  auto good = src_->Read(blob_);
  ASSERT_OK(good);
  HttpReply longer;
  longer.body = *good + "and then some more";
  Answer(reg, "GET", "/blobs/" + blob_.str(), longer);
  auto r = Pull(*dst_, Url(reg.host()), {blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, BlobOverTheSizeLimitIsNeverRequested) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, Opts()));
  reg.ClearLog();
  auto o = Opts();
  o.max_blob_size = 1000;
  auto r = Pull(*dst_, Url(reg.host()), {blob_.str()}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 0u);
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, TruncatedBodyIsRefused) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, Opts()));
  auto good = src_->Read(blob_);
  ASSERT_OK(good);
  HttpReply truncated;
  truncated.body = good->substr(0, 1000);
  truncated.declared_length = long(good->size());  // then the connection closes
  Answer(reg, "GET", "/blobs/" + blob_.str(), truncated);
  auto r = Pull(*dst_, Url(reg.host()), {blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("gave up after 3 attempts"), std::string::npos);
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, TransientServerErrorsAreRetried) {
  FakeRegistry reg;
  std::atomic<int> failures{0};
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "PUT" && r.path.find("/blobs/uploads/") != std::string::npos && failures < 2) {
      failures++;
      HttpReply x;
      x.status = 503;
      return x;
    }
    return std::nullopt;
  });
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, Opts()));
  EXPECT_EQ(failures.load(), 2);
}

TEST_F(RemoteTest, ServerErrorMidPushFailsClearlyAndARerunResumes) {
  FakeRegistry reg;
  std::atomic<int> puts{0};
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    // Every upload after the third fails for good.
    if (r.method == "PUT" && r.path.find("/blobs/uploads/") != std::string::npos && ++puts > 3) {
      HttpReply x;
      x.status = 500;
      x.body = "{\"errors\":[{\"code\":\"UNKNOWN\"}]}";
      return x;
    }
    return std::nullopt;
  });
  auto o = Opts();
  o.push_jobs = 1;
  auto r = Push(*src_, Url(reg.host()), {kRunName}, o);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("incomplete"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no manifest or tag was written"), std::string::npos) << msg;
  EXPECT_NE(msg.find("again to resume"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 500"), std::string::npos) << msg;
  EXPECT_FALSE(reg.HasTag("BenchmarkRun.sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a"));
  size_t uploaded = reg.blob_count();
  EXPECT_EQ(uploaded, 3u);

  reg.SetIntercept(nullptr);
  auto again = Push(*src_, Url(reg.host()), {kRunName}, o);
  ASSERT_OK(again);
  EXPECT_TRUE(reg.HasTag(again->refs[0].tag));
  // The blobs that made it the first time were not sent again.
  EXPECT_EQ(again->refs[0].sent + 1, again->refs[0].objects + 1 - (uploaded - 1));
  EXPECT_GE(again->refs[0].skipped, uploaded - 1);
}

TEST_F(RemoteTest, ManifestMediaTypeLiesAreRefused) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  std::string tag = pushed->refs[0].tag;
  std::string body = *reg.Manifest(tag);
  // 1. The header claims an index.
  Answer(reg, "GET", "/manifests/" + tag,
         ManifestReply(body, {{"Content-Type", "application/vnd.oci.image.index.v1+json"}}));
  auto r = Pull(*dst_, Url(reg.host()), {tag}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("index"), std::string::npos);
  // 2. The header says OCI manifest; the body says Docker schema 2.
  std::string docker = body;
  auto at = docker.find("application/vnd.oci.image.manifest.v1+json");
  docker.replace(at, std::strlen("application/vnd.oci.image.manifest.v1+json"),
                 "application/vnd.docker.distribution.manifest.v2+json");
  reg.PutManifestDirect("liar", docker, "application/vnd.oci.image.manifest.v1+json");
  reg.SetIntercept(nullptr);
  r = Pull(*dst_, Url(reg.host()), {"liar"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mediaType field"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, DigestHeaderThatDisagreesWithTheBodyIsRefused) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  std::string tag = pushed->refs[0].tag;
  std::string body = *reg.Manifest(tag);
  Answer(reg, "GET", "/manifests/" + tag,
         ManifestReply(body, {{"Content-Type", "application/vnd.oci.image.manifest.v1+json"},
                              {"Docker-Content-Digest", "sha256:" + std::string(64, '0')}}));
  auto r = Pull(*dst_, Url(reg.host()), {tag}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, TagMovingDuringPullKeepsTheFirstManifestAndSaysSo) {
  FakeRegistry reg;
  auto first = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(first);
  std::string tag = first->refs[0].tag;
  // As soon as the manifest has been read, someone re-tags it.
  std::string other = "sha256:" + std::string(64, 'e');
  Answer(reg, "HEAD", "/manifests/" + tag,
         ManifestReply("", {{"Docker-Content-Digest", other},
                            {"Content-Type", "application/vnd.oci.image.manifest.v1+json"}}));
  auto r = Pull(*dst_, Url(reg.host()), {tag}, Opts());
  ASSERT_OK(r);
  ASSERT_EQ(r->refs[0].warnings.size(), 1u);
  EXPECT_NE(r->refs[0].warnings[0].find("moved"), std::string::npos);
  EXPECT_EQ(r->refs[0].manifest, first->refs[0].manifest);
  auto v = dst_->Verify(run_);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
}

TEST_F(RemoteTest, TitlesThatEscapeADirectoryAreRefused) {
  for (const char* bad : {"../../etc/passwd", "/etc/passwd", "a/../../b", "a\\..\\b", "", "./x", "a//b", "x\n"}) {
    EXPECT_FALSE(IsSafeTitle(bad)) << bad;
  }
  EXPECT_TRUE(IsSafeTitle("BenchmarkRun-abc.json"));
  EXPECT_TRUE(IsSafeTitle("logs/run.txt"));

  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  std::string body = *reg.Manifest(pushed->refs[0].tag);
  auto at = body.find("\"org.opencontainers.image.title\":\"");
  ASSERT_NE(at, std::string::npos);
  at += std::strlen("\"org.opencontainers.image.title\":\"");
  body.replace(at, body.find('"', at) - at, "../../../../tmp/evil");
  reg.PutManifestDirect("evil", body, "application/vnd.oci.image.manifest.v1+json");
  auto r = Pull(*dst_, Url(reg.host()), {"evil"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("safe relative file name"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);

  // A layout only ever gets files named by digests.
  TempDir lay;
  auto url = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {kRunName}, Opts()));
  for (const auto& e : std::filesystem::recursive_directory_iterator(lay.path())) {
    std::string rel = e.path().string().substr(lay.path().size() + 1);
    bool ok = rel == "oci-layout" || rel == "index.json" || rel == "blobs" || rel == "blobs/sha256" ||
              (rel.rfind("blobs/sha256/", 0) == 0 && Digest::IsValid("sha256:" + rel.substr(13)));
    EXPECT_TRUE(ok) << rel;
  }
}

TEST_F(RemoteTest, CredentialsNeverFollowARedirectToAnotherHost) {
  FakeRegistry reg;
  std::string basic = "Basic dXNlcjpwYXNz";  // user:pass
  reg.RequireAuth(basic, "Basic realm=\"fake\"");
  auto o = Opts();
  o.credentials = Credentials{"user", "pass"};
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, o));
  auto good = src_->Read(blob_);
  ASSERT_OK(good);

  // Blob downloads are redirected to a storage host on another port.
  std::mutex mu;
  std::vector<std::string> seen_auth;
  test::HttpServer storage([&](const HttpReq& r) {
    std::lock_guard<std::mutex> l(mu);
    seen_auth.push_back(r.Header("authorization"));
    HttpReply x;
    x.body = *good;
    return x;
  });
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "GET" && r.path.find("/blobs/sha256:") != std::string::npos && r.Header("authorization") == basic) {
      HttpReply x;
      x.status = 307;
      x.headers.emplace_back("Location", "http://" + storage.host() + "/storage/blob");
      return x;
    }
    return std::nullopt;
  });
  auto pulled = Pull(*dst_, Url(reg.host()), {blob_.str()}, o);
  ASSERT_OK(pulled);
  ASSERT_FALSE(seen_auth.empty());
  for (const auto& a : seen_auth) EXPECT_EQ(a, "");
  ExpectSameObjects(*src_, *dst_, {blob_});

  // An upload Location that names another host gets no credentials either.
  seen_auth.clear();
  test::HttpServer sink([&](const HttpReq& r) {
    std::lock_guard<std::mutex> l(mu);
    seen_auth.push_back(r.Header("authorization"));
    HttpReply x;
    x.status = 201;
    return x;
  });
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "POST" && r.Header("authorization") == basic) {
      HttpReply x;
      x.status = 202;
      x.headers.emplace_back("Location", "http://" + sink.host() + "/upload/1");
      return x;
    }
    return std::nullopt;
  });
  Store& s2 = NewStore();
  auto b = s2.NewBatch();
  ASSERT_OK(b);
  auto fresh = (*b)->PutBlob("a blob the registry has not seen", "text/plain");
  ASSERT_OK(fresh);
  ASSERT_OK((*b)->Commit());
  (void)Push(s2, Url(reg.host()), {fresh->digest.str()}, o);
  ASSERT_FALSE(seen_auth.empty());
  for (const auto& a : seen_auth) EXPECT_EQ(a, "");
}

TEST_F(RemoteTest, BearerTokenHandshake) {
  FakeRegistry reg;
  reg.RequireAuth("Bearer tok-123", "Bearer realm=\"http://" + reg.host() +
                                         "/token\",service=\"fake\",scope=\"repository:ki/test:pull\"");
  reg.ServeToken("Basic dXNlcjpwYXNz", "tok-123");
  auto o = Opts();
  o.credentials = Credentials{"user", "pass"};
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, o));
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {kRunName}, o));
  int push_tokens = 0, pull_tokens = 0;
  for (const auto& r : reg.log()) {
    if (r.path == "/token") {
      EXPECT_NE(r.query.find("service=fake"), std::string::npos);
      push_tokens += r.query.find("scope=repository%3Aki%2Ftest%3Apull%2Cpush") != std::string::npos;
      pull_tokens += r.query.ends_with("scope=repository%3Aki%2Ftest%3Apull");
    } else {
      // The registry itself only ever sees the token, never the password.
      EXPECT_NE(r.Header("authorization"), "Basic dXNlcjpwYXNz");
    }
  }
  EXPECT_EQ(push_tokens, 1);
  EXPECT_EQ(pull_tokens, 1);
  // Without credentials the token endpoint refuses, and the error says how to log in.
  Store& s3 = NewStore();
  auto r = Pull(s3, Url(reg.host()), {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("401"), std::string::npos) << r.status().ToString();
}

// A layout's index.json or a remote's manifest whose fields have other types
// than the image-spec's (a number where a string belongs) used to reach
// nlohmann's value(), which throws: on a pull worker thread that ended the
// process (SIGABRT), on the main thread it ended the command with a raw
// library message (exit 5). Now each is invalid input naming the field.
TEST_F(RemoteTest, PullOfRemoteJsonWithUnexpectedTypesIsInvalidInputNotACrash) {
  TempDir lay;
  auto url = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {kRunName, blob_.str()}, Opts()));
  const std::string index_path = lay.Join("index.json");
  const std::string index = test::ReadFileOrDie(index_path);
  auto rewrite = [&](const std::function<void(Json&)>& change) {
    Json j = Json::parse(index);
    change(j);
    std::filesystem::permissions(index_path, std::filesystem::perms::owner_all);
    test::WriteFileOrDie(index_path, j.dump());
  };
  std::string dst = dir_.Join("dst");
  std::string pull = "--store " + dst + " pull oci-layout:" + lay.path() + " ";

  // 1. Every entry's mediaType a number.
  rewrite([](Json& j) {
    for (Json& m : j["manifests"]) m["mediaType"] = 5;
  });
  auto r = Pull(*dst_, *url, {kRunName, blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("index.json: manifests[0]: `mediaType` is a number, not a string"),
            std::string::npos)
      << r.status().ToString();
  // Two refs: two workers; one ref: the main thread. Both exit 4.
  for (std::string refs : {std::string(kRunName) + " " + blob_.str(), blob_.str()}) {
    auto k = test::RunKi(pull + refs);
    EXPECT_EQ(k.exit_code, 4) << k.err;
    EXPECT_EQ(k.err.find("json.exception"), std::string::npos) << k.err;
    EXPECT_NE(k.err.find("`mediaType` is a number"), std::string::npos) << k.err;
  }
  // 2. schemaVersion "2" (a string) is not 2.
  rewrite([](Json& j) { j["schemaVersion"] = "2"; });
  r = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  // 3. A ref.name annotation that is not a string, a digest that is not one.
  rewrite([](Json& j) { j["manifests"][1]["annotations"]["org.opencontainers.image.ref.name"] = 7; });
  r = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("manifests[1].annotations: `org.opencontainers.image.ref.name` is a number"),
            std::string::npos)
      << r.status().ToString();
  rewrite([](Json& j) { j["manifests"][0]["digest"] = Json::array(); });
  r = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, BundleIndexAndLayerFieldsOfOtherTypesAreRefusedByName) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, o));
  Json index = Json::parse(*reg.Manifest("everything"));
  for (auto [field, value] : {std::pair<std::string, Json>{"artifactType", 5}, {"mediaType", true},
                              {"digest", Json::object()}, {"size", "12"}}) {
    Json bad = index;
    bad["manifests"][0][field] = value;
    reg.PutManifestDirect("bad-" + field, bad.dump(), "application/vnd.oci.image.index.v1+json");
    auto r = Pull(*dst_, Url(reg.host()), {"bad-" + field}, Opts());
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
    EXPECT_NE(r.status().message().find("remote bundle index: manifests[0]: `" + field + "`"), std::string::npos)
        << r.status().ToString();
  }
  // A layer annotation of another type is refused, not read as absent.
  FakeRegistry reg2;
  ASSERT_OK(Push(*src_, Url(reg2.host()), {kRunName}, Opts()));
  std::string tag = SanitizeTag(kRunName);
  Json m = Json::parse(*reg2.Manifest(tag));
  m["layers"][0]["annotations"][std::string(kAnnRole)] = 5;
  reg2.PutManifestDirect("bad-role", m.dump(), "application/vnd.oci.image.manifest.v1+json");
  auto r = Pull(*dst_, Url(reg2.host()), {"bad-role"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layer 0: annotations: `dev.kernelindex.ki.role` is a number"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

}  // namespace
}  // namespace ki
